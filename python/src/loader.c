/* SPDX-License-Identifier: BSD-2-Clause */
/* loader.c - the C loader behind seqstore.Loader: options in, batches out as
 * NumPy arrays (copies by default; or read-only views of the loader's slot,
 * valid until the next batch, whose base keeps the loader alive). With `out`
 * the C loader collates each batch straight into the caller's arrays
 * (ss_loader_next_into()) and the batch's fields are views of them. */
#include "pyss.h"

typedef struct {
    PyObject_HEAD ss_loader *l;
    ss_pipeline *transforms; /* borrowed by l: freed after it */
    StoreObject *store;      /* keeps the Store (and so its map) alive */
    MapObject *map;
    int copy;
    unsigned generation;
    PyObject *out;               /* NULL, or a tuple per output field: (data array or None,
                                    mask array or None), held while the loader writes into them;
                                    with a ring, a list of such tuples, one per buffer set */
    const ss_loader_batch *held; /* ring: the batch handed out last, released at the next */
    ss_dtype mask_dtype[SS_MAX_FIELDS]; /* output field k's (pyss_mask_dtype()) */
} LoaderObject;

/* A Python int pad is exact (SS_VALUE_I64 or, above INT64_MAX, U64); a float
 * is a double. The collator refuses one the output dtype cannot hold. */
static int pyss_parse_pad(ss_collate_field *f, PyObject *pad) {
    if (PyLong_Check(pad)) {
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(pad, &overflow);
        if (v == -1 && PyErr_Occurred()) return -1;
        if (!overflow) {
            f->pad_kind = SS_VALUE_I64;
            f->pad_i64 = v;
            return 0;
        }
        unsigned long long u = overflow > 0 ? PyLong_AsUnsignedLongLong(pad) : 0;
        if (overflow < 0 || PyErr_Occurred()) {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError, "pad %R is outside [-2**63, 2**64)", pad);
            return -1;
        }
        f->pad_kind = SS_VALUE_U64;
        f->pad_u64 = u;
        return 0;
    }
    f->pad_value = PyFloat_AsDouble(pad);
    return f->pad_value == -1.0 && PyErr_Occurred() ? -1 : 0;
}

/* (name, dtype code, layout, pad, pad_left, pad_to_multiple, fixed_length,
 *  truncate_left, mask, sort_by_length) -> `f`, the name resolved in `s`. */
int pyss_parse_collate_field(PyObject *item, const ss_store *s, ss_collate_field *f) {
    ss_collate_field init = SS_COLLATE_FIELD_INIT;
    *f = init;
    int dtype, layout, mask, mask_dtype = 0;
    unsigned long long multiple, fixed_length;
    const char *name;
    PyObject *pad;
    if (!PyArg_ParseTuple(item, "siiOpKKpip|i", &name, &dtype, &layout, &pad, &f->pad_left,
                          &multiple, &fixed_length, &f->truncate_left, &mask, &f->sort_by_length,
                          &mask_dtype))
        return -1;
    if (pyss_parse_pad(f, pad) < 0) return -1;
    int rc = capi_field_index(&f->field, s, name);
    if (rc < 0) return pyss_raise_int(rc);
    f->dtype = (ss_dtype)dtype;
    f->layout = (ss_layout)layout;
    f->mask = (ss_mask_type)mask;
    f->mask_dtype = (ss_dtype)mask_dtype;
    f->pad_to_multiple = multiple;
    f->fixed = fixed_length > 0;
    f->fixed_length = fixed_length;
    return 0;
}

ss_dtype pyss_mask_dtype(const ss_collate_field *f) {
    switch (f->mask) {
    case SS_MASK_NONE:
        return (ss_dtype)0;
    case SS_MASK_U8:
        return SS_U8;
    case SS_MASK_F32:
        return SS_F32;
    case SS_MASK_DTYPE:
        return f->mask_dtype;
    }
    return (ss_dtype)0;
}

