/* SPDX-License-Identifier: BSD-2-Clause */
/* convert_biosig.c - `seqstore convert biosig`: biosignal recordings in the
 * formats BioSig reads (GDF, BrainVision .vhdr, EDF/BDF, and many clinical
 * formats), one example per recording; the layout of `convert edf`.
 *
 * Fields (in this order):
 *   signal       sequence [T][C], time-major: the digital samples (i16 when
 *                every channel is stored in at most 16 bits, i32 for wider
 *                integers, f32 for float formats), or f32 physical values
 *                with --physical f32
 *   annotations  sequence of u8: the event table as text, one event per line
 *                "ONSET\tDURATION\tTEXT\n", ONSET and DURATION in seconds
 *                with 7 decimals, TEXT BioSig's description of the event
 *                (its free text, else its table name, else "TYP 0xNNNN")
 * plus the framework's `source`.
 * Attributes: signal.labels, signal.units (TEXT, one per line),
 * signal.sample_rate f64[1], signal.gain / signal.offset f64[C]
 * (physical = digital * gain + offset), signal.physical TEXT, and with
 * --resample signal.resample_converter TEXT.
 * With --events-as samples|windows the events become labels as in
 * `convert edf` (events.h): a sequence field `label` [T], or one example per
 * event (fields signal, label, onset); classes in label.names. The events
 * come from BioSig's event table, or with --events-from channel:NAME from the
 * codes of a trigger channel (its digital values; left out of `signal`), as
 * `convert edf` reads them (events.h). A BDF Status channel is refused:
 * BioSig 2.5 turns it into wrong events itself (convert edf reads it).
 * With --meta header|FILE.csv fixed u32 fields subject, session, recording
 * follow (recmeta.h; from the header: the patient id and the file name, no
 * session since BioSig dates a BrainVision file by the time of reading).
 * Every file must match the first (or the store appended to) in channel
 * labels, rate (unless --resample), digital type and calibration (unless
 * --physical f32). Channels of one file must share one rate.
 * Recordings are decoded in parallel (--threads; BioSig's open, event table
 * and close serialized) and appended in input order, so the store never
 * depends on the thread count.
 * Bad input is an error naming the file, never a crash or a wrong table:
 * the header fields BioSig 2.5 trusts are checked before it sees a GDF or
 * BrainVision file (biosig_check.h: a BrainVision header whose MarkerFile
 * cannot be read is an error, one without MarkerFile has no events; BioSig
 * mis-reads the markers after a 'New Segment' marker without its date, so
 * it reads a copy with the date added: bv_dated_copy()), its event table
 * must hold every marker line, its
 * rate must be positive and finite, and every input is first opened once
 * in a child process, so that one BioSig crashes on is reported (probe_all). */
#include "convert.h"
#include "sig_args.h"
#include "strlist.h"
#include "ordered.h"

#ifdef SS_HAVE_BIOSIG
#include "biosig_check.h"
#include "events.h"
#include "recmeta.h"
#include "resample.h"

#include <biosig.h>
#include <biosig-dev.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <samplerate.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <strings.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define BS_ERR 1024
#define BS_MAXCH 4096
#define BS_MAX_TEXT (16 << 20) /* a BrainVision header or marker file */

typedef struct bs_ref {
    int have;
    uint32_t nch;
    ss_dtype dtype;
    double rate;
    char *labels, *units; /* '\n'-joined */
    double *gain, *offset;
} bs_ref;

/* lrint() inline: glibc's x86-64 lrint is this one instruction (cvtsd2si,
 * the current rounding mode), but a call per sample, which cost as much as
 * the loop around it; elsewhere lrint() itself. */
#if defined(__x86_64__) && defined(__SSE2__)
static inline long bs_lrint(double x) {
    return (long)_mm_cvtsd_si64(_mm_set_sd(x));
}
#else
#define bs_lrint lrint
#endif

typedef struct bs_job {
    int physical;
    ss_resample rs;
    ss_events ev;
    ss_recmeta meta;
    bs_ref ref;
    /* reused per recording */
    void *data;
    size_t data_cap;
    float *fbuf, *rbuf;
    size_t fcap, rcap;
    char *annot;
    size_t annot_len, annot_cap;
    uint64_t T;
    int evk;             /* --events-from channel:NAME: its CHANNEL index, else -1 */
    double evcal, evoff; /* its calibration (codes are digital values) */
    double *dbuf;        /* the other channels' samples, without it */
    size_t dcap;
    double *block; /* BioSig's samples channel by channel [W][T], borrowed (bs_block) */
    size_t block_cap;
    double *tbuf; /* rows of samples [T][W], for the event channel and resampling */
    size_t tcap;
    int32_t *codes; /* its T values */
    size_t codes_cap;
    char subject[96], session[16]; /* header values for --meta header */
    char err[BS_ERR];
    int bad;           /* the last bs_decode() failed */
    long markers;      /* a BrainVision file's marker lines (bv_guard), -1 without */
    char mrk[1024];    /* its marker file */
    char tmp[512];     /* the temporary folder of bv_dated_copy(), else "" */
    char open[1024];   /* the header BioSig opens there, else "" */
} bs_job;

static void usage_biosig(FILE *out) {
    fprintf(out, "usage: seqstore convert biosig FILE... -o STORE [options]\n"
                 "  one example per recording (GDF, BrainVision .vhdr, EDF/BDF and the other\n"
                 "  formats BioSig reads): field `signal` [T][C] time-major, `annotations`\n"
                 "  --physical f32       float32 physical values instead of digital + gain/offset\n"
                 "  --resample HZ        resample every recording to HZ (libsamplerate; implies\n"
                 "                       --physical f32); without it all must share one rate\n"
                 "  --resample-quality Q best|medium|fastest|zoh|linear (default best)\n"
                 "  --list FILE          read input paths from FILE, one per line\n"
                 "  --events-as samples  a sequence field `label` [T]: each sample's event\n"
                 "                       class (0 = none), names in label.names\n"
                 "  --events-as windows --window-start S --window-stop S\n"
                 "                       one example per event: signal from S before/after its\n"
                 "                       onset (seconds, negative = before), `label`, `onset`\n"
                 "  --events A,B,...     only these event texts, classes in this order\n"
                 "  --events-from annotations|channel:NAME\n"
                 "                       events from the event table (default) or from the\n"
                 "                       codes of a trigger channel (left out of the signal)\n"
                 "  --trigger-mask M     bits of the trigger channel that hold the code\n"
                 "                       (default all)\n"
                 "  --meta header|FILE.csv  fixed fields subject, session, recording (ids into\n"
                 "                       *.names) from the header (patient id, file name; no\n"
                 "                       session) or from `path,subject,session,recording` rows\n");
}

static int grow(void **buf, size_t *cap, size_t need) {
    if (need <= *cap) return 0;
    void *p = realloc(*buf, need);
    if (!p) return 1;
    *buf = p, *cap = need;
    return 0;
}

