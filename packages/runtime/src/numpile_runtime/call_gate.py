"""The call gate: a compiled function's hit path in C, built once per machine.

A gate holds one remembered cache entry as a program of checks over the call's positional
arguments (and what is reached from them, the function's globals and closure cells) and
the entry's compiled callable. Called with the arguments, it runs the program and, when
every check holds, calls the compiled callable with the inputs the program fetched; when
one fails (or the gate is not armed, or the process-wide validity words say remembered
hits are stale) it answers "declined" and the caller takes its Python path, which stays
the reference. This layer knows nothing of guards: the layers above translate theirs into
the program (`numpile_guards.gate_plan`) or keep the Python path.

The program is a tuple of operations; each reads and writes numbered registers:

| operation | what it does |
| --- | --- |
| `("arg", r, i)` | `r` = the `i`-th positional argument |
| `("global", r, name)` | `r` = the function's globals `[name]` (missing: declined) |
| `("cell", r, i)` | `r` = closure cell `i`'s contents (empty: declined) |
| `("func", r)` | `r` = the function itself |
| `("attr", r, base, name)` | `r` = `getattr(base, name)` |
| `("item", r, base, key)` | `r` = `base[key]` |
| `("probe", r, fn)` | `r` = `fn()` |
| `("type", r, cls)` | `type(r) is cls` |
| `("is", r, obj)` | `r is obj` |
| `("eq", r, cls, value)` | `type(r) is cls and r == value` |
| `("len", r, n)` | `len(r) == n` |
| `("array", r, cls, dtype, shape, strides)` | an ndarray of exactly `cls`: dtype, shape, strides |
| `("rel", op, left, right)` | two integer programs compared by `op` (`==`, `<`, ...) |

Shape and stride entries that are None match any size. An integer program is a tuple of
steps on a stack: `("const", c)`, `("dim", r, axis)` and `("stride", r, axis)` (of an
array register that an `array` operation checked before), `("int", r)` (an exact `int`),
`("+",)`, `("-",)`, `("*",)`, `("//",)`, `("%",)` (Python's floor semantics), `("neg",)`.
Overflow, a zero divisor or an exception a check raises (an `Exception`) declines; any
other exception propagates.

`total_hits()` counts the calls every gate of the process answered. The validity words
are a buffer of two signed 64-bit integers: `[0]` the generation (a gate armed at
generation `g` declines once it moved on), `[1]` how many regions are open in
which compiled functions run as plain Python (any nonzero: every gate declines).

`gate_module()` builds (through the code cache: once per machine and cache folder) and
loads the extension, or returns None where no compiler is known without a probe, the
build fails, or `NUMPILE_CALL_GATE=0`. A compiled call never waits for that build:
`gate_module(wait=False)` queues it as idle work (`build_queue`) and answers None until it
is loaded; then `on_gate_loaded`'s callbacks run, and the layers above make their gates.

    >>> module = gate_module()  # doctest: +SKIP
    >>> gate = module.Gate(fn, target, program, (0,), words, argcount=1)  # doctest: +SKIP
    >>> cls.__call__ = module.Caller(cls.__call__, "_gate", retry)  # doctest: +SKIP

A `Caller` is a class's `__call__` (a method descriptor): it reads the instance's gate
attribute and runs the gate (a list of gates: each in turn, and the one that answers moves
to the front of the list, so that calls alternating between two entries fail at most one
gate's checks); declined, it calls the Python `__call__` it holds, and when
the compiled callable raised the gate's `retry` exception, `retry(self, *args)`.

The extension also holds `ErrstateCall` (`numpile_runtime.errstate_call`): a compiled
module's call checking NumPy's error state in C. A compiled callable offers such a form
through its `GATE_FORM` attribute, and the layer that makes a gate asks for it with
`gate_form(target)`: the gate then reaches the module with no Python frame.
"""

from __future__ import annotations

import logging
import os
import types
from collections.abc import Callable
from typing import Any, cast

from .build_queue import queue_build
from .builder import BuildError, build_extension
from .errstate_call import ERRSTATE_CALL_SOURCE
from .locks import new_lock
from .metrics import timed
from .toolchain import CompilerNotFoundError, known_toolchain

__all__ = ["GATE_ENV", "GATE_FORM", "gate_form", "gate_module", "gate_source", "on_gate_loaded"]

log = logging.getLogger("numpile.runtime.call_gate")

# Set to "0" to keep every compiled function on its Python hit path.
GATE_ENV = "NUMPILE_CALL_GATE"

#: The attribute of a compiled callable that makes its form for a gate (see `gate_form`).
GATE_FORM = "numpile_gate_form"

_MODULE_NAME = "numpile_call_gate"
# NOTE: -O1 (the last -O wins): a fifth less compiler time than -O2 (0.29 against 0.37
# CPU-s), and the same speed for this dispatch code (measured with benchmarks.dispatch).
_FLAGS = ("-O1",)

