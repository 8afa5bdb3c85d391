/* SPDX-License-Identifier: BSD-2-Clause */
/* collator.c - the C collator behind seqstore.Collator: store indices in,
 * padded (or packed) batch out; into caller-provided arrays when given, so a
 * batch is written once, by C, into memory the caller chose (pinned torch
 * tensors, say). */
#include "pyss.h"

typedef struct {
    PyObject_HEAD ss_collator *c;
    StoreObject *store;
    unsigned generation;
    uint32_t nfields;
    PyObject *names; /* tuple: output field k's name */
    ss_span *spans;  /* grown, never shrunk: no allocation per batch in steady state */
    size_t cap;
    int typenum[SS_MAX_FIELDS]; /* output field k's NumPy type, checked before C writes */
    ss_dtype mask_dtype[SS_MAX_FIELDS]; /* output field k's (pyss_mask_dtype()) */
} CollatorObject;

static int collator_check(CollatorObject *co) {
    if (co->c) return pyss_check_generation(co->generation, "collator of", co->store->path);
    PyErr_SetString(pyss_ClosedError, "collator is closed");
    return -1;
}

/* _Collator(store, fields) with fields as for _Loader ([] = every field). */
static PyObject *collator_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"store", "fields", NULL};
    StoreObject *st;
    PyObject *fields;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!O!:_Collator", kwlist, &Store_Type, &st,
                                     &PyList_Type, &fields))
        return NULL;
    if (pyss_check_open(st) < 0) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(fields);
    if (n > SS_MAX_FIELDS)
        return PyErr_Format(PyExc_ValueError, "at most %d fields", SS_MAX_FIELDS);
    ss_collate_field cf[SS_MAX_FIELDS];
    for (Py_ssize_t k = 0; k < n; k++)
        if (pyss_parse_collate_field(PyList_GET_ITEM(fields, k), st->map->s, &cf[k]) < 0)
            return NULL;
    CollatorObject *co = (CollatorObject *)type->tp_alloc(type, 0);
    if (!co) return NULL;
    co->store = (StoreObject *)Py_NewRef(st); /* keeps the map: the collator reads it */
    co->generation = pyss_generation;
    co->nfields = n ? (uint32_t)n : st->nfields;
    co->names = PyTuple_New(co->nfields);
    for (uint32_t k = 0; co->names && k < co->nfields; k++) {
        uint32_t f = n ? cf[k].field : k;
        co->typenum[k] = n && cf[k].dtype ? pyss_typenum(cf[k].dtype) : st->shape[f].typenum;
        co->mask_dtype[k] = n ? pyss_mask_dtype(&cf[k]) : (ss_dtype)0;
        PyObject *name = Py_NewRef(PyTuple_GET_ITEM(st->names, f));
        if (!name)
            Py_CLEAR(co->names);
        else
            PyTuple_SET_ITEM(co->names, k, name);
    }
    if (!co->names) {
        Py_DECREF(co);
        return NULL;
    }
    int rc = capi_collator_create(&co->c, st->map->s, n ? cf : NULL, (uint32_t)n);
    if (rc < 0) {
        Py_DECREF(co);
        return pyss_raise(rc);
    }
    return (PyObject *)co;
}

static void collator_dealloc(CollatorObject *co) {
    if (co->generation == pyss_generation) capi_collator_free(co->c); /* else leaked (pyss.h) */
    PyMem_Free(co->spans);
    Py_XDECREF(co->names);
    Py_XDECREF(co->store);
    Py_TYPE(co)->tp_free((PyObject *)co);
}