static int fail(bs_job *job, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(bs_job *job, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(job->err, sizeof job->err, fmt, ap);
    va_end(ap);
    return 1;
}

/* The digital type of a GDF data type code (BioSig's GDFTYP). */
static ss_dtype digital_dtype(uint16_t gdftyp) {
    switch (gdftyp) {
    case 1: /* int8 */
    case 2: /* uint8 */
    case 3: /* int16 */
        return SS_I16;
    case 4: /* uint16 */
    case 5: /* int32 */
        return SS_I32;
    default:
        if (gdftyp > 255 && gdftyp < 255 + 32) return SS_I32; /* intN, N < 32 */
        if (gdftyp > 511 && gdftyp < 511 + 32) return SS_I32; /* uintN, N < 32 */
        return SS_F32;
    }
}

static int dtype_rank(ss_dtype d) {
    return d == SS_I16 ? 0 : d == SS_I32 ? 1 : 2;
}

/* The whole of a small file (a header, a marker file) into *out (NUL
 * added), its size in *n; 1 with job->err when it cannot be read. */
static int slurp(bs_job *job, const char *what, const char *path, char **out, size_t *n) {
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t len = 0, cap = 0;
    if (!f) return fail(job, "%s '%s' cannot be read: %s", what, path, strerror(errno));
    for (size_t got = 1; got;) {
        if (len + 65536 > cap && grow((void **)&buf, &cap, len + 65536 + 1)) {
            fclose(f), free(buf);
            return fail(job, "out of memory");
        }
        len += got = fread(buf + len, 1, 65536, f);
        if (len > BS_MAX_TEXT) {
            fclose(f), free(buf);
            return fail(job, "%s '%s' is larger than %d bytes", what, path, BS_MAX_TEXT);
        }
    }
    int rd = ferror(f);
    fclose(f);
    if (rd) return free(buf), fail(job, "%s '%s' cannot be read", what, path);
    buf[len] = '\0';
    *out = buf, *n = len;
    return 0;
}

/* Remove the temporary folder of bv_dated_copy() (nothing without one). */
static void bs_untemp(bs_job *job) {
    DIR *d = job->tmp[0] ? opendir(job->tmp) : NULL;
    for (struct dirent *e; d && (e = readdir(d));) {
        char f[1300];
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(f, sizeof f, "%s/%s", job->tmp, e->d_name);
            unlink(f);
        }
    }
    if (d) closedir(d);
    if (job->tmp[0]) rmdir(job->tmp);
    job->tmp[0] = job->open[0] = '\0';
}

/* `len` bytes into the new file `path`; 1 with job->err. */
static int put_file(bs_job *job, const char *path, const char *data, size_t len) {
    FILE *f = fopen(path, "wb");
    int bad = !f || fwrite(data, 1, len, f) != len;
    if (f && fclose(f)) bad = 1;
    return bad ? fail(job, "cannot write '%s': %s", path, strerror(errno)) : 0;
}

/* BioSig 2.5 writes into the marker line after a 'New Segment' that has no
 * date (the field is optional) and mis-reads the markers after it. So it is
 * given a copy: in a new temporary folder (job->tmp) the header as it is,
 * the marker file with the unknown date added (ss__bs_vmrk_dated()) and a
 * link to the data file. job->open is that header; bs_open() removes the
 * folder once BioSig has read them (it keeps only the data file open). */
static int bv_dated_copy(bs_job *job, const char *hdr, size_t hn, const char *base,
                         const char *data, const ss_bs_vhdr *v, const char *mrk, size_t mn,
                         size_t undated) {
    const char *tmpdir = getenv("TMPDIR");
    char real[PATH_MAX], f[1300];
    if (strchr(v->markerfile, '/'))
        return fail(job, "BrainVision marker file '%s': 'New Segment' markers without a date, "
                         "which BioSig 2.5 mis-reads, in a marker file in another folder",
                    v->markerfile);
    size_t cap = mn + SS_BS_VMRK_DATE_LEN * undated, dn;
    char *dated = malloc(cap + 1);
    if (!dated) return fail(job, "out of memory");
    dn = ss__bs_vmrk_dated(dated, cap, mrk, mn);
    snprintf(job->tmp, sizeof job->tmp, "%s/seqstore-biosig-XXXXXX",
             tmpdir && *tmpdir ? tmpdir : "/tmp");
    int rc = !dn ? fail(job, "out of memory") : 0;
    if (!rc && (!realpath(data, real) || !mkdtemp(job->tmp))) {
        rc = fail(job, "cannot make a dated copy of the markers in '%s': %s", job->tmp,
                  strerror(errno));
        job->tmp[0] = '\0';
    }
    if (!rc) {
        snprintf(f, sizeof f, "%s/%s", job->tmp, v->datafile);
        if (symlink(real, f)) rc = fail(job, "cannot link '%s': %s", f, strerror(errno));
    }
    snprintf(f, sizeof f, "%s/%s", job->tmp, v->markerfile);
    rc = rc || put_file(job, f, dated, dn);
    snprintf(job->open, sizeof job->open, "%s/%s", job->tmp, base);
    rc = rc || put_file(job, job->open, hdr, hn);
    free(dated);
    if (rc) bs_untemp(job);
    return rc;
}

/* The marker file the header names (v->markerfile), checked; job->markers
 * its marker lines. 1 = bad. */
static int bv_markers(bs_job *job, const char *path, const char *base, const char *hdr, size_t hn,
                      const char *data, const ss_bs_vhdr *v) {
    char *text, err[512];
    size_t n, count, undated;
    snprintf(job->mrk, sizeof job->mrk, "%.*s%s", (int)(base - path), path, v->markerfile);
    if (access(job->mrk, R_OK))
        return fail(job, "BrainVision header: MarkerFile '%s' cannot be read: %s", v->markerfile,
                    strerror(errno));
    if (slurp(job, "BrainVision marker file", job->mrk, &text, &n)) return 1;
    int rc = ss__bs_check_vmrk(&count, &undated, text, n, err, sizeof err);
    if (rc) rc = fail(job, "BrainVision marker file '%s': %s", v->markerfile, err);
    if (!rc && undated) rc = bv_dated_copy(job, hdr, hn, base, data, v, text, n, undated);
    free(text);
    job->markers = rc ? -1 : (long)count;
    return rc;
}

/* BioSig 2.5 trusts a BrainVision header's sections and keys
 * (biosig_check.h), reads <name>.eeg whatever DataFile says (the wrong
 * samples, or SIGSEGV when there is none), takes DataPoints as the length,
 * and opens the MarkerFile it names saying nothing when it cannot. So the
 * header and the marker file are checked before BioSig sees them. 1 = bad. */