# NOTE: the loaded module, None before the first try, False when it cannot be had; and the
# callbacks run once it is loaded (`on_gate_loaded`).
_LOADED: list[types.ModuleType | bool] = []
_ON_LOADED: list[Callable[[], None]] = []
_LOCK = new_lock()

_SOURCE = (
    r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#define MAX_REGS 64
#define MAX_DIMS 32
#define MAX_STACK 16

enum {
    OP_ARG, OP_GLOBAL, OP_CELL, OP_FUNC, OP_ATTR, OP_ITEM, OP_PROBE,
    OP_TYPE, OP_IS, OP_EQ, OP_LEN, OP_ARRAY, OP_REL
};
enum { I_CONST, I_DIM, I_INT, I_ADD, I_SUB, I_MUL, I_FLOORDIV, I_MOD, I_NEG, I_STRIDE };
enum { C_EQ, C_NE, C_LT, C_LE, C_GT, C_GE };

typedef struct { int kind; int reg; long long value; } IStep;

typedef struct {
    int kind;
    int reg;
    int base;
    Py_ssize_t index;
    PyObject *a;          /* borrowed from the program tuple, which the gate holds */
    PyObject *b;
    int ndim;
    npy_intp shape[MAX_DIMS];
    npy_intp strides[MAX_DIMS];
    unsigned char shape_any[MAX_DIMS];
    unsigned char strides_any[MAX_DIMS];
    int cmp;
    IStep *left; int nleft;
    IStep *right; int nright;
} Op;

typedef struct {
    PyObject_HEAD
    PyObject *fn;
    PyObject *code;
    PyObject *defaults;
    PyObject *kwdefaults;
    PyObject *globals;
    PyObject *target;
    PyObject *program;
    PyObject *retry;       /* an exception type that declines after the call (or NULL) */
    PyObject *words_obj;
    Py_buffer words;
    Op *ops;
    Py_ssize_t nops;
    int inputs[MAX_REGS];
    Py_ssize_t ninputs;
    int nregs;
    Py_ssize_t argcount;
    long long generation;
    unsigned long long hits;
    unsigned long long declines;
} Gate;

static PyTypeObject GateType;

/* Calls every gate of the process answered (`total_hits()`), for tests and profiles. */
static unsigned long long total_hits = 0;

enum { DECLINED = 0, DONE = 1, RETRY = 2 };

static int
kind_of(PyObject *name, const char *const *names, int count)
{
    if (!PyUnicode_Check(name)) return -1;
    for (int i = 0; i < count; i++) {
        if (PyUnicode_CompareWithASCIIString(name, names[i]) == 0) return i;
    }
    return -1;
}

static const char *const OP_NAMES[] = {
    "arg", "global", "cell", "func", "attr", "item", "probe",
    "type", "is", "eq", "len", "array", "rel"
};
static const char *const I_NAMES[] = {
    "const", "dim", "int", "+", "-", "*", "//", "%", "neg", "stride"
};
static const char *const C_NAMES[] = {"==", "!=", "<", "<=", ">", ">="};

static int
bad_program(const char *what)
{
    PyErr_Format(PyExc_ValueError, "call gate program: %s", what);
    return -1;
}

static int
reg_of(PyObject *item, int nregs_limit)
{
    long value = PyLong_AsLong(item);
    if (value == -1 && PyErr_Occurred()) return -1;
    if (value < 0 || value >= nregs_limit) return bad_program("register out of range");
    return (int)value;
}

static int
parse_ints(PyObject *program, IStep **out, int *count)
{
    if (!PyTuple_Check(program)) return bad_program("an integer program is a tuple");
    Py_ssize_t n = PyTuple_GET_SIZE(program);
    if (n > 64) return bad_program("integer program too long");
    IStep *steps = PyMem_Calloc(n ? n : 1, sizeof(IStep));
    if (steps == NULL) { PyErr_NoMemory(); return -1; }
    int depth = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *step = PyTuple_GET_ITEM(program, i);
        if (!PyTuple_Check(step) || PyTuple_GET_SIZE(step) < 1) goto bad;
        int kind = kind_of(PyTuple_GET_ITEM(step, 0), I_NAMES, 10);
        if (kind < 0) goto bad;
        steps[i].kind = kind;
        if (kind == I_CONST) {
            if (PyTuple_GET_SIZE(step) != 2) goto bad;
            steps[i].value = PyLong_AsLongLong(PyTuple_GET_ITEM(step, 1));
            if (PyErr_Occurred()) goto fail;
            depth++;
        } else if (kind == I_DIM || kind == I_STRIDE) {
            if (PyTuple_GET_SIZE(step) != 3) goto bad;
            steps[i].reg = reg_of(PyTuple_GET_ITEM(step, 1), MAX_REGS);
            if (steps[i].reg < 0) goto fail;
            steps[i].value = PyLong_AsLongLong(PyTuple_GET_ITEM(step, 2));
            if (PyErr_Occurred()) goto fail;
            if (steps[i].value < 0 || steps[i].value >= MAX_DIMS) goto bad;
            depth++;
        } else if (kind == I_INT) {
            if (PyTuple_GET_SIZE(step) != 2) goto bad;
            steps[i].reg = reg_of(PyTuple_GET_ITEM(step, 1), MAX_REGS);
            if (steps[i].reg < 0) goto fail;
            depth++;
        } else if (kind == I_NEG) {
            if (depth < 1) goto bad;
        } else {
            if (depth < 2) goto bad;
            depth--;
        }
        if (depth > MAX_STACK) goto bad;
    }
    if (depth != 1) goto bad;
    *out = steps;
    *count = (int)n;
    return 0;
bad:
    bad_program("malformed integer program");
fail:
    PyMem_Free(steps);
    return -1;
}

