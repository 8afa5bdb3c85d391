/* SPDX-License-Identifier: BSD-2-Clause */
/* module.c - the seqstore._seqstore extension: module, constants and dtypes (the
 * exception classes: errors.c). */
#define PYSS_MODULE_C
#include "pyss.h"

#include <pthread.h>

unsigned pyss_generation;

static void after_fork_in_child(void) {
    pyss_generation++;
}

int pyss_check_generation(unsigned generation, const char *what, PyObject *path) {
    if (generation == pyss_generation) return 0;
    PyErr_Format(pyss_error_class(SS_ESTATE),
                 "%s '%U' was opened before this process was forked: LMDB forbids using it "
                 "here; open it again in this process (seqstore.torch datasets do so by "
                 "themselves)",
                 what, path);
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
     "open(path, *, incomplete=False, random=False, nolock=False, verify=False, cache_dir=None, "
     "cache_bytes=0, endpoint=None, region=None, profile=None, parallel=0, attempts=0)\n--\n\n"
     "Open a store, or a dataset of shards, read-only (see ss_open()) -> Store.\n\n"
     "path may be a URL of a dataset (s3://BUCKET/PREFIX/x.ds, https://HOST/x.ds,\n"
     "file:///PATH, see ss_open_url()): shards are fetched into the cache on first\n"
     "use and checked against the manifest. cache_dir, cache_bytes, endpoint, region,\n"
     "profile, parallel and attempts are ss_remote_options' fields (None or 0: the\n"
     "default, from SEQSTORE_CACHE_DIR, AWS_ENDPOINT_URL and the like).\n\n"
     "verify=True (SS_OPEN_VERIFY) checks every index segment's checksum at open\n"
     "and each data chunk's the first time a read reaches it (store[i], field[i],\n"
     "iteration, Loader, Collator, WindowReader, flat()): a damaged chunk raises\n"
     "CorruptError naming the field and the chunk instead of returning its bytes.\n"
     "Without it reads trust the mapped data; Store.verify() checks everything."},
    {"_create", (PyCFunction)(void (*)(void))pyss_writer_create, METH_VARARGS | METH_KEYWORDS,
     "_create(path, fields, force)\n--\n\n"
     "Returns Writer; fields as normalised by seqstore.create()."},
    {"_lm_save", (PyCFunction)(void (*)(void))pyss_lm_save, METH_VARARGS | METH_KEYWORDS,
     "_lm_save(path, field, seq_length, seed, num_samples, num_epochs, flags, eod)\n--\n\n"
     "ss_lm_save(): store the Megatron-layout LM sample index; seqstore.lm.save_index()."},
    {"_dtype_code", py_dtype_code, METH_O, "_dtype_code(name, /)\n--\n\n"
     "dtype name -> C code"},
    {"_error_table", pyss_error_table, METH_NOARGS,
     "_error_table()\n--\n\n"
     "Returns [(code, C name, C message, class or None)]: every row of the\n"
     "C library's SS_ERROR_TABLE and the exception class it raises."},
    {"_dtype_name", py_dtype_name, METH_O, "_dtype_name(code, /)\n--\n\n"
     "C code -> dtype name"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "seqstore._seqstore",
                                        "The C core of the seqstore package.", -1, module_methods};

/* The C enums the Python layer passes back to C as numbers, under their C
 * names without the SS_ prefix, so that no number is copied by hand. */
#define PYSS_CONSTANT(name) {#name + 3, name}
static int add_constants(PyObject *m) {
    static const struct {
        const char *name;
        long value;
    } table[] = {
        PYSS_CONSTANT(SS_OPEN_NOLOCK),
        PYSS_CONSTANT(SS_OPEN_INCOMPLETE),
        PYSS_CONSTANT(SS_OPEN_RANDOM),
        PYSS_CONSTANT(SS_OPEN_VERIFY),
        PYSS_CONSTANT(SS_ATTR_BYTES),
        PYSS_CONSTANT(SS_ATTR_TEXT),
        PYSS_CONSTANT(SS_LAYOUT_BATCH_MAJOR),
        PYSS_CONSTANT(SS_LAYOUT_TIME_MAJOR),
        PYSS_CONSTANT(SS_LAYOUT_PACKED),
        PYSS_CONSTANT(SS_LAYOUT_CHANNELS_FIRST),
        PYSS_CONSTANT(SS_MASK_NONE),
        PYSS_CONSTANT(SS_MASK_U8),
        PYSS_CONSTANT(SS_MASK_F32),
        PYSS_CONSTANT(SS_MASK_DTYPE),
        PYSS_CONSTANT(SS_REMAINDER_INCLUDE),
        PYSS_CONSTANT(SS_REMAINDER_SKIP),
        PYSS_CONSTANT(SS_REMAINDER_DIVISIBLE),
        PYSS_CONSTANT(SS_REMAINDER_PAD),
        PYSS_CONSTANT(SS_BLEND_INFINITE),
        PYSS_CONSTANT(SS_BLEND_FIRST_EXHAUSTED),
        PYSS_CONSTANT(SS_BLEND_ALL_EXHAUSTED),
        PYSS_CONSTANT(SS_WINDOW_SEQUENTIAL),
        PYSS_CONSTANT(SS_WINDOW_SEQUENTIAL_RANDOM_START),
        PYSS_CONSTANT(SS_WINDOW_RANDOM),
        PYSS_CONSTANT(SS_WINDOW_FORGET_STATE),
        PYSS_CONSTANT(SS_WINDOW_SHRINK),
        PYSS_CONSTANT(SS_WINDOW_PAD_TAIL),
        PYSS_CONSTANT(SS_WINDOW_TIME_MAJOR),
        PYSS_CONSTANT(SS_WINDOW_BALANCED),
        PYSS_CONSTANT(SS_WINDOW_LABEL_PER_STEP),
        PYSS_CONSTANT(SS_WINDOW_DROP_LAST),
        PYSS_CONSTANT(SS_WINDOW_REDRAW),
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (PyModule_AddIntConstant(m, table[i].name, table[i].value) < 0) return -1;
    return 0;
}
#undef PYSS_CONSTANT

PyMODINIT_FUNC PyInit__seqstore(void);
PyMODINIT_FUNC PyInit__seqstore(void) {
    import_array();
    PyObject *m = PyModule_Create(&module_def);
    if (!m) return NULL;
    PyTypeObject *types[] = {&Map_Type,    &Store_Type,  &FieldAccessor_Type,    &Writer_Type,
                             &Loader_Type, &Window_Type, &Collator_Type, &Blend_Type, &LM_Type};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        if (PyType_Ready(types[i]) < 0) goto fail;
        const char *dot = strrchr(types[i]->tp_name, '.');
        if (PyModule_AddObjectRef(m, dot + 1, (PyObject *)types[i]) < 0) goto fail;
    }
    if (add_constants(m) < 0) goto fail;
    pthread_atfork(NULL, NULL, after_fork_in_child);
    if (pyss_errors_init(m) < 0 || PyModule_AddStringConstant(m, "__version__", capi_version()) < 0)
        goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