/* Store indices (any integer sequence) -> whole-example spans. */
static Py_ssize_t fill_spans(CollatorObject *co, PyObject *indices) {
    PyArrayObject *idx = (PyArrayObject *)PyArray_FromAny(indices, NULL, 1, 1, 0, NULL);
    if (!idx) return -1;
    Py_ssize_t n = PyArray_SIZE(idx);
    if (n == 0 || !PyArray_ISINTEGER(idx)) {
        PyErr_SetString(PyExc_TypeError, "collate takes a non-empty 1-D sequence of store indices");
        Py_DECREF(idx);
        return -1;
    }
    if ((size_t)n > co->cap) {
        ss_span *p = PyMem_Realloc(co->spans, (size_t)n * sizeof *p);
        if (!p) {
            Py_DECREF(idx);
            PyErr_NoMemory();
            return -1;
        }
        co->spans = p;
        co->cap = (size_t)n;
    }
    PyArrayObject *i64 = (PyArrayObject *)PyArray_Cast(idx, NPY_INT64);
    Py_DECREF(idx);
    if (!i64) return -1;
    const int64_t *v = PyArray_DATA(i64);
    for (Py_ssize_t k = 0; k < n; k++) {
        if (v[k] < 0 || (uint64_t)v[k] >= co->store->count) {
            PyErr_Format(PyExc_IndexError, "example %lld out of range: store '%U' has %llu",
                         (long long)v[k], co->store->path, (unsigned long long)co->store->count);
            Py_DECREF(i64);
            return -1;
        }
        co->spans[k] = (ss_span){(uint64_t)v[k], 0, SS_SPAN_END};
    }
    Py_DECREF(i64);
    return n;
}

/* out[name] (if given) as the field's data buffer: writable, C-contiguous. */
static int out_buffer(PyObject *out, const char *name, ss_collate_buffers *b) {
    PyObject *a = out == Py_None ? NULL : PyDict_GetItemString(out, name);
    if (!a) return 0;
    if (!PyArray_Check(a) || !PyArray_ISCARRAY((PyArrayObject *)a)) {
        PyErr_Format(PyExc_TypeError, "out['%s'] must be a writable C-contiguous NumPy array",
                     name);
        return -1;
    }
    b->data = PyArray_DATA((PyArrayObject *)a);
    b->data_bytes = (uint64_t)PyArray_NBYTES((PyArrayObject *)a);
    return 1;
}

static int put(PyObject *d, const char *name, const char *suffix, PyObject *v) {
    if (!v) return -1;
    PyObject *key = PyUnicode_FromFormat("%s%s", name, suffix);
    int rc = key ? PyDict_SetItem(d, key, v) : -1;
    Py_XDECREF(key);
    Py_DECREF(v);
    return rc;
}

static PyObject *copy_of(int typenum, int nd, npy_intp *shape, const void *data) {
    PyObject *a = PyArray_SimpleNew(nd, shape, typenum);
    if (a) memcpy(PyArray_DATA((PyArrayObject *)a), data, PyArray_NBYTES((PyArrayObject *)a));
    return a;
}

/* The data of field `c`: a view of out[name] shaped as the batch, or a copy. */
static PyObject *data_of(const ss_collated *c, PyObject *given) {
    npy_intp shape[SS_MAX_DIMS + 2];
    for (uint32_t k = 0; k < c->ndim; k++) shape[k] = (npy_intp)c->shape[k];
    int typenum = pyss_typenum(c->dtype);
    if (!given) return copy_of(typenum, (int)c->ndim, shape, c->data);
    if (PyArray_TYPE((PyArrayObject *)given) != typenum) {
        PyErr_Format(PyExc_TypeError, "out['%s'] has the wrong dtype (the batch is %s)", c->name,
                     capi_dtype_name(c->dtype));
        return NULL;
    }
    PyObject *v = PyArray_New(&PyArray_Type, (int)c->ndim, shape, typenum, NULL, c->data, 0,
                              NPY_ARRAY_CARRAY, NULL);
    if (v && PyArray_SetBaseObject((PyArrayObject *)v, Py_NewRef(given)) < 0) Py_CLEAR(v);
    return v;
}

