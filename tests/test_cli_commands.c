/* SPDX-License-Identifier: BSD-2-Clause */
/* test_cli_commands.c - the read and edit commands of the built CLI (SS_CLI):
 * strict numeric options, ranges at the int64 limits, valid JSON and UTF-8
 * whatever the bytes of a store, and the messages users read. */
#include "testutil.h"

#include <edflib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define FORTUNES "/usr/share/games/fortunes/fortunes"

static char g_err[1 << 16]; /* stderr of the last run */
static char *g_out;         /* stdout of the last run */
static size_t g_outlen;

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
    char *e = ss_test_read_file(err, &n);
    snprintf(g_err, sizeof g_err, "%s", e);
    free(e);
    free(g_out);
    g_out = ss_test_read_file(out, &g_outlen);
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
        EXPECT_RUN(2, "split add '%s' x '%s'", s, sbad[k]);
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
    CHECK_OK(ss_attr_get(&a, s, "vocab"));
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
    CHECK_OK(ss_attr_get(&a, s, "vocab"));
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
    /* the text output escapes the byte instead of writing it raw. info cuts
     * a long value short, so the file sits in a short directory: under a
     * deep build tree its name would fall beyond the cut. */
    char shortdir[] = "/tmp/ss-l1-XXXXXX", shortin[64], shortst[64];
    CHECK(mkdtemp(shortdir) != NULL);
    snprintf(shortin, sizeof shortin, "%s/l\xe9.txt", shortdir);
    snprintf(shortst, sizeof shortst, "%s/s.ss", shortdir);
    f = fopen(shortin, "w");
    CHECK(f && fputs("caf\xe9 ol\xe9\n", f) >= 0 && fclose(f) == 0);
    EXPECT_RUN(0, "convert text --quiet --tokens words '%s' -o '%s'", shortin, shortst);
    EXPECT_RUN(0, "info '%s'", shortst);
    EXPECT_OUT("l\\xe9.txt");
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", shortdir);
    CHECK(system(cmd) == 0);
}

/* Flip one bit in every copy of `marker` in the file (stale copies may sit in
 * LMDB's free pages); returns the number of copies. */
static int flip_marker(const char *path, const char *marker) {
    size_t n, m = strlen(marker);
    char *d = ss_test_read_file(path, &n);
    int copies = 0;
    for (char *p = d; (p = memmem(p, n - (size_t)(p - d), marker, m)) != NULL; p += m, copies++)
        p[m / 2] ^= 1;
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(d, 1, n, f) == n && fclose(f) == 0);
    free(d);
    return copies;
}

/* verify names a damaged attribute and says which kind of block is damaged. */
static void test_verify_names(void) {
    const char *s = fortunes_store("vn.ss");
    EXPECT_RUN(0, "attr set '%s' note --text MARKERMARKERMARKER", s);
    CHECK(flip_marker(s, "MARKERMARKERMARKER") >= 1);
    EXPECT_RUN(3, "verify '%s'", s);
    EXPECT_ERR("attribute 'note': attribute checksum mismatch");
    s = fortunes_store("vn2.ss");
    CHECK(flip_marker(s, "A day for firm decisions") >= 1);
    EXPECT_RUN(3, "verify '%s'", s);
    EXPECT_ERR("field 'tokens' data chunk 0: data chunk checksum mismatch (examples 0 to 430)");
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

/* Write `n` bytes to a file in the test directory; returns its path (static slot). */
static const char *put_file(const char *name, const void *data, size_t n) {
    static char path[8][800];
    static int next;
    char *p = path[next++ % 8];
    snprintf(p, sizeof path[0], "%s", ss_test_path(name));
    FILE *f = fopen(p, "wb");
    CHECK(f && fwrite(data, 1, n, f) == n && fclose(f) == 0);
    return p;
}

/* Run /usr/bin/python3 SCRIPT ARG on g_out as stdin; 0 when the script passed. */
static int python_on_output(const char *script, const char *arg) {
    const char *in = put_file("py-in.txt", g_out, g_outlen);
    const char *py = put_file("check.py", script, strlen(script));
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s' '%s' < '%s'", py, arg ? arg : "", in);
    return system(cmd);
}

/* A store written through the library: 40 examples of f64 sequences (values
 * that need 17 digits), an f32 [3] fixed field, u8 text with tokens = bytes,
 * and i16 [2] rows; example k has length k % 7. Returns its path. */
#define MIXED_N 40
static double mixed_f64(int k, int t) {
    return (k + 1) * 0.1 + t / 3.0 - (k % 2 ? 1e-300 : 1e300) * (t == 2);
}
static float mixed_f32(int k, int j) {
    return (float)(k * 0.7 - j / 7.0);
}
static const char *mixed_store(void) {
    static char path[800];
    snprintf(path, sizeof path, "%s", ss_test_path("mixed.ss"));
    ss_field fs[4] = {{"x", SS_F64, 1, 0, {0}},
                      {"w", SS_F32, 0, 1, {3}},
                      {"text", SS_U8, 1, 0, {0}},
                      {"pair", SS_I16, 1, 1, {2}}};
    ss_schema sch = {4, fs};
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.flags = SS_WRITE_FORCE;
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, path, &sch, &o));
    for (int k = 0; k < MIXED_N; k++) {
        double x[8];
        float wv[3];
        char text[64];
        int16_t pair[16];
        int len = k % 7;
        for (int t = 0; t < len; t++) x[t] = mixed_f64(k, t);
        for (int j = 0; j < 3; j++) wv[j] = mixed_f32(k, j);
        snprintf(text, sizeof text, "ex %d \"q\"\n\xc3\xa9", k);
        for (int t = 0; t < 2 * len; t++) pair[t] = (int16_t)(k * 100 - t * 700);
        ss_value v[4] = {{x, (uint64_t)len}, {wv, 1}, {text, strlen(text)}, {pair, (uint64_t)len}};
        CHECK_OK(ss_writer_append(w, v));
    }
    CHECK_OK(ss_writer_set_attr(w, "text.tokens", SS_ATTR_TEXT, "bytes", 5));
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    return path;
}

/* cat prints floats that read back bit-exactly (text and --json), text fields
 * as text, rows as lists: each value checked against the values written. */
