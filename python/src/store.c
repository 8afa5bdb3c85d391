/* SPDX-License-Identifier: BSD-2-Clause */
/* store.c - Store (an open store), FieldAccessor (one field's) and Map (the
 * C store, kept alive by every NumPy view over it). */
#include "pyss.h"

#include <sys/mman.h>

/* ------------------------------------------------------------------ Map */

static void map_dealloc(MapObject *m) {
    if (m->generation == pyss_generation) capi_close(m->s); /* else leaked: see pyss.h */
    if (m->priv) munmap(m->priv, m->size); /* this process's own mapping, even in a child */
    Py_TYPE(m)->tp_free((PyObject *)m);
}

PyTypeObject Map_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "seqstore._seqstore._Map",
    .tp_basicsize = sizeof(MapObject),
    .tp_dealloc = (destructor)map_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The memory map of an open store; the base of its NumPy views.",
};

/* Map the store's file a second time, privately (see MapObject). A failure
 * (e.g. no address space, strict overcommit) leaves priv NULL: views then
 * point into LMDB's map, as before. MAP_NORESERVE: written pages are charged
 * as they are copied, not the whole file up front. */
static void map_private(MapObject *m) {
    const void *base;
    uint64_t size;
    int fd;
    m->priv = NULL;
    if (capi_store_map(&base, &size, &fd, m->s) < 0 || size > SIZE_MAX) return;
    void *p = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, fd, 0);
    if (p == MAP_FAILED) return;
    m->lmdb = base;
    m->priv = p;
    m->size = (size_t)size;
}

/* ---------------------------------------------------------------- views */

int pyss_check_open(StoreObject *st) {
    if (st->map) return pyss_check_generation(st->map->generation, "store", st->path);
    PyErr_Format(pyss_ClosedError, "store '%U' is closed", st->path);
    return -1;
}

int pyss_check_store_of(StoreObject *st, const char *what) {
    if (st->map) return 0;
    PyErr_Format(pyss_ClosedError, "store '%U' is closed: this %s reads it no more", st->path,
                 what);
    return -1;
}

/* A read-only array over `v` whose base owns a reference to the map; of a
 * dataset with more shards than it keeps open, a read-only copy instead (the
 * shard under a view may be unmapped once others are read: ss_views_stable()). */
PyObject *pyss_view_array(StoreObject *st, uint32_t field, const ss_view *v) {
    const FieldShape *fs = &st->shape[field];
    npy_intp shape[SS_MAX_DIMS + 1];
    int nd = 0;
    if (fs->sequence) shape[nd++] = (npy_intp)v->length;
    for (int k = 0; k < fs->ndim; k++) shape[nd++] = fs->dims[k];
    PyArray_Descr *descr = PyArray_DescrFromType(fs->typenum); /* new reference, stolen */
    void *data = (void *)pyss_map_ptr(st->map, v->data);
    PyObject *a = PyArray_NewFromDescr(&PyArray_Type, descr, nd, shape, NULL, data,
                                       NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED, NULL);
    if (!a) return NULL;
    if (st->copy_views) {
        PyObject *c = PyArray_NewCopy((PyArrayObject *)a, NPY_CORDER);
        Py_DECREF(a);
        if (c) PyArray_CLEARFLAGS((PyArrayObject *)c, NPY_ARRAY_WRITEABLE);
        return c;
    }
    Py_INCREF(st->map);
    if (PyArray_SetBaseObject((PyArrayObject *)a, (PyObject *)st->map) < 0) {
        Py_DECREF(a);
        return NULL;
    }
    return a;
}

/* Python index -> example number, with negative indices and an IndexError. */
static int example_index(StoreObject *st, PyObject *key, uint64_t *out) {
    Py_ssize_t i = PyLong_CheckExact(key) ? PyLong_AsSsize_t(key)
                                          : PyNumber_AsSsize_t(key, PyExc_IndexError);
    if (i == -1 && PyErr_Occurred() && PyErr_ExceptionMatches(PyExc_OverflowError)) {
        PyErr_Clear(); /* as PyNumber_AsSsize_t(key, IndexError) reports it */
        PyErr_Format(PyExc_IndexError, "cannot fit '%s' into an index-sized integer",
                     Py_TYPE(key)->tp_name);
    }
    if (i == -1 && PyErr_Occurred()) return -1;
    Py_ssize_t n = (Py_ssize_t)st->count;
    if (i < 0) i += n;
    if (i < 0 || i >= n) {
        PyErr_Format(PyExc_IndexError, "example %zd out of range: store '%U' has %zd examples",
                     i < 0 ? i - n : i, st->path, n);
        return -1;
    }
    *out = (uint64_t)i;
    return 0;
}

/* SS_ENOTFOUND from ss_get() is a dataset's missing shard: StoreNotFoundError.
 * Of a remote dataset the read may first download a shard (seconds): the
 * GIL is released meanwhile, the map held against another thread's close(). */