static int
parse_dims(PyObject *tuple, int ndim, npy_intp *values, unsigned char *any)
{
    if (!PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) != ndim)
        return bad_program("shape and strides are tuples of ndim entries");
    for (int k = 0; k < ndim; k++) {
        PyObject *item = PyTuple_GET_ITEM(tuple, k);
        if (item == Py_None) { any[k] = 1; values[k] = 0; continue; }
        any[k] = 0;
        long long value = PyLong_AsLongLong(item);
        if (value == -1 && PyErr_Occurred()) return -1;
        values[k] = (npy_intp)value;
    }
    return 0;
}

static int
parse_op(Op *op, PyObject *item)
{
    if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) < 2)
        return bad_program("an operation is a tuple");
    Py_ssize_t n = PyTuple_GET_SIZE(item);
    int kind = kind_of(PyTuple_GET_ITEM(item, 0), OP_NAMES, 13);
    if (kind < 0) return bad_program("unknown operation");
    op->kind = kind;
    if (kind == OP_REL) {
        if (n != 4) return bad_program("rel takes op, left, right");
        op->cmp = kind_of(PyTuple_GET_ITEM(item, 1), C_NAMES, 6);
        if (op->cmp < 0) return bad_program("unknown comparison");
        if (parse_ints(PyTuple_GET_ITEM(item, 2), &op->left, &op->nleft) < 0) return -1;
        if (parse_ints(PyTuple_GET_ITEM(item, 3), &op->right, &op->nright) < 0) return -1;
        return 0;
    }
    op->reg = reg_of(PyTuple_GET_ITEM(item, 1), MAX_REGS);
    if (op->reg < 0) return -1;
    switch (kind) {
    case OP_ARG: case OP_CELL:
        if (n != 3) return bad_program("arg and cell take an index");
        op->index = PyLong_AsSsize_t(PyTuple_GET_ITEM(item, 2));
        if (op->index == -1 && PyErr_Occurred()) return -1;
        if (op->index < 0) return bad_program("negative index");
        return 0;
    case OP_FUNC:
        return n == 2 ? 0 : bad_program("func takes a register");
    case OP_GLOBAL: case OP_PROBE: case OP_TYPE: case OP_IS:
        if (n != 3) return bad_program("operation takes one value");
        op->a = PyTuple_GET_ITEM(item, 2);
        if (kind == OP_GLOBAL && !PyUnicode_CheckExact(op->a)) return bad_program("global name");
        if (kind == OP_TYPE && !PyType_Check(op->a)) return bad_program("type takes a class");
        return 0;
    case OP_ATTR: case OP_ITEM:
        if (n != 4) return bad_program("attr and item take a base and a key");
        op->base = reg_of(PyTuple_GET_ITEM(item, 2), MAX_REGS);
        if (op->base < 0) return -1;
        op->a = PyTuple_GET_ITEM(item, 3);
        return 0;
    case OP_EQ:
        if (n != 4) return bad_program("eq takes a class and a value");
        op->a = PyTuple_GET_ITEM(item, 2);
        op->b = PyTuple_GET_ITEM(item, 3);
        if (!PyType_Check(op->a)) return bad_program("eq takes a class");
        return 0;
    case OP_LEN:
        if (n != 3) return bad_program("len takes a length");
        op->index = PyLong_AsSsize_t(PyTuple_GET_ITEM(item, 2));
        if (op->index == -1 && PyErr_Occurred()) return -1;
        return 0;
    case OP_ARRAY: {
        if (n != 6) return bad_program("array takes a class, dtype, shape and strides");
        op->a = PyTuple_GET_ITEM(item, 2);
        op->b = PyTuple_GET_ITEM(item, 3);
        if (!PyType_Check(op->a) || !PyType_IsSubtype((PyTypeObject *)op->a, &PyArray_Type))
            return bad_program("array takes an ndarray class");
        if (!PyArray_DescrCheck(op->b)) return bad_program("array takes a dtype");
        PyObject *shape = PyTuple_GET_ITEM(item, 4);
        if (!PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) > MAX_DIMS)
            return bad_program("shape");
        op->ndim = (int)PyTuple_GET_SIZE(shape);
        if (parse_dims(shape, op->ndim, op->shape, op->shape_any) < 0) return -1;
        return parse_dims(PyTuple_GET_ITEM(item, 5), op->ndim, op->strides, op->strides_any);
    }
    }
    return bad_program("unknown operation");
}