static void test_cat_json(void) {
    const char *s = mixed_store();
    /* text output: x, w, text, pair; floats parse back to the same bits */
    EXPECT_RUN(0, "cat '%s' --field x --field w", s);
    char *line = g_out;
    for (int k = 0; k < MIXED_N; k++) {
        char *end = strchr(line, '\n');
        CHECK(end);
        *end = 0;
        char *tab = strchr(line, '\t'), *p = line;
        CHECK(tab);
        for (int t = 0; t < k % 7; t++) {
            char *q;
            double d = strtod(p, &q);
            CHECK(memcmp(&d, &(double){mixed_f64(k, t)}, sizeof d) == 0);
            p = q + (*q == ' ');
        }
        CHECK(p == tab);
        p = tab + 1;
        for (int j = 0; j < 3; j++) {
            char *q;
            float f = strtof(p, &q);
            CHECK(f == mixed_f32(k, j));
            p = q + (*q == ',');
        }
        CHECK(*p == 0);
        line = end + 1;
    }
    /* --json: one object per line, values compared in Python with the same formulas */
    EXPECT_RUN(0, "cat --json --with-source '%s'", s);
    const char *py =
        "import json,sys,struct\n"
        "f32=lambda v: struct.unpack('f',struct.pack('f',v))[0]\n"
        "lines=sys.stdin.read().splitlines()\n"
        "assert len(lines)==40, len(lines)\n"
        "for k,l in enumerate(lines):\n"
        "  o=json.loads(l)\n"
        "  n=k%7\n"
        "  assert o['index']==k\n"
        "  assert list(o)==['index','source','x','w','text','pair'], list(o)\n"
        "  want=[(k+1)*0.1+t/3.0-(1e-300 if k%2 else 1e300)*(t==2) for t in range(n)]\n"
        "  assert o['x']==want, (o['x'],want)\n"
        "  assert o['w']==[f32(k*0.7-j/7.0) for j in range(3)], o['w']\n"
        "  assert o['text']=='ex %d \"q\"\\n\\u00e9'%k, o['text']\n"
        "  assert o['pair']==[[k*100-(2*t)*700,k*100-(2*t+1)*700] for t in range(n)]\n";
    CHECK(python_on_output(py, NULL) == 0);
}

/* export: jsonl is cat --json; npy files hold exactly the stored values and
 * convert npy reads a sequence field back to the same examples. */
static void test_export(void) {
    const char *s = mixed_store();
    char dir[800], jl[800], back[800];
    snprintf(dir, sizeof dir, "%s", ss_test_path("export-npy"));
    snprintf(jl, sizeof jl, "%s", ss_test_path("export.jsonl"));
    snprintf(back, sizeof back, "%s", ss_test_path("back.ss"));
    EXPECT_RUN(0, "cat --json '%s' --range 3:30", s);
    char *want = strdup(g_out);
    EXPECT_RUN(0, "export '%s' --format jsonl -o '%s' --range 3:30", s, jl);
    size_t n;
    char *got = ss_test_read_file(jl, &n);
    CHECK(strcmp(want, got) == 0);
    free(got);
    free(want);

    EXPECT_RUN(0, "export '%s' --format npy -o '%s'", s, dir);
    const char *py =
        "import numpy as np,sys,os\n"
        "d=sys.argv[1]\n"
        "assert sorted(os.listdir(d))==['pair','text','w','x']\n"
        "for k in range(40):\n"
        "  n=k%7\n"
        "  f=lambda fld: np.load('%s/%s/%010d.npy'%(d,fld,k))\n"
        "  x=f('x'); assert x.dtype==np.float64 and x.shape==(n,)\n"
        "  assert list(x)==[(k+1)*0.1+t/3.0-(1e-300 if k%2 else 1e300)*(t==2) for t in range(n)]\n"
        "  w=f('w'); assert w.dtype==np.float32 and w.shape==(3,)\n"
        "  assert list(w)==[np.float32(k*0.7-j/7.0) for j in range(3)]\n"
        "  p=f('pair'); assert p.dtype==np.int16 and p.shape==(n,2)\n"
        "  assert p.flatten().tolist()==[k*100-t*700 for t in range(2*n)]\n"
        "  t=f('text'); assert bytes(t)==('ex %d \"q\"\\n\u00e9'%k).encode()\n";
    CHECK(python_on_output(py, dir) == 0);
    EXPECT_RUN(0, "convert npy --quiet --force '%s'/x/*.npy --field x -o '%s'", dir, back);
    EXPECT_RUN(0, "cat --json --field x '%s'", s);
    want = strdup(g_out);
    EXPECT_RUN(0, "cat --json --field x '%s'", back);
    CHECK(strcmp(want, g_out) == 0);
    free(want);
    EXPECT_RUN(2, "export '%s' --format csv -o x", s);
    EXPECT_RUN(1, "export '%s' --format npy -o '%s' --field nosuch", s, dir);
}

/* info shows attribute values; info --json carries them whole and exact. */
static void test_info_values(void) {
    const char *s = fortunes_store("values.ss");
    char *big = malloc(10001);
    CHECK(big);
    for (int i = 0; i < 10000; i++) big[i] = (char)('a' + i % 26);
    big[10000] = 0;
    const char *bigf = put_file("big.txt", big, 10000);
    EXPECT_RUN(0, "attr set '%s' my.f64 --values 0.1,1e300,-2.5 --type f64", s);
    EXPECT_RUN(0, "attr set '%s' my.i16 --values 1,-2,300 --type i16", s);
    EXPECT_RUN(0, "attr set '%s' my.u64 --values 18446744073709551615,0 --type u64", s);
    EXPECT_RUN(0, "attr set '%s' my.long --values 1,2,3,4,5,6,7,8,9,10 --type u8", s);
    EXPECT_RUN(0, "attr set '%s' my.big --file '%s'", s, bigf);
    EXPECT_RUN(0, "info '%s'", s);
    EXPECT_OUT("my.f64                   f64         24 bytes  [0.1, 1e+300, -2.5]");
    EXPECT_OUT("my.i16                   i16          6 bytes  [1, -2, 300]");
    EXPECT_OUT("[1, 2, 3, 4, 5, 6, 7, 8, ...]");
    EXPECT_OUT("\"abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefgh...\"");
    EXPECT_OUT("tokens.tokens            text         5 bytes  \"bytes\"");
    EXPECT_RUN(0, "info --json '%s'", s);
    const char *py = "import json,sys\n"
                     "d=json.load(sys.stdin)\n"
                     "a={x['name']:x for x in d['attributes']}\n"
                     "assert a['my.f64']['value']==[0.1,1e300,-2.5]\n"
                     "assert a['my.i16']['value']==[1,-2,300]\n"
                     "assert a['my.u64']['value']==['18446744073709551615',0]\n"
                     "assert a['my.long']['value']==list(range(1,11))\n"
                     "assert a['my.big']['value']==open(sys.argv[1]).read()\n";
    CHECK(python_on_output(py, bigf) == 0);
    free(big);
}