static int bv_guard(bs_job *job, const char *path, const char *base, const char *dot) {
    char *text = NULL, data[1024], want[512], err[512];
    size_t n;
    ss_bs_vhdr v;
    struct stat st;
    if (slurp(job, "BrainVision header", path, &text, &n)) return 1;
    int rc = ss__bs_check_vhdr(&v, text, n, err, sizeof err);
    if (rc) rc = fail(job, "%s", err);
    snprintf(want, sizeof want, "%.*s.eeg", (int)(dot - base), base);
    if (!rc && strcmp(v.datafile, want))
        rc = fail(job,
                  "BrainVision header: DataFile '%s' is not '%s', and BioSig 2.5 reads '%s' "
                  "whatever DataFile says (rename the files to match)",
                  v.datafile, want, want);
    snprintf(data, sizeof data, "%.*s%s", (int)(base - path), path, v.datafile);
    if (!rc && (access(data, R_OK) || stat(data, &st)))
        rc = fail(job, "BrainVision header: DataFile '%s' cannot be read: %s", v.datafile,
                  strerror(errno));
    uint64_t row = (uint64_t)v.nch * (uint64_t)v.sample_bytes;
    if (!rc && v.points >= 0 && row && (uint64_t)v.points > (uint64_t)st.st_size / row)
        rc = fail(job,
                  "BrainVision header: DataPoints=%lld samples of %ld channels need more than "
                  "the %lld bytes of DataFile '%s'",
                  v.points, v.nch, (long long)st.st_size, v.datafile);
    if (!rc && v.markerfile[0]) rc = bv_markers(job, path, base, text, n, data, &v);
    free(text);
    return rc;
}

/* A GDF's fixed header, then as much more as its header length says, for
 * ss__bs_check_gdf(). 1 = bad. */
static int gdf_guard(bs_job *job, FILE *f, uint64_t size) {
    uint8_t fixed[SS_BS_GDF_FIXED];
    char err[512];
    if (size < SS_BS_GDF_FIXED || fread(fixed, 1, sizeof fixed, f) != sizeof fixed) return 0;
    uint64_t hl = ss__bs_gdf_header_len(fixed, sizeof fixed);
    size_t want = hl > size ? sizeof fixed : hl < sizeof fixed ? sizeof fixed : (size_t)hl;
    uint8_t *head = malloc(want);
    if (!head) return fail(job, "out of memory for a GDF header of %zu bytes", want);
    memcpy(head, fixed, sizeof fixed);
    size_t got = sizeof fixed + fread(head + sizeof fixed, 1, want - sizeof fixed, f);
    int rc = ss__bs_check_gdf(head, got, size, err, sizeof err);
    free(head);
    return rc ? fail(job, "%s", err) : 0;
}

/* Check what BioSig 2.5 trusts in a GDF or BrainVision file (by content,
 * as BioSig tells them, or a BrainVision header by its name); everything
 * else is left to BioSig. 1 = bad. */
static int bs_guard(bs_job *job, const char *path) {
    static const char bv_magic[] = "Brain Vision Data Exchange Header File";
    job->markers = -1;
    job->tmp[0] = job->open[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f) return 0; /* BioSig says why */
    char head[64] = {0};
    size_t n = fread(head, 1, sizeof head, f);
    struct stat st;
    uint64_t size = fstat(fileno(f), &st) ? 0 : (uint64_t)st.st_size;
    rewind(f);
    int rc = 0;
    if (n >= 3 && !memcmp(head, "GDF", 3)) {
        rc = gdf_guard(job, f, size);
        fclose(f);
        return rc;
    }
    fclose(f);
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    int bv = !memcmp(head, bv_magic, sizeof bv_magic - 1) ||
             (!memcmp(head, "\xef\xbb\xbf", 3) && !memcmp(head + 3, bv_magic, sizeof bv_magic - 1));
    if (dot && dot > base && (!strcasecmp(dot, ".vhdr") || !strcasecmp(dot, ".ahdr"))) bv = 1;
    if (!bv) return 0;
    if (!dot || dot < base) dot = base + strlen(base);
    return bv_guard(job, path, base, dot);
}

static void bs_close(HDRTYPE *h);

/* Open `path`; NULL with job->err set on failure. */
/* BioSig's global state (below), serialized across the decoding threads */
static pthread_mutex_t biosig_lock = PTHREAD_MUTEX_INITIALIZER;

static HDRTYPE *bs_open(bs_job *job, const char *path) {
    if (bs_guard(job, path)) return NULL;
    HDRTYPE *h = constructHDR(0, 0);
    if (!h) return bs_untemp(job), fail(job, "out of memory"), NULL;
    /* no BIOSIG_FLAG_ROW_BASED_CHANNELS: BioSig fills its block channel by
     * channel ([W][T]) twice as fast as in rows of samples (8 BrainVision
     * files of 3.8 MB: 0.075 s against 0.16 s); to_rows() turns it */
    if (!job->physical) biosig_set_flag(h, BIOSIG_FLAG_UCAL);
    /* BioSig keeps global state (error globals, lazily loaded event tables):
     * opening, the event table and closing are serialized; sread() of
     * separate headers runs in parallel */
    pthread_mutex_lock(&biosig_lock);
    h = sopen(job->open[0] ? job->open : path, "r", h);
    pthread_mutex_unlock(&biosig_lock);
    bs_untemp(job); /* BioSig has read the copies it was given */
    /* read the error before serror2(), which prints it to stderr and clears it */
    if (!h || h->AS.B4C_ERRNUM) {
        const char *m = h ? h->AS.B4C_ERRMSG : NULL;
        fail(job, "BioSig: %s", m && *m ? m : "cannot open or recognise the file");
        for (size_t n = strlen(job->err); n && (job->err[n - 1] == '\n' || job->err[n - 1] == ' ');)
            job->err[--n] = '\0';
        if (h) bs_close(h);
        return NULL;
    }
    /* a marker file BioSig could not read it only warns about, or not at all */
    size_t nev = biosig_get_number_of_events(h);
    if (job->markers >= 0 && nev != (size_t)job->markers) {
        const char *m = strrchr(job->mrk, '/');
        fail(job, "BioSig read %zu of the %ld markers of '%s'", nev, job->markers, m ? m + 1 : job->mrk);
        bs_close(h);
        return NULL;
    }
    /* BioSig turns a header's rate into h->SampleRate without checking it */
    if (!(h->SampleRate > 0) || !isfinite(h->SampleRate)) {
        fail(job, "the header gives the sample rate %g Hz, not a positive finite number", h->SampleRate);
        bs_close(h);
        return NULL;
    }
    return h;
}

static void bs_close(HDRTYPE *h) {
    pthread_mutex_lock(&biosig_lock);
    sclose(h);
    destructHDR(h);
    pthread_mutex_unlock(&biosig_lock);
}

/* A channel label without the blanks around it, compared ignoring case. */
static int label_eq(const char *label, const char *name) {
    while (*label == ' ') label++;
    size_t n = strlen(label);
    while (n && label[n - 1] == ' ') n--;
    return n == strlen(name) && strncasecmp(label, name, n) == 0;
}

/* --events-from channel:NAME: its index into job->evk (-1 without); 1 when
 * the recording has no such channel (job->err lists those it has). */