int pyss_mask_typenum(ss_dtype mask_dtype, const ss_collated *c) {
    return pyss_typenum(mask_dtype ? mask_dtype : c->dtype);
}

/* Channels-first data is [B][C...][T]; its mask is [B][T] all the same. */
void pyss_mask_shape(npy_intp shape[2], const ss_collated *c) {
    shape[0] = (npy_intp)c->shape[0];
    shape[1] = (npy_intp)(c->layout == SS_LAYOUT_CHANNELS_FIRST ? c->shape[c->ndim - 1]
                                                                 : c->shape[1]);
}

/* One (data, mask) pair per output field, each a writable C-contiguous
 * array or None. */
static int check_pairs(PyObject *out, uint32_t nf) {
    if (!PyTuple_Check(out) || PyTuple_GET_SIZE(out) != (Py_ssize_t)nf) {
        PyErr_Format(PyExc_TypeError, "out is a tuple of %u (data, mask) pairs", nf);
        return -1;
    }
    for (uint32_t k = 0; k < nf; k++) {
        PyObject *pair = PyTuple_GET_ITEM(out, k);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_SetString(PyExc_TypeError, "out entries are (data, mask) pairs");
            return -1;
        }
        for (int j = 0; j < 2; j++) {
            PyObject *a = PyTuple_GET_ITEM(pair, j);
            if (a != Py_None && (!PyArray_Check(a) || !PyArray_ISCARRAY((PyArrayObject *)a))) {
                PyErr_SetString(PyExc_TypeError,
                                "out arrays must be writable C-contiguous NumPy arrays");
                return -1;
            }
        }
    }
    return 0;
}

/* out: None, one set of pairs (check_pairs), or a list of them (a ring) ->
 * held by the loader. */
static int parse_out(LoaderObject *lo, PyObject *out, uint32_t nf) {
    if (out == Py_None) return 0;
    if (PyList_Check(out)) {
        if (PyList_GET_SIZE(out) < 1 || PyList_GET_SIZE(out) > 64) {
            PyErr_SetString(PyExc_ValueError, "a ring of out buffer sets has 1 to 64 sets");
            return -1;
        }
        for (Py_ssize_t k = 0; k < PyList_GET_SIZE(out); k++)
            if (check_pairs(PyList_GET_ITEM(out, k), nf) < 0) return -1;
    } else if (check_pairs(out, nf) < 0) {
        return -1;
    }
    lo->out = Py_NewRef(out);
    return 0;
}

static void out_buffers(ss_collate_buffers *b, PyObject *out);

/* A ring's buffer sets, flat (set k at k * nf), for ss_loader_options.ring
 * (copied at open); NULL with an exception on failure. */
static ss_collate_buffers *ring_buffers(PyObject *out, uint32_t nf) {
    Py_ssize_t r = PyList_GET_SIZE(out);
    ss_collate_buffers *b = PyMem_Calloc((size_t)r * nf, sizeof *b);
    if (!b) return (ss_collate_buffers *)PyErr_NoMemory();
    for (Py_ssize_t k = 0; k < r; k++) out_buffers(b + (size_t)k * nf, PyList_GET_ITEM(out, k));
    return b;
}

/* _Loader(store, fields, batch_size, max_tokens, bucket, shuffle, seed, rank,
 *         world_size, drop_last, threads, prefetch, copy, transforms, examples,
 *         out, remainder): remainder is an ss_remainder code (batch.remainder) */
