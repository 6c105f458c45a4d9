"""The C function that runs one `for_loop` node of the graph (its body is `loop_body`'s).

The wrapper calls `name(argv, argc, eager, &np_fp)` where the extern call would have
called the `for_loop` callable: `argv` holds the node's graph-value inputs as Python
objects. The function checks them (dtype, dims, alignment, writability; ints within
+-2**60) and runs the loop with NumPy through `eager` whenever they are not what the body
was compiled for, or when `step` is 0 (NumPy then raises Python's `ValueError`); an empty
range gives back the initial objects themselves. A loop that can bail (see `loop_body`)
copies the arrays it writes first and restores them before running with NumPy. The
function returns the tuple of final carried values, boxed as eager NumPy leaves them
(Python scalars for Python ints and floats, NumPy scalars for 0-d NumPy values), and ORs
the floating-point flags the loop raised into `np_fp`. Two copies of the nest: one with
every array's last stride the constant 1 (taken when they all are), one with any strides.
Where the outermost loop tests its index bounds before it runs, the copy for any strides
and the checked form of the outermost loop are a second function, `<name>_checked`, built
at -O1, which the first calls when the test fails or a stride is not 1: a cold build
compiles at -O3 only the form that runs.

    >>> scalar_loop_function(node, "loop_v0").bails  # doctest: +SKIP
    False
"""

from __future__ import annotations

import logging
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from numpile_capture import (
    FIRST_ITERATION_APART,
    NUMPY_RERUN,
    ArrayMeta,
    Graph,
    Node,
    ScalarMeta,
    computes_unless_ran,
    gives_scalar,
    may_hold_entry,
)

from ...loop_reports import report_loop
from .loop_body import (
    ARGUMENT_BITS,
    DIM_BITS,
    CArray,
    CValue,
    EntryKept,
    Env,
    LoopWriter,
    NotScalarLoop,
    emit_loop,
)
from .loop_entry_scalars import computes_either_way
from .loop_flag_typings import flag_typings
from .loop_parallel import PARALLEL_HELPERS, number_labels
from .loop_products import PRODUCT_HELPERS
from .loop_reductions import REDUCTION_HELPERS
from .loop_vectors import VECTOR_HELPERS
from .ops import c_literal, c_type

# NOTE: no local computed on both ways (loop_flag_typings).
_NO_BOXES: Mapping[str, str] = {}

# NOTE: why a loop function runs a loop again with NumPy (a flag no proof covers), and
# where it need not.
perf_log = logging.getLogger("numpile.perf_hints")


@attrs.frozen
class LoopFunction:
    """The C source of one loop function and the facts the wrapper needs about it.

    `bails` says whether a run may restart the loop with NumPy after it began.
    """

    name: str
    source: str
    bails: bool


