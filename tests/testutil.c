/* testutil.c - temporary directories and a small RNG for tests. */
#include "testutil.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

const char *ss_test_keep_path(const char *name) {
    static char paths[1024][768];
    static unsigned next;
    char p[768];
    snprintf(p, sizeof p, "%s/%s", ss_test_tmpdir(), name);
    for (unsigned i = 0; i < next; i++) /* one slot per name */
        if (strcmp(paths[i], p) == 0) return paths[i];
    CHECK(next < 1024);
    memcpy(paths[next], p, sizeof p);
    return paths[next++];
}

char *ss_test_read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    CHECK(f);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    CHECK(buf);
    for (size_t r; (r = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += r;
        if (n == cap) {
            CHECK((buf = realloc(buf, 2 * cap + 1)) != NULL);
            cap *= 2;
        }
    }
    CHECK(!ferror(f));
    fclose(f);
    buf[n] = 0;
    *size = n;
    return buf;
}

void ss_test_write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f);
    CHECK(fwrite(data, 1, n, f) == n);
    CHECK(fclose(f) == 0);
}

uint64_t ss_test_rand(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

int ss_test_cli_v(char *err, size_t errlen, const char *env, const char *fmt, va_list ap) {
#ifdef SS_CLI
    char args[16384], cmd[20000], errfile[800];
    vsnprintf(args, sizeof args, fmt, ap);
    snprintf(errfile, sizeof errfile, "%s/cli-stderr.txt", ss_test_tmpdir());
    if (env)
        snprintf(cmd, sizeof cmd, "export %s; exec %s %s > /dev/null 2> %s", env, SS_CLI, args,
                 errfile);
    else
        snprintf(cmd, sizeof cmd, "exec %s %s > /dev/null 2> %s", SS_CLI, args, errfile);
    int st = system(cmd);
    FILE *f = fopen(errfile, "r");
    size_t n = f && errlen ? fread(err, 1, errlen - 1, f) : 0;
    if (errlen) err[n] = '\0';
    if (f) fclose(f);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
#else
    (void)err, (void)errlen, (void)env, (void)fmt, (void)ap;
    fprintf(stderr, "ss_test_cli: SS_CLI is not defined for this test\n");
    exit(1);
#endif
}

int ss_test_cli(char *err, size_t errlen, const char *env, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = ss_test_cli_v(err, errlen, env, fmt, ap);
    va_end(ap);
    return rc;
}

uint32_t ss_test_field(const ss_store *s, const char *name) {
    uint32_t f = SS_FIELD_NONE;
    int rc = ss_field_index(&f, s, name);
    if (rc) {
        fprintf(stderr, "no field '%s': %s\n", name, ss_error_message());
        exit(1);
    }
    return f;
}
