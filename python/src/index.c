/* SPDX-License-Identifier: BSD-2-Clause */
/* index.c - Store methods over the store's index structures: the flat
 * stream view, stored splits, k-fold selections and stored bucket indices.
 * Results are new arrays (copies): they are small (indices) or cross chunk
 * boundaries (flat reads). */
#include "pyss.h"

/* A selection -> a new int64 array of its store indices, in order. */
static PyObject *selection_array(const ss_selection *sel) {
    npy_intp n = (npy_intp)capi_selection_count(sel);
    PyObject *a = PyArray_SimpleNew(1, &n, NPY_INT64);
    if (!a) return NULL;
    int64_t *out = PyArray_DATA((PyArrayObject *)a);
    const ss_range *r = capi_selection_ranges(sel);
    for (size_t k = 0, nr = capi_selection_range_count(sel); k < nr; k++)
        for (uint64_t i = r[k].start; i < r[k].end; i++) *out++ = (int64_t)i;
    return a;
}

/* _flat_size(name) */
PyObject *pyss_store_flat_size(StoreObject *st, PyObject *name) {
    uint32_t f;
    if (pyss_check_open(st) < 0 || pyss_field_arg(st, name, &f) < 0) return NULL;
    return PyLong_FromUnsignedLongLong(capi_flat_size(st->map->s, f));
}

/* _flat_read(name, p, q) -> [q - p, *dims] array */
PyObject *pyss_store_flat_read(StoreObject *st, PyObject *args) {
    PyObject *name;
    unsigned long long p, q;
    uint32_t f;
    if (pyss_check_open(st) < 0 || !PyArg_ParseTuple(args, "OKK:_flat_read", &name, &p, &q) ||
        pyss_field_arg(st, name, &f) < 0)
        return NULL;
    if (p > q) return PyErr_Format(PyExc_ValueError, "flat range [%llu, %llu) is reversed", p, q);
    const FieldShape *fs = &st->shape[f];
    npy_intp shape[SS_MAX_DIMS + 1] = {(npy_intp)(q - p)};
    for (int k = 0; k < fs->ndim; k++) shape[k + 1] = fs->dims[k];
    PyObject *a = PyArray_SimpleNew(1 + fs->ndim, shape, fs->typenum);
    if (!a) return NULL;
    int rc = capi_flat_read(PyArray_DATA((PyArrayObject *)a), st->map->s, f, p, q);
    if (rc < 0) {
        Py_DECREF(a);
        return pyss_raise(rc);
    }
    return a;
}

/* _flat_locate(name, pos) -> (example, offset) */
PyObject *pyss_store_flat_locate(StoreObject *st, PyObject *args) {
    PyObject *name;
    unsigned long long pos;
    uint32_t f;
    uint64_t ex, off;
    if (pyss_check_open(st) < 0 || !PyArg_ParseTuple(args, "OK:_flat_locate", &name, &pos) ||
        pyss_field_arg(st, name, &f) < 0)
        return NULL;
    int rc = capi_flat_locate(&ex, &off, st->map->s, f, pos);
    return rc < 0 ? pyss_raise(rc) : Py_BuildValue("KK", ex, off);
}

/* split(name) -> int64 array of the examples of the stored split */
PyObject *pyss_store_split(StoreObject *st, PyObject *name) {
    if (pyss_check_open(st) < 0) return NULL;
    const char *s = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
    if (!s) return PyErr_Occurred() ? NULL : PyErr_Format(PyExc_TypeError, "a split name is a str");
    ss_selection *sel;
    int rc = capi_split_load(&sel, st->map->s, s);
    if (rc < 0) return pyss_raise(rc);
    PyObject *a = selection_array(sel);
    capi_selection_free(sel);
    return a;
}

/* kfold(k, fold, shuffle=False, seed=0, split=None) -> (train, valid) */
PyObject *pyss_store_kfold(StoreObject *st, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"k", "fold", "shuffle", "seed", "split", NULL};
    PyObject *ko, *fo, *so = NULL;
    unsigned long long k, fold, seed = 0;
    int shuffle = 0;
    const char *split = NULL;
    if (pyss_check_open(st) < 0 || !PyArg_ParseTupleAndKeywords(args, kw, "OO|$pOz:kfold", kwlist,
                                                                &ko, &fo, &shuffle, &so, &split))
        return NULL;
    if (pyss_uint_arg(&k, ko, "kfold: k", UINT32_MAX) < 0 ||
        pyss_uint_arg(&fold, fo, "kfold: fold", UINT32_MAX) < 0 ||
        (so && pyss_uint_arg(&seed, so, "kfold: seed", UINT64_MAX) < 0))
        return NULL;
    ss_selection *sel = NULL, *train = NULL, *valid = NULL;
    int rc = split ? capi_split_load(&sel, st->map->s, split) : capi_selection_all(&sel, st->count);
    if (rc == 0) rc = capi_kfold(&train, &valid, sel, (unsigned)k, (unsigned)fold, shuffle, seed);
    PyObject *res = rc < 0 ? pyss_raise(rc)
                           : Py_BuildValue("NN", selection_array(train), selection_array(valid));
    capi_selection_free(sel);
    capi_selection_free(train);
    capi_selection_free(valid);
    return res;
}

/* bucket(name) -> (permutation, starts): bucket q is permutation[starts[q]:starts[q+1]] */
PyObject *pyss_store_bucket(StoreObject *st, PyObject *name) {
    if (pyss_check_open(st) < 0) return NULL;
    const char *s = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
    if (!s)
        return PyErr_Occurred() ? NULL : PyErr_Format(PyExc_TypeError, "a bucket name is a str");
    ss_bucket *b;
    int rc = capi_bucket_open(&b, st->map->s, s);
    if (rc < 0) return pyss_raise(rc);
    npy_intp n = (npy_intp)capi_bucket_size(b), nb = (npy_intp)capi_bucket_count(b) + 1;
    PyObject *perm = PyArray_SimpleNew(1, &n, NPY_INT64);
    PyObject *starts = perm ? PyArray_SimpleNew(1, &nb, NPY_INT64) : NULL;
    const uint64_t *p = capi_bucket_permutation(b), *q = capi_bucket_starts(b);
    for (npy_intp i = 0; starts && i < n; i++) {
        if (p[i] >= (uint64_t)n) { /* a stored index is not range-checked by the C library */
            PyErr_Format(PyExc_ValueError,
                         "store '%U': bucket index '%s' holds example %llu of %lld", st->path, s,
                         (unsigned long long)p[i], (long long)n);
            Py_CLEAR(starts);
            break;
        }
        ((int64_t *)PyArray_DATA((PyArrayObject *)perm))[i] = (int64_t)p[i];
    }
    for (npy_intp i = 0; starts && i < nb; i++)
        ((int64_t *)PyArray_DATA((PyArrayObject *)starts))[i] = (int64_t)q[i];
    capi_bucket_free(b);
    if (!starts) {
        Py_XDECREF(perm);
        return NULL;
    }
    return Py_BuildValue("NN", perm, starts);
}
