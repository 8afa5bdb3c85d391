/* testutil.c - temporary directories and a small RNG for tests. */
#include "testutil.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *ss_test_tmpdir(void) {
    static char dir[512];
    if (dir[0]) return dir;
    const char *base = getenv("SS_TEST_TMP");
    if (!base || !*base) base = "/tmp";
    mkdir(base, 0755);
    snprintf(dir, sizeof dir, "%s/ss-test-XXXXXX", base);
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(1);
    }
    return dir;
}

const char *ss_test_path(const char *name) {
    static char slots[8][768];
    static unsigned next;
    char *p = slots[next++ % 8];
    snprintf(p, sizeof slots[0], "%s/%s", ss_test_tmpdir(), name);
    return p;
}

uint64_t ss_test_rand(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