static int find_event_channel(bs_job *job, HDRTYPE *h) {
    job->evk = -1;
    if (job->ev.from != SS_EV_FROM_CHANNEL) return 0;
    for (int k = 0; k < h->NS; k++)
        if (h->CHANNEL[k].OnOff == 1 && label_eq(h->CHANNEL[k].Label, job->ev.from_channel)) {
            job->evk = k;
            job->evcal = h->CHANNEL[k].Cal, job->evoff = h->CHANNEL[k].Off;
            return 0;
        }
    int n = snprintf(job->err, sizeof job->err,
                     "no channel '%s' for --events-from; the file has:", job->ev.from_channel);
    for (int k = 0, first = 1; k < h->NS && n > 0 && (size_t)n < sizeof job->err; k++) {
        if (h->CHANNEL[k].OnOff != 1) continue;
        n += snprintf(job->err + n, sizeof job->err - (size_t)n, "%s %s", first ? "" : ",",
                      h->CHANNEL[k].Label);
        first = 0;
    }
    return 1;
}

/* The channels BioSig outputs (OnOff == 1): count, labels, units, type,
 * calibration; 1 when they cannot form one [T][C] signal. */
static int channels_of(bs_job *job, HDRTYPE *h, bs_ref *r) {
    uint32_t n = 0;
    size_t ll = 1, ul = 1;
    r->dtype = SS_I16;
    if (find_event_channel(job, h)) return 1;
    for (int k = 0; k < h->NS; k++) {
        CHANNEL_TYPE *c = &h->CHANNEL[k];
        if (c->OnOff != 1) continue;
        if (c->SPR && h->SPR && c->SPR != h->SPR)
            return fail(job,
                        "channel '%s' has %g Hz, the recording %g Hz: channels of one "
                        "recording must share one rate",
                        c->Label, h->SampleRate * c->SPR / h->SPR, h->SampleRate);
        if (k == job->evk) continue;
        n++;
        ll += strlen(c->Label) + 1;
        ul += strlen(biosig_channel_get_physdim(c)) + 1;
        ss_dtype d = digital_dtype(c->GDFTYP);
        if (dtype_rank(d) > dtype_rank(r->dtype)) r->dtype = d;
    }
    if (n == 0)
        return fail(job, job->evk >= 0 ? "no signal channel besides the event channel"
                                       : "no signal channels");
    if (n > BS_MAXCH) return fail(job, "%u channels (at most %d)", n, BS_MAXCH);
    r->nch = n;
    r->rate = h->SampleRate;
    r->labels = malloc(ll), r->units = malloc(ul);
    r->gain = calloc(n, sizeof(double)), r->offset = calloc(n, sizeof(double));
    if (!r->labels || !r->units || !r->gain || !r->offset) return fail(job, "out of memory");
    size_t lp = 0, up = 0;
    uint32_t i = 0;
    for (int k = 0; k < h->NS; k++) {
        CHANNEL_TYPE *c = &h->CHANNEL[k];
        if (c->OnOff != 1 || k == job->evk) continue;
        lp += (size_t)snprintf(r->labels + lp, ll - lp, "%s%s", i ? "\n" : "", c->Label);
        up += (size_t)snprintf(r->units + up, ul - up, "%s%s", i ? "\n" : "",
                               biosig_channel_get_physdim(c));
        r->gain[i] = c->Cal, r->offset[i] = c->Off;
        i++;
    }
    return 0;
}

static void ref_free(bs_ref *r) {
    free(r->labels);
    free(r->units);
    free(r->gain);
    free(r->offset);
    memset(r, 0, sizeof *r);
}

/* A recording's channels against the reference; 1 when they differ. */
static int check_ref(bs_job *job, const bs_ref *f) {
    const bs_ref *r = &job->ref;
    if (f->nch != r->nch) return fail(job, "%u channels, the store has %u", f->nch, r->nch);
    if (strcmp(f->labels, r->labels)) {
        const char *a = f->labels, *b = r->labels;
        uint32_t k = 1;
        for (; *a && *a == *b; a++, b++)
            if (*a == '\n') k++;
        return fail(job, "channel labels differ from the store's from channel %u", k);
    }
    if (!job->rs.rate && f->rate != r->rate)
        return fail(job, "sample rate %g Hz differs from the store's %g Hz (use --resample HZ)",
                    f->rate, r->rate);
    if (job->physical) return 0;
    if (dtype_rank(f->dtype) > dtype_rank(r->dtype))
        return fail(job, "digital samples wider than the store's; use --physical f32");
    for (uint32_t k = 0; k < f->nch; k++)
        if (f->gain[k] != r->gain[k] || f->offset[k] != r->offset[k])
            return fail(job,
                        "channel %u: calibration (gain %.17g, offset %.17g) differs from the "
                        "store's (gain %.17g, offset %.17g); use --physical f32",
                        k + 1, f->gain[k], f->offset[k], r->gain[k], r->offset[k]);
    return 0;
}

/* The event table as "ONSET\tDURATION\tTEXT\n" lines into job->annot. */
static int read_events(bs_job *job, HDRTYPE *h) {
    size_t n = biosig_get_number_of_events(h);
    double fs = biosig_get_eventtable_samplerate(h);
    job->annot_len = 0;
    if (!(fs > 0)) fs = h->SampleRate;
    for (size_t i = 0; i < n; i++) {
        uint16_t typ = 0, chn = 0;
        uint32_t pos = 0, dur = 0;
        const char *desc = NULL;
        char line[512], text[256];
        if (biosig_get_nth_event(h, i, &typ, &pos, &chn, &dur, NULL, &desc)) continue;
        if (!desc || !*desc) desc = GetEventDescription(h, i);
        if (desc && *desc)
            snprintf(text, sizeof text, "%s", desc);
        else
            snprintf(text, sizeof text, "TYP 0x%04x", typ);
        for (char *p = text; *p; p++)
            if (*p == '\t' || *p == '\n' || *p == '\r') *p = ' ';
        int len = snprintf(line, sizeof line, "%.7f\t%.7f\t%s\n", pos / fs, dur / fs, text);
        if (len < 0) continue;
        if ((size_t)len >= sizeof line) len = (int)sizeof line - 1;
        if (grow((void **)&job->annot, &job->annot_cap, job->annot_len + (size_t)len))
            return fail(job, "out of memory for events");
        memcpy(job->annot + job->annot_len, line, (size_t)len);
        job->annot_len += (size_t)len;
    }
    return 0;
}

/* --events-from channel:NAME: the event channel's column of BioSig's [T][W]
 * block (W = C + 1) as digital codes into job->codes, the other columns into
 * job->dbuf, which is returned ([T][C]); NULL (job->err) when out of memory
 * or a value is not an int32 code. */
static const double *split_codes(bs_job *job, HDRTYPE *h, const double *d, uint64_t T, uint32_t C) {
    uint32_t col = 0; /* its place among the channels BioSig outputs */
    for (int k = 0; k < job->evk; k++) col += h->CHANNEL[k].OnOff == 1;
    if (grow((void **)&job->dbuf, &job->dcap, (size_t)T * C * sizeof(double) + 1) ||
        grow((void **)&job->codes, &job->codes_cap, (size_t)T * sizeof(int32_t) + 1))
        return fail(job, "out of memory"), NULL;
    /* without BIOSIG_FLAG_UCAL (--physical) BioSig calibrated the codes too */
    double cal = job->physical ? job->evcal : 1, off = job->physical ? job->evoff : 0;
    for (uint64_t t = 0; t < T; t++) {
        const double *row = d + t * (C + 1);
        double v = (row[col] - off) / cal;
        if (!(v > -2147483649.0 && v < 2147483648.0))
            return fail(job, "event channel '%s': sample %" PRIu64 " (%g) is not a code",
                        job->ev.from_channel, t, row[col]),
                   NULL;
        job->codes[t] = (int32_t)lrint(v);
        memcpy(job->dbuf + t * C, row, col * sizeof(double));
        memcpy(job->dbuf + t * C + col, row + col + 1, (C - col) * sizeof(double));
    }
    return job->dbuf;
}

