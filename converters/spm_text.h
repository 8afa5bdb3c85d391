/* SPDX-License-Identifier: BSD-2-Clause */
/* spm_text.h - `--tokenizer spm:MODEL` for the text engine (`convert text`,
 * `convert parallel`) and `convert jsonl`: a SentencePiece model's ids, its
 * special ids and its vocabulary as store attributes. */
#ifndef SS_SPM_TEXT_H
#define SS_SPM_TEXT_H

#include "spm.h"
#include "text.h"

/* Parse the value of --tokenizer: "spm:MODEL" sets *model (borrowed from
 * `value`). @return 0, or 2 (usage error printed). */
int ss__tx_spm_option(ss_conv *c, const char *value, const char **model);

/* Load MODEL for field `field`. @return 0, or 1 (error printed). */
int ss__tx_spm_load(ss_conv *c, ss_spm **out, const char *model);

/* ss__tx_prepare_tokens() for kind TX_SPM: bos/eos ids from the model (an error
 * if --bos/--eos is asked and the model has none), the smallest unsigned
 * dtype holding every id. @return 0, or 1 (printed; c may be NULL). */
int ss__tx_spm_prepare(ss_conv *c, tx_tok *t, const char *field);

/* The attributes of a TX_SPM field: `<field>.tokenizer` ("spm:" + the model's
 * file name), `<field>.vocab_size` (u64), `<field>.bos_id`, `.eos_id`,
 * `.eod_id`, `.unk_id`, `.pad_id` (i64, only those the model has), and the
 * pieces in id order, one per line, as text attribute `vocab_attr` (if not
 * NULL). @return 0, or 1 (printed). */
int ss__tx_spm_attrs(ss_conv *c, const tx_tok *t, const char *field, const char *vocab_attr,
                     const char *model);

/* Encode [s, s + n) and store the ids (with bos/eos if on) into out[m..] as
 * t->esize-byte elements, growing *out (capacity *cap bytes) as needed;
 * *m advances. @return 0, -1 on an encoding error (message in err), -2 out
 * of memory. Thread-safe. */
int ss__tx_spm_tokenize(const tx_tok *t, const uint8_t *s, size_t n, uint8_t **out, size_t *cap,
                        size_t *m, char *err, size_t errlen);

#endif
