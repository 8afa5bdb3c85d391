/* SPDX-License-Identifier: BSD-2-Clause */
/* window.c - the C window reader behind seqstore.WindowReader: windows for
 * truncated BPTT with per-sequence hidden states registered back. Batches are
 * copied out (dicts of arrays); the reader remembers the one batch that may be
 * registered, so a stale batch can never reach the C library. */
#include "pyss.h"

typedef struct {
    PyObject_HEAD ss_window_reader *r;
    StoreObject *store; /* keeps the store and its map alive */
    MapObject *map;
    unsigned generation;
    const ss_window_batch *pending; /* the batch register() accepts, or NULL */
    uint64_t pending_id;
    int label_field;
    int label_per_step;
    int time_major;
    ss_pipeline *transforms; /* borrowed by r: freed after it */
    int state_typenum;
    size_t state_esize;
    uint64_t state_bytes; /* H; asking the reader would wait for its prefetch */
} WindowObject;

static int window_check(WindowObject *wo) {
    if (wo->r) return pyss_check_generation(wo->generation, "window reader of", wo->store->path);
    PyErr_SetString(pyss_ClosedError, "window reader is closed");
    return -1;
}

/* Optional contiguous buffer argument -> pointer and element count. */
static int opt_buffer(PyObject *obj, Py_buffer *b, size_t esize, size_t *n) {
    b->obj = NULL;
    *n = 0;
    if (obj == Py_None) return 0;
    if (PyObject_GetBuffer(obj, b, PyBUF_C_CONTIGUOUS) < 0) return -1;
    *n = (size_t)b->len / esize;
    return 0;
}

/* gain/offset hold one number per channel (the field's row elements): the C
 * reader reads that many, so fewer would be read past the buffer's end. */
static int check_channels(StoreObject *st, uint32_t field, const char *what, PyObject *given,
                          size_t n) {
    if (!given || field >= st->nfields) return 0; /* a bad field: the C reader says so */
    const FieldShape *fs = &st->shape[field];
    size_t channels = 1;
    for (int k = 0; k < fs->ndim; k++) channels *= (size_t)fs->dims[k];
    if (n == channels) return 0;
    PyErr_Format(PyExc_ValueError, "%s has %zu numbers for the %zu channels of field '%U'", what, n,
                 channels, PyTuple_GET_ITEM(st->names, field));
    return -1;
}