static PyObject *loader_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"store",   "fields",   "batch_size", "max_tokens", "bucket",
                             "shuffle", "seed",     "rank",       "world_size", "drop_last",
                             "threads", "prefetch", "copy",       "transforms", "examples",
                             "out",     "remainder", NULL};
    StoreObject *st;
    PyObject *fields, *transforms = Py_None, *examples = Py_None, *out = Py_None;
    const char *bucket = NULL;
    unsigned long long batch_size, max_tokens, seed;
    unsigned rank, world, threads, prefetch;
    int shuffle, drop_last, copy, remainder = SS_REMAINDER_INCLUDE;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!O!KKzpKIIpIIp|OOOi:_Loader", kwlist, &Store_Type,
                                     &st, &PyList_Type, &fields, &batch_size, &max_tokens, &bucket,
                                     &shuffle, &seed, &rank, &world, &drop_last, &threads,
                                     &prefetch, &copy, &transforms, &examples, &out, &remainder))
        return NULL;
    if (transforms != Py_None && !PyList_Check(transforms))
        return PyErr_Format(PyExc_TypeError, "transforms is a list of specs");
    if (pyss_check_open(st) < 0) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(fields);
    if (n > SS_MAX_FIELDS)
        return PyErr_Format(PyExc_ValueError, "at most %d output fields", SS_MAX_FIELDS);
    ss_collate_field cf[SS_MAX_FIELDS];
    for (Py_ssize_t k = 0; k < n; k++)
        if (pyss_parse_collate_field(PyList_GET_ITEM(fields, k), st->map->s, &cf[k]) < 0)
            return NULL;
    ss_loader_options o = SS_LOADER_OPTIONS_INIT;
    ss_sampler_options so = SS_SAMPLER_OPTIONS_INIT;
    ss_batch_options bo = SS_BATCH_OPTIONS_INIT;
    o.sampler = &so;
    o.batch = &bo;
    so.kind = shuffle ? SS_SAMPLE_SHUFFLE : SS_SAMPLE_SEQUENTIAL;
    so.seed = seed;
    so.rank = rank;
    so.world_size = world;
    so.drop_last = drop_last;
    bo.batch_size = batch_size;
    bo.max_tokens = max_tokens;
    bo.remainder = (ss_remainder)remainder; /* checked by the C loader */
    o.bucket = bucket;
    o.fields = n ? cf : NULL;
    o.nfields = (uint32_t)n;
    o.threads = threads;
    o.prefetch = prefetch;
    /* collator: NULL, one thread per collation (the default) */
    LoaderObject *lo = (LoaderObject *)type->tp_alloc(type, 0);
    if (!lo) return NULL;
    lo->store = (StoreObject *)Py_NewRef(st);
    lo->map = (MapObject *)Py_NewRef(st->map);
    lo->copy = copy;
    lo->generation = pyss_generation;
    for (Py_ssize_t k = 0; k < n; k++) lo->mask_dtype[k] = pyss_mask_dtype(&cf[k]);
    o.into = out != Py_None;
    ss_selection *sel = NULL;
    if (parse_out(lo, out, n ? (uint32_t)n : st->nfields) < 0 ||
        pyss_pipeline_build(&lo->transforms, st, transforms) < 0 ||
        pyss_selection_build(&sel, st, examples) < 0) {
        Py_DECREF(lo);
        return NULL;
    }
    o.transforms = lo->transforms;
    o.selection = sel; /* copied by the loader */
    ss_collate_buffers *ring = NULL;
    if (lo->out && PyList_Check(lo->out)) {
        ring = ring_buffers(lo->out, n ? (uint32_t)n : st->nfields);
        if (!ring) {
            capi_selection_free(sel);
            Py_DECREF(lo);
            return NULL;
        }
        o.ring = ring;
        o.ring_size = (uint32_t)PyList_GET_SIZE(lo->out);
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = capi_loader_open(&lo->l, st->map->s, &o);
    Py_END_ALLOW_THREADS capi_selection_free(sel);
    PyMem_Free(ring);
    if (rc < 0) {
        Py_DECREF(lo);
        return pyss_raise(rc);
    }
    return (PyObject *)lo;
}

static void loader_dealloc(LoaderObject *lo) {
    if (lo->l && lo->generation == pyss_generation) {   /* a forked copy has no threads */
        Py_BEGIN_ALLOW_THREADS capi_loader_free(lo->l); /* joins its threads */
        Py_END_ALLOW_THREADS
    }
    if (lo->generation == pyss_generation) capi_pipeline_free(lo->transforms); /* else leaked */
    Py_XDECREF(lo->store);
    Py_XDECREF(lo->map);
    Py_XDECREF(lo->out);
    Py_TYPE(lo)->tp_free((PyObject *)lo);
}