static void
free_ops(Op *ops, Py_ssize_t count)
{
    if (ops == NULL) return;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyMem_Free(ops[i].left);
        PyMem_Free(ops[i].right);
    }
    PyMem_Free(ops);
}

static int
gate_clear(Gate *self)
{
    Py_CLEAR(self->fn);
    Py_CLEAR(self->code);
    Py_CLEAR(self->defaults);
    Py_CLEAR(self->kwdefaults);
    Py_CLEAR(self->globals);
    Py_CLEAR(self->target);
    Py_CLEAR(self->program);
    Py_CLEAR(self->retry);
    return 0;
}

static int
gate_traverse(Gate *self, visitproc visit, void *arg)
{
    Py_VISIT(self->fn);
    Py_VISIT(self->code);
    Py_VISIT(self->defaults);
    Py_VISIT(self->kwdefaults);
    Py_VISIT(self->globals);
    Py_VISIT(self->target);
    Py_VISIT(self->program);
    Py_VISIT(self->retry);
    return 0;
}

static void
gate_dealloc(Gate *self)
{
    PyObject_GC_UnTrack(self);
    gate_clear(self);
    if (self->words_obj != NULL) {
        PyBuffer_Release(&self->words);
        Py_CLEAR(self->words_obj);
    }
    free_ops(self->ops, self->nops);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
gate_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *keywords[] = {
        "fn", "target", "program", "inputs", "words", "argcount", "retry", NULL
    };
    PyObject *fn, *target, *program, *inputs, *words, *retry = Py_None;
    Py_ssize_t argcount;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOO!O!On|O", keywords, &fn, &target,
                                     &PyTuple_Type, &program, &PyTuple_Type, &inputs, &words,
                                     &argcount, &retry))
        return NULL;
    if (!PyFunction_Check(fn)) {
        PyErr_SetString(PyExc_TypeError, "a gate guards a Python function");
        return NULL;
    }
    if (PyTuple_GET_SIZE(inputs) > MAX_REGS) return bad_program("too many inputs"), NULL;
    Gate *self = (Gate *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->generation = -1;
    if (PyObject_GetBuffer(words, &self->words, PyBUF_WRITABLE | PyBUF_FORMAT) < 0) goto fail;
    self->words_obj = Py_NewRef(words);
    if (self->words.len < 2 * (Py_ssize_t)sizeof(long long) || self->words.itemsize != 8) {
        bad_program("words are two 64-bit integers");
        goto fail;
    }
    self->fn = Py_NewRef(fn);
    self->code = Py_NewRef(PyFunction_GET_CODE(fn));
    self->defaults = Py_XNewRef(PyFunction_GET_DEFAULTS(fn));
    self->kwdefaults = Py_XNewRef(PyFunction_GET_KW_DEFAULTS(fn));
    self->globals = Py_NewRef(PyFunction_GET_GLOBALS(fn));
    self->target = Py_NewRef(target);
    self->program = Py_NewRef(program);
    self->retry = retry == Py_None ? NULL : Py_NewRef(retry);
    self->argcount = argcount;
    self->nops = PyTuple_GET_SIZE(program);
    self->ops = PyMem_Calloc(self->nops ? self->nops : 1, sizeof(Op));
    if (self->ops == NULL) { PyErr_NoMemory(); goto fail; }
    for (Py_ssize_t i = 0; i < self->nops; i++) {
        if (parse_op(&self->ops[i], PyTuple_GET_ITEM(program, i)) < 0) goto fail;
        if (self->ops[i].kind == OP_ARG && self->ops[i].index >= argcount) {
            bad_program("argument index past argcount");
            goto fail;
        }
    }
    self->ninputs = PyTuple_GET_SIZE(inputs);
    for (Py_ssize_t i = 0; i < self->ninputs; i++) {
        int reg = reg_of(PyTuple_GET_ITEM(inputs, i), MAX_REGS);
        if (reg < 0) goto fail;
        self->inputs[i] = reg;
    }
    self->nregs = MAX_REGS;
    return (PyObject *)self;
fail:
    Py_DECREF(self);
    return NULL;
}

