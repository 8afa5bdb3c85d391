/* SPDX-License-Identifier: BSD-2-Clause */
/* train_loop.c - the reading side of a training loop: fold 0 of a 5-fold
 * cross-validation, shuffled token-budget batches padded into [B][T] int64
 * with a mask, prefetched on a worker thread, resumable.
 *
 *   train_loop STORE [FIELD]      (e.g. the quick start's fortunes.ss) */
#include <seqstore.h>

#include <stdio.h>
#include <stdlib.h>

static int fail(const char *what, int rc) {
    fprintf(stderr, "train_loop: %s: %s (%s)\n", what, ss_error_message(), ss_strerror(rc));
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: train_loop STORE [FIELD]\n");
        return 2;
    }
    const char *field = argc > 2 ? argv[2] : "tokens";
    ss_store *store;
    int rc = ss_open(&store, argv[1], 0);
    if (rc) return fail("open", rc);

    ss_selection *all, *train, *valid;
    if ((rc = ss_selection_all(&all, ss_count(store)))) return fail("selection", rc);
    if ((rc = ss_selection_kfold(&train, &valid, all, 5, 0, NULL))) return fail("kfold", rc);

    ss_collate_field out = SS_COLLATE_FIELD_INIT;
    if ((rc = ss_field_index(&out.field, store, field))) return fail("field", rc);
    out.dtype = SS_I64; /* convert on the way */
    out.pad_to_multiple = 8;
    out.mask = SS_MASK_U8;

    ss_loader_options o = SS_LOADER_OPTIONS_INIT;
    ss_sampler_options so = SS_SAMPLER_OPTIONS_INIT;
    ss_batch_options bo = SS_BATCH_OPTIONS_INIT;
    o.sampler = &so;
    o.batch = &bo;
    o.selection = train;
    so.kind = SS_SAMPLE_SHUFFLE;
    so.seed = 42;
    bo.max_tokens = 4096; /* fairseq-style token budget */
    o.fields = &out;
    o.nfields = 1;
    o.prefetch = 4;

    ss_loader *loader;
    if ((rc = ss_loader_open(&loader, store, &o))) return fail("loader", rc);
    for (uint64_t epoch = 0; epoch < 2; epoch++) {
        ss_loader_set_epoch(loader, epoch);
        uint64_t batches = 0, real = 0, padded = 0;
        const ss_loader_batch *b;
        while ((rc = ss_loader_next(&b, loader)) == 0) {
            const ss_collated *x = &b->data.fields[0]; /* x->data is [B][T] int64 */
            for (uint64_t r = 0; r < x->batch; r++) real += (uint64_t)x->lengths[r];
            padded += x->batch * x->steps;
            batches++;
        }
        if (rc != SS_LOADER_END) return fail("next", rc);
        printf("epoch %llu: %llu batches, %llu tokens, %.1f%% padding\n", (unsigned long long)epoch,
               (unsigned long long)batches, (unsigned long long)real,
               padded ? 100.0 * (double)(padded - real) / (double)padded : 0.0);
    }
    ss_loader_free(loader);
    ss_selection_free(train);
    ss_selection_free(valid);
    ss_selection_free(all);
    ss_close(store);
    return 0;
}
