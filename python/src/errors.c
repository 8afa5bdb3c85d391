/* SPDX-License-Identifier: BSD-2-Clause */
/* errors.c - the exception classes: one per code of the C library's
 * SS_ERROR_TABLE, made from the table itself so that a code added there
 * cannot be missed here, and raising them with the library's message. */
#include "pyss.h"

#include <errno.h>

PyObject *pyss_Error, *pyss_ClosedError, *pyss_StoreNotFoundError;

/* Every row of SS_ERROR_TABLE (seqstore.h), in its order. */
static const struct {
    ss_error code;
    const char *c_name;
    const char *message;
} c_table[] = {
#define PYSS_ERROR_ROW(name, value, message) {name, #name, message},
    SS_ERROR_TABLE(PYSS_ERROR_ROW)
#undef PYSS_ERROR_ROW
};
#define PYSS_NROWS (sizeof c_table / sizeof c_table[0])

/* by_code[-code]: the class of each code of the table (NULL for SS_OK). */
static PyObject *by_code[PYSS_NROWS];

/* How Python sees a code: the class's name, the builtin exception it also
 * is (so that `except ValueError` works), the code whose class it refines
 * (SS_OK: the base seqstore.Error) and its doc. */
typedef struct {
    const char *name;
    PyObject **builtin;
    ss_error parent;
    const char *doc;
} py_view;

static int view(py_view *out, const char *name, PyObject **builtin, ss_error parent,
                const char *doc) {
    *out = (py_view){name, builtin, parent, doc};
    return 1;
}

/* 1 and *out for every code but SS_OK. No default: the compiler (-Wswitch,
 * in -Wall; an error with SS_WERROR) names a code of SS_ERROR_TABLE that has
 * no case here. */
static int python_view(py_view *out, ss_error code) {
    switch (code) {
    case SS_OK:
        return 0;
    case SS_EINVAL:
        return view(out, "InvalidArgumentError", &PyExc_ValueError, SS_OK,
                    "An argument the C library refused.");
    case SS_ENOTFOUND:
        return view(out, "NotFoundError", &PyExc_LookupError, SS_OK,
                    "No such field, attribute, split or bucket index; a missing store file\n"
                    "is StoreNotFoundError, also a FileNotFoundError.");
    case SS_ENOTSTORE:
        return view(out, "NotStoreError", NULL, SS_OK, "The file is not a seqstore store.");
    case SS_EVERSION:
        return view(out, "VersionError", NULL, SS_OK,
                    "The store's format version is not supported.");
    case SS_ECORRUPT:
        return view(out, "CorruptError", NULL, SS_OK,
                    "The store is corrupt (Store.verify() lists every damaged block in\n"
                    ".problems).");
    case SS_EINCOMPLETE:
        return view(out, "IncompleteError", NULL, SS_OK, "The store's writer did not finish.");
    case SS_EIO:
        return view(out, "StoreIOError", &PyExc_OSError, SS_OK, "A file system error.");
    case SS_ENOMEM:
        return view(out, "OutOfMemoryError", &PyExc_MemoryError, SS_OK, "Out of memory.");
    case SS_EEXIST:
        return view(out, "ExistsError", &PyExc_FileExistsError, SS_OK,
                    "The file exists (use force=True).");
    case SS_ESCHEMA:
        return view(out, "SchemaError", &PyExc_ValueError, SS_OK, "Schema mismatch.");
    case SS_ETOOBIG:
        return view(out, "TooBigError", &PyExc_ValueError, SS_OK, "A value is too large.");
    case SS_ERANGE:
        return view(out, "RangeError", &PyExc_IndexError, SS_OK, "Index out of range.");
    case SS_ESTATE:
        return view(out, "StateError", NULL, SS_OK, "Call not valid in the current state.");
    case SS_EINPUT:
        return view(out, "InputError", &PyExc_ValueError, SS_OK, "Bad input data.");
    case SS_ECALLBACK:
        return view(out, "CallbackError", NULL, SS_OK, "A user callback failed.");
    case SS_EBUSY:
        return view(out, "BusyError", NULL, SS_OK,
                    "The store is busy (open for writing in this process).");
    case SS_EFULL:
        return view(out, "DiskFullError", NULL, SS_EIO,
                    "The disk is full (or the quota spent): what was being written is left\n"
                    "incomplete. A StoreIOError, so an OSError.");
    case SS_ITEROVER:
        return view(out, "IterationOverError", NULL, SS_OK,
                    "An iteration is over. Python's iterators end with StopIteration\n"
                    "instead; this class is raised only by a call that is not an iterator's.");
    case SS_EBUFS:
        return view(out, "BufferTooSmallError", &PyExc_ValueError, SS_OK,
                    "A caller's buffer is too small.");
    }
    return 0;
}

/* The class of `code`: its own, or the base Error for a code outside the table. */
static PyObject *class_of(int code) {
    if (code < 0 && (size_t)-code < PYSS_NROWS && by_code[-code]) return by_code[-code];
    return pyss_Error;
}

PyObject *pyss_error_class(int code) {
    return class_of(code);
}

