"""Extern forms: C for the small extern ops around kept loops, run without calling Python.

A graph with a C loop (issue 23) often has a few extern steps around it that do almost no
work: `x.shape[0]` read for the loop's bound (`dim`), `n - 1` on Python ints (`py_binary`),
the `np.zeros_like(b)` the loop writes into. Each one called through Python costs about a
microsecond, as much as a short loop itself (a triangular solve of order 8). The wrapper
writes these forms instead; each sets `o_<buffer>` to a new reference, or leaves it NULL
with no exception set where its operands are not what it handles, and then the extern runs
as before (`FALLBACK`):

- `dim(x, axis)` of an array the call holds: `PyLong_FromSsize_t` of its dim, always;
- `py_binary` add / sub / mul of two exact Python ints that fit int64, when the result does
  too (`__builtin_*_overflow`);
- `zeros_like(x)` of an exact ndarray: `PyArray_NewLikeArray` in x's memory order (NumPy's
  `order="K"`) filled with zero bytes (0 of every numeric dtype), from the buffer pool when
  it is large;
- `zeros(...)` / `empty(...)` of a numeric dtype whose sizes are constants or int inputs
  (`np.zeros(cr.shape[0])` of a symbolic size): `PyArray_SimpleNew` (zero bytes for
  zeros), from the buffer pool when it is large; a negative size leaves it to NumPy's
  error;
- a bitwise op (`&`, `|`, `^`, shifts: none of them warns) of a NumPy integer scalar and a
  constant of its type, as a loop's result meets one after the loop (`crc ^
  np.uint32(0xFFFFFFFF)`): the C op on the scalar's value, boxed as that type's scalar,
  where the ufunc called on scalars costs microseconds.

    >>> code = CodeBuffer()
    >>> write_extern_form(code, "v3", "dim", ["a_x"], (BufferRef("x"),), (("axis", 0),))
    True
    >>> code.lines[0]
    'o_v3 = PyLong_FromSsize_t((Py_ssize_t)PyArray_DIMS(a_x)[0]);'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from numpile_capture import ScalarSlot

from ...loop_ir import BufferRef
from ..common import CodeBuffer
from .buffer_pool import MIN_POOLED_BYTES, write_pooled_alloc
from .ops import c_expr, c_literal, c_type

__all__ = ["BITWISE", "FALLBACK", "write_extern_form"]

#: The bitwise ops with a C form on NumPy integer scalars (and a constant of their type).
BITWISE = frozenset({"bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"})

# NumPy's scalar type names in its C API (`PyUInt32ArrType_Type` is `UInt`), by type char.
_SCALAR_NAMES = {
    "b": "Byte", "B": "UByte", "h": "Short", "H": "UShort", "i": "Int", "I": "UInt",
    "l": "Long", "L": "ULong", "q": "LongLong", "Q": "ULongLong",
}  # fmt: skip

#: The extern forms that leave `o_<buffer>` NULL on operands they do not handle.
FALLBACK = frozenset({"py_binary", "zeros_like", "zeros", "empty", *BITWISE})

_INT_OVERFLOW = {
    "add": "__builtin_add_overflow",
    "sub": "__builtin_sub_overflow",
    "mul": "__builtin_mul_overflow",
}


def write_extern_form(
    code: CodeBuffer,
    buffer: str,
    op_name: str,
    operands: Sequence[str | None],
    args: tuple[Any, ...],
    kwargs: tuple[tuple[str, Any], ...],
    dtype: np.dtype[Any] | None = None,
) -> bool:
    """Write the C form of extern `op_name` into `code`, setting `o_<buffer>`; False (and
    nothing written) when it has none for these arguments. `operands` holds, per
    `BufferRef` argument, the C `PyArrayObject *` expression of that buffer, or None where
    the call holds it as a Python object only; `dtype` is the result's, where known."""
    keywords = dict(kwargs)
    refs = [arg for arg in args if isinstance(arg, BufferRef)]
    target = f"o_{buffer}"
    if op_name == "dim" and len(args) == 1 and refs and operands[0] is not None:
        dims = f"PyArray_DIMS({operands[0]})"
        code.writeline(f"{target} = PyLong_FromSsize_t((Py_ssize_t){dims}[{keywords['axis']}]);")
        code.writeline(f"if ({target} == NULL) {{ goto fail; }}")
        return True
    if op_name == "zeros_like" and len(args) == 1 and refs and not kwargs:
        if operands[0] is None:
            return False
        _zeros_like(code, target, operands[0])
        return True
    if op_name in ("zeros", "empty") and set(keywords) == {"shape", "dtype"}:
        return _filled(code, target, op_name == "zeros", args, keywords)
    if op_name in BITWISE and len(args) == 2 and refs and not kwargs:
        return _bitwise_on_scalars(code, target, op_name, args, dtype)
    if op_name == "py_binary" and keywords.get("operator") in _INT_OVERFLOW and len(args) == 2:
        if not all(isinstance(arg, BufferRef) or _small_int(arg) for arg in args):
            return False
        _py_int_binary(code, target, args, _INT_OVERFLOW[keywords["operator"]])
        return True
    return False