/* attr set/get/list/rm round trips, and what they refuse. */
static void test_attr(void) {
    const char *s = fortunes_store("attr.ss");
    unsigned char bin[300];
    for (int i = 0; i < 300; i++) bin[i] = (unsigned char)(i * 37 + 11);
    const char *binf = put_file("bin.dat", bin, sizeof bin);
    EXPECT_RUN(0, "attr set '%s' blob --file '%s' --type bytes", s, binf);
    EXPECT_RUN(0, "attr get '%s' blob", s);
    CHECK(g_outlen == sizeof bin && memcmp(g_out, bin, sizeof bin) == 0);
    EXPECT_RUN(0, "attr set '%s' note --text 'h\xc3\xa9llo'", s);
    EXPECT_RUN(0, "attr get '%s' note", s);
    CHECK(strcmp(g_out, "h\xc3\xa9llo") == 0);
    EXPECT_RUN(0, "attr set '%s' note --text replaced", s); /* set replaces */
    EXPECT_RUN(0, "attr get '%s' note", s);
    CHECK(strcmp(g_out, "replaced") == 0);
    EXPECT_RUN(0, "attr set '%s' rates --values 0.1,-3e-310,123456789.123 --type f64", s);
    EXPECT_RUN(0, "attr get '%s' rates", s);
    double want[3] = {0.1, -3e-310, 123456789.123};
    char *p = g_out;
    for (int i = 0; i < 3; i++) {
        double d = strtod(p, &p);
        CHECK(memcmp(&d, &want[i], sizeof d) == 0);
    }
    EXPECT_RUN(0, "attr set '%s' r32 --values 0.1,3.4028235e38 --type f32", s);
    EXPECT_RUN(0, "attr get '%s' r32", s);
    CHECK(strtof(g_out, &p) == 0.1f && strtof(p, NULL) == 3.4028235e38f);
    EXPECT_RUN(0, "attr get --json '%s' blob", s);
    EXPECT_OUT("\"type\": \"bytes\"");
    EXPECT_RUN(0, "attr list '%s'", s);
    EXPECT_OUT("note                     text         8 bytes  \"replaced\"");
    EXPECT_OUT("rates");
    /* the library sees the same values */
    ss_store *st;
    ss_attr a;
    CHECK_OK(ss_open(&st, s, 0));
    CHECK_OK(ss_attr_get(&a, st, "blob"));
    CHECK(a.type == SS_ATTR_BYTES && a.size == sizeof bin && !memcmp(a.data, bin, sizeof bin));
    CHECK_OK(ss_attr_get(&a, st, "rates"));
    CHECK(a.type == SS_F64 && a.size == 24 && !memcmp(a.data, want, 24));
    ss_close(st);
    /* refusals */
    EXPECT_RUN(2, "attr set '%s' bad --text 'caf\xe9'", s);
    EXPECT_ERR("not valid UTF-8");
    EXPECT_RUN(2, "attr set '%s' ss.split.x --text a", s);
    EXPECT_RUN(2, "attr set '%s' v --values 1,256 --type u8", s);
    EXPECT_ERR("'256' is not a u8 value");
    EXPECT_RUN(2, "attr set '%s' v --values 1,-129 --type i8", s);
    EXPECT_RUN(2, "attr set '%s' v --values 1.5x --type f64", s);
    EXPECT_RUN(2, "attr set '%s' v --values 1", s);
    EXPECT_RUN(2, "attr set '%s' v --text a --file b", s);
    EXPECT_RUN(1, "attr rm '%s' no.such", s);
    EXPECT_ERR("no attribute 'no.such'");
    /* rm, then it is gone and the others stay */
    EXPECT_RUN(0, "attr rm '%s' note", s);
    EXPECT_RUN(1, "attr get '%s' note", s);
    EXPECT_RUN(0, "attr get '%s' blob", s);
    CHECK(g_outlen == sizeof bin);
    EXPECT_RUN(0, "verify '%s'", s);
    /* the vocabulary exports as it is stored */
    const char *words = put_file("vw.txt", "b a b\nc b\n", 10);
    char ws[800];
    snprintf(ws, sizeof ws, "%s", ss_test_path("vw.ss"));
    EXPECT_RUN(0, "convert text --quiet --force --tokens words '%s' -o '%s'", words, ws);
    EXPECT_RUN(0, "attr get '%s' vocab", ws);
    CHECK(strcmp(g_out, "<pad>\n<unk>\n<bos>\n<eos>\nb\na\nc\n") == 0);
}

/* ss_writer_remove_attr: the last call for a name wins; absent names are fine. */
static void test_remove_attr_api(void) {
    const char *s = mixed_store();
    ss_writer *w;
    CHECK_OK(ss_writer_open(&w, s, NULL, NULL));
    CHECK_OK(ss_writer_set_attr(w, "a", SS_ATTR_TEXT, "1", 1));
    CHECK_OK(ss_writer_set_attr(w, "b", SS_ATTR_TEXT, "2", 1));
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    CHECK_OK(ss_writer_open(&w, s, NULL, NULL));
    CHECK_OK(ss_writer_remove_attr(w, "a"));
    CHECK_OK(ss_writer_remove_attr(w, "never.set"));
    CHECK_OK(ss_writer_remove_attr(w, "b"));
    CHECK_OK(ss_writer_set_attr(w, "b", SS_ATTR_TEXT, "3", 1)); /* set after remove: kept */
    CHECK_OK(ss_writer_set_attr(w, "c", SS_ATTR_TEXT, "4", 1));
    CHECK_OK(ss_writer_remove_attr(w, "c")); /* remove after set: gone */
    CHECK_RC(ss_writer_remove_attr(w, ""), SS_EINVAL);
    CHECK_RC(ss_writer_remove_attr(NULL, "a"), SS_EINVAL);
    CHECK_OK(ss_writer_finish(w));
    CHECK_RC(ss_writer_remove_attr(w, "b"), SS_ESTATE);
    ss_writer_free(w);
    ss_store *st;
    ss_attr at;
    CHECK_OK(ss_open(&st, s, 0));
    CHECK_RC(ss_attr_get(&at, st, "a"), SS_ENOTFOUND);
    CHECK_RC(ss_attr_get(&at, st, "c"), SS_ENOTFOUND);
    CHECK_OK(ss_attr_get(&at, st, "b"));
    CHECK(at.size == 1 && ((const char *)at.data)[0] == '3');
    CHECK_OK(ss_attr_get(&at, st, "text.tokens"));
    CHECK_EQ_U64(ss_count(st), MIXED_N);
    CHECK_OK(ss_verify(NULL, st, NULL, NULL));
    ss_close(st);
}