static PyObject *get_one(StoreObject *st, uint32_t field, uint64_t index) {
    ss_view v;
    int rc;
    if (st->remote) {
        MapObject *map = (MapObject *)Py_NewRef(st->map);
        Py_BEGIN_ALLOW_THREADS rc = capi_get(&v, map->s, field, index);
        Py_END_ALLOW_THREADS
        if (rc < 0 || !st->map) { /* closed meanwhile: the view's map is going */
            Py_DECREF(map);
            return rc < 0 ? pyss_raise_file(rc) : (pyss_check_open(st), NULL);
        }
        Py_DECREF(map);
    } else {
        rc = capi_get(&v, st->map->s, field, index);
        if (rc < 0) return pyss_raise_file(rc);
    }
    return pyss_view_array(st, field, &v);
}

/* An integer array (or sequence) of example numbers -> a list of views. */
static PyObject *get_many(StoreObject *st, uint32_t field, PyObject *key) {
    PyArrayObject *idx = (PyArrayObject *)PyArray_FromAny(key, NULL, 0, 0, 0, NULL);
    if (!idx) return NULL;
    if (PyArray_NDIM(idx) != 1 || (PyArray_SIZE(idx) > 0 && !PyArray_ISINTEGER(idx))) {
        PyErr_Format(PyExc_TypeError,
                     "examples are selected by an int, a slice or a 1-D integer array, not %s "
                     "(a %d-D %s array)",
                     Py_TYPE(key)->tp_name, PyArray_NDIM(idx),
                     PyArray_DESCR(idx)->typeobj->tp_name);
        Py_DECREF(idx);
        return NULL;
    }
    npy_intp n = PyArray_SIZE(idx);
    PyObject *list = PyList_New(n);
    for (npy_intp k = 0; list && k < n; k++) {
        PyObject *item = PyArray_GETITEM(idx, PyArray_GETPTR1(idx, k));
        uint64_t i;
        PyObject *a = (item && example_index(st, item, &i) == 0) ? get_one(st, field, i) : NULL;
        Py_XDECREF(item);
        if (!a)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, k, a);
    }
    Py_DECREF(idx);
    return list;
}

static PyObject *get_slice(StoreObject *st, uint32_t field, PyObject *key) {
    Py_ssize_t start, stop, step;
    if (PySlice_Unpack(key, &start, &stop, &step) < 0) return NULL;
    Py_ssize_t n = PySlice_AdjustIndices((Py_ssize_t)st->count, &start, &stop, step);
    PyObject *list = PyList_New(n);
    for (Py_ssize_t k = 0; list && k < n; k++) {
        PyObject *a = get_one(st, field, (uint64_t)(start + k * step));
        if (!a)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, k, a);
    }
    return list;
}

/* field[key] for key = int, slice, or an integer array / sequence. */
static PyObject *field_subscript(StoreObject *st, uint32_t field, PyObject *key) {
    if (pyss_check_open(st) < 0) return NULL;
    if (PyLong_CheckExact(key)) { /* the common case, without the generic protocol */
        uint64_t i;
        return example_index(st, key, &i) < 0 ? NULL : get_one(st, field, i);
    }
    /* An ndarray has nb_index too: only 0-d ones are single indices. */
    if (PyIndex_Check(key) && !(PyArray_Check(key) && PyArray_NDIM((PyArrayObject *)key) > 0)) {
        uint64_t i;
        return example_index(st, key, &i) < 0 ? NULL : get_one(st, field, i);
    }
    if (PySlice_Check(key)) return get_slice(st, field, key);
    if (PyUnicode_Check(key) || PyBytes_Check(key) || PyFloat_Check(key)) {
        PyErr_Format(PyExc_TypeError,
                     "examples are selected by an int, a slice or an integer array, not %s",
                     Py_TYPE(key)->tp_name);
        return NULL;
    }
    return get_many(st, field, key);
}

/* -------------------------------------------------------- FieldAccessor */

typedef struct {
    PyObject_HEAD StoreObject *store;
    uint32_t field;
} FieldObject;

static void field_dealloc(FieldObject *f) {
    Py_XDECREF(f->store);
    Py_TYPE(f)->tp_free((PyObject *)f);
}

static PyObject *field_getitem(FieldObject *f, PyObject *key) {
    return field_subscript(f->store, f->field, key);
}

static Py_ssize_t field_len(FieldObject *f) {
    return pyss_check_open(f->store) < 0 ? -1 : (Py_ssize_t)f->store->count;
}

/* The stored lengths section of a sequence field (spec/FORMAT.md §7.3) as a
 * read-only view over the map, in its own dtype (the narrowest unsigned type
 * that holds the longest example); the base owns the map, so the view stays
 * valid after close(). NULL without an exception when there is no section. */
static PyObject *stored_lengths(StoreObject *st, uint32_t field) {
    const void *data;
    ss_dtype dt;
    uint64_t n;
    int rc = capi_lengths_view(&data, &dt, &n, st->map->s, field);
    if (rc == SS_ENOTFOUND || rc == SS_EINVAL) return NULL; /* old store, fixed field */
    if (rc < 0) return pyss_raise(rc);
    npy_intp len = (npy_intp)n;
    PyObject *a = PyArray_New(&PyArray_Type, 1, &len, pyss_typenum(dt), NULL,
                              (void *)pyss_map_ptr(st->map, data), 0,
                              NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED, NULL);
    if (a && PyArray_SetBaseObject((PyArrayObject *)a, Py_NewRef(st->map)) < 0) Py_CLEAR(a);
    return a;
}

