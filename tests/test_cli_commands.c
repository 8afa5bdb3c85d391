/* test_cli_commands.c - the read and edit commands of the built CLI (SS_CLI):
 * strict numeric options, ranges at the int64 limits, valid JSON and UTF-8
 * whatever the bytes of a store, and the messages users read. */
#include "testutil.h"

#include <sys/wait.h>
#include <unistd.h>

#define FORTUNES "/usr/share/games/fortunes/fortunes"

static char g_err[1 << 16]; /* stderr of the last run */
static char *g_out;         /* stdout of the last run */
static size_t g_outlen;

static char *read_file(const char *path, size_t *size) {
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
    fclose(f);
    buf[n] = 0;
    *size = n;
    return buf;
}

/* Run `seqstore ARGS` under a 60 s timeout (a wrapped count must not hang the
 * test); stdout in g_out, stderr in g_err. Returns the exit code. */
static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...) {
    char args[8192], cmd[12000], out[800], err[800];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(out, sizeof out, "%s", ss_test_path("stdout.txt"));
    snprintf(err, sizeof err, "%s", ss_test_path("stderr.txt"));
    snprintf(cmd, sizeof cmd, "exec timeout 60 %s %s > '%s' 2> '%s'", SS_CLI, args, out, err);
    int st = system(cmd);
    size_t n;
    char *e = read_file(err, &n);
    snprintf(g_err, sizeof g_err, "%s", e);
    free(e);
    free(g_out);
    g_out = read_file(out, &g_outlen);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#define EXPECT_RUN(code, ...) CHECK_EXIT(run(__VA_ARGS__), code, g_err)
#define EXPECT_ERR(text) CHECK_CONTAINS(g_err, text)
#define EXPECT_OUT(text) CHECK_CONTAINS(g_out, text)

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

/* A fresh copy of the test store (431 fortunes, one per example). */
static const char *fortunes_store(const char *name) {
    static char path[8][800];
    static int next;
    char *p = path[next++ % 8];
    snprintf(p, sizeof path[0], "%s", ss_test_path(name));
    EXPECT_RUN(0, "convert text --quiet --force --doc-sep %% %s -o '%s'", FORTUNES, p);
    return p;
}

/* Every numeric option refuses a negative, a suffix, an empty value and an
 * overflow with exit 2 and a message naming the option and the value. */
static void test_numeric_options(void) {
    const char *s = fortunes_store("num.ss");
    char txt[800];
    snprintf(txt, sizeof txt, "%s", ss_test_path("words.txt"));
    FILE *f = fopen(txt, "w");
    CHECK(f && fputs("a b c\nb c d\n", f) >= 0 && fclose(f) == 0);
    char out[800];
    snprintf(out, sizeof out, "%s", ss_test_path("num-out.ss"));
    struct {
        const char *option, *pattern; /* %s: the store, %s: the value */
    } cases[] = {
        {"--queries", "bench '%s' --queries '%s'"},
        {"--resolution", "index '%s' --by tokens --resolution '%s'"},
        {"K", "split kfold '%s' '%s'"},
        {"--seed", "split kfold '%s' 2 --seed '%s'"},
        {"--threads", "convert text --force -o '%s' --threads '%s' WORDS"},
        {"--index-resolution", "convert text --force -o '%s' --index-resolution '%s' WORDS"},
        {"--commit-bytes", "convert text --force -o '%s' --commit-bytes '%s' WORDS"},
        {"--min-count", "convert text --force -o '%s' --tokens words --min-count '%s' WORDS"},
        {"--max-vocab", "convert text --force -o '%s' --tokens words --max-vocab '%s' WORDS"},
        {"--vocab-size", "convert text --force -o '%s' --tokens ids --vocab-size '%s' WORDS"},
    };
    const char *bad[] = {"-5", "10abc", "", "99999999999999999999999", " 7", "+7", "0x10"};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
            char line[4096], pat[1024];
            /* WORDS stands for the text input of the convert cases */
            const char *w = strstr(cases[k].pattern, "WORDS");
            if (w)
                snprintf(pat, sizeof pat, "%.*s'%s'", (int)(w - cases[k].pattern), cases[k].pattern,
                         txt);
            else
                snprintf(pat, sizeof pat, "%s", cases[k].pattern);
            snprintf(line, sizeof line, pat, w ? out : s, bad[b]);
            int rc = run("%s", line);
            if (rc != 2) fprintf(stderr, "case: seqstore %s\n", line);
            CHECK_EXIT(rc, 2, g_err);
            char want[256];
            snprintf(want, sizeof want, "'%s'", bad[b]);
            EXPECT_ERR(cases[k].option);
            EXPECT_ERR(want);
        }
    }
    /* and the valid values still work */
    EXPECT_RUN(0, "bench '%s' --queries 10", s);
    EXPECT_OUT("(10 reads)");
    EXPECT_RUN(0, "index '%s' --by tokens --resolution 16", s);
    EXPECT_RUN(0, "convert text --quiet --force -o '%s' --threads 2 --commit-bytes 4096 '%s'", out,
               txt);
}

