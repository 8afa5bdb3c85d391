/* SPDX-License-Identifier: BSD-2-Clause */
/* convert_edf.c - `seqstore convert edf`: EEG recordings (EDF, EDF+, BDF, BDF+)
 * through EDFlib, one example per recording.
 *
 * Fields (in this order):
 *   signal       sequence [T][C], time-major: the digital samples as stored
 *                (i16 for EDF, i32 for BDF), or f32 physical values with
 *                --physical f32
 *   annotations  sequence of u8: the recording's EDF+ annotations as text, one
 *                per line "ONSET\tDURATION\tTEXT\n"; ONSET in seconds from the
 *                start of the recording and DURATION in seconds, both with 7
 *                decimals (DURATION "" when absent); tabs/newlines in TEXT
 *                become spaces
 *   start_time   fixed i64: start date and time from the header in units of
 *                100 ns since 1970-01-01 00:00:00 (no time zone: EDF has none)
 *   duration     fixed i64: recording duration in units of 100 ns
 *   label        fixed u32 (only with --labels): index into `label.names`
 * plus the framework's `source` (the file number into source.files).
 * Attributes:
 *   signal.labels       TEXT, channel labels (trimmed), one per line
 *   signal.units        TEXT, physical dimensions, one per line
 *   signal.sample_rate  f64[1], Hz
 *   signal.gain         f64[C] (digital mode) bits -> units:
 *   signal.offset       f64[C]  physical = digital * gain + offset
 *   signal.edf_offset   f64[C]  EDFlib's own form, bit-exact with
 *                       edfread_physical_samples: physical = gain * (edf_offset + digital)
 *   signal.physical     TEXT "digital" or "f32"
 *   label.names         TEXT, one label per line (with --labels)
 * With --events-as samples the `label` field is instead a sequence u32 [T]
 * (each sample's annotation class, 0 = none); with --events-as windows every
 * annotation becomes one example (fields signal [W][C], label u32, onset i64)
 * (events.h); label.names holds the classes either way.
 * With --events-from status|channel:NAME the events are the trigger codes of
 * an event channel (events.h); that channel is left out of `signal` unless
 * --channels names it (its values are codes, not a signal: with the default
 * channel set every ordinary signal but the event channel is stored).
 * With --meta header|FILE.csv fixed u32 fields subject, session, recording
 * follow (recmeta.h; from the header: the EDF+ patient code or EDF patient
 * field, the start date, the file name), for grouped folds.
 * Every file must match the first one (or the store being appended to) in
 * selected channel labels, sample rate, file type (EDF vs BDF) and, for
 * digital values, per-channel calibration; otherwise it is bad input.
 * EDFlib reads each file: header, samples and annotations (never a parser
 * of our own). Files are decoded in parallel (--threads N >= 2: in N
 * forked single-threaded processes, threads only if none can start) and
 * appended in input order by the calling process (ordered.h), so the store
 * never depends on the thread count. */
#include "convert.h"
#include "sig_args.h"
#include "strlist.h"
#include "ordered.h"
#include "events.h"
#include "recmeta.h"

#include <edflib.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define EDF_CHUNK 4096 /* samples per channel read at once */
#define EDF_ERR 1024

/* EDFlib keeps its open files in a global table: open and close are
 * serialized across the decoding threads */
static pthread_mutex_t edflib_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct edf_ref {
    int have;
    uint32_t nch;
    int bdf;
    double rate;
    char (*labels)[17];
    char (*units)[9];
    double *gain, *offset, *edf_offset;
} edf_ref;

typedef struct edf_job {
    char **channels; /* --channels, trimmed; NULL = every ordinary signal */
    uint32_t nchannels;
    int physical;     /* --physical f32 */
    char **lab_paths; /* --labels rows */
    uint32_t *lab_index;
    uint32_t nlab;
    ss_events ev;    /* --events-as (events.h) */
    ss_recmeta meta; /* --meta (recmeta.h) */
    edf_ref ref;
} edf_job;

/* One decoded recording; each thread owns one and reuses its buffers. */
typedef struct edf_slot {
    struct edf_hdr_struct *hdr;
    int sig[EDFLIB_MAXSIGNALS];
    uint32_t nch;
    int bad;
    char err[EDF_ERR];
    uint64_t T;
    int evsig;      /* --events-from status|channel: its EDFlib signal, else -1 */
    int32_t *codes; /* its T digital values */
    size_t codes_cap;
    void *data;
    size_t data_cap;
    void *tmp; /* EDF_CHUNK samples per channel, int or double */
    size_t tmp_cap;
    char *annot;
    size_t annot_len, annot_cap;
    int64_t start_time, duration;
    uint32_t label;
    char subject[81], session[16]; /* for --meta header */
    /* decoder processes (run_processes): the slot, `hdr` and every buffer
     * above live in shared memory, the buffers in this arena */
    ss_conv_arena arena; /* base NULL: buffers from realloc() */
    int arena_full;      /* the recording did not fit: decode it in the parent */
} edf_slot;

static void usage_edf(FILE *out) {
    fprintf(out,
            "usage: seqstore convert edf FILE.edf|FILE.bdf... -o STORE [options]\n"
            "  one example per recording: field `signal` [T][C] time-major\n"
            "  --channels A,B,...  channels by label (case-insensitive; 'Fp1' also finds\n"
            "                      an EDF+ 'EEG Fp1' when only one such label); default: every\n"
            "                      ordinary signal. All must share one sample rate.\n"
            "  --physical f32      store float32 physical values instead of the digital\n"
            "                      samples (i16 for EDF, i32 for BDF) plus gain/offset\n"
            "  --labels FILE.csv   `path,label` rows: a `label` field per recording\n"
            "                      (path matched exactly, else by file name)\n"
            "  --events-as samples a sequence field `label` [T]: each sample's EDF+\n"
            "                      annotation class (0 = none), names in label.names\n"
            "  --events-as windows --window-start S --window-stop S\n"
            "                      one example per annotation: signal from S before/after\n"
            "                      its onset (seconds, negative = before), `label`, `onset`\n"
            "  --events A,B,...    only these annotation texts, classes in this order\n"
            "  --events-from annotations|status|channel:NAME\n"
            "                      where events come from: EDF+/BDF+ annotations (default),\n"
            "                      the BDF 'Status' channel, or the channel NAME; an event is\n"
            "                      a change of its (masked) value to a nonzero code, the\n"
            "                      label the code as text ('65'). The channel is left out of\n"
            "                      `signal` unless --channels names it.\n"
            "  --trigger-mask M    bits of the event channel that hold the code (default\n"
            "                      0xFFFF for status: BioSemi's 16 trigger bits; else all)\n"
            "  --meta header|FILE.csv  fixed fields subject, session, recording (ids into\n"
            "                      *.names) from the header (patient code, start date, file\n"
            "                      name) or from `path,subject,session,recording` rows\n"
            "  --list FILE         read input paths from FILE, one per line\n");
}

