/* SPDX-License-Identifier: BSD-2-Clause */
/* capi.c - one wrapper per C library call (see capi.h). */
#include "capi.h"

int capi_open(ss_store **out, const char *path, unsigned flags) {
    return ss_open(out, path, flags);
}
int capi_open_url(ss_store **out, const char *path, unsigned flags,
                  const ss_remote_options *opts) {
    return ss_is_url(path) ? ss_open_url(out, path, flags, opts) : ss_open(out, path, flags);
}
void capi_close(ss_store *s) {
    ss_close(s);
}
uint64_t capi_count(const ss_store *s) {
    return ss_count(s);
}
const ss_schema *capi_schema(const ss_store *s) {
    return ss_store_schema(s);
}
int capi_field_index(uint32_t *out, const ss_store *s, const char *name) {
    return ss_field_index(out, s, name);
}
int capi_store_map(const void **base, uint64_t *size, int *fd, const ss_store *s) {
    return ss_store_map(base, size, fd, s);
}
int capi_get(ss_view *out, const ss_store *s, uint32_t field, uint64_t index) {
    return ss_get(out, s, field, index);
}
int capi_views_stable(const ss_store *s) {
    return ss_views_stable(s);
}
int capi_lengths(uint64_t *out, const ss_store *s, uint32_t field, uint64_t first, uint64_t n) {
    return ss_lengths(out, s, field, first, n);
}
int capi_lengths_view(const void **data, ss_dtype *dtype, uint64_t *count, const ss_store *s,
                      uint32_t field) {
    return ss_lengths_view(data, dtype, count, s, field);
}
uint64_t capi_attr_count(const ss_store *s) {
    return ss_attr_count(s);
}
int capi_attr_at(ss_attr *out, const ss_store *s, uint64_t k) {
    return ss_attr_at(out, s, k);
}
size_t capi_dtype_size(ss_dtype d) {
    return ss_dtype_size(d);
}
const char *capi_dtype_name(ss_dtype d) {
    return ss_dtype_name(d);
}
int capi_dtype_parse(ss_dtype *out, const char *name) {
    return ss_dtype_parse(out, name);
}
int capi_verify(uint64_t *problems, const ss_store *s, ss_verify_fn report, void *ctx) {
    return ss_verify(problems, s, report, ctx);
}
int capi_prefetch(const ss_store *s, const uint64_t *examples, size_t n) {
    return ss_prefetch(s, examples, n);
}
const char *capi_error_message(void) {
    return ss_error_message();
}
const char *capi_version(void) {
    return ss_version();
}

int capi_writer_create(ss_writer **out, const char *path, const ss_schema *schema, int force) {
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.flags = force ? SS_WRITE_FORCE : 0;
    return ss_writer_create(out, path, schema, &o);
}
int capi_writer_append(ss_writer *w, const ss_value *values) {
    return ss_writer_append(w, values);
}
int capi_writer_set_attr(ss_writer *w, const char *name, uint32_t type, const void *data,
                         size_t size) {
    return ss_writer_set_attr(w, name, type, data, size);
}
int capi_writer_commit(ss_writer *w) {
    return ss_writer_commit(w);
}
int capi_writer_finish(ss_writer *w) {
    return ss_writer_finish(w);
}
uint64_t capi_writer_count(const ss_writer *w) {
    return ss_writer_count(w);
}
void capi_writer_free(ss_writer *w) {
    ss_writer_free(w);
}