LOOP_HELPERS = r"""
/* Loop functions (codegen/c/loop_body.py): arguments as C values, element indices. */
/* The checked fast form of a nest is the likely one: without the hint, GCC's guessed profile
   halves the frequency at each test of a long && chain and, with no constant trip count to
   make up for it, marks the nest cold and leaves it unvectorized. With probability 1 the
   other branch (each loop checked, or any strides) counts as never run: GCC compiles it
   for size, neither unrolled nor vectorized, which is most of the unroller's cost in a cold
   build; the fast form is compiled as before. */
#if defined(__has_builtin)
#if __has_builtin(__builtin_expect_with_probability)
#define NP_LIKELY(x) __builtin_expect_with_probability(!!(x), 1, 1.0)
#endif
#endif
#ifndef NP_LIKELY
#define NP_LIKELY(x) __builtin_expect(!!(x), 1)
#endif
/* A nest whose arrays' last strides are not all 1 runs the checked form of each loop: its
   unchecked form (the test is never made) is code GCC would optimize for the rare case. */
#define NP_CHECKED_ONLY(x) 0
static int np_loop_int(PyObject *o, int64_t *v)
{
    if (!PyLong_Check(o)) { return 0; }
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow || (x == -1 && PyErr_Occurred())) { PyErr_Clear(); return 0; }
    if (x > (1LL << 60) || x < -(1LL << 60)) { return 0; }
    *v = (int64_t)x;
    return 1;
}
/* A 0-d value of NumPy type `typenum` (a NumPy scalar or 0-d array of exactly that type,
   or a Python scalar NumPy would take as a weak value of it) into `out`. */
static int np_loop_value(PyObject *o, int typenum, void *out)
{
    PyArray_Descr *descr = PyArray_DescrFromType(typenum);
    int ok = 0;
    if (PyArray_Check(o)) {
        PyArrayObject *a = (PyArrayObject *)o;
        if (PyArray_NDIM(a) == 0 && PyArray_TYPE(a) == typenum && PyArray_ISNOTSWAPPED(a)) {
            memcpy(out, PyArray_DATA(a), (size_t)PyArray_ITEMSIZE(a));
            ok = 1;
        }
    } else if (PyArray_IsScalar(o, Generic)) {
        PyArray_Descr *own = PyArray_DescrFromScalar(o);
        if (own != NULL && own->type_num == typenum) {
            PyArray_ScalarAsCtype(o, out);
            ok = 1;
        }
        Py_XDECREF(own);
    } else if (PyFloat_Check(o) && (PyTypeNum_ISFLOAT(typenum))) {
        double x = PyFloat_AS_DOUBLE(o);
        if (typenum == NPY_DOUBLE) { *(double *)out = x; ok = 1; }
        else if (typenum == NPY_FLOAT && (x != x || fabs(x) <= 3.4028234663852886e38)) {
            *(float *)out = (float)x; ok = 1;
        }
    } else if (PyLong_Check(o) && !PyBool_Check(o)) {
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (overflow || (x == -1 && PyErr_Occurred())) { PyErr_Clear(); }
        else if (typenum == NPY_DOUBLE && x > -(1LL << 53) && x < (1LL << 53)) {
            *(double *)out = (double)x; ok = 1;
        } else if (typenum == NPY_LONG || typenum == NPY_LONGLONG) {
            *(int64_t *)out = (int64_t)x; ok = 1;
        } else if (typenum == NPY_INT && x >= INT32_MIN && x <= INT32_MAX) {
            *(int32_t *)out = (int32_t)x; ok = 1;
        }
    } else if (PyBool_Check(o) && typenum == NPY_BOOL) {
        *(npy_bool *)out = (npy_bool)(o == Py_True); ok = 1;
    }
    Py_DECREF(descr);
    return ok;
}
/* A run-time index normalized as Python does; 0 (and IndexError set) when out of bounds. */
static inline int np_loop_index(int64_t index, int64_t size, int axis, int64_t *out)
{
    int64_t i = index < 0 ? index + size : index;
    if (__builtin_expect((uint64_t)i >= (uint64_t)size, 0)) {
        PyErr_Format(PyExc_IndexError, "index %lld is out of bounds for axis %d with size %lld",
                     (long long)index, axis, (long long)size);
        return 0;
    }
    *out = i;
    return 1;
}
/* NumPy allocating from the buffer pool (the wrapper's g_pool) around a loop function's own
   calls into NumPy that may allocate: its snapshots and its run with NumPy. The wrapper does
   not set the pool around a scalar loop function: that costs more than a short loop. */
static PyObject *np_loop_pool_enter(int *failed)
{
    PyObject *prev = g_pool == NULL ? NULL : PyDataMem_SetHandler(g_pool);
    *failed = g_pool != NULL && prev == NULL;
    return prev;
}
static void np_loop_pool_exit(PyObject *prev)
{
    if (prev == NULL) { return; }
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    Py_XDECREF(PyDataMem_SetHandler(prev));
    Py_DECREF(prev);
    PyErr_Restore(et, ev, tb);
}
/* The loop run with NumPy; none while an exception is pending: a signal handler's, raised
   while lanes finished the iterations they held (loop_lanes.py), wins as it would in eager
   Python, over the run a bail (an int64 overflow) asks for. */
static PyObject *np_loop_eager(PyObject *eager, PyObject *const *argv, Py_ssize_t argc)
{
    if (PyErr_Occurred()) { return NULL; }
    int failed;
    PyObject *prev = np_loop_pool_enter(&failed);
    if (failed) { return NULL; }
    PyObject *result = PyObject_Vectorcall(eager, argv, argc, NULL);
    np_loop_pool_exit(prev);
    return result;
}
/* A bail's restore of `a`: from its snapshot `snap`, or zeros where `snap` is NULL (what a
   fresh np.zeros held). A pending exception (see np_loop_eager) is set aside around the
   copy, which NumPy makes with none set; -1 when the copy fails (its own error is set). */
static int np_loop_restore(PyArrayObject *a, PyObject *snap)
{
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    int failed;
    if (snap != NULL) {
        failed = PyArray_CopyInto(a, (PyArrayObject *)snap);
    } else {
        PyObject *zero = PyLong_FromLong(0);
        failed = zero == NULL ? -1 : PyArray_FillWithScalar(a, zero);
        Py_XDECREF(zero);
    }
    if (failed < 0) {
        Py_XDECREF(et);
        Py_XDECREF(ev);
        Py_XDECREF(tb);
    } else {
        PyErr_Restore(et, ev, tb);
    }
    return failed;
}
static PyObject *np_loop_snapshot(PyArrayObject *a)
{
    int failed;
    PyObject *prev = np_loop_pool_enter(&failed);
    if (failed) { return NULL; }
    PyObject *copy = PyArray_NewCopy(a, NPY_KEEPORDER);
    np_loop_pool_exit(prev);
    return copy;
}
/* A NumPy scalar of type `typenum` holding *data. */
static PyObject *np_loop_box(void *data, int typenum)
{
    PyArray_Descr *descr = PyArray_DescrFromType(typenum);
    PyObject *item = PyArray_Scalar(data, descr, NULL);
    Py_DECREF(descr);
    return item;
}
/* Python's // and % on ints (b != 0; MIN // -1 is checked by the caller). */
static inline int64_t np_py_floordiv(int64_t a, int64_t b)
{
    if (b == -1) { return (int64_t)(0 - (uint64_t)a); }
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) { q -= 1; }
    return q;
}
static inline int64_t np_py_mod(int64_t a, int64_t b)
{
    if (b == -1) { return 0; }
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) { r += b; }
    return r;
}
"""


LOOP_HELPERS += VECTOR_HELPERS + REDUCTION_HELPERS + PRODUCT_HELPERS


OUT_OF_LINE = "__attribute__((noinline))"
"""How a loop function is declared. Inlined into the graph's `call`, GCC's guessed profile
gives the loop nest the call site's frequency, which a chain of error branches makes low: it
marks the loops cold and does not vectorize them (with symbolic sizes, where no constant
trip count says otherwise)."""


LOOP_FUNCTION = '__attribute__((noinline, optimize("unroll-loops"))) NP_LOOP_TUNE'
"""How the function that runs a scalar loop nest is declared: out of line (`OUT_OF_LINE`'s
reason), tuned for 256-bit vectors on x86 GCC (the prelude's `NP_LOOP_TUNE`: an in-order
add chain fed from 512-bit code runs at 1.7x the add latency on AVX-512 cores), with GCC's
loop unroller on (-O3 leaves it off). It unrolls loops whose trip count
is known only at run time and `while` loops (a copy of the exit test per copy of the body), as
LLVM does for Numba by default: fewer taken branches and counter updates per iteration of a
short latency-bound body, such as an escape-time iteration."""


