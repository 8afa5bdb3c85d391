/* SPDX-License-Identifier: BSD-2-Clause */
/* spm.h - SentencePiece subword models behind a C interface (internal to the
 * command line). The implementation (spm.cc) is the project's only C++; it is
 * compiled when CMake finds libsentencepiece-dev (SS_HAVE_SPM). Without it
 * ss__spm_load() fails with a message saying so, and nothing else is called. */
#ifndef SS_SPM_H
#define SS_SPM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A loaded SentencePiece model; immutable after loading, so one model is
 *  shared by every tokenizing thread. */
typedef struct ss_spm ss_spm;

#ifdef SS_HAVE_SPM
/** Load the model file at `path` (what spm_train writes as *.model).
 *  @param[out] out the model (free with ss__spm_free()), NULL on failure.
 *  @return 0, or -1 with a message in err. */
int ss__spm_load(ss_spm **out, const char *path, char *err, size_t errlen);
/** Free a model (NULL is fine). */
void ss__spm_free(ss_spm *m);
/** Number of pieces (ids are 0 .. size - 1). */
uint32_t ss__spm_vocab_size(const ss_spm *m);
/** The model's special ids: "bos", "eos", "unk", "pad", or "eod" (a
 *  user-defined piece "<eod>" if the model has one, else the eos id).
 *  @return the id, or -1 when the model has none. */
int64_t ss__spm_special(const ss_spm *m, const char *which);
/** The text of piece `id` (< ss__spm_vocab_size()), valid as long as the model;
 *  its length in *len. */
const char *ss__spm_piece(const ss_spm *m, uint32_t id, size_t *len);
/** Encode the UTF-8 text [text, text + len) exactly as `spm_encode
 *  --output_format=id` encodes one line. Thread-safe. @return the ids, in
 *  storage of the calling thread valid until its next call, with their number
 *  in *n; or NULL with a message in err. */
const int *ss__spm_encode(const ss_spm *m, const char *text, size_t len, size_t *n, char *err,
                          size_t errlen);
#else
#include <stdio.h>
static inline int ss__spm_load(ss_spm **out, const char *path, char *err, size_t errlen) {
    (void)path;
    *out = NULL;
    snprintf(err, errlen, "this seqstore was built without SentencePiece (libsentencepiece-dev)");
    return -1;
}
static inline void ss__spm_free(ss_spm *m) {
    (void)m;
}
static inline uint32_t ss__spm_vocab_size(const ss_spm *m) {
    (void)m;
    return 0;
}
static inline int64_t ss__spm_special(const ss_spm *m, const char *which) {
    (void)m;
    (void)which;
    return -1;
}
static inline const char *ss__spm_piece(const ss_spm *m, uint32_t id, size_t *len) {
    (void)m;
    (void)id;
    *len = 0;
    return "";
}
static inline const int *ss__spm_encode(const ss_spm *m, const char *text, size_t len, size_t *n,
                                        char *err, size_t errlen) {
    (void)m;
    (void)text;
    (void)len;
    *n = 0;
    snprintf(err, errlen, "built without SentencePiece");
    return NULL;
}
#endif

#ifdef __cplusplus
}
#endif
#endif