/* Lengths of every example (time steps), read-only, cached per field (the
 * store reads one snapshot, so they never change). Zero-copy when the store
 * has the stored section (every store this library writes, §7.3). Else (a
 * fixed field, or a store written before the section) computed once from the
 * index into a u64 array: one pass over the index pages, 8 bytes an example. */
static PyObject *lengths_of(StoreObject *st, uint32_t field) {
    if (pyss_check_open(st) < 0) return NULL;
    if (st->lengths[field]) return Py_NewRef(st->lengths[field]);
    PyObject *a = stored_lengths(st, field);
    if (!a && PyErr_Occurred()) return NULL;
    if (!a) {
        npy_intp n = (npy_intp)st->count;
        a = PyArray_SimpleNew(1, &n, NPY_UINT64);
        if (!a) return NULL;
        int rc = capi_lengths(PyArray_DATA((PyArrayObject *)a), st->map->s, field, 0, st->count);
        if (rc < 0) {
            Py_DECREF(a);
            return pyss_raise(rc);
        }
        PyArray_CLEARFLAGS((PyArrayObject *)a, NPY_ARRAY_WRITEABLE);
    }
    st->lengths[field] = Py_NewRef(a);
    return a;
}

static PyObject *field_lengths(FieldObject *f, PyObject *unused) {
    (void)unused;
    return lengths_of(f->store, f->field);
}

static PyObject *field_name(FieldObject *f, void *unused) {
    (void)unused;
    return Py_NewRef(PyTuple_GET_ITEM(f->store->names, f->field));
}

static PyObject *field_repr(FieldObject *f) {
    return PyUnicode_FromFormat("<seqstore.FieldAccessor '%U' of '%U'>",
                                PyTuple_GET_ITEM(f->store->names, f->field), f->store->path);
}

/* sq_item: `for a in field` yields every example's array, in order (the
 * iteration ends at the IndexError past the last). */
static PyObject *field_item(FieldObject *f, Py_ssize_t i) {
    PyObject *key = PyLong_FromSsize_t(i);
    PyObject *a = key ? field_getitem(f, key) : NULL;
    Py_XDECREF(key);
    return a;
}

static PyMappingMethods field_as_mapping = {(lenfunc)field_len, (binaryfunc)field_getitem, NULL};
static PySequenceMethods field_as_sequence = {.sq_length = (lenfunc)field_len,
                                              .sq_item = (ssizeargfunc)field_item};