def zero_filled(graph: Graph, node: Node) -> frozenset[Node]:
    """The inputs of loop node `node` that `graph` makes with `np.zeros` and uses in no
    node before `node`: they still hold zeros when the loop starts, so a loop that bails
    restores them by filling zeros in, not from a copy taken on every call.

    >>> zero_filled(graph, graph.nodes[-2])  # doctest: +SKIP
    frozenset({v1})
    """
    order = {n: k for k, n in enumerate(graph.nodes)}
    users = graph.users()
    return frozenset(
        value
        for value in node.inputs
        if isinstance(value, Node)
        and value.op is not None
        and value.op.name == "zeros"
        and value in order
        and all(user is node or order[user] > order[node] for user in users.get(value, ()))
    )


def scalar_loop_function(
    node: Node, name: str, *, zeroed: Collection[Node] = frozenset()
) -> LoopFunction:
    """The C function `name` that runs `for_loop` node `node` (raises `NotScalarLoop`).

    Its C signature is `PyObject *name(PyObject *const *argv, Py_ssize_t argc, PyObject
    *eager, int *np_fp)`: `argv` holds the node's inputs that are graph values, in order
    (its constant inputs are in the code), `eager` is the extern callable that runs the
    loop with NumPy, and the floating-point flags the loop raised are ORed into `np_fp`.
    It returns the tuple of final carried values, as the `for_loop` op does. A nest that
    may bail restores the arrays it writes from copies taken before it runs, except those
    of `zeroed` (`zero_filled`), which it fills with zeros again.

    >>> scalar_loop_function(node, "loop_v0").bails  # doctest: +SKIP
    False
    """
    params = dict(node.params)
    body: Graph = params["body"]
    carried: int = params["carried"]
    first: Graph | None = params.get("first")
    kept = check_branch_kept_entries(node, body, carried)
    apart = first is not None and _first_iteration_apart(node, body, first, carried)
    if apart:
        report_loop(node, FIRST_ITERATION_APART, "it starts on other types than the body")
    writer = LoopWriter(name)
    writer.threads = True  # labels numbered and helpers defined below (loop_parallel)
    placeholders = body.placeholders
    env: Env = {}
    entry: list[str] = []
    stand_ins: list[Any] = []
    values: list[Any] = []
    initial = [initial_object(value, node.inputs) for value in node.inputs[3 : 3 + carried]]
    for position, value in enumerate(node.inputs):
        if position - 3 in kept:
            meta = _input_meta(position, carried, placeholders)
            values.append(kept_entry(writer, env, entry, node.inputs, position, meta))
            stand_ins.append(Node(f"entry{position - 3}", None, (), (), ScalarMeta(int)))
            continue
        if not isinstance(value, Node):
            values.append(value)
            stand_ins.append(value)
            continue
        argument = sum(isinstance(v, Node) for v in node.inputs[:position])
        meta = _input_meta(position, carried, placeholders)
        unpacked = _unpack(writer, entry, meta, argument)
        if isinstance(unpacked, CValue) and value.op is not None and value.op.name == "dim":
            unpacked.bits = DIM_BITS  # an array's length: `n + 1` needs no overflow check
        values.append(unpacked)
        # A body-level stand-in for the argument, named for its position in argv.
        stand_ins.append(Node(f"arg{argument}", None, (), (), ScalarMeta(int)))
    outer = Node(node.name, node.op, tuple(stand_ins), node.params, node.meta)
    for key, value in zip(outer.inputs, values, strict=True):
        if isinstance(key, Node):
            env[key] = value
    start, stop, step = (writer.operand(env, value) for value in outer.inputs[:3])
    for bound in (start, stop, step):
        if bound.python not in (int, bool):
            raise NotScalarLoop("a loop bound that is no Python int")
    bits = max(start.bits, stop.bits, step.bits)
    # step 0 raises Python's ValueError (through NumPy's run); an empty range gives back
    # the initial objects themselves, as eager does.
    empty = [
        f"    if ({step.text} == 0) {{ goto eager; }}",
        f"    if ({step.text} > 0 ? {start.text} >= {stop.text} : {start.text} <= {stop.text}) {{",
        f"        result = PyTuple_New({carried});",
        "        if (result == NULL) { goto fail; }",
        *(f"        PyTuple_SET_ITEM(result, {k}, {item});" for k, item in enumerate(initial)),
        "        goto done;",
        "    }",
    ]
    typings = flag_typings(node, first_apart=apart)
    writer.flag_typings.update(typings)
    if apart:
        assert first is not None
        outer, start, bits = _emit_first_iteration(writer, outer, first, (start, step), bits, env)
    finals = emit_loop(writer, outer, body, carried, (start, stop, step), bits, env)
    outputs = body.output if isinstance(body.output, tuple) else (body.output,)
    outputs = outputs[:carried]  # without a breaking body's stop flag
    boxes = [
        _box(final, out, placeholders[1 + k], outer.inputs[3 + k], env)
        for k, (final, out) in enumerate(zip(finals, outputs, strict=True))
    ]
    for k in kept:
        # The entry object itself where no branch assigned the local (eager's Python float).
        flag = finals[k].kept
        assert flag is not None
        boxes[k] = f"({flag.flag} ? {initial[k]} : {boxes[k]})"
    names = [placeholder.name for placeholder in placeholders[1 : 1 + carried]]
    entry_boxes = {
        typing.name: _entry_box(finals[names.index(typing.name)], typing.entry)
        for typing in typings.values()
    }
    ran_checks = ran_flag_outcomes(writer, node, names, boxes, initial, entry_boxes=entry_boxes)
    written = [array for array in writer.arrays if array.written]
    arguments = [value for value in node.inputs if isinstance(value, Node)]
    refills = [a for a in written if writer.bails and arguments[a.argument] in zeroed]
    snapshots = [a for a in written if writer.bails and a not in refills]

    def _function(
        fn_name: str, nest: list[str], checked: str | None, *, attribute: str = LOOP_FUNCTION
    ) -> str:
        return _function_lines(
            fn_name,
            nest,
            checked,
            attribute=attribute,
            writer=writer,
            entry=entry,
            empty=empty,
            snapshots=snapshots,
            refills=refills,
            written=written,
            carried=carried,
            boxes=boxes,
            ran_checks=ran_checks,
        )

    fast = _fast_copy(writer.buf.lines, writer.arrays)
    if fast is None:
        source = _function(
            name, number_labels(_unit_stride_copy(writer.buf.lines, writer.arrays)), None
        )
    else:
        # The checked form of the nest, for any strides, is a function of its own built at
        # -O1 (see `_fast_copy`); the function the wrapper calls runs the unchecked form.
        checked = f"{name}_checked"
        checked_nest = [line.replace("NP_LIKELY(", "NP_CHECKED_ONLY(") for line in writer.buf.lines]
        source = "\n".join(
            [
                f"static PyObject *{checked}(PyObject *const *argv, Py_ssize_t argc, "
                "PyObject *eager, int *np_fp);",
                _function(name, number_labels(fast), checked),
                "",
                _function(checked, number_labels(checked_nest), None, attribute=CHECKED_COPY),
            ]
        )
    if "np_par_disjoint(" in source:  # an outer loop with OpenMP (loop_parallel)
        source = PARALLEL_HELPERS + source
    return LoopFunction(name, source, writer.bails)


