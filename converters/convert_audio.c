/* SPDX-License-Identifier: BSD-2-Clause */
/* convert_audio.c - `seqstore convert audio`: sound files (WAV, FLAC, Ogg
 * Vorbis/Opus, AIFF and whatever else libsndfile reads), one example per file.
 *
 * Fields: signal  sequence [T][C], time-major (frames x channels):
 *           i16  16-bit PCM as stored (sf_readf_short; full scale 32768)
 *           i32  PCM left-justified in 32 bits (sf_readf_int; full scale 2^31)
 *           f32  floats in [-1, 1) (sf_readf_float)
 *         The default is the first file's native width: i16 for 8/16-bit
 *         PCM, i32 for 24/32-bit PCM, f32 for float and lossy codecs.
 * plus the framework's `source`.
 * Attributes: signal.sample_rate f64[1] (Hz), signal.channels TEXT (the
 * channel layout, one name per line: "mono", "left", "right", ... from the
 * file's channel map, else "mono" / "left\nright" / "ch1".."chN"),
 * signal.full_scale f64[1], and with --resample signal.resample_converter
 * TEXT (libsamplerate's converter name) and signal.resampled_from TEXT (the
 * distinct source rates, one per line).
 * All files must have the same channel count; the same sample rate unless
 * --resample converts them all to one. */
#include "convert.h"
#include "strlist.h"
#include "ordered.h"

#ifdef SS_HAVE_SNDFILE
#include "resample.h"

#include <errno.h>
#include <pthread.h>
#include <samplerate.h>
#include <sndfile.h>
#include <stdlib.h>
#include <string.h>

#define AUDIO_CONV_BLOCK ((size_t)1 << 24) /* floats converted per call (int lengths) */

typedef struct audio_job {
    ss_dtype dtype;
    int dtype_given;
    ss_resample rs;
    int channels;
    double rate;
    char layout[1024];
    double rates_seen[16]; /* in input order (the main job's) */
    int nrates;
    double file_rate; /* the last decoded file's rate (a slot's) */
    int bad;          /* the slot's file is bad: message in err */
    uint64_t T;       /* its frames */
    char err[1024];
    /* reused buffers */
    void *data;
    size_t data_cap;
    void *fbuf;
    float *rbuf;
    size_t fcap, rcap;
} audio_job;

static void usage_audio(FILE *out) {
    fprintf(out, "usage: seqstore convert audio FILE... -o STORE [options]\n"
                 "  one example per file (WAV, FLAC, Ogg, AIFF... via libsndfile):\n"
                 "  field `signal` [T][channels], time-major\n"
                 "  --dtype i16|i32|f32  sample type (default: the first file's native width)\n"
                 "  --resample HZ        resample every file to HZ (libsamplerate); without it\n"
                 "                       all files must share one sample rate\n"
                 "  --resample-quality Q best|medium|fastest|zoh|linear (default best)\n"
                 "  --list FILE          read input paths from FILE, one per line\n");
}

static ss_dtype native_dtype(int format) {
    switch (format & SF_FORMAT_SUBMASK) {
    case SF_FORMAT_PCM_S8:
    case SF_FORMAT_PCM_U8:
    case SF_FORMAT_PCM_16:
        return SS_I16;
    case SF_FORMAT_PCM_24:
    case SF_FORMAT_PCM_32:
        return SS_I32;
    default:
        return SS_F32;
    }
}

static const char *map_name(int m) {
    static const char *names[] = {"invalid",
                                  "mono",
                                  "left",
                                  "right",
                                  "center",
                                  "front_left",
                                  "front_right",
                                  "front_center",
                                  "rear_center",
                                  "rear_left",
                                  "rear_right",
                                  "lfe",
                                  "front_left_of_center",
                                  "front_right_of_center",
                                  "side_left",
                                  "side_right",
                                  "top_center",
                                  "top_front_left",
                                  "top_front_right",
                                  "top_front_center",
                                  "top_rear_left",
                                  "top_rear_right",
                                  "top_rear_center",
                                  "ambisonic_b_w",
                                  "ambisonic_b_x",
                                  "ambisonic_b_y",
                                  "ambisonic_b_z"};
    return m >= 0 && m < (int)(sizeof names / sizeof names[0]) ? names[m] : "unknown";
}

