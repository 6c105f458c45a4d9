"""Scalar C for loop bodies: a `for_loop` node of 0-d work becomes one C function.

A loop whose body (and the bodies of the loops nested in it) holds only 0-d work runs
as a plain C loop nest inside the generated module, as Numba compiles it: no Python
per iteration. Each body node becomes one C statement on C locals:

- NumPy ops on 0-d values (`add`, `multiply`, `sqrt`, comparisons, `where`, casts) go
  through the lowering and the C op table the kernels use, so they compute what the
  kernels compute (wrap-around, NaN handling, integer division by zero);
- `element_at` loads and `setitem_at` stores of single elements read and write array
  memory through its strides, after a bounds check that raises NumPy's `IndexError`
  ("index 7 is out of bounds for axis 0 with size 5") with the writes of earlier
  iterations kept, as eager leaves them;
- `py_binary` / `py_unary` on Python ints, floats and bools follow Python: floor
  division and `%` by Python's signs, shifts of negatives, unbounded ints. An int
  operation whose operands' bounds do not prove it fits 63 bits is checked
  (`__builtin_add_overflow` & co.); on overflow, and on a Python `ZeroDivisionError`,
  the loop *bails*: the arrays it wrote are restored from a copy taken before the loop
  (only loops that can bail take it) and the loop runs again with NumPy (the
  `for_loop` op's own implementation), which gives Python's result or error;
- carried values are C locals assigned at the end of each iteration; nested loops are
  nested C loops whose `loop_output`s are their carried locals.

The function takes the loop node's array and scalar arguments as Python objects (as the
extern call would), checks them (dtype, dims, alignment, writability; ints within
+-2**60) and runs eagerly through the extern callable whenever they are not what the
body was compiled for, when `step` is 0 (NumPy then raises Python's `ValueError`) or
when the range is empty (the initial values come back untouched).

A body this module cannot compile (`NotScalarLoop`: an op without a scalar form, a
slice, a carried array) stays an extern call: the `for_loop` implementation runs the
body per iteration with NumPy.

    >>> scalar_loop_function(node, step, "loop_v0").source  # doctest: +SKIP
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from numpile_capture import ArrayMeta, Graph, Node, ScalarMeta, ScalarSlot, gives_scalar

from ...loop_ir import Apply, Constant, ScalarArg
from ..common import CodeBuffer
from .ops import c_expr, c_literal, c_type


class NotScalarLoop(Exception):  # noqa: N818 - it names the event
    """The loop's body holds work this module has no scalar C for (the reason)."""


@attrs.frozen
class LoopFunction:
    """The C source of one loop function and the facts the wrapper needs about it.

    `bails` says whether a run may restart the loop with NumPy after it began.
    """

    name: str
    source: str
    bails: bool


# Python ints in the loop are C int64s. Values are tracked with a bound on their
# magnitude in bits; an operation whose result provably fits 62 bits is not checked.
_SAFE_BITS = 62
# Int arguments of the loop (bounds, invariants) are checked at entry to fit this many
# bits (else the loop runs with NumPy); loop indices then fit one more.
_ENTRY_BITS = 60
# An array's length is at most its size in bytes, below 2**57 on every 64-bit address
# space (5-level paging).
_DIM_BITS = 57

_PY_TYPES: dict[type, np.dtype[Any]] = {
    bool: np.dtype("bool"),
    int: np.dtype("int64"),
    float: np.dtype("float64"),
}

