/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_events.c - libFuzzer target for the text the project parses in the
 * EEG converters: event tables as "ONSET\tDURATION\tTEXT" lines
 * (converters/events.c, `--events-as`) and `--meta` CSV files
 * (converters/recmeta.c).
 *
 * Byte 0 picks the mode (samples / windows), whether --events fixes the
 * classes, the rate and the recording length, and whether the rest is an
 * event table or a CSV. Checks: a refused table says why; an accepted one
 * has every class id below the class count, onsets inside the recording,
 * per-sample labels equal to a naive painting (last covering event wins,
 * else 0), and class names that are the texts met; a CSV either loads rows
 * that ss__recmeta_place() finds by path or is refused with a message.
 * Byte 0 = 0xfe: an event channel (--events-from status|channel:NAME,
 * --trigger-mask): a mask, then int32 digital values; events and per-sample
 * labels are checked against a naive scan (an event where the masked value
 * becomes a nonzero code other than the one before; each sample labelled
 * with its own masked code's class). */
#include "../converters/events.c"
#include "../converters/errmsg.c"
#include "../converters/recmeta.c"

#include <stdarg.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The framework calls events.c / recmeta.c make at the end of a run. */
static ss_conv_options g_opts = {0};
int ss__conv_error(ss_conv *c, const char *fmt, ...) {
    (void)c, (void)fmt;
    return 1;
}
int ss__conv_set_attr(ss_conv *c, const char *name, uint32_t type, const void *d, size_t n) {
    (void)c, (void)name, (void)type, (void)d, (void)n;
    return 0;
}
const ss_conv_options *ss__conv_opts(const ss_conv *c) {
    (void)c;
    return &g_opts;
}

static void fuzz_table(uint8_t mode, const char *text, size_t len) {
    ss_events e;
    char err[256] = "";
    memset(&e, 0, sizeof e);
    const double rates[4] = {1, 100, 250, 0.5};
    double rate = rates[mode >> 6];
    uint64_t T = (mode >> 3) & 7 ? ((mode >> 3) & 7) * 9 : 0;
    if (ss__events_option(&e, "--events-as", mode & 1 ? "windows" : "samples", err,
                          sizeof err) != 1)
        abort();
    if (mode & 1) {
        if (ss__events_option(&e, "--window-start", "-0.5", err, sizeof err) != 1 ||
            ss__events_option(&e, "--window-stop", "1", err, sizeof err) != 1)
            abort();
    }
    if ((mode & 2) && ss__events_option(&e, "--events", "a,b", err, sizeof err) != 1) abort();
    if (ss__events_check(&e, err, sizeof err)) abort();
    uint32_t fixed_names = e.nnames;
    if (ss__events_read(&e, text, len, rate, T, err, sizeof err)) {
        if (!err[0]) abort(); /* refused without a reason */
    } else {
        size_t lines = 0;
        for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
        for (size_t k = 0; k < e.nev; k++) {
            if (e.ev[k].cls >= e.nnames || e.ev[k].length < 1) abort();
            if (e.ev[k].number < 1 || e.ev[k].number > lines + 1) abort();
            if (e.ev[k].onset < 0 || (uint64_t)e.ev[k].onset > T + 1) abort();
        }
        if ((mode & 2) && e.nnames != fixed_names) abort(); /* fixed classes never grow */
        const uint32_t *lab = ss__events_samples(&e, T);
        if (!lab) abort();
        for (uint64_t t = 0; t < T; t++) {
            uint32_t want = 0;
            for (size_t k = e.nev; k-- > 0;)
                if ((int64_t)t >= e.ev[k].onset &&
                    (int64_t)t < e.ev[k].onset + (int64_t)e.ev[k].length) {
                    want = e.ev[k].cls;
                    break;
                }
            if (lab[t] != want) abort();
        }
        if (mode & 1)
            for (size_t k = 0; k < e.nev; k++)
                if (ss__events_window_start(&e, k, rate) != e.ev[k].onset + llround(-0.5 * rate))
                    abort();
        size_t nl;
        char *names = ss__events_names(&e, &nl);
        if (!names || strlen(names) != nl) abort();
        free(names);
    }
    ss__events_free(&e);
}

static void fuzz_csv(const uint8_t *data, size_t size) {
    int fd = memfd_create("meta.csv", 0);
    if (fd < 0) return;
    if (write(fd, data, size) != (ssize_t)size) abort();
    char path[64], err[512] = "";
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    ss_recmeta m;
    memset(&m, 0, sizeof m);
    if (ss__recmeta_option(&m, "--meta", path) != 1 || !m.on) abort();
    if (ss__recmeta_load_csv(&m, err, sizeof err)) {
        if (!err[0]) abort();
    } else {
        if (m.nrows == 0) abort();
        for (uint32_t i = 0; i < m.nrows; i++) {
            const char *p = m.rows[(size_t)i * 4];
            if (ss__recmeta_place(&m, p, "hs", "hd", err, sizeof err)) abort(); /* its own row */
            for (int j = 0; j < 3; j++)
                if (m.ids[j] >= m.names[j].n) abort();
        }
    }
    ss__recmeta_free(&m);
    close(fd);
}

/* The class named `text` (abort when missing). */
static uint32_t class_named(const ss_events *e, const char *text) {
    for (uint32_t k = 0; k < e->nnames; k++)
        if (!strcmp(e->names[k], text)) return k;
    abort();
}

static void fuzz_codes(const uint8_t *data, size_t size) {
    ss_events e;
    char err[256] = "", opt[32];
    uint32_t mask = 0;
    memset(&e, 0, sizeof e);
    if (size < 4) return;
    memcpy(&mask, data, 4);
    size_t T = (size - 4) / 4;
    int32_t *codes = malloc((T ? T : 1) * sizeof *codes);
    if (!codes) return;
    memcpy(codes, data + 4, T * 4);
    if (ss__events_option(&e, "--events-as", "samples", err, sizeof err) != 1 ||
        ss__events_option(&e, "--events-from", mask & 1 ? "status" : "channel:X", err,
                          sizeof err) !=
            1)
        abort();
    snprintf(opt, sizeof opt, "0x%x", mask);
    if (mask & 2 && ss__events_option(&e, "--trigger-mask", opt, err, sizeof err) != 1) abort();
    if (ss__events_check(&e, err, sizeof err) || ss__events_codes(&e, codes, T, err, sizeof err))
        abort();
    uint32_t m = e.mask, prev = 0;
    size_t k = 0;
    const uint32_t *lab = ss__events_samples(&e, T);
    if (!lab) abort();
    for (size_t t = 0; t < T; t++) {
        uint32_t v = (uint32_t)codes[t] & m;
        char text[16];
        if (m == UINT32_MAX)
            snprintf(text, sizeof text, "%d", (int32_t)v);
        else
            snprintf(text, sizeof text, "%u", v);
        if (v && v != prev) { /* an event here: the next of e.ev */
            if (k >= e.nev || e.ev[k].onset != (int64_t)t || e.ev[k].number != k + 1 ||
                e.ev[k].cls != class_named(&e, text))
                abort();
            k++;
        }
        if (lab[t] != (v ? class_named(&e, text) : 0)) abort();
        prev = v;
    }
    if (k != e.nev) abort();
    ss__events_free(&e);
    free(codes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    if (data[0] == 0xfe) {
        fuzz_codes(data + 1, size - 1);
        return 0;
    }
    if (data[0] == 0xff) {
        fuzz_csv(data + 1, size - 1);
        return 0;
    }
    char *text = malloc(size);
    if (!text) return 0;
    memcpy(text, data + 1, size - 1);
    fuzz_table(data[0], text, size - 1);
    free(text);
    return 0;
}
