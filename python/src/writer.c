/* SPDX-License-Identifier: BSD-2-Clause */
/* writer.c - the C writer behind seqstore.Writer. The Python layer
 * (seqstore/_writer.py) turns user values into arrays of the exact dtype and
 * shape; this file checks them again (never trusting the caller with a
 * pointer) and hands them to the C writer. */
#include "pyss.h"

typedef struct {
    PyObject_HEAD ss_writer *w; /* NULL once closed */
    PyObject *path;
    uint32_t nfields;
    FieldShape shape[SS_MAX_FIELDS];
    PyObject *names; /* tuple of str */
    unsigned generation;
} WriterObject;

static int writer_check(WriterObject *wo) {
    if (wo->w) return pyss_check_generation(wo->generation, "writer of", wo->path);
    PyErr_Format(pyss_ClosedError, "writer of '%U' is closed", wo->path);
    return -1;
}

/* Parse one normalised field (name, dtype code, sequence, dims) into `f`;
 * `f->name` borrows from the tuple. */
static int parse_field(PyObject *item, ss_field *f) {
    PyObject *dims;
    int dtype, sequence;
    if (!PyArg_ParseTuple(item, "siiO!", &f->name, &dtype, &sequence, &PyTuple_Type, &dims))
        return -1;
    Py_ssize_t nd = PyTuple_GET_SIZE(dims);
    if (nd > SS_MAX_DIMS) {
        PyErr_Format(PyExc_ValueError, "field '%s': at most %d trailing dimensions, not %zd",
                     f->name, SS_MAX_DIMS, nd);
        return -1;
    }
    f->dtype = (ss_dtype)dtype;
    f->sequence = sequence;
    f->ndim = (uint32_t)nd;
    for (Py_ssize_t d = 0; d < nd; d++) {
        long long v = PyLong_AsLongLong(PyTuple_GET_ITEM(dims, d));
        if (v == -1 && PyErr_Occurred()) return -1;
        if (v < 1) {
            PyErr_Format(PyExc_ValueError, "field '%s': dimension %zd is %lld, must be >= 1",
                         f->name, d, v);
            return -1;
        }
        f->dims[d] = (uint64_t)v;
    }
    return 0;
}

static int writer_describe(WriterObject *wo, const ss_field *fields, uint32_t n) {
    wo->nfields = n;
    wo->names = PyTuple_New(n);
    if (!wo->names) return -1;
    for (uint32_t k = 0; k < n; k++) {
        FieldShape *fs = &wo->shape[k];
        fs->typenum = pyss_typenum(fields[k].dtype);
        fs->sequence = fields[k].sequence;
        fs->ndim = (int)fields[k].ndim;
        for (uint32_t d = 0; d < fields[k].ndim; d++) fs->dims[d] = (npy_intp)fields[k].dims[d];
        PyObject *name = PyUnicode_FromString(fields[k].name);
        if (!name) return -1;
        PyTuple_SET_ITEM(wo->names, k, name);
    }
    return 0;
}

/* _create(path, fields, force): fields is a sequence of (name, code, seq, dims). */
PyObject *pyss_writer_create(PyObject *self, PyObject *args, PyObject *kw) {
    (void)self;
    static char *kwlist[] = {"path", "fields", "force", NULL};
    PyObject *path, *list, *bytes = NULL;
    int force = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO!p:_create", kwlist, &path, &PyList_Type, &list,
                                     &force))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(list);
    if (n < 1 || n > SS_MAX_FIELDS)
        return PyErr_Format(PyExc_ValueError, "a schema has 1 to %d fields, not %zd", SS_MAX_FIELDS,
                            n);
    ss_field fields[SS_MAX_FIELDS];
    memset(fields, 0, sizeof fields); /* dims past ndim must be 0 */
    for (Py_ssize_t k = 0; k < n; k++)
        if (parse_field(PyList_GET_ITEM(list, k), &fields[k]) < 0) return NULL;
    if (!PyUnicode_FSConverter(path, &bytes)) return NULL;
    WriterObject *wo = PyObject_New(WriterObject, &Writer_Type);
    if (!wo) {
        Py_DECREF(bytes);
        return NULL;
    }
    wo->w = NULL;
    wo->names = NULL;
    wo->generation = pyss_generation;
    wo->path = PyOS_FSPath(path);
    if (!wo->path || writer_describe(wo, fields, (uint32_t)n) < 0) goto fail;
    ss_schema schema = {(uint32_t)n, fields};
    int rc;
    Py_BEGIN_ALLOW_THREADS rc =
        capi_writer_create(&wo->w, PyBytes_AS_STRING(bytes), &schema, force);
    Py_END_ALLOW_THREADS if (rc < 0) {
        pyss_raise(rc);
        goto fail;
    }
    Py_DECREF(bytes);
    return (PyObject *)wo;
fail:
    Py_DECREF(bytes);
    Py_DECREF(wo);
    return NULL;
}

static void writer_dealloc(WriterObject *wo) {
    /* unfinished: the store stays incomplete; a forked copy is leaked (pyss.h) */
    if (wo->generation == pyss_generation) capi_writer_free(wo->w);
    Py_XDECREF(wo->path);
    Py_XDECREF(wo->names);
    Py_TYPE(wo)->tp_free((PyObject *)wo);
}

