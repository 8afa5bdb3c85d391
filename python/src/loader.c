/* loader.c - the C loader as a Python iterator (seqstore.Loader). */
#include "pyss.h"

PyTypeObject Loader_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "seqstore._seqstore._Loader",
    .tp_basicsize = sizeof(PyObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The C loader (use seqstore.Loader).",
};
