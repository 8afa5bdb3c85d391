/* SPDX-License-Identifier: BSD-2-Clause */
/* memlimit.h - how much memory this process may use, for converters that
 * size a buffer from it (convert text --tokens words keeps its words between
 * passes in a quarter of it).
 *
 * Physical memory alone is not the limit a process meets on a cluster node:
 * Slurm's --mem, a container or systemd puts it in a memory cgroup whose
 * limit (or an ancestor's) is far below the node's memory, and exceeding it
 * gets the process killed. So the limit is the smallest of the physical
 * memory, every memory cgroup limit from the process's cgroup up to the
 * root (cgroup v2 memory.max, v1 memory.limit_in_bytes), and the
 * RLIMIT_AS / RLIMIT_DATA soft limits. */
#ifndef SS_MEMLIMIT_H
#define SS_MEMLIMIT_H

#include <stdint.h>

/* The smallest memory cgroup limit of the process described by the
 * /proc/PID/cgroup text in `proc_cgroup` (a file path), with the cgroup
 * file systems mounted under `root` (v2 at root, v1's memory controller at
 * root/memory, as on /sys/fs/cgroup), over its cgroup and every ancestor;
 * UINT64_MAX when none is set or nothing can be read. */
uint64_t ss__cgroup_memory_limit(const char *proc_cgroup, const char *root);

/* The memory this process may use (see above), in bytes; at least 1 GiB
 * when the physical memory cannot be read either. */
uint64_t ss__memory_limit(void);

#endif