static int loader_check(LoaderObject *lo) {
    if (lo->l) return pyss_check_generation(lo->generation, "loader of", lo->store->path);
    PyErr_SetString(pyss_ClosedError, "loader is closed");
    return -1;
}

/* An array of `nd` dims over `data`: a copy, or a read-only view whose base
 * is the loader (valid until the next batch). */
static PyObject *batch_array(LoaderObject *lo, int typenum, int nd, const npy_intp *shape,
                             const void *data, size_t bytes) {
    if (lo->copy) {
        PyObject *a = PyArray_SimpleNew(nd, (npy_intp *)shape, typenum);
        if (a && bytes) memcpy(PyArray_DATA((PyArrayObject *)a), data, bytes);
        return a;
    }
    PyObject *a = PyArray_New(&PyArray_Type, nd, (npy_intp *)shape, typenum, NULL, (void *)data, 0,
                              NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED, NULL);
    if (a && PyArray_SetBaseObject((PyArrayObject *)a, Py_NewRef(lo)) < 0) Py_CLEAR(a);
    return a;
}

static int put(PyObject *d, const char *name, const char *suffix, PyObject *v) {
    if (!v) return -1;
    PyObject *key = PyUnicode_FromFormat("%s%s", name, suffix);
    int rc = key ? PyDict_SetItem(d, key, v) : -1;
    Py_XDECREF(key);
    Py_DECREF(v);
    return rc;
}

/* A view of the caller's array `given` (which C wrote into), shaped as the
 * batch; its base is `given`. */
static PyObject *given_view(PyObject *given, int typenum, int nd, const npy_intp *shape,
                            void *data) {
    PyObject *v = PyArray_New(&PyArray_Type, nd, (npy_intp *)shape, typenum, NULL, data, 0,
                              NPY_ARRAY_CARRAY, NULL);
    if (v && PyArray_SetBaseObject((PyArrayObject *)v, Py_NewRef(given)) < 0) Py_CLEAR(v);
    return v;
}

/* The field's data (or mask): a view of the caller's array, else as batch_array(). */
static PyObject *field_array(LoaderObject *lo, PyObject *given, int typenum, int nd,
                             const npy_intp *shape, void *data, size_t bytes) {
    if (given && given != Py_None && data == PyArray_DATA((PyArrayObject *)given))
        return given_view(given, typenum, nd, shape, data);
    return batch_array(lo, typenum, nd, shape, data, bytes);
}

/* One collated field -> d[name], and name_lengths / _mask / _offsets. `given`
 * is the caller's (data, mask) pair or NULL. */
static int put_field(LoaderObject *lo, PyObject *d, const ss_collated *c, ss_dtype mask_dtype,
                     PyObject *given) {
    npy_intp shape[SS_MAX_DIMS + 2], b = (npy_intp)c->batch;
    for (uint32_t k = 0; k < c->ndim; k++) shape[k] = (npy_intp)c->shape[k];
    int typenum = pyss_typenum(c->dtype);
    PyObject *gd = given ? PyTuple_GET_ITEM(given, 0) : NULL;
    PyObject *gm = given ? PyTuple_GET_ITEM(given, 1) : NULL;
    if (put(d, c->name, "",
            field_array(lo, gd, typenum, (int)c->ndim, shape, c->data, c->data_bytes)) < 0)
        return -1;
    if (!c->sequence) return 0;
    if (put(d, c->name, "_lengths",
            batch_array(lo, NPY_INT64, 1, &b, c->lengths, (size_t)b * sizeof(int64_t))) < 0)
        return -1;
    if (c->mask) {
        npy_intp ms[2];
        pyss_mask_shape(ms, c);
        int mt = pyss_mask_typenum(mask_dtype, c);
        if (put(d, c->name, "_mask", field_array(lo, gm, mt, 2, ms, c->mask, c->mask_bytes)) < 0)
            return -1;
    }
    if (c->offsets) {
        npy_intp nb = b + 1;
        if (put(d, c->name, "_offsets",
                batch_array(lo, NPY_INT64, 1, &nb, c->offsets, (size_t)nb * sizeof(int64_t))) < 0)
            return -1;
    }
    if (c->perm && put(d, c->name, "_perm",
                       batch_array(lo, NPY_INT64, 1, &b, c->perm, (size_t)b * sizeof(int64_t))) < 0)
        return -1;
    return 0;
}

