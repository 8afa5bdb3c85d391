/* SPDX-License-Identifier: BSD-2-Clause */
/* resample.h - what the signal converters (audio, biosig, edf) share:
 * resampling through libsamplerate (`--resample HZ`, `--resample-quality Q`).
 *
 * Output length rule: a recording of T frames at rate R resampled to rate H
 * has exactly round(T * H / R) frames (half away from zero), whatever the
 * converter type; libsamplerate's own output is cut to that length, or, in
 * the rare case it falls short, extended by repeating its last frame. */
#ifndef SS_RESAMPLE_H
#define SS_RESAMPLE_H

#include <stddef.h>
#include <stdint.h>

/** Resampling settings of one conversion. */
typedef struct ss_resample {
    double rate;   /**< target rate in Hz; 0 = no resampling */
    int converter; /**< libsamplerate converter type (SRC_SINC_BEST_QUALITY...) */
} ss_resample;

/** Parse a quality name: best, medium, fastest, zoh, linear.
 *  @return the libsamplerate converter type, or -1 if unknown. */
int ss__sig_quality(const char *name);

/** libsamplerate's name of a converter type (for the store's attributes). */
const char *ss__sig_quality_name(int converter);

/** Frames after resampling T frames from `in_rate` to `out_rate` (see above). */
uint64_t ss__sig_out_frames(uint64_t T, double in_rate, double out_rate);

/** Resample `T` frames of `C` interleaved float channels ([T][C]) from
 *  `in_rate` to `out_rate` with converter type `converter` into *out
 *  (grown with realloc as needed; *cap is its size in floats).
 *  @param[out] out_T frames written (ss__sig_out_frames()).
 *  @return 0, or 1 with a message in err[errlen]. */
int ss__sig_resample(const float *in, uint64_t T, uint32_t C, double in_rate, double out_rate,
                     int converter, float **out, size_t *cap, uint64_t *out_T, char *err,
                     size_t errlen);

#endif /* SS_RESAMPLE_H */
