/* SPDX-License-Identifier: BSD-2-Clause */
/* events.c - events as labels (see events.h). */
#include "events.h"

#include "convert.h"

#include "seqstore/meta.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int add_name(ss_events *e, const char *s, size_t len) {
    if (e->nnames == e->capnames) {
        uint32_t cap = e->capnames ? 2 * e->capnames : 16;
        char **v = realloc(e->names, cap * sizeof *v);
        if (!v) return -1;
        e->names = v, e->capnames = cap;
    }
    if (!(e->names[e->nnames] = strndup(s, len))) return -1;
    e->nnames++;
    return 0;
}

static int parse_seconds(const char *v, double *out) {
    char *end = NULL;
    errno = 0;
    *out = strtod(v, &end);
    return errno || end == v || *end || !isfinite(*out) || fabs(*out) > 1e12;
}

/* --events-from annotations|status|channel:NAME */
static int from_option(ss_events *e, const char *val, char *err, size_t errlen) {
    const char *name = NULL;
    if (!strcmp(val, "annotations"))
        e->from = SS_EV_FROM_ANNOTATIONS;
    else if (!strcmp(val, "status"))
        e->from = SS_EV_FROM_STATUS, name = "Status";
    else if (!strncmp(val, "channel:", 8) && val[8])
        e->from = SS_EV_FROM_CHANNEL, name = val + 8;
    else
        return snprintf(err, errlen,
                        "--events-from takes annotations, status or channel:NAME, not '%s'", val),
               -1;
    free(e->from_channel);
    e->from_channel = NULL;
    if (name && !(e->from_channel = strdup(name)))
        return snprintf(err, errlen, "out of memory"), -1;
    return 1;
}

/* --trigger-mask M: a nonzero number of at most 32 bits (0x.. or decimal) */
static int mask_option(ss_events *e, const char *val, char *err, size_t errlen) {
    char *end = NULL;
    errno = 0;
    unsigned long long m = strtoull(val, &end, 0);
    if (errno || end == val || *end || *val == '-' || m == 0 || m > UINT32_MAX)
        return snprintf(err, errlen,
                        "--trigger-mask: '%s' is not a bit mask (a nonzero number of at most 32 "
                        "bits, such as 0xFFFF or 255)",
                        val),
               -1;
    e->mask = (uint32_t)m, e->have_mask = 1;
    return 1;
}

int ss__events_option(ss_events *e, const char *opt, const char *val, char *err, size_t errlen) {
    if (!strcmp(opt, "--events-from")) return from_option(e, val, err, errlen);
    if (!strcmp(opt, "--trigger-mask")) return mask_option(e, val, err, errlen);
    if (!strcmp(opt, "--events-as")) {
        if (!strcmp(val, "samples"))
            e->mode = SS_EV_SAMPLES;
        else if (!strcmp(val, "windows"))
            e->mode = SS_EV_WINDOWS;
        else
            return snprintf(err, errlen, "--events-as takes samples or windows, not '%s'", val), -1;
        return 1;
    }
    if (!strcmp(opt, "--window-start") || !strcmp(opt, "--window-stop")) {
        int start = opt[9] == 's' && opt[10] == 't' && opt[11] == 'a';
        if (parse_seconds(val, start ? &e->start : &e->stop))
            return snprintf(err, errlen, "%s: '%s' is not a number of seconds", opt, val), -1;
        *(start ? &e->have_start : &e->have_stop) = 1;
        return 1;
    }
    if (!strcmp(opt, "--events")) {
        for (const char *v = val; *v;) {
            const char *c = strchr(v, ',');
            size_t n = c ? (size_t)(c - v) : strlen(v);
            if (n == 0) return snprintf(err, errlen, "--events: empty event name"), -1;
            if (add_name(e, v, n)) return snprintf(err, errlen, "out of memory"), -1;
            v += n + (c ? 1 : 0);
        }
        if (!e->nnames) return snprintf(err, errlen, "--events: no event name"), -1;
        e->fixed = 1;
        return 1;
    }
    return 0;
}