/* The samples t of channel c in rows, out[t * W + c] = in[c * T + t] as
 * `type` (conversion `conv`), 64 rows at a time, which stay in the cache. */
#define TO_ROWS(type, conv)                                                                        \
    for (uint64_t t0 = 0; t0 < T; t0 += 64) {                                                      \
        uint64_t t1 = T - t0 < 64 ? T : t0 + 64;                                                   \
        for (uint32_t c = 0; c < W; c++) {                                                         \
            const double *in = d + (size_t)c * T;                                                  \
            for (uint64_t t = t0; t < t1; t++) ((type *)out)[(size_t)t * W + c] = conv(in[t]);     \
        }                                                                                          \
    }
#define TO_F64(x) (x)
#define TO_F32(x) ((float)(x))
#define TO_I32(x) ((int32_t)bs_lrint(x))
#define TO_I16(x) ((int16_t)bs_lrint(x))

/* BioSig's channel-major block `d` ([W][T]) into rows of samples of `dt`
 * (f64, f32, i32 or i16, converted as before the rows were ours). */
static void to_rows(void *out, ss_dtype dt, const double *d, uint64_t T, uint32_t W) {
    if (dt == SS_F64)
        TO_ROWS(double, TO_F64)
    else if (dt == SS_F32)
        TO_ROWS(float, TO_F32)
    else if (dt == SS_I32)
        TO_ROWS(int32_t, TO_I32)
    else
        TO_ROWS(int16_t, TO_I16)
}

/* Every sample into job->data as the store's dtype, resampled if asked. */
static int read_samples(bs_job *job, HDRTYPE *h, uint32_t C) {
    if (h->NRec < 0) return fail(job, "unknown length (NRec = -1)");
    /* BioSig decodes into the job's block, which lives as long as the job:
     * left to itself it allocates a block per recording, 4 times the size of
     * its i16 samples, whose pages a fresh process faults in again for every
     * recording. Sized for every channel that is not off (sread() fills
     * those); the whole recording in one sread(), as BioSig 2.5 returns
     * wrong samples for a range that does not start at record 0. */
    size_t on = 0, nrec = (size_t)h->NRec;
    for (int k = 0; k < h->NS; k++) on += h->CHANNEL[k].OnOff != 0;
    size_t cells = nrec * h->SPR * on;
    if ((h->SPR && on && cells / on / h->SPR != nrec) ||
        grow((void **)&job->block, &job->block_cap, cells * sizeof(double) + 1))
        return fail(job, "out of memory for %zu records of %u samples", nrec, h->SPR);
    size_t got = sread(job->block, 0, nrec, h);
    if (h->data.block == job->block) h->data.block = NULL; /* ours, not destructHDR()'s to free */
    if (h->AS.B4C_ERRNUM) return fail(job, "BioSig read: %s", h->AS.B4C_ERRMSG);
    /* BioSig itself only warns, and returns the records it found */
    if (got != nrec)
        return fail(job, "truncated: BioSig read %zu of the %zu data records the header announces",
                    got, nrec);
    uint32_t W = C + (job->evk >= 0); /* the event channel comes in the block too */
    const double *d = job->block;
    size_t rows = (size_t)h->data.size[0], cols = (size_t)h->data.size[1];
    if (cols != W || rows > cells / (cols ? cols : 1))
        return fail(job, "BioSig returned %zu x %zu samples for %u channels", cols, rows, W);
    uint64_t T = rows;
    size_t n = (size_t)T * C;
    ss_dtype dt = job->physical || job->rs.rate ? SS_F32 : job->ref.dtype;
    const double *src = NULL;
    if (job->evk >= 0 || job->rs.rate) { /* these paths take rows of doubles */
        if (grow((void **)&job->tbuf, &job->tcap, (size_t)T * W * sizeof(double) + 1))
            return fail(job, "out of memory");
        to_rows(job->tbuf, SS_F64, d, T, W);
        src = job->tbuf;
        if (job->evk >= 0 && !(src = split_codes(job, h, src, T, C))) return 1;
    }
    if (job->rs.rate && h->SampleRate != job->rs.rate) {
        size_t fl = job->rcap;
        if (grow((void **)&job->fbuf, &job->fcap, n * sizeof(float) + 1))
            return fail(job, "out of memory");
        for (size_t i = 0; i < n; i++) job->fbuf[i] = (float)src[i];
        if (ss__sig_resample(job->fbuf, T, C, h->SampleRate, job->rs.rate, job->rs.converter,
                             &job->rbuf, &fl, &T, job->err, sizeof job->err))
            return 1;
        job->rcap = fl;
        n = (size_t)T * C;
        if (grow(&job->data, &job->data_cap, n * 4 + 1)) return fail(job, "out of memory");
        memcpy(job->data, job->rbuf, n * 4);
        job->T = T;
        return 0;
    }
    if (grow(&job->data, &job->data_cap, n * 4 + 1)) return fail(job, "out of memory");
    if (!src) /* straight from BioSig's block */
        to_rows(job->data, dt, d, T, C);
    else if (dt == SS_F32)
        for (size_t i = 0; i < n; i++) ((float *)job->data)[i] = (float)src[i];
    else if (dt == SS_I32)
        for (size_t i = 0; i < n; i++) ((int32_t *)job->data)[i] = (int32_t)bs_lrint(src[i]);
    else
        for (size_t i = 0; i < n; i++) ((int16_t *)job->data)[i] = (int16_t)bs_lrint(src[i]);
    job->T = T;
    return 0;
}

/* Decode one recording (header checks, events, samples); 1 = bad. */
static int bs_decode(bs_job *job, const char *path) {
    bs_ref f;
    memset(&f, 0, sizeof f);
    job->err[0] = '\0';
    HDRTYPE *h = bs_open(job, path);
    if (!h) return 1;
    int rc = channels_of(job, h, &f) || check_ref(job, &f);
    /* BioSig 2.5 turns a BDF Status channel into events itself, wrongly when
     * bits above the 16 trigger bits are set (shifted or none at all:
     * tests/test_convert_trigger.c); EDFlib's path reads it as it is */
    if (!rc && job->ev.mode && biosig_get_filetype(h) == BDF)
        rc = fail(job, "--events-as on a BDF file: BioSig 2.5 mis-reads the Status channel's "
                       "events; use convert edf --events-from status (or annotations)");
    if (!rc) {
        pthread_mutex_lock(&biosig_lock);
        rc = read_events(job, h);
        pthread_mutex_unlock(&biosig_lock);
    }
    rc = rc || read_samples(job, h, f.nch);
    /* --meta header: the patient id; no session, since BioSig fills a missing
     * start date (BrainVision has none) with the time of reading */
    snprintf(job->subject, sizeof job->subject, "%s", h->Patient.Id);
    for (char *e = job->subject + strlen(job->subject); e > job->subject && e[-1] == ' ';) *--e = 0;
    job->session[0] = '\0';
    ref_free(&f);
    bs_close(h);
    return rc;
}

