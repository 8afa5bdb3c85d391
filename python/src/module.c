/* SPDX-License-Identifier: BSD-2-Clause */
/* module.c - the seqstore._seqstore extension: module, errors and dtypes. */
#define PYSS_MODULE_C
#include "pyss.h"

#include <pthread.h>

PyObject *pyss_Error, *pyss_ClosedError;
unsigned pyss_generation;
/* One exception class per C error code; codes run from -1 to -16. */
#define PYSS_NCODES 20
static PyObject *by_code[PYSS_NCODES];
#define pyss_StateError by_code[-SS_ESTATE]

static void after_fork_in_child(void) {
    pyss_generation++;
}

int pyss_check_generation(unsigned generation, const char *what, PyObject *path) {
    if (generation == pyss_generation) return 0;
    PyErr_Format(pyss_StateError,
                 "%s '%U' was opened before this process was forked: LMDB forbids using it "
                 "here; open it again in this process (seqstore.torch datasets do so by "
                 "themselves)",
                 what, path);
    return -1;
}

static const struct {
    int code;
    const char *name; /* "seqstore.<Name>" */
    PyObject **extra; /* a built-in base so that `except ValueError` works, or NULL */
    const char *doc;
} error_table[] = {
    {SS_EINVAL, "InvalidArgumentError", &PyExc_ValueError, "An argument the C library refused."},
    {SS_ENOTFOUND, "NotFoundError", &PyExc_LookupError, "No such file, field or attribute."},
    {SS_ENOTSTORE, "NotStoreError", NULL, "The file is not a seqstore store."},
    {SS_EVERSION, "VersionError", NULL, "The store's format version is not supported."},
    {SS_ECORRUPT, "CorruptError", NULL, "The store is corrupt."},
    {SS_EINCOMPLETE, "IncompleteError", NULL, "The store's writer did not finish."},
    {SS_EIO, "StoreIOError", &PyExc_OSError, "A file system error."},
    {SS_ENOMEM, "OutOfMemoryError", &PyExc_MemoryError, "Out of memory."},
    {SS_EEXIST, "ExistsError", &PyExc_FileExistsError, "The file exists (use force=True)."},
    {SS_ESCHEMA, "SchemaError", &PyExc_ValueError, "Schema mismatch."},
    {SS_ETOOBIG, "TooBigError", &PyExc_ValueError, "A value is too large."},
    {SS_ERANGE, "RangeError", &PyExc_IndexError, "Index out of range."},
    {SS_ESTATE, "StateError", NULL, "Call not valid in the current state."},
    {SS_EINPUT, "InputError", &PyExc_ValueError, "Bad input data."},
    {SS_ECALLBACK, "CallbackError", NULL, "A user callback failed."},
    {SS_EBUSY, "BusyError", NULL, "The store is busy (open for writing in this process)."},
    {SS_EBUFS, "BufferTooSmallError", &PyExc_ValueError, "A caller's buffer is too small."},
};

static PyObject *new_error(PyObject *module, const char *name, PyObject *base, PyObject *extra,
                           const char *doc) {
    char full[64];
    snprintf(full, sizeof full, "seqstore.%s", name);
    PyObject *bases = extra ? PyTuple_Pack(2, base, extra) : PyTuple_Pack(1, base);
    if (!bases) return NULL;
    PyObject *cls = PyErr_NewExceptionWithDoc(full, doc, bases, NULL);
    Py_DECREF(bases);
    if (cls && PyModule_AddObjectRef(module, name, cls) < 0) Py_CLEAR(cls);
    return cls;
}

int pyss_errors_init(PyObject *m) {
    pyss_Error = PyErr_NewExceptionWithDoc(
        "seqstore.Error", "Base of every seqstore error; .code is the C error code.", NULL, NULL);
    if (!pyss_Error || PyModule_AddObjectRef(m, "Error", pyss_Error) < 0) return -1;
    for (size_t i = 0; i < sizeof error_table / sizeof error_table[0]; i++) {
        PyObject *extra = error_table[i].extra ? *error_table[i].extra : NULL;
        PyObject *cls = new_error(m, error_table[i].name, pyss_Error, extra, error_table[i].doc);
        if (!cls) return -1;
        by_code[-error_table[i].code] = cls;
    }
    pyss_ClosedError = new_error(m, "ClosedError", pyss_Error, PyExc_ValueError,
                                 "The store or writer was closed.");
    return pyss_ClosedError ? 0 : -1;
}

PyObject *pyss_raise(int code) {
    PyObject *cls =
        (code < 0 && -code < PYSS_NCODES && by_code[-code]) ? by_code[-code] : pyss_Error;
    const char *msg = capi_error_message();
    PyObject *text = PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "replace");
    if (!text) return NULL;
    PyObject *exc = PyObject_CallOneArg(cls, text);
    Py_DECREF(text);
    if (!exc) return NULL;
    PyObject *c = PyLong_FromLong(code);
    if (c) {
        PyObject_SetAttrString(exc, "code", c);
        Py_DECREF(c);
    }
    PyErr_SetObject(cls, exc);
    Py_DECREF(exc);
    return NULL;
}