int capi_loader_open(ss_loader **out, const ss_store *s, const ss_loader_options *o) {
    return ss_loader_open(out, s, o);
}
void capi_loader_free(ss_loader *l) {
    ss_loader_free(l);
}
int capi_loader_next(const ss_loader_batch **out, ss_loader *l) {
    return ss_loader_next(out, l);
}
int capi_loader_next_into(const ss_loader_batch **out, ss_loader *l, const ss_collate_buffers *b) {
    return ss_loader_next_into(out, l, b);
}
int capi_loader_release(ss_loader *l, const ss_loader_batch *b) {
    return ss_loader_release(l, b);
}
int capi_blend_loader_open(ss_blend_loader **out, const ss_blend_loader_options *o) {
    return ss_blend_loader_open(out, o);
}
void capi_blend_loader_free(ss_blend_loader *l) {
    ss_blend_loader_free(l);
}
int capi_blend_loader_next(const ss_blend_batch **out, ss_blend_loader *l) {
    return ss_blend_loader_next(out, l);
}
uint64_t capi_blend_loader_length(const ss_blend_loader *l) {
    return ss_blend_loader_count(l);
}
uint64_t capi_blend_loader_source_count(const ss_blend_loader *l, uint32_t source) {
    return ss_blend_loader_source_count(l, source);
}
uint64_t capi_blend_loader_source_epochs(const ss_blend_loader *l, uint32_t source) {
    return ss_blend_loader_source_epoch(l, source);
}
size_t capi_blend_loader_state_size(const ss_blend_loader *l) {
    return ss_blend_loader_state_size(l);
}
int capi_blend_loader_state_save(void *buf, size_t cap, size_t *len, const ss_blend_loader *l) {
    return ss_blend_loader_state_save(buf, cap, len, l);
}
int capi_blend_loader_state_load(ss_blend_loader *l, const void *buf, size_t len) {
    return ss_blend_loader_state_load(l, buf, len);
}
int capi_loader_set_epoch(ss_loader *l, uint64_t epoch) {
    return ss_loader_set_epoch(l, epoch);
}
uint64_t capi_loader_epoch(const ss_loader *l) {
    return ss_loader_epoch(l);
}
uint64_t capi_loader_batches(const ss_loader *l) {
    return ss_loader_count(l);
}
uint64_t capi_loader_position(const ss_loader *l) {
    return ss_loader_position(l);
}
size_t capi_loader_state_size(const ss_loader *l) {
    return ss_loader_state_size(l);
}
int capi_loader_state_save(const ss_loader *l, void *buf, size_t cap, size_t *len) {
    return ss_loader_state_save(buf, cap, len, l);
}
int capi_loader_state_load(ss_loader *l, const void *buf, size_t len) {
    return ss_loader_state_load(l, buf, len);
}

int capi_window_open(ss_window_reader **out, const ss_store *s, const ss_window_options *o) {
    return ss_window_reader_open(out, s, o);
}
void capi_window_free(ss_window_reader *r) {
    ss_window_reader_free(r);
}
int capi_window_next(const ss_window_batch **out, ss_window_reader *r) {
    return ss_window_reader_next(out, r);
}
int capi_window_register(ss_window_reader *r, const ss_window_batch *b, const void *states) {
    return ss_window_reader_register(r, b, states);
}
int capi_window_set_epoch(ss_window_reader *r, uint64_t epoch) {
    return ss_window_reader_set_epoch(r, epoch);
}
int capi_window_info(ss_window_info *out, const ss_window_reader *r) {
    return ss_window_reader_info(out, r);
}
/* Saves always include the hidden states: resuming must carry them too. */
size_t capi_window_save_size(const ss_window_reader *r) {
    return ss_window_reader_state_size(r, SS_WINDOW_SAVE_STATES);
}
int capi_window_save(void *buf, size_t size, const ss_window_reader *r) {
    return ss_window_reader_state_save(buf, size, NULL, r, SS_WINDOW_SAVE_STATES);
}
int capi_window_restore(ss_window_reader *r, const void *buf, size_t size) {
    return ss_window_reader_state_load(r, buf, size);
}

/* One OpenMP thread: a collate_fn runs in DataLoader workers, which are the
 * parallelism there. */
int capi_collator_create(ss_collator **out, const ss_store *s, const ss_collate_field *fields,
                         uint32_t n) {
    ss_collator_options o = SS_COLLATOR_OPTIONS_INIT;
    o.threads = 1;
    return ss_collator_create(out, s, fields, n, &o);
}
void capi_collator_free(ss_collator *c) {
    ss_collator_free(c);
}
int capi_collate(ss_collated_batch *out, ss_collator *c, const ss_span *rows, size_t n,
                 const ss_collate_buffers *buffers) {
    return ss_collator_collate_into(out, c, rows, n, buffers);
}