def _filled(
    code: CodeBuffer, target: str, zero: bool, args: tuple[Any, ...], keywords: dict[str, Any]
) -> bool:
    # Leaves `target` NULL (the extern runs) unless every size is an exact int >= 0.
    dtype = np.dtype(keywords["dtype"])
    shape = keywords["shape"]
    if c_type(dtype) is None or not isinstance(shape, tuple) or not shape:
        return False
    if not all(isinstance(arg, BufferRef) for arg in args):
        return False
    with code.block():
        code.writeline(f"npy_intp dims[{len(shape)}];")
        code.writeline("int ok = 1;")
        for axis, size in enumerate(shape):
            if isinstance(size, ScalarSlot):
                obj = f"o_{args[size.position].name}"
                value = f"PyLong_CheckExact({obj}) ? PyLong_AsSsize_t({obj}) : -1"
                code.writeline(f"dims[{axis}] = {value};")
                code.writeline(f"if (dims[{axis}] < 0) {{ PyErr_Clear(); ok = 0; }}")
            elif isinstance(size, int) and size >= 0:
                code.writeline(f"dims[{axis}] = {size};")
            else:
                return False
        alloc = f"PyArray_SimpleNew({len(shape)}, dims, {dtype.num})"
        nbytes = " * ".join([f"(size_t)dims[{axis}]" for axis in range(len(shape))])
        with code.block("if (ok)"):
            code.writeline(f"const size_t nbytes = {nbytes} * {dtype.itemsize};")
            with code.block(f"if (g_pool != NULL && nbytes >= {MIN_POOLED_BYTES})", "} else {"):
                write_pooled_alloc(code, target, alloc, handler="g_pool")
            with code.indent():
                code.writeline(f"{target} = {alloc};")
            code.writeline("}")
            code.writeline(f"if ({target} == NULL) {{ goto fail; }}")
            if zero:
                code.writeline(f"memset(PyArray_DATA((PyArrayObject *){target}), 0, nbytes);")
    return True


def _bitwise_on_scalars(
    code: CodeBuffer, target: str, op_name: str, args: tuple[Any, ...], dtype: np.dtype[Any] | None
) -> bool:
    # A bitwise op of NumPy integer scalars (a loop's result; a NumPy scalar input) and at
    # most one constant of their type (`crc ^ 0xFFFFFFFF`, `crc ^ mask`): C where every
    # scalar operand is of the result's exact type, so the result has that type too; else
    # `target` stays NULL and the extern runs.
    constants = [arg for arg in args if not isinstance(arg, BufferRef)]
    if constants:
        if not isinstance(constants[0], np.integer):
            return False
        dtype = constants[0].dtype
    if dtype is None:
        return False
    name = _SCALAR_NAMES.get(dtype.char)
    if name is None:
        return False
    ct = c_type(dtype)
    objs = [f"o_{arg.name}" for arg in args if isinstance(arg, BufferRef)]
    operands = [
        f"x{k}" if isinstance(arg, BufferRef) else c_literal(arg.item(), dtype)
        for k, arg in enumerate(args)
    ]
    result = c_expr(op_name, operands, [dtype, dtype], dtype)
    same = " && ".join(f"Py_TYPE({obj}) == &Py{name}ArrType_Type" for obj in objs)
    with code.block(f"if ({same})"):
        for k, arg in enumerate(args):
            if isinstance(arg, BufferRef):
                code.writeline(f"{ct} x{k};")
                code.writeline(f"PyArray_ScalarAsCtype(o_{arg.name}, &x{k});")
        code.writeline(f"{ct} r = {result};")
        code.writeline(f"PyArray_Descr *descr = PyArray_DescrFromType({dtype.num});")
        code.writeline(f"{target} = PyArray_Scalar(&r, descr, NULL);")
        code.writeline("Py_DECREF(descr);")
        code.writeline(f"if ({target} == NULL) {{ goto fail; }}")
    return True


def _small_int(value: Any) -> bool:
    return type(value) is int and -(2**62) < value < 2**62


def _zeros_like(code: CodeBuffer, target: str, array: str) -> None:
    with code.block(f"if (PyArray_CheckExact({array}))"):
        nbytes = f"PyArray_NBYTES({array})"
        alloc = f"PyArray_NewLikeArray({array}, NPY_KEEPORDER, NULL, 1)"
        with code.block(f"if (g_pool != NULL && {nbytes} >= {MIN_POOLED_BYTES})", "} else {"):
            write_pooled_alloc(code, target, alloc, handler="g_pool")
        with code.indent():
            code.writeline(f"{target} = {alloc};")
        code.writeline("}")
        code.writeline(f"if ({target} == NULL) {{ goto fail; }}")
        # A new array is one dense block, in whatever axis order.
        data = f"PyArray_DATA((PyArrayObject *){target})"
        code.writeline(f"memset({data}, 0, (size_t)PyArray_NBYTES((PyArrayObject *){target}));")


def _py_int_binary(code: CodeBuffer, target: str, args: tuple[Any, ...], builtin: str) -> None:
    # Leaves `target` NULL (the extern runs) unless both operands are exact ints of int64.
    with code.block():
        code.writeline("int ok = 1, overflow = 0;")
        for k, arg in enumerate(args):
            if isinstance(arg, BufferRef):
                obj = f"o_{arg.name}"
                code.writeline(f"long long x{k} = 0;")
                with code.block(f"if (PyLong_CheckExact({obj}))", "} else {"):
                    code.writeline(f"x{k} = PyLong_AsLongLongAndOverflow({obj}, &overflow);")
                    code.writeline("ok = ok && !overflow;")
                with code.indent():
                    code.writeline("ok = 0;")
                code.writeline("}")
            else:
                code.writeline(f"const long long x{k} = {arg}LL;")
        code.writeline("long long r;")
        with code.block(f"if (ok && !{builtin}(x0, x1, &r))"):
            code.writeline(f"{target} = PyLong_FromLongLong(r);")
            code.writeline(f"if ({target} == NULL) {{ goto fail; }}")