/* 1: holds, 0: declined, -1: an exception that must propagate. */
static inline int
soft_failure(void)
{
    if (PyErr_ExceptionMatches(PyExc_Exception)) {
        PyErr_Clear();
        return 0;
    }
    return -1;
}

static int
run_ints(const IStep *steps, int count, PyObject **regs, long long *out)
{
    long long stack[MAX_STACK + 1];
    int top = 0;
    for (int i = 0; i < count; i++) {
        const IStep *s = &steps[i];
        long long a, b, r;
        switch (s->kind) {
        case I_CONST: stack[top++] = s->value; break;
        case I_DIM: {
            PyObject *o = regs[s->reg];
            if (o == NULL || !PyArray_Check(o)) return 0;
            PyArrayObject *array = (PyArrayObject *)o;
            if (s->value >= PyArray_NDIM(array)) return 0;
            stack[top++] = (long long)PyArray_DIM(array, (int)s->value);
            break;
        }
        case I_STRIDE: {
            PyObject *o = regs[s->reg];
            if (o == NULL || !PyArray_Check(o)) return 0;
            PyArrayObject *array = (PyArrayObject *)o;
            if (s->value >= PyArray_NDIM(array)) return 0;
            stack[top++] = (long long)PyArray_STRIDE(array, (int)s->value);
            break;
        }
        case I_INT: {
            PyObject *o = regs[s->reg];
            if (o == NULL || !PyLong_CheckExact(o)) return 0;
            int overflow = 0;
            long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
            if (overflow) return 0;
            if (v == -1 && PyErr_Occurred()) return soft_failure();
            stack[top++] = v;
            break;
        }
        case I_NEG:
            if (stack[top - 1] == LLONG_MIN) return 0;
            stack[top - 1] = -stack[top - 1];
            break;
        default:
            b = stack[--top];
            a = stack[top - 1];
            if (s->kind == I_ADD) { if (__builtin_add_overflow(a, b, &r)) return 0; }
            else if (s->kind == I_SUB) { if (__builtin_sub_overflow(a, b, &r)) return 0; }
            else if (s->kind == I_MUL) { if (__builtin_mul_overflow(a, b, &r)) return 0; }
            else {
                if (b == 0 || (a == LLONG_MIN && b == -1)) return 0;
                long long q = a / b, m = a % b;
                if (m != 0 && ((m < 0) != (b < 0))) { q -= 1; m += b; }
                r = s->kind == I_FLOORDIV ? q : m;
            }
            stack[top - 1] = r;
        }
    }
    *out = stack[0];
    return 1;
}

static int
check_array(const Op *op, PyObject *o)
{
    if (Py_TYPE(o) != (PyTypeObject *)op->a) return 0;
    PyArrayObject *array = (PyArrayObject *)o;
    PyObject *descr = (PyObject *)PyArray_DESCR(array);
    if (descr != op->b) {
        int same = PyObject_RichCompareBool(descr, op->b, Py_EQ);
        if (same < 0) return soft_failure();
        if (!same) return 0;
    }
    if (PyArray_NDIM(array) != op->ndim) return 0;
    npy_intp *dims = PyArray_DIMS(array);
    npy_intp *strides = PyArray_STRIDES(array);
    for (int k = 0; k < op->ndim; k++) {
        if (!op->shape_any[k] && dims[k] != op->shape[k]) return 0;
        if (!op->strides_any[k] && strides[k] != op->strides[k]) return 0;
    }
    return 1;
}