/* The channel layout of an open file, one name per line, into out[cap]. */
static void layout_of(SNDFILE *sf, int channels, char *out, size_t cap) {
    int map[64];
    size_t n = 0;
    out[0] = '\0';
    if (channels <= 64 &&
        sf_command(sf, SFC_GET_CHANNEL_MAP_INFO, map, (int)(channels * sizeof(int))) == SF_TRUE) {
        for (int k = 0; k < channels && n < cap; k++)
            n += (size_t)snprintf(out + n, cap - n, "%s%s", k ? "\n" : "", map_name(map[k]));
        return;
    }
    if (channels == 1)
        snprintf(out, cap, "mono");
    else if (channels == 2)
        snprintf(out, cap, "left\nright");
    else
        for (int k = 0; k < channels && n < cap; k++)
            n += (size_t)snprintf(out + n, cap - n, "%sch%d", k ? "\n" : "", k + 1);
}

static int grow(void **buf, size_t *cap, size_t need) {
    if (need <= *cap) return 0;
    void *p = realloc(*buf, need);
    if (!p) return 1;
    *buf = p, *cap = need;
    return 0;
}

/* Frames to read first: the header's count (`hint`) plus one, to see the
 * end, but never more than a file of `bytes` bytes plausibly decodes to
 * (16 times its size), so that a header that lies allocates nothing big;
 * 65536 when the count is unknown (SF_COUNT_MAX, a FLAC stream's 0). */
static sf_count_t first_chunk(sf_count_t hint, uint64_t bytes, int C, size_t esz) {
    uint64_t most = bytes * 16 / ((uint64_t)C * esz);
    if (most < 65536) most = 65536;
    if (hint <= 0 || (uint64_t)hint >= most) return (sf_count_t)most;
    return hint + 1;
}

/* Read every frame of `sf` as `dtype` (F32 also for resampling) into *buf;
 * libsndfile's frame count can be wrong for some streams, so read to EOF,
 * in chunks that at most double what was read (see first_chunk()). */
static int read_frames(SNDFILE *sf, int C, ss_dtype dtype, void **buf, size_t *cap, sf_count_t hint,
                       uint64_t bytes, uint64_t *T) {
    size_t esz = dtype == SS_I16 ? 2 : 4;
    sf_count_t got = 0, chunk = first_chunk(hint, bytes, C, esz);
    for (;;) {
        if (grow(buf, cap, ((size_t)got + (size_t)chunk) * (size_t)C * esz + 1)) return 1;
        char *at = (char *)*buf + (size_t)got * (size_t)C * esz;
        sf_count_t n = dtype == SS_I16   ? sf_readf_short(sf, (short *)at, chunk)
                       : dtype == SS_I32 ? sf_readf_int(sf, (int *)at, chunk)
                                         : sf_readf_float(sf, (float *)at, chunk);
        if (n <= 0) break;
        got += n;
        if (n < chunk) break;
        chunk = got < 65536 ? 65536 : got;
    }
    *T = (uint64_t)got;
    return 0;
}

/* A FLAC header's sample count is exact (STREAMINFO's total samples; 0 for
 * unknown, which libsndfile reports as SF_COUNT_MAX): fewer frames in the
 * file is a cut file or a header that lies. Other formats' counts are
 * libsndfile's own (corrected from the file size, or estimated). 1 = bad
 * (message in err). */
static int frames_missing(const SF_INFO *info, uint64_t T, char *err, size_t errlen) {
    if ((info->format & SF_FORMAT_TYPEMASK) != SF_FORMAT_FLAC || info->frames <= 0 ||
        info->frames == SF_COUNT_MAX || (uint64_t)info->frames <= T)
        return 0;
    snprintf(err, errlen,
             "the FLAC header promises %lld frames and the file holds %llu (cut short, or a "
             "wrong header)",
             (long long)info->frames, (unsigned long long)T);
    return 1;
}

static void note_rate(audio_job *job, double r) {
    for (int i = 0; i < job->nrates; i++)
        if (job->rates_seen[i] == r) return;
    if (job->nrates < 16) job->rates_seen[job->nrates++] = r;
}

