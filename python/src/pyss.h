/* SPDX-License-Identifier: BSD-2-Clause */
/* pyss.h - shared declarations of the _seqstore extension module. */
#ifndef PYSS_H
#define PYSS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#ifndef PYSS_MODULE_C
#define NO_IMPORT_ARRAY
#endif
#define PY_ARRAY_UNIQUE_SYMBOL pyss_ARRAY_API
#include <numpy/arrayobject.h>

#include "capi.h"

/* The C store behind a Store, and the NumPy base object of every view: the
 * map stays mapped until the last view and the Store let go of it.
 *
 * Views do not point into LMDB's map but into `priv`, a second map of the
 * same file (LMDB's descriptor, so the same device and inode) made
 * MAP_PRIVATE, PROT_READ | PROT_WRITE: copy-on-write, like np.memmap mode
 * 'c'. Reading it shares the page cache (still zero-copy); the arrays stay
 * flagged read-only, but a write that bypasses the flag
 * (torch.from_numpy(view).add_(1), ctypes) copies the touched page for this
 * map alone instead of faulting on LMDB's read-only map: it never reaches the
 * file, other processes, other Stores, or the C library's own reads, which
 * go through LMDB's map. NULL when the second map could not be made (then
 * views point into LMDB's map, as Store.copy_on_write reports). */
typedef struct {
    PyObject_HEAD ss_store *s;
    unsigned generation;       /* pyss_generation when opened */
    const unsigned char *lmdb; /* LMDB's map (file offset 0) */
    unsigned char *priv;       /* the private map of [0, size), or NULL */
    size_t size;
} MapObject;

/* Where a view of LMDB's map at `p` lies in the private map. */
static inline const void *pyss_map_ptr(const MapObject *m, const void *p) {
    const unsigned char *q = p;
    if (!m->priv || q < m->lmdb || (size_t)(q - m->lmdb) >= m->size) return p;
    return m->priv + (q - m->lmdb);
}

typedef struct {
    int typenum; /* NumPy type of an element (bf16 -> NPY_UINT16) */
    int sequence;
    int ndim; /* trailing dimensions */
    npy_intp dims[SS_MAX_DIMS];
} FieldShape;

typedef struct {
    PyObject_HEAD MapObject *map; /* NULL once closed */
    PyObject *path;               /* str, as given (for pickling and messages) */
    unsigned flags;
    uint32_t nfields;
    uint64_t count;
    PyObject *names;                  /* tuple of str */
    PyObject *attrs;                  /* cached mapping, or NULL */
    PyObject *lengths[SS_MAX_FIELDS]; /* cached lengths() arrays, or NULL */
    FieldShape shape[SS_MAX_FIELDS];
    int copy_views; /* a dataset that closes shards (ss_views_stable() 0): views are copies */
    PyObject *remote_kw; /* open()'s object-storage keyword arguments, for pickling */
    int remote;          /* opened from a URL: a read may download a shard (GIL released) */
} StoreObject;

extern PyTypeObject Map_Type, Store_Type, FieldAccessor_Type, Writer_Type, Loader_Type, Window_Type,
    Collator_Type, Blend_Type, LM_Type;

/* Errors (errors.c): one class per code of SS_ERROR_TABLE. pyss_raise() sets
 * the exception class of `code` with the C library's last message and returns
 * NULL. */
PyObject *pyss_raise(int code);
int pyss_raise_int(int code); /* same, returns -1 */
/* Same, with exc.<attr> = value (borrowed) set on the exception too. */
PyObject *pyss_raise_with(int code, const char *attr, PyObject *value);
/* Same, for opening a store file: SS_ENOTFOUND is StoreNotFoundError (also a
 * FileNotFoundError). */
PyObject *pyss_raise_file(int code);
PyObject *pyss_error_class(int code); /* borrowed; the base Error if unknown */
extern PyObject *pyss_Error, *pyss_ClosedError, *pyss_StoreNotFoundError;
int pyss_errors_init(PyObject *module);
PyObject *pyss_error_table(PyObject *self, PyObject *unused); /* _error_table() */