/* ------------------------------------------------------------- options */

static int parse_args(ss_conv *c, int argc, char **argv, bs_job *job, ss__strlist *files) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int own = !strcmp(a, "--resample") || !strcmp(a, "--resample-quality");
        int rc = ss__sig_arg(c, argc, argv, &i, own, &job->ev, &job->meta, &job->physical, files);
        if (rc != SS__SIG_OWN) {
            if (rc) return rc;
        } else if (!strcmp(a, "--resample")) {
            char *end = NULL;
            const char *v = argv[++i];
            errno = 0;
            job->rs.rate = strtod(v, &end);
            if (errno || end == v || *end || !(job->rs.rate > 0) || job->rs.rate > 1e9)
                return ss__conv_usage_error(c, "--resample: '%s' is not a sample rate in Hz", v);
            job->physical = 1; /* resampled values are not digital codes */
        } else {
            if ((job->rs.converter = ss__sig_quality(argv[++i])) < 0)
                return ss__conv_usage_error(
                    c, "--resample-quality takes best, medium, fastest, zoh or linear, not '%s'",
                    argv[i]);
        }
    }
    if (files->n == 0) return ss__conv_usage_error(c, "no input files");
    /* BioSig 2.5 makes wrong events of a BDF's Status channel itself
     * (tests/test_convert_trigger.c); EDFlib's path reads it as it is */
    if (job->ev.from == SS_EV_FROM_STATUS)
        return ss__conv_usage_error(c, "convert biosig reads no BDF Status channel (BioSig 2.5 "
                                      "mis-reads it); use convert edf --events-from status");
    /* the codes are at the recording's rate; resampled they would be no codes */
    if (job->ev.from == SS_EV_FROM_CHANNEL && job->rs.rate)
        return ss__conv_usage_error(c,
                                    "--events-from channel:NAME cannot be combined with --resample");
    char err[256];
    if (ss__events_check(&job->ev, err, sizeof err)) return ss__conv_usage_error(c, "%s", err);
    if (ss__recmeta_load_csv(&job->meta, err, sizeof err)) return ss__conv_error(c, "%s", err);
    return 0;
}

/* ----------------------------------------------------------- reference */

static char *attr_text(const ss_store *st, const char *name) {
    ss_attr a;
    if (ss_attr_get(&a, st, name) != 0 || a.type != SS_ATTR_TEXT) return NULL;
    return strndup(a.data, (size_t)a.size);
}

static int attr_f64(const ss_store *st, const char *name, double *dst, uint32_t n) {
    ss_attr a;
    if (ss_attr_get(&a, st, name) != 0 || a.type != SS_F64 || a.size != 8 * (uint64_t)n) return 1;
    memcpy(dst, a.data, 8 * (size_t)n);
    return 0;
}

/* The reference from the store appended to (its signal.* attributes). */
static int ref_from_store(ss_conv *c, bs_job *job) {
    ss_store *st = NULL;
    ss_field f;
    uint32_t fi;
    bs_ref *r = &job->ref;
    if (ss__conv_open_existing(c, &st)) return 1;
    if (!st) return 0;
    if (ss_field_index(&fi, st, "signal") || ss_field_info(&f, st, fi) || f.ndim != 1 ||
        f.dims[0] > BS_MAXCH) {
        ss_close(st);
        return 0; /* not a signal store: the framework's schema check says so */
    }
    r->nch = (uint32_t)f.dims[0];
    r->dtype = f.dtype;
    r->labels = attr_text(st, "signal.labels");
    r->units = attr_text(st, "signal.units");
    r->gain = calloc(r->nch, sizeof(double));
    r->offset = calloc(r->nch, sizeof(double));
    int bad = !r->labels || !r->units || !r->gain || !r->offset ||
              attr_f64(st, "signal.sample_rate", &r->rate, 1) ||
              (!job->physical && (attr_f64(st, "signal.gain", r->gain, r->nch) ||
                                  attr_f64(st, "signal.offset", r->offset, r->nch)));
    if (ss__events_load(&job->ev, st) || ss__recmeta_load_store(&job->meta, st)) bad = 1;
    ss_close(st);
    if (bad) return ss__conv_error(c, "%s: missing signal.* attributes", ss__conv_opts(c)->output);
    if (job->rs.rate && job->rs.rate != r->rate)
        return ss__conv_error(c, "--resample %g differs from the store's rate %g Hz", job->rs.rate,
                              r->rate);
    r->have = 1;
    return 0;
}

/* The first readable recording's header is the reference. */
static int ref_from_file(bs_job *job, const char *path) {
    HDRTYPE *h = bs_open(job, path);
    if (!h) return 1;
    int rc = channels_of(job, h, &job->ref);
    bs_close(h);
    if (rc) return ref_free(&job->ref), 1;
    if (job->rs.rate) job->ref.rate = job->rs.rate;
    job->ref.have = 1;
    return 0;
}

static int set_attrs(ss_conv *c, const bs_job *job) {
    const bs_ref *r = &job->ref;
    const char *mode = job->physical ? "f32" : "digital";
    if (ss__conv_set_attr(c, "signal.labels", SS_ATTR_TEXT, r->labels, strlen(r->labels)) ||
        ss__conv_set_attr(c, "signal.units", SS_ATTR_TEXT, r->units, strlen(r->units)) ||
        ss__conv_set_attr(c, "signal.sample_rate", SS_F64, &r->rate, 8) ||
        ss__conv_set_attr(c, "signal.physical", SS_ATTR_TEXT, mode, strlen(mode)))
        return 1;
    if (!job->physical && (ss__conv_set_attr(c, "signal.gain", SS_F64, r->gain, 8 * r->nch) ||
                           ss__conv_set_attr(c, "signal.offset", SS_F64, r->offset, 8 * r->nch)))
        return 1;
    if (!job->rs.rate) return 0;
    const char *q = ss__sig_quality_name(job->rs.converter);
    return ss__conv_set_attr(c, "signal.resample_converter", SS_ATTR_TEXT, q, strlen(q));
}

/* ------------------------------------------------------------- running */