static PyMethodDef field_methods[] = {
    {"lengths", (PyCFunction)field_lengths, METH_NOARGS,
     "lengths($self, /)\n--\n\n"
     "Returns read-only array: time steps of every example. Zero-copy (the\n"
     "stored section, dtype the narrowest of uint8..uint64) when the store has it;\n"
     "else (fixed fields, stores written before it) a uint64 array computed\n"
     "from the index on the first call (one pass, 8 bytes per example). Cached:\n"
     "later calls return the same array."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef field_getset[] = {{"name", (getter)field_name, NULL, "the field's name", NULL},
                                     {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject FieldAccessor_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "seqstore._seqstore.FieldAccessor",
    .tp_basicsize = sizeof(FieldObject),
    .tp_dealloc = (destructor)field_dealloc,
    .tp_repr = (reprfunc)field_repr,
    .tp_as_mapping = &field_as_mapping,
    .tp_as_sequence = &field_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One field of a store (store[name]): field[i] -> read-only array over the map;\n"
              "field[a:b] and field[[i, j, ...]] -> lists of arrays; `for a in field`\n"
              "yields every example's array in order.",
    .tp_methods = field_methods,
    .tp_getset = field_getset,
};

/* ---------------------------------------------------------------- Store */

static PyObject *new_field(StoreObject *st, uint32_t f) {
    FieldObject *fo = PyObject_New(FieldObject, &FieldAccessor_Type);
    if (!fo) return NULL;
    fo->store = (StoreObject *)Py_NewRef(st);
    fo->field = f;
    return (PyObject *)fo;
}

int pyss_field_arg(StoreObject *st, PyObject *name, uint32_t *out) {
    if (!PyUnicode_Check(name)) {
        PyErr_Format(PyExc_TypeError, "a field is named by a str, not %s", Py_TYPE(name)->tp_name);
        return -1;
    }
    for (uint32_t k = 0; k < st->nfields; k++) {
        int eq = PyUnicode_Compare(PyTuple_GET_ITEM(st->names, k), name);
        if (eq == 0) {
            *out = k;
            return 0;
        }
        if (eq == -1 && PyErr_Occurred()) return -1;
    }
    PyErr_Format(PyExc_KeyError, "store '%U' has no field '%U' (fields: %R)", st->path, name,
                 st->names);
    return -1;
}

/* Fill names and shapes from the C schema. */
static int store_describe(StoreObject *st) {
    const ss_schema *sc = capi_schema(st->map->s);
    st->nfields = sc->nfields;
    st->count = capi_count(st->map->s);
    st->names = PyTuple_New(sc->nfields);
    if (!st->names) return -1;
    for (uint32_t k = 0; k < sc->nfields; k++) {
        const ss_field *f = &sc->fields[k];
        FieldShape *fs = &st->shape[k];
        fs->typenum = pyss_typenum(f->dtype);
        fs->sequence = f->sequence;
        fs->ndim = (int)f->ndim;
        for (uint32_t d = 0; d < f->ndim; d++) fs->dims[d] = (npy_intp)f->dims[d];
        PyObject *name = PyUnicode_FromString(f->name);
        if (!name) return -1;
        PyTuple_SET_ITEM(st->names, k, name);
    }
    return 0;
}

PyObject *pyss_open(PyObject *self, PyObject *args, PyObject *kw) {
    (void)self;
    static char *kwlist[] = {"path",   "incomplete", "random",   "nolock",   "verify",
                             "cache_dir", "cache_bytes", "endpoint", "region", "profile",
                             "parallel", "attempts", NULL};
    PyObject *path, *bytes = NULL;
    int incomplete = 0, random = 0, nolock = 0, verify = 0;
    /* the remote options (seqstore/remote.h): None/0 = the defaults */
    ss_remote_options ro = SS_REMOTE_OPTIONS_INIT;
    unsigned long long cache_bytes = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$ppppzKzzzII:open", kwlist, &path, &incomplete,
                                     &random, &nolock, &verify, &ro.cache_dir, &cache_bytes,
                                     &ro.endpoint, &ro.region, &ro.profile, &ro.parallel,
                                     &ro.attempts))
        return NULL;
    ro.cache_bytes = cache_bytes;
    if (!PyUnicode_FSConverter(path, &bytes)) return NULL;
    StoreObject *st = PyObject_New(StoreObject, &Store_Type);
    if (!st) {
        Py_DECREF(bytes);
        return NULL;
    }
    st->map = NULL;
    st->copy_views = 0;
    st->remote = strstr(PyBytes_AS_STRING(bytes), "://") != NULL;
    st->remote_kw = Py_BuildValue("{s:z,s:K,s:z,s:z,s:z,s:I,s:I}", "cache_dir", ro.cache_dir,
                                  "cache_bytes", cache_bytes, "endpoint", ro.endpoint, "region",
                                  ro.region, "profile", ro.profile, "parallel", ro.parallel,
                                  "attempts", ro.attempts);
    st->names = st->attrs = NULL;
    memset(st->lengths, 0, sizeof st->lengths);
    st->nfields = 0;
    st->count = 0;
    st->path = PyOS_FSPath(path);
    if (!st->remote_kw) goto fail;
    st->flags = (incomplete ? SS_OPEN_INCOMPLETE : 0) | (random ? SS_OPEN_RANDOM : 0) |
                (nolock ? SS_OPEN_NOLOCK : 0) | (verify ? SS_OPEN_VERIFY : 0);
    if (!st->path) goto fail;
    st->map = PyObject_New(MapObject, &Map_Type);
    if (!st->map) goto fail;
    st->map->s = NULL;
    st->map->priv = NULL;
    st->map->generation = pyss_generation;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = capi_open_url(&st->map->s, PyBytes_AS_STRING(bytes), st->flags, &ro);
    Py_END_ALLOW_THREADS if (rc < 0) {
        pyss_raise_file(rc);
        goto fail;
    }
    map_private(st->map);
    st->copy_views = !capi_views_stable(st->map->s);
    if (store_describe(st) < 0) goto fail;
    Py_DECREF(bytes);
    return (PyObject *)st;
fail:
    Py_DECREF(bytes);
    Py_DECREF(st);
    return NULL;
}

static void clear_lengths(StoreObject *st) {
    for (uint32_t k = 0; k < SS_MAX_FIELDS; k++) Py_CLEAR(st->lengths[k]);
}

static void store_dealloc(StoreObject *st) {
    clear_lengths(st);
    Py_CLEAR(st->attrs);
    Py_CLEAR(st->map);
    Py_CLEAR(st->names);
    Py_CLEAR(st->path);
    Py_CLEAR(st->remote_kw);
    Py_TYPE(st)->tp_free((PyObject *)st);
}

/* Closing drops the Store's reference to the map: the file is unmapped at
 * once unless views are still alive, which keep it (and stay valid) until
 * they go. Every later call on the Store raises ClosedError. */
static PyObject *store_close(StoreObject *st, PyObject *unused) {
    (void)unused;
    Py_CLEAR(st->map);
    Py_CLEAR(st->attrs);
    clear_lengths(st);
    Py_RETURN_NONE;
}

static PyObject *store_enter(StoreObject *st, PyObject *unused) {
    (void)unused;
    return pyss_check_open(st) < 0 ? NULL : Py_NewRef(st);
}

static PyObject *store_exit(StoreObject *st, PyObject *args) {
    (void)args;
    return store_close(st, NULL);
}

static Py_ssize_t store_len(StoreObject *st) {
    return pyss_check_open(st) < 0 ? -1 : (Py_ssize_t)st->count;
}

/* store[i] -> {field: array}; store["name"] -> FieldAccessor. */
static PyObject *store_getitem(StoreObject *st, PyObject *key) {
    if (pyss_check_open(st) < 0) return NULL;
    if (PyUnicode_Check(key)) {
        uint32_t f;
        return pyss_field_arg(st, key, &f) < 0 ? NULL : new_field(st, f);
    }
    if (!PyIndex_Check(key)) {
        PyErr_Format(PyExc_TypeError,
                     "store[key]: key is an example number (int) or a field name (str), not %s",
                     Py_TYPE(key)->tp_name);
        return NULL;
    }
    uint64_t i;
    if (example_index(st, key, &i) < 0) return NULL;
    PyObject *d = PyDict_New();
    for (uint32_t f = 0; d && f < st->nfields; f++) {
        PyObject *a = get_one(st, f, i);
        if (!a || PyDict_SetItem(d, PyTuple_GET_ITEM(st->names, f), a) < 0) Py_CLEAR(d);
        Py_XDECREF(a);
    }
    return d;
}

/* Example `i` of field `f` copied into a new array: as stored (mode 0), its
 * unsigned integers widened to int64 (mode 1: torch has no u16/u32/u64; a
 * u64 value above INT64_MAX is an OverflowError), or its 16-bit words as
 * int16 (mode 2: bf16, which torch views as bfloat16). */
static PyObject *example_copy(StoreObject *st, uint32_t f, uint64_t i, int mode) {
    const FieldShape *fs = &st->shape[f];
    ss_view v;
    int rc = capi_get(&v, st->map->s, f, i);
    if (rc < 0) return pyss_raise_file(rc);
    npy_intp shape[SS_MAX_DIMS + 1], n = 1;
    int nd = 0;
    if (fs->sequence) shape[nd++] = (npy_intp)v.length;
    for (int k = 0; k < fs->ndim; k++) shape[nd++] = fs->dims[k];
    for (int k = 0; k < nd; k++) n *= shape[k];
    int typenum = mode == 1 ? NPY_INT64 : mode == 2 ? NPY_INT16 : fs->typenum;
    PyObject *a = PyArray_SimpleNew(nd, shape, typenum);
    if (!a) return NULL;
    int64_t *dst = PyArray_DATA((PyArrayObject *)a);
    const unsigned char *src = v.data;
    if (mode != 1) {
        memcpy(dst, src, (size_t)PyArray_NBYTES((PyArrayObject *)a));
    } else if (fs->typenum == NPY_UINT16) {
        for (npy_intp k = 0; k < n; k++) {
            uint16_t x;
            memcpy(&x, src + 2 * k, 2);
            dst[k] = x;
        }
    } else if (fs->typenum == NPY_UINT32) {
        for (npy_intp k = 0; k < n; k++) {
            uint32_t x;
            memcpy(&x, src + 4 * k, 4);
            dst[k] = x;
        }
    } else {
        uint64_t x = 0;
        for (npy_intp k = 0; k < n && x <= INT64_MAX; k++) {
            memcpy(&x, src + 8 * k, 8);
            dst[k] = (int64_t)x;
        }
        if (x > INT64_MAX) {
            Py_DECREF(a);
            return PyErr_Format(PyExc_OverflowError, "uint64 value %llu does not fit int64",
                                (unsigned long long)x);
        }
    }
    return a;
}

/* _example(index, fields, /): one example as a tuple of new arrays, one per
 * entry of `fields` (field number * 4 + mode, see example_copy()), then the
 * index as a 0-d int64 array: seqstore.torch.Dataset's read, in one call. */
static PyObject *store_example(StoreObject *st, PyObject *const *args, Py_ssize_t nargs) {
    uint64_t i;
    if (nargs != 2 || !PyTuple_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "_example(index, fields): fields is a tuple of ints");
        return NULL;
    }
    if (pyss_check_open(st) < 0 || example_index(st, args[0], &i) < 0) return NULL;
    Py_ssize_t nf = PyTuple_GET_SIZE(args[1]);
    PyObject *out = PyTuple_New(nf + 1);
    for (Py_ssize_t k = 0; out && k < nf; k++) {
        long code = PyLong_AsLong(PyTuple_GET_ITEM(args[1], k));
        if (code == -1 && PyErr_Occurred()) {
            Py_CLEAR(out);
            break;
        }
        if (code < 0 || (unsigned long)code / 4 >= st->nfields || code % 4 > 2) {
            PyErr_Format(PyExc_ValueError, "_example: bad field code %ld", code);
            Py_CLEAR(out);
            break;
        }
        PyObject *a = example_copy(st, (uint32_t)(code / 4), i, (int)(code % 4));
        if (!a)
            Py_CLEAR(out);
        else
            PyTuple_SET_ITEM(out, k, a);
    }
    if (!out) return NULL;
    PyObject *ix = PyArray_SimpleNew(0, NULL, NPY_INT64);
    if (!ix) {
        Py_DECREF(out);
        return NULL;
    }
    *(int64_t *)PyArray_DATA((PyArrayObject *)ix) = (int64_t)i;
    PyTuple_SET_ITEM(out, nf, ix);
    return out;
}

