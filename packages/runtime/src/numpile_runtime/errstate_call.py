"""The errstate call: a compiled module's call honouring NumPy's error state, in C.

NumPy's error state (`np.seterr`, `np.errstate`) decides what a floating-point flag a
compiled call raised does: nothing, a warning, an error, a callback. The layer that
compiles the call keeps that policy in Python (`numpile_inductor.errstate`) and runs it once
per change of NumPy's error-state object; between changes a call only has to check that
the state is the one the module was told about. An `ErrstateCall` makes that check in C, so
that a call gate reaches the module's call with no Python frame in between. It is a type of
the call gate extension (`numpile_runtime.call_gate`), built with it.

`ErrstateCall(call, slow, state_var, words, flags_error, on_flags, fp_flags)`: `words` is a
writable buffer of three signed 64-bit integers the Python side keeps up to date: `[0]` the
`id` of the error-state object the module was last told about (the Python side holds that
object, so the id is not reused while stored), `[1]` nonzero where that state runs the graph
without the module, `[2]` the categories whose flags warn (NumPy's bits: divide 1, over 2,
under 4, invalid 8). A positional call whose current state (`state_var`'s value) has that
id, and that need not run without the module, calls `call`; anything else (keywords, another
state, a disarmed object) calls `slow`, the Python path, which tells the module the new state
and updates the words. After `call`:

- with `fp_flags` None (a graph that may run again), `call` raising `flags_error` calls
  `on_flags(*args)` (which runs the graph op by op with NumPy for its warnings);
- otherwise, where `[2]` is nonzero, `fp_flags() & [2]` nonzero calls `on_flags(raised)`
  after the call (which warns); the call's result is returned unless that raised.

`disarm()` drops `call` and `fp_flags` (their module is being unloaded): every later call
takes `slow`.
`hits` counts the calls an object answered without `slow`; the extension's
`errstate_total_hits()` counts them for every object of the process.

    >>> "ErrstateCall" in ERRSTATE_CALL_SOURCE
    True
"""

from __future__ import annotations

__all__ = ["ERRSTATE_CALL_SOURCE", "ERRSTATE_WORDS"]

#: The words an `ErrstateCall` reads: the told state's id, run without the module, warn mask.
ERRSTATE_WORDS = 3