/* libsndfile corrects a header whose sizes promise more than the file holds
 * (a WAV cut short, or never finalised) and says so only in its log, e.g.
 * "data : 16000 (should be 956)": that is a broken file, not a shorter
 * recording. 1 = bad (message in err). */
static int header_truncated(SNDFILE *sf, char *err, size_t errlen) {
    static _Thread_local char log[16384];
    log[0] = '\0';
    sf_command(sf, SFC_GET_LOG_INFO, log, sizeof log);
    for (const char *p = log; (p = strstr(p, "(should be ")) != NULL; p++) {
        const char *line = p, *colon;
        while (line > log && line[-1] != '\n') line--;
        colon = memchr(line, ':', (size_t)(p - line));
        unsigned long long said = colon ? strtoull(colon + 1, NULL, 10) : 0,
                           real = strtoull(p + 11, NULL, 10);
        if (said > real) {
            const char *e = strchr(p, ')');
            return snprintf(err, errlen,
                            "truncated (or never finalised): the header promises more than the "
                            "file holds (libsndfile: '%.*s')",
                            (int)(e ? e + 1 - line : p - line), line),
                   1;
        }
    }
    return 0;
}

/* sf_open and its error message, serialized across the decoding threads */
static pthread_mutex_t sndfile_open_lock = PTHREAD_MUTEX_INITIALIZER;

/* Decode one file into job->data; *T frames. 1 = bad (message in err). */
static int audio_decode(audio_job *job, const char *path, uint64_t *T, char *err, size_t errlen) {
    SF_INFO info;
    SNDFILE *sf;
    memset(&info, 0, sizeof info);
    /* sf_strerror(NULL) is libsndfile's one global error: keep it with its open */
    pthread_mutex_lock(&sndfile_open_lock);
    sf = sf_open(path, SFM_READ, &info);
    if (!sf) snprintf(err, errlen, "libsndfile: %s", sf_strerror(NULL));
    pthread_mutex_unlock(&sndfile_open_lock);
    if (!sf) return 1;
    int rc = 0;
    if (header_truncated(sf, err, errlen)) {
        rc = 1;
    } else if (info.channels != job->channels) {
        rc = snprintf(err, errlen, "%d channels, the store has %d", info.channels, job->channels);
    } else if (!job->rs.rate && info.samplerate != job->rate) {
        rc = snprintf(err, errlen,
                      "sample rate %d Hz differs from the store's %g Hz (use --resample HZ)",
                      info.samplerate, job->rate);
    } else if (!job->dtype_given && job->dtype == SS_I16 && native_dtype(info.format) != SS_I16) {
        rc = snprintf(err, errlen,
                      "samples wider than 16 bits cannot join an i16 store without "
                      "loss (use --dtype i32 or f32)");
    }
    if (rc) {
        sf_close(sf);
        return 1;
    }
    uint64_t bytes = ss__conv_file_size(path);
    if (!job->rs.rate || info.samplerate == job->rs.rate) {
        if (read_frames(sf, info.channels, job->dtype, &job->data, &job->data_cap, info.frames,
                        bytes, T))
            rc = snprintf(err, errlen, "out of memory");
        else if (sf_error(sf))
            rc = snprintf(err, errlen, "libsndfile: %s", sf_strerror(sf));
        else if (*T == 0)
            rc = snprintf(err, errlen, "no audio frames");
        else
            rc = frames_missing(&info, *T, err, errlen);
        job->file_rate = info.samplerate;
        sf_close(sf);
        return rc != 0;
    }
    uint64_t inT = 0, outT = 0;
    if (read_frames(sf, info.channels, SS_F32, (void **)&job->fbuf, &job->fcap, info.frames, bytes,
                    &inT))
        rc = snprintf(err, errlen, "out of memory");
    else if (sf_error(sf))
        rc = snprintf(err, errlen, "libsndfile: %s", sf_strerror(sf));
    else if (inT == 0)
        rc = snprintf(err, errlen, "no audio frames");
    else
        rc = frames_missing(&info, inT, err, errlen);
    sf_close(sf);
    if (rc) return 1;
    job->file_rate = info.samplerate;
    size_t fl = job->rcap / sizeof(float);
    if (ss__sig_resample((const float *)job->fbuf, inT, (uint32_t)info.channels, info.samplerate,
                         job->rs.rate, job->rs.converter, &job->rbuf, &fl, &outT, err, errlen))
        return 1;
    job->rcap = fl * sizeof(float);
    size_t n = (size_t)outT * (size_t)info.channels;
    if (grow(&job->data, &job->data_cap, n * 4 + 1))
        return snprintf(err, errlen, "out of memory"), 1;
    /* libsndfile's scaling: full scale 32768 / 2^31, clipped */
    for (size_t i = 0; i < n; i += AUDIO_CONV_BLOCK) {
        int len = (int)(n - i < AUDIO_CONV_BLOCK ? n - i : AUDIO_CONV_BLOCK);
        if (job->dtype == SS_F32)
            memcpy((float *)job->data + i, job->rbuf + i, (size_t)len * 4);
        else if (job->dtype == SS_I16)
            src_float_to_short_array(job->rbuf + i, (short *)job->data + i, len);
        else
            src_float_to_int_array(job->rbuf + i, (int *)job->data + i, len);
    }
    *T = outT;
    return 0;
}