int ss__events_check(ss_events *e, char *err, size_t errlen) {
    if (e->mode != SS_EV_WINDOWS && (e->have_start || e->have_stop))
        return snprintf(err, errlen, "--window-start/--window-stop need --events-as windows"), -1;
    if (e->mode == SS_EV_NONE && e->fixed)
        return snprintf(err, errlen, "--events needs --events-as samples or windows"), -1;
    if (e->mode == SS_EV_NONE && e->from != SS_EV_FROM_ANNOTATIONS)
        return snprintf(err, errlen, "--events-from needs --events-as samples or windows"), -1;
    if (e->have_mask && e->from == SS_EV_FROM_ANNOTATIONS)
        return snprintf(err, errlen, "--trigger-mask needs --events-from status or channel:NAME"),
               -1;
    /* BioSemi: the trigger code is the low 16 bits of the status word */
    if (!e->have_mask) e->mask = e->from == SS_EV_FROM_STATUS ? 0xFFFFu : UINT32_MAX;
    if (e->mode == SS_EV_WINDOWS && !(e->have_start && e->have_stop))
        return snprintf(err, errlen, "--events-as windows needs --window-start S --window-stop S"),
               -1;
    if (e->mode == SS_EV_WINDOWS && !(e->stop > e->start))
        return snprintf(err, errlen, "--window-stop (%g) must be after --window-start (%g)",
                        e->stop, e->start),
               -1;
    if (e->mode == SS_EV_SAMPLES) {
        /* class 0 is the background: "none" goes first */
        if (add_name(e, "none", 4)) return snprintf(err, errlen, "out of memory"), -1;
        char *none = e->names[e->nnames - 1];
        memmove(e->names + 1, e->names, (e->nnames - 1) * sizeof *e->names);
        e->names[0] = none;
    }
    return 0;
}

int ss__events_load(ss_events *e, const ss_store *st) {
    uint32_t fi;
    ss_lines *l = NULL;
    if (e->mode == SS_EV_NONE || e->fixed || ss_field_index(&fi, st, "label") ||
        ss_lines_open(&l, st, fi, "names"))
        return 0;
    for (uint32_t k = 0; k < e->nnames; k++) free(e->names[k]);
    e->nnames = 0;
    uint64_t count = ss_lines_count(l);
    size_t n;
    /* zero bytes in a store without examples are windows that found no
     * event: no class (spec/FORMAT.md 7.1), not one empty name */
    const char *s = NULL;
    if (count == 1 && !ss_lines_get(&s, &n, l, 0) && n == 0 && ss_count(st) == 0) count = 0;
    for (uint64_t k = 0; k < count; k++) {
        if (ss_lines_get(&s, &n, l, k) || add_name(e, s, n)) return ss_lines_free(l), -1;
    }
    ss_lines_free(l);
    return 0;
}

static int push_event(ss_events *e, ss_event ev) {
    if (e->nev == e->capev) {
        size_t cap = e->capev ? 2 * e->capev : 64;
        ss_event *v = realloc(e->ev, cap * sizeof *v);
        if (!v) return -1;
        e->ev = v, e->capev = cap;
    }
    e->ev[e->nev++] = ev;
    return 0;
}

/* Class of `text` (n bytes); UINT32_MAX = ignored; -1 on out of memory. */
static int class_of(ss_events *e, const char *text, size_t n, uint32_t *out) {
    for (uint32_t k = 0; k < e->nnames; k++)
        if (strlen(e->names[k]) == n && !memcmp(e->names[k], text, n)) return *out = k, 0;
    if (e->fixed) return *out = UINT32_MAX, 0;
    if (add_name(e, text, n)) return -1;
    *out = e->nnames - 1;
    return 0;
}

int ss__events_read(ss_events *e, const char *text, size_t len, double rate, uint64_t T, char *err,
                    size_t errlen) {
    const char *p = text, *end = text + len;
    uint64_t line = 0;
    e->nev = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p)), *le = nl ? nl : end;
        const char *t1 = memchr(p, '\t', (size_t)(le - p));
        const char *t2 = t1 ? memchr(t1 + 1, '\t', (size_t)(le - t1 - 1)) : NULL;
        char num[64];
        double on, dur = 0;
        line++;
        if (!t2 || t1 - p >= (long)sizeof num || t2 - t1 - 1 >= (long)sizeof num)
            return snprintf(err, errlen, "event %llu: not ONSET<tab>DURATION<tab>TEXT",
                            (unsigned long long)line),
                   -1;
        snprintf(num, sizeof num, "%.*s", (int)(t1 - p), p);
        int bad = parse_seconds(num, &on);
        snprintf(num, sizeof num, "%.*s", (int)(t2 - t1 - 1), t1 + 1);
        if (!bad && *num) bad = parse_seconds(num, &dur) || dur < 0;
        if (bad)
            return snprintf(err, errlen, "event %llu: bad onset or duration",
                            (unsigned long long)line),
                   -1;
        /* an event outside the recording is a broken event table (BioSig 2.5
         * gives BrainVision markers after 'New Segment' at 2^32-1), not a label */
        if (!(on >= 0 && on * rate <= (double)T))
            return snprintf(err, errlen,
                            "event %llu (%.*s) at %.7g s lies outside the recording (0 to %.7g s)",
                            (unsigned long long)line, (int)(le - t2 - 1 > 40 ? 40 : le - t2 - 1),
                            t2 + 1, on, (double)T / rate),
                   -1;
        uint32_t cls;
        if (class_of(e, t2 + 1, (size_t)(le - t2 - 1), &cls))
            return snprintf(err, errlen, "out of memory"), -1;
        p = nl ? nl + 1 : end;
        if (cls == UINT32_MAX) continue;
        long long n = llround(dur * rate);
        if (push_event(e, (ss_event){llround(on * rate), n < 1 ? 1 : (uint64_t)n, cls, line}))
            return snprintf(err, errlen, "out of memory"), -1;
    }
    return 0;
}

