/* SPDX-License-Identifier: BSD-2-Clause */
/* transform.c - Loader(transforms=[...]): the Python transform objects'
 * specs -> a pipeline of the C built-in transforms, and Loader(examples=)
 * -> a selection. Both are built once, when the loader opens. */
#include "pyss.h"

/* The store index of the field a spec names (KeyError naming the fields). */
static int field_of(uint32_t *out, StoreObject *st, PyObject *name) {
    const char *s = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
    if (!s) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "a transform's field is a str");
        return -1;
    }
    if (capi_field_index(out, st->map->s, s) == 0) return 0;
    PyErr_Format(PyExc_KeyError, "transform field '%s' is not a field of the store (fields: %R)", s,
                 st->names);
    return -1;
}

/* One spec tuple (kind, field, parameters...) -> `t`. The parameters were
 * normalised by seqstore.transforms; the C library checks their values (its
 * message names the transform). */
static int transform_from_spec(ss_transform *t, StoreObject *st, PyObject *spec) {
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) < 2 ||
        !PyUnicode_Check(PyTuple_GET_ITEM(spec, 0))) {
        PyErr_SetString(PyExc_TypeError, "a transform spec is a tuple (kind, field, ...)");
        return -1;
    }
    const char *kind = PyUnicode_AsUTF8(PyTuple_GET_ITEM(spec, 0)), *skip, *name;
    if (!kind) return -1;
    uint32_t field; /* the C transforms address a field by its store index */
    if (field_of(&field, st, PyTuple_GET_ITEM(spec, 1)) < 0) return -1;
    unsigned long long n;
    double a, b, c;
    long long v;
    Py_buffer m = {0}, s = {0};
    const char *prefix;
    int rc;
    if (strcmp(kind, "random_crop") == 0) {
        if (!PyArg_ParseTuple(spec, "ssK", &skip, &name, &n)) return -1;
        rc = capi_transform_random_crop(t, field, n);
    } else if (strcmp(kind, "gaussian_noise") == 0) {
        if (!PyArg_ParseTuple(spec, "ssd", &skip, &name, &a)) return -1;
        rc = capi_transform_gaussian_noise(t, field, a);
    } else if (strcmp(kind, "token_mask") == 0) {
        if (!PyArg_ParseTuple(spec, "ssdLddK", &skip, &name, &a, &v, &b, &c, &n)) return -1;
        rc = capi_transform_token_mask(t, field, a, v, b, c, n);
    } else if (strcmp(kind, "token_drop") == 0) {
        if (!PyArg_ParseTuple(spec, "ssd", &skip, &name, &a)) return -1;
        rc = capi_transform_token_drop(t, field, a);
    } else if (strcmp(kind, "standardize") == 0) { /* mean, std: float64 bytes */
        if (!PyArg_ParseTuple(spec, "ssy*y*", &skip, &name, &m, &s)) return -1;
        rc = m.len == s.len ? capi_transform_standardize(t, field, m.buf, s.buf,
                                                         (uint64_t)m.len / sizeof(double))
                            : 1;
        PyBuffer_Release(&m);
        PyBuffer_Release(&s);
    } else if (strcmp(kind, "standardize_attr") == 0) {
        if (!PyArg_ParseTuple(spec, "ssz", &skip, &name, &prefix)) return -1;
        rc = capi_transform_standardize_attr(t, st->map->s, field, prefix);
    } else if (strcmp(kind, "label_map") == 0) { /* table: int64 bytes */
        if (!PyArg_ParseTuple(spec, "ssy*", &skip, &name, &m)) return -1;
        rc = capi_transform_label_map(t, field, m.buf, (uint64_t)m.len / sizeof(int64_t));
        PyBuffer_Release(&m);
    } else {
        PyErr_Format(PyExc_ValueError, "unknown transform kind '%s'", kind);
        return -1;
    }
    if (rc == 1) PyErr_SetString(PyExc_ValueError, "Standardize: mean and std differ in length");
    return rc < 0 ? pyss_raise_int(rc) : -rc;
}

int pyss_pipeline_build(ss_pipeline **out, StoreObject *st, PyObject *specs) {
    *out = NULL;
    if (specs == Py_None || PyList_GET_SIZE(specs) == 0) return 0;
    int rc = capi_pipeline_create(out);
    if (rc < 0) return pyss_raise_int(rc);
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(specs); k++) {
        ss_transform t = SS_TRANSFORM_INIT;
        if (transform_from_spec(&t, st, PyList_GET_ITEM(specs, k)) < 0 ||
            ((rc = capi_pipeline_add(*out, &t)) < 0 && pyss_raise_int(rc) < 0)) {
            capi_pipeline_free(*out); /* the pipeline owned t's data even on failure */
            *out = NULL;
            return -1;
        }
    }
    return 0;
}

/* examples: None, or a bytes object of int64 (start, end) pairs, sorted and
 * disjoint (seqstore._loader made them from an index array). */
int pyss_selection_build(ss_selection **out, StoreObject *st, PyObject *ranges) {
    *out = NULL;
    if (ranges == Py_None) return 0;
    Py_buffer b;
    if (PyObject_GetBuffer(ranges, &b, PyBUF_SIMPLE) < 0) return -1;
    int rc = capi_selection_create(out, b.buf, (size_t)b.len / sizeof(ss_range), st->count);
    PyBuffer_Release(&b);
    return rc < 0 ? pyss_raise_int(rc) : 0;
}