/* ------------------------------------------------------------- options */

/* Parse --resample HZ / --resample-quality Q (shared form with edf/biosig). */
static int parse_rate(ss_conv *c, const char *text, double *out) {
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || !(v > 0) || v > 1e9)
        return ss__conv_usage_error(c, "--resample: '%s' is not a sample rate in Hz", text);
    *out = v;
    return 0;
}

static int parse_args(ss_conv *c, int argc, char **argv, audio_job *job, ss__strlist *files) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_value = !strcmp(a, "--dtype") || !strcmp(a, "--resample") ||
                        !strcmp(a, "--resample-quality") || !strcmp(a, "--list");
        if (has_value && i + 1 >= argc) return ss__conv_usage_error(c, "%s needs a value", a);
        if (!strcmp(a, "--dtype")) {
            const char *v = argv[++i];
            job->dtype_given = 1;
            if (!strcmp(v, "i16"))
                job->dtype = SS_I16;
            else if (!strcmp(v, "i32"))
                job->dtype = SS_I32;
            else if (!strcmp(v, "f32"))
                job->dtype = SS_F32;
            else
                return ss__conv_usage_error(c, "--dtype takes i16, i32 or f32, not '%s'", v);
        } else if (!strcmp(a, "--resample")) {
            if (parse_rate(c, argv[++i], &job->rs.rate)) return 2;
        } else if (!strcmp(a, "--resample-quality")) {
            if ((job->rs.converter = ss__sig_quality(argv[++i])) < 0)
                return ss__conv_usage_error(
                    c, "--resample-quality takes best, medium, fastest, zoh or linear, not '%s'",
                    argv[i]);
        } else if (!strcmp(a, "--list")) {
            if (ss__conv_read_list(c, files, argv[++i])) return 1;
        } else if (a[0] == '-' && a[1] != '\0') {
            return ss__conv_usage_error(c, "unknown option '%s'", a);
        } else if (ss__strlist_add(files, a)) {
            return ss__conv_error(c, "out of memory");
        }
    }
    if (files->n == 0) return ss__conv_usage_error(c, "no input files");
    return 0;
}

/* ----------------------------------------------------------- reference */

/* Channels, rate, layout and dtype from the store being appended to. */
static int ref_from_store(ss_conv *c, audio_job *job, int *have) {
    ss_store *st = NULL;
    ss_attr a;
    ss_field f;
    uint32_t fi;
    if (ss__conv_open_existing(c, &st)) return 1;
    if (!st) return 0;
    if (ss_field_index(&fi, st, "signal") == 0 && ss_field_info(&f, st, fi) == 0 && f.ndim == 1 &&
        ss_attr_get(&a, st, "signal.sample_rate") == 0 && a.type == SS_F64 && a.size == 8) {
        memcpy(&job->rate, a.data, 8);
        job->channels = (int)f.dims[0];
        if (!job->dtype_given) job->dtype = f.dtype, job->dtype_given = 1;
        if (ss_attr_get(&a, st, "signal.channels") == 0 && a.type == SS_ATTR_TEXT)
            snprintf(job->layout, sizeof job->layout, "%.*s", (int)a.size, (const char *)a.data);
        *have = 1;
    }
    ss_close(st);
    return 0;
}

