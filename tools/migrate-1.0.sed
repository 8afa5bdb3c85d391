# migrate-1.0.sed - rewrite call sites of the seqstore C API from 0.2 to 1.0
# where the change is mechanical. Run with GNU sed:
#   sed -E -i -f tools/migrate-1.0.sed $(git ls-files '*.c' '*.h' '*.md')
# It is idempotent: running it twice changes nothing more.
#
# Not mechanical (read README "Migrating to 1.0" and change by hand):
#  - end of iteration is SS_ITEROVER, a negative code: ss_loader_next,
#    ss_loader_next_into, ss_blend_loader_next (were SS_LOADER_END = +1, which
#    this script renames, but a test `rc < 0` before `rc == SS_LOADER_END`
#    must now test SS_ITEROVER first); ss_sampler_next (was 0 with *n = 0);
#    ss_lanes_next and ss_window_reader_next (were 0 with a batch of size 0,
#    now SS_ITEROVER with *out NULL);
#  - "buffer too small" is SS_EBUFS where SS_ETOOBIG (state saves, text and
#    selection formatting), SS_ERANGE (ss_blend_state_save) or SS_EINVAL
#    (ss_collator_collate_into, _collate_rows, ss_loader_next_into) was;
#  - a window reader state that is not one is SS_EINVAL (was SS_EINPUT or
#    SS_ESCHEMA);
#  - ss_lines_get(l, k, &len) returning a pointer is now
#    int ss_lines_get(&out, &len, l, k);
#  - ss_split_options and ss_lanes_options versions are checked (a struct
#    not started from its _INIT is refused); ss_loader_options.threads is an
#    int (negative refused), ss_window_options.n_examples a uint64_t;
#  - ss_bucket_save(path, name, fields, nkeys, resolution) takes a
#    const ss_bucket_options * instead of the resolution (set .resolution),
#    so it saves any index ss_bucket_create() builds (descending, estimated);
#  - ss_bucket_build(&b, store, fields, nkeys, R) and
#    ss_bucket_build_lengths(&b, lengths, fields, nkeys, count, R) are gone:
#    the one constructor is ss_bucket_create(&b, store, fields, nkeys, &o)
#    with o.resolution = R (from arrays: o.keys = lengths, o.count = count,
#    store NULL);
#  - SS_SAMPLER_STATE_SIZE and SS_LOADER_STATE_SIZE are gone: ask
#    ss_sampler_state_size(s) / ss_loader_state_size(l) (or save into a
#    larger buffer and load `len` bytes, the length the save reports);
#  - ss_selection_filter_length(out, sel, store, ...) is
#    ss_selection_filter_length(out, store, sel, ...) (the compiler refuses
#    the old order: the two pointer types differ).

s/\bSS_LOADER_END\b/SS_ITEROVER/g
s/\bss_window_reader_save_size\b/ss_window_reader_state_size/g
s/\bss_window_reader_restore\b/ss_window_reader_state_load/g
s/\bss_window_reader_save\(([^,()]+),([^,()]+),/ss_window_reader_state_save(\1,\2, NULL,/g
s/\bss_loader_batches\b/ss_loader_count/g
s/\bss_blend_loader_length\b/ss_blend_loader_count/g
s/\bss_blend_count\b/ss_blend_source_count/g
s/\bss_blend_epoch\b/ss_blend_source_epoch/g
s/\bss_blend_loader_source_epochs\b/ss_blend_loader_source_epoch/g
