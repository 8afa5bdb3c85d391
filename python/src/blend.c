/* SPDX-License-Identifier: BSD-2-Clause */
/* blend.c - the C blended loader behind seqstore.Blend: several stores with
 * weights in, batches out as new NumPy arrays (plus each row's source and
 * index). */
#include "pyss.h"

typedef struct {
    PyObject_HEAD ss_blend_loader *l;
    PyObject *stores; /* tuple of StoreObject: kept open while the loader reads them */
    unsigned generation;
    ss_dtype mask_dtype[SS_MAX_FIELDS]; /* output field k's (pyss_mask_dtype()) */
} BlendObject;

static int blend_check(BlendObject *bo) {
    if (bo->l) {
        StoreObject *s0 = (StoreObject *)PyTuple_GET_ITEM(bo->stores, 0);
        if (pyss_check_generation(bo->generation, "blend of", s0->path) < 0) return -1;
        for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(bo->stores); j++)
            if (pyss_check_store_of((StoreObject *)PyTuple_GET_ITEM(bo->stores, j), "blend") < 0)
                return -1;
        return 0;
    }
    PyErr_SetString(pyss_ClosedError, "blend is closed");
    return -1;
}

/* _Blend(stores, weights, fields, batch_size, seed, shuffle, stop, rank,
 *        world_size, worker, num_workers, drop_last); fields as for _Loader,
 *        resolved against stores[0]. */
static PyObject *blend_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"stores",      "weights",   "fields", "batch_size", "seed",
                             "shuffle",     "stop",      "rank",   "world_size", "worker",
                             "num_workers", "drop_last", NULL};
    PyObject *stores, *weights, *fields;
    unsigned long long bs, seed;
    int shuffle, stop, drop_last;
    unsigned rank, world, worker, nw;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!O!O!KKpiIIIIp:_Blend", kwlist, &PyTuple_Type,
                                     &stores, &PyTuple_Type, &weights, &PyList_Type, &fields, &bs,
                                     &seed, &shuffle, &stop, &rank, &world, &worker, &nw,
                                     &drop_last))
        return NULL;
    Py_ssize_t k = PyTuple_GET_SIZE(stores), n = PyList_GET_SIZE(fields);
    if (k < 1 || k > 65536 || PyTuple_GET_SIZE(weights) != k)
        return PyErr_Format(PyExc_ValueError, "1 to 65536 stores, one weight each");
    if (n > SS_MAX_FIELDS)
        return PyErr_Format(PyExc_ValueError, "at most %d output fields", SS_MAX_FIELDS);
    const ss_store **ss = PyMem_Calloc((size_t)k, sizeof *ss);
    double *w = PyMem_Calloc((size_t)k, sizeof *w);
    BlendObject *bo = NULL;
    ss_collate_field cf[SS_MAX_FIELDS];
    if (!ss || !w) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t j = 0; j < k; j++) {
        PyObject *s = PyTuple_GET_ITEM(stores, j);
        if (!PyObject_TypeCheck(s, &Store_Type) || pyss_check_open((StoreObject *)s) < 0) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "stores are seqstore.Store");
            goto done;
        }
        ss[j] = ((StoreObject *)s)->map->s;
        w[j] = PyFloat_AsDouble(PyTuple_GET_ITEM(weights, j));
        if (w[j] == -1 && PyErr_Occurred()) goto done;
    }
    for (Py_ssize_t f = 0; f < n; f++)
        if (pyss_parse_collate_field(PyList_GET_ITEM(fields, f), ss[0], &cf[f]) < 0) goto done;
    bo = (BlendObject *)type->tp_alloc(type, 0);
    if (!bo) goto done;
    bo->stores = Py_NewRef(stores);
    bo->generation = pyss_generation;
    for (Py_ssize_t f = 0; f < n; f++) bo->mask_dtype[f] = pyss_mask_dtype(&cf[f]);
    ss_blend_loader_options o = SS_BLEND_LOADER_OPTIONS_INIT;
    o.nsources = (uint32_t)k;
    o.stores = ss;
    o.weights = w;
    o.seed = seed;
    o.shuffle = shuffle;
    o.stop = (ss_blend_stop)stop;
    o.batch_size = bs;
    o.world_size = world;
    o.rank = rank;
    o.num_workers = nw;
    o.worker = worker;
    o.drop_last = drop_last;
    o.fields = n ? cf : NULL;
    o.nfields = (uint32_t)n;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = capi_blend_loader_open(&bo->l, &o);
    Py_END_ALLOW_THREADS if (rc < 0) {
        Py_CLEAR(bo);
        pyss_raise(rc);
    }
done:
    PyMem_Free(ss);
    PyMem_Free(w);
    return (PyObject *)bo;
}

static void blend_dealloc(BlendObject *bo) {
    if (bo->l && bo->generation == pyss_generation) capi_blend_loader_free(bo->l);
    Py_XDECREF(bo->stores);
    Py_TYPE(bo)->tp_free((PyObject *)bo);
}

/* d[name + suffix] = a new array of `nd` dims copied from data. */
static int put_copy(PyObject *d, const char *name, const char *suffix, int typenum, int nd,
                    const npy_intp *shape, const void *data, size_t bytes) {
    PyObject *a = PyArray_SimpleNew(nd, (npy_intp *)shape, typenum);
    if (!a) return -1;
    if (bytes) memcpy(PyArray_DATA((PyArrayObject *)a), data, bytes);
    PyObject *key = PyUnicode_FromFormat("%s%s", name, suffix);
    int rc = key ? PyDict_SetItem(d, key, a) : -1;
    Py_XDECREF(key);
    Py_DECREF(a);
    return rc;
}