static PyObject *store_field(StoreObject *st, PyObject *name) {
    uint32_t f;
    if (pyss_check_open(st) < 0 || pyss_field_arg(st, name, &f) < 0) return NULL;
    return new_field(st, f);
}

static PyObject *store_lengths(StoreObject *st, PyObject *name) {
    uint32_t f;
    if (pyss_check_open(st) < 0 || pyss_field_arg(st, name, &f) < 0) return NULL;
    return lengths_of(st, f);
}

/* The schema as a list of dicts, the form seqstore.create() accepts. */
static PyObject *store_schema(StoreObject *st, void *unused) {
    (void)unused;
    if (pyss_check_open(st) < 0) return NULL;
    const ss_schema *sc = capi_schema(st->map->s);
    PyObject *list = PyList_New(sc->nfields);
    for (uint32_t k = 0; list && k < sc->nfields; k++) {
        const ss_field *f = &sc->fields[k];
        PyObject *dims = PyTuple_New(f->ndim);
        for (uint32_t d = 0; dims && d < f->ndim; d++)
            PyTuple_SET_ITEM(dims, d, PyLong_FromUnsignedLongLong(f->dims[d]));
        PyObject *item = dims ? Py_BuildValue("{s:s,s:s,s:N,s:O}", "name", f->name, "dtype",
                                              capi_dtype_name(f->dtype), "shape", dims, "sequence",
                                              f->sequence ? Py_True : Py_False)
                              : NULL;
        if (!item)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, k, item);
    }
    return list;
}