int ss__events_codes(ss_events *e, const int32_t *codes, uint64_t T, char *err, size_t errlen) {
    uint64_t number = 0;
    e->nev = 0;
    for (uint64_t t = 0; t < T;) {
        uint32_t v = (uint32_t)codes[t] & e->mask;
        uint64_t end = t + 1;
        while (end < T && ((uint32_t)codes[end] & e->mask) == v) end++;
        if (v) {
            char text[16];
            uint32_t cls;
            /* unmasked: the channel's value as it is, sign included */
            int n = e->mask == UINT32_MAX ? snprintf(text, sizeof text, "%d", (int32_t)v)
                                          : snprintf(text, sizeof text, "%u", v);
            if (class_of(e, text, (size_t)n, &cls))
                return snprintf(err, errlen, "out of memory"), -1;
            number++;
            if (cls != UINT32_MAX && push_event(e, (ss_event){(int64_t)t, end - t, cls, number}))
                return snprintf(err, errlen, "out of memory"), -1;
        }
        t = end;
    }
    return 0;
}

const uint32_t *ss__events_samples(ss_events *e, uint64_t T) {
    if (T > e->caplab || !e->lab) {
        uint32_t *v = realloc(e->lab, (T ? T : 1) * sizeof *v);
        if (!v) return NULL;
        e->lab = v, e->caplab = T ? T : 1;
    }
    memset(e->lab, 0, T * sizeof *e->lab);
    for (size_t k = 0; k < e->nev; k++) {
        int64_t a = e->ev[k].onset, b = a + (int64_t)e->ev[k].length;
        if (a < 0) a = 0;
        if (b > (int64_t)T) b = (int64_t)T;
        for (int64_t t = a; t < b; t++) e->lab[t] = e->ev[k].cls;
    }
    return e->lab;
}

uint64_t ss__events_window(const ss_events *e, double rate) {
    long long w = llround((e->stop - e->start) * rate);
    return w < 1 ? 1 : (uint64_t)w;
}

int64_t ss__events_window_start(const ss_events *e, size_t k, double rate) {
    return e->ev[k].onset + llround(e->start * rate);
}

char *ss__events_names(const ss_events *e, size_t *len) {
    size_t cap = 1;
    for (uint32_t k = 0; k < e->nnames; k++) cap += strlen(e->names[k]) + 1;
    char *t = malloc(cap);
    *len = 0;
    if (!t) return NULL;
    t[0] = '\0'; /* no classes: "" */
    for (uint32_t k = 0; k < e->nnames; k++)
        *len += (size_t)snprintf(t + *len, cap - *len, "%s%s", k ? "\n" : "", e->names[k]);
    return t;
}

void ss__events_free(ss_events *e) {
    for (uint32_t k = 0; k < e->nnames; k++) free(e->names[k]);
    free(e->names);
    free(e->from_channel);
    free(e->ev);
    free(e->lab);
    memset(e, 0, sizeof *e);
}

/* label.names, and how many windows were left out. */
int ss__events_finish(ss_conv *c, const ss_events *e) {
    size_t len;
    char *names = ss__events_names(e, &len);
    if (!names) return ss__conv_error(c, "out of memory");
    int rc = ss__conv_set_attr(c, "label.names", SS_ATTR_TEXT, names, len);
    free(names);
    if (e->outside && !ss__conv_opts(c)->quiet)
        fprintf(stderr,
                "seqstore convert: %llu event window%s not inside the recording, left out\n",
                (unsigned long long)e->outside, e->outside == 1 ? "" : "s");
    return rc;
}