static PyObject *window_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"store",    "field",      "label_field", "window",      "overlap",
                             "lanes",    "state_size", "state_dtype", "mode",        "seed",
                             "shuffle",  "flags",      "out_dtype",   "gain",        "offset",
                             "examples", "threads",    "gain_attr",   "offset_attr", "max_pending",
                             "epoch_windows", "initial_state", "transforms", "prefetch", NULL};
    StoreObject *st;
    ss_window_options o = SS_WINDOW_OPTIONS_INIT;
    unsigned long long window, overlap, state_size, seed;
    int state_dtype, mode, out_dtype, label; /* label: -1 = none */
    PyObject *gain, *offset, *examples, *init = Py_None, *transforms = Py_None;
    unsigned long long epoch_windows = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!IiKKIKiiKpIiOOOi|zzIKOOI:_WindowReader", kwlist,
                                     &Store_Type, &st, &o.field, &label, &window, &overlap,
                                     &o.lanes, &state_size, &state_dtype, &mode, &seed, &o.shuffle,
                                     &o.flags, &out_dtype, &gain, &offset, &examples, &o.threads,
                                     &o.gain_attr, &o.offset_attr, &o.max_pending, &epoch_windows,
                                     &init, &transforms, &o.prefetch))
        return NULL;
    if (pyss_check_open(st) < 0) return NULL;
    if (transforms != Py_None && !PyList_Check(transforms))
        return PyErr_Format(PyExc_TypeError, "transforms is a list of specs");
    o.epoch_windows = epoch_windows;
    o.label_field = label < 0 ? SS_FIELD_NONE : (uint32_t)label;
    o.window = window;
    o.overlap = overlap;
    o.state_size = state_size;
    o.state_dtype = (ss_dtype)state_dtype;
    o.mode = (ss_window_mode)mode;
    o.seed = seed;
    o.out_dtype = (ss_dtype)out_dtype;
    Py_buffer bg, bo, be, bi;
    size_t ng, no, ne, ni;
    if (opt_buffer(gain, &bg, sizeof(double), &ng) < 0) return NULL;
    if (opt_buffer(offset, &bo, sizeof(double), &no) < 0) goto fail_g;
    if (opt_buffer(examples, &be, sizeof(uint64_t), &ne) < 0) goto fail_o;
    if (opt_buffer(init, &bi, 1, &ni) < 0) goto fail_e;
    if (check_channels(st, o.field, "gain", bg.obj, ng) < 0 ||
        check_channels(st, o.field, "offset", bo.obj, no) < 0)
        goto fail_i;
    size_t state_bytes = state_size * (state_dtype ? capi_dtype_size((ss_dtype)state_dtype) : 1);
    if (bi.obj && ni != state_bytes) { /* the C reader copies state_size elements */
        PyErr_Format(PyExc_ValueError, "initial_state has %zu bytes; state_size %llu of the "
                                       "state dtype needs %zu",
                     ni, state_size, state_bytes);
        goto fail_i;
    }
    o.initial_state = bi.obj ? bi.buf : NULL;
    o.gain = bg.obj ? bg.buf : NULL;
    o.offset = bo.obj ? bo.buf : NULL;
    o.n_gain = ng;
    o.n_offset = no;
    o.examples = be.obj ? be.buf : NULL;
    o.n_examples = ne;
    WindowObject *wo = (WindowObject *)type->tp_alloc(type, 0);
    if (!wo) goto fail_i;
    wo->store = (StoreObject *)Py_NewRef(st);
    wo->map = (MapObject *)Py_NewRef(st->map);
    wo->generation = pyss_generation;
    wo->label_field = label;
    wo->label_per_step = (o.flags & SS_WINDOW_LABEL_PER_STEP) != 0;
    wo->time_major = (o.flags & SS_WINDOW_TIME_MAJOR) != 0;
    wo->state_typenum = state_dtype ? pyss_typenum((ss_dtype)state_dtype) : NPY_UINT8;
    wo->state_esize = state_dtype ? capi_dtype_size((ss_dtype)state_dtype) : 1;
    if (transforms != Py_None && PyList_GET_SIZE(transforms) > 0) {
        if (pyss_pipeline_build(&wo->transforms, st, transforms) < 0) {
            Py_DECREF(wo);
            wo = NULL;
            goto fail_i;
        }
        o.transforms = wo->transforms;
    }
    /* gain/offset/examples/initial_state are copied at open (bptt.h); the
     * pipeline is borrowed and freed after the reader */
    int rc = capi_window_open(&wo->r, st->map->s, &o);
    PyBuffer_Release(&bi);
    PyBuffer_Release(&be);
    PyBuffer_Release(&bo);
    PyBuffer_Release(&bg);
    if (rc < 0) {
        Py_DECREF(wo);
        return pyss_raise(rc);
    }
    ss_window_info info;
    capi_window_info(&info, wo->r);
    wo->state_bytes = info.state_bytes;
    return (PyObject *)wo;
fail_i:
    PyBuffer_Release(&bi);
fail_e:
    PyBuffer_Release(&be);
fail_o:
    PyBuffer_Release(&bo);
fail_g:
    PyBuffer_Release(&bg);
    return NULL;
}

static void window_dealloc(WindowObject *wo) {
    if (wo->generation == pyss_generation) { /* else leaked (pyss.h) */
        capi_window_free(wo->r);
        capi_pipeline_free(wo->transforms);
    }
    Py_XDECREF(wo->store);
    Py_XDECREF(wo->map);
    Py_TYPE(wo)->tp_free((PyObject *)wo);
}

/* A new array of `nd` dims holding a copy of `data`. */
static PyObject *copy_array(int typenum, int nd, const npy_intp *shape, const void *data) {
    PyObject *a = PyArray_SimpleNew(nd, (npy_intp *)shape, typenum);
    if (a && data)
        memcpy(PyArray_DATA((PyArrayObject *)a), data, PyArray_NBYTES((PyArrayObject *)a));
    return a;
}