static int put_field(PyObject *d, const ss_collated *c, ss_dtype mask_dtype, PyObject *given) {
    npy_intp b = (npy_intp)c->batch, nb = b + 1;
    if (put(d, c->name, "", data_of(c, given)) < 0) return -1;
    if (!c->sequence) return 0;
    if (put(d, c->name, "_lengths", copy_of(NPY_INT64, 1, &b, c->lengths)) < 0) return -1;
    if (c->mask) {
        npy_intp ms[2];
        pyss_mask_shape(ms, c);
        int mt = pyss_mask_typenum(mask_dtype, c);
        if (put(d, c->name, "_mask", copy_of(mt, 2, ms, c->mask)) < 0) return -1;
    }
    if (c->offsets && put(d, c->name, "_offsets", copy_of(NPY_INT64, 1, &nb, c->offsets)) < 0)
        return -1;
    return 0;
}

/* collate(indices, out=None) -> dict */
static PyObject *collator_collate(CollatorObject *co, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"indices", "out", NULL};
    PyObject *indices, *out = Py_None;
    if (collator_check(co) < 0 || pyss_check_store_of(co->store, "collator") < 0 ||
        !PyArg_ParseTupleAndKeywords(args, kw, "O|O:collate", kwlist, &indices, &out))
        return NULL;
    if (out != Py_None && !PyDict_Check(out))
        return PyErr_Format(PyExc_TypeError, "out is a dict of field name -> array");
    Py_ssize_t n = fill_spans(co, indices);
    if (n < 0) return NULL;
    ss_collate_buffers bufs[SS_MAX_FIELDS];
    PyObject *given[SS_MAX_FIELDS];
    memset(bufs, 0, sizeof bufs);
    for (uint32_t k = 0; k < co->nfields; k++) {
        const char *name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(co->names, k));
        int rc = name ? out_buffer(out, name, &bufs[k]) : -1;
        if (rc < 0) return NULL;
        given[k] = rc ? PyDict_GetItemString(out, name) : NULL;
        if (given[k] && PyArray_TYPE((PyArrayObject *)given[k]) != co->typenum[k])
            /* before C writes: a refused buffer keeps its bytes */
            return PyErr_Format(PyExc_TypeError, "out['%s'] has the wrong dtype", name);
    }
    /* Hold the given arrays while C writes into them without the GIL. */
    for (uint32_t k = 0; k < co->nfields; k++) Py_XINCREF(given[k]);
    ss_collated_batch batch;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = capi_collate(&batch, co->c, co->spans, (size_t)n, bufs);
    Py_END_ALLOW_THREADS PyObject *d = rc < 0 ? pyss_raise(rc) : PyDict_New();
    for (uint32_t k = 0; d && k < batch.nfields; k++)
        if (put_field(d, &batch.fields[k], co->mask_dtype[k], given[k]) < 0) Py_CLEAR(d);
    for (uint32_t k = 0; k < co->nfields; k++) Py_XDECREF(given[k]);
    return d;
}

static PyObject *collator_close(CollatorObject *co, PyObject *unused) {
    (void)unused;
    if (co->generation == pyss_generation) capi_collator_free(co->c);
    co->c = NULL;
    Py_RETURN_NONE;
}

static PyObject *collator_names(CollatorObject *co, void *unused) {
    (void)unused;
    return Py_NewRef(co->names);
}

static PyGetSetDef collator_getset[] = {
    {"fields", (getter)collator_names, NULL, "output field names", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMethodDef collator_methods[] = {
    {"collate", (PyCFunction)(void (*)(void))collator_collate, METH_VARARGS | METH_KEYWORDS,
     "collate($self, indices, out=None)\n--\n\n"
     "Returns dict of arrays"},
    {"close", (PyCFunction)collator_close, METH_NOARGS, "close($self, /)\n--\n\n"
     "free the collator"},
    {NULL, NULL, 0, NULL}};

PyTypeObject Collator_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "seqstore._seqstore._Collator",
    .tp_basicsize = sizeof(CollatorObject),
    .tp_dealloc = (destructor)collator_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "_Collator(store, fields)\n--\n\nThe C collator (use seqstore.Collator).",
    .tp_methods = collator_methods,
    .tp_getset = collator_getset,
    .tp_new = collator_new,
};
