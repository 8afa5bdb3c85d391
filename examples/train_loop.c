/* SPDX-License-Identifier: BSD-2-Clause */
/* train_loop.c - the reading side of a training loop: fold 0 of a 5-fold
 * cross-validation, shuffled token-budget batches padded into [B][T] int64
 * with a mask, prefetched on a worker thread, resumable; this process's
 * share of the batches when several read (rank and world size from the
 * environment: torchrun's RANK/WORLD_SIZE, mpirun's or srun's).
 *
 *   train_loop STORE|DATASET [FIELD]     (e.g. the quick start's fortunes.ss)
 *
 * A dataset of shards (`convert --shard K/N` + `seqstore dataset build DIR`)
 * reads like a store. Stored sections are used when present: the split
 * `fold0.train` (`seqstore split kfold DIR 5`) instead of computing the
 * folds, and the bucket index named after FIELD (`seqstore index DIR --by
 * tokens`) to batch examples of similar length. */
#include <seqstore.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

    /* Explicit values would win; SS_RANK_UNSET reads both from the launcher. */
    uint32_t rank = SS_RANK_UNSET, world = SS_RANK_UNSET;
    const char *source;
    if ((rc = ss_rank_from_env(&rank, &world, &source))) return fail("rank", rc);

    ss_selection *all, *train = NULL, *valid = NULL;
    if ((rc = ss_selection_all(&all, ss_count(store)))) return fail("selection", rc);
    /* absent is a choice (compute the folds); damaged is an error */
    rc = ss_split_load(&train, store, "fold0.train");
    if (rc && rc != SS_ENOTFOUND) return fail("split fold0.train", rc);
    int stored_split = rc == 0;
    if (!stored_split && (rc = ss_selection_kfold(&train, &valid, all, 5, 0, NULL)))
        return fail("kfold", rc);
    char bucket[SS_MAX_ATTR_NAME + 1];
    ss_attr a;
    snprintf(bucket, sizeof bucket, "%s%s", SS_BUCKET_ATTR_PREFIX, field);
    rc = ss_attr_get(&a, store, bucket);
    if (rc && rc != SS_ENOTFOUND) return fail("bucket index", rc);
    int stored_bucket = rc == 0;
    printf("rank %u of %u (%s): %llu examples, %s fold 0, %s\n", rank, world, source,
           (unsigned long long)ss_count(store), stored_split ? "stored" : "computed",
           stored_bucket ? "stored bucket index" : "no bucket index");

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
    so.seed = 42; /* the same on every rank: each takes its share of one order */
    so.rank = rank;
    so.world_size = world;
    if (stored_bucket) o.bucket = field; /* SS_BUCKET_ATTR_PREFIX + field */
    bo.max_tokens = 4096;                /* fairseq-style token budget */
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
        if (rc != SS_ITEROVER) return fail("next", rc);
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