/* cat --range at the int64 limits: refused (exit 2), never signed overflow
 * (the ASan/UBSan build aborts on it); ordinary ranges give the right lines. */
static void test_range_limits(void) {
    const char *s = fortunes_store("range.ss");
    const char *bad[] = {"9223372036854775807",
                         "-9223372036854775808",
                         "9223372036854775807:",
                         ":9223372036854775807",
                         "-9223372036854775808:9223372036854775807",
                         ":-9223372036854775808",
                         "9223372036854775808",
                         "-9223372036854775809",
                         "431",
                         "-432",
                         "5:3",
                         "10abc",
                         "",
                         "1:2:3"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        EXPECT_RUN(2, "cat '%s' --range '%s'", s, bad[k]);
        EXPECT_ERR("--range");
        CHECK(!strstr(g_err, "runtime error"));
    }
    EXPECT_RUN(0, "cat '%s'", s);
    char *all = strdup(g_out);
    CHECK(all && count_lines(all) == 431);
    /* line k of the whole output, for comparison */
    const char *line[432];
    int n = 0;
    for (char *p = all; *p && n < 432; n++) {
        line[n] = p;
        p = strchr(p, '\n');
        *p++ = 0;
    }
    CHECK(n == 431);
    struct {
        const char *range;
        int first, count;
    } good[] = {{"0", 0, 1},     {"430", 430, 1},     {"-1", 430, 1},  {"-431", 0, 1},
                {"-3:", 428, 3}, {"2:5", 2, 3},       {":2", 0, 2},    {"5:5", 5, 0},
                {":", 0, 431},   {"-431:-430", 0, 1}, {"429:", 429, 2}};
    for (size_t k = 0; k < sizeof good / sizeof good[0]; k++) {
        EXPECT_RUN(0, "cat '%s' --range '%s'", s, good[k].range);
        CHECK_EQ_U64(count_lines(g_out), good[k].count);
        char *p = g_out;
        for (int i = 0; i < good[k].count; i++) {
            char *nl = strchr(p, '\n');
            *nl = 0;
            CHECK(strcmp(p, line[good[k].first + i]) == 0);
            p = nl + 1;
        }
    }
    free(all);
    /* split ranges at the limits: refused, no overflow */
    const char *sbad[] = {"9223372036854775807", "-9223372036854775808:", "18446744073709551615",
                          "0:99999999999999999999999"};
    for (size_t k = 0; k < sizeof sbad / sizeof sbad[0]; k++) {
        int rc = run("split add '%s' x '%s'", s, sbad[k]);
        CHECK(rc == 1 || rc == 2);
        CHECK(!strstr(g_err, "runtime error"));
        EXPECT_ERR(sbad[k]);
    }
}

/* A Latin-1 file name and Latin-1 words: info --json is valid JSON that
 * carries the exact bytes (base64), the vocabulary is stored as bytes (text
 * attributes are UTF-8) and reads back: cat prints the words, --vocab-from
 * maps them to the same ids. */
