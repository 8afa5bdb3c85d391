/* SPDX-License-Identifier: BSD-2-Clause */
/* resample.c - resampling shared by the signal converters (see resample.h). */
#include "resample.h"

#ifdef SS_HAVE_SAMPLERATE

#include <math.h>
#include <samplerate.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    int type;
} qualities[] = {{"best", SRC_SINC_BEST_QUALITY},
                 {"medium", SRC_SINC_MEDIUM_QUALITY},
                 {"fastest", SRC_SINC_FASTEST},
                 {"zoh", SRC_ZERO_ORDER_HOLD},
                 {"linear", SRC_LINEAR}};

int ss__sig_quality(const char *name) {
    for (size_t i = 0; i < sizeof qualities / sizeof qualities[0]; i++)
        if (!strcmp(name, qualities[i].name)) return qualities[i].type;
    return -1;
}

const char *ss__sig_quality_name(int converter) {
    const char *n = src_get_name(converter);
    return n ? n : "unknown";
}

uint64_t ss__sig_out_frames(uint64_t T, double in_rate, double out_rate) {
    return (uint64_t)llround((double)T * out_rate / in_rate);
}

/* Feed libsamplerate in blocks so `int` frame counts never overflow. */
#define SIG_BLOCK (1L << 20)

int ss__sig_resample(const float *in, uint64_t T, uint32_t C, double in_rate, double out_rate,
                     int converter, float **out, size_t *cap, uint64_t *out_T, char *err,
                     size_t errlen) {
    uint64_t want = ss__sig_out_frames(T, in_rate, out_rate), got = 0, used = 0;
    double ratio = out_rate / in_rate;
    int e = 0;
    if (ratio < 1.0 / 256 || ratio > 256) {
        snprintf(err, errlen,
                 "cannot resample %g Hz to %g Hz: libsamplerate allows ratios "
                 "between 1/256 and 256",
                 in_rate, out_rate);
        return 1;
    }
    /* room for libsamplerate's overshoot past `want` (it may emit a few more) */
    size_t need = ((size_t)want + 64) * C + 1;
    if (need > *cap) {
        float *p = realloc(*out, need * sizeof *p);
        if (!p) return snprintf(err, errlen, "out of memory resampling"), 1;
        *out = p, *cap = need;
    }
    SRC_STATE *st = src_new(converter, (int)C, &e);
    if (!st) return snprintf(err, errlen, "libsamplerate: %s", src_strerror(e)), 1;
    for (;;) {
        SRC_DATA d;
        memset(&d, 0, sizeof d);
        uint64_t left_in = T - used, room = want + 64 - got;
        d.data_in = in + used * C;
        d.input_frames = (long)(left_in < SIG_BLOCK ? left_in : SIG_BLOCK);
        d.data_out = *out + got * C;
        d.output_frames = (long)(room < SIG_BLOCK ? room : SIG_BLOCK);
        d.end_of_input = left_in <= SIG_BLOCK;
        d.src_ratio = ratio;
        if ((e = src_process(st, &d)) != 0) {
            src_delete(st);
            return snprintf(err, errlen, "libsamplerate: %s", src_strerror(e)), 1;
        }
        used += (uint64_t)d.input_frames_used;
        got += (uint64_t)d.output_frames_gen;
        if (got >= want || (d.end_of_input && d.output_frames_gen == 0 &&
                            (uint64_t)d.input_frames_used == left_in))
            break;
    }
    src_delete(st);
    /* the length rule: cut, or hold the last frame */
    for (; got < want; got++)
        for (uint32_t k = 0; k < C; k++)
            (*out)[got * C + k] = got ? (*out)[(got - 1) * C + k] : 0.0f;
    *out_T = want;
    return 0;
}
#endif /* SS_HAVE_SAMPLERATE */