static int set(PyObject *d, const char *key, PyObject *v) {
    if (!v) return -1;
    int rc = PyDict_SetItemString(d, key, v);
    Py_DECREF(v);
    return rc;
}

static int put_label(WindowObject *wo, PyObject *d, const ss_window_batch *b) {
    const FieldShape *fs = &wo->store->shape[wo->label_field];
    npy_intp shape[SS_MAX_DIMS + 2];
    int nd = 0;
    npy_intp size = b->size, w = (npy_intp)b->window;
    if (wo->label_per_step) {
        shape[nd++] = wo->time_major ? w : size;
        shape[nd++] = wo->time_major ? size : w;
    } else {
        shape[nd++] = size;
    }
    for (int k = 0; k < fs->ndim; k++) shape[nd++] = fs->dims[k];
    return set(d, "label", copy_array(fs->typenum, nd, shape, b->label));
}

/* The batch as a dict of copies. */
static PyObject *batch_dict(WindowObject *wo, const ss_window_batch *b) {
    npy_intp size = b->size, w = (npy_intp)b->window, c = b->channels;
    npy_intp data_shape[3] = {wo->time_major ? w : size, wo->time_major ? size : w, c};
    npy_intp st[2] = {size, 0};
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    st[1] = (npy_intp)(wo->state_bytes / wo->state_esize);
    int bad = set(d, "id", PyLong_FromUnsignedLongLong(b->id)) < 0 ||
              set(d, "epoch", PyLong_FromUnsignedLongLong(b->epoch)) < 0 ||
              set(d, "data", copy_array(pyss_typenum(b->dtype), 3, data_shape, b->data)) < 0 ||
              set(d, "mask", copy_array(NPY_BOOL, 1, &size, b->mask)) < 0 ||
              set(d, "step_mask", copy_array(NPY_BOOL, 2, data_shape, b->step_mask)) < 0 ||
              set(d, "reset", copy_array(NPY_BOOL, 1, &size, b->reset)) < 0 ||
              set(d, "example", copy_array(NPY_INT64, 1, &size, b->example)) < 0 ||
              set(d, "start", copy_array(NPY_INT64, 1, &size, b->start)) < 0 ||
              set(d, "length", copy_array(NPY_INT64, 1, &size, b->length)) < 0 ||
              set(d, "index", copy_array(NPY_INT64, 1, &size, b->index)) < 0 ||
              (b->state && set(d, "state", copy_array(wo->state_typenum, 2, st, b->state)) < 0) ||
              (b->label && put_label(wo, d, b) < 0);
    if (bad) Py_CLEAR(d);
    return d;
}

static PyObject *window_next(WindowObject *wo) {
    if (window_check(wo) < 0 || pyss_check_store_of(wo->store, "window reader") < 0) return NULL;
    const ss_window_batch *b;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = capi_window_next(&b, wo->r);
    Py_END_ALLOW_THREADS if (rc == SS_ITEROVER) return NULL; /* end of the epoch; the next
                                                                 call starts the next one */
    if (rc < 0) return pyss_raise(rc);
    wo->pending = b;
    wo->pending_id = b->id;
    return batch_dict(wo, b);
}

/* _register(batch id, states or None) */
static PyObject *window_register(WindowObject *wo, PyObject *args) {
    unsigned long long id;
    PyObject *states;
    if (window_check(wo) < 0 || !PyArg_ParseTuple(args, "KO:_register", &id, &states)) return NULL;
    if (!wo->pending || id != wo->pending_id)
        return PyErr_Format(PyExc_ValueError,
                            "batch %llu is not the reader's latest unregistered batch%s", id,
                            wo->pending ? "" : " (it has none)");
    const ss_window_batch *b = wo->pending;
    const void *data = NULL;
    if (states != Py_None) {
        PyArrayObject *a = (PyArrayObject *)states;
        if (!PyArray_Check(states) || PyArray_TYPE(a) != wo->state_typenum ||
            !PyArray_IS_C_CONTIGUOUS(a) ||
            (uint64_t)PyArray_NBYTES(a) != (uint64_t)b->size * wo->state_bytes)
            return PyErr_Format(PyExc_TypeError,
                                "states must be a C-contiguous [%u, H] array "
                                "of the state dtype",
                                b->size);
        data = PyArray_DATA(a);
    }
    int rc;
    /* it waits for the batch being collated ahead: let other threads run */
    Py_BEGIN_ALLOW_THREADS rc = capi_window_register(wo->r, b, data);
    Py_END_ALLOW_THREADS if (rc < 0) return pyss_raise(rc);
    wo->pending = NULL;
    Py_RETURN_NONE;
}