/* The caller's arrays as collate buffers (the loader holds them: C may write
 * into them without the GIL). */
static void out_buffers(ss_collate_buffers *b, PyObject *out) {
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(out); k++) {
        PyObject *gd = PyTuple_GET_ITEM(PyTuple_GET_ITEM(out, k), 0);
        PyObject *gm = PyTuple_GET_ITEM(PyTuple_GET_ITEM(out, k), 1);
        memset(&b[k], 0, sizeof b[k]);
        if (gd != Py_None) {
            b[k].data = PyArray_DATA((PyArrayObject *)gd);
            b[k].data_bytes = (uint64_t)PyArray_NBYTES((PyArrayObject *)gd);
        }
        if (gm != Py_None) {
            b[k].mask = PyArray_DATA((PyArrayObject *)gm);
            b[k].mask_bytes = (uint64_t)PyArray_NBYTES((PyArrayObject *)gm);
        }
    }
}

/* A ring: the previous batch's set goes back to the workers (its arrays are
 * overwritten from now on), and the next batch comes from its set. */
static int next_ring(const ss_loader_batch **batch, LoaderObject *lo) {
    int rc = 0;
    const ss_loader_batch *prev = lo->held;
    lo->held = NULL;
    Py_BEGIN_ALLOW_THREADS if (prev) rc = capi_loader_release(lo->l, prev);
    if (!rc) rc = capi_loader_next_into(batch, lo->l, NULL);
    Py_END_ALLOW_THREADS if (rc == 0) lo->held = *batch;
    return rc;
}

/* The caller's (data, mask) pair of output field k for `batch`, or NULL. */
static PyObject *given_pair(LoaderObject *lo, const ss_loader_batch *batch, uint32_t k) {
    if (!lo->out) return NULL;
    PyObject *set = lo->out;
    if (PyList_Check(set)) /* batch g is collated into set g mod R */
        set = PyList_GET_ITEM(set, (Py_ssize_t)(batch->position % (uint64_t)PyList_GET_SIZE(set)));
    return PyTuple_GET_ITEM(set, k);
}

static PyObject *loader_next(LoaderObject *lo) {
    if (loader_check(lo) < 0 || pyss_check_store_of(lo->store, "loader") < 0) return NULL;
    const ss_loader_batch *batch;
    ss_collate_buffers bufs[SS_MAX_FIELDS];
    int rc;
    if (lo->out && PyList_Check(lo->out)) {
        rc = next_ring(&batch, lo);
    } else {
        if (lo->out) out_buffers(bufs, lo->out);
        Py_BEGIN_ALLOW_THREADS rc =
            lo->out ? capi_loader_next_into(&batch, lo->l, bufs) : capi_loader_next(&batch, lo->l);
        Py_END_ALLOW_THREADS
    }
    if (rc == SS_ITEROVER) return NULL; /* StopIteration */
    if (rc < 0) return pyss_raise(rc);
    PyObject *d = PyDict_New();
    npy_intp b = (npy_intp)batch->rows;
    /* Store indices as int64 (torch has no uint64; an index never reaches 2^63). */
    if (!d ||
        put(d, "index", "",
            batch_array(lo, NPY_INT64, 1, &b, batch->indices, (size_t)b * sizeof(uint64_t))) < 0)
        goto fail;
    for (uint32_t k = 0; k < batch->data.nfields; k++)
        if (put_field(lo, d, &batch->data.fields[k], lo->mask_dtype[k], given_pair(lo, batch, k)) <
            0)
            goto fail;
    return d;
fail:
    Py_XDECREF(d);
    return NULL;
}