/* ------------------------------------------------------------- strings */

static char *trim(char *s) {
    char *e;
    while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n') s++;
    e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n')) e--;
    *e = '\0';
    return s;
}

/* Trimmed copy of an EDF header string into dst[cap]. */
static void copy_trimmed(char *dst, size_t cap, const char *src) {
    char buf[128];
    snprintf(buf, sizeof buf, "%s", src);
    snprintf(dst, cap, "%s", trim(buf));
}

static int label_eq(const char *a, const char *b) {
    char x[128], y[128];
    snprintf(x, sizeof x, "%s", a);
    snprintf(y, sizeof y, "%s", b);
    return strcasecmp(trim(x), trim(y)) == 0;
}

/* An EDF+ label is "TYPE NAME" ("EEG Fp1", EDF+ spec 2.1.3.1): the name alone. */
static int label_name_eq(const char *label, const char *name) {
    char x[128];
    snprintf(x, sizeof x, "%s", label);
    const char *sp = strchr(trim(x), ' ');
    return sp && label_eq(sp + 1, name);
}

/* The signal labelled `name`: an exact (case-insensitive) label first, else
 * the one signal whose label is "TYPE name". -1: none; -2: several. */
static int find_channel(const struct edf_hdr_struct *h, const char *name) {
    for (int j = 0; j < h->edfsignals; j++)
        if (label_eq(h->signalparam[j].label, name)) return j;
    int found = -1;
    for (int j = 0; j < h->edfsignals; j++)
        if (label_name_eq(h->signalparam[j].label, name)) found = found == -1 ? j : -2;
    return found;
}

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static void append_err(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void append_err(char *err, const char *fmt, ...) {
    size_t n = strlen(err);
    va_list ap;
    if (n + 1 >= EDF_ERR) return;
    va_start(ap, fmt);
    vsnprintf(err + n, EDF_ERR - n, fmt, ap);
    va_end(ap);
}

static int slot_fail(edf_slot *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int slot_fail(edf_slot *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err, sizeof s->err, fmt, ap);
    va_end(ap);
    s->bad = 1;
    return 1;
}

static const char *edflib_error(int code) {
    switch (code) {
    case EDFLIB_MALLOC_ERROR:
        return "out of memory";
    case EDFLIB_NO_SUCH_FILE_OR_DIRECTORY:
        return "no such file or directory";
    case EDFLIB_FILE_CONTAINS_FORMAT_ERRORS:
        return "not a valid EDF/BDF file (a header field is malformed, or the file size "
               "does not match the header's record count)";
    case EDFLIB_MAXFILES_REACHED:
        return "too many open files";
    case EDFLIB_FILE_READ_ERROR:
        return "read error";
    case EDFLIB_FILE_ALREADY_OPENED:
        return "file is already open";
    case EDFLIB_FILETYPE_ERROR:
        return "unknown file type";
    case EDFLIB_NUMBER_OF_SIGNALS_INVALID:
        return "invalid number of signals";
    case EDFLIB_FILE_IS_DISCONTINUOUS:
        return "discontinuous EDF+D/BDF+D files are not supported";
    case EDFLIB_INVALID_READ_ANNOTS_VALUE:
        return "invalid annotation mode";
    default:
        return "unknown EDFlib error";
    }
}

/* ------------------------------------------------------------ recording */

static double sig_rate(const struct edf_hdr_struct *h, int sig) {
    return h->datarecord_duration > 0
               ? (double)h->signalparam[sig].smp_in_datarecord * (double)EDFLIB_TIME_DIMENSION /
                     (double)h->datarecord_duration
               : 0.0;
}

/* EDFlib's calibration of one signal (as in edflib.c: bitvalue, offset). */
static void sig_calibration(const struct edf_hdr_struct *h, int sig, double *gain,
                            double *edf_offset) {
    const struct edf_param_struct *p = &h->signalparam[sig];
    *gain = (p->phys_max - p->phys_min) / (double)(p->dig_max - p->dig_min);
    *edf_offset = p->phys_max / *gain - (double)p->dig_max;
}

/* List the file's channels after a message in s->err. */
static void list_channels(edf_slot *s) {
    for (int j = 0; j < s->hdr->edfsignals; j++) {
        char l[17];
        copy_trimmed(l, sizeof l, s->hdr->signalparam[j].label);
        append_err(s->err, "%s %s", j ? "," : "", l);
    }
}

/* --events-from status|channel:NAME: the event channel into s->evsig (-1
 * for annotations); 1 when the file has none. */
static int find_event_channel(const edf_job *job, edf_slot *s) {
    const struct edf_hdr_struct *h = s->hdr;
    int bdf = h->filetype == EDFLIB_FILETYPE_BDF || h->filetype == EDFLIB_FILETYPE_BDFPLUS;
    s->evsig = -1;
    if (job->ev.from == SS_EV_FROM_ANNOTATIONS) return 0;
    if (job->ev.from == SS_EV_FROM_STATUS && !bdf)
        return slot_fail(s, "--events-from status reads a BDF 'Status' channel and this is an "
                            "EDF file; name its trigger channel with --events-from channel:NAME");
    /* status: the exact label only ("Status", any case), as BioSemi writes it */
    int k = find_channel(h, job->ev.from_channel);
    if (job->ev.from == SS_EV_FROM_STATUS && k >= 0 && !label_eq(h->signalparam[k].label, "Status"))
        k = -1;
    if (k < 0) {
        slot_fail(s, "no channel '%s' for --events-from%s; the file has:", job->ev.from_channel,
                  k == -2 ? " (several 'TYPE NAME' labels match: give the whole label)" : "");
        list_channels(s);
        return 1;
    }
    s->evsig = k;
    return 0;
}

/* Pick the channels of an open file into s->sig / s->nch; 1 when bad. */
static int select_channels(const edf_job *job, edf_slot *s) {
    const struct edf_hdr_struct *h = s->hdr;
    if (find_event_channel(job, s)) return 1;
    if (!job->channels) {
        if (h->edfsignals <= 0) return slot_fail(s, "no ordinary (non-annotation) signals");
        s->nch = 0;
        for (int k = 0; k < h->edfsignals; k++)
            if (k != s->evsig) s->sig[s->nch++] = k;
        if (s->nch == 0)
            return slot_fail(s, "no signal besides the event channel '%s'", job->ev.from_channel);
    } else {
        s->nch = job->nchannels;
        for (uint32_t k = 0; k < job->nchannels; k++) {
            int found = find_channel(h, job->channels[k]);
            if (found < 0) {
                if (found == -1)
                    slot_fail(s, "no channel '%s'; the file has:", job->channels[k]);
                else
                    slot_fail(s,
                              "channel '%s' is ambiguous (several 'TYPE %s' labels: give the "
                              "whole label); the file has:",
                              job->channels[k], job->channels[k]);
                list_channels(s);
                return 1;
            }
            s->sig[k] = found;
        }
    }
    for (uint32_t k = 1; k < s->nch; k++) {
        if (h->signalparam[s->sig[k]].smp_in_datarecord ==
            h->signalparam[s->sig[0]].smp_in_datarecord)
            continue;
        slot_fail(s, "the selected channels have different sample rates (no resampling):");
        for (uint32_t j = 0; j < s->nch; j++) {
            char l[17];
            copy_trimmed(l, sizeof l, h->signalparam[s->sig[j]].label);
            append_err(s->err, "%s %s %g Hz", j ? "," : "", l, sig_rate(h, s->sig[j]));
        }
        return 1;
    }
    if (s->evsig >= 0 &&
        h->signalparam[s->evsig].smp_in_datarecord != h->signalparam[s->sig[0]].smp_in_datarecord)
        return slot_fail(s, "event channel '%s' has %g Hz, the signal %g Hz (no resampling)",
                         job->ev.from_channel, sig_rate(h, s->evsig), sig_rate(h, s->sig[0]));
    return 0;
}

/* Check an open file against the reference; 1 when bad. */
static int check_ref(const edf_job *job, edf_slot *s) {
    const edf_ref *r = &job->ref;
    const struct edf_hdr_struct *h = s->hdr;
    int bdf = h->filetype == EDFLIB_FILETYPE_BDF || h->filetype == EDFLIB_FILETYPE_BDFPLUS;
    double rate = sig_rate(h, s->sig[0]);
    if (!r->have) return 0;
    if (s->nch != r->nch)
        return slot_fail(s, "%u channels selected, the store has %u", s->nch, r->nch);
    for (uint32_t k = 0; k < s->nch; k++)
        if (!label_eq(h->signalparam[s->sig[k]].label, r->labels[k]))
            return slot_fail(s, "channel %u is '%s', the store has '%s'", k + 1,
                             h->signalparam[s->sig[k]].label, r->labels[k]);
    if (rate != r->rate)
        return slot_fail(s, "sample rate %g Hz differs from the store's %g Hz", rate, r->rate);
    if (!job->physical && bdf != r->bdf)
        return slot_fail(s, "a %s file cannot join a store of %s digital samples",
                         bdf ? "BDF (24-bit)" : "EDF (16-bit)", r->bdf ? "BDF" : "EDF");
    if (!job->physical) {
        for (uint32_t k = 0; k < s->nch; k++) {
            double g, o;
            sig_calibration(h, s->sig[k], &g, &o);
            if (g != r->gain[k] || o != r->edf_offset[k])
                return slot_fail(s,
                                 "channel '%s': calibration (gain %.17g, offset %.17g) differs "
                                 "from the store's (gain %.17g, offset %.17g); use --physical f32",
                                 r->labels[k], g, g * o, r->gain[k], r->offset[k]);
        }
    }
    return 0;
}

/* Grow one of the slot's buffers (from its arena when it has one). */
static int slot_grow(edf_slot *s, void **buf, size_t *cap, size_t need) {
    if (need <= *cap) return 0;
    void *nb =
        s->arena.base ? ss__conv_arena_grow(&s->arena, *buf, *cap, need) : realloc(*buf, need);
    if (!nb) return s->arena_full = s->arena.base != NULL, 1;
    *buf = nb, *cap = need;
    return 0;
}

/* Annotations as "ONSET\tDURATION\tTEXT\n" lines. */
static int read_annotations(edf_slot *s) {
    const struct edf_hdr_struct *h = s->hdr;
    struct edf_annotation_struct a;
    s->annot_len = 0;
    for (long long i = 0; i < h->annotations_in_file; i++) {
        char line[EDFLIB_MAX_ANNOTATION_LEN + 128];
        long long on;
        if (edf_get_annotation(h->handle, (int)i, &a) != 0)
            return slot_fail(s, "cannot read annotation %lld", i + 1);
        char dur[48] = "";
        on = llabs(a.onset);
        for (char *p = a.annotation; *p; p++)
            if (*p == '\t' || *p == '\n' || *p == '\r') *p = ' ';
        if (a.duration_l >= 0)
            snprintf(dur, sizeof dur, "%lld.%07lld", a.duration_l / EDFLIB_TIME_DIMENSION,
                     a.duration_l % EDFLIB_TIME_DIMENSION);
        int n = snprintf(line, sizeof line, "%s%lld.%07lld\t%s\t%s\n", a.onset < 0 ? "-" : "",
                         on / EDFLIB_TIME_DIMENSION, on % EDFLIB_TIME_DIMENSION, dur, a.annotation);
        if (n < 0) continue;
        if ((size_t)n >= sizeof line) n = (int)sizeof line - 1;
        if (slot_grow(s, (void **)&s->annot, &s->annot_cap, s->annot_len + (size_t)n))
            return slot_fail(s, "out of memory for annotations");
        memcpy(s->annot + s->annot_len, line, (size_t)n);
        s->annot_len += (size_t)n;
    }
    return 0;
}

/* Samples per channel per EDFlib read: whole data records, as many as fit
 * in stdio's 4 KiB buffer, so that the reads of one record's channels in
 * turn stay in the buffer (EDFlib seeks to each). Reading 4096 samples of
 * each channel in turn cost a read() of 4 KiB per channel and record,
 * 10x the file (measured: 194k read() for 12 files of 76 MB, 0.2 s of
 * system time). */
static int samples_per_read(const struct edf_hdr_struct *h, int sig, int bdf) {
    long long spr = h->signalparam[sig].smp_in_datarecord, rec = 0, m;
    if (spr <= 0 || spr >= EDF_CHUNK) return EDF_CHUNK;
    for (int j = 0; j < h->edfsignals; j++) rec += h->signalparam[j].smp_in_datarecord;
    rec *= bdf ? 3 : 2; /* bytes of the ordinary signals in a record */
    m = rec > 0 && rec < 4096 ? 4096 / rec : 1;
    if (m > EDF_CHUNK / spr) m = EDF_CHUNK / spr;
    return (int)(m * spr);
}

/* Read every sample of the selected channels, time-major, into s->data. */
static int read_samples(const edf_job *job, edf_slot *s) {
    const struct edf_hdr_struct *h = s->hdr;
    int bdf = h->filetype == EDFLIB_FILETYPE_BDF || h->filetype == EDFLIB_FILETYPE_BDFPLUS;
    size_t esz = job->physical ? 4 : bdf ? 4 : 2, C = s->nch;
    s->T = (uint64_t)h->signalparam[s->sig[0]].smp_in_file;
    if (s->T > SIZE_MAX / C / esz) return slot_fail(s, "recording too large");
    if (slot_grow(s, &s->data, &s->data_cap, (size_t)s->T * C * esz + 1) ||
        slot_grow(s, &s->tmp, &s->tmp_cap, C * EDF_CHUNK * sizeof(double)))
        return slot_fail(s, "out of memory for %llu samples", (unsigned long long)s->T * C);
    int step = samples_per_read(h, s->sig[0], bdf);
    for (uint64_t t0 = 0; t0 < s->T; t0 += (uint64_t)step) {
        int n = (int)(s->T - t0 < (uint64_t)step ? s->T - t0 : (uint64_t)step);
        for (size_t k = 0; k < C; k++) {
            /* --channels may name a signal twice: each read starts at t0 */
            if (edfseek(h->handle, s->sig[k], (long long)t0, EDFSEEK_SET) != (long long)t0)
                return slot_fail(s, "channel '%s': cannot seek to sample %llu",
                                 h->signalparam[s->sig[k]].label, (unsigned long long)t0);
            int got = job->physical ? edfread_physical_samples(h->handle, s->sig[k], n,
                                                               (double *)s->tmp + k * EDF_CHUNK)
                                    : edfread_digital_samples(h->handle, s->sig[k], n,
                                                              (int *)s->tmp + k * EDF_CHUNK);
            if (got != n) {
                long long spr = h->signalparam[s->sig[k]].smp_in_datarecord;
                uint64_t at = t0 + (got > 0 ? (uint64_t)got : 0);
                return slot_fail(s, "channel '%s': read failed at sample %llu (data record %llu)",
                                 h->signalparam[s->sig[k]].label, (unsigned long long)at,
                                 spr > 0 ? (unsigned long long)at / (unsigned long long)spr + 1
                                         : 0ULL);
            }
        }
        /* transpose [C][n] -> [n][C] */
        if (job->physical) {
            float *o = (float *)s->data + t0 * C;
            const double *in = s->tmp;
            for (int t = 0; t < n; t++)
                for (size_t k = 0; k < C; k++) o[(size_t)t * C + k] = (float)in[k * EDF_CHUNK + t];
        } else if (bdf) {
            int32_t *o = (int32_t *)s->data + t0 * C;
            const int *in = s->tmp;
            for (int t = 0; t < n; t++)
                for (size_t k = 0; k < C; k++) o[(size_t)t * C + k] = in[k * EDF_CHUNK + t];
        } else {
            int16_t *o = (int16_t *)s->data + t0 * C;
            const int *in = s->tmp;
            for (int t = 0; t < n; t++)
                for (size_t k = 0; k < C; k++)
                    o[(size_t)t * C + k] = (int16_t)in[k * EDF_CHUNK + t];
        }
    }
    return 0;
}

/* The event channel's digital values into s->codes (T of them). */
static int read_codes(edf_slot *s) {
    char l[17];
    if (s->evsig < 0) return 0;
    copy_trimmed(l, sizeof l, s->hdr->signalparam[s->evsig].label);
    if (slot_grow(s, (void **)&s->codes, &s->codes_cap,
                  (size_t)(s->T ? s->T : 1) * sizeof *s->codes))
        return slot_fail(s, "out of memory for the event channel");
    /* --channels may have named it too: read_samples() has read it already */
    if (edfseek(s->hdr->handle, s->evsig, 0, EDFSEEK_SET) != 0)
        return slot_fail(s, "event channel '%s': cannot seek to its start", l);
    for (uint64_t t0 = 0; t0 < s->T; t0 += EDF_CHUNK) {
        int n = (int)(s->T - t0 < EDF_CHUNK ? s->T - t0 : EDF_CHUNK);
        if (edfread_digital_samples(s->hdr->handle, s->evsig, n, (int *)s->codes + t0) != n)
            return slot_fail(s, "event channel '%s': read failed at sample %llu", l,
                             (unsigned long long)t0);
    }
    return 0;
}

static int64_t start_time_of(const struct edf_hdr_struct *h) {
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    tm.tm_year = h->startdate_year - 1900;
    tm.tm_mon = h->startdate_month - 1;
    tm.tm_mday = h->startdate_day;
    tm.tm_hour = h->starttime_hour;
    tm.tm_min = h->starttime_minute;
    tm.tm_sec = h->starttime_second;
    return (int64_t)timegm(&tm) * EDFLIB_TIME_DIMENSION + h->starttime_subsecond;
}

static int find_label(const edf_job *job, const char *path, uint32_t *out) {
    for (uint32_t i = 0; i < job->nlab; i++)
        if (!strcmp(job->lab_paths[i], path)) return *out = job->lab_index[i], 0;
    for (uint32_t i = 0; i < job->nlab; i++)
        if (!strcmp(base_name(job->lab_paths[i]), base_name(path)))
            return *out = job->lab_index[i], 0;
    return 1;
}

static int edf_open(edf_slot *s, const char *path) {
    int rc;
    for (;;) {
        pthread_mutex_lock(&edflib_lock);
        rc = edfopen_file_readonly(path, s->hdr, EDFLIB_READ_ALL_ANNOTATIONS);
        pthread_mutex_unlock(&edflib_lock);
        /* the same path listed twice may be open in another thread for a moment */
        if (rc == 0 || s->hdr->filetype != EDFLIB_FILE_ALREADY_OPENED) break;
        usleep(1000);
    }
    if (rc != 0) {
        uint64_t size = ss__conv_file_size(path);
        return slot_fail(s, "EDFlib: %s (file is %llu bytes)", edflib_error(s->hdr->filetype),
                         (unsigned long long)size);
    }
    return 0;
}

static void edf_close(edf_slot *s) {
    pthread_mutex_lock(&edflib_lock);
    edfclose_file(s->hdr->handle);
    pthread_mutex_unlock(&edflib_lock);
}

/* Decode one recording into `s` (header only when `header_only`). */
static void edf_decode(const edf_job *job, const char *path, edf_slot *s, int header_only) {
    if (s->arena.base) { /* a fresh arena: nothing of the last input is kept */
        ss__conv_arena_reset(&s->arena);
        s->data = s->tmp = s->annot = NULL;
        s->codes = NULL;
        s->data_cap = s->tmp_cap = s->annot_cap = s->codes_cap = 0;
        s->arena_full = 0;
    }
    s->bad = 0;
    s->err[0] = '\0';
    s->T = 0;
    s->annot_len = 0;
    if (job->nlab && find_label(job, path, &s->label)) {
        slot_fail(s, "no row for this file in the --labels file");
        return;
    }
    if (edf_open(s, path)) return;
    if (select_channels(job, s) == 0 && check_ref(job, s) == 0 && !header_only) {
        const struct edf_hdr_struct *h = s->hdr;
        copy_trimmed(s->subject, sizeof s->subject,
                     h->patientcode[0] ? h->patientcode : h->patient);
        snprintf(s->session, sizeof s->session, "%04d-%02d-%02d", h->startdate_year % 10000,
                 h->startdate_month % 100, h->startdate_day % 100);
        s->start_time = start_time_of(s->hdr);
        s->duration = s->hdr->file_duration;
        if (read_annotations(s) == 0 && read_samples(job, s) == 0) read_codes(s);
    }
    edf_close(s);
}

/* ------------------------------------------------------------ reference */

static int ref_alloc(edf_ref *r, uint32_t nch) {
    r->nch = nch;
    r->labels = calloc(nch, sizeof *r->labels);
    r->units = calloc(nch, sizeof *r->units);
    r->gain = calloc(nch, sizeof(double));
    r->offset = calloc(nch, sizeof(double));
    r->edf_offset = calloc(nch, sizeof(double));
    return !r->labels || !r->units || !r->gain || !r->offset || !r->edf_offset;
}

static void ref_free(edf_ref *r) {
    free(r->labels);
    free(r->units);
    free(r->gain);
    free(r->offset);
    free(r->edf_offset);
    memset(r, 0, sizeof *r);
}

/* The reference from the first good file's header (s opened and checked). */
static int ref_from_file(edf_ref *r, const edf_slot *s) {
    const struct edf_hdr_struct *h = s->hdr;
    if (ref_alloc(r, s->nch)) return 1;
    r->bdf = h->filetype == EDFLIB_FILETYPE_BDF || h->filetype == EDFLIB_FILETYPE_BDFPLUS;
    r->rate = sig_rate(h, s->sig[0]);
    for (uint32_t k = 0; k < s->nch; k++) {
        copy_trimmed(r->labels[k], sizeof r->labels[k], h->signalparam[s->sig[k]].label);
        copy_trimmed(r->units[k], sizeof r->units[k], h->signalparam[s->sig[k]].physdimension);
        sig_calibration(h, s->sig[k], &r->gain[k], &r->edf_offset[k]);
        r->offset[k] = r->gain[k] * r->edf_offset[k];
    }
    r->have = 1;
    return 0;
}

/* Split TEXT attribute `name` of `st` into at most `max` lines of dst[k][cap]. */
static uint32_t attr_lines(const ss_store *st, const char *name, char *dst, size_t cap,
                           uint32_t max) {
    ss_attr a;
    uint32_t n = 0;
    size_t i = 0;
    if (ss_attr_get(&a, st, name) != 0 || a.type != SS_ATTR_TEXT) return 0;
    const char *p = a.data;
    while (i <= a.size && n < max) {
        size_t j = i;
        while (j < a.size && p[j] != '\n') j++;
        size_t len = j - i < cap - 1 ? j - i : cap - 1;
        memcpy(dst + n * cap, p + i, len);
        dst[n * cap + len] = '\0';
        n++;
        i = j + 1;
    }
    return n;
}

static int attr_f64(const ss_store *st, const char *name, double *dst, uint32_t n) {
    ss_attr a;
    if (ss_attr_get(&a, st, name) != 0 || a.type != SS_F64 || a.size != 8 * (uint64_t)n) return 1;
    memcpy(dst, a.data, 8 * (size_t)n);
    return 0;
}

/* The reference from a store being appended to / resumed, if it has one. */
static int ref_from_store(ss_conv *c, edf_job *job) {
    ss_store *st = NULL;
    ss_attr a;
    ss_field f;
    uint32_t fi;
    if (ss__conv_open_existing(c, &st)) return 1;
    if (!st) return 0;
    if (ss_attr_get(&a, st, "signal.labels") != 0 || ss_field_index(&fi, st, "signal") != 0 ||
        ss_field_info(&f, st, fi) != 0 || f.ndim != 1) {
        ss_close(st);
        return 0; /* not an EDF store: the framework's schema check will say so */
    }
    edf_ref *r = &job->ref;
    uint32_t nch = (uint32_t)f.dims[0];
    if (nch > EDFLIB_MAXSIGNALS || ref_alloc(r, nch)) {
        ss_close(st);
        return ss__conv_error(c, "%s: bad signal field", ss__conv_opts(c)->output);
    }
    attr_lines(st, "signal.labels", (char *)r->labels, sizeof r->labels[0], nch);
    attr_lines(st, "signal.units", (char *)r->units, sizeof r->units[0], nch);
    r->bdf = f.dtype == SS_I32;
    if (attr_f64(st, "signal.sample_rate", &r->rate, 1) ||
        (!job->physical && (attr_f64(st, "signal.gain", r->gain, nch) ||
                            attr_f64(st, "signal.offset", r->offset, nch) ||
                            attr_f64(st, "signal.edf_offset", r->edf_offset, nch)))) {
        ss_close(st);
        return ss__conv_error(c, "%s: missing signal.* attributes", ss__conv_opts(c)->output);
    }
    r->have = 1;
    int rc = ss__events_load(&job->ev, st) || ss__recmeta_load_store(&job->meta, st)
                 ? ss__conv_error(c, "out of memory")
                 : 0;
    ss_close(st);
    return rc;
}

/* ----------------------------------------------------------- attributes */

static int set_text_lines(ss_conv *c, const char *name, const char *base, size_t stride,
                          uint32_t n) {
    size_t cap = (size_t)n * stride + 1, len = 0;
    char *t = malloc(cap);
    int rc;
    if (!t) return ss__conv_error(c, "out of memory");
    for (uint32_t k = 0; k < n; k++)
        len += (size_t)snprintf(t + len, cap - len, "%s%s", k ? "\n" : "", base + k * stride);
    rc = ss__conv_set_attr(c, name, SS_ATTR_TEXT, t, len);
    free(t);
    return rc;
}

static int set_attrs(ss_conv *c, const edf_job *job, const char *label_names, size_t names_len) {
    const edf_ref *r = &job->ref;
    const char *mode = job->physical ? "f32" : "digital";
    if (set_text_lines(c, "signal.labels", (const char *)r->labels, sizeof r->labels[0], r->nch) ||
        set_text_lines(c, "signal.units", (const char *)r->units, sizeof r->units[0], r->nch) ||
        ss__conv_set_attr(c, "signal.sample_rate", SS_F64, &r->rate, 8) ||
        ss__conv_set_attr(c, "signal.physical", SS_ATTR_TEXT, mode, strlen(mode)))
        return 1;
    if (!job->physical &&
        (ss__conv_set_attr(c, "signal.gain", SS_F64, r->gain, 8 * (size_t)r->nch) ||
         ss__conv_set_attr(c, "signal.offset", SS_F64, r->offset, 8 * (size_t)r->nch) ||
         ss__conv_set_attr(c, "signal.edf_offset", SS_F64, r->edf_offset, 8 * (size_t)r->nch)))
        return 1;
    if (label_names && ss__conv_set_attr(c, "label.names", SS_ATTR_TEXT, label_names, names_len))
        return 1;
    return 0;
}

/* -------------------------------------------------------------- inputs */

/* Parse `path,label` rows: job->lab_paths / lab_index and the names. */
static int read_labels(ss_conv *c, edf_job *job, const char *csv, ss__strlist *paths,
                       ss__strlist *names) {
    FILE *f = fopen(csv, "r");
    char *line = NULL;
    size_t cap = 0;
    uint64_t lineno = 0;
    int rc = 0;
    if (!f) return ss__conv_error(c, "cannot open '%s': %s", csv, strerror(errno));
    while (rc == 0 && getline(&line, &cap, f) >= 0) {
        char *t = trim(line), *comma, *p, *lab;
        uint32_t k;
        lineno++;
        if (!*t) continue;
        comma = strrchr(t, ',');
        if (!comma) {
            rc =
                ss__conv_error(c, "%s:%llu: expected 'path,label'", csv,
                               (unsigned long long)lineno);
            break;
        }
        *comma = '\0';
        p = trim(t), lab = trim(comma + 1);
        if (lineno == 1 && !strcasecmp(p, "path") && !strcasecmp(lab, "label")) continue;
        for (k = 0; k < names->n && strcmp(names->v[k], lab); k++) continue;
        if ((k == names->n && ss__strlist_addn(names, lab, strlen(lab))) ||
            ss__strlist_addn(paths, p, strlen(p))) {
            rc = ss__conv_error(c, "out of memory");
            break;
        }
        uint32_t *ni = realloc(job->lab_index, paths->n * sizeof *ni);
        if (!ni) {
            rc = ss__conv_error(c, "out of memory");
            break;
        }
        job->lab_index = ni;
        ni[paths->n - 1] = k;
    }
    if (rc == 0 && ferror(f)) rc = ss__conv_error(c, "cannot read '%s': %s", csv, strerror(errno));
    free(line);
    fclose(f);
    job->lab_paths = paths->v;
    job->nlab = paths->n;
    if (rc == 0 && paths->n == 0) rc = ss__conv_error(c, "%s: no 'path,label' rows", csv);
    return rc;
}

/* ------------------------------------------------------------- running */

typedef struct edf_run {
    ss_conv *c;
    edf_job *job;
    char **files;
    uint32_t nfiles;
    uint64_t skip;
    int has_label;
    edf_slot *own; /* the parent's own slot, for recordings too large for a shared one */
} edf_run;

/* 1 if file i must be decoded: it is in this shard, or ids numbered over
 * every input in order (event classes by first appearance, --meta names)
 * must come out as a single-process run numbers them. Examples of other
 * shards' files are then dropped by ss__conv_append(). */
static int every_file(edf_run *r, uint32_t i) {
    return ss__conv_in_shard(r->c, i) || r->job->ev.mode || r->job->meta.on;
}

/* --events-as windows: one example per event whose window lies inside. */
static int emit_windows(edf_run *r, uint32_t i, edf_slot *s) {
    ss_events *e = &r->job->ev;
    double rate = r->job->ref.rate;
    uint64_t W = ss__events_window(e, rate);
    size_t row = (size_t)s->nch * (r->job->physical ? 4 : r->job->ref.bdf ? 4 : 2);
    for (size_t k = 0; k < e->nev; k++) {
        int64_t a = ss__events_window_start(e, k, rate), onset = e->ev[k].onset;
        if (a < 0 || (uint64_t)a + W > s->T) {
            e->outside++;
            continue;
        }
        if (r->skip) {
            r->skip--;
            continue;
        }
        ss_value v[3 + SS_RECMETA_FIELDS] = {
            {(const char *)s->data + (size_t)a * row, W}, {&e->ev[k].cls, 1}, {&onset, 1}};
        for (int j = 0; j < SS_RECMETA_FIELDS; j++) v[3 + j] = (ss_value){&r->job->meta.ids[j], 1};
        if (ss__conv_append(r->c, v, i, e->ev[k].number)) return 1;
    }
    return 0;
}

/* In input order: report a bad file or append a decoded one; 1 = stop.
 * Events are classified here, in input order, so class ids never depend on
 * the thread count (and a resumed run numbers them as the first did). */
static int emit(edf_run *r, uint32_t i, edf_slot *s) {
    if (!every_file(r, i)) return 0; /* --shard: another shard's file, not decoded */
    const uint32_t *lab = NULL;
    char err[256];
    int mine = ss__conv_in_shard(r->c, i);
    if (s->bad) return ss__conv_bad(r->c, r->files[i], 0, "%s", s->err);
    if (r->job->meta.on &&
        ss__recmeta_place(&r->job->meta, r->files[i], s->subject, s->session, err, sizeof err))
        return ss__conv_bad(r->c, r->files[i], 0, "%s", err);
    if (r->job->ev.mode && (r->job->ev.from == SS_EV_FROM_ANNOTATIONS
                                ? ss__events_read(&r->job->ev, s->annot, s->annot_len,
                                                  r->job->ref.rate, s->T, err, sizeof err)
                                : ss__events_codes(&r->job->ev, s->codes, s->T, err, sizeof err)))
        return ss__conv_bad(r->c, r->files[i], 0, "%s", err);
    if (!mine) return 0; /* another shard's file: its ids numbered, nothing stored */
    if (r->job->ev.mode == SS_EV_WINDOWS) {
        if (emit_windows(r, i, s)) return 1;
    } else if (r->skip) {
        r->skip--;
        return 0;
    } else {
        if (r->job->ev.mode == SS_EV_SAMPLES && !(lab = ss__events_samples(&r->job->ev, s->T)))
            return ss__conv_error(r->c, "out of memory");
        ss_value v[5 + SS_RECMETA_FIELDS] = {{s->data, s->T},
                                             {s->annot, s->annot_len},
                                             {&s->start_time, 1},
                                             {&s->duration, 1},
                                             {lab ? (const void *)lab : &s->label, lab ? s->T : 1}};
        /* the meta fields follow the label, or `duration` when there is none */
        int nf = r->has_label || r->job->ev.mode ? 5 : 4;
        for (int j = 0; j < SS_RECMETA_FIELDS; j++) v[nf + j] = (ss_value){&r->job->meta.ids[j], 1};
        if (ss__conv_append(r->c, v, i, 1)) return 1;
    }
    ss__conv_progress(r->c, ss__conv_file_size(r->files[i]));
    return 0;
}

static void decode_cb(void *ctx, void *slot, uint64_t i) {
    edf_run *r = ctx;
    if (every_file(r, (uint32_t)i)) edf_decode(r->job, r->files[i], slot, 0);
}

static int emit_cb(void *ctx, void *slot, uint64_t i) {
    return emit(ctx, (uint32_t)i, slot);
}

/* In the parent, for decoder processes: a recording larger than its shared
 * slot (see slot_bytes()) is decoded again here, into a slot of our own. */
static int emit_proc_cb(void *ctx, void *slot, uint64_t i) {
    edf_run *r = ctx;
    edf_slot *s = slot;
    if (s->arena_full && every_file(r, (uint32_t)i)) {
        edf_decode(r->job, r->files[i], r->own, 0);
        s = r->own;
    }
    return emit(r, (uint32_t)i, s);
}

/* The shared memory of one slot: the slot, its header and an arena for the
 * largest input. Samples take >= 2 bytes in the file and <= 4 decoded, so
 * the signal (distinct channels) and the event channel take <= 2x the
 * file each; annotation text gets a share, and a recording that still
 * does not fit (the same channel selected twice, a mass of annotations)
 * is decoded in the parent. Only pages touched take memory. The
 * environment variable SS_TEST_EDF_ARENA=BYTES sets the arena's size
 * instead: a test hook, for that fallback. */
static size_t slot_bytes(const edf_run *r, size_t *arena_at) {
    uint64_t big = 0;
    for (uint32_t i = 0; i < r->nfiles; i++) {
        uint64_t f = ss__conv_file_size(r->files[i]);
        if (f > big) big = f;
    }
    if (big > SIZE_MAX / 16) big = SIZE_MAX / 16; /* reserve what we can; the rest falls back */
    size_t arena = 2 * (size_t)big + (size_t)big / 16 + ((size_t)1 << 16) +
                   (size_t)r->job->ref.nch * EDF_CHUNK * sizeof(double) + 4 * 64;
    if (r->job->ev.from != SS_EV_FROM_ANNOTATIONS) arena += 2 * (size_t)big + 64;
    /* test hook: smaller arenas, so that recordings fall back to the parent */
    const char *test = getenv("SS_TEST_EDF_ARENA");
    if (test && *test) arena = (size_t)strtoull(test, NULL, 10);
    *arena_at = (sizeof(edf_slot) + sizeof(struct edf_hdr_struct) + 63) & ~(size_t)63;
    return (*arena_at + arena + 4095) & ~(size_t)4095;
}

/* --threads N >= 2: decode in N processes (ordered.h), each single-threaded
 * so that EDFlib's getc() runs without stream locks. -1 when they cannot
 * start (the caller uses threads). */
static int run_processes(edf_run *r, int nprocs) {
    size_t arena_at, stride = slot_bytes(r, &arena_at);
    int nslots = ss__conv_ordered_slots(nprocs);
    ss_conv_proc_death died;
    char *mem =
        stride <= SIZE_MAX / (size_t)nslots ? ss__conv_shared_alloc(stride * (size_t)nslots) : NULL;
    if (!mem) return -1;
    for (int k = 0; k < nslots; k++) {
        edf_slot *s = (edf_slot *)(mem + (size_t)k * stride);
        s->hdr = (struct edf_hdr_struct *)(s + 1);
        s->arena = (ss_conv_arena){mem + (size_t)k * stride + arena_at, stride - arena_at, 0, NULL};
    }
    int rc =
        ss__conv_proc_ordered(&died, r, mem, stride, nprocs, r->nfiles, decode_cb, emit_proc_cb);
    if (rc == 2) {
        char how[128];
        ss__conv_proc_describe(how, sizeof how, died.status);
        rc = ss__conv_error(r->c, "%s: its decoder process %s", r->files[died.input], how);
    }
    ss__conv_shared_free(mem, stride * (size_t)nslots);
    return rc;
}

/* With one thread the process stays single-threaded: EDFlib reads every
 * sample byte with getc(), which glibc locks in a process that has ever had
 * a second thread (measured: 12 files of 10 min, 0.34 s alone, 0.55-0.62 s
 * with one idle thread), more than the overlap of decode and append gains.
 * With more, processes decode (run_processes); threads only if they cannot. */
static int run_parallel(edf_run *r, edf_slot *slots, int nthreads) {
    if (nthreads == 1) return ss__conv_serial_ordered(r, slots, r->nfiles, decode_cb, emit_cb);
    r->own = &slots[0];
    int rc = run_processes(r, nthreads);
    if (rc >= 0) return rc;
    return ss__conv_parallel_ordered(r, slots, sizeof *slots, nthreads, r->nfiles, decode_cb,
                                     emit_cb);
}

static int parse_args(ss_conv *c, int argc, char **argv, edf_job *job, ss__strlist *files,
                      ss__strlist *chans, const char **labels_csv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int own = !strcmp(a, "--channels") || !strcmp(a, "--labels");
        int rc = ss__sig_arg(c, argc, argv, &i, own, &job->ev, &job->meta, &job->physical, files);
        if (rc != SS__SIG_OWN) {
            if (rc) return rc;
        } else if (!strcmp(a, "--channels")) {
            const char *v = argv[++i];
            while (*v) {
                const char *e = strchr(v, ',');
                size_t len = e ? (size_t)(e - v) : strlen(v);
                if (ss__strlist_addn(chans, v, len)) return ss__conv_error(c, "out of memory");
                char *t = trim(chans->v[chans->n - 1]);
                memmove(chans->v[chans->n - 1], t, strlen(t) + 1);
                if (!*chans->v[chans->n - 1])
                    return ss__conv_usage_error(c, "--channels: empty channel name");
                v += len + (e ? 1 : 0);
            }
            if (chans->n > EDFLIB_MAXSIGNALS)
                return ss__conv_usage_error(c, "--channels: more than %d channels",
                                            EDFLIB_MAXSIGNALS);
        } else {
            *labels_csv = argv[++i];
        }
    }
    if (files->n == 0) return ss__conv_usage_error(c, "no input files");
    if (chans->n) job->channels = chans->v, job->nchannels = chans->n;
    char err[256];
    if (ss__events_check(&job->ev, err, sizeof err)) return ss__conv_usage_error(c, "%s", err);
    if (job->ev.mode && *labels_csv)
        return ss__conv_usage_error(c, "--labels and --events-as both make the field `label`");
    if (ss__recmeta_load_csv(&job->meta, err, sizeof err)) return ss__conv_error(c, "%s", err);
    return 0;
}