/* One attribute decoded by type: text -> str, bytes -> bytes, typed -> a
 * read-only 1-D view over the map. */
static PyObject *attr_value(StoreObject *st, const ss_attr *a) {
    if (a->type == SS_ATTR_TEXT)
        return PyUnicode_DecodeUTF8(a->data, (Py_ssize_t)a->size, "surrogateescape");
    if (a->type == SS_ATTR_BYTES) return PyBytes_FromStringAndSize(a->data, (Py_ssize_t)a->size);
    int typenum = pyss_typenum((ss_dtype)a->type);
    size_t esize = capi_dtype_size((ss_dtype)a->type);
    if (typenum < 0 || esize == 0 || a->size % esize != 0)
        return PyErr_Format(pyss_Error, "store '%U': attribute '%s' has type %u and %llu bytes",
                            st->path, a->name, a->type, (unsigned long long)a->size);
    npy_intp n = (npy_intp)(a->size / esize);
    void *data = (void *)pyss_map_ptr(st->map, a->data);
    PyObject *arr = PyArray_New(&PyArray_Type, 1, &n, typenum, NULL, data, 0,
                                NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED, NULL);
    if (arr && PyArray_SetBaseObject((PyArrayObject *)arr, Py_NewRef(st->map)) < 0) Py_CLEAR(arr);
    return arr;
}

static PyObject *store_attrs(StoreObject *st, void *unused) {
    (void)unused;
    if (pyss_check_open(st) < 0) return NULL;
    if (st->attrs) return Py_NewRef(st->attrs);
    PyObject *d = PyDict_New();
    uint64_t n = capi_attr_count(st->map->s);
    for (uint64_t k = 0; d && k < n; k++) {
        ss_attr a;
        int rc = capi_attr_at(&a, st->map->s, k);
        PyObject *v = rc < 0 ? pyss_raise(rc) : attr_value(st, &a);
        if (!v || PyDict_SetItemString(d, a.name, v) < 0) Py_CLEAR(d);
        Py_XDECREF(v);
    }
    if (!d) return NULL;
    st->attrs = PyDictProxy_New(d);
    Py_DECREF(d);
    return Py_XNewRef(st->attrs);
}

static PyObject *store_names(StoreObject *st, void *unused) {
    (void)unused;
    return pyss_check_open(st) < 0 ? NULL : Py_NewRef(st->names);
}

static PyObject *store_path(StoreObject *st, void *unused) {
    (void)unused;
    return Py_NewRef(st->path);
}

static PyObject *store_copy_on_write(StoreObject *st, void *unused) {
    (void)unused;
    return pyss_check_open(st) < 0 ? NULL : PyBool_FromLong(st->map->priv != NULL);
}

static PyObject *store_verified(StoreObject *st, void *unused) {
    (void)unused;
    return PyBool_FromLong((st->flags & SS_OPEN_VERIFY) != 0);
}

/* The problems ss_verify() reports, kept as text while the GIL is released
 * (the callback runs on this thread without it): "where: what" lines, the
 * first VERIFY_KEEP of them. */
#define VERIFY_KEEP 1000
typedef struct {
    char *lines[VERIFY_KEEP];
    size_t n;
} verify_log;

static int verify_report(void *ctx, const ss_verify_problem *p) {
    verify_log *log = ctx;
    if (log->n == VERIFY_KEEP) return 0;
    char buf[1024];
    if (p->last_example > p->first_example)
        snprintf(buf, sizeof buf, "%s: %s (examples %llu to %llu)", p->where, p->what,
                 (unsigned long long)p->first_example, (unsigned long long)p->last_example - 1);
    else
        snprintf(buf, sizeof buf, "%s: %s", p->where, p->what);
    char *line = strdup(buf);
    if (line) log->lines[log->n++] = line; /* out of memory: the line is left out */
    return 0;
}