/* split rm, index list/rm, one rule for replacing, fixed fields refused. */
static void test_split_index(void) {
    const char *s = fortunes_store("si.ss");
    EXPECT_RUN(0, "split add '%s' one 7", s);
    CHECK(strcmp(g_out, "split 'one': 1 example\n") == 0);
    EXPECT_RUN(0, "split add '%s' two 0:2", s);
    EXPECT_RUN(0, "split rm '%s' one", s);
    EXPECT_RUN(0, "split list '%s'", s);
    CHECK(!strstr(g_out, "one") && strstr(g_out, "two"));
    EXPECT_RUN(1, "split rm '%s' one", s);
    EXPECT_ERR("no split 'one'");
    EXPECT_RUN(2, "split add --nolock '%s' three 1", s);

    EXPECT_RUN(0, "index '%s' --by tokens --resolution 8", s);
    EXPECT_RUN(1, "index '%s' --by tokens --resolution 4", s);
    EXPECT_ERR("index 'tokens' exists (use --force to replace it)");
    EXPECT_RUN(0, "index '%s' --by tokens --resolution 4 --force", s);
    EXPECT_RUN(0, "index '%s' --by tokens --resolution 16 --name coarse", s);
    EXPECT_RUN(1, "index '%s' --by source --resolution 1 --name fixed", s);
    EXPECT_ERR("field 'source' is fixed");
    EXPECT_RUN(0, "index list --json '%s'", s);
    const char *py = "import json,sys\n"
                     "d=json.load(sys.stdin)\n"
                     "assert [(x['name'],x['by'],x['resolution'],x['examples']) for x in d]=="
                     "[('coarse',['tokens'],16,431),('tokens',['tokens'],4,431)], d\n";
    CHECK(python_on_output(py, NULL) == 0);
    EXPECT_RUN(0, "index rm '%s' tokens", s);
    EXPECT_RUN(0, "index list '%s'", s);
    CHECK(strstr(g_out, "\ncoarse ") && !strstr(g_out, "\ntokens "));
    EXPECT_RUN(1, "index rm '%s' tokens", s);
    EXPECT_RUN(0, "verify '%s'", s);
}

/* A words store of 4 examples (vocabulary "the cat sat zebra ran dog"), with
 * a split 'a', a bucket index 'tokens' and a megatron.doc_idx of two documents. */
static const char *words_store(const char *name) {
    static char path[4][800];
    static int next;
    char *p = path[next++ % 4];
    snprintf(p, sizeof path[0], "%s", ss_test_path(name));
    const char *words = "the cat sat\nthe zebra ran\ncat dog\nthe dog sat\n";
    const char *txt = put_file("words.txt", words, strlen(words));
    EXPECT_RUN(0, "convert text --quiet --force --tokens words '%s' -o '%s'", txt, p);
    EXPECT_RUN(0, "split add '%s' a 0:2", p);
    EXPECT_RUN(0, "index '%s' --by tokens --resolution 2", p);
    EXPECT_RUN(0, "attr set '%s' megatron.doc_idx --values 0,2,4 --type u64", p);
    return p;
}

/* An attribute whose checksum fails is an error wherever a command meets
 * it, naming the store and the attribute; never read as absent. */
static void test_damaged_attr(void) {
    const char *s = words_store("dmg.ss");
    char jl[800], mg[800];
    snprintf(jl, sizeof jl, "%s", ss_test_path("dmg.jsonl"));
    snprintf(mg, sizeof mg, "%s", ss_test_path("dmg-megatron"));
    EXPECT_RUN(0, "cat '%s'", s);
    EXPECT_OUT("the zebra ran\n");
    EXPECT_RUN(0, "export megatron '%s' '%s' --force", s, mg);
    ss_test_flip_attr(s, "vocab", 5); /* "the\ncat\n...": the 'a' of cat */
    char want[1000];
    snprintf(want, sizeof want, "%s: attribute 'vocab': checksum mismatch", s);
    const char *vocab_cmds[] = {"cat", "cat --json", "cat --range 1:2"};
    for (size_t k = 0; k < sizeof vocab_cmds / sizeof vocab_cmds[0]; k++) {
        EXPECT_RUN(1, "%s '%s'", vocab_cmds[k], s);
        EXPECT_ERR(want);
        CHECK_EQ_U64(g_outlen, 0); /* not one example printed as token ids */
    }
    EXPECT_RUN(1, "export '%s' --format jsonl -o '%s'", s, jl);
    EXPECT_ERR(want);
    EXPECT_RUN(0, "cat --raw '%s'", s); /* ids asked for: the vocabulary is not read */
    CHECK_EQ_U64(count_lines(g_out), 4);
    EXPECT_RUN(1, "info '%s'", s); /* shown inline, and an error */
    EXPECT_OUT("examples    4");
    EXPECT_OUT(want);
    EXPECT_OUT("megatron.doc_idx");
    EXPECT_ERR(want);
    EXPECT_RUN(1, "info --json '%s'", s);
    EXPECT_ERR(want);
    const char *py = "import json,sys\n"
                     "d=json.load(sys.stdin)\n"
                     "e=[a for a in d['attributes'] if 'error' in a]\n"
                     "assert len(e)==1 and e[0]['name']=='vocab', e\n"
                     "assert \"attribute 'vocab': checksum\" in e[0]['error'], e\n"
                     "assert d['examples']==4\n";
    CHECK(python_on_output(py, NULL) == 0);
    EXPECT_RUN(1, "attr get '%s' vocab", s);
    EXPECT_ERR(want);
    EXPECT_RUN(3, "verify '%s'", s);
    const char *words = put_file("more.txt", "the cat ran\n", 12);
    EXPECT_RUN(1, "convert text --quiet --force --tokens words --vocab '%s' '%s' -o '%s'", s,
               words, ss_test_path("dmg2.ss"));
    EXPECT_ERR(want); /* damaged, not "has no vocabulary" */
    CHECK(!strstr(g_err, "has no vocabulary"));
    EXPECT_RUN(1, "convert text --quiet --tokens words --append '%s' -o '%s'", words, s);
    EXPECT_ERR(want);

    ss_test_flip_attr(s, "megatron.doc_idx", 8); /* document 1 starts at 3, not 2 */
    EXPECT_RUN(1, "export megatron '%s' '%s' --force", s, mg);
    EXPECT_ERR("attribute 'megatron.doc_idx': checksum mismatch");

    ss_test_flip_attr(s, "ss.split.a", 0);
    EXPECT_RUN(1, "split add '%s' a 1", s); /* damaged is not absent: --force replaces it */
    EXPECT_ERR("attribute 'ss.split.a': checksum mismatch");
    EXPECT_RUN(1, "cat --raw --split a '%s'", s);
    EXPECT_ERR("attribute 'ss.split.a': checksum mismatch");
    EXPECT_RUN(0, "split add --force '%s' a 1", s);
    EXPECT_RUN(0, "cat --raw --split a '%s'", s);

    ss_test_flip_attr(s, "ss.bucket.tokens", 70);
    EXPECT_RUN(1, "index list '%s'", s);
    EXPECT_OUT("tokens");
    EXPECT_ERR("attribute 'ss.bucket.tokens': checksum mismatch");
    EXPECT_RUN(1, "index list --json '%s'", s);
    py = "import json,sys\n"
         "d=json.load(sys.stdin)\n"
         "assert len(d)==1 and d[0]['name']=='tokens' and 'checksum' in d[0]['error'], d\n";
    CHECK(python_on_output(py, NULL) == 0);
    EXPECT_RUN(1, "index '%s' --by tokens --resolution 2", s);
    EXPECT_ERR("attribute 'ss.bucket.tokens': checksum mismatch");
    EXPECT_RUN(0, "index '%s' --by tokens --resolution 2 --force", s);
    EXPECT_RUN(0, "index list '%s'", s);
}