int pyss_raise_int(int code) {
    pyss_raise(code);
    return -1;
}

int pyss_typenum(ss_dtype d) {
    switch (d) {
    case SS_U8:
        return NPY_UINT8;
    case SS_I8:
        return NPY_INT8;
    case SS_U16:
        return NPY_UINT16;
    case SS_I16:
        return NPY_INT16;
    case SS_U32:
        return NPY_UINT32;
    case SS_I32:
        return NPY_INT32;
    case SS_U64:
        return NPY_UINT64;
    case SS_I64:
        return NPY_INT64;
    case SS_F16:
        return NPY_FLOAT16;
    case SS_F32:
        return NPY_FLOAT32;
    case SS_F64:
        return NPY_FLOAT64;
    case SS_BF16:
        return NPY_UINT16; /* NumPy has no bfloat16: the raw bits */
    }
    return -1;
}

int pyss_uint_arg(unsigned long long *out, PyObject *v, const char *what, unsigned long long max) {
    if (PyBool_Check(v) || !PyIndex_Check(v)) {
        PyErr_Format(PyExc_TypeError, "%s is an int, not %s", what, Py_TYPE(v)->tp_name);
        return -1;
    }
    PyObject *i = PyNumber_Index(v);
    if (!i) return -1;
    unsigned long long u = PyLong_AsUnsignedLongLong(i); /* negative or > 64 bits: overflow */
    int overflow = u == (unsigned long long)-1 && PyErr_Occurred();
    if (overflow && !PyErr_ExceptionMatches(PyExc_OverflowError)) {
        Py_DECREF(i);
        return -1;
    }
    if (overflow) PyErr_Clear();
    if (overflow || u > max) {
        PyErr_Format(PyExc_ValueError, "%s must be in [0, %llu], not %R", what, max, i);
        Py_DECREF(i);
        return -1;
    }
    Py_DECREF(i);
    *out = u;
    return 0;
}

/* dtype_code("u16") -> 3; dtype_name(3) -> "u16"; for the Python layer. */
static PyObject *py_dtype_code(PyObject *self, PyObject *arg) {
    (void)self;
    const char *name = PyUnicode_AsUTF8(arg);
    if (!name) return NULL;
    ss_dtype d;
    int rc = capi_dtype_parse(&d, name);
    return rc < 0 ? pyss_raise(rc) : PyLong_FromLong((long)d);
}

static PyObject *py_dtype_name(PyObject *self, PyObject *arg) {
    (void)self;
    long d = PyLong_AsLong(arg);
    if (d == -1 && PyErr_Occurred()) return NULL;
    const char *name = capi_dtype_name((ss_dtype)d);
    if (!name) return PyErr_Format(PyExc_ValueError, "unknown dtype code %ld", d);
    return PyUnicode_FromString(name);
}

static PyMethodDef module_methods[] = {
    {"open", (PyCFunction)(void (*)(void))pyss_open, METH_VARARGS | METH_KEYWORDS,
     "open(path, *, incomplete=False, random=False, nolock=False) -> Store\n\n"
     "Open a store read-only (see ss_open())."},
    {"_create", (PyCFunction)(void (*)(void))pyss_writer_create, METH_VARARGS | METH_KEYWORDS,
     "_create(path, fields, force) -> Writer; fields as normalised by seqstore.create()."},
    {"_dtype_code", py_dtype_code, METH_O, "dtype name -> C code"},
    {"_dtype_name", py_dtype_name, METH_O, "C code -> dtype name"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "seqstore._seqstore",
                                        "The C core of the seqstore package.", -1, module_methods};

PyMODINIT_FUNC PyInit__seqstore(void);
PyMODINIT_FUNC PyInit__seqstore(void) {
    import_array();
    PyObject *m = PyModule_Create(&module_def);
    if (!m) return NULL;
    PyTypeObject *types[] = {&Map_Type,    &Store_Type,  &Field_Type,    &Writer_Type,
                             &Loader_Type, &Window_Type, &Collator_Type, &Blend_Type};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        if (PyType_Ready(types[i]) < 0) goto fail;
        const char *dot = strrchr(types[i]->tp_name, '.');
        if (PyModule_AddObjectRef(m, dot + 1, (PyObject *)types[i]) < 0) goto fail;
    }
    pthread_atfork(NULL, NULL, after_fork_in_child);
    if (pyss_errors_init(m) < 0 || PyModule_AddStringConstant(m, "__version__", capi_version()) < 0)
        goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