/* --events-as windows: one example per event whose window lies inside. */
static int append_windows(ss_conv *c, bs_job *job, const bs_job *s, uint32_t i, uint64_t *skip) {
    ss_events *e = &job->ev;
    uint64_t W = ss__events_window(e, job->ref.rate);
    size_t row = (size_t)job->ref.nch * ss_dtype_size(job->physical ? SS_F32 : job->ref.dtype);
    for (size_t k = 0; k < e->nev; k++) {
        int64_t a = ss__events_window_start(e, k, job->ref.rate), onset = e->ev[k].onset;
        if (a < 0 || (uint64_t)a + W > s->T) {
            e->outside++;
            continue;
        }
        if (*skip) {
            (*skip)--;
            continue;
        }
        ss_value v[3 + SS_RECMETA_FIELDS] = {
            {(const char *)s->data + (size_t)a * row, W}, {&e->ev[k].cls, 1}, {&onset, 1}};
        for (int j = 0; j < SS_RECMETA_FIELDS; j++) v[3 + j] = (ss_value){&job->meta.ids[j], 1};
        if (ss__conv_append(c, v, i, e->ev[k].number)) return 1;
    }
    return 0;
}

/* In input order: report file i (decoded into slot s, `bad` when that
 * failed) or append it; 1 = stop. Events and metadata are numbered here, in
 * input order, so ids never depend on the thread count. */
static int emit(ss_conv *c, bs_job *job, const bs_job *s, int bad, uint32_t i, const char *path,
                uint64_t *skip) {
    char err[256];
    const uint32_t *lab = NULL;
    if (bad) return ss__conv_bad(c, path, 0, "%s", s->err);
    if (job->meta.on && ss__recmeta_place(&job->meta, path, s->subject, s->session, err,
                                          sizeof err))
        return ss__conv_bad(c, path, 0, "%s", err);
    /* classes are numbered in input order, skipped (resumed) files too */
    if (job->ev.mode && (job->ev.from == SS_EV_FROM_CHANNEL
                             ? ss__events_codes(&job->ev, s->codes, s->T, err, sizeof err)
                             : ss__events_read(&job->ev, s->annot, s->annot_len, job->ref.rate,
                                               s->T,
                                               err, sizeof err)))
        return ss__conv_bad(c, path, 0, "%s", err);
    if (job->ev.mode == SS_EV_WINDOWS) {
        if (append_windows(c, job, s, i, skip)) return 1;
    } else if (*skip) {
        (*skip)--;
        return 0;
    } else {
        if (job->ev.mode == SS_EV_SAMPLES && !(lab = ss__events_samples(&job->ev, s->T)))
            return ss__conv_error(c, "out of memory");
        ss_value v[3 + SS_RECMETA_FIELDS] = {
            {s->data, s->T}, {s->annot, s->annot_len}, {lab, s->T}};
        int nf = job->ev.mode ? 3 : 2; /* the meta fields follow */
        for (int j = 0; j < SS_RECMETA_FIELDS; j++) v[nf + j] = (ss_value){&job->meta.ids[j], 1};
        if (ss__conv_append(c, v, i, 1)) return 1;
    }
    ss__conv_progress(c, ss__conv_file_size(path));
    return 0;
}

static void slot_free(bs_job *s) {
    free(s->dbuf);
    free(s->tbuf);
    free(s->codes);
    free(s->data);
    free(s->fbuf);
    free(s->rbuf);
    free(s->annot);
}

/* BioSig's blocks ([W][T] doubles, 4 times a recording's i16 samples), one
 * per decoding thread rather than one per slot: a decoder borrows one for
 * its sread() and gives it back, so the blocks are faulted in once and the
 * peak memory is what BioSig's own blocks took. */
typedef struct bs_block {
    double *p;
    size_t cap;
    int busy;
} bs_block;

/* ss__conv_parallel_ordered()'s callbacks: the run and its inputs. */
typedef struct bs_run {
    ss_conv *c;
    bs_job *job;
    const ss__strlist *files;
    const char *const *crash; /* per input: why BioSig crashed on it (probe_all), else NULL */
    uint64_t skip;
    pthread_mutex_t lock; /* over blocks */
    bs_block *blocks;     /* as many as decoding threads */
    int nblocks;
} bs_run;

static bs_block *block_take(bs_run *r) {
    bs_block *b = NULL;
    pthread_mutex_lock(&r->lock);
    for (int k = 0; k < r->nblocks && !b; k++)
        if (!r->blocks[k].busy) b = &r->blocks[k];
    if (b) b->busy = 1;
    pthread_mutex_unlock(&r->lock);
    return b; /* never NULL: no more decoders than blocks */
}

static void decode_cb(void *ctx, void *slot, uint64_t i) {
    bs_run *r = ctx;
    bs_job *s = slot;
    if (r->crash[i]) { /* never opened in this process */
        snprintf(s->err, sizeof s->err, "%s", r->crash[i]);
        s->bad = 1;
        return;
    }
    bs_block *b = block_take(r);
    s->block = b->p, s->block_cap = b->cap;
    s->bad = bs_decode(s, r->files->v[i]);
    b->p = s->block, b->cap = s->block_cap;
    s->block = NULL, s->block_cap = 0;
    pthread_mutex_lock(&r->lock);
    b->busy = 0;
    pthread_mutex_unlock(&r->lock);
}

static int emit_cb(void *ctx, void *slot, uint64_t i) {
    bs_run *r = ctx;
    const bs_job *s = slot;
    return emit(r->c, r->job, s, s->bad, (uint32_t)i, r->files->v[i], &r->skip);
}

/* Decode recordings in parallel (--threads; each slot its own buffers),
 * append them in input order on this thread while the next ones decode. */
static int convert_all(ss_conv *c, bs_job *job, const ss__strlist *files, const char *const *crash,
                       uint64_t skip) {
    int nthreads = ss__conv_opts(c)->threads;
    if (nthreads < 1) nthreads = 1;
    if ((uint32_t)nthreads > files->n) nthreads = (int)(files->n ? files->n : 1);
    int nslots = ss__conv_ordered_slots(nthreads);
    bs_job *slots = calloc((size_t)nslots, sizeof *slots);
    if (!slots) return ss__conv_error(c, "out of memory");
    for (int t = 0; t < nslots; t++) { /* the run's settings, buffers of its own */
        slots[t].physical = job->physical;
        slots[t].rs = job->rs;
        slots[t].ref = job->ref;         /* shared, read-only while decoding */
        slots[t].ev.mode = job->ev.mode; /* the mode and the channel: bs_decode() refuses BDF */
        slots[t].ev.from = job->ev.from;
        slots[t].ev.from_channel = job->ev.from_channel; /* borrowed */
    }
    bs_run run = {c, job, files, crash, skip, PTHREAD_MUTEX_INITIALIZER, NULL, nthreads};
    if (!(run.blocks = calloc((size_t)nthreads, sizeof *run.blocks))) {
        free(slots);
        return ss__conv_error(c, "out of memory");
    }
    int fatal = ss__conv_parallel_ordered(&run, slots, sizeof *slots, nthreads, files->n, decode_cb,
                                          emit_cb);
    for (int t = 0; t < nslots; t++) slot_free(&slots[t]);
    for (int t = 0; t < nthreads; t++) free(run.blocks[t].p);
    free(run.blocks);
    free(slots);
    return fatal;
}

/* -------------------------------------------------------------- probe */

/* BioSig 2.5 crashes on damaged headers that bs_guard() does not know of
 * (its readers of the other formats among them). So before anything is
 * decoded each input is opened and closed once in a child process
 * (ordered.h's decoder processes, or one fork for a single input): an
 * input whose process dies there is reported as bad, naming the file, and
 * never opened by this process. Only while the process is single-threaded
 * (ordered.h); otherwise nothing is probed. */