/* Fork safety (module.c). LMDB forbids using an environment (or its read
 * transactions) after fork(): a child must neither read through nor close
 * what its parent opened (closing would free the parent's reader slot in the
 * shared lock file; freeing a loader would join threads the child does not
 * have). pyss_generation counts forks in this process's ancestry; an object
 * made in another generation is refused (pyss_check_generation) and leaked at
 * dealloc. */
extern unsigned pyss_generation;
int pyss_check_generation(unsigned generation, const char *what, PyObject *path);

/* dtypes (module.c) */
int pyss_typenum(ss_dtype d); /* -1 for an unknown dtype */
/* A Python int argument in [0, max] -> *out; else TypeError (not an int, or a
 * bool) or ValueError naming `what` and the value. PyArg's "I"/"K" formats
 * would take -1 or 2**64 + 2 modulo 2**32 / 2**64 without a word. */
int pyss_uint_arg(unsigned long long *out, PyObject *v, const char *what, unsigned long long max);

/* store.c */
int pyss_check_open(StoreObject *st); /* -1 with ClosedError when closed */
/* -1 with ClosedError naming `what` (a loader, collator, window reader) when
 * its store was closed: close() ends every read of the store, not only the
 * Store object's own (the reader's reference keeps the map valid, so this is
 * the promise, not a guard against a crash). */
int pyss_check_store_of(StoreObject *st, const char *what);
PyObject *pyss_view_array(StoreObject *st, uint32_t field, const ss_view *v);
PyObject *pyss_open(PyObject *self, PyObject *args, PyObject *kw);
int pyss_field_arg(StoreObject *st, PyObject *name, uint32_t *out); /* str -> index */

/* loader.c: (name, dtype code, layout, pad, pad_left, pad_to_multiple,
 * fixed_length, truncate_left, mask, sort_by_length[, mask_dtype]) -> `f`;
 * the name is borrowed from `item`. */
int pyss_parse_collate_field(PyObject *item, const ss_store *s, ss_collate_field *f);
/* The dtype of the mask `f` asks for; 0 for none or for the data's own dtype
 * (SS_MASK_DTYPE without mask_dtype), which pyss_mask_typenum() resolves. */
ss_dtype pyss_mask_dtype(const ss_collate_field *f);
/* The NumPy type and shape of collated field c's mask (mask_dtype as
 * pyss_mask_dtype() gave it): [B][T], or [T][B] time-major. */
int pyss_mask_typenum(ss_dtype mask_dtype, const ss_collated *c);
void pyss_mask_shape(npy_intp shape[2], const ss_collated *c);

/* index.c: Store methods (flat view, splits, folds, buckets) */
PyObject *pyss_store_flat_size(StoreObject *st, PyObject *name);
PyObject *pyss_store_flat_read(StoreObject *st, PyObject *args);
PyObject *pyss_store_flat_locate(StoreObject *st, PyObject *args);
PyObject *pyss_store_split(StoreObject *st, PyObject *name);
PyObject *pyss_store_kfold(StoreObject *st, PyObject *args, PyObject *kw);
PyObject *pyss_store_bucket(StoreObject *st, PyObject *name);

/* transform.c: Loader(transforms=[spec tuples]) -> *out (NULL for None or
 * []), Loader(examples=int64 range pairs as bytes) -> *out (NULL for None).
 * -1 with an exception set. */
int pyss_pipeline_build(ss_pipeline **out, StoreObject *st, PyObject *specs);
int pyss_selection_build(ss_selection **out, StoreObject *st, PyObject *ranges);

/* writer.c */
PyObject *pyss_writer_create(PyObject *self, PyObject *args, PyObject *kw);
PyObject *pyss_lm_save(PyObject *self, PyObject *args, PyObject *kw); /* lm.c */

#endif