/* verify(): ss_verify() over the whole store; CorruptError (the message
 * names the first problem, .problems lists them) when it is damaged. The
 * map is held meanwhile: another thread's close() must not free the store
 * under the GIL-less check. */
static PyObject *store_verify(StoreObject *st, PyObject *unused) {
    (void)unused;
    if (pyss_check_open(st) < 0) return NULL;
    verify_log *log = PyMem_RawCalloc(1, sizeof *log);
    if (!log) return PyErr_NoMemory();
    MapObject *map = (MapObject *)Py_NewRef(st->map);
    uint64_t problems = 0;
    int rc;
    Py_BEGIN_ALLOW_THREADS;
    rc = capi_verify(&problems, map->s, verify_report, log);
    Py_END_ALLOW_THREADS;
    Py_DECREF(map);
    PyObject *list = PyList_New((Py_ssize_t)log->n);
    for (size_t k = 0; k < log->n; k++) {
        const char *text = log->lines[k];
        PyObject *line = list ? PyUnicode_DecodeUTF8(text, (Py_ssize_t)strlen(text), "replace")
                              : NULL;
        if (line)
            PyList_SET_ITEM(list, (Py_ssize_t)k, line);
        else
            Py_CLEAR(list);
        free(log->lines[k]);
    }
    PyMem_RawFree(log);
    if (!list) return NULL;
    if (rc < 0) pyss_raise_with(rc, "problems", list);
    Py_DECREF(list);
    if (rc < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *store_closed(StoreObject *st, void *unused) {
    (void)unused;
    return PyBool_FromLong(st->map == NULL);
}

/* Pickled by path: unpickling opens the file again (e.g. in a spawned worker),
 * with the same flags and object-storage options (cache, endpoint, ...). */
static PyObject *store_reduce(StoreObject *st, PyObject *unused) {
    (void)unused;
    PyObject *mod = PyImport_ImportModule("seqstore");
    PyObject *fn = mod ? PyObject_GetAttrString(mod, "_reopen") : NULL;
    Py_XDECREF(mod);
    if (!fn) return NULL;
    return Py_BuildValue("N(OIO)", fn, st->path, st->flags, st->remote_kw);
}

static PyObject *store_repr(StoreObject *st) {
    if (!st->map) return PyUnicode_FromFormat("<seqstore.Store '%U' (closed)>", st->path);
    return PyUnicode_FromFormat("<seqstore.Store '%U': %llu examples, fields %R>", st->path,
                                (unsigned long long)st->count, st->names);
}

/* sq_item: `for ex in store` yields every example as a dict, in order. */
static PyObject *store_item(StoreObject *st, Py_ssize_t i) {
    PyObject *key = PyLong_FromSsize_t(i);
    PyObject *d = key ? store_getitem(st, key) : NULL;
    Py_XDECREF(key);
    return d;
}

static PyMappingMethods store_as_mapping = {(lenfunc)store_len, (binaryfunc)store_getitem, NULL};
static PySequenceMethods store_as_sequence = {.sq_length = (lenfunc)store_len,
                                              .sq_item = (ssizeargfunc)store_item};

/* flat(name) -> seqstore.Flat (Python, over _flat_read / _flat_locate). */
static PyObject *store_flat(StoreObject *st, PyObject *name) {
    uint32_t f;
    if (pyss_check_open(st) < 0 || pyss_field_arg(st, name, &f) < 0) return NULL;
    PyObject *mod = PyImport_ImportModule("seqstore");
    PyObject *cls = mod ? PyObject_GetAttrString(mod, "Flat") : NULL;
    Py_XDECREF(mod);
    if (!cls) return NULL;
    PyObject *res = PyObject_CallFunctionObjArgs(cls, (PyObject *)st, name, NULL);
    Py_DECREF(cls);
    return res;
}

/* store.prefetch(examples): a hint; returns at once. */
static PyObject *store_prefetch(StoreObject *st, PyObject *arg) {
    if (pyss_check_open(st) < 0) return NULL;
    PyArrayObject *a = (PyArrayObject *)PyArray_FROMANY(arg, NPY_INT64, 1, 1, NPY_ARRAY_CARRAY);
    if (!a) return NULL;
    const int64_t *v = PyArray_DATA(a);
    npy_intp n = PyArray_SIZE(a);
    for (npy_intp k = 0; k < n; k++)
        if (v[k] < 0 || (uint64_t)v[k] >= st->count) {
            PyErr_Format(PyExc_IndexError, "prefetch: example %lld of %llu", (long long)v[k],
                         (unsigned long long)st->count);
            Py_DECREF(a);
            return NULL;
        }
    MapObject *map = (MapObject *)st->map;
    int rc = capi_prefetch(map->s, (const uint64_t *)v, (size_t)n);
    Py_DECREF(a);
    if (rc < 0) return pyss_raise(rc);
    Py_RETURN_NONE;
}

static PyMethodDef store_methods[] = {
    {"flat", (PyCFunction)store_flat, METH_O,
     "flat($self, name, /)\n--\n\n"
     "Returns Flat: the field's examples concatenated, sliceable"},
    {"_flat_size", (PyCFunction)pyss_store_flat_size, METH_O, "_flat_size($self, name, /)\n--\n\n"
     "rows of a field's flat stream"},
    {"_flat_read", (PyCFunction)pyss_store_flat_read, METH_VARARGS,
     "_flat_read($self, name, p, q, /)\n--\n\n"
     "rows [p, q) of the flat stream"},
    {"_flat_locate", (PyCFunction)pyss_store_flat_locate, METH_VARARGS,
     "_flat_locate($self, name, pos, /)\n--\n\n"
     "pos -> (example, offset)"},
    {"split", (PyCFunction)pyss_store_split, METH_O,
     "split($self, name, /)\n--\n\n"
     "Returns int64 array of the examples of the stored split"},
    {"kfold", (PyCFunction)(void (*)(void))pyss_store_kfold, METH_VARARGS | METH_KEYWORDS,
     "kfold($self, k, fold, *, shuffle=False, seed=0, split=None)\n--\n\n"
     "Returns (train, valid) index arrays"},
    {"bucket", (PyCFunction)pyss_store_bucket, METH_O,
     "bucket($self, name, /)\n--\n\n"
     "Returns (permutation, starts) of a stored bucket index"},
    {"verify", (PyCFunction)store_verify, METH_NOARGS,
     "verify($self, /)\n--\n\n"
     "Recompute every checksum of the store (header, index segments, data chunks,\n"
     "attributes; every shard of a dataset) and check its index and B-trees, as\n"
     "`seqstore verify` does: reads the whole file. Returns None when the store is\n"
     "sound; raises CorruptError otherwise, its message naming the first damaged\n"
     "block and .problems listing them all (\"field 'tokens' data chunk 5: data\n"
     "chunk checksum mismatch (examples 80 to 99)\", at most 1000)."},
    {"prefetch", (PyCFunction)store_prefetch, METH_O,
     "prefetch($self, examples, /)\n--\n\n"
     "Start downloading, in the background, the shards that hold `examples` (a\n"
     "1-d array or sequence of example numbers) of a dataset under a URL, at most\n"
     "`parallel` at once; a hint that returns at once (a full queue drops the\n"
     "rest, which the reads then fetch themselves). Nothing for a local store.\n\n"
     "Parameters\n----------\nexamples : array_like of int\n"
     "    Example numbers, each in [0, len(self)); IndexError otherwise."},
    {"close", (PyCFunction)store_close, METH_NOARGS,
     "close($self, /)\n--\n\n"
     "Close the store. Views already taken stay valid (they keep the map); every\n"
     "later call on the store raises seqstore.ClosedError."},
    {"__enter__", (PyCFunction)store_enter, METH_NOARGS, "__enter__($self, /)\n--\n\n"},
    {"__exit__", (PyCFunction)store_exit, METH_VARARGS,
     "__exit__($self, exc_type=None, exc=None, tb=None, /)\n--\n\n"},
    {"__reduce__", (PyCFunction)store_reduce, METH_NOARGS, "__reduce__($self, /)\n--\n\n"},
    {"_example", (PyCFunction)(void (*)(void))store_example, METH_FASTCALL,
     "_example($self, index, fields, /)\n--\n\n"
     "one example's fields as new arrays, then the index (seqstore.torch.Dataset)"},
    {"field", (PyCFunction)store_field, METH_O, "field($self, name, /)\n--\n\n"
     "Returns the field's accessor (as store[name] does)."},
    {"lengths", (PyCFunction)store_lengths, METH_O,
     "lengths($self, name, /)\n--\n\n"
     "Returns read-only array of every example's length in that field:\n"
     "a zero-copy view of the stored section when there is one (see\n"
     "FieldAccessor.lengths)"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef store_getset[] = {
    {"schema", (getter)store_schema, NULL, "list of {name, dtype, shape, sequence}", NULL},
    {"attrs", (getter)store_attrs, NULL, "read-only mapping name -> str / bytes / array", NULL},
    {"fields", (getter)store_names, NULL, "tuple of field names", NULL},
    {"path", (getter)store_path, NULL, "the path the store was opened with", NULL},
    {"closed", (getter)store_closed, NULL, "True after close()", NULL},
    {"verified", (getter)store_verified, NULL,
     "True when opened with verify=True: each data chunk's checksum is checked\n"
     "before the first view into it is handed out (CorruptError if it differs)",
     NULL},
    {"copy_on_write", (getter)store_copy_on_write, NULL,
     "True when views are over a private copy-on-write map of the file (always,\n"
     "unless it could not be mapped): a write that bypasses a view's read-only\n"
     "flag then changes only this Store's copy, never the file, and cannot fault.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject Store_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "seqstore._seqstore.Store",
    .tp_basicsize = sizeof(StoreObject),
    .tp_dealloc = (destructor)store_dealloc,
    .tp_repr = (reprfunc)store_repr,
    .tp_as_mapping = &store_as_mapping,
    .tp_as_sequence = &store_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An open store (seqstore.open()). store[i] -> {field: array};\n"
              "store['name'] -> FieldAccessor; len(store); `for ex in store` yields the\n"
              "examples in order; a context manager.",
    .tp_methods = store_methods,
    .tp_getset = store_getset,
};