/* cat --with-source over a damaged chunk of the source field: an error
 * naming the chunk, not "?" for the file and line. */
static void test_damaged_source(void) {
    const char *s = words_store("dmg-src.ss");
    ss_store *st;
    CHECK_OK(ss_open(&st, s, SS_OPEN_NOLOCK));
    ss_view v;
    const void *base;
    uint64_t size;
    int fd;
    CHECK_OK(ss_get(&v, st, ss_test_field(st, "source"), 2));
    CHECK_OK(ss_store_map(&base, &size, &fd, st));
    long off = (long)((const unsigned char *)v.data - (const unsigned char *)base);
    ss_close(st);
    FILE *f = fopen(s, "r+b");
    CHECK(f && fseek(f, off, SEEK_SET) == 0);
    int c = fgetc(f);
    CHECK(c != EOF && fseek(f, off, SEEK_SET) == 0 && fputc(c ^ 4, f) != EOF && fclose(f) == 0);
    EXPECT_RUN(0, "cat '%s'", s); /* the tokens' chunk is sound */
    EXPECT_RUN(1, "cat --with-source '%s'", s);
    EXPECT_ERR("example 0 (--with-source)");
    EXPECT_ERR("field 'source'");
    EXPECT_RUN(1, "cat --json --with-source '%s'", s);
    EXPECT_ERR("field 'source'");
}

/* dataset build: a shard's damaged source.shard or shared attribute is
 * said to be damaged, not "no source.shard" or "differs". */
static void test_damaged_shard_attr(void) {
    char dir[800], part[820], copy[800];
    snprintf(dir, sizeof dir, "%s", ss_test_path("dmg-ds"));
    snprintf(part, sizeof part, "%s/p1.ss", dir);
    snprintf(copy, sizeof copy, "%s", ss_test_path("p1-copy.ss"));
    CHECK(mkdir(dir, 0755) == 0);
    const char *words = "a b\nc d e\nf\ng h\n";
    const char *txt = put_file("shard-words.txt", words, strlen(words));
    for (int k = 0; k < 2; k++)
        EXPECT_RUN(0, "convert text --quiet --tokens words '%s' -o '%s/p%d.ss' --shard %d/2", txt,
                   dir, k, k);
    size_t n;
    char *image = ss_test_read_file(part, &n);
    ss_test_write_file(copy, image, n);
    ss_test_flip_attr(part, "source.shard", 0);
    EXPECT_RUN(1, "dataset build '%s'", dir);
    EXPECT_ERR("p1.ss: attribute 'source.shard': checksum mismatch");
    ss_test_write_file(part, image, n);
    ss_test_flip_attr(part, "convert.version", 0);
    EXPECT_RUN(1, "dataset build '%s'", dir);
    EXPECT_ERR("p1.ss: attribute 'convert.version': checksum mismatch");
    CHECK(!strstr(g_err, "differs"));
    ss_test_write_file(part, image, n);
    EXPECT_RUN(0, "dataset build '%s'", dir);
    free(image);
}

/* The histogram in info --json agrees with a count of the lengths read
 * through the library; the text output draws one bar per bin. */
static void test_histogram(void) {
    const char *s = fortunes_store("hist.ss");
    ss_store *st;
    CHECK_OK(ss_open(&st, s, 0));
    uint64_t n = ss_count(st), *len = malloc(n * sizeof *len);
    CHECK(len);
    CHECK_OK(ss_lengths(len, st, 0, 0, n));
    ss_close(st);
    char *lens = malloc(n * 24 + 1);
    CHECK(lens);
    size_t k = 0;
    for (uint64_t i = 0; i < n; i++) k += (size_t)sprintf(lens + k, "%" PRIu64 " ", len[i]);
    const char *lf = put_file("lens.txt", lens, k);
    EXPECT_RUN(0, "info --json '%s'", s);
    const char *py = "import json,sys\n"
                     "d=json.load(sys.stdin)\n"
                     "L=[int(x) for x in open(sys.argv[1]).read().split()]\n"
                     "h=d['fields'][0]['lengths']['histogram']\n"
                     "e,c=h['edges'],h['counts']\n"
                     "w=e[1]-e[0]\n"
                     "assert len(c)==len(e)-1<=10 and all(e[i+1]-e[i]==w for i in range(len(c)))\n"
                     "assert any(w==m*10**p for m in (1,2,5) for p in range(20))\n"
                     "assert e[0]%w==0 and e[0]<=min(L) and max(L)<e[-1] and c[0]>0 and c[-1]>0\n"
                     "assert c==[sum(1 for x in L if e[i]<=x<e[i+1]) for i in range(len(c))], c\n"
                     "";
    CHECK(python_on_output(py, lf) == 0);
    EXPECT_RUN(0, "info '%s'", s);
    int bars = 0;
    for (char *p = g_out; (p = strstr(p, "..")); p++) bars += strstr(p, "\xe2\x96") != NULL;
    CHECK(bars >= 2);
    EXPECT_OUT("\xe2\x96\x88"); /* a full block */
    free(len);
    free(lens);
}