static int put_collated(PyObject *d, const ss_collated *c, ss_dtype mask_dtype) {
    npy_intp shape[SS_MAX_DIMS + 2], b = (npy_intp)c->batch, nb = b + 1;
    for (uint32_t k = 0; k < c->ndim; k++) shape[k] = (npy_intp)c->shape[k];
    if (put_copy(d, c->name, "", pyss_typenum(c->dtype), (int)c->ndim, shape, c->data,
                 c->data_bytes) < 0)
        return -1;
    if (!c->sequence) return 0;
    if (put_copy(d, c->name, "_lengths", NPY_INT64, 1, &b, c->lengths, (size_t)b * 8) < 0)
        return -1;
    if (c->mask) {
        npy_intp ms[2];
        pyss_mask_shape(ms, c);
        int mt = pyss_mask_typenum(mask_dtype, c);
        if (put_copy(d, c->name, "_mask", mt, 2, ms, c->mask, c->mask_bytes) < 0) return -1;
    }
    if (c->offsets &&
        put_copy(d, c->name, "_offsets", NPY_INT64, 1, &nb, c->offsets, (size_t)nb * 8) < 0)
        return -1;
    return 0;
}

static PyObject *blend_next(BlendObject *bo) {
    if (blend_check(bo) < 0) return NULL;
    const ss_blend_batch *b;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = capi_blend_loader_next(&b, bo->l);
    Py_END_ALLOW_THREADS if (rc == SS_ITEROVER) return NULL; /* StopIteration */
    if (rc < 0) return pyss_raise(rc);
    PyObject *d = PyDict_New();
    npy_intp n = (npy_intp)b->rows;
    if (!d || put_copy(d, "source", "", NPY_UINT32, 1, &n, b->sources, (size_t)n * 4) < 0 ||
        put_copy(d, "index", "", NPY_INT64, 1, &n, b->indices, (size_t)n * 8) < 0)
        goto fail;
    for (uint32_t k = 0; k < b->data.nfields; k++)
        if (put_collated(d, &b->data.fields[k], bo->mask_dtype[k]) < 0) goto fail;
    return d;
fail:
    Py_XDECREF(d);
    return NULL;
}

static PyObject *blend_state(BlendObject *bo, PyObject *unused) {
    (void)unused;
    if (blend_check(bo) < 0) return NULL;
    size_t need = capi_blend_loader_state_size(bo->l), len = 0;
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)need);
    if (!out) return NULL;
    int rc = capi_blend_loader_state_save(PyBytes_AS_STRING(out), need, &len, bo->l);
    if (rc < 0) {
        Py_DECREF(out);
        return pyss_raise(rc);
    }
    return out;
}

static PyObject *blend_load_state(BlendObject *bo, PyObject *arg) {
    Py_buffer b;
    if (blend_check(bo) < 0 || PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE) < 0) return NULL;
    int rc = capi_blend_loader_state_load(bo->l, b.buf, (size_t)b.len);
    PyBuffer_Release(&b);
    return rc < 0 ? pyss_raise(rc) : Py_NewRef(Py_None);
}

/* (count, epochs) per source: samples each gave over all consumers so far. */
static PyObject *blend_sources(BlendObject *bo, PyObject *unused) {
    (void)unused;
    if (blend_check(bo) < 0) return NULL;
    Py_ssize_t k = PyTuple_GET_SIZE(bo->stores);
    PyObject *out = PyList_New(k);
    for (Py_ssize_t j = 0; out && j < k; j++) {
        PyObject *t = Py_BuildValue("(KK)", capi_blend_loader_source_count(bo->l, (uint32_t)j),
                                    capi_blend_loader_source_epochs(bo->l, (uint32_t)j));
        if (!t)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, j, t);
    }
    return out;
}

static PyObject *blend_length(BlendObject *bo, void *unused) {
    (void)unused;
    if (blend_check(bo) < 0) return NULL;
    uint64_t n = capi_blend_loader_length(bo->l);
    return n == UINT64_MAX ? Py_NewRef(Py_None) : PyLong_FromUnsignedLongLong(n);
}

static PyObject *blend_close(BlendObject *bo, PyObject *unused) {
    (void)unused;
    if (bo->l && bo->generation == pyss_generation) capi_blend_loader_free(bo->l);
    bo->l = NULL;
    Py_RETURN_NONE;
}

static PyMethodDef blend_methods[] = {
    {"_state", (PyCFunction)blend_state, METH_NOARGS, "_state($self, /)\n--\n\n"
     "the saved position (bytes)"},
    {"_load_state", (PyCFunction)blend_load_state, METH_O, "_load_state($self, state, /)\n--\n\n"
     "continue from a saved position"},
    {"_sources", (PyCFunction)blend_sources, METH_NOARGS, "_sources($self, /)\n--\n\n"
     "(count, epochs) per source"},
    {"close", (PyCFunction)blend_close, METH_NOARGS, "close($self, /)\n--\n\n"
     "free the loader"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef blend_getset[] = {
    {"length", (getter)blend_length, NULL, "global samples of a finite stream, else None", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject Blend_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "seqstore._seqstore._Blend",
    .tp_basicsize = sizeof(BlendObject),
    .tp_dealloc = (destructor)blend_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "_Blend(stores, weights, fields, batch_size, seed, shuffle, stop, rank, world_size,\n"
              "worker, num_workers, drop_last)\n--\n\n"
              "The C blended loader (use seqstore.Blend).",
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)blend_next,
    .tp_methods = blend_methods,
    .tp_getset = blend_getset,
    .tp_new = blend_new,
};