LOOP_HELPERS = r"""
/* Loop functions (codegen/c/loop_body.py): arguments as C values, element indices. */
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


@attrs.define
class _Value:
    # A 0-d value of the body: its C expression, NumPy dtype (Python scalars: bool, int64,
    # float64), whether it is a Python scalar, and for Python ints a bound in bits.
    text: str
    dtype: np.dtype[Any]
    python: type | None = None
    bits: int = 64
    # The same at every iteration of every loop (a C name of the function's entry).
    invariant: bool = False
    # (loop frame, c): the value is that loop's index plus the constant c.
    affine: tuple[_Frame, int] | None = None


@attrs.define(eq=False)
class _Frame:
    # One loop of the nest while its body is emitted: the C names of the least and the
    # greatest index it runs through, and the bounds conditions hoisted to its entry.
    low: str
    high: str
    conditions: list[str] = attrs.Factory(list)


@attrs.define
class _Array:
    # An array the body reads or writes: C names of its data, strides and dims.
    name: str
    dtype: np.dtype[Any]
    ndim: int
    argument: int  # position among the function's arguments
    written: bool = False


_Env = dict[Node, "_Value | _Array"]


class _Writer:
    # Builds one loop function: the body statements first, then the entry code (which
    # depends on what the body turned out to need: arrays, writes, bails).

    def __init__(self, name: str) -> None:
        self.name = name
        self.buf = CodeBuffer(level=1)
        self.counter = 0
        self.bails = False
        self.arrays: list[_Array] = []
        self.frames: list[_Frame] = []
        self.declarations: list[str] = []
        # (cond node, k) -> the metadata of its k-th result (from its loop_output).
        self.result_metas: dict[tuple[Node, int], Any] = {}
        # Emitting the checked copy of a loop: every index is checked where it is used.
        self.checked = False

    def fresh(self, stem: str) -> str:
        self.counter += 1
        return f"{stem}{self.counter}"

    def capture(self, emit: Callable[[], None], *, deeper: int = 0) -> list[str]:
        # The lines `emit` writes, at this buffer's indentation plus `deeper` levels, kept
        # out of the buffer (for a copy of a loop placed under a condition).
        outer = self.buf
        self.buf = CodeBuffer(level=outer.level + deeper)
        try:
            emit()
            return self.buf.lines
        finally:
            self.buf = outer

    # -- values -------------------------------------------------------------------------

    def operand(self, env: _Env, value: Any) -> _Value:
        if isinstance(value, Node):
            found = env.get(value)
            if not isinstance(found, _Value):
                raise NotScalarLoop(f"{value.name} is not a 0-d value here")
            return found
        if isinstance(value, bool | int | float):
            kind = type(value)
            if kind is int and not -(2**62) < value < 2**62:
                raise NotScalarLoop(f"Python int constant {value} is too large")
            dtype = _PY_TYPES[kind]
            bits = int(abs(value)).bit_length() if kind is not float else 64
            return _Value(c_literal(value, dtype), dtype, kind, bits, invariant=True)
        if isinstance(value, np.generic) and c_type(value.dtype) is not None:
            return _Value(c_literal(value.item(), value.dtype), value.dtype, invariant=True)
        raise NotScalarLoop(f"operand {value!r}")

    def define(self, dtype: np.dtype[Any], text: str, stem: str = "t") -> str:
        name = self.fresh(stem)
        self.buf.writeline(f"const {c_type(dtype)} {name} = {text};")
        return name

    # -- the body -------------------------------------------------------------------------

    def body(self, graph: Graph, env: _Env) -> list[_Value | None]:
        # Emit every op node of `graph`; the values of its outputs (None: unchanged).
        for node in graph.nodes:
            if node.op is not None and node.op.name == "loop_output":
                source = node.inputs[0]
                if isinstance(source, Node) and source.op is not None:
                    key = (source, dict(node.params)["index"])
                    self.result_metas[key] = node.meta
        for node in graph.nodes:
            if node.op is None:
                continue
            handler = _NODE_HANDLERS.get(node.op.name)
            if handler is None:
                env[node] = self.pointwise(node, env)
            else:
                handler(self, node, env)
        outputs = graph.output if isinstance(graph.output, tuple) else (graph.output,)
        return [self.operand(env, out) for out in outputs]

    def pointwise(self, node: Node, env: _Env) -> _Value:
        meta = node.meta
        if not isinstance(meta, ArrayMeta) or meta.shape != () or c_type(meta.dtype) is None:
            raise NotScalarLoop(f"{node.op.name if node.op else node.name} gives {meta}")
        # Late import: the lowering (sympy) loads only when a loop is compiled.
        from ...lowering import LOWERINGS, CannotLower, Lowered, LoweringContext

        assert node.op is not None
        fn = LOWERINGS.get(node.op.name)
        if fn is None:
            raise NotScalarLoop(f"{node.op.name} has no scalar form")
        ctx = LoweringContext(Graph())
        for value in node.input_nodes():
            found = self.operand(env, value)
            arg = ScalarArg(found.text, found.dtype)
            ctx.values[value] = Lowered((), found.dtype, _constant_loader(arg), pure_view=True)
        try:
            lowered = fn(ctx, node)
        except CannotLower as reason:
            raise NotScalarLoop(f"{node.op.name}: {reason}") from reason
        if ctx.steps or lowered.loader is None:
            raise NotScalarLoop(f"{node.op.name} needs a kernel of its own")
        return _Value(self.expression(lowered.loader(())), meta.dtype)

    def expression(self, expr: Any) -> str:
        # A scalar loop-IR expression (Apply, Constant, ScalarArg): one statement per Apply.
        if isinstance(expr, Constant):
            return c_literal(expr.value, expr.dtype)
        if isinstance(expr, ScalarArg):
            return f"(({c_type(expr.dtype)}){expr.name})"
        if not isinstance(expr, Apply):
            raise NotScalarLoop(f"a loop-IR value {expr}")
        args = [self.expression(arg) for arg in expr.args]
        dtypes = [arg.dtype for arg in expr.args]
        return self.define(expr.dtype, c_expr(expr.fn, args, dtypes, expr.dtype))

    def hoisted(self, value: _Value, size: str) -> bool:
        # Whether `0 <= value < size` is checked once at the entry of an enclosing loop
        # (for all its iterations) instead of here; the loop's unchecked copy then runs
        # only when every condition holds, its checked copy otherwise.
        if self.checked or not self.frames:
            return False
        if value.affine is not None and value.affine[0] in self.frames:
            frame, offset = value.affine
            frame.conditions.append(
                f"{frame.low} + {offset} >= 0 && {frame.high} + {offset} < {size}"
            )
            return True
        if value.invariant and value.python in (int, bool):
            self.frames[0].conditions.append(f"{value.text} >= 0 && {value.text} < {size}")
            return True
        return False

    def element(self, array: _Array, index: list[_Value]) -> str:
        # The C address expression of array[index] after bounds checks.
        terms = []
        for axis, value in enumerate(index):
            if value.python not in (int, bool) and value.dtype.kind not in "iub":
                raise NotScalarLoop("a non-integer index")
            if self.hoisted(value, f"{array.name}_n{axis}"):
                terms.append(f"(int64_t){value.text} * {array.name}_s{axis}")
                continue
            name = self.fresh("ix")
            self.buf.writeline(f"int64_t {name};")
            self.buf.writeline(
                f"if (!np_loop_index((int64_t){value.text}, {array.name}_n{axis}, {axis}, "
                f"&{name})) {{ goto fail; }}",
            )
            terms.append(f"{name} * {array.name}_s{axis}")
        return f"{array.name}_d[{' + '.join(terms) or '0'}]"


def _constant_loader(arg: ScalarArg) -> Callable[[tuple[Any, ...]], ScalarArg]:
    return lambda idx: arg


def _index_values(
    writer: _Writer, node: Node, env: _Env, scalars: tuple[Any, ...], array: _Array
) -> list[_Value]:
    # The run-time ints of an element index template, one per axis.
    template = dict(node.params)["index"]
    values = []
    for item in template:
        if isinstance(item, ScalarSlot):
            values.append(writer.operand(env, scalars[item.position]))
        elif isinstance(item, int | np.integer) and not isinstance(item, bool):
            values.append(writer.operand(env, int(item)))
        else:
            raise NotScalarLoop(f"index item {item!r} is not an int")
    if len(values) != array.ndim:
        raise NotScalarLoop("not one int per dimension")
    return values


def _array(env: _Env, value: Any) -> _Array:
    found = env.get(value) if isinstance(value, Node) else None
    if not isinstance(found, _Array):
        raise NotScalarLoop("an indexed value that is no array argument of the loop")
    return found


def _element_at(writer: _Writer, node: Node, env: _Env) -> None:
    array = _array(env, node.inputs[0])
    index = _index_values(writer, node, env, node.inputs[1:], array)
    address = writer.element(array, index)
    env[node] = _Value(writer.define(array.dtype, address), array.dtype)


def _setitem_at(writer: _Writer, node: Node, env: _Env) -> None:
    array = _array(env, node.inputs[0])
    value = writer.operand(env, node.inputs[1])
    index = _index_values(writer, node, env, node.inputs[2:], array)
    if value.python is int and array.dtype != np.dtype("int64") and array.dtype.kind in "iu":
        raise NotScalarLoop("a Python int stored into a narrower integer array")
    if value.dtype.kind == "c" and array.dtype.kind != "c":
        raise NotScalarLoop("a complex value stored into a real array (NumPy warns)")
    address = writer.element(array, index)
    cast = c_expr("cast", [value.text], [value.dtype], array.dtype)
    writer.buf.writeline(f"{address} = {cast};")
    array.written = True
    env[node] = array


def _carried_scalar(writer: _Writer, node: Node, env: _Env) -> None:
    source = writer.operand(env, node.inputs[0])
    meta = node.meta
    assert isinstance(meta, ArrayMeta)
    if source.dtype != meta.dtype:
        text = c_expr("cast", [source.text], [source.dtype], meta.dtype)
        env[node] = _Value(writer.define(meta.dtype, text), meta.dtype)
    else:
        env[node] = _Value(source.text, source.dtype)


def _dim(writer: _Writer, node: Node, env: _Env) -> None:
    array = _array(env, node.inputs[0])
    axis = dict(node.params)["axis"]
    env[node] = _Value(f"{array.name}_n{axis}", np.dtype("int64"), int, _DIM_BITS, True)


_INT_BINARY = {"add": "+", "sub": "-", "mul": "*"}
_OVERFLOW_BUILTIN = {"add": "__builtin_add_overflow", "sub": "__builtin_sub_overflow",
                     "mul": "__builtin_mul_overflow"}  # fmt: skip
_COMPARE = {"lt": "<", "le": "<=", "eq": "==", "ne": "!=", "gt": ">", "ge": ">="}
_BITWISE = {"and": "&", "or": "|", "xor": "^"}


def _py_binary(writer: _Writer, node: Node, env: _Env) -> None:
    operator = dict(node.params)["operator"]
    left = writer.operand(env, node.inputs[0])
    right = writer.operand(env, node.inputs[1])
    if left.python is None or right.python is None:
        raise NotScalarLoop("py_binary on a NumPy value")
    meta = node.meta
    assert isinstance(meta, ScalarMeta)
    result = _PY_TYPES[meta.type]
    is_float = float in (left.python, right.python)
    if operator in _COMPARE:
        if is_float and left.python is not right.python and max(left.bits, right.bits) > 53:
            raise NotScalarLoop("an int compared with a float beyond 2**53")
        text = f"(npy_bool)({left.text} {_COMPARE[operator]} {right.text})"
        env[node] = _Value(writer.define(result, text), result, bool, 1)
        return
    if is_float:
        env[node] = _py_float(writer, operator, left, right)
        return
    a, b = f"(int64_t){left.text}", f"(int64_t){right.text}"
    bits = max(left.bits, right.bits)
    if operator in _BITWISE:
        kind = bool if meta.type is bool else int
        text = f"({a} {_BITWISE[operator]} {b})"
        env[node] = _Value(writer.define(result, text), result, kind, bits)
        return
    if operator in _INT_BINARY:
        bound = left.bits + right.bits if operator == "mul" else bits + 1
        if bound <= _SAFE_BITS:
            text = f"({a} {_INT_BINARY[operator]} {b})"
            value = _Value(writer.define(result, text), result, int, bound)
            value.affine = _affine(operator, left, right, node.inputs[1])
            value.invariant = left.invariant and right.invariant and not writer.frames
            env[node] = value
            return
        name = writer.fresh("t")
        writer.buf.writeline(f"int64_t {name};")
        writer.buf.writeline(
            f"if ({_OVERFLOW_BUILTIN[operator]}({a}, {b}, &{name})) {{ goto bail; }}"
        )
        writer.bails = True
        env[node] = _Value(name, result, int, 63)
        return
    if operator in ("floordiv", "mod"):
        if isinstance(node.inputs[1], Node) or node.inputs[1] == 0:
            writer.buf.writeline(f"if ({b} == 0) {{ goto bail; }}")
            writer.bails = True
        if operator == "floordiv" and left.bits >= 63:
            writer.buf.writeline(f"if ({a} == INT64_MIN && {b} == -1) {{ goto bail; }}")
            writer.bails = True
        helper = "np_py_floordiv" if operator == "floordiv" else "np_py_mod"
        out_bits = left.bits if operator == "floordiv" else right.bits
        text = f"{helper}({a}, {b})"
        env[node] = _Value(writer.define(result, text), result, int, out_bits)
        return
    if operator == "rshift":
        name = writer.fresh("t")
        writer.buf.writeline(f"int64_t {name};")
        writer.buf.writeline(f"if ({b} < 0) {{ goto bail; }}")
        writer.bails = True
        writer.buf.writeline(f"{name} = {b} >= 63 ? ({a} < 0 ? -1 : 0) : ({a} >> {b});")
        env[node] = _Value(name, result, int, left.bits)
        return
    if operator == "lshift":
        name = writer.fresh("t")
        writer.buf.writeline(f"int64_t {name};")
        writer.buf.writeline(
            f"if ({b} < 0 || ({a} != 0 && ({b} >= 63 || (({a} << {b}) >> {b}) != {a}))) "
            "{ goto bail; }",
        )
        writer.buf.writeline(f"{name} = {a} == 0 ? 0 : ({a} << {b});")
        writer.bails = True
        env[node] = _Value(name, result, int, 63)
        return
    if operator == "truediv":
        if max(left.bits, right.bits) > 53:
            raise NotScalarLoop("int true division beyond 2**53")
        if isinstance(node.inputs[1], Node) or node.inputs[1] == 0:
            writer.buf.writeline(f"if ({b} == 0) {{ goto bail; }}")
            writer.bails = True
        text = f"((double){a} / (double){b})"
        env[node] = _Value(writer.define(result, text), result, float)
        return
    raise NotScalarLoop(f"Python operator {operator} on ints")


def _affine(operator: str, left: _Value, right: _Value, constant: Any) -> tuple[_Frame, int] | None:
    # index + c or index - c stays an index plus a constant.
    if (
        operator in ("add", "sub")
        and left.affine is not None
        and isinstance(constant, int)
        and not isinstance(constant, bool)
        and right.invariant
    ):
        frame, offset = left.affine
        return frame, offset + (constant if operator == "add" else -constant)
    return None


def _py_float(writer: _Writer, operator: str, left: _Value, right: _Value) -> _Value:
    # Python converts an int operand to the nearest float, as C's conversion does.
    f64 = np.dtype("float64")
    a, b = f"(double){left.text}", f"(double){right.text}"
    if operator in ("add", "sub", "mul"):
        text = f"({a} {_INT_BINARY[operator]} {b})"
    elif operator in ("truediv", "floordiv", "mod"):
        writer.buf.writeline(f"if ({b} == 0.0) {{ goto bail; }}")
        writer.bails = True
        helper = {"truediv": None, "floordiv": "_np_floor_divide_double",
                  "mod": "_np_remainder_double"}[operator]  # fmt: skip
        text = f"({a} / {b})" if helper is None else f"{helper}({a}, {b})"
    else:
        raise NotScalarLoop(f"Python operator {operator} on floats")
    return _Value(writer.define(f64, text), f64, float)


def _py_unary(writer: _Writer, node: Node, env: _Env) -> None:
    operator = dict(node.params)["operator"]
    value = writer.operand(env, node.inputs[0])
    meta = node.meta
    assert isinstance(meta, ScalarMeta)
    result = _PY_TYPES[meta.type]
    if value.python is float:
        text = {"neg": f"(-{value.text})", "abs": f"fabs({value.text})"}.get(operator)
        if text is None:
            raise NotScalarLoop(f"Python {operator} on a float")
        env[node] = _Value(writer.define(result, text), result, float)
        return
    if value.python not in (int, bool):
        raise NotScalarLoop("py_unary on a NumPy value")
    a = f"(int64_t){value.text}"
    if operator == "invert":
        env[node] = _Value(writer.define(result, f"(~{a})"), result, int, value.bits)
        return
    if operator not in ("neg", "abs"):
        raise NotScalarLoop(f"Python {operator}")
    if value.bits >= 63:
        writer.buf.writeline(f"if ({a} == INT64_MIN) {{ goto bail; }}")
        writer.bails = True
    text = f"(-{a})" if operator == "neg" else f"({a} < 0 ? -{a} : {a})"
    env[node] = _Value(writer.define(result, text), result, int, value.bits)


def _loop_output(writer: _Writer, node: Node, env: _Env) -> None:
    loop = node.inputs[0]
    finals = env.get(loop)
    if not isinstance(finals, _Finals):
        raise NotScalarLoop("loop_output of a loop this function did not run")
    env[node] = finals.values[dict(node.params)["index"]]


@attrs.define
class _Finals:
    # The carried C locals of a nested loop, after it.
    values: list[_Value]


def _nested_loop(writer: _Writer, node: Node, env: _Env) -> None:
    params = dict(node.params)
    body: Graph = params["body"]
    carried: int = params["carried"]
    start, stop, step = (writer.operand(env, value) for value in node.inputs[:3])
    for bound in (start, stop, step):
        if bound.python not in (int, bool):
            raise NotScalarLoop("a loop bound that is no Python int")
    bits = max(start.bits, stop.bits, step.bits)
    if bits > _ENTRY_BITS:
        limit = f"(1LL << {_ENTRY_BITS})"
        checks = " || ".join(
            f"{b.text} > {limit} || {b.text} < -{limit}" for b in (start, stop, step)
        )
        writer.buf.writeline(f"if ({checks}) {{ goto bail; }}")
        writer.bails = True
        bits = _ENTRY_BITS
    finals = _emit_loop(writer, node, body, carried, (start, stop, step), bits, env)
    env[node] = _Finals(finals)  # type: ignore[assignment]


def _emit_loop(
    writer: _Writer,
    node: Node,
    body: Graph,
    carried: int,
    bounds: tuple[_Value, _Value, _Value],
    bits: int,
    env: _Env,
) -> list[_Value]:
    # A C `for` over range(start, stop, step) whose carried values are C locals declared
    # before it; returns those locals (the loop's final carried values).
    start, stop, step = bounds
    placeholders = body.placeholders
    inner: _Env = {}
    index = writer.fresh("i")
    locals_: list[_Value] = []
    for k in range(carried):
        meta = placeholders[1 + k].meta
        if isinstance(meta, ArrayMeta) and meta.shape != ():
            raise NotScalarLoop(f"a carried array ({meta})")
        init = writer.operand(env, node.inputs[3 + k])
        value = _carried_local(writer, meta, init)
        locals_.append(value)
        inner[placeholders[1 + k]] = value
    for k, value in enumerate(node.inputs[3 + carried :]):
        placeholder = placeholders[1 + carried + k]
        found = env.get(value) if isinstance(value, Node) else None
        if isinstance(found, _Array | _Value):
            inner[placeholder] = found
        else:
            inner[placeholder] = writer.operand(env, value)
    constant_step = _literal_value(step.text)
    if constant_step is None:
        condition = f"({step.text} > 0 ? {index} < {stop.text} : {index} > {stop.text})"
        writer.buf.writeline(f"if ({step.text} == 0) {{")
        with writer.buf.indent():
            writer.buf.writeline(
                'PyErr_SetString(PyExc_ValueError, "range() arg 3 must not be zero");'
            )
            writer.buf.writeline("goto fail;")
        writer.buf.writeline("}")
    elif constant_step == 0:
        raise NotScalarLoop("range() with a constant step of 0")
    else:
        condition = f"{index} < {stop.text}" if constant_step > 0 else f"{index} > {stop.text}"
    frame = _Frame(writer.fresh("lo"), writer.fresh("hi"))
    a, b, c = start.text, stop.text, step.text
    if constant_step == 1:
        low, high = a, f"{b} - 1"
    else:
        last = f"{a} + (({b} - {a} - ({c} > 0 ? 1 : -1)) / {c}) * {c}"
        low, high = f"({c} > 0 ? {a} : {last})", f"({c} > 0 ? {last} : {a})"
    writer.buf.writeline(f"const int64_t {frame.low} = {low};")
    writer.buf.writeline(f"const int64_t {frame.high} = {high};")
    head = f"for (int64_t {index} = {a}; {condition}; {index} += {c}) {{"
    inner[placeholders[0]] = _Value(index, np.dtype("int64"), int, bits + 1, affine=(frame, 0))
    writer.frames.append(frame)
    try:
        unchecked = writer.capture(lambda: _emit_iterations(writer, head, body, inner, locals_))
        copy = None
        if frame.conditions:
            # Two copies: without the bounds checks hoisted here when they all hold (each
            # index in range at every iteration), else with every check where eager makes it.
            checked = writer.checked
            writer.checked = True
            try:
                copy = writer.capture(
                    lambda: _emit_iterations(writer, head, body, inner, locals_), deeper=1
                )
            finally:
                writer.checked = checked
    finally:
        writer.frames.pop()
    if copy is None:
        writer.buf.splice(unchecked)
        return locals_
    conditions = " && ".join(f"({cond})" for cond in dict.fromkeys(frame.conditions))
    writer.buf.writeline(f"if ({conditions}) {{")
    writer.buf.splice(CodeBuffer.UNIT + line for line in unchecked)
    writer.buf.writeline("} else {")
    writer.buf.splice(copy)
    writer.buf.writeline("}")
    return locals_


def _emit_iterations(
    writer: _Writer,
    head: str,
    body: Graph,
    inner: _Env,
    locals_: list[_Value],
) -> None:
    # The `for` statement around one iteration.
    writer.buf.writeline(head)
    with writer.buf.indent():
        _emit_body(writer, body, inner, locals_)
    writer.buf.writeline("}")


def _emit_body(writer: _Writer, body: Graph, inner: _Env, locals_: list[_Value]) -> None:
    # One iteration: the body's statements, then the carried locals' new values.
    placeholders = body.placeholders
    outputs = writer.body(body, dict(inner))
    if len(outputs) != len(locals_):
        raise NotScalarLoop("the body's outputs are not its carried values")
    for k, (local, new) in enumerate(zip(locals_, outputs, strict=True)):
        out = body.output[k] if isinstance(body.output, tuple) else body.output
        if out is placeholders[1 + k]:
            continue
        if isinstance(out, Node) and out.op is None:
            raise NotScalarLoop("a carried value that is another carried value")
        assert new is not None
        cast = c_expr("cast", [new.text], [new.dtype], local.dtype)
        writer.buf.writeline(f"{local.text} = {cast};")


def _literal_value(text: str) -> int | None:
    # The value of an int literal as c_literal spells it ("((int64_t)1LL)").
    inner = text.replace("(int64_t)", "").strip("()").removesuffix("LL")
    try:
        return int(inner)
    except ValueError:
        return None


def _carried_local(writer: _Writer, meta: Any, init: _Value) -> _Value:
    if isinstance(meta, ScalarMeta):
        if meta.type not in _PY_TYPES:
            raise NotScalarLoop(f"a carried {meta.type.__name__}")
        dtype = _PY_TYPES[meta.type]
        python: type | None = meta.type
        bits = 63 if meta.type is int else (1 if meta.type is bool else 64)
        if meta.type is int and init.python not in (int, bool):
            raise NotScalarLoop("a carried Python int that starts as a NumPy value")
    elif isinstance(meta, ArrayMeta) and meta.shape == () and c_type(meta.dtype) is not None:
        dtype = meta.dtype
        python = None
        bits = 64
    else:
        raise NotScalarLoop(f"a carried {meta}")
    name = writer.fresh("c")
    cast = c_expr("cast", [init.text], [init.dtype], dtype)
    if writer.frames:
        writer.buf.writeline(f"{c_type(dtype)} {name} = {cast};")
    else:  # the outermost loop's: read after the nest, declared before its copies
        writer.declarations.append(f"    {c_type(dtype)} {name};")
        writer.buf.writeline(f"{name} = {cast};")
    return _Value(name, dtype, python, bits)


def _scalar_type(meta: Any) -> tuple[np.dtype[Any], type | None, int]:
    # The C dtype, Python type and bound in bits of a 0-d value of `meta`.
    if isinstance(meta, ScalarMeta) and meta.type in _PY_TYPES:
        bits = 63 if meta.type is int else (1 if meta.type is bool else 64)
        return _PY_TYPES[meta.type], meta.type, bits
    if isinstance(meta, ArrayMeta) and meta.shape == () and c_type(meta.dtype) is not None:
        return meta.dtype, None, 64
    raise NotScalarLoop(f"a value {meta} is not 0-d")


def _assign_outputs(writer: _Writer, outputs: list[_Value | None], targets: list[_Value]) -> None:
    for target, value in zip(targets, outputs, strict=True):
        assert value is not None
        cast = c_expr("cast", [value.text], [value.dtype], target.dtype)
        writer.buf.writeline(f"{target.text} = {cast};")


def _cond(writer: _Writer, node: Node, env: _Env) -> None:
    # `if` on a run-time value: both branches as C blocks assigning the results.
    params = dict(node.params)
    branches: tuple[Graph, Graph] = (params["then_branch"], params["else_branch"])
    pred = writer.operand(env, node.inputs[0])
    count = len(branches[0].output) if isinstance(branches[0].output, tuple) else 1
    results = []
    for k in range(count):
        meta = writer.result_metas.get((node, k))
        if meta is None:
            raise NotScalarLoop("a cond result without its loop_output")
        dtype, python, bits = _scalar_type(meta)
        name = writer.fresh("r")
        writer.buf.writeline(f"{c_type(dtype)} {name};")
        results.append(_Value(name, dtype, python, bits))
    for position, branch in enumerate(branches):
        writer.buf.writeline(f"if ({pred.text}) {{" if position == 0 else "} else {")
        inner = _inner_env(writer, env, branch.placeholders, node.inputs[1:])
        with writer.buf.indent():
            _assign_outputs(writer, writer.body(branch, inner), results)
    writer.buf.writeline("}")
    env[node] = _Finals(results)  # type: ignore[assignment]


def _inner_env(writer: _Writer, env: _Env, placeholders: list[Node], inputs: Any) -> _Env:
    # A subgraph's placeholders bound to the values the node passes it.
    inner: _Env = {}
    for placeholder, value in zip(placeholders, inputs, strict=True):
        found = env.get(value) if isinstance(value, Node) else None
        inner[placeholder] = found if found is not None else writer.operand(env, value)
    return inner


def _while_loop(writer: _Writer, node: Node, env: _Env) -> None:
    # `while` on a run-time test: carried values as C locals, the body's last output the
    # next test.
    params = dict(node.params)
    body: Graph = params["body"]
    carried: int = params["carried"]
    if not writer.frames:
        raise NotScalarLoop("a while loop outside a for loop")
    pred = writer.operand(env, node.inputs[0])
    placeholders = body.placeholders
    locals_ = []
    for k in range(carried):
        meta = placeholders[k].meta
        if isinstance(meta, ArrayMeta) and meta.shape != ():
            raise NotScalarLoop(f"a carried array ({meta})")
        locals_.append(_carried_local(writer, meta, writer.operand(env, node.inputs[1 + k])))
    inner = _inner_env(writer, env, placeholders[carried:], node.inputs[1 + carried :])
    for placeholder, local in zip(placeholders, locals_, strict=False):
        inner[placeholder] = local
    going = writer.fresh("going")
    enter, again = int(params["enter_if"]), int(params["again_if"])
    writer.buf.writeline(f"int {going} = (!!({pred.text})) == {enter};")
    writer.buf.writeline(f"while ({going}) {{")
    with writer.buf.indent():
        outputs = writer.body(body, inner)
        if len(outputs) != carried + 1:
            raise NotScalarLoop("a while body without its test")
        new = outputs[:carried]
        out_nodes = body.output if isinstance(body.output, tuple) else (body.output,)
        for k, value in enumerate(out_nodes[:carried]):
            if isinstance(value, Node) and value.op is None and value is not placeholders[k]:
                raise NotScalarLoop("a carried value that is another carried value")
        test = outputs[carried]
        assert test is not None
        # The test first: it may read the carried values of this iteration.
        writer.buf.writeline(f"{going} = (!!({test.text})) == {again};")
        _assign_outputs(writer, new, locals_)
    writer.buf.writeline("}")
    env[node] = _Finals(locals_)  # type: ignore[assignment]


_NODE_HANDLERS: dict[str, Callable[[_Writer, Node, _Env], None]] = {
    "cond": _cond,
    "while_loop": _while_loop,
    "element_at": _element_at,
    "setitem_at": _setitem_at,
    "carried_scalar": _carried_scalar,
    "dim": _dim,
    "py_binary": _py_binary,
    "py_unary": _py_unary,
    "for_loop": _nested_loop,
    "loop_output": _loop_output,
}


def scalar_loop_function(node: Node, name: str) -> LoopFunction:
    """The C function `name` that runs `for_loop` node `node` (raises `NotScalarLoop`).

    Its C signature is `PyObject *name(PyObject *const *argv, Py_ssize_t argc, PyObject
    *eager, int *np_fp)`: `argv` holds the node's inputs that are graph values, in order
    (its constant inputs are in the code), `eager` is the extern callable that runs the
    loop with NumPy, and the floating-point flags the loop raised are ORed into `np_fp`.
    It returns the tuple of final carried values, as the `for_loop` op does.

    >>> scalar_loop_function(node, "loop_v0").bails  # doctest: +SKIP
    False
    """
    params = dict(node.params)
    body: Graph = params["body"]
    carried: int = params["carried"]
    writer = _Writer(name)
    placeholders = body.placeholders
    env: _Env = {}
    entry: list[str] = []
    stand_ins: list[Any] = []
    values: list[Any] = []
    for position, value in enumerate(node.inputs):
        if not isinstance(value, Node):
            values.append(value)
            stand_ins.append(value)
            continue
        argument = sum(isinstance(v, Node) for v in node.inputs[:position])
        meta = _input_meta(position, carried, placeholders)
        values.append(_unpack(writer, entry, meta, argument))
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
    initial = [_initial(value) for value in outer.inputs[3 : 3 + carried]]
    empty = [
        f"    if ({step.text} == 0) {{ goto eager; }}",
        f"    if ({step.text} > 0 ? {start.text} >= {stop.text} : {start.text} <= {stop.text}) {{",
        f"        result = PyTuple_New({carried});",
        "        if (result == NULL) { goto fail; }",
        *(f"        PyTuple_SET_ITEM(result, {k}, {item});" for k, item in enumerate(initial)),
        "        goto done;",
        "    }",
    ]
    finals = _emit_loop(writer, outer, body, carried, (start, stop, step), bits, env)
    outputs = body.output if isinstance(body.output, tuple) else (body.output,)
    boxes = [
        _box(final, out, placeholders[1 + k], outer.inputs[3 + k], env)
        for k, (final, out) in enumerate(zip(finals, outputs, strict=True))
    ]
    written = [array for array in writer.arrays if array.written]
    snapshots = [array for array in written if writer.bails]
    lines = [
        f"static PyObject *{name}(PyObject *const *argv, Py_ssize_t argc, PyObject *eager, "
        "int *np_fp)",
        "{",
        "    PyObject *result = NULL;",
        *(f"    PyObject *snap_{array.name} = NULL;" for array in snapshots),
        *entry,
        *empty,
        *(f"    if (!PyArray_ISWRITEABLE(a_{array.name})) {{ goto eager; }}" for array in written),
    ]
    for array in snapshots:
        lines.append(f"    snap_{array.name} = PyArray_NewCopy(a_{array.name}, NPY_KEEPORDER);")
        lines.append(f"    if (snap_{array.name} == NULL) {{ goto fail; }}")
    lines.append("    NP_FP_CLEAR();")
    lines += writer.declarations
    lines += _unit_stride_copy(writer.buf.lines, writer.arrays)
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
        for array in snapshots:
            lines.append(
                f"    if (PyArray_CopyInto(a_{array.name}, (PyArrayObject *)snap_{array.name}) "
                "< 0) { goto fail; }"
            )
    lines.append("eager:")
    lines.append("    result = PyObject_Vectorcall(eager, argv, argc, NULL);")
    lines.append("    goto done;")
    lines.append("fail:")
    lines.append("    result = NULL;")
    lines.append("done:")
    lines += [f"    Py_XDECREF(snap_{array.name});" for array in snapshots]
    lines.append("    return result;")
    lines.append("}")
    return LoopFunction(name, "\n".join(lines), writer.bails)


def _unit_stride_copy(nest: list[str], arrays: list[_Array]) -> list[str]:
    # The nest twice: with each array's last stride the constant 1 when they all are (the
    # common case: GCC then keeps a value stored at one iteration in a register for the
    # load of the next, as Numba's C-contiguous specialization lets LLVM do), else as is.
    if not arrays:
        return nest
    names = [f"{array.name}_s{array.ndim - 1}" for array in arrays]
    pattern = re.compile(r"\b(" + "|".join(names) + r")\b")
    unit = [f"    {pattern.sub('1', line)}" for line in nest]
    condition = " && ".join(f"{name} == 1" for name in names)
    return [
        f"    if ({condition}) {{",
        *unit,
        "    } else {",
        *(f"    {line}" for line in nest),
        "    }",
    ]


def _input_meta(position: int, carried: int, placeholders: list[Node]) -> Any:
    # What the body expects at input `position` of the loop node.
    if position < 3:
        return ScalarMeta(int)
    return placeholders[1 + position - 3].meta


def _unpack(writer: _Writer, entry: list[str], meta: Any, argument: int) -> Any:
    # C that reads argument `argument` as `meta` says (else runs the loop with NumPy).
    arg = f"argv[{argument}]"
    if isinstance(meta, ScalarMeta):
        if meta.type is int:
            name = writer.fresh("p")
            entry.append(f"    int64_t {name};")
            entry.append(f"    if (!np_loop_int({arg}, &{name})) {{ goto eager; }}")
            return _Value(name, np.dtype("int64"), int, _ENTRY_BITS, invariant=True)
        if meta.type is float:
            name = writer.fresh("p")
            entry.append(f"    if (!PyFloat_CheckExact({arg})) {{ goto eager; }}")
            entry.append(f"    const double {name} = PyFloat_AS_DOUBLE({arg});")
            return _Value(name, np.dtype("float64"), float)
        if meta.type is bool:
            name = writer.fresh("p")
            entry.append(f"    if (!PyBool_Check({arg})) {{ goto eager; }}")
            entry.append(f"    const npy_bool {name} = (npy_bool)({arg} == Py_True);")
            return _Value(name, np.dtype("bool"), bool, 1)
        raise NotScalarLoop(f"a {meta.type.__name__} argument")
    if not isinstance(meta, ArrayMeta) or c_type(meta.dtype) is None:
        raise NotScalarLoop(f"an argument {meta}")
    ct = c_type(meta.dtype)
    typenum = int(meta.dtype.num)
    if meta.shape == ():
        name = writer.fresh("p")
        entry.append(f"    {ct} {name};")
        entry.append(f"    if (!np_loop_value({arg}, {typenum}, &{name})) {{ goto eager; }}")
        return _Value(name, meta.dtype)
    array = _Array(writer.fresh("A"), meta.dtype, len(meta.shape), argument)
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


def _initial(value: Any) -> str:
    # A new reference to a loop's initial carried value (an argument or a constant).
    if isinstance(value, Node):
        return f"Py_NewRef(argv[{_argument_of(value)}])"
    return _box_constant(value)


def _box(final: _Value, out: Any, placeholder: Node, init: Any, env: _Env) -> str:
    # A new reference to the Python object eager NumPy leaves for one carried value.
    if out is placeholder:  # never reassigned: the initial object itself
        if isinstance(init, Node):
            found = env[init]
            assert isinstance(found, _Value)
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


def _argument_of(stand_in: Node) -> int:
    return int(stand_in.name.removeprefix("arg"))


def _box_constant(value: Any) -> str:
    if isinstance(value, bool):
        return "Py_NewRef(Py_True)" if value else "Py_NewRef(Py_False)"
    if isinstance(value, int):
        return f"PyLong_FromLongLong({value}LL)"
    if isinstance(value, float):
        return f"PyFloat_FromDouble({c_literal(value, np.dtype('float64'))})"
    raise NotScalarLoop(f"a carried constant {value!r}")