/* EDF+ annotations are text: cat prints them as text, --json as a string. */
static void test_edf_annotations(void) {
    char edf[800], st[800];
    snprintf(edf, sizeof edf, "%s", ss_test_path("ann.edf"));
    snprintf(st, sizeof st, "%s", ss_test_path("ann.ss"));
    int h = edfopen_file_writeonly(edf, EDFLIB_FILETYPE_EDFPLUS, 1);
    CHECK(h >= 0);
    CHECK(edf_set_samplefrequency(h, 0, 10) == 0);
    CHECK(edf_set_physical_maximum(h, 0, 100) == 0);
    CHECK(edf_set_physical_minimum(h, 0, -100) == 0);
    CHECK(edf_set_digital_maximum(h, 0, 32767) == 0);
    CHECK(edf_set_digital_minimum(h, 0, -32768) == 0);
    CHECK(edf_set_label(h, 0, "EEG Fp1") == 0);
    double buf[10] = {0};
    for (int s = 0; s < 3; s++) CHECK(edfwrite_physical_samples(h, buf) == 0);
    CHECK(edfwrite_annotation_utf8(h, 15000, 5000, "eyes closed") == 0);
    CHECK(edfwrite_annotation_utf8(h, 20000, -1,
                                   "b\xc3\xa9"
                                   "b\xc3\xa9") == 0);
    CHECK(edfclose_file(h) == 0);
    EXPECT_RUN(0, "convert edf --quiet --force '%s' -o '%s'", edf, st);
    EXPECT_RUN(0, "cat '%s' --field annotations", st);
    EXPECT_OUT("eyes closed");
    EXPECT_OUT("b\xc3\xa9"
               "b\xc3\xa9");
    EXPECT_RUN(0, "cat --json '%s' --field annotations", st);
    const char *py =
        "import json,sys\n"
        "o=json.loads(sys.stdin.read())\n"
        "a=o['annotations']\n"
        "assert isinstance(a,str) and 'eyes closed' in a and '\\u00e9b\\u00e9' in a, a\n";
    CHECK(python_on_output(py, NULL) == 0);

    /* damaged attributes of an EDF store: cat and --append say so */
    size_t n;
    char *image = ss_test_read_file(st, &n);
    ss_test_flip_attr(st, "convert.converter", 1);
    EXPECT_RUN(1, "cat '%s' --field annotations", st);
    EXPECT_ERR("attribute 'convert.converter': checksum mismatch");
    const char *names[] = {"signal.gain", "signal.labels", "signal.sample_rate"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        ss_test_write_file(st, image, n);
        ss_test_flip_attr(st, names[k], 1);
        EXPECT_RUN(1, "convert edf --quiet --append '%s' -o '%s'", edf, st);
        char want[300];
        snprintf(want, sizeof want, "attribute '%s': checksum mismatch", names[k]);
        EXPECT_ERR(want);
        CHECK(!strstr(g_err, "missing"));
    }
    ss_test_write_file(st, image, n);
    EXPECT_RUN(0, "convert edf --quiet --append '%s' -o '%s'", edf, st);
    free(image);
}

static int lock_exists(const char *store) {
    char lock[900];
    snprintf(lock, sizeof lock, "%s-lock", store);
    return access(lock, F_OK) == 0;
}

/* Read-only commands leave no lock file; neither do attribute edits; a lock
 * file another process holds open is never removed. */
static void test_lock_files(void) {
    const char *s = fortunes_store("lock.ss");
    char lock[900];
    snprintf(lock, sizeof lock, "%s-lock", s);
    CHECK(!lock_exists(s)); /* the conversion removed its own */
    const char *notstore = put_file("notstore.ss", "hello\n", 6);
    EXPECT_RUN(1, "info '%s'", notstore);
    CHECK(!lock_exists(notstore));
    const char *cmds[] = {"info '%s'",
                          "info --json '%s'",
                          "cat '%s'",
                          "verify '%s'",
                          "bench '%s' --queries 10",
                          "split list '%s'",
                          "index list '%s'",
                          "attr list '%s'",
                          "attr set '%s' a --text b",
                          "attr rm '%s' a",
                          "split add '%s' s 0:5",
                          "split rm '%s' s",
                          "index '%s' --by tokens --resolution 5",
                          "index rm '%s' tokens",
                          "split kfold '%s' 2",
                          "bench --nolock '%s' --queries 10",
                          "split list --nolock '%s'"};
    for (size_t k = 0; k < sizeof cmds / sizeof cmds[0]; k++) {
        char line[1024];
        snprintf(line, sizeof line, cmds[k], s);
        EXPECT_RUN(0, "%s", line);
        if (lock_exists(s)) fprintf(stderr, "after: seqstore %s\n", line);
        CHECK(!lock_exists(s));
    }
    /* a store read as an input of another command (a vocabulary, an export) */
    char words[800], out[800];
    snprintf(words, sizeof words, "%s", ss_test_path("lock-words.ss"));
    snprintf(out, sizeof out, "%s", ss_test_path("lock-out"));
    EXPECT_RUN(0, "convert text --quiet --force --tokens words --doc-sep %% %s -o '%s'", FORTUNES,
               words);
    CHECK(!lock_exists(words));
    EXPECT_RUN(0, "convert text --quiet --force --tokens words --vocab '%s' %s -o '%s.ss'", words,
               FORTUNES, out);
    CHECK(!lock_exists(words));
    EXPECT_RUN(0, "export '%s' --format jsonl -o '%s.jsonl'", words, out);
    CHECK(!lock_exists(words));
    EXPECT_RUN(0, "export megatron '%s' '%s-mm' --force", words, out);
    CHECK(!lock_exists(words));
    /* another process (this one) has the store open: its lock file stays */
    ss_store *st;
    CHECK_OK(ss_open(&st, s, 0));
    CHECK(lock_exists(s));
    EXPECT_RUN(0, "info '%s'", s);
    CHECK(lock_exists(s));
    ss_close(st);
    unlink(lock);
    /* the lock file appears while the command runs (another process opens
     * the store then): not removed, since that process holds it */
    char big[800], txt[800], ready[800], cmd[4096];
    snprintf(txt, sizeof txt, "%s", ss_test_path("lines.txt"));
    FILE *f = fopen(txt, "w");
    CHECK(f);
    for (int i = 0; i < 20000; i++) fprintf(f, "line %d of a long enough text to fill pipes\n", i);
    CHECK(fclose(f) == 0);
    snprintf(big, sizeof big, "%s", ss_test_path("big.ss"));
    EXPECT_RUN(0, "convert lines --quiet --force '%s' -o '%s'", txt, big);
    CHECK(!lock_exists(big));
    snprintf(ready, sizeof ready, "%s", ss_test_path("ready"));
    /* cat blocks on the pipe after the first 64 KiB until the reader drains it */
    snprintf(cmd, sizeof cmd,
             "%s cat '%s' | { head -c 1000 > /dev/null; touch '%s'; sleep 1; cat > /dev/null; } &",
             SS_CLI, big, ready);
    CHECK(system(cmd) == 0);
    for (int i = 0; i < 500 && access(ready, F_OK) != 0; i++) usleep(10000);
    CHECK(access(ready, F_OK) == 0);
    CHECK(lock_exists(big)); /* created by cat */
    CHECK_OK(ss_open(&st, big, 0));
    sleep(2); /* cat has finished */
    CHECK(lock_exists(big));
    ss_close(st);
}