static PyObject *new_class(PyObject *module, const char *name, PyObject *base, PyObject *builtin,
                           const char *doc) {
    char full[64];
    snprintf(full, sizeof full, "seqstore.%s", name);
    PyObject *bases = builtin ? PyTuple_Pack(2, base, builtin) : PyTuple_Pack(1, base);
    if (!bases) return NULL;
    PyObject *cls = PyErr_NewExceptionWithDoc(full, doc, bases, NULL);
    Py_DECREF(bases);
    if (cls && PyModule_AddObjectRef(module, name, cls) < 0) Py_CLEAR(cls);
    return cls;
}

/* The class of row `i` of the table, under its parent's (made before it:
 * the table's order must allow that, which module import checks). */
static int add_code(PyObject *m, size_t i) {
    py_view v;
    ss_error code = c_table[i].code;
    if (!python_view(&v, code)) return 0;
    if (code >= 0 || (size_t)-code >= PYSS_NROWS || (v.parent != SS_OK && !by_code[-v.parent])) {
        PyErr_Format(PyExc_SystemError, "seqstore: error code %s = %d cannot be mapped",
                     c_table[i].c_name, (int)code);
        return -1;
    }
    char doc[512];
    snprintf(doc, sizeof doc, "%s\n\nThe C library's %s (%d): \"%s\".", v.doc, c_table[i].c_name,
             (int)code, c_table[i].message);
    PyObject *base = v.parent == SS_OK ? pyss_Error : by_code[-v.parent];
    by_code[-code] = new_class(m, v.name, base, v.builtin ? *v.builtin : NULL, doc);
    return by_code[-code] ? 0 : -1;
}

int pyss_errors_init(PyObject *m) {
    pyss_Error = PyErr_NewExceptionWithDoc(
        "seqstore.Error", "Base of every seqstore error; .code is the C error code.", NULL, NULL);
    if (!pyss_Error || PyModule_AddObjectRef(m, "Error", pyss_Error) < 0) return -1;
    for (size_t i = 0; i < PYSS_NROWS; i++)
        if (add_code(m, i) < 0) return -1;
    pyss_StoreNotFoundError = new_class(
        m, "StoreNotFoundError", by_code[-SS_ENOTFOUND], PyExc_FileNotFoundError,
        "No such store file, dataset directory, manifest or shard: both a NotFoundError\n"
        "(a LookupError, as every SS_ENOTFOUND) and a FileNotFoundError (an OSError,\n"
        "errno ENOENT), so `except FileNotFoundError` and `except OSError` catch it.");
    if (!pyss_StoreNotFoundError) return -1;
    pyss_ClosedError = new_class(m, "ClosedError", pyss_Error, PyExc_ValueError,
                                 "The store or writer was closed.");
    return pyss_ClosedError ? 0 : -1;
}

/* Raise an instance of `cls` with the C library's last message, .code, and
 * .<attr> = value when attr is not NULL. */
static PyObject *raise_as(PyObject *cls, int code, const char *attr, PyObject *value) {
    const char *msg = capi_error_message();
    PyObject *text = PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "replace");
    if (!text) return NULL;
    PyObject *exc = PyObject_CallOneArg(cls, text);
    Py_DECREF(text);
    if (!exc) return NULL;
    PyObject *c = PyLong_FromLong(code);
    if (!c || PyObject_SetAttrString(exc, "code", c) < 0 ||
        (attr && PyObject_SetAttrString(exc, attr, value) < 0)) {
        Py_XDECREF(c);
        Py_DECREF(exc);
        return NULL;
    }
    Py_DECREF(c);
    PyErr_SetObject(cls, exc);
    Py_DECREF(exc);
    return NULL;
}

PyObject *pyss_raise_with(int code, const char *attr, PyObject *value) {
    return raise_as(class_of(code), code, attr, value);
}

PyObject *pyss_raise(int code) {
    return raise_as(class_of(code), code, NULL, NULL);
}

int pyss_raise_int(int code) {
    pyss_raise(code);
    return -1;
}

/* SS_ENOTFOUND from opening a store (or a dataset's shard) means a missing
 * file: StoreNotFoundError, with errno ENOENT as a FileNotFoundError has
 * (set after the call, so that str() stays the library's message). */
PyObject *pyss_raise_file(int code) {
    if (code != SS_ENOTFOUND) return pyss_raise(code);
    PyObject *e = PyLong_FromLong(ENOENT);
    if (!e) return NULL;
    raise_as(pyss_StoreNotFoundError, code, "errno", e);
    Py_DECREF(e);
    return NULL;
}

/* _error_table() -> [(code, C name, C message, class or None)] for every row
 * of SS_ERROR_TABLE, the class being the one pyss_raise() raises. */
PyObject *pyss_error_table(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    PyObject *list = PyList_New((Py_ssize_t)PYSS_NROWS);
    for (size_t i = 0; list && i < PYSS_NROWS; i++) {
        int code = c_table[i].code;
        PyObject *cls = code < 0 ? class_of(code) : Py_None;
        PyObject *row = Py_BuildValue("(issO)", code, c_table[i].c_name, c_table[i].message, cls);
        if (!row)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, (Py_ssize_t)i, row);
    }
    return list;
}