def _function_lines(
    name: str,
    nest: list[str],
    checked: str | None,
    *,
    attribute: str = LOOP_FUNCTION,
    writer: LoopWriter,
    entry: list[str],
    empty: list[str],
    snapshots: list[CArray],
    written: list[CArray],
    refills: Sequence[CArray] = (),
    carried: int,
    boxes: list[str],
    ran_checks: Sequence[str] = (),
) -> str:
    lines = [
        f"{attribute} static PyObject *{name}(PyObject *const *argv, Py_ssize_t argc, "
        "PyObject *eager, int *np_fp)",
        "{",
        "    PyObject *result = NULL;",
        *writer.prelude,
        *(f"    PyObject *snap_{array.name} = NULL;" for array in snapshots),
        *entry,
        *empty,
        *(f"    if (!PyArray_ISWRITEABLE(a_{array.name})) {{ goto eager; }}" for array in written),
    ]
    for array in snapshots:
        lines.append(f"    snap_{array.name} = np_loop_snapshot(a_{array.name});")
        lines.append(f"    if (snap_{array.name} == NULL) {{ goto fail; }}")
    lines.append("    NP_FP_CLEAR();")
    lines += writer.declarations
    lines += nest
    lines += ran_checks
    lines.append("    *np_fp |= NP_FP_TEST();")
    lines.append(f"    result = PyTuple_New({carried});")
    lines.append("    if (result == NULL) { goto fail; }")
    for k, box in enumerate(boxes):
        lines.append("    {")
        lines.append(f"        PyObject *item = {box};")
        lines.append("        if (item == NULL) { Py_CLEAR(result); goto fail; }")
        lines.append(f"        PyTuple_SET_ITEM(result, {k}, item);")
        lines.append("    }")
    lines.append("    goto done;")
    if writer.bails:
        lines.append("bail:")
        lines.append("    NP_FP_CLEAR();")
        lines += bail_restores(snapshots, refills)
    lines.append("eager:")
    lines.append("    result = np_loop_eager(eager, argv, argc);")
    lines.append("    goto done;")
    if checked is not None:
        # Nothing ran yet: the checked function starts over (its own snapshots).
        lines.append("checked:")
        lines.append(f"    result = {checked}(argv, argc, eager, np_fp);")
        lines.append("    goto done;")
    lines.append("fail:")
    lines.append("    result = NULL;")
    lines.append("done:")
    lines += [f"    Py_XDECREF(snap_{array.name});" for array in snapshots]
    lines += writer.cleanup
    lines.append("    return result;")
    lines.append("}")
    return "\n".join(lines)