/* Small conventions: help CMD, plurals, bench on a tiny store, JSON alike. */
static void test_conventions(void) {
    EXPECT_RUN(0, "convert --help");
    /* `seqstore --help` (and so man seqstore, seqstore-convert's NAME line)
     * names every kind `convert --help` lists, and says where their options are */
    EXPECT_OUT("'seqstore convert KIND --help'");
    char kinds[16][16];
    int nkinds = 0;
    const char *k = strstr(g_out, "\nkinds:\n");
    CHECK(k != NULL);
    for (k += 8; k[0] == ' ' && k[1] == ' ' && nkinds < 16; k = strchr(k, '\n') + 1)
        sscanf(k, " %15s", kinds[nkinds++]);
    CHECK(nkinds == 10);
    EXPECT_RUN(0, "--help");
    const char *line = strstr(g_out, "\n  convert ");
    CHECK(line != NULL);
    char summary[512];
    snprintf(summary, sizeof summary, "%.*s", (int)strcspn(line + 1, "\n"), line + 1);
    for (int i = 0; i < nkinds; i++) {
        if (!strstr(summary, kinds[i]))
            printf("seqstore --help: convert's line lacks '%s'\n", kinds[i]);
        CHECK(strstr(summary, kinds[i]) != NULL);
    }
    EXPECT_RUN(0, "convert --help");
    char *want = strdup(g_out);
    EXPECT_RUN(0, "help convert");
    CHECK(strcmp(want, g_out) == 0);
    free(want);
    EXPECT_RUN(0, "convert text --help");
    want = strdup(g_out);
    EXPECT_RUN(0, "help convert text");
    CHECK(strcmp(want, g_out) == 0);
    free(want);
    EXPECT_RUN(0, "help attr");
    EXPECT_OUT("usage: seqstore attr");
    EXPECT_RUN(2, "help nosuch");

    const char *s = fortunes_store("conv.ss");
    EXPECT_RUN(0, "bench '%s' --queries 1", s);
    EXPECT_OUT("(1 read)");
    EXPECT_OUT("too few to measure");
    CHECK(!strstr(g_out, "x memcpy"));
    EXPECT_RUN(0, "bench --json '%s' --queries 5", s);
    CHECK(strncmp(g_out, "{\n  \"store\": ", 13) == 0);
    const char *py =
        "import json,sys\n"
        "d=json.load(sys.stdin)\n"
        "assert d['scan_gbps'] is None and d['random_reads']==5 and d['examples']==431\n";
    CHECK(python_on_output(py, NULL) == 0);
    EXPECT_RUN(0, "info --json '%s'", s);
    CHECK(strncmp(g_out, "{\n  \"path\": ", 12) == 0);
    EXPECT_RUN(0, "split add '%s' x 3", s);
    EXPECT_RUN(0, "split show '%s' x", s);
    EXPECT_OUT("1 of 431 examples in 1 range\n");
    /* convert's summary: "1 example, 1 element" */
    const char *one = put_file("one.txt", "x\n", 2);
    EXPECT_RUN(0, "convert lines '%s' -o '%s' --force", one, ss_test_path("one.ss"));
    EXPECT_ERR("seqstore convert: 1 example, 1 element,");
}

/* One rule for one mistake: a range outside the store is a usage error
 * (exit 2) in every command that takes one, as the man page says. */
static void test_range_exit_codes(void) {
    const char *s = fortunes_store("range-codes.ss");
    EXPECT_RUN(2, "cat '%s' --range 0:99999", s);
    EXPECT_ERR("0:99999");
    EXPECT_RUN(2, "split add '%s' x 0:999999", s);
    EXPECT_ERR("0:999999");
    EXPECT_RUN(2, "export '%s' --format jsonl -o - --range 0:99999", s);
    EXPECT_RUN(1, "split show '%s' x", s); /* nothing was stored */
    EXPECT_RUN(0, "help split");
    EXPECT_OUT("exit 2");
}

static int file_is(const char *path, const char *text) {
    size_t n;
    char *got = ss_test_read_file(path, &n);
    int same = got && n == strlen(text) && memcmp(got, text, n) == 0;
    free(got);
    return same;
}

/* No command replaces an output file without --force: exit 1, a message
 * naming the file, the file untouched; --force replaces it. */
/* All rows' tokens of the L = 32, seed 5, 2-epoch sample index of `path`;
 * *stored: whether the index came from a stored section. */
static int64_t *lm_rows(const char *path, uint64_t *n, int *stored) {
    ss_store *s;
    uint32_t f;
    CHECK_OK(ss_open(&s, path, 0));
    CHECK_OK(ss_field_index(&f, s, "tokens"));
    ss_lm_options o = SS_LM_OPTIONS_INIT;
    o.seq_length = 32, o.seed = 5, o.num_epochs = 2;
    ss_lm *lm;
    ss_lm_info info;
    CHECK_OK(ss_lm_create(&lm, s, f, &o));
    CHECK_OK(ss_lm_get_info(&info, lm));
    *n = info.num_samples, *stored = info.stored;
    int64_t *rows = malloc(*n * 32 * sizeof *rows);
    uint64_t *idx = malloc(*n * sizeof *idx);
    CHECK(rows && idx);
    for (uint64_t k = 0; k < *n; k++) idx[k] = k;
    ss_lm_batch b = {rows, NULL, NULL, NULL, NULL, NULL, NULL};
    CHECK_OK(ss_lm_get(&b, lm, idx, *n));
    free(idx);
    ss_lm_free(lm);
    ss_close(s);
    return rows;
}