ERRSTATE_CALL_SOURCE = r"""
/* A compiled module's call that honours NumPy's error state (errstate_call.py). */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *call;         /* the module's call; NULL once disarmed */
    PyObject *slow;         /* the Python path */
    PyObject *state_var;    /* NumPy's error-state context variable */
    PyObject *flags_error;  /* what `call` raises on the flags it was told to check */
    PyObject *on_flags;     /* on_flags(*args) after flags_error, or on_flags(raised) */
    PyObject *fp_flags;     /* NULL: a graph that may run again; else the module's fp_flags */
    PyObject *words_obj;
    Py_buffer words;        /* [0] id of the told state, [1] run without the module, [2] warn */
    unsigned long long hits;
} ErrstateCall;

static PyTypeObject ErrstateCallType;

/* Calls every ErrstateCall of the process answered without its Python path. */
static unsigned long long errstate_total = 0;

static PyObject *
errstate_call_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                         PyObject *kwnames)
{
    ErrstateCall *self = (ErrstateCall *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    const long long *words = (const long long *)self->words.buf;
    PyObject *call = self->call;
    if (call == NULL || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0)) {
        return PyObject_Vectorcall(self->slow, args, nargsf, kwnames);
    }
    PyObject *state = NULL;
    if (PyContextVar_Get(self->state_var, NULL, &state) < 0) return NULL;
    const int told = state != NULL && (long long)(intptr_t)state == words[0];
    Py_XDECREF(state);
    if (!told || words[1] != 0) {
        return PyObject_Vectorcall(self->slow, args, nargsf, NULL);
    }
    self->hits++;
    errstate_total++;
    /* held through the call, which may disarm this object (its module unloaded) */
    PyObject *fp_flags = Py_XNewRef(self->fp_flags);
    Py_INCREF(call);
    PyObject *result = PyObject_Vectorcall(call, args, nargsf, NULL);
    Py_DECREF(call);
    if (fp_flags == NULL) {
        if (result == NULL && PyErr_ExceptionMatches(self->flags_error)) {
            PyErr_Clear();
            return PyObject_Vectorcall(self->on_flags, args, (size_t)nargs, NULL);
        }
        return result;
    }
    const long long mask = words[2];
    if (result == NULL || mask == 0) { Py_DECREF(fp_flags); return result; }
    PyObject *flags = PyObject_CallNoArgs(fp_flags);
    Py_DECREF(fp_flags);
    if (flags == NULL) { Py_DECREF(result); return NULL; }
    const long long raised = PyLong_AsLongLong(flags) & mask;
    Py_DECREF(flags);
    if (PyErr_Occurred()) { Py_DECREF(result); return NULL; }
    if (raised != 0) {
        PyObject *bits = PyLong_FromLongLong(raised);
        PyObject *done = bits == NULL ? NULL : PyObject_CallOneArg(self->on_flags, bits);
        Py_XDECREF(bits);
        if (done == NULL) { Py_DECREF(result); return NULL; }
        Py_DECREF(done);
    }
    return result;
}

static int
errstate_call_clear(ErrstateCall *self)
{
    Py_CLEAR(self->call);
    Py_CLEAR(self->slow);
    Py_CLEAR(self->state_var);
    Py_CLEAR(self->flags_error);
    Py_CLEAR(self->on_flags);
    Py_CLEAR(self->fp_flags);
    return 0;
}

static int
errstate_call_traverse(ErrstateCall *self, visitproc visit, void *arg)
{
    Py_VISIT(self->call);
    Py_VISIT(self->slow);
    Py_VISIT(self->state_var);
    Py_VISIT(self->flags_error);
    Py_VISIT(self->on_flags);
    Py_VISIT(self->fp_flags);
    return 0;
}

static void
errstate_call_dealloc(ErrstateCall *self)
{
    PyObject_GC_UnTrack(self);
    errstate_call_clear(self);
    if (self->words_obj != NULL) {
        PyBuffer_Release(&self->words);
        Py_CLEAR(self->words_obj);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
errstate_call_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *keywords[] = {
        "call", "slow", "state_var", "words", "flags_error", "on_flags", "fp_flags", NULL
    };
    PyObject *call, *slow, *state_var, *words, *flags_error, *on_flags, *fp_flags;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOO!OOOO", keywords, &call, &slow,
                                     &PyContextVar_Type, &state_var, &words, &flags_error,
                                     &on_flags, &fp_flags))
        return NULL;
    if (!PyCallable_Check(call) || !PyCallable_Check(slow) || !PyCallable_Check(on_flags)
        || (fp_flags != Py_None && !PyCallable_Check(fp_flags))) {
        PyErr_SetString(PyExc_TypeError, "ErrstateCall takes callables");
        return NULL;
    }
    if (!PyExceptionClass_Check(flags_error)) {
        PyErr_SetString(PyExc_TypeError, "flags_error is an exception class");
        return NULL;
    }
    ErrstateCall *self = (ErrstateCall *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->vectorcall = errstate_call_vectorcall;
    if (PyObject_GetBuffer(words, &self->words, PyBUF_WRITABLE | PyBUF_FORMAT) < 0) goto fail;
    self->words_obj = Py_NewRef(words);
    if (self->words.len < 3 * (Py_ssize_t)sizeof(long long) || self->words.itemsize != 8) {
        PyErr_SetString(PyExc_ValueError, "words are three 64-bit integers");
        goto fail;
    }
    self->call = Py_NewRef(call);
    self->slow = Py_NewRef(slow);
    self->state_var = Py_NewRef(state_var);
    self->flags_error = Py_NewRef(flags_error);
    self->on_flags = Py_NewRef(on_flags);
    self->fp_flags = fp_flags == Py_None ? NULL : Py_NewRef(fp_flags);
    return (PyObject *)self;
fail:
    Py_DECREF(self);
    return NULL;
}

static PyObject *
errstate_call_disarm(ErrstateCall *self, PyObject *unused)
{
    Py_CLEAR(self->call);
    Py_CLEAR(self->fp_flags);  /* both hold the module */
    Py_RETURN_NONE;
}

static PyMethodDef errstate_call_methods[] = {
    {"disarm", (PyCFunction)errstate_call_disarm, METH_NOARGS,
     "disarm(): every later call takes the Python path (the module is being unloaded)"},
    {NULL}
};

static PyMemberDef errstate_call_members[] = {
    {"hits", T_ULONGLONG, offsetof(ErrstateCall, hits), READONLY,
     "calls answered without the Python path"},
    {"slow", T_OBJECT, offsetof(ErrstateCall, slow), READONLY, "the Python path"},
    {"__wrapped__", T_OBJECT, offsetof(ErrstateCall, slow), READONLY, "the Python path"},
    {NULL}
};

static PyTypeObject ErrstateCallType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "numpile_call_gate.ErrstateCall",
    .tp_basicsize = sizeof(ErrstateCall),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A compiled module's call honouring NumPy's error state without a frame.",
    .tp_new = errstate_call_new,
    .tp_dealloc = (destructor)errstate_call_dealloc,
    .tp_traverse = (traverseproc)errstate_call_traverse,
    .tp_clear = (inquiry)errstate_call_clear,
    .tp_vectorcall_offset = offsetof(ErrstateCall, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_methods = errstate_call_methods,
    .tp_members = errstate_call_members,
};

static PyObject *
module_errstate_total_hits(PyObject *module, PyObject *unused)
{
    return PyLong_FromUnsignedLongLong(errstate_total);
}
"""