/* Join names with '\n' (malloc'd). */
static char *join_lines(const ss__strlist *l, size_t *len) {
    size_t cap = 1;
    for (uint32_t i = 0; i < l->n; i++) cap += strlen(l->v[i]) + 1;
    char *t = malloc(cap);
    *len = 0;
    if (!t) return NULL;
    for (uint32_t i = 0; i < l->n; i++)
        *len += (size_t)snprintf(t + *len, cap - *len, "%s%s", i ? "\n" : "", l->v[i]);
    return t;
}

static int run_edf(ss_conv *c, int argc, char **argv) {
    edf_job job;
    ss__strlist files = {0}, chans = {0}, lab_paths = {0}, lab_names = {0};
    const char *labels_csv = NULL;
    char *names_text = NULL;
    size_t names_len = 0;
    int nthreads = ss__conv_opts(c)->threads, rc;
    edf_slot *slots = NULL;
    uint64_t total = 0;
    edf_run run;

    memset(&job, 0, sizeof job);
    rc = parse_args(c, argc, argv, &job, &files, &chans, &labels_csv);
    if (rc == 0 && labels_csv) {
        rc = read_labels(c, &job, labels_csv, &lab_paths, &lab_names);
        if (rc == 0 && !(names_text = join_lines(&lab_names, &names_len)))
            rc = ss__conv_error(c, "out of memory");
    }
    if (nthreads < 1) nthreads = 1;
    if ((uint32_t)nthreads > files.n) nthreads = (int)files.n;
    int nslots = ss__conv_ordered_slots(nthreads);
    if (rc == 0) {
        slots = calloc((size_t)nslots, sizeof *slots);
        for (int t = 0; slots && t < nslots; t++)
            if (!(slots[t].hdr = malloc(sizeof *slots[t].hdr))) rc = 1;
        if (!slots || rc) rc = ss__conv_error(c, "out of memory");
    }
    for (uint32_t i = 0; rc == 0 && i < files.n; i++) {
        ss__conv_add_source(c, files.v[i]);
        total += ss__conv_file_size(files.v[i]);
    }
    if (rc == 0 && (ss__conv_opts(c)->append || ss__conv_opts(c)->resume))
        rc = ref_from_store(c, &job);
    /* Without a store to match, the first good file is the reference. */
    for (uint32_t i = 0; rc == 0 && !job.ref.have && i < files.n; i++) {
        edf_decode(&job, files.v[i], &slots[0], 1);
        if (!slots[0].bad && ref_from_file(&job.ref, &slots[0]))
            rc = ss__conv_error(c, "out of memory");
    }
    if (rc == 0 && !job.ref.have) {
        /* every file is bad: report them (stops at the first without --skip-bad) */
        for (uint32_t i = 0; rc == 0 && i < files.n; i++) {
            edf_decode(&job, files.v[i], &slots[0], 1);
            rc = ss__conv_bad(c, files.v[i], 0, "%s", slots[0].err);
        }
        if (rc == 0) rc = ss__conv_error(c, "no readable EDF/BDF file among the inputs");
    }
    if (rc == 0) {
        ss_field f[5 + SS_RECMETA_FIELDS];
        memset(f, 0, sizeof f);
        f[0].name = "signal";
        f[0].dtype = job.physical ? SS_F32 : job.ref.bdf ? SS_I32 : SS_I16;
        f[0].sequence = 1;
        f[0].ndim = 1;
        f[0].dims[0] = job.ref.nch;
        f[1].name = "annotations";
        f[1].dtype = SS_U8;
        f[1].sequence = 1;
        f[2].name = "start_time";
        f[2].dtype = SS_I64;
        f[3].name = "duration";
        f[3].dtype = SS_I64;
        f[4].name = "label";
        f[4].dtype = SS_U32;
        f[4].sequence = job.ev.mode == SS_EV_SAMPLES;
        ss_schema schema = {labels_csv || job.ev.mode ? 5u : 4u, f};
        if (job.ev.mode == SS_EV_WINDOWS) {
            /* signal, label, onset */
            f[1] = f[4];
            memset(&f[2], 0, sizeof f[2]);
            f[2].name = "onset";
            f[2].dtype = SS_I64;
            schema.nfields = 3;
        }
        schema.nfields = ss__recmeta_fields(&job.meta, f, schema.nfields);
        run.c = c, run.job = &job, run.files = files.v, run.nfiles = files.n, run.skip = 0;
        run.has_label = labels_csv != NULL;
        ss__conv_one_thread(c); /* the decoders are processes (run_processes) */
        rc = ss__conv_begin(c, &schema, &run.skip);
    }
    if (rc == 0) rc = set_attrs(c, &job, names_text, names_len);
    if (rc == 0) {
        ss__conv_set_total(c, total);
        rc = run_parallel(&run, slots, nthreads);
    }
    if (rc == 0 && job.ev.mode) rc = ss__events_finish(c, &job.ev);
    if (rc == 0) rc = ss__recmeta_finish(c, &job.meta);
    for (int t = 0; slots && t < nslots; t++) {
        free(slots[t].hdr);
        free(slots[t].data);
        free(slots[t].tmp);
        free(slots[t].annot);
        free(slots[t].codes);
    }
    free(slots);
    free(names_text);
    free(job.lab_index);
    ref_free(&job.ref);
    ss__events_free(&job.ev);
    ss__recmeta_free(&job.meta);
    ss__strlist_free(&files);
    ss__strlist_free(&chans);
    ss__strlist_free(&lab_paths);
    ss__strlist_free(&lab_names);
    return rc;
}

const ss_converter ss__converter_edf = {
    "edf", "EEG recordings (EDF, EDF+, BDF, BDF+ via EDFlib), one example per recording", run_edf,
    usage_edf};