/* Runs the program: 1 all checks hold (regs filled), 0 declined, -1 error. */
static int
run_program(Gate *self, PyObject *const *args, PyObject **regs)
{
    for (Py_ssize_t i = 0; i < self->nops; i++) {
        const Op *op = &self->ops[i];
        PyObject *value = NULL;
        int ok;
        switch (op->kind) {
        case OP_ARG:
            value = Py_NewRef(args[op->index]);
            break;
        case OP_GLOBAL:
            value = PyDict_GetItemWithError(self->globals, op->a);
            if (value == NULL) return PyErr_Occurred() ? soft_failure() : 0;
            Py_INCREF(value);
            break;
        case OP_CELL: {
            PyObject *closure = PyFunction_GET_CLOSURE(self->fn);
            if (closure == NULL || op->index >= PyTuple_GET_SIZE(closure)) return 0;
            value = PyCell_GET(PyTuple_GET_ITEM(closure, op->index));
            if (value == NULL) return 0;
            Py_INCREF(value);
            break;
        }
        case OP_FUNC:
            value = Py_NewRef(self->fn);
            break;
        case OP_ATTR:
            if (regs[op->base] == NULL) return 0;
            value = PyObject_GetAttr(regs[op->base], op->a);
            if (value == NULL) return soft_failure();
            break;
        case OP_ITEM:
            if (regs[op->base] == NULL) return 0;
            value = PyObject_GetItem(regs[op->base], op->a);
            if (value == NULL) return soft_failure();
            break;
        case OP_PROBE:
            value = PyObject_CallNoArgs(op->a);
            if (value == NULL) return soft_failure();
            break;
        case OP_TYPE:
            if (regs[op->reg] == NULL || Py_TYPE(regs[op->reg]) != (PyTypeObject *)op->a) return 0;
            continue;
        case OP_IS:
            if (regs[op->reg] != op->a) return 0;
            continue;
        case OP_EQ:
            if (regs[op->reg] == NULL || Py_TYPE(regs[op->reg]) != (PyTypeObject *)op->a) return 0;
            ok = PyObject_RichCompareBool(regs[op->reg], op->b, Py_EQ);
            if (ok < 0) return soft_failure();
            if (!ok) return 0;
            continue;
        case OP_LEN: {
            if (regs[op->reg] == NULL) return 0;
            Py_ssize_t length = PyObject_Length(regs[op->reg]);
            if (length < 0) return soft_failure();
            if (length != op->index) return 0;
            continue;
        }
        case OP_ARRAY:
            if (regs[op->reg] == NULL) return 0;
            ok = check_array(op, regs[op->reg]);
            if (ok <= 0) return ok;
            continue;
        case OP_REL: {
            long long left, right;
            ok = run_ints(op->left, op->nleft, regs, &left);
            if (ok <= 0) return ok;
            ok = run_ints(op->right, op->nright, regs, &right);
            if (ok <= 0) return ok;
            switch (op->cmp) {
            case C_EQ: ok = left == right; break;
            case C_NE: ok = left != right; break;
            case C_LT: ok = left < right; break;
            case C_LE: ok = left <= right; break;
            case C_GT: ok = left > right; break;
            default: ok = left >= right; break;
            }
            if (!ok) return 0;
            continue;
        }
        }
        Py_XSETREF(regs[op->reg], value);
    }
    return 1;
}

/* DONE with *result set (NULL: an exception), DECLINED, or RETRY (the compiled callable
   raised the gate's `retry` exception: the caller's retry path runs the call). */
static int
gate_enter(Gate *self, PyObject *const *args, Py_ssize_t nargs, PyObject **result)
{
    const long long *words = (const long long *)self->words.buf;
    PyObject *fn = self->fn;
    if (fn == NULL || self->generation != words[0] || words[1] != 0 || nargs != self->argcount
        || PyFunction_GET_CODE(fn) != self->code
        || PyFunction_GET_DEFAULTS(fn) != self->defaults
        || PyFunction_GET_KW_DEFAULTS(fn) != self->kwdefaults) {
        return DECLINED;
    }
    PyObject *regs[MAX_REGS] = {NULL};
    int ok = run_program(self, args, regs);
    if (ok < 0) {
        for (int i = 0; i < MAX_REGS; i++) Py_XDECREF(regs[i]);
        *result = NULL;
        return DONE;
    }
    if (ok == 0) {
        for (int i = 0; i < MAX_REGS; i++) Py_XDECREF(regs[i]);
        self->declines++;
        return DECLINED;
    }
    PyObject *stack[MAX_REGS + 1];
    for (Py_ssize_t i = 0; i < self->ninputs; i++) stack[i + 1] = regs[self->inputs[i]];
    PyObject *target = Py_NewRef(self->target);
    self->hits++;
    total_hits++;
    PyObject *value = PyObject_Vectorcall(
        target, stack + 1, (size_t)self->ninputs | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    Py_DECREF(target);
    for (int i = 0; i < MAX_REGS; i++) Py_XDECREF(regs[i]);
    if (value == NULL && self->retry != NULL && PyErr_ExceptionMatches(self->retry)) {
        PyErr_Clear();
        self->hits--;
        total_hits--;
        self->declines++;
        return RETRY;
    }
    *result = value;
    return DONE;
}

/* A list of gates, most recently answered first: each in turn until one does not decline;
   the one that answered moves to the front (a call alternating between two entries then
   fails at most one gate's checks). */
static int
gates_enter(PyObject *gates, PyObject *const *args, Py_ssize_t nargs, PyObject **result)
{
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(gates); i++) {
        PyObject *gate = PyList_GET_ITEM(gates, i);
        if (Py_TYPE(gate) != &GateType) continue;
        Py_INCREF(gate);
        int status = gate_enter((Gate *)gate, args, nargs, result);
        if (status != DECLINED && i > 0 && i < PyList_GET_SIZE(gates)
            && PyList_GET_ITEM(gates, i) == gate) {
            /* Move to front, references unchanged: the list still holds each once. */
            for (Py_ssize_t j = i; j > 0; j--)
                PyList_SET_ITEM(gates, j, PyList_GET_ITEM(gates, j - 1));
            PyList_SET_ITEM(gates, 0, gate);
        }
        Py_DECREF(gate);
        if (status != DECLINED) return status;
    }
    return DECLINED;
}

