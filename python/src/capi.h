/* SPDX-License-Identifier: BSD-2-Clause */
/* capi.h - the only place the Python module calls the C library.
 *
 * Every seqstore function the extension uses is called from exactly one
 * wrapper here (capi.c), so a change of a C signature (the order of
 * out-parameters, how a field is named) is mended in one file. The wrappers
 * keep the C return convention: 0 or a negative SS_E... code, the detail in
 * ss_error_message() (see pyss_raise()). */
#ifndef PYSS_CAPI_H
#define PYSS_CAPI_H

#include <seqstore.h>

/* store */
int capi_open(ss_store **out, const char *path, unsigned flags);
int capi_open_url(ss_store **out, const char *path, unsigned flags,
                  const ss_remote_options *opts);
void capi_close(ss_store *s);
uint64_t capi_count(const ss_store *s);
const ss_schema *capi_schema(const ss_store *s);
int capi_field_index(uint32_t *out, const ss_store *s, const char *name);
int capi_store_map(const void **base, uint64_t *size, int *fd, const ss_store *s);
int capi_get(ss_view *out, const ss_store *s, uint32_t field, uint64_t index);
int capi_views_stable(const ss_store *s);
int capi_lengths(uint64_t *out, const ss_store *s, uint32_t field, uint64_t first, uint64_t n);
int capi_lengths_view(const void **data, ss_dtype *dtype, uint64_t *count, const ss_store *s,
                      uint32_t field);
uint64_t capi_attr_count(const ss_store *s);
int capi_attr_at(ss_attr *out, const ss_store *s, uint64_t k);
size_t capi_dtype_size(ss_dtype d);
const char *capi_dtype_name(ss_dtype d);
int capi_dtype_parse(ss_dtype *out, const char *name);
int capi_verify(uint64_t *problems, const ss_store *s, ss_verify_fn report, void *ctx);
int capi_prefetch(const ss_store *s, const uint64_t *examples, size_t n);
const char *capi_error_message(void);
const char *capi_version(void);

/* writer */
int capi_writer_create(ss_writer **out, const char *path, const ss_schema *schema, int force);
int capi_writer_append(ss_writer *w, const ss_value *values);
int capi_writer_set_attr(ss_writer *w, const char *name, uint32_t type, const void *data,
                         size_t size);
int capi_writer_commit(ss_writer *w);
int capi_writer_finish(ss_writer *w);
uint64_t capi_writer_count(const ss_writer *w);
void capi_writer_free(ss_writer *w);

/* loader */
int capi_loader_open(ss_loader **out, const ss_store *s, const ss_loader_options *o);
void capi_loader_free(ss_loader *l);
int capi_loader_next(const ss_loader_batch **out, ss_loader *l);
int capi_loader_next_into(const ss_loader_batch **out, ss_loader *l, const ss_collate_buffers *b);
int capi_loader_release(ss_loader *l, const ss_loader_batch *b);
/* LM samples */
int capi_lm_create(ss_lm **out, const ss_store *s, uint32_t field, const ss_lm_options *o);
int capi_lm_save(const char *path, const char *field, const ss_lm_options *o);
void capi_lm_free(ss_lm *lm);
int capi_lm_get_info(ss_lm_info *out, const ss_lm *lm);
int capi_lm_get(const ss_lm_batch *out, const ss_lm *lm, const uint64_t *idx, uint64_t n);

/* blended loader */
int capi_blend_loader_open(ss_blend_loader **out, const ss_blend_loader_options *o);
void capi_blend_loader_free(ss_blend_loader *l);
int capi_blend_loader_next(const ss_blend_batch **out, ss_blend_loader *l);
uint64_t capi_blend_loader_length(const ss_blend_loader *l);
uint64_t capi_blend_loader_source_count(const ss_blend_loader *l, uint32_t source);
uint64_t capi_blend_loader_source_epochs(const ss_blend_loader *l, uint32_t source);
size_t capi_blend_loader_state_size(const ss_blend_loader *l);
int capi_blend_loader_state_save(void *buf, size_t cap, size_t *len, const ss_blend_loader *l);
int capi_blend_loader_state_load(ss_blend_loader *l, const void *buf, size_t len);
int capi_loader_set_epoch(ss_loader *l, uint64_t epoch);
uint64_t capi_loader_epoch(const ss_loader *l);
uint64_t capi_loader_batches(const ss_loader *l);
uint64_t capi_loader_position(const ss_loader *l);
size_t capi_loader_state_size(const ss_loader *l);
int capi_loader_state_save(const ss_loader *l, void *buf, size_t cap, size_t *len);
int capi_loader_state_load(ss_loader *l, const void *buf, size_t len);

