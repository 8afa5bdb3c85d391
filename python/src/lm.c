/* SPDX-License-Identifier: BSD-2-Clause */
/* lm.c - the C LM sample index (seqstore/lm.h) behind seqstore.lm: built
 * once over a store's token field, rows written into the caller's NumPy
 * arrays (so into torch tensors, pinned ones included, without a copy or an
 * allocation per batch), the GIL released while they are read. */
#include "pyss.h"

typedef struct {
    PyObject_HEAD ss_lm *lm;
    StoreObject *store; /* kept open while rows are read from it */
    unsigned generation;
    uint64_t L;
} LMObject;

static int lm_check(LMObject *o) {
    if (!o->lm) {
        PyErr_SetString(pyss_ClosedError, "LM index is closed");
        return -1;
    }
    if (pyss_check_generation(o->generation, "LM index of", o->store->path) < 0) return -1;
    return pyss_check_store_of(o->store, "LM index");
}

/* _LM(store, field, seq_length, seed, num_samples, num_epochs, flags, eod,
 *     layout, pack_window); eod None = the store's FIELD.eos. */
static PyObject *lm_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"store", "field",  "seq_length", "seed",        "num_samples",
                             "num_epochs", "flags", "eod",    "layout", "pack_window", NULL};
    PyObject *st, *name, *eod;
    unsigned long long L, seed, ns, ne, win;
    unsigned flags, layout;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!OKKKKIOIK:_LM", kwlist, &Store_Type, &st, &name,
                                     &L, &seed, &ns, &ne, &flags, &eod, &layout, &win))
        return NULL;
    StoreObject *so = (StoreObject *)st;
    uint32_t f;
    if (pyss_check_open(so) < 0 || pyss_field_arg(so, name, &f) < 0) return NULL;
    ss_lm_options o = SS_LM_OPTIONS_INIT;
    o.seq_length = L, o.seed = seed, o.num_samples = ns, o.num_epochs = ne;
    o.flags = flags, o.layout = layout, o.pack_window = win;
    if (eod != Py_None) {
        o.eod = PyLong_AsLongLong(eod);
        if (o.eod == -1 && PyErr_Occurred()) return NULL;
    }
    ss_lm *lm;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = capi_lm_create(&lm, so->map->s, f, &o);
    Py_END_ALLOW_THREADS if (rc < 0) return pyss_raise(rc);
    LMObject *self = (LMObject *)type->tp_alloc(type, 0);
    if (!self) {
        capi_lm_free(lm);
        return NULL;
    }
    self->lm = lm;
    Py_INCREF(st);
    self->store = so;
    self->generation = pyss_generation;
    self->L = L;
    return (PyObject *)self;
}

/* _lm_save(path, field, seq_length, seed, num_samples, num_epochs, flags, eod):
 * ss_lm_save(); eod None = the store's FIELD.eos. */
PyObject *pyss_lm_save(PyObject *self, PyObject *args, PyObject *kw) {
    (void)self;
    static char *kwlist[] = {"path", "field", "seq_length", "seed", "num_samples", "num_epochs",
                             "flags", "eod", NULL};
    PyObject *path, *bytes, *eod;
    const char *field;
    unsigned long long L, seed, ns, ne;
    unsigned flags;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OsKKKKIO:_lm_save", kwlist, &path, &field, &L,
                                     &seed, &ns, &ne, &flags, &eod))
        return NULL;
    ss_lm_options o = SS_LM_OPTIONS_INIT;
    o.seq_length = L, o.seed = seed, o.num_samples = ns, o.num_epochs = ne, o.flags = flags;
    if (eod != Py_None) {
        o.eod = PyLong_AsLongLong(eod);
        if (o.eod == -1 && PyErr_Occurred()) return NULL;
    }
    if (!PyUnicode_FSConverter(path, &bytes)) return NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = capi_lm_save(PyBytes_AS_STRING(bytes), field, &o);
    Py_END_ALLOW_THREADS Py_DECREF(bytes);
    if (rc < 0) return pyss_raise_file(rc);
    Py_RETURN_NONE;
}

static void lm_dealloc(LMObject *o) {
    if (o->lm && o->generation == pyss_generation) capi_lm_free(o->lm);
    Py_XDECREF(o->store);
    Py_TYPE(o)->tp_free((PyObject *)o);
}

/* info() -> dict */
static PyObject *lm_info(LMObject *o, PyObject *unused) {
    (void)unused;
    if (lm_check(o) < 0) return NULL;
    ss_lm_info i;
    int rc = capi_lm_get_info(&i, o->lm);
    if (rc < 0) return pyss_raise(rc);
    return Py_BuildValue("{sKsKsKsKsLsisIsKsKsKsO}", "num_samples", i.num_samples, "num_epochs",
                         i.num_epochs, "tokens_per_epoch", i.tokens_per_epoch, "documents",
                         i.documents, "eod", (long long)i.eod, "separate_final_epoch",
                         i.separate_final_epoch, "layout", i.layout, "padding_tokens",
                         i.padding_tokens, "split_documents", i.split_documents, "seq_length",
                         o->L, "stored", i.stored ? Py_True : Py_False);
}