static PyObject *
gate_arm(Gate *self, PyObject *generation)
{
    long long value = PyLong_AsLongLong(generation);
    if (value == -1 && PyErr_Occurred()) return NULL;
    self->generation = value;
    Py_RETURN_NONE;
}

static PyObject *
gate_call_method(Gate *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *result = NULL;
    if (gate_enter(self, args, nargs, &result) == DONE) return result;
    return Py_NewRef(Py_NotImplemented);  /* declined, or raised the retry exception */
}

static PyMethodDef gate_methods[] = {
    {"arm", (PyCFunction)gate_arm, METH_O,
     "arm(generation): valid while the validity words' generation is this one"},
    {"enter", (PyCFunction)(void (*)(void))gate_call_method, METH_FASTCALL,
     "enter(*args): the compiled call's result, or NotImplemented when declined"},
    {NULL}
};

static PyMemberDef gate_members[] = {
    {"hits", T_ULONGLONG, offsetof(Gate, hits), READONLY, "calls the gate answered"},
    {"declines", T_ULONGLONG, offsetof(Gate, declines), READONLY,
     "armed calls whose checks failed"},
    {"generation", T_LONGLONG, offsetof(Gate, generation), READONLY, "armed generation"},
    {"target", T_OBJECT, offsetof(Gate, target), READONLY, "the compiled callable"},
    {"program", T_OBJECT, offsetof(Gate, program), READONLY, "the program"},
    {NULL}
};

static PyTypeObject GateType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "numpile_call_gate.Gate",
    .tp_basicsize = sizeof(Gate),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "One remembered cache entry's checks and compiled callable.",
    .tp_new = gate_new,
    .tp_dealloc = (destructor)gate_dealloc,
    .tp_traverse = (traverseproc)gate_traverse,
    .tp_clear = (inquiry)gate_clear,
    .tp_methods = gate_methods,
    .tp_members = gate_members,
};

