/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * seqstore.h - the public API of seqstore.
 *
 * seqstore stores sequential machine-learning data (token corpora, parallel
 * corpora, EEG recordings, pixel sequences) in one LMDB environment and reads
 * it back zero-copy from the memory map. The on-disk format is specified in
 * spec/FORMAT.md.
 *
 * Conventions (the same for every function in this header and its
 * sub-headers):
 *  - Functions return 0 on success or a negative code of the error table
 *    (never a positive one; the two predicates ss_selection_contains() and
 *    ss_bucket_descending() answer 1 or 0 instead). ss_strerror() gives a code's text,
 *    ss_error_name() its name ("SS_ECORRUPT"); ss_error_message() gives the
 *    calling thread's last message with its context (path, field, example
 *    index). The library never prints, never exits and never aborts on bad
 *    input. Two codes are not failures: SS_ITEROVER is the one end of every
 *    iteration (ss_loader_next, ss_blend_loader_next, ss_sampler_next,
 *    ss_lanes_next, ss_window_reader_next: *out NULL, the object still
 *    usable), and SS_EBUFS is the one "buffer too small" (a caller's buffer
 *    or capacity; where there is a length output it is set to the size
 *    needed).
 *  - Out-parameters come first, in every function without exception
 *    (libgit2's rule): ss_get(&view, store, field, index), a single output
 *    is named `out`, a caller's output buffer is followed by its capacity
 *    (ss_sampler_next(buf, max, &n, sampler)), and the object worked on
 *    comes right after the outputs; a store comes before a selection of it.
 *    On failure *out is set to NULL (or zeroed) and there is nothing to
 *    free. Objects returned through `**out` belong to the caller and are
 *    released with the matching _free/_close, which accept NULL. Getters
 *    that return a count or pointer instead of int take the object first.
 *    tests/api_conventions.py checks these rules on every function that
 *    returns int: no output (a T ** or a non-const pointer to anything but
 *    an opaque object) after an input (a const pointer or an opaque object;
 *    values such as a capacity may stand anywhere, and so may a callback's
 *    `void *ctx`), a lone T ** output named `out`, the store before the
 *    selection, only codes of the table, no return of 1 outside the
 *    predicates, an ..._init() per ..._INIT.
 *  - Saved iteration state, for every object that has one: ss_X_state_size(),
 *    ss_X_state_save(buf, cap, &len, x) and ss_X_state_load(x, buf, len); a
 *    blob that is not a state of this object with these options is
 *    SS_EINVAL and leaves the object unchanged. The size is asked only of
 *    the function (no macro: a size can depend on the object, as a blend's
 *    does on its sources, and can grow with a state version); save sets
 *    *len to it, also on SS_EBUFS.
 *  - Fields are addressed by their uint32_t index in the schema, everywhere
 *    (ss_get, the collator, streams, transforms, the window reader, the
 *    splitter, bucket indices). ss_field_index(&idx, store, name) is the one
 *    place where a name becomes an index; SS_FIELD_NONE means "no field"
 *    where a field is optional. An index beyond the schema is SS_ERANGE.
 *  - Pointers returned as values or inside an ss_view are borrowed from the
 *    store: they point into the read-only memory map, must not be written
 *    through, and stay valid until ss_close() of that store.
 *  - Pointers must not be NULL unless documented as "may be NULL". Most
 *    functions that return int report a NULL one as SS_EINVAL ("ss_get: NULL
 *    argument"); getters that return a count or size return 0 for a NULL
 *    object. Do not rely on either: it is a programming error.
 *  - Threads: every `threads` option means the same. 0 (the default) is one
 *    thread, the calling one (or one worker thread for the loader); n >= 1
 *    asks for up to n threads, and a batch too small to gain (below
 *    `parallel_bytes` where there is one) still runs on one. Results are
 *    bit-identical for every value. The default is never slower than one
 *    thread: on a machine whose cores are shared (CI runners, containers, a
 *    2-vCPU virtual machine) an OpenMP team waiting for a busy core
 *    ran the window reader at 0.46x the speed of one thread; measure
 *    (bench/bench_window, bench_collate) before asking for more.
 *  - Options are structs that start with `version` and have an
 *    ..._OPTIONS_INIT initializer and an ss_..._init(&opts, VERSION)
 *    function giving the same defaults (for bindings that cannot use the
 *    macro). The version is checked on every call. A new version only appends fields. A
 *    function reads only the fields of the version the caller's struct
 *    declares (fields added later take their INIT values), so a program
 *    compiled against an older header keeps working; a version newer than
 *    the library's is refused (SS_EINVAL naming it). An options struct never
 *    embeds another by value, which would freeze its size: it points to it
 *    (ss_loader_options.sampler, .batch, .collator; NULL = defaults). In an
 *    array of versioned structs (ss_collate_field) every element has the
 *    version, hence the size, of the first. Options are read during the call
 *    unless a field says it is borrowed.
 *  - Integers on disk are little-endian; see spec/FORMAT.md.
 */
#ifndef SEQSTORE_H
#define SEQSTORE_H

/* The base: errors, versions, schemas, stores, writers, ss_get(), attributes,
 * datasets, verification. */
#include "seqstore/core.h"

/* ------------------------------------------------------------ the SDK
 * Reading for training loops: selections and splits, samplers, batching and
 * bucket indices, collation, parallel streams, the prefetching loader,
 * truncated-BPTT readers, transforms and typed metadata. Each concept has its
 * own sub-header. */
#include "seqstore/select.h"
#include "seqstore/sampler.h"
#include "seqstore/batch.h"
#include "seqstore/collate.h"
#include "seqstore/stream.h"
#include "seqstore/loader.h"
#include "seqstore/bptt.h"
#include "seqstore/transform.h"
#include "seqstore/meta.h"
#include "seqstore/lm.h"
#include "seqstore/remote.h"

#endif /* SEQSTORE_H */