int capi_pipeline_create(ss_pipeline **out) {
    return ss_pipeline_create(out);
}
int capi_pipeline_add(ss_pipeline *p, const ss_transform *t) {
    return ss_pipeline_add(p, t);
}
void capi_pipeline_free(ss_pipeline *p) {
    ss_pipeline_free(p);
}
int capi_transform_random_crop(ss_transform *out, uint32_t field, uint64_t max_length) {
    return ss_transform_random_crop(out, field, max_length);
}
int capi_transform_gaussian_noise(ss_transform *out, uint32_t field, double sigma) {
    return ss_transform_gaussian_noise(out, field, sigma);
}
int capi_transform_token_mask(ss_transform *out, uint32_t field, double prob, int64_t mask_value,
                              double random_prob, double keep_prob, uint64_t vocab) {
    ss_token_mask_options o = SS_TOKEN_MASK_OPTIONS_INIT;
    o.prob = prob;
    o.mask_value = mask_value;
    o.random_prob = random_prob;
    o.keep_prob = keep_prob;
    o.vocab = vocab;
    return ss_transform_token_mask(out, field, &o);
}
int capi_transform_token_drop(ss_transform *out, uint32_t field, double prob) {
    return ss_transform_token_drop(out, field, prob);
}
int capi_transform_standardize(ss_transform *out, uint32_t field, const double *mean,
                               const double *std, uint64_t channels) {
    return ss_transform_standardize(out, field, mean, std, channels);
}
int capi_transform_standardize_attr(ss_transform *out, const ss_store *s, uint32_t field,
                                    const char *prefix) {
    return ss_transform_standardize_attr(out, s, field, prefix);
}
int capi_transform_label_map(ss_transform *out, uint32_t field, const int64_t *table, uint64_t n) {
    return ss_transform_label_map(out, field, table, n);
}

uint64_t capi_flat_size(const ss_store *s, uint32_t field) {
    return ss_flat_size(s, field);
}
int capi_flat_locate(uint64_t *example, uint64_t *offset, const ss_store *s, uint32_t field,
                     uint64_t pos) {
    return ss_flat_locate(example, offset, s, field, pos);
}
int capi_flat_read(void *buf, const ss_store *s, uint32_t field, uint64_t p, uint64_t q) {
    return ss_flat_read(buf, s, field, p, q);
}
int capi_split_load(ss_selection **out, const ss_store *s, const char *name) {
    return ss_split_load(out, s, name);
}
int capi_selection_all(ss_selection **out, uint64_t total) {
    return ss_selection_all(out, total);
}
int capi_kfold(ss_selection **train, ss_selection **valid, const ss_selection *sel, uint32_t k,
               uint32_t fold, int shuffle, uint64_t seed) {
    ss_kfold_options o = SS_KFOLD_OPTIONS_INIT;
    o.shuffle = shuffle;
    o.seed = seed;
    return ss_selection_kfold(train, valid, sel, k, fold, &o);
}
int capi_selection_create(ss_selection **out, const ss_range *ranges, size_t n, uint64_t total) {
    return ss_selection_create(out, ranges, n, total);
}
uint64_t capi_selection_count(const ss_selection *sel) {
    return ss_selection_count(sel);
}
size_t capi_selection_range_count(const ss_selection *sel) {
    return ss_selection_range_count(sel);
}
const ss_range *capi_selection_ranges(const ss_selection *sel) {
    return ss_selection_ranges(sel);
}
void capi_selection_free(ss_selection *sel) {
    ss_selection_free(sel);
}
int capi_bucket_open(ss_bucket **out, const ss_store *s, const char *name) {
    return ss_bucket_open(out, s, name);
}
void capi_bucket_free(ss_bucket *b) {
    ss_bucket_free(b);
}
uint64_t capi_bucket_size(const ss_bucket *b) {
    return ss_bucket_size(b);
}
uint64_t capi_bucket_count(const ss_bucket *b) {
    return ss_bucket_count(b);
}
const uint64_t *capi_bucket_permutation(const ss_bucket *b) {
    return ss_bucket_permutation(b);
}
const uint64_t *capi_bucket_starts(const ss_bucket *b) {
    return ss_bucket_starts(b);
}

int capi_lm_save(const char *path, const char *field, const ss_lm_options *o) {
    return ss_lm_save(path, field, o);
}
int capi_lm_create(ss_lm **out, const ss_store *s, uint32_t field, const ss_lm_options *o) {
    return ss_lm_create(out, s, field, o);
}
void capi_lm_free(ss_lm *lm) {
    ss_lm_free(lm);
}
int capi_lm_get_info(ss_lm_info *out, const ss_lm *lm) {
    return ss_lm_get_info(out, lm);
}
int capi_lm_get(const ss_lm_batch *out, const ss_lm *lm, const uint64_t *idx, uint64_t n) {
    return ss_lm_get(out, lm, idx, n);
}