/* The method a class's __call__ is: it reads the instance's gate attribute; `retry(self,
   *args)` runs a call whose compiled callable raised the gate's retry exception. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *slow;
    PyObject *attr;
    PyObject *retry;
} Caller;

static PyTypeObject CallerType;

static PyObject *
caller_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Caller *self = (Caller *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs >= 1 && (kwnames == NULL || PyTuple_GET_SIZE(kwnames) == 0)) {
        PyObject *gate = PyObject_GetAttr(args[0], self->attr);
        if (gate == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return NULL;
            PyErr_Clear();
        } else {
            PyObject *result = NULL;
            int status = DECLINED;
            if (Py_TYPE(gate) == &GateType) {
                status = gate_enter((Gate *)gate, args + 1, nargs - 1, &result);
            } else if (PyList_CheckExact(gate)) {
                status = gates_enter(gate, args + 1, nargs - 1, &result);
            }
            Py_DECREF(gate);
            if (status == DONE) return result;
            if (status == RETRY) return PyObject_Vectorcall(self->retry, args, nargs, NULL);
        }
    }
    return PyObject_Vectorcall(self->slow, args, (size_t)nargs, kwnames);
}

static PyObject *
caller_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *keywords[] = {"slow", "attr", "retry", NULL};
    PyObject *slow, *attr, *retry;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OUO", keywords, &slow, &attr, &retry))
        return NULL;
    Caller *self = (Caller *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->vectorcall = caller_vectorcall;
    self->slow = Py_NewRef(slow);
    self->retry = Py_NewRef(retry);
    Py_INCREF(attr);
    PyUnicode_InternInPlace(&attr);
    self->attr = attr;
    return (PyObject *)self;
}

static void
caller_dealloc(Caller *self)
{
    PyObject_GC_UnTrack(self);
    Py_CLEAR(self->slow);
    Py_CLEAR(self->attr);
    Py_CLEAR(self->retry);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
caller_traverse(Caller *self, visitproc visit, void *arg)
{
    Py_VISIT(self->slow);
    Py_VISIT(self->retry);
    return 0;
}

static PyObject *
caller_get(PyObject *self, PyObject *obj, PyObject *type)
{
    if (obj == NULL || obj == Py_None) return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

static PyMemberDef caller_members[] = {
    {"slow", T_OBJECT, offsetof(Caller, slow), READONLY, "the Python path"},
    {"__wrapped__", T_OBJECT, offsetof(Caller, slow), READONLY, "the Python path"},
    {NULL}
};

static PyTypeObject CallerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "numpile_call_gate.Caller",
    .tp_basicsize = sizeof(Caller),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL
        | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "A class's __call__: the instance's gate first, else the Python path.",
    .tp_new = caller_new,
    .tp_dealloc = (destructor)caller_dealloc,
    .tp_traverse = (traverseproc)caller_traverse,
    .tp_vectorcall_offset = offsetof(Caller, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_descr_get = caller_get,
    .tp_members = caller_members,
};

static PyObject *
module_total_hits(PyObject *module, PyObject *unused)
{
    return PyLong_FromUnsignedLongLong(total_hits);
}
"""
    + ERRSTATE_CALL_SOURCE
    + r"""
static PyMethodDef module_methods[] = {
    {"total_hits", module_total_hits, METH_NOARGS, "calls every gate answered"},
    {"errstate_total_hits", module_errstate_total_hits, METH_NOARGS,
     "calls every ErrstateCall answered without its Python path"},
    {NULL}
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "numpile_call_gate", "numpile's call gate", -1, module_methods
};

PyMODINIT_FUNC
PyInit_numpile_call_gate(void)
{
    import_array();
    if (PyType_Ready(&GateType) < 0 || PyType_Ready(&CallerType) < 0
        || PyType_Ready(&ErrstateCallType) < 0)
        return NULL;
    PyObject *module = PyModule_Create(&moduledef);
    if (module == NULL) return NULL;
    if (PyModule_AddObjectRef(module, "Gate", (PyObject *)&GateType) < 0
        || PyModule_AddObjectRef(module, "Caller", (PyObject *)&CallerType) < 0
        || PyModule_AddObjectRef(module, "ErrstateCall", (PyObject *)&ErrstateCallType) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
"""
)


def gate_form(target: Callable[..., Any]) -> Callable[..., Any]:
    """What a gate calls for the compiled callable `target`: the callable its `GATE_FORM`
    attribute (a function of no arguments) makes, where it has one and it makes one (a C
    form of the same call, an `ErrstateCall` say, with no Python frame); else `target`.

    >>> gate_form(len) is len
    True
    """
    make = getattr(target, GATE_FORM, None)
    if make is None:
        return target
    made = make()
    return target if made is None else cast("Callable[..., Any]", made)


def gate_source() -> str:
    """The extension's C source (one translation unit, no generated part).

    >>> "PyInit_numpile_call_gate" in gate_source()
    True
    """
    return _SOURCE


def gate_module(*, wait: bool = True) -> types.ModuleType | None:
    """The loaded call gate extension; None where it cannot be had without a compiler
    probe (a fresh cache folder, or no compiler), failed to build, or `NUMPILE_CALL_GATE=0`.

    Built once per cache folder (the code cache keys it like a kernel), loaded once per
    process; the first call in a process pays the load (timed as stage `call_gate`).
    With `wait=False` it never builds in the caller: the build (or the load from the cache)
    is queued as idle work on the build queue and None is returned until it is done, when
    the callbacks given to `on_gate_loaded` run (a compiled function's second call then
    takes its Python path instead of waiting for a compiler).

        >>> gate_module() is None or hasattr(gate_module(), "Gate")
        True
    """
    if not _LOADED:
        if not wait:
            if os.environ.get(GATE_ENV, "1") != "0" and known_toolchain() is not None:
                queue_build("call gate", _load_in_background, idle=True)
            return None
        with _LOCK:
            loaded = _LOADED[0] if _LOADED else _load()
            if loaded is None:
                return None  # no toolchain known yet: asked again next time
            newly = not _LOADED
            if newly:
                _LOADED.append(loaded)
        if newly:
            _announce()
    found = _LOADED[0]
    return found if isinstance(found, types.ModuleType) else None


def on_gate_loaded(callback: Callable[[], None]) -> None:
    """Call `callback()` once the gate extension is loaded (from the thread that loaded
    it): a layer that made no gate while the extension was on its way makes them then.

    >>> on_gate_loaded(lambda: None)
    """
    with _LOCK:
        _ON_LOADED.append(callback)


def _load_in_background() -> None:
    with _LOCK:
        if _LOADED:
            return
        loaded = _load()
        if loaded is None:
            return
        _LOADED.append(loaded)
    _announce()


def _announce() -> None:
    if not isinstance(_LOADED[0], types.ModuleType):
        return
    with _LOCK:
        callbacks = list(_ON_LOADED)
    for callback in callbacks:
        callback()


def _load() -> types.ModuleType | bool | None:
    if os.environ.get(GATE_ENV, "1") == "0":
        return False
    if known_toolchain() is None:
        # NOTE: no probe is run for the gate: until this process or an earlier one probed
        # the compiler (the first C build does), compiled calls keep the Python path.
        return None
    try:
        with timed("call_gate"):
            return build_extension(_SOURCE, module_name=_MODULE_NAME, extra_flags=_FLAGS)
    except (BuildError, CompilerNotFoundError, ImportError, OSError) as error:
        log.info("the call gate did not build (%s); compiled calls take the Python path", error)
        return False