static PyObject *loader_set_epoch(LoaderObject *lo, PyObject *arg) {
    unsigned long long e = PyLong_AsUnsignedLongLong(arg);
    if ((e == (unsigned long long)-1 && PyErr_Occurred()) || loader_check(lo) < 0) return NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = capi_loader_set_epoch(lo->l, e);
    Py_END_ALLOW_THREADS return rc < 0 ? pyss_raise(rc) : Py_NewRef(Py_None);
}

static PyObject *loader_state(LoaderObject *lo, PyObject *unused) {
    (void)unused;
    if (loader_check(lo) < 0) return NULL;
    size_t need = capi_loader_state_size(lo->l), len = 0;
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)need);
    if (!out) return NULL;
    int rc = capi_loader_state_save(lo->l, PyBytes_AS_STRING(out), need, &len);
    if (rc < 0) {
        Py_DECREF(out);
        return pyss_raise(rc);
    }
    return out;
}

static PyObject *loader_load_state(LoaderObject *lo, PyObject *arg) {
    Py_buffer b;
    if (loader_check(lo) < 0 || PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE) < 0) return NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = capi_loader_state_load(lo->l, b.buf, (size_t)b.len);
    Py_END_ALLOW_THREADS PyBuffer_Release(&b);
    return rc < 0 ? pyss_raise(rc) : Py_NewRef(Py_None);
}

static PyObject *loader_close(LoaderObject *lo, PyObject *unused) {
    (void)unused;
    ss_loader *l = lo->generation == pyss_generation ? lo->l : NULL; /* see pyss.h */
    ss_pipeline *p = lo->generation == pyss_generation ? lo->transforms : NULL;
    lo->l = NULL;
    lo->held = NULL;
    lo->transforms = NULL;
    Py_BEGIN_ALLOW_THREADS capi_loader_free(l);
    Py_END_ALLOW_THREADS capi_pipeline_free(p); /* after the loader that borrowed it */
    Py_RETURN_NONE;
}

static PyObject *loader_get(LoaderObject *lo, void *which) {
    if (loader_check(lo) < 0) return NULL;
    uint64_t v = which == (void *)0   ? capi_loader_epoch(lo->l)
                 : which == (void *)1 ? capi_loader_batches(lo->l)
                                      : capi_loader_position(lo->l);
    return PyLong_FromUnsignedLongLong(v);
}

static PyMethodDef loader_methods[] = {
    {"set_epoch", (PyCFunction)loader_set_epoch, METH_O, "set_epoch($self, epoch, /)\n--\n\n"
     "start epoch e from its first batch"},
    {"_state", (PyCFunction)loader_state, METH_NOARGS, "_state($self, /)\n--\n\n"
     "the saved position (bytes)"},
    {"_load_state", (PyCFunction)loader_load_state, METH_O, "_load_state($self, state, /)\n--\n\n"
     "continue from a saved position"},
    {"close", (PyCFunction)loader_close, METH_NOARGS, "close($self, /)\n--\n\n"
     "stop the workers and free the loader"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef loader_getset[] = {
    {"epoch", (getter)loader_get, NULL, "the current epoch", (void *)0},
    {"batches", (getter)loader_get, NULL, "batches of this rank in the epoch", (void *)1},
    {"position", (getter)loader_get, NULL, "batches handed out in the epoch", (void *)2},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject Loader_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "seqstore._seqstore._Loader",
    .tp_basicsize = sizeof(LoaderObject),
    .tp_dealloc = (destructor)loader_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "_Loader(store, fields, batch_size, max_tokens, bucket, shuffle, seed, rank,\n"
              "world_size, drop_last, threads, prefetch, copy, transforms=None, examples=None,\n"
              "out=None, remainder=0)\n--\n\n"
              "The C loader (use seqstore.Loader).",
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)loader_next,
    .tp_methods = loader_methods,
    .tp_getset = loader_getset,
    .tp_new = loader_new,
};