/* An output array: None, or C-contiguous, writeable, of `typenum`, with
 * `count` elements. */
static int out_arg(void **out, PyObject *a, int typenum, npy_intp count, const char *what) {
    *out = NULL;
    if (a == Py_None) return 0;
    if (!PyArray_Check(a)) {
        PyErr_Format(PyExc_TypeError, "LM.read: %s is a NumPy array or None", what);
        return -1;
    }
    PyArrayObject *arr = (PyArrayObject *)a;
    if (PyArray_TYPE(arr) != typenum || !PyArray_IS_C_CONTIGUOUS(arr) ||
        !PyArray_ISWRITEABLE(arr) || PyArray_SIZE(arr) != count) {
        PyErr_Format(PyExc_ValueError,
                     "LM.read: %s must be a writeable C-contiguous %s array of %lld elements",
                     what, typenum == NPY_INT64 ? "int64" : typenum == NPY_INT32 ? "int32"
                                                                                  : "float32",
                     (long long)count);
        return -1;
    }
    *out = PyArray_DATA(arr);
    return 0;
}

/* read(indices, tokens, labels, loss_mask, position_ids, segment_ids,
 *      cu_seqlens, nsegments): rows indices[k] into row k of each array
 *      given (None skips that output). */
static PyObject *lm_read(LMObject *o, PyObject *args) {
    PyObject *ix, *a[7];
    if (!PyArg_ParseTuple(args, "OOOOOOOO:read", &ix, &a[0], &a[1], &a[2], &a[3], &a[4], &a[5],
                          &a[6]) ||
        lm_check(o) < 0)
        return NULL;
    PyArrayObject *idx = (PyArrayObject *)PyArray_FROMANY(ix, NPY_UINT64, 1, 1, NPY_ARRAY_CARRAY_RO);
    if (!idx) return NULL;
    npy_intp n = PyArray_SIZE(idx), L = (npy_intp)o->L;
    void *p[7];
    static const char *names[7] = {"tokens",      "labels",     "loss_mask", "position_ids",
                                   "segment_ids", "cu_seqlens", "nsegments"};
    static const int types[7] = {NPY_INT64, NPY_INT64, NPY_FLOAT32, NPY_INT64,
                                 NPY_INT32, NPY_INT32, NPY_INT32};
    const npy_intp counts[7] = {n * L, n * L, n * L, n * L, n * L, n * (L + 1), n};
    for (int k = 0; k < 7; k++)
        if (out_arg(&p[k], a[k], types[k], counts[k], names[k]) < 0) {
            Py_DECREF(idx);
            return NULL;
        }
    ss_lm_batch b = {p[0], p[1], p[2], p[3], p[4], p[5], p[6]};
    const uint64_t *ip = PyArray_DATA(idx);
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = capi_lm_get(&b, o->lm, ip, (uint64_t)n);
    Py_END_ALLOW_THREADS Py_DECREF(idx);
    if (rc < 0) return pyss_raise(rc);
    Py_RETURN_NONE;
}

static PyObject *lm_close(LMObject *o, PyObject *unused) {
    (void)unused;
    if (o->lm && o->generation == pyss_generation) capi_lm_free(o->lm);
    o->lm = NULL;
    Py_RETURN_NONE;
}

static PyMethodDef lm_methods[] = {
    {"info", (PyCFunction)lm_info, METH_NOARGS, "info($self, /)\n--\n\nFacts about the index."},
    {"read", (PyCFunction)lm_read, METH_VARARGS,
     "read($self, indices, tokens, labels, loss_mask, position_ids, segment_ids, cu_seqlens,\n"
     "     nsegments, /)\n--\n\nWrite rows `indices` into the arrays given (None skips one)."},
    {"close", (PyCFunction)lm_close, METH_NOARGS, "close($self, /)\n--\n\nFree the index."},
    {NULL, NULL, 0, NULL}};

PyTypeObject LM_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "seqstore._seqstore._LM",
    .tp_basicsize = sizeof(LMObject),
    .tp_dealloc = (destructor)lm_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "_LM(store, field, seq_length, seed, num_samples, num_epochs, flags, eod, layout,\n"
              "    pack_window)\n--\n\nAn LM sample index (seqstore/lm.h); see seqstore.lm.",
    .tp_methods = lm_methods,
    .tp_new = lm_new,
};