typedef struct bs_probe {
    int physical;
    uint64_t from; /* the first input of this round */
    const ss__strlist *files;
    char **crash; /* per input: why its process died, else NULL */
} bs_probe;

static void probe_cb(void *ctx, void *slot, uint64_t i) {
    bs_probe *p = ctx;
    bs_job job;
    memset(&job, 0, sizeof job);
    job.physical = p->physical;
    HDRTYPE *h = bs_open(&job, p->files->v[p->from + i]);
    if (h) bs_close(h);
    *(int *)slot = 1;
}

static int probe_emit(void *ctx, void *slot, uint64_t i) {
    (void)ctx, (void)slot, (void)i;
    return 0;
}

/* The one input p->from in a child; 0 when it lived, else 2 with *died. */
static int probe_one(bs_probe *p, ss_conv_proc_death *died) {
    int slot, status = -1;
    const char *die = getenv("SS_TEST_DECODER_DIE"); /* ordered.h's test hook */
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        if (die && *die && strtoull(die, NULL, 10) == 0) raise(SIGKILL);
        probe_cb(p, &slot, 0);
        _exit(0);
    }
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) continue;
    died->input = 0, died->status = status;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 2;
}

/* Probe every input; crash[i] set for those whose process died. 1 when
 * out of memory. */
static int probe_all(ss_conv *c, const bs_job *job, const ss__strlist *files, char **crash) {
    int nprocs = ss__conv_opts(c)->threads < 1 ? 1 : ss__conv_opts(c)->threads;
    int nslots = ss__conv_ordered_slots(nprocs);
    bs_probe p = {job->physical, 0, files, crash};
    int *slots = ss__conv_shared_alloc((size_t)nslots * sizeof(int));
    if (!slots) return 0; /* no shared memory: not probed */
    while (p.from < files->n && ss__conv_single_threaded()) {
        ss_conv_proc_death died;
        uint64_t n = files->n - p.from;
        int rc = n > 1 ? ss__conv_proc_ordered(&died, &p, slots, sizeof(int), nprocs, n, probe_cb,
                                               probe_emit)
                       : probe_one(&p, &died);
        if (rc != 2) break; /* all lived, or no process could start */
        char how[128];
        ss__conv_proc_describe(how, sizeof how, died.status);
        uint64_t i = p.from + died.input;
        if (asprintf(&crash[i], "BioSig crashed reading it (its probe process %s)", how) < 0) {
            crash[i] = NULL;
            ss__conv_shared_free(slots, (size_t)nslots * sizeof(int));
            return ss__conv_error(c, "out of memory");
        }
        p.from = i + 1;
    }
    ss__conv_shared_free(slots, (size_t)nslots * sizeof(int));
    return 0;
}

static int run_biosig(ss_conv *c, int argc, char **argv) {
    bs_job job;
    ss__strlist files = {0};
    uint64_t total = 0, skip = 0;
    int rc;

    memset(&job, 0, sizeof job);
    job.rs.converter = SRC_SINC_BEST_QUALITY;
    rc = parse_args(c, argc, argv, &job, &files);
    for (uint32_t i = 0; rc == 0 && i < files.n; i++) {
        ss__conv_add_source(c, files.v[i]);
        total += ss__conv_file_size(files.v[i]);
    }
    char **crash = rc == 0 ? calloc(files.n + 1, sizeof *crash) : NULL;
    if (rc == 0 && !crash) rc = ss__conv_error(c, "out of memory");
    if (rc == 0) rc = probe_all(c, &job, &files, crash);
    if (rc == 0 && (ss__conv_opts(c)->append || ss__conv_opts(c)->resume))
        rc = ref_from_store(c, &job);
    for (uint32_t i = 0; rc == 0 && !job.ref.have && i < files.n; i++)
        if (!crash[i]) ref_from_file(&job, files.v[i]);
    if (rc == 0 && !job.ref.have) {
        for (uint32_t i = 0; rc == 0 && i < files.n; i++) {
            if (!crash[i]) ref_from_file(&job, files.v[i]);
            rc = ss__conv_bad(c, files.v[i], 0, "%s", crash[i] ? crash[i] : job.err);
        }
        if (rc == 0) rc = ss__conv_error(c, "no readable recording among the inputs");
    }
    if (rc == 0) {
        ss_field f[3 + SS_RECMETA_FIELDS];
        memset(f, 0, sizeof f);
        f[0].name = "signal";
        f[0].dtype = job.physical ? SS_F32 : job.ref.dtype;
        f[0].sequence = 1;
        f[0].ndim = 1;
        f[0].dims[0] = job.ref.nch;
        f[1].name = "annotations";
        f[1].dtype = SS_U8;
        f[1].sequence = 1;
        f[2].name = "label";
        f[2].dtype = SS_U32;
        f[2].sequence = 1;
        ss_schema schema = {job.ev.mode ? 3u : 2u, f};
        if (job.ev.mode == SS_EV_WINDOWS) {
            f[1] = f[2];
            f[1].sequence = 0;
            memset(&f[2], 0, sizeof f[2]);
            f[2].name = "onset";
            f[2].dtype = SS_I64;
        }
        schema.nfields = ss__recmeta_fields(&job.meta, f, schema.nfields);
        rc = ss__conv_begin(c, &schema, &skip);
    }
    if (rc == 0) rc = set_attrs(c, &job);
    if (rc == 0) {
        ss__conv_set_total(c, total);
        rc = convert_all(c, &job, &files, (const char *const *)crash, skip);
    }
    if (rc == 0 && job.ev.mode) rc = ss__events_finish(c, &job.ev);
    if (rc == 0) rc = ss__recmeta_finish(c, &job.meta);
    free(job.dbuf);
    free(job.tbuf);
    free(job.codes);
    free(job.data);
    free(job.fbuf);
    free(job.rbuf);
    free(job.annot);
    ss__events_free(&job.ev);
    ss__recmeta_free(&job.meta);
    ref_free(&job.ref);
    for (uint32_t i = 0; crash && i < files.n; i++) free(crash[i]);
    free(crash);
    ss__strlist_free(&files);
    return rc;
}

const ss_converter ss__converter_biosig = {
    "biosig", "biosignals (GDF, BrainVision, EDF/BDF and more via BioSig), one per recording",
    run_biosig, usage_biosig};

#else /* !SS_HAVE_BIOSIG */

static void usage_biosig(FILE *out) {
    fprintf(out, "seqstore was built without BioSig: no `convert biosig`\n");
}

static int run_biosig(ss_conv *c, int argc, char **argv) {
    (void)argc, (void)argv;
    return ss__conv_error(c, "built without BioSig: `convert biosig` is unavailable (install "
                            "libbiosig-dev libsamplerate0-dev and rebuild)");
}

const ss_converter ss__converter_biosig = {"biosig", "biosignals via BioSig (not built in)",
                                          run_biosig, usage_biosig};
#endif
