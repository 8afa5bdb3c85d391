/* SPDX-License-Identifier: BSD-2-Clause */
/* memlimit.c - the memory limit a process meets (see memlimit.h). */
#include "memlimit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* The number in file `path` ("max", a missing file or junk: UINT64_MAX). */
static uint64_t read_limit(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return UINT64_MAX;
    char buf[64];
    uint64_t v = UINT64_MAX;
    if (fgets(buf, sizeof buf, f)) {
        char *end;
        unsigned long long n = strtoull(buf, &end, 10);
        if (end != buf && (*end == '\n' || *end == '\0')) v = (uint64_t)n;
    }
    fclose(f);
    return v;
}

/* The smallest `file` limit in dir/cg and every ancestor of cg up to dir. */
static uint64_t walk_up(const char *dir, const char *cg, const char *file) {
    char path[4096];
    uint64_t best = UINT64_MAX;
    size_t n = strlen(cg);
    for (;;) {
        if (snprintf(path, sizeof path, "%s%.*s/%s", dir, (int)n, cg, file) < (int)sizeof path) {
            uint64_t v = read_limit(path);
            if (v < best) best = v;
        }
        if (n == 0) break;
        while (n > 0 && cg[n - 1] != '/') n--; /* drop the last component */
        if (n > 0) n--;                        /* and its '/' */
    }
    return best;
}

/* Does the v1 controller list `list` (comma-separated) name "memory"? */
static int names_memory(const char *list, size_t len) {
    for (size_t i = 0; i < len;) {
        size_t j = i;
        while (j < len && list[j] != ',') j++;
        if (j - i == 6 && !memcmp(list + i, "memory", 6)) return 1;
        i = j + 1;
    }
    return 0;
}

uint64_t ss__cgroup_memory_limit(const char *proc_cgroup, const char *root) {
    FILE *f = fopen(proc_cgroup, "r");
    if (!f) return UINT64_MAX;
    char line[4096], dir[4096];
    uint64_t best = UINT64_MAX;
    while (fgets(line, sizeof line, f)) {
        /* "ID:CONTROLLERS:PATH": v2 is "0::PATH", v1's memory "N:memory:PATH" */
        char *a = strchr(line, ':'), *b = a ? strchr(a + 1, ':') : NULL;
        if (!b) continue;
        char *cg = b + 1;
        cg[strcspn(cg, "\n")] = '\0';
        if (*cg != '/') continue;
        if (strcmp(cg, "/") == 0) cg[0] = '\0'; /* the root: no trailing '/' */
        uint64_t v = UINT64_MAX;
        if (b == a + 1) { /* v2 */
            snprintf(dir, sizeof dir, "%s", root);
            v = walk_up(dir, cg, "memory.max");
        } else if (names_memory(a + 1, (size_t)(b - a - 1))) {
            snprintf(dir, sizeof dir, "%s/memory", root);
            v = walk_up(dir, cg, "memory.limit_in_bytes");
        }
        if (v < best) best = v;
    }
    fclose(f);
    return best;
}

uint64_t ss__memory_limit(void) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t best = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : (uint64_t)1 << 30;
    uint64_t cg = ss__cgroup_memory_limit("/proc/self/cgroup", "/sys/fs/cgroup");
    if (cg < best) best = cg;
    const int res[2] = {RLIMIT_AS, RLIMIT_DATA};
    for (int k = 0; k < 2; k++) {
        struct rlimit r;
        if (getrlimit(res[k], &r) == 0 && r.rlim_cur != RLIM_INFINITY &&
            (uint64_t)r.rlim_cur < best)
            best = (uint64_t)r.rlim_cur;
    }
    return best;
}