/* The first readable file sets channels, rate, layout and the default dtype. */
static int ref_from_file(audio_job *job, const char *path, char *err, size_t errlen) {
    SF_INFO info;
    SNDFILE *sf;
    memset(&info, 0, sizeof info);
    /* sf_strerror(NULL) is libsndfile's one global error: keep it with its open */
    pthread_mutex_lock(&sndfile_open_lock);
    sf = sf_open(path, SFM_READ, &info);
    if (!sf) snprintf(err, errlen, "libsndfile: %s", sf_strerror(NULL));
    pthread_mutex_unlock(&sndfile_open_lock);
    if (!sf) return 1;
    job->channels = info.channels;
    job->rate = job->rs.rate ? job->rs.rate : info.samplerate;
    if (!job->dtype_given) job->dtype = native_dtype(info.format);
    layout_of(sf, info.channels, job->layout, sizeof job->layout);
    sf_close(sf);
    return 0;
}

static int set_attrs(ss_conv *c, const audio_job *job) {
    double fs = job->dtype == SS_I16 ? 32768.0 : job->dtype == SS_I32 ? 2147483648.0 : 1.0;
    if (ss__conv_set_attr(c, "signal.sample_rate", SS_F64, &job->rate, 8) ||
        ss__conv_set_attr(c, "signal.full_scale", SS_F64, &fs, 8) ||
        ss__conv_set_attr(c, "signal.channels", SS_ATTR_TEXT, job->layout, strlen(job->layout)))
        return 1;
    if (!job->rs.rate) return 0;
    const char *q = ss__sig_quality_name(job->rs.converter);
    char from[512];
    size_t n = 0;
    from[0] = '\0';
    for (int i = 0; i < job->nrates && n < sizeof from; i++)
        n += (size_t)snprintf(from + n, sizeof from - n, "%s%g", i ? "\n" : "", job->rates_seen[i]);
    return ss__conv_set_attr(c, "signal.resample_converter", SS_ATTR_TEXT, q, strlen(q)) ||
           ss__conv_set_attr(c, "signal.resampled_from", SS_ATTR_TEXT, from, strlen(from));
}

/* ------------------------------------------------------------- running */

/* Append slot s's decoded file i (in input order); 1 = stop. */
static int emit(ss_conv *c, audio_job *job, audio_job *s, uint32_t i, const char *path,
                uint64_t *skip) {
    if (s->bad) return ss__conv_bad(c, path, 0, "%s", s->err);
    note_rate(job, s->file_rate);
    if (*skip) {
        (*skip)--;
        return 0;
    }
    ss_value v[1] = {{s->data, s->T}};
    if (ss__conv_append(c, v, i, 1)) return 1;
    ss__conv_progress(c, ss__conv_file_size(path));
    return 0;
}

static void slot_free(audio_job *s) {
    free(s->data);
    free(s->fbuf);
    free(s->rbuf);
}

/* ss__conv_parallel_ordered()'s callbacks: the run and its inputs. */
typedef struct audio_run {
    ss_conv *c;
    audio_job *job;
    const ss__strlist *files;
    uint64_t skip;
} audio_run;

static void decode_cb(void *ctx, void *slot, uint64_t i) {
    audio_run *r = ctx;
    audio_job *s = slot;
    s->err[0] = '\0';
    s->bad = audio_decode(s, r->files->v[i], &s->T, s->err, sizeof s->err);
}

static int emit_cb(void *ctx, void *slot, uint64_t i) {
    audio_run *r = ctx;
    return emit(r->c, r->job, slot, (uint32_t)i, r->files->v[i], &r->skip);
}

/* Decode files in parallel (--threads; each slot its own buffers) and
 * append them in input order on this thread while the next ones decode, so
 * any thread count writes the same store. */
