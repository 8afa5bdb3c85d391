/* SPDX-License-Identifier: BSD-2-Clause */
/* test_memlimit.c - the memory limit converters plan with (memlimit.h):
 * cgroup v1 and v2 trees laid out in a temporary directory as /sys/fs/cgroup
 * lays them out, with /proc/self/cgroup texts of both kinds: the smallest
 * limit of the cgroup and its ancestors wins, "max" and missing files are no
 * limit, other v1 controllers are ignored; and the process's own limit is at
 * most its physical memory and honours RLIMIT_AS. */
#include "memlimit.h"
#include "testutil.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static void put(const char *rel, const char *text) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", ss_test_tmpdir(), rel);
    for (char *p = path + strlen(ss_test_tmpdir()) + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(path, 0755);
            *p = '/';
        }
    ss_test_write_file(path, text, strlen(text));
}

static uint64_t limit_of(const char *proc_text) {
    put("proc_cgroup", proc_text);
    char root[4096];
    snprintf(root, sizeof root, "%s/sys", ss_test_tmpdir());
    return ss__cgroup_memory_limit(ss_test_path("proc_cgroup"), root);
}

int main(void) {
    /* v2: job/step under slurm; the job's limit (an ancestor) is the smaller */
    put("sys/memory.max", "junk\n"); /* the root's: not a number, no limit */
    put("sys/slurm/job_7/memory.max", "8589934592\n");
    put("sys/slurm/job_7/step_0/memory.max", "max\n");
    CHECK_EQ_U64(limit_of("0::/slurm/job_7/step_0\n"), 8589934592u);
    put("sys/slurm/job_7/step_0/memory.max", "4294967296\n");
    CHECK_EQ_U64(limit_of("0::/slurm/job_7/step_0\n"), 4294967296u);
    CHECK_EQ_U64(limit_of("0::/slurm/other\n"), UINT64_MAX); /* no files: no limit */
    CHECK_EQ_U64(limit_of("0::/\n"), UINT64_MAX);
    /* v1: only the memory controller's line counts, also in a joint list */
    put("sys/memory/docker/abc/memory.limit_in_bytes", "2147483648\n");
    put("sys/memory/memory.limit_in_bytes", "9223372036854771712\n");
    put("sys/cpu/docker/abc/memory.limit_in_bytes", "1024\n"); /* not memory's */
    CHECK_EQ_U64(limit_of("4:cpu,cpuacct:/docker/abc\n3:memory:/docker/abc\n0::/\n"), 2147483648u);
    CHECK_EQ_U64(limit_of("5:memory,hugetlb:/docker/abc\n"), 2147483648u);
    CHECK_EQ_U64(limit_of("4:cpu:/docker/abc\n"), UINT64_MAX);
    /* both kinds: the smaller */
    CHECK_EQ_U64(limit_of("3:memory:/docker/abc\n0::/slurm/job_7/step_0\n"), 2147483648u);
    CHECK_EQ_U64(limit_of("garbage\n\n1:name=systemd:/x\n"), UINT64_MAX);
    CHECK_EQ_U64(ss__cgroup_memory_limit(ss_test_path("missing"), "/nonexistent"), UINT64_MAX);

    /* this process: at most the physical memory, and an RLIMIT_AS below it wins */
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    CHECK(pages > 0 && page > 0);
    uint64_t phys = (uint64_t)pages * (uint64_t)page, now = ss__memory_limit();
    CHECK(now > 0 && now <= phys);
#ifndef __SANITIZE_ADDRESS__ /* ASan's shadow map needs an unlimited address space */
    struct rlimit old, r;
    CHECK(getrlimit(RLIMIT_AS, &old) == 0);
    r = old;
    r.rlim_cur = (rlim_t)(now / 2);
    if (old.rlim_max == RLIM_INFINITY || r.rlim_cur <= old.rlim_max) {
        CHECK(setrlimit(RLIMIT_AS, &r) == 0);
        CHECK_EQ_U64(ss__memory_limit(), now / 2);
        CHECK(setrlimit(RLIMIT_AS, &old) == 0);
    }
#endif
    return 0;
}
