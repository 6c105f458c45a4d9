"""A loop of scalar work as one Triton program: the whole `for_loop` runs on the device.

A `for_loop` whose body does only 0-d work (loads `x[i]`, stores `x[i] = v`, NumPy ops on
0-d values, Python arithmetic, `if` on run-time values, `break`, nested `for` and `while`
loops: `program_loops.py`) becomes one `@triton.jit` kernel launched once, with one
program instance: the index is the kernel's own loop variable and the carried values stay
in registers across iterations. Where the iterations are independent
(`numpile_inductor.loop_independence`: nothing carried, no `break`, each iteration writes
only its own row) and no array the loop writes shares memory with another it uses, each
iteration runs in a program instance of its own (mandelbrot's points). Bodies of array
work are not taken here: they run as a host loop of kernel launches
(`numpile_inductor.loops`).

Every number the kernel reads from the host is passed in memory, never as a scalar
argument: Triton would specialize an int equal to 1 and pass a Python float as float32.
So the trip count, start, step, shapes and strides come in one int64 array (a new trip
count launches the same binary), and carried values and scalar invariants in one-element
arrays the kernel reads at entry and writes back at exit (a bool in an int8).

Python semantics the device cannot give are handled around the launch: an index out of
bounds, a Python int that outgrows int64 (`+`, `-`, `*` and unary `-` of Python ints are
checked; Python's ints are unbounded), or a NumPy scalar constructor NumPy would raise or
warn on (`np.uint8(300)`, `np.int64(nan)`, `np.float32(1e300)`; `numpy_scalars.py`), sets
an error flag (the load or store is masked off, a `while` stops), and the call then puts
back the arrays the loop writes (copied before the launch) and runs the loop again op by
op, which raises NumPy's `IndexError` or `OverflowError` (or warns, or computes Python's
big int) from the user's line with earlier iterations' writes as eager left them. The
first iteration on other carried types (NEP 50), empty ranges and carried values of other
types run on the host as `host_loop` does: the carried values enter the program with the
loop's types, which is what an inner loop kept with the loop's types (`typed_if_ran`,
numpile_capture.loop_entry) needs. Not taken (the body then runs op by op, and a
`numpile.perf_hints` line names the loop's line and why): Python `/`, `//` and `%` other
than by a positive constant, complex and float16 values (`np.float16(i)` and
`np.complex128(i)` among them), bool arrays, and the cases `program_loops.py` lists.

    >>> runner = loop_program(node, body, "interpret", "model.py:12")  # doctest: +SKIP
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

import numpile_runtime as rt
from numpile_capture import (
    DEVICE_PROGRAM,
    OP_BY_OP,
    ArrayMeta,
    Graph,
    Node,
    ScalarMeta,
    ScalarSlot,
    flagged_reads,
    run_graph,
)

from ...loop_independence import independent_iterations
from ...loop_ir import Apply, Constant, ScalarArg
from ...loop_reports import report_loop
from ...loops import LoopRunner, host_loop
from ..common import CodeBuffer
from .numpy_scalars import numpy_scalar_conversion
from .ops import TRITON_HELPERS, tl_type, triton_expr, triton_literal

if TYPE_CHECKING:
    from .program_views import _Vector

perf_log = logging.getLogger("numpile.perf_hints")

__all__ = ["KERNEL_ROWS", "NotDeviceLoop", "loop_program", "loop_program_source"]

# NOTE: the longest array axis a loop program takes when a loop nested in it has a body
# kernels take (`D[i, :] = ...`, array-sized rows): one warp walks such a row in tiles of
# 256, where kernels spread it over the device; past this the nest runs as host loops
# (op by op around the inner loops, which replay their kernels).
KERNEL_ROWS = 4096

#: The most program instances one launch has (CUDA's limit on a grid's first axis): past it
#: each instance runs several independent iterations.
_MOST_PROGRAMS = 2**31 - 1


class NotDeviceLoop(Exception):  # noqa: N818 - it names the event
    """The loop's body has something one Triton program does not compute; it runs as a
    host loop."""


@attrs.define
class _Scalar:
    # A 0-d value of the kernel: its Triton expression (a name), its dtype, and the Python
    # type when it is a Python scalar (int, float, bool), else None.
    text: str
    dtype: np.dtype[Any]
    python: type | None = None


@attrs.define
class _Array:
    # An array argument: `name_ptr`, `name_n<axis>` and `name_s<axis>` in the kernel.
    name: str
    dtype: np.dtype[Any]
    ndim: int
    written: bool = False


_BOOL_CELL = np.dtype("int8")
_PYTHON_DTYPES: dict[type, np.dtype[Any]] = {
    int: np.dtype("int64"),
    float: np.dtype("float64"),
    bool: np.dtype("bool"),
}
_PY_ARITH = {"add": "+", "sub": "-", "mul": "*"}
_PY_BITWISE = {"and": "&", "or": "|", "xor": "^"}
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_PY_COMPARE = {"lt": "<", "le": "<=", "eq": "==", "ne": "!=", "gt": ">", "ge": ">="}

# NOTE: a body's values: 0-d values, array arguments, and 1-d views and values of them.
Env = dict[Node, "_Scalar | _Array | _Vector"]


class _ProgramWriter:
    # Writes the kernel body: one statement per line, values as fresh names.
    def __init__(self) -> None:
        self.buf = CodeBuffer(level=1)
        self.count = 0
        self.result_metas: dict[tuple[Node, int], Any] = {}
        self.cond_results: dict[tuple[Node, int], _Scalar] = {}
        # Stores written so far: a 1-d value computed before a store is not read after it.
        self.stores = 0
        # Whether a nested loop has a body that kernels take (see `KERNEL_ROWS`).
        self.kernel_loops = False
        # The outermost loop's carried values: they enter the program with the loop's types
        # (the first iterations run on the host until they have them), so an inner loop
        # that retypes one of them need not have run (see `retyped_inside`).
        self.entry_typed: set[str] = set()

    def stored(self) -> None:
        # NOTE: after each store a barrier: a later tile load (`program_views.py`) reads
        # elements other threads of the program stored.
        self.stores += 1
        self.buf.writeline("tl.debug_barrier()")

    def fresh(self, stem: str) -> str:
        self.count += 1
        return f"{stem}{self.count}"

    def define(self, dtype: np.dtype[Any], text: str, python: type | None = None) -> _Scalar:
        name = self.fresh("t")
        self.buf.writeline(f"{name} = {text}")
        return _Scalar(name, dtype, python)

    def operand(self, env: Env, value: Any) -> _Scalar:
        if isinstance(value, Node):
            found = env.get(value)
            if not isinstance(found, _Scalar):
                raise NotDeviceLoop(f"{value.name} is not a 0-d value")
            return found
        kind = type(value)
        if kind is int and not _INT64_MIN <= value <= _INT64_MAX:
            raise NotDeviceLoop(f"a Python int {value} beyond int64")
        if kind in _PYTHON_DTYPES:
            dtype = _PYTHON_DTYPES[kind]
            return _Scalar(triton_literal(value, dtype, "[]"), dtype, kind)
        if isinstance(value, np.generic) and tl_type(value.dtype) is not None:
            return _Scalar(triton_literal(value.item(), value.dtype, "[]"), value.dtype)
        raise NotDeviceLoop(f"a constant {value!r}")

    def body(self, graph: Graph, env: Env) -> list[_Scalar]:
        if flagged_reads(graph):
            # No run-time flag here chooses the typing of the ops on such a value.
            raise NotDeviceLoop(
                "a value that may still be the Python scalar the iteration gave a local"
            )
        for node in graph.nodes:
            if node.op is not None and node.op.name == "loop_output":
                source = node.inputs[0]
                if isinstance(source, Node):
                    self.result_metas[(source, dict(node.params)["index"])] = node.meta
        for node in graph.nodes:
            if node.op is None:
                continue
            handler = _HANDLERS.get(node.op.name, _program_views.pointwise_vector)
            handler(self, node, env)
        outputs = graph.output if isinstance(graph.output, tuple) else (graph.output,)
        return [self.operand(env, out) for out in outputs]

    def expression(self, expr: Any) -> _Scalar:
        if isinstance(expr, Constant):
            return _Scalar(triton_literal(expr.value, expr.dtype, "[]"), expr.dtype)
        if isinstance(expr, ScalarArg):
            return _Scalar(expr.name, expr.dtype)
        if not isinstance(expr, Apply):
            raise NotDeviceLoop(f"a loop-IR value {expr}")
        args = [self.expression(arg) for arg in expr.args]
        text = triton_expr(expr.fn, [a.text for a in args], [a.dtype for a in args], expr.dtype)
        return self.define(expr.dtype, text)

    def cast(self, value: _Scalar, dtype: np.dtype[Any]) -> _Scalar:
        if value.dtype == dtype and value.python is None:
            return value
        return self.define(dtype, triton_expr("cast", [value.text], [value.dtype], dtype))

    def flag(self, condition: str) -> None:
        # Raise the error flag where `condition` holds: the call then runs the loop again
        # with NumPy (arrays the loop wrote put back first).
        self.buf.writeline(f"bad = bad | ({condition})")

    def checked_int(self, operator: str, a: str, b: str) -> _Scalar:
        # Python's `a op b` on ints as int64 (two's complement wraps), the flag raised where
        # the exact result does not fit (Python's int would grow).
        result = self.define(np.dtype("int64"), f"({a} {_PY_ARITH[operator]} {b})", int)
        r = result.text
        if operator == "add":
            self.flag(f"(({a} ^ {r}) & ({b} ^ {r})) < 0")
        elif operator == "sub":
            self.flag(f"(({a} ^ {b}) & ({a} ^ {r})) < 0")
        else:
            # A product fits when dividing it by `a` gives `b` back; `a == -1` overflows only
            # for b == -2**63, the one `b` whose negation is itself.
            safe = self.define(np.dtype("int64"), f"tl.where(({a} == 0) | ({a} == -1), 1, {a})")
            exact = f"({a} == 0) | ({r} // {safe.text} == {b})"
            self.flag(f"tl.where({a} == -1, ({b} < 0) & ({r} == {b}), ({exact}) == 0)")
        return result

    def checked_index(self, value: _Scalar, size: str) -> tuple[str, str]:
        # An int index into an axis of `size` elements, NumPy's negative indices wrapped,
        # and whether it is in bounds.
        if value.dtype.kind not in "iu" or value.python is bool:
            raise NotDeviceLoop("a non-integer index")
        raw = self.define(np.dtype("int64"), f"{value.text}.to(tl.int64)").text
        wrapped = self.define(np.dtype("int64"), f"tl.where({raw} < 0, {raw} + {size}, {raw})")
        ok = self.define(np.dtype("bool"), f"({wrapped.text} >= 0) & ({wrapped.text} < {size})")
        return wrapped.text, ok.text

    def element(self, array: _Array, index: list[_Scalar]) -> tuple[str, str]:
        # The address of array[index] and its in-bounds mask; an index out of bounds sets the
        # error flag (NumPy's negative indices wrap first).
        terms, masks = [], []
        for axis, value in enumerate(index):
            wrapped, ok = self.checked_index(value, f"{array.name}_n{axis}")
            terms.append(f"{wrapped} * {array.name}_s{axis}")
            masks.append(ok)
        mask = " & ".join(masks) if masks else "bad == 0"
        ok_all = self.define(np.dtype("bool"), mask).text
        self.buf.writeline(f"bad = bad | ({ok_all} == 0)")
        return f"{array.name}_ptr + {' + '.join(terms) or '0'}", ok_all


def _index_values(writer: _ProgramWriter, node: Node, env: Env, scalars: Any) -> list[_Scalar]:
    values = []
    for item in dict(node.params)["index"]:
        if isinstance(item, ScalarSlot):
            values.append(writer.operand(env, scalars[item.position]))
        elif isinstance(item, int | np.integer) and not isinstance(item, bool):
            values.append(writer.operand(env, int(item)))
        else:
            raise NotDeviceLoop(f"index item {item!r} is not an int")
    return values


def _array(env: Env, value: Any, ndim: int) -> _Array:
    found = env.get(value) if isinstance(value, Node) else None
    if not isinstance(found, _Array):
        raise NotDeviceLoop("an indexed value that is no array argument of the loop")
    if found.ndim != ndim:
        raise NotDeviceLoop("not one int per dimension")
    return found


def _element_at(writer: _ProgramWriter, node: Node, env: Env) -> None:
    index = _index_values(writer, node, env, node.inputs[1:])
    array = _array(env, node.inputs[0], len(index))
    address, ok = writer.element(array, index)
    env[node] = writer.define(array.dtype, f"tl.load({address}, mask={ok})")


def _setitem_at(writer: _ProgramWriter, node: Node, env: Env) -> None:
    value = writer.operand(env, node.inputs[1])
    index = _index_values(writer, node, env, node.inputs[2:])
    array = _array(env, node.inputs[0], len(index))
    if value.python is int and array.dtype != np.dtype("int64") and array.dtype.kind in "iu":
        raise NotDeviceLoop("a Python int stored into a narrower integer array")
    address, ok = writer.element(array, index)
    stored = writer.cast(value, array.dtype)
    writer.buf.writeline(f"tl.store({address}, {stored.text}, mask={ok})")
    writer.stored()
    array.written = True
    env[node] = array


def _carried_scalar(writer: _ProgramWriter, node: Node, env: Env) -> None:
    meta = node.meta
    assert isinstance(meta, ArrayMeta)
    env[node] = writer.cast(writer.operand(env, node.inputs[0]), meta.dtype)


def _numpy_scalar(writer: _ProgramWriter, node: Node, env: Env) -> None:
    # `np.uint8(i)`: where NumPy raises or warns (out of range, NaN, float32 overflow), the
    # error flag goes up and the loop runs again with NumPy, which does so.
    value = writer.operand(env, node.inputs[0])
    meta = node.meta
    assert isinstance(meta, ArrayMeta)
    flag = writer.fresh("f")
    python = value.python
    conversion = (
        None
        if python is None
        else numpy_scalar_conversion(value.text, python, meta.dtype, flag=flag)
    )
    if conversion is None:
        raise NotDeviceLoop(f"numpy_scalar of a {python} value to {meta.dtype}")
    if conversion.fails is not None:
        writer.buf.writeline(f"{flag} = {conversion.fails}")
        writer.buf.writeline(f"bad = bad | {flag}")
    env[node] = writer.define(meta.dtype, conversion.value)


def _dim(writer: _ProgramWriter, node: Node, env: Env) -> None:
    axis = dict(node.params)["axis"]
    found = env.get(node.inputs[0]) if isinstance(node.inputs[0], Node) else None
    if not isinstance(found, _Array):
        raise NotDeviceLoop("the size of a value that is no array argument")
    env[node] = _Scalar(f"{found.name}_n{axis}", np.dtype("int64"), int)


def _py_binary(writer: _ProgramWriter, node: Node, env: Env) -> None:
    # Python's operators on Python scalars: a bool counts as an int, ints are int64 whose
    # add, subtract and multiply flag an overflow (Python's ints are unbounded: NumPy reruns
    # the loop), floats are float64.
    operator = dict(node.params)["operator"]
    left, right = (writer.operand(env, value) for value in node.inputs)
    if left.python is None or right.python is None:
        raise NotDeviceLoop(f"py_binary {operator} on {left.python} and {right.python}")
    meta = node.meta
    assert isinstance(meta, ScalarMeta)
    floats = float in (left.python, right.python)
    dtype = np.dtype("float64") if floats else np.dtype("int64")
    a, b = writer.cast(left, dtype).text, writer.cast(right, dtype).text
    if operator in _PY_COMPARE:
        env[node] = writer.define(np.dtype("bool"), f"({a} {_PY_COMPARE[operator]} {b})", bool)
        return
    if operator in _PY_BITWISE and not floats:
        text = f"({a} {_PY_BITWISE[operator]} {b})"
        if meta.type is bool:
            env[node] = writer.define(np.dtype("bool"), f"{text} != 0", bool)
        else:
            env[node] = writer.define(dtype, text, int)
        return
    if operator in _PY_ARITH and floats:
        env[node] = writer.define(dtype, f"({a} {_PY_ARITH[operator]} {b})", float)
        return
    if operator in _PY_ARITH:
        env[node] = writer.checked_int(operator, a, b)
        return
    divisor = node.inputs[1]
    if operator in ("floordiv", "mod") and not floats and type(divisor) is int and divisor > 0:
        helper = "_np_floor_divide_int" if operator == "floordiv" else "_np_remainder_int"
        env[node] = writer.define(dtype, f"{helper}({a}, {b})", int)
        return
    raise NotDeviceLoop(f"Python {operator} (ZeroDivisionError or unbounded ints)")


def _py_unary(writer: _ProgramWriter, node: Node, env: Env) -> None:
    operator = dict(node.params)["operator"]
    value = writer.operand(env, node.inputs[0])
    if operator not in ("neg", "invert") or value.python not in (int, float, bool):
        raise NotDeviceLoop(f"py_unary {operator} of a {value.python}")
    if value.python is float:
        if operator == "invert":
            raise NotDeviceLoop("~ of a Python float")
        env[node] = writer.define(value.dtype, f"(-{value.text})", float)
        return
    a = writer.cast(value, np.dtype("int64")).text
    if operator == "invert":
        env[node] = writer.define(np.dtype("int64"), f"(~{a})", int)
        return
    result = writer.define(np.dtype("int64"), f"(-{a})", int)
    writer.flag(f"({a} < 0) & ({result.text} < 0)")  # -(-2**63) is past int64
    env[node] = result


def _cond(writer: _ProgramWriter, node: Node, env: Env) -> None:
    # Both branches assign the same result names, cast to the types `loop_output` gives.
    pred = writer.operand(env, node.inputs[0])
    params = dict(node.params)
    slots: dict[int, _Scalar] = {}
    for (source, position), meta in writer.result_metas.items():
        if source is node:
            dtype, python = _meta_type(meta)
            slots[position] = _Scalar(writer.fresh("r"), dtype, python)
    truth = triton_expr("cast", [pred.text], [pred.dtype], np.dtype("bool"))
    for branch_name, head in (("then_branch", f"if {truth}:"), ("else_branch", "else:")):
        writer.buf.writeline(head)
        branch: Graph = params[branch_name]
        inner: Env = dict(env)
        for placeholder, value in zip(branch.placeholders, node.inputs[1:], strict=True):
            inner[placeholder] = _input_value(writer, env, value)
        with writer.buf.indent():
            writer.buf.writeline("pass")
            outputs = writer.body(branch, inner)
            for position, slot in slots.items():
                cast = writer.cast(outputs[position], slot.dtype)
                writer.buf.writeline(f"{slot.text} = {cast.text}")
    for position, slot in slots.items():
        writer.cond_results[(node, position)] = slot


def _loop_output(writer: _ProgramWriter, node: Node, env: Env) -> None:
    source = node.inputs[0]
    found = writer.cond_results.get((source, dict(node.params)["index"]))
    if found is None:
        raise NotDeviceLoop("a result of a nested loop")
    env[node] = found


def _pointwise(writer: _ProgramWriter, node: Node, env: Env) -> None:
    # A 0-d NumPy op through its lowering (NumPy's promotion and casts), spelled in Triton.
    meta = node.meta
    name = node.op.name if node.op is not None else node.name
    if not isinstance(meta, ArrayMeta) or meta.shape != ():
        raise NotDeviceLoop(f"{name} gives {meta}")
    env[node] = lowered_value(writer, node, env)


def lowered_value(writer: _ProgramWriter, node: Node, env: Env) -> _Scalar:
    """The value of NumPy op `node` through its lowering, its operands read from `env`
    (0-d values, or the tiles of 1-d ones: the same Triton text computes both)."""
    meta = node.meta
    name = node.op.name if node.op is not None else node.name
    if not isinstance(meta, ArrayMeta) or tl_type(meta.dtype) is None:
        raise NotDeviceLoop(f"{name} gives {meta}")
    # Late import: the lowering (sympy) loads only when a loop is compiled.
    from ...lowering import LOWERINGS, CannotLower, Lowered, LoweringContext

    fn = LOWERINGS.get(name)
    if fn is None:
        raise NotDeviceLoop(f"{name} has no scalar form")
    ctx = LoweringContext(Graph())
    for value in node.input_nodes():
        found = writer.operand(env, value)
        arg = ScalarArg(found.text, found.dtype)
        ctx.values[value] = Lowered((), found.dtype, _constant_loader(arg), pure_view=True)
    try:
        lowered = fn(ctx, node)
    except CannotLower as reason:
        raise NotDeviceLoop(f"{name}: {reason}") from reason
    if ctx.steps or lowered.loader is None:
        raise NotDeviceLoop(f"{name} needs a kernel of its own")
    result = writer.expression(lowered.loader(()))
    return writer.cast(result, meta.dtype)


def _constant_loader(arg: ScalarArg) -> Callable[[tuple[Any, ...]], ScalarArg]:
    return lambda idx: arg


def _input_value(writer: _ProgramWriter, env: Env, value: Any) -> _Scalar | _Array:
    if isinstance(value, Node) and isinstance(env.get(value), _Array):
        found = env[value]
        assert isinstance(found, _Array)
        return found
    return writer.operand(env, value)


def _meta_type(meta: Any) -> tuple[np.dtype[Any], type | None]:
    # The kernel dtype and Python type of a 0-d value with metadata `meta`.
    if isinstance(meta, ScalarMeta):
        if meta.type not in (int, float, bool):
            raise NotDeviceLoop(f"a Python {meta.type.__name__} value")
        return _PYTHON_DTYPES[meta.type], meta.type
    if isinstance(meta, ArrayMeta) and meta.shape == () and tl_type(meta.dtype) is not None:
        return meta.dtype, None
    raise NotDeviceLoop(f"a value {meta} that is not 0-d")


_HANDLERS: dict[str, Callable[[_ProgramWriter, Node, Env], None]] = {
    "element_at": _element_at,
    "setitem_at": _setitem_at,
    "carried_scalar": _carried_scalar,
    "numpy_scalar": _numpy_scalar,
    "dim": _dim,
    "py_binary": _py_binary,
    "py_unary": _py_unary,
    "cond": _cond,
    "loop_output": _loop_output,
}


@attrs.frozen
class LoopSource:
    """The generated kernel of one loop and how to call it: `cells` are the positions in the
    node's carried and invariant values passed as one-element arrays (carried first, read
    at entry, the carried ones written at exit), `arrays` the positions passed as arrays
    (their sizes and strides follow start, step and the trip count in the int64 `meta`
    argument), `cell_dtypes` the dtype of each cell.

    >>> print(loop_program_source(node, body).source)  # doctest: +SKIP
    """

    source: str
    cells: tuple[int, ...]
    cell_dtypes: tuple[np.dtype[Any], ...]
    arrays: tuple[int, ...]
    array_ndims: tuple[int, ...]
    written: tuple[int, ...]  # positions in `arrays` of the arrays the loop stores into
    carried: int
    breaks: bool
    kernel_loops: bool = False
    parallel: bool = False  # iterations independent: one program instance per iteration


def loop_program_source(node: Node, body: Graph) -> LoopSource:
    """The Triton source of the `for_loop` `node` (with `body`) as one program.

    Raises `NotDeviceLoop` naming what the body has that one program does not compute.

    >>> loop_program_source(node, body).cells  # doctest: +SKIP
    (0,)
    """
    params = dict(node.params)
    carried: int = params["carried"]
    breaks: bool = params.get("breaks", False)
    writer = _ProgramWriter()
    writer.entry_typed = {p.name for p in body.placeholders[1 : 1 + carried]}
    env: Env = {}
    placeholders = body.placeholders
    index = placeholders[0]
    env[index] = _Scalar("i", np.dtype("int64"), int)
    cells: list[int] = []
    cell_dtypes: list[np.dtype[Any]] = []
    arrays: list[int] = []
    ndims: list[int] = []
    entry = CodeBuffer(level=1)
    entry.writeline("start = tl.load(meta_ptr + 0)")
    entry.writeline("step = tl.load(meta_ptr + 1)")
    entry.writeline("trips = tl.load(meta_ptr + 2)")
    entry.writeline("per = tl.load(meta_ptr + 3)")
    offset = 4
    for position, placeholder in enumerate(placeholders[1:]):
        meta = placeholder.meta
        if position < carried or not (isinstance(meta, ArrayMeta) and meta.ndim > 0):
            dtype, python = _meta_type(meta)
            name = f"c{len(cells)}"
            # NOTE: a bool cell is an int8 in memory (Triton reads a bool pointer so too).
            truth = " != 0" if dtype.kind == "b" else ""
            entry.writeline(f"{name} = tl.load({name}_ptr){truth}")
            env[placeholder] = _Scalar(name, dtype, python)
            cells.append(position)
            cell_dtypes.append(_BOOL_CELL if dtype.kind == "b" else dtype)
            continue
        assert isinstance(meta, ArrayMeta)
        if tl_type(meta.dtype) is None or meta.dtype.kind == "b":
            raise NotDeviceLoop(f"an array of {meta.dtype}")
        name = f"a{len(arrays)}"
        for axis in range(meta.ndim):
            entry.writeline(f"{name}_n{axis} = tl.load(meta_ptr + {offset})")
            entry.writeline(f"{name}_s{axis} = tl.load(meta_ptr + {offset + 1})")
            offset += 2
        env[placeholder] = _Array(name, meta.dtype, meta.ndim)
        arrays.append(position)
        ndims.append(meta.ndim)
    entry.writeline("bad = trips < 0")
    writer.buf.level = 2
    outputs = writer.body(body, env)
    loop = CodeBuffer(level=1)
    # Python's tuple assignment (`a, b = b, a + b`) reads every new value before it binds
    # any: each new value takes a fresh name first, then the carried names take them.
    news = [writer.fresh("n") for _ in range(carried)]
    updates = [
        f"{name} = {writer.cast(value, env[placeholders[1 + k]].dtype).text}"
        for k, (name, value) in enumerate(zip(news, outputs, strict=False))
    ]
    updates += [f"c{k} = {name}" for k, name in enumerate(news)]
    if breaks:
        flag = writer.cast(outputs[carried], np.dtype("bool")).text
        loop.writeline("t = trips * 0")
        loop.writeline("going = trips > 0")
        loop.writeline("while going:")
        tail = ["t = t + 1", f"going = (t < trips) & ({flag} == 0) & (bad == 0)"]
    else:
        # Program instance `p` runs iterations [p * per, (p + 1) * per): one runs them all,
        # or (independent iterations) each runs one of its own.
        loop.writeline("first = tl.program_id(0).to(tl.int64) * per")
        loop.writeline("for t in range(first, tl.minimum(first + per, trips)):")
        tail = []
    with loop.indent():
        loop.writeline("i = start + t * step")
        loop.lines += writer.buf.lines
        loop.writelines(updates)
        loop.writelines(tail)
    exit_lines = [
        f"tl.store(c{k}_ptr, c{k}{'.to(tl.int8)' if cell_dtypes[k] == _BOOL_CELL else ''})"
        for k in range(carried)
    ]
    # Only a program that raised the flag writes it (the host zeroes it before the launch).
    exit_lines.append("tl.store(bad_ptr, bad.to(tl.int32), mask=bad)")
    args = ["meta_ptr", *(f"c{k}_ptr" for k in range(len(cells)))]
    args += [f"a{k}_ptr" for k in range(len(arrays))]
    args.append("bad_ptr")
    source = "\n".join(
        [
            _HEADER,
            TRITON_HELPERS.strip(),
            "",
            "",
            "@triton.jit",
            f"def loop_program({', '.join(args)}):",
            *entry.lines,
            *loop.lines,
            *("    " + line for line in exit_lines),
            "",
        ]
    )
    stored = tuple(
        k
        for k, p in enumerate(arrays)
        if isinstance(a := env[placeholders[1 + p]], _Array) and a.written
    )
    return LoopSource(
        source,
        tuple(cells),
        tuple(cell_dtypes),
        tuple(arrays),
        tuple(ndims),
        stored,
        carried,
        breaks,
        writer.kernel_loops,
        not breaks and independent_iterations(node, while_loops=True),
    )


_HEADER = '''"""One loop as one Triton program, generated by numpile (loop_program.py)."""
import triton
import triton.language as tl

from numpile_runtime import interpreting

if interpreting():
    from numpile_inductor.codegen.triton.interpret import LIBDEVICE as libdevice
    from numpile_inductor.codegen.triton.interpret import TILE_SUM as tile_sum
else:
    from triton.language.extra import libdevice

    @triton.jit
    def tile_sum(x):
        return tl.sum(x, axis=0)

'''


def loop_program(
    node: Node, body: Graph, mode: str, where: str = "an unknown line"
) -> LoopRunner | None:
    """The runner of the `for_loop` `node` as one Triton program, or None when its body has
    something one program does not compute (a `numpile.perf_hints` line names the loop's
    source line `where` and the reason). `mode` is `triton_status().mode`.

    >>> set_loop_runner(body, loop_program(node, body, "interpret", "f.py:3"))  # doctest: +SKIP
    """
    try:
        generated = loop_program_source(node, body)
    except NotDeviceLoop as reason:
        perf_log.info(
            "the loop at %s runs its body with NumPy per iteration (not as one Triton program): %s",
            where,
            reason,
        )
        report_loop(node, OP_BY_OP, f"it is no Triton program: {reason}")
        return None
    report_loop(node, DEVICE_PROGRAM)
    kernel = rt.load_triton_module(generated.source, name_hint="loop").loop_program
    launcher = rt.TritonLauncher(
        kernel, ("ptr",) * (2 + len(generated.cells) + len(generated.arrays))
    )
    fallback = host_loop(body, None, typed=False)
    metas = [placeholder.meta for placeholder in body.placeholders[1:]]
    rt.count("triton_loop_program")

    def run(indices: range, values: tuple[Any, ...], carried: int) -> tuple[Any, ...]:
        arrays = [values[p] for p in generated.arrays]
        if not _addressable(arrays, generated.array_ndims, on_device=mode != "interpret"):
            return fallback(indices, values, carried)
        if (
            generated.kernel_loops
            and max((max(a.shape, default=0) for a in arrays), default=0) > KERNEL_ROWS
        ):
            return fallback(indices, values, carried)  # rows kernels run faster than a warp
        while indices and not _typed(values, metas, generated.cells):
            # The first iterations on other carried types (NEP 50) run on the host.
            new = run_graph(body, (indices[0], *values))
            if generated.breaks and new[carried]:
                return fallback(range(0), (*new[:carried], *values[carried:]), carried)
            values = (*new[:carried], *values[carried:])
            indices = indices[1:]
        if not indices or not _within_int64(values, generated.cells):
            return fallback(indices, values, carried)
        xp = np if mode == "interpret" else _cupy()
        parallel = generated.parallel and _disjoint(arrays, generated.written)
        programs = min(len(indices), _MOST_PROGRAMS) if parallel else 1
        per = -(-len(indices) // programs)
        sizes = [len(indices) and indices.start, indices.step, len(indices), per]
        for array in arrays:
            for axis in range(array.ndim):
                sizes += [array.shape[axis], array.strides[axis] // array.itemsize]
        cells = []
        for position, dtype in zip(generated.cells, generated.cell_dtypes, strict=True):
            cell = xp.empty(1, dtype=dtype)
            cell[0] = values[position]
            cells.append(cell)
        bad = xp.zeros(1, dtype=np.int32)
        # What the loop writes, put back if an index is out of bounds (then eager runs it).
        saved = {k: arrays[k].copy() for k in generated.written}
        args = [xp.asarray(np.array(sizes, dtype=np.int64)), *cells, *arrays, bad]
        rt.count("loop_device_program_runs")  # which path a loop took (see loops.host_loop)
        if mode == "interpret":
            with np.errstate(all="ignore"):  # masked-off loads compute on zeros
                launcher(args, programs, {}, 1, None)
        else:
            stream = xp.cuda.get_current_stream()
            device = int(xp.cuda.runtime.getDevice())
            launcher(args, programs, {}, 1, int(stream.ptr), device)
        if int(bad[0]):
            for k, copy in saved.items():
                arrays[k][...] = copy
            return fallback(indices, values, carried)
        return tuple(_final(cells[k], metas[k]) for k in range(carried))

    return run


def _typed(values: tuple[Any, ...], metas: list[Any], cells: tuple[int, ...]) -> bool:
    # Whether the values have the types the kernel was generated for.
    for position in cells:
        value, meta = values[position], metas[position]
        if isinstance(meta, ScalarMeta):
            if type(value) is not meta.type:
                return False
        elif not _zero_d_of(value, meta.dtype):
            return False
    return True


def _disjoint(arrays: list[Any], written: tuple[int, ...]) -> bool:
    # Whether no array the loop writes shares memory with another array it uses: its
    # iterations, independent in the graph, are then independent in memory too.
    spans = []
    for array in arrays:
        low, high = rt.byte_extent(array) if array.size else (0, 0)
        spans.append((rt.data_ptr(array) + low, rt.data_ptr(array) + high))
    return all(
        spans[k][1] <= other[0] or other[1] <= spans[k][0]
        for k in written
        for j, other in enumerate(spans)
        if j != k
    )


def _within_int64(values: tuple[Any, ...], cells: tuple[int, ...]) -> bool:
    # Whether the Python ints among the cells' values fit the kernel's int64.
    return all(_INT64_MIN <= values[p] <= _INT64_MAX for p in cells if type(values[p]) is int)


def _zero_d_of(value: Any, dtype: np.dtype[Any]) -> bool:
    # A NumPy scalar, 0-d array or 0-d device array of `dtype`.
    if not isinstance(value, np.generic | np.ndarray) and not rt.is_device_array(value):
        return False
    return bool(value.dtype == dtype and value.ndim == 0)


def _addressable(arrays: list[Any], ndims: tuple[int, ...], *, on_device: bool) -> bool:
    # Arrays the kernel can address: in the memory it runs on (a host pointer would fault
    # on the GPU), the rank it was generated for, native byte order, strides in whole
    # elements.
    for array, ndim in zip(arrays, ndims, strict=True):
        if rt.is_device_array(array) != on_device:
            return False
        if getattr(array, "ndim", None) != ndim or not array.dtype.isnative:
            return False
        if any(stride % array.itemsize for stride in array.strides):
            return False
    return True


def _final(cell: Any, meta: Any) -> Any:
    if isinstance(meta, ArrayMeta) and meta.device != "cpu":
        return cell.reshape(()).astype(meta.dtype, copy=False)  # a device 0-d array, as CuPy
    value = cell[0].item() if hasattr(cell[0], "item") else cell[0]
    if isinstance(meta, ScalarMeta):
        return meta.type(value)
    return meta.dtype.type(value)


def _cupy() -> Any:
    import cupy  # GPU runs only

    return cupy


# NOTE: the modules that fill `_HANDLERS` with nested loops and 1-d views (here, once).
from . import program_loops as _program_loops  # noqa: E402
from . import program_views as _program_views  # noqa: E402

_HANDLERS["for_loop"] = _program_loops.nested_loop
_HANDLERS["while_loop"] = _program_loops.nested_while
_HANDLERS.update(_program_views.VIEW_HANDLERS)