/* Check that `a` is exactly what field k stores; fill `v`. */
static int check_value(WriterObject *wo, uint32_t k, PyObject *a, ss_value *v) {
    const FieldShape *fs = &wo->shape[k];
    PyObject *name = PyTuple_GET_ITEM(wo->names, k);
    if (!PyArray_Check(a) || !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)a) ||
        PyArray_TYPE((PyArrayObject *)a) != fs->typenum ||
        !PyArray_ISNOTSWAPPED((PyArrayObject *)a)) {
        PyErr_Format(PyExc_TypeError,
                     "field '%U': expected a C-contiguous array of the field's dtype", name);
        return -1;
    }
    PyArrayObject *arr = (PyArrayObject *)a;
    int lead = fs->sequence ? 1 : 0;
    int ok = PyArray_NDIM(arr) == lead + fs->ndim;
    for (int d = 0; ok && d < fs->ndim; d++) ok = PyArray_DIM(arr, lead + d) == fs->dims[d];
    if (!ok) {
        PyObject *shape = PyObject_GetAttrString(a, "shape");
        PyErr_Format(PyExc_ValueError, "field '%U': an array of shape %R does not fit the field",
                     name, shape);
        Py_XDECREF(shape);
        return -1;
    }
    v->data = PyArray_DATA(arr);
    v->length = fs->sequence ? (uint64_t)PyArray_DIM(arr, 0) : 1;
    return 0;
}

static PyObject *writer_append(WriterObject *wo, PyObject *seq) {
    if (writer_check(wo) < 0) return NULL;
    if (!PyTuple_Check(seq) || PyTuple_GET_SIZE(seq) != (Py_ssize_t)wo->nfields)
        return PyErr_Format(PyExc_TypeError, "_append takes a tuple of %u arrays", wo->nfields);
    ss_value values[SS_MAX_FIELDS];
    for (uint32_t k = 0; k < wo->nfields; k++)
        if (check_value(wo, k, PyTuple_GET_ITEM(seq, k), &values[k]) < 0) return NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = capi_writer_append(wo->w, values);
    Py_END_ALLOW_THREADS return rc < 0 ? pyss_raise(rc) : Py_NewRef(Py_None);
}

/* _set_attr(name, type code, bytes-like) */
static PyObject *writer_set_attr(WriterObject *wo, PyObject *args) {
    const char *name;
    unsigned type;
    Py_buffer buf;
    if (writer_check(wo) < 0 || !PyArg_ParseTuple(args, "sIy*:_set_attr", &name, &type, &buf))
        return NULL;
    int rc = capi_writer_set_attr(wo->w, name, type, buf.buf, (size_t)buf.len);
    PyBuffer_Release(&buf);
    return rc < 0 ? pyss_raise(rc) : Py_NewRef(Py_None);
}

static PyObject *writer_commit(WriterObject *wo, PyObject *unused) {
    (void)unused;
    if (writer_check(wo) < 0) return NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = capi_writer_commit(wo->w);
    Py_END_ALLOW_THREADS return rc < 0 ? pyss_raise(rc) : Py_NewRef(Py_None);
}

/* Finish and close: after it the writer is closed whatever happened. */
static PyObject *writer_finish(WriterObject *wo, PyObject *unused) {
    (void)unused;
    if (writer_check(wo) < 0) return NULL;
    int rc;
    ss_writer *w = wo->w;
    Py_BEGIN_ALLOW_THREADS rc = capi_writer_finish(w);
    capi_writer_free(w);
    Py_END_ALLOW_THREADS wo->w = NULL;
    return rc < 0 ? pyss_raise(rc) : Py_NewRef(Py_None);
}

static PyObject *writer_close(WriterObject *wo, PyObject *unused) {
    (void)unused;
    if (wo->generation == pyss_generation) capi_writer_free(wo->w);
    wo->w = NULL;
    Py_RETURN_NONE;
}

static PyObject *writer_count(WriterObject *wo, void *unused) {
    (void)unused;
    return writer_check(wo) < 0 ? NULL : PyLong_FromUnsignedLongLong(capi_writer_count(wo->w));
}

static PyObject *writer_names(WriterObject *wo, void *unused) {
    (void)unused;
    return Py_NewRef(wo->names);
}

static PyObject *writer_closed(WriterObject *wo, void *unused) {
    (void)unused;
    return PyBool_FromLong(wo->w == NULL);
}

static PyMethodDef writer_methods[] = {
    {"_append", (PyCFunction)writer_append, METH_O, "_append($self, values, /)\n--\n\n"
     "append a tuple of exact arrays"},
    {"_set_attr", (PyCFunction)writer_set_attr, METH_VARARGS,
     "_set_attr($self, name, type, data, /)\n--\n\n"
     "set an encoded attribute"},
    {"commit", (PyCFunction)writer_commit, METH_NOARGS, "commit($self, /)\n--\n\n"
     "commit what was appended so far"},
    {"finish", (PyCFunction)writer_finish, METH_NOARGS,
     "finish($self, /)\n--\n\n"
     "commit, mark the store complete and close the writer"},
    {"close", (PyCFunction)writer_close, METH_NOARGS,
     "close($self, /)\n--\n\n"
     "close without finishing: the store stays incomplete"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef writer_getset[] = {
    {"count", (getter)writer_count, NULL, "examples in the store, appended ones included", NULL},
    {"fields", (getter)writer_names, NULL, "tuple of field names", NULL},
    {"closed", (getter)writer_closed, NULL, "True after finish() or close()", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject Writer_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "seqstore._seqstore._Writer",
    .tp_basicsize = sizeof(WriterObject),
    .tp_dealloc = (destructor)writer_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The C writer (use seqstore.create()).",
    .tp_methods = writer_methods,
    .tp_getset = writer_getset,
};