def ran_flag_outcomes(
    writer: LoopWriter,
    node: Node,
    names: Sequence[str],
    boxes: list[str],
    initial: Sequence[str],
    *,
    entry_boxes: Mapping[str, str] = _NO_BOXES,
) -> list[str]:
    """What a loop function does after its nest with each run-time flag of `writer` (set
    where an inner loop assigning a retyped local ran, see `LoopWriter.ran_flag`): for a
    carried local (`names`, in order) that capture proved left untouched unless such a
    loop ran (the node's `entry_unless_ran`), its box in `boxes` becomes its entry object
    (`initial`) where the flag is clear; for one the loop computed on both ways
    (loop_flag_typings), its box becomes `entry_boxes`'s (its value boxed as the entry's
    Python type) where the flag is clear; for the others, the C lines returned bail to
    NumPy where a flag is clear (and the loop can bail). `NotScalarLoop` where the loop
    computes on such a local before an inner loop may have assigned it (see the
    capture's `computes_unless_ran`): a bail after the nest would come too late.

    >>> ran_flag_outcomes(LoopWriter("loop_v0"), node, ["t"], boxes, initial)  # doctest: +SKIP
    []
    """
    entry = dict(node.params).get("entry_unless_ran", ())
    unproven = []
    for name, flag in writer.ran_flags.items():
        if name in entry_boxes and name in names:
            k = names.index(name)
            boxes[k] = f"({flag} ? {boxes[k]} : {entry_boxes[name]})"
            perf_log.debug(
                "loop %s computes on `%s` both ways, as the entry object's Python type and as "
                "the loop's, chosen by whether an inner loop assigning it ran (no run with "
                "NumPy)",
                node.name,
                name,
            )
        elif name in entry and name in names:
            k = names.index(name)
            boxes[k] = f"({flag} ? {boxes[k]} : {initial[k]})"
            perf_log.debug(
                "loop %s gives back `%s` as its entry object where no inner loop assigning "
                "it ran (no run with NumPy)",
                node.name,
                name,
            )
        elif name in writer.own_names and name not in names:
            continue  # the iteration's own Python scalar: its flags chose the typings
        elif computes_unless_ran(node, name):
            # Read on the loop's type in an iteration before an inner loop assigned it:
            # where eager had the entry object's type, C would have computed otherwise.
            raise NotScalarLoop(
                f"it computes on `{name}` where no inner loop assigning it may have run yet"
            )
        else:
            unproven.append(flag)
            report_loop(node, NUMPY_RERUN, f"no inner loop assigning `{name}` may have run")
            perf_log.info(
                "loop %s runs again with NumPy where no inner loop assigning `%s` ran: the "
                "loop reads it, or assigns it elsewhere, so its type after the loop is known "
                "only to eager Python",
                node.name,
                name,
            )
    if not unproven:
        return []
    writer.bails = True
    return [f"    if (!({' && '.join(unproven)})) {{ goto bail; }}"]


def _entry_box(final: CValue, entry: type) -> str:
    # A new reference to the Python scalar of type `entry` holding a carried value.
    if entry is float:
        return f"PyFloat_FromDouble({final.text})"
    if entry is int:
        return f"PyLong_FromLongLong((long long){final.text})"
    if entry is complex:
        return f"PyComplex_FromDoubles(creal({final.text}), cimag({final.text}))"
    return f"PyBool_FromLong((long){final.text})"


def bail_restores(snapshots: Sequence[CArray], refills: Sequence[CArray] = ()) -> list[str]:
    """The C lines at a loop function's `bail` label that give the arrays the loop wrote
    their values from before it: `snapshots` from their copies, `refills` (fresh zeros)
    zeros again; a failed copy fails the call.

    >>> bail_restores([], [])
    []
    """
    lines = [
        f"    if (np_loop_restore(a_{array.name}, snap_{array.name}) < 0) {{ goto fail; }}"
        for array in snapshots
    ]
    lines += [f"    if (np_loop_restore(a_{a.name}, NULL) < 0) {{ goto fail; }}" for a in refills]
    return lines


CHECKED_COPY = '__attribute__((noinline, cold, optimize("O1", "no-tree-vectorize")))'
"""How the checked copy of a loop nest is declared (see `_fast_copy`): it runs when the
bounds of the outermost loop's indices are not proven before the loop (an index that wraps
or is out of bounds: an error) or when an array's last stride is not 1; -O3 on it cost a
third of a cold build of a row-by-row LU and bought nothing for the common case."""


def _fast_copy(nest: list[str], arrays: list[CArray]) -> list[str] | None:
    # The nest's unit-stride copy (`_unit_stride_copy`) without its checked forms at the
    # top level: each `if (NP_LIKELY(bounds)) { ... } else { checked ... }` at the nest's
    # top jumps to `checked` (the function's checked copy) instead, as do strides that are
    # not 1. None when the nest's top level has no such test (nothing to split off).
    top = "    "
    out: list[str] = []
    skipping = False
    split = False
    for line in nest:
        at_top = line.startswith(top) and not line.startswith(top + " ")
        if skipping:
            if at_top and line == top + "}":
                skipping = False
                out.append(top + "}")
            continue
        if at_top and line == top + "} else {" and _opens_bounds_test(out):
            out.append(line)
            out.append(top + "    goto checked;")
            skipping = True
            split = True
            continue
        out.append(line)
    if not split:
        return None
    if not arrays:
        return out
    names = [f"{array.name}_s{array.ndim - 1}" for array in arrays]
    pattern = re.compile(r"\b(" + "|".join(names) + r")\b")
    condition = " && ".join(f"{name} == 1" for name in names)
    return [
        f"    if (NP_LIKELY({condition})) {{",
        *(f"    {pattern.sub('1', line)}" for line in out),
        "    } else {",
        "        goto checked;",
        "    }",
    ]


def _opens_bounds_test(lines: list[str]) -> bool:
    # Whether the last top-level line of a nest's `lines` opens a bounds test (NP_LIKELY).
    for line in reversed(lines):
        if line.startswith("    ") and not line.startswith("     "):
            return line.startswith("    if (NP_LIKELY(")
    return False