/* `index --samples` stores the LM sample index that ss_lm_create() then
 * uses (the same rows as one built afresh); it never replaces one without
 * --force; bad options are usage errors. */
static void test_index_samples(void) {
    char p[800];
    snprintf(p, sizeof p, "%s", ss_test_path("lm-words.ss"));
    EXPECT_RUN(0, "convert text --quiet --force --doc-sep %% --tokens words --eos --max-vocab 3000 "
                  "%s -o '%s'", FORTUNES, p);
    uint64_t n0, n1;
    int stored0, stored1;
    int64_t *fresh = lm_rows(p, &n0, &stored0);
    CHECK(!stored0 && n0 > 100);
    EXPECT_RUN(0, "index '%s' --samples 32 --by tokens --seed 5 --epochs 2", p);
    EXPECT_OUT("ss.lm.tokens.L32.seed5.samples0.epochs2.append0");
    int64_t *back = lm_rows(p, &n1, &stored1);
    CHECK(stored1 && n1 == n0 && memcmp(fresh, back, n0 * 32 * sizeof *fresh) == 0);
    free(fresh);
    free(back);
    EXPECT_RUN(1, "index '%s' --samples 32 --by tokens --seed 5 --epochs 2", p);
    EXPECT_ERR("use --force");
    EXPECT_RUN(0, "index '%s' --samples 32 --by tokens --seed 5 --epochs 2 --force", p);
    EXPECT_RUN(2, "index '%s' --samples 1 --by tokens", p);
    EXPECT_ERR("--samples");
    EXPECT_RUN(2, "index '%s' --samples 8 --by tokens --epochs 2 --num-samples 3", p);
    EXPECT_RUN(2, "index '%s' --samples 8", p);
    EXPECT_RUN(2, "index '%s' --samples 8 --by tokens --append-eod", p);
    EXPECT_RUN(2, "index '%s' --samples 8 --by tokens --eod -3", p);
    EXPECT_RUN(1, "index '%s' --samples 8 --by nope", p);
    EXPECT_ERR("no field 'nope'");
}

static void test_no_overwrite(void) {
    const char *s = fortunes_store("keep.ss");
    const char *jl = put_file("keep.jsonl", "mine\n", 5);
    EXPECT_RUN(1, "export '%s' --format jsonl -o '%s'", s, jl);
    EXPECT_ERR("keep.jsonl exists");
    EXPECT_ERR("--force");
    CHECK(file_is(jl, "mine\n"));
    EXPECT_RUN(0, "export '%s' --format jsonl -o '%s' --force --range 0:1", s, jl);
    CHECK(!file_is(jl, "mine\n") && count_lines(g_out) == 0);
    EXPECT_RUN(0, "export '%s' --format jsonl -o - --range 0:1", s); /* stdout is no file */

    char dir[800], npy[900];
    snprintf(dir, sizeof dir, "%s", ss_test_path("keep-npy"));
    EXPECT_RUN(0, "export '%s' --format npy -o '%s' --range 0:3 --force", s, dir);
    snprintf(npy, sizeof npy, "%s/tokens/0000000001.npy", dir);
    FILE *f = fopen(npy, "w");
    CHECK(f && fputs("mine\n", f) >= 0 && fclose(f) == 0);
    EXPECT_RUN(1, "export '%s' --format npy -o '%s' --range 0:3", s, dir);
    EXPECT_ERR("keep-npy exists");
    CHECK(file_is(npy, "mine\n"));
    mkdir(ss_test_path("empty-npy"), 0777); /* an empty directory is no file to lose */
    EXPECT_RUN(0, "export '%s' --format npy -o '%s' --range 0:1", s, ss_test_path("empty-npy"));
    /* --force: the old export's files go, so OUT/FIELD/ holds this export only */
    EXPECT_RUN(0, "export '%s' --format npy -o '%s' --range 1:2 --force", s, dir);
    CHECK(!file_is(npy, "mine\n"));
    snprintf(npy, sizeof npy, "%s/tokens/0000000000.npy", dir);
    CHECK(access(npy, F_OK) != 0);

    const char *counts = put_file("keep.counts", "mine\n", 5);
    EXPECT_RUN(1, "convert text --quiet --tokens words %s --shard 0/2 --count-only -o '%s'",
               FORTUNES, counts);
    EXPECT_ERR("keep.counts' exists");
    CHECK(file_is(counts, "mine\n"));
    EXPECT_RUN(0, "convert text --quiet --tokens words %s --shard 0/2 --count-only -o '%s' --force",
               FORTUNES, counts);
    CHECK(!file_is(counts, "mine\n"));
}

/* With arguments, only the named tests run (e.g. `test_cli_commands range_limits`). */
int main(int argc, char **argv) {
    static const struct {
        const char *name;
        void (*run)(void);
    } tests[] = {{"numeric_options", test_numeric_options},
                 {"range_limits", test_range_limits},
                 {"non_utf8", test_non_utf8},
                 {"messages", test_messages},
                 {"cat_json", test_cat_json},
                 {"info_values", test_info_values},
                 {"attr", test_attr},
                 {"split_index", test_split_index},
                 {"histogram", test_histogram},
                 {"lock_files", test_lock_files},
                 {"conventions", test_conventions},
                 {"edf_annotations", test_edf_annotations},
                 {"verify_names", test_verify_names},
                 {"export", test_export},
                 {"no_overwrite", test_no_overwrite},
                 {"index_samples", test_index_samples},
                 {"range_exit_codes", test_range_exit_codes},
                 {"remove_attr_api", test_remove_attr_api},
                 {"damaged_attr", test_damaged_attr},
                 {"damaged_shard_attr", test_damaged_shard_attr},
                 {"damaged_source", test_damaged_source}};
    for (size_t k = 0; k < sizeof tests / sizeof tests[0]; k++) {
        int want = argc < 2;
        for (int i = 1; i < argc; i++) want |= strcmp(argv[i], tests[k].name) == 0;
        if (want) tests[k].run();
    }
    free(g_out);
    puts("test_cli_commands: ok");
    return 0;
}