static int convert_all(ss_conv *c, audio_job *job, const ss__strlist *files, uint64_t skip) {
    int nthreads = ss__conv_opts(c)->threads;
    if (nthreads < 1) nthreads = 1;
    if ((uint32_t)nthreads > files->n) nthreads = (int)(files->n ? files->n : 1);
    int nslots = ss__conv_ordered_slots(nthreads);
    audio_job *slots = calloc((size_t)nslots, sizeof *slots);
    if (!slots) return ss__conv_error(c, "out of memory");
    for (int t = 0; t < nslots; t++) { /* the run's settings, buffers of its own */
        slots[t].dtype = job->dtype, slots[t].dtype_given = job->dtype_given;
        slots[t].rs = job->rs, slots[t].channels = job->channels, slots[t].rate = job->rate;
    }
    audio_run run = {c, job, files, skip};
    int fatal = ss__conv_parallel_ordered(&run, slots, sizeof *slots, nthreads, files->n, decode_cb,
                                          emit_cb);
    for (int t = 0; t < nslots; t++) slot_free(&slots[t]);
    free(slots);
    return fatal;
}

static int run_audio(ss_conv *c, int argc, char **argv) {
    audio_job job;
    ss__strlist files = {0};
    uint64_t total = 0, skip = 0;
    int have = 0, rc;
    char err[1024];

    memset(&job, 0, sizeof job);
    job.rs.converter = SRC_SINC_BEST_QUALITY;
    rc = parse_args(c, argc, argv, &job, &files);
    for (uint32_t i = 0; rc == 0 && i < files.n; i++) {
        ss__conv_add_source(c, files.v[i]);
        total += ss__conv_file_size(files.v[i]);
    }
    if (rc == 0 && (ss__conv_opts(c)->append || ss__conv_opts(c)->resume))
        rc = ref_from_store(c, &job, &have);
    if (rc == 0 && have && job.rs.rate && job.rs.rate != job.rate)
        rc = ss__conv_error(c, "--resample %g differs from the store's rate %g Hz", job.rs.rate,
                            job.rate);
    for (uint32_t i = 0; rc == 0 && !have && i < files.n; i++)
        have = ref_from_file(&job, files.v[i], err, sizeof err) == 0;
    if (rc == 0 && !have) {
        for (uint32_t i = 0; rc == 0 && i < files.n; i++) {
            ref_from_file(&job, files.v[i], err, sizeof err);
            rc = ss__conv_bad(c, files.v[i], 0, "%s", err);
        }
        if (rc == 0) rc = ss__conv_error(c, "no readable audio file among the inputs");
    }
    if (rc == 0) {
        ss_field f;
        memset(&f, 0, sizeof f);
        f.name = "signal";
        f.dtype = job.dtype;
        f.sequence = 1;
        f.ndim = 1;
        f.dims[0] = (uint64_t)job.channels;
        ss_schema schema = {1, &f};
        rc = ss__conv_begin(c, &schema, &skip);
    }
    if (rc == 0) {
        ss__conv_set_total(c, total);
        rc = convert_all(c, &job, &files, skip);
    }
    /* the attributes name every rate seen, so they are set after the run */
    if (rc == 0) rc = set_attrs(c, &job);
    free(job.data);
    free(job.fbuf);
    free(job.rbuf);
    ss__strlist_free(&files);
    return rc;
}

const ss_converter ss__converter_audio = {
    "audio", "sound files (WAV, FLAC, Ogg... via libsndfile), one example per file", run_audio,
    usage_audio};

#else /* !SS_HAVE_SNDFILE */

static void usage_audio(FILE *out) {
    fprintf(out, "seqstore was built without libsndfile: no `convert audio`\n");
}

static int run_audio(ss_conv *c, int argc, char **argv) {
    (void)argc, (void)argv;
    return ss__conv_error(c, "built without libsndfile/libsamplerate: `convert audio` is "
                            "unavailable (install libsndfile1-dev libsamplerate0-dev and rebuild)");
}

const ss_converter ss__converter_audio = {"audio", "sound files via libsndfile (not built in)",
                                         run_audio, usage_audio};
#endif