def _unit_stride_copy(nest: list[str], arrays: list[CArray]) -> list[str]:
    # The nest twice: with each array's last stride the constant 1 when they all are (the
    # common case: GCC then keeps a value stored at one iteration in a register for the
    # load of the next, as Numba's C-contiguous specialization lets LLVM do), else as is
    # but with the checked form of each loop only (`NP_CHECKED_ONLY`): the unchecked forms
    # are for the common case, and GCC compiling them twice cost a quarter of a cold build.
    if not arrays:
        return nest
    names = [f"{array.name}_s{array.ndim - 1}" for array in arrays]
    pattern = re.compile(r"\b(" + "|".join(names) + r")\b")
    unit = [f"    {pattern.sub('1', line)}" for line in nest]
    condition = " && ".join(f"{name} == 1" for name in names)
    return [
        f"    if (NP_LIKELY({condition})) {{",
        *unit,
        "    } else {",
        *(f"    {line.replace('NP_LIKELY(', 'NP_CHECKED_ONLY(')}" for line in nest),
        "    }",
    ]


def _input_meta(position: int, carried: int, placeholders: list[Node]) -> Any:
    # What the body expects at input `position` of the loop node.
    if position < 3:
        return ScalarMeta(int)
    return placeholders[1 + position - 3].meta


def _unpack(writer: LoopWriter, entry: list[str], meta: Any, argument: int) -> Any:
    # C that reads argument `argument` as `meta` says (else runs the loop with NumPy).
    arg = f"argv[{argument}]"
    if isinstance(meta, ScalarMeta):
        if meta.type is int:
            name = writer.fresh("p")
            entry.append(f"    int64_t {name};")
            entry.append(f"    if (!np_loop_int({arg}, &{name})) {{ goto eager; }}")
            limit = f"(1LL << {ARGUMENT_BITS})"
            entry.append(f"    if ({name} > {limit} || {name} < -{limit}) {{ goto eager; }}")
            return CValue(name, np.dtype("int64"), int, ARGUMENT_BITS, invariant=True)
        if meta.type is float:
            name = writer.fresh("p")
            entry.append(f"    if (!PyFloat_CheckExact({arg})) {{ goto eager; }}")
            entry.append(f"    const double {name} = PyFloat_AS_DOUBLE({arg});")
            return CValue(name, np.dtype("float64"), float)
        if meta.type is bool:
            name = writer.fresh("p")
            entry.append(f"    if (!PyBool_Check({arg})) {{ goto eager; }}")
            entry.append(f"    const npy_bool {name} = (npy_bool)({arg} == Py_True);")
            return CValue(name, np.dtype("bool"), bool, 1)
        raise NotScalarLoop(f"a {meta.type.__name__} argument")
    if not isinstance(meta, ArrayMeta) or c_type(meta.dtype) is None:
        raise NotScalarLoop(f"an argument {meta}")
    ct = c_type(meta.dtype)
    typenum = int(meta.dtype.num)
    if meta.shape == ():
        name = writer.fresh("p")
        entry.append(f"    {ct} {name};")
        entry.append(f"    if (!np_loop_value({arg}, {typenum}, &{name})) {{ goto eager; }}")
        return CValue(name, meta.dtype)
    array = CArray(writer.fresh("A"), meta.dtype, len(meta.shape), argument)
    writer.arrays.append(array)
    a = f"a_{array.name}"
    entry.append(f"    if (!PyArray_Check({arg})) {{ goto eager; }}")
    entry.append(f"    PyArrayObject *{a} = (PyArrayObject *){arg};")
    conds = [
        f"PyArray_TYPE({a}) != {typenum}",
        f"PyArray_NDIM({a}) != {array.ndim}",
        f"!PyArray_ISNOTSWAPPED({a})",
        f"!PyArray_ISALIGNED({a})",
        *(f"PyArray_STRIDES({a})[{d}] % {meta.dtype.itemsize} != 0" for d in range(array.ndim)),
    ]
    entry.append(f"    if ({' || '.join(conds)}) {{ goto eager; }}")
    entry.append(f"    {ct} *{array.name}_d = ({ct} *)PyArray_DATA({a});")
    for d in range(array.ndim):
        entry.append(
            f"    const int64_t {array.name}_s{d} = "
            f"(int64_t)(PyArray_STRIDES({a})[{d}] / {meta.dtype.itemsize});"
        )
        entry.append(f"    const int64_t {array.name}_n{d} = (int64_t)PyArray_DIMS({a})[{d}];")
    return array


def kept_entry(
    writer: LoopWriter, env: Env, entry: list[str], inputs: Sequence[Any], position: int, meta: Any
) -> CValue:
    """The C value of input `position` of a loop node (of `inputs`), a carried local's
    Python entry a branch may leave as it came (`check_branch_kept_entries`): its flag
    (`EntryKept`) set, owned by the input's position."""
    value = inputs[position]
    if isinstance(value, Node):
        argument = sum(isinstance(v, Node) for v in inputs[:position])
        found = _unpack(writer, entry, meta, argument)
    else:
        found = writer.operand(env, value)
    assert isinstance(found, CValue)
    return attrs.evolve(found, kept=EntryKept(f"entry{position}", "1"))


def initial_object(value: Any, inputs: Sequence[Any]) -> str:
    """A new reference to the loop node's initial carried value `value` (an argument or
    a constant; `inputs`: the node's inputs, whose graph values argv holds in order)."""
    if isinstance(value, Node):
        argument = [v for v in inputs if isinstance(v, Node)].index(value)
        return f"Py_NewRef(argv[{argument}])"
    return _box_constant(value)