static void test_non_utf8(void) {
    char dir[800], in[900], st[900], st2[900], py[4096];
    snprintf(dir, sizeof dir, "%s", ss_test_tmpdir());
    snprintf(in, sizeof in, "%s/l\xe9.txt", dir);
    snprintf(st, sizeof st, "%s/latin1.ss", dir);
    snprintf(st2, sizeof st2, "%s/latin1-again.ss", dir);
    FILE *f = fopen(in, "w");
    CHECK(f && fputs("caf\xe9 ol\xe9 ok\nhello caf\xe9\n", f) >= 0 && fclose(f) == 0);
    EXPECT_RUN(0, "convert text --quiet --force --tokens words '%s' -o '%s'", in, st);

    ss_store *s;
    CHECK_OK(ss_open(&s, st, 0));
    ss_attr a;
    CHECK_OK(ss_attr_get(s, "vocab", &a));
    CHECK_EQ_U64(a.type, SS_ATTR_BYTES);
    const char want[] = "<pad>\n<unk>\n<bos>\n<eos>\ncaf\xe9\nhello\nok\nol\xe9\n";
    CHECK(a.size == strlen(want) && memcmp(a.data, want, a.size) == 0);
    ss_close(s);

    EXPECT_RUN(0, "cat '%s'", st);
    CHECK(strcmp(g_out, "caf\xe9 ol\xe9 ok\nhello caf\xe9\n") == 0);
    EXPECT_RUN(0, "convert text --quiet --force --tokens words --vocab '%s' '%s' -o '%s'", st, in,
               st2);
    EXPECT_RUN(0, "cat --raw '%s'", st);
    char *raw = strdup(g_out);
    EXPECT_RUN(0, "cat --raw '%s'", st2);
    CHECK(strcmp(raw, g_out) == 0);
    free(raw);

    /* an ASCII vocabulary stays text */
    snprintf(st2, sizeof st2, "%s/ascii.ss", dir);
    f = fopen(in, "w");
    CHECK(f && fputs("plain words\n", f) >= 0 && fclose(f) == 0);
    EXPECT_RUN(0, "convert text --quiet --force --tokens words '%s' -o '%s'", in, st2);
    CHECK_OK(ss_open(&s, st2, 0));
    CHECK_OK(ss_attr_get(s, "vocab", &a));
    CHECK_EQ_U64(a.type, SS_ATTR_TEXT);
    ss_close(s);

    /* info --json parses, and the base64 beside each non-UTF-8 text is exact */
    char cmd[8192];
    snprintf(py, sizeof py,
             "import json,sys,base64\n"
             "d=json.load(sys.stdin)\n"
             "a={x['name']:x for x in d['attributes']}\n"
             "f=a['source.files']\n"
             "assert "
             "base64.b64decode(f['value_base64'])==sys.argv[1].encode('utf-8','surrogateescape')+b'"
             "\\n', f\n"
             "assert f['value'].endswith('/l\\ufffd.txt\\n'), f\n"
             "assert 'value_base64' not in a['convert.version']\n"
             "assert "
             "base64.b64decode(a['vocab']['value_base64'])==b'<pad>\\n<unk>\\n<bos>\\n<eos>"
             "\\ncaf\\xe9\\nhello\\nok\\nol\\xe9\\n'\n");
    char pyf[900];
    snprintf(pyf, sizeof pyf, "%s/check.py", dir);
    f = fopen(pyf, "w");
    CHECK(f && fputs(py, f) >= 0 && fclose(f) == 0);
    /* the store of the Latin-1 input: rebuild it (st2 above was ASCII) */
    f = fopen(in, "w");
    CHECK(f && fputs("caf\xe9 ol\xe9 ok\nhello caf\xe9\n", f) >= 0 && fclose(f) == 0);
    EXPECT_RUN(0, "info --json '%s'", st);
    char js[900];
    snprintf(js, sizeof js, "%s/info.json", dir);
    f = fopen(js, "w");
    CHECK(f && fwrite(g_out, 1, g_outlen, f) == g_outlen && fclose(f) == 0);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s' '%s' < '%s/info.json'", pyf, in, dir);
    CHECK(system(cmd) == 0);
    /* the text output escapes the byte instead of writing it raw */
    EXPECT_RUN(0, "info '%s'", st);
    EXPECT_OUT("l\\xe9.txt");
}

/* Messages: no "kfold: kfold:", one line for an unknown option. */
static void test_messages(void) {
    const char *s = fortunes_store("msg.ss");
    EXPECT_RUN(1, "split kfold '%s' 500", s);
    CHECK(!strstr(g_err, "kfold: kfold:"));
    EXPECT_ERR("500 folds need at least 500 examples");
    const char *cmds[] = {"info", "cat", "verify", "bench", "index"};
    for (size_t k = 0; k < sizeof cmds / sizeof cmds[0]; k++) {
        EXPECT_RUN(2, "%s --no-such-option '%s'", cmds[k], s);
        EXPECT_ERR("unknown option '--no-such-option'");
        CHECK(!strstr(g_err, "unrecognized"));
        CHECK_EQ_U64(count_lines(g_err), 2); /* the message and the --help hint */
    }
    EXPECT_RUN(2, "bench '%s' --queries", s);
    EXPECT_ERR("option '--queries' needs a value");
    CHECK_EQ_U64(count_lines(g_err), 2);
}

/* With arguments, only the named tests run (e.g. `test_cli_commands range_limits`). */
int main(int argc, char **argv) {
    static const struct {
        const char *name;
        void (*run)(void);
    } tests[] = {{"numeric_options", test_numeric_options},
                 {"range_limits", test_range_limits},
                 {"non_utf8", test_non_utf8},
                 {"messages", test_messages}};
    for (size_t k = 0; k < sizeof tests / sizeof tests[0]; k++) {
        int want = argc < 2;
        for (int i = 1; i < argc; i++) want |= strcmp(argv[i], tests[k].name) == 0;
        if (want) tests[k].run();
    }
    free(g_out);
    puts("test_cli_commands: ok");
    return 0;
}
