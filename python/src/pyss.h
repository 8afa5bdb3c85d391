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
 * map stays mapped until the last view and the Store let go of it. */
typedef struct {
    PyObject_HEAD ss_store *s;
    unsigned generation; /* pyss_generation when opened */
} MapObject;

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
    PyObject *names; /* tuple of str */
    PyObject *attrs; /* cached mapping, or NULL */
    FieldShape shape[SS_MAX_FIELDS];
} StoreObject;

extern PyTypeObject Map_Type, Store_Type, Field_Type, Writer_Type, Loader_Type, Window_Type,
    Collator_Type;

/* Errors (module.c). pyss_raise() sets the exception class of `code` with the
 * C library's last message and returns NULL. */
PyObject *pyss_raise(int code);
int pyss_raise_int(int code); /* same, returns -1 */
extern PyObject *pyss_Error, *pyss_ClosedError;
int pyss_errors_init(PyObject *module);

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

/* store.c */
int pyss_check_open(StoreObject *st); /* -1 with ClosedError when closed */
PyObject *pyss_view_array(StoreObject *st, uint32_t field, const ss_view *v);
PyObject *pyss_open(PyObject *self, PyObject *args, PyObject *kw);
int pyss_field_arg(StoreObject *st, PyObject *name, uint32_t *out); /* str -> index */

/* loader.c: (name, dtype code, layout, pad, pad_left, pad_to_multiple,
 * fixed_length, truncate_left, mask, sort_by_length) -> `f`; the name is
 * borrowed from `item`. */
int pyss_parse_collate_field(PyObject *item, const ss_store *s, ss_collate_field *f);

/* index.c: Store methods (flat view, splits, folds, buckets) */
PyObject *pyss_store_flat_size(StoreObject *st, PyObject *name);
PyObject *pyss_store_flat_read(StoreObject *st, PyObject *args);
PyObject *pyss_store_flat_locate(StoreObject *st, PyObject *args);
PyObject *pyss_store_split(StoreObject *st, PyObject *name);
PyObject *pyss_store_kfold(StoreObject *st, PyObject *args, PyObject *kw);
PyObject *pyss_store_bucket(StoreObject *st, PyObject *name);

/* writer.c */
PyObject *pyss_writer_create(PyObject *self, PyObject *args, PyObject *kw);

#endif