def _box(final: CValue, out: Any, placeholder: Node, init: Any, env: Env) -> str:
    # A new reference to the Python object eager NumPy leaves for one carried value.
    if out is placeholder:  # never reassigned: the initial object itself
        if isinstance(init, Node):
            found = env[init]
            assert isinstance(found, CValue)
            return f"Py_NewRef(argv[{_argument_of(init)}])"
        return _box_constant(init)
    meta = placeholder.meta
    if isinstance(meta, ScalarMeta):
        if meta.type is int:
            return f"PyLong_FromLongLong((long long){final.text})"
        if meta.type is float:
            return f"PyFloat_FromDouble({final.text})"
        return f"PyBool_FromLong((long){final.text})"
    assert isinstance(meta, ArrayMeta)
    if not isinstance(out, Node) or not gives_scalar(out) or out.op is None:
        raise NotScalarLoop("a carried 0-d value NumPy keeps as an array")
    if out.op.name == "carried_scalar":
        raise NotScalarLoop("a carried value the body leaves as it came")
    # A copy: the carried local's address never escapes, so it stays in a register.
    return f"np_loop_box(&(({c_type(meta.dtype)}[1]){{{final.text}}})[0], {int(meta.dtype.num)})"


# NOTE: the dtype each Python scalar type converts to exactly (the C local holding an entry
# object); the body computes on the converted entry as the first iteration did on the Python
# scalar only where `computes_either_way` says so (a float meeting float32 values does not).
_EXACT_CARRY: dict[type, np.dtype[Any]] = {
    float: np.dtype("float64"),
    int: np.dtype("int64"),
    bool: np.dtype("bool"),
    complex: np.dtype("complex128"),
}


def _first_iteration_apart(node: Node, body: Graph, first: Graph, carried: int) -> bool:
    # Whether the first iteration (on other types: a Python `0.0` carried into NumPy
    # float32s) runs apart, its own graph emitted before the loop of the body's.
    if dict(node.params).get("breaks"):
        _check_first_iteration(node, body, first, carried)
        return False
    try:
        _check_first_iteration(node, body, first, carried)
    except _FirstIterationDiffers:
        pass
    else:
        return False
    first_out = first.output if isinstance(first.output, tuple) else (first.output,)
    body_out = body.output if isinstance(body.output, tuple) else (body.output,)
    for k in range(carried):
        local = first.placeholders[1 + k]
        if body_out[k] is body.placeholders[1 + k] and first_out[k] is not local:
            # The body would give back the initial object (see `_box`), not the first's.
            raise NotScalarLoop("a carried value only the first iteration assigns")
        if first_out[k] is not local and not _holds_exactly(
            local.meta, getattr(first_out[k], "meta", None)
        ):
            # The first iteration's result goes through its carried local (of the types
            # it starts on) before the body's loop converts it to the body's types.
            raise NotScalarLoop("a first iteration whose results its carried locals round")
    return True


def _emit_first_iteration(
    writer: LoopWriter,
    outer: Node,
    first: Graph,
    bounds: tuple[CValue, CValue],
    bits: int,
    env: Env,
) -> tuple[Node, CValue, int]:
    # The first iteration as a loop of one trip over `first` (the range is not empty
    # here): its final carried values, of the body's types, start the loop that follows
    # at `start + step`. Returns that loop's node (stand-ins for those values), start and
    # bound in bits of its index.
    start, step = bounds
    params = {key: value for key, value in outer.params if key != "first"}
    carried: int = params["carried"]
    after = CValue(f"({start.text} + {step.text})", np.dtype("int64"), int, bits + 1)
    stand_in = Node(f"{outer.name}_after_first", None, (), (), ScalarMeta(int))
    env[stand_in] = after
    inputs = list(outer.inputs)
    own = tuple({**params, "body": first}.items())
    once = Node(outer.name, outer.op, (inputs[0], stand_in, *inputs[2:]), own, outer.meta)
    finals = emit_loop(writer, once, first, carried, (start, after, step), bits, env)
    for k, final in enumerate(finals):
        value = Node(f"{outer.name}_first{k}", None, (), (), ScalarMeta(int))
        env[value] = final
        inputs[3 + k] = value
    inputs[0] = stand_in
    rest = Node(outer.name, outer.op, tuple(inputs), tuple(params.items()), outer.meta)
    return rest, after, bits + 1


def _holds_exactly(local: Any, result: Any) -> bool:
    # Whether a carried local of meta `local` holds every value of meta `result` exactly
    # (a float32 in the double of a Python float; not an int64 in it).
    def dtype(meta: Any) -> np.dtype[Any] | None:
        if isinstance(meta, ScalarMeta) and meta.type in _EXACT_CARRY:
            return _EXACT_CARRY[meta.type]
        if isinstance(meta, ArrayMeta) and meta.shape == ():
            return meta.dtype
        return None

    held, value = dtype(local), dtype(result)
    if held is None or value is None:
        return False
    if held == value or value.kind == "b":
        return True
    if held.kind == "f":
        # A double holds floats up to its width and ints up to 32 bits.
        limit = held.itemsize if value.kind == "f" else held.itemsize // 2
        return value.kind in "fiu" and value.itemsize <= limit
    if held.kind == "i":
        return (value.kind == "i" and value.itemsize <= held.itemsize) or (
            value.kind == "u" and value.itemsize < held.itemsize
        )
    if held.kind == "c":
        # A complex holds complex values up to its width, and floats of its parts' width.
        limit = held.itemsize if value.kind == "c" else held.itemsize // 2
        return value.kind in "cf" and value.itemsize <= limit
    return False


class _FirstIterationDiffers(NotScalarLoop):
    # The first iteration computes otherwise on its types than the body would.
    pass