static PyObject *window_set_epoch(WindowObject *wo, PyObject *arg) {
    unsigned long long e = PyLong_AsUnsignedLongLong(arg);
    if ((e == (unsigned long long)-1 && PyErr_Occurred()) || window_check(wo) < 0) return NULL;
    int rc = capi_window_set_epoch(wo->r, e);
    if (rc < 0) return pyss_raise(rc);
    wo->pending = NULL;
    Py_RETURN_NONE;
}

static PyObject *window_info(WindowObject *wo, PyObject *unused) {
    (void)unused;
    if (window_check(wo) < 0) return NULL;
    ss_window_info i;
    capi_window_info(&i, wo->r);
    return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K,s:I,s:K}", "sequences", i.sequences, "eligible",
                         i.eligible, "too_short", i.too_short, "epoch_windows", i.epoch_windows,
                         "epoch", i.epoch, "windows_out", i.windows_out, "classes", i.classes,
                         "state_bytes", i.state_bytes);
}

static PyObject *window_save(WindowObject *wo, PyObject *unused) {
    (void)unused;
    if (window_check(wo) < 0) return NULL;
    size_t n = capi_window_save_size(wo->r);
    PyObject *bytes = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n);
    if (!bytes) return NULL;
    int rc = capi_window_save(PyBytes_AS_STRING(bytes), n, wo->r);
    if (rc < 0) {
        Py_DECREF(bytes);
        return pyss_raise(rc);
    }
    return bytes;
}

static PyObject *window_restore(WindowObject *wo, PyObject *arg) {
    Py_buffer b;
    if (window_check(wo) < 0 || PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE) < 0) return NULL;
    int rc = capi_window_restore(wo->r, b.buf, (size_t)b.len);
    PyBuffer_Release(&b);
    if (rc < 0) return pyss_raise(rc);
    wo->pending = NULL;
    Py_RETURN_NONE;
}

static PyObject *window_close(WindowObject *wo, PyObject *unused) {
    (void)unused;
    if (wo->generation == pyss_generation) {
        capi_window_free(wo->r);
        capi_pipeline_free(wo->transforms);
    }
    wo->r = NULL;
    wo->transforms = NULL;
    wo->pending = NULL;
    Py_RETURN_NONE;
}

static PyMethodDef window_methods[] = {
    {"_register", (PyCFunction)window_register, METH_VARARGS,
     "_register($self, id, states, /)\n--\n\n"
     "register a batch's final states"},
    {"set_epoch", (PyCFunction)window_set_epoch, METH_O, "set_epoch($self, epoch, /)\n--\n\n"
     "restart at epoch e"},
    {"info", (PyCFunction)window_info, METH_NOARGS, "info($self, /)\n--\n\n"
     "facts about the reader (dict)"},
    {"_save", (PyCFunction)window_save, METH_NOARGS, "_save($self, /)\n--\n\n"
     "the position and states (bytes)"},
    {"_restore", (PyCFunction)window_restore, METH_O, "_restore($self, state, /)\n--\n\n"
     "continue from _save()"},
    {"close", (PyCFunction)window_close, METH_NOARGS, "close($self, /)\n--\n\n"
     "free the reader"},
    {NULL, NULL, 0, NULL}};

PyTypeObject Window_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "seqstore._seqstore._WindowReader",
    .tp_basicsize = sizeof(WindowObject),
    .tp_dealloc = (destructor)window_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "_WindowReader(store, field, label_field, window, overlap, lanes, state_size,\n"
              "state_dtype, mode, seed, shuffle, flags, out_dtype, gain, offset, examples,\n"
              "threads, gain_attr=None, offset_attr=None, max_pending=0, epoch_windows=0,\n"
              "initial_state=None, transforms=None, prefetch=0)\n--\n\n"
              "The C window reader (use seqstore.WindowReader).",
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)window_next,
    .tp_methods = window_methods,
    .tp_new = window_new,
};