/* transforms (a pipeline of built-ins) */
int capi_pipeline_create(ss_pipeline **out);
int capi_pipeline_add(ss_pipeline *p, const ss_transform *t);
void capi_pipeline_free(ss_pipeline *p);
int capi_transform_random_crop(ss_transform *out, uint32_t field, uint64_t max_length);
int capi_transform_gaussian_noise(ss_transform *out, uint32_t field, double sigma);
int capi_transform_token_mask(ss_transform *out, uint32_t field, double prob, int64_t mask_value,
                              double random_prob, double keep_prob, uint64_t vocab);
int capi_transform_token_drop(ss_transform *out, uint32_t field, double prob);
int capi_transform_standardize(ss_transform *out, uint32_t field, const double *mean,
                               const double *std, uint64_t channels);
int capi_transform_standardize_attr(ss_transform *out, const ss_store *s, uint32_t field,
                                    const char *prefix);
int capi_transform_label_map(ss_transform *out, uint32_t field, const int64_t *table, uint64_t n);

/* flat view, splits, folds, bucket indices */
uint64_t capi_flat_size(const ss_store *s, uint32_t field);
int capi_flat_locate(uint64_t *example, uint64_t *offset, const ss_store *s, uint32_t field,
                     uint64_t pos);
int capi_flat_read(void *buf, const ss_store *s, uint32_t field, uint64_t p, uint64_t q);
int capi_split_load(ss_selection **out, const ss_store *s, const char *name);
int capi_selection_all(ss_selection **out, uint64_t total);
int capi_selection_create(ss_selection **out, const ss_range *ranges, size_t n, uint64_t total);
int capi_kfold(ss_selection **train, ss_selection **valid, const ss_selection *sel, uint32_t k,
               uint32_t fold, int shuffle, uint64_t seed);
uint64_t capi_selection_count(const ss_selection *sel);
size_t capi_selection_range_count(const ss_selection *sel);
const ss_range *capi_selection_ranges(const ss_selection *sel);
void capi_selection_free(ss_selection *sel);
int capi_bucket_open(ss_bucket **out, const ss_store *s, const char *name);
void capi_bucket_free(ss_bucket *b);
uint64_t capi_bucket_size(const ss_bucket *b);
uint64_t capi_bucket_count(const ss_bucket *b);
const uint64_t *capi_bucket_permutation(const ss_bucket *b);
const uint64_t *capi_bucket_starts(const ss_bucket *b);

/* collator */
int capi_collator_create(ss_collator **out, const ss_store *s, const ss_collate_field *fields,
                         uint32_t n);
void capi_collator_free(ss_collator *c);
int capi_collate(ss_collated_batch *out, ss_collator *c, const ss_span *rows, size_t n,
                 const ss_collate_buffers *buffers);

/* window reader */
int capi_window_open(ss_window_reader **out, const ss_store *s, const ss_window_options *o);
void capi_window_free(ss_window_reader *r);
int capi_window_next(const ss_window_batch **out, ss_window_reader *r);
int capi_window_register(ss_window_reader *r, const ss_window_batch *b, const void *states);
int capi_window_set_epoch(ss_window_reader *r, uint64_t epoch);
int capi_window_info(ss_window_info *out, const ss_window_reader *r);
size_t capi_window_save_size(const ss_window_reader *r);
int capi_window_save(void *buf, size_t size, const ss_window_reader *r);
int capi_window_restore(ss_window_reader *r, const void *buf, size_t size);

#endif