def _check_first_iteration(node: Node, body: Graph, first: Graph, carried: int) -> None:
    # A loop whose first iteration runs on other types (a Python `0.0` carried into NumPy
    # float64s) runs the body from the start in C only where that gives eager's values.
    first_out = first.output if isinstance(first.output, tuple) else (first.output,)
    body_out = body.output if isinstance(body.output, tuple) else (body.output,)
    for k in range(carried):
        after_first = getattr(first_out[k], "meta", None)
        if after_first != getattr(body_out[k], "meta", None):
            raise NotScalarLoop("the first iteration gives other types than the body")
        meta = body.placeholders[1 + k].meta
        init = node.inputs[3 + k]
        if isinstance(init, Node):
            if not isinstance(init.meta, ScalarMeta):
                continue  # a NumPy value: the body's types from the start
            python = init.meta.type
        else:
            python = type(init)
        if isinstance(meta, ScalarMeta) and meta.type is python:
            continue
        if not isinstance(meta, ArrayMeta):
            raise _FirstIterationDiffers(
                "the first iteration runs on Python scalars of another type"
            )
        exact = _EXACT_CARRY.get(python) == meta.dtype or _exact_in(init, meta.dtype)
        if exact and _follows_ran_flag(node, body, k):
            continue
        if not (exact and computes_either_way(first, first.placeholders[1 + k], meta.dtype)):
            raise _FirstIterationDiffers(
                "the first iteration computes otherwise on Python scalars of another type"
            )


def check_branch_kept_entries(node: Node, body: Graph, carried: int) -> list[int]:
    """The carried locals of loop node `node` (a `for_loop` or `while_loop`) whose Python
    entry scalar (`t = 1.1`) a branch of the body may leave as it came (`if x[i] > 0.5: t =
    x[i]`, capture's `may_hold_entry`): the loop function gives back that object where no
    branch assigned the local (a C flag per local, `EntryKept`). It stays weak under NEP
    50 until then, where the body is typed for the NumPy value: `NotScalarLoop` unless
    the body computes the same on both (`t * z[i]` with float32 `z` does not).

    >>> check_branch_kept_entries(node, body, 1)  # doctest: +SKIP
    [0]
    """
    assert node.op is not None
    is_for = node.op.name == "for_loop"
    kept = []
    for k in range(carried):
        local = body.placeholders[k + is_for]
        meta = local.meta
        init = node.inputs[(3 if is_for else 1) + k]
        python: type = type(init)
        if isinstance(init, Node):
            init_meta = init.meta
            if not isinstance(init_meta, ScalarMeta):
                continue
            python = init_meta.type
        if not isinstance(meta, ArrayMeta) or python not in _EXACT_CARRY:
            continue
        # A local inner loops retype has their run-time flags (ran_flag_outcomes).
        flagged = any(local.name in dict(n.params).get("typed_if_ran", ()) for n in body.nodes)
        held = may_hold_entry(body, [local], through_loops=not flagged)
        if _outputs(body)[k] is local or k not in held:
            continue  # never assigned (the object itself, see `_box`), or always
        if not flagged:
            kept.append(k)
        # The local and its `carried_scalar` 0-d form, which the body computes on.
        entries = {local} | {
            n
            for n in body.nodes
            if n.op is not None and n.op.name == "carried_scalar" and n.inputs[0] is local
        }
        computed_on = entries - {local} or entries
        if not all(computes_either_way(body, entry, meta.dtype, python) for entry in computed_on):
            raise NotScalarLoop(
                "a Python scalar a branch may leave as it came, computed on otherwise "
                "than as the loop's NumPy value"
            )
    return kept


def _outputs(graph: Graph) -> tuple[Any, ...]:
    return graph.output if isinstance(graph.output, tuple) else (graph.output,)


def _follows_ran_flag(node: Node, body: Graph, k: int) -> bool:
    # Whether carried local `k` is one an inner loop of the body retypes and capture did
    # not prove left as it came until one ran: the body then computes on it both ways
    # (loop_flag_typings), on the entry's type where the flag is clear, as in the first
    # iteration.
    name = body.placeholders[1 + k].name
    if name in dict(node.params).get("entry_unless_ran", ()):
        return False
    return any(name in dict(inner.params).get("typed_if_ran", ()) for inner in body.nodes)


def _exact_in(value: Any, dtype: np.dtype[Any]) -> bool:
    # Whether constant `value` converts to `dtype` and back unchanged.
    if isinstance(value, Node) or dtype.kind not in "iuf" or isinstance(value, bool):
        return False
    with np.errstate(all="ignore"):
        try:
            converted = np.array(value).astype(dtype)
        except OverflowError:
            return False
        return bool(converted.item() == value)


def _argument_of(stand_in: Node) -> int:
    return int(stand_in.name.removeprefix("arg"))


def _box_constant(value: Any) -> str:
    if isinstance(value, np.generic) and c_type(value.dtype) is not None:
        # A NumPy scalar constant (`crc = np.uint32(0xFFFFFFFF)`), before the Python types
        # (np.float64 is a float subclass): boxed as that scalar.
        literal = c_literal(value.item(), value.dtype)
        ct = c_type(value.dtype)
        return f"np_loop_box(&(({ct}[1]){{{literal}}})[0], {int(value.dtype.num)})"
    if isinstance(value, bool):
        return "Py_NewRef(Py_True)" if value else "Py_NewRef(Py_False)"
    if isinstance(value, int):
        return f"PyLong_FromLongLong({value}LL)"
    if isinstance(value, float):
        return f"PyFloat_FromDouble({c_literal(value, np.dtype('float64'))})"
    if isinstance(value, complex):
        f64 = np.dtype("float64")
        parts = f"{c_literal(value.real, f64)}, {c_literal(value.imag, f64)}"
        return f"PyComplex_FromDoubles({parts})"
    raise NotScalarLoop(f"a carried constant {value!r}")
