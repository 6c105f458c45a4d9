"""Lowering of pointwise ops: ufuncs, `where`, `astype` / `copy`.

Every scalar op of the loop-IR vocabulary (`codegen.common.SCALAR_OPS`) lowers as
`lower_ufunc`: NumPy's loop dtype for the operands (its type resolution), the inputs
cast to it, one `Apply`. Ops heavier than a few adds (`_HEAVY`) are never recomputed
for a second user.

    >>> LOWERINGS["sin"] is lower_ufunc  # doctest: +SKIP
    True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numpile_capture import ArrayMeta, Node, gives_scalar

from ..codegen.common import SCALAR_MATH, SCALAR_OPS, kernel_dtype, supports
from ..loop_ir import Apply, Expr, Loader
from .context import (
    LOWERINGS,
    CannotLower,
    Lowered,
    LoweringContext,
    cast,
    input_cost,
    operand_loader,
    out_shape,
    register_lowering,
)

# Python ops heavier than a few adds: never recomputed for a second user.
_HEAVY = frozenset(
    {"sin", "cos", "tan", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "power",
     "scalar_power", "sqrt", "tanh", "sinh", "cosh", "arcsin", "arccos", "arctan", "arctan2",
     "floor_divide", "remainder", "hypot", "divide", "cbrt"}
)  # fmt: skip


def _ufunc_of(node: Node) -> np.ufunc | None:
    assert node.op is not None
    impl = node.op.impl
    if isinstance(impl, np.ufunc):
        return impl
    candidate = getattr(np, node.op.name, None)
    return candidate if isinstance(candidate, np.ufunc) else None


def _numpy_scalar_math(node: Node, loop_dtype: np.dtype[Any]) -> bool:
    # Whether eager NumPy computes `node` with its scalar math, which warns on integer
    # overflow: an integer op on NumPy scalars of the host (a ufunc result, an element, a
    # NumPy scalar input) and Python scalars, none of them a 0-d array (its ufunc wraps
    # silently). A 0-d placeholder may be either (a loop body's invariant is a NumPy scalar
    # or a 0-d array): it neither decides nor rules out (a needless check only makes an
    # overflowing call run again with NumPy, which is silent where eager is). A ufunc called
    # on NumPy scalars (`np.multiply(a, b)`) has a 0-d array operand (capture's
    # `ufunc_call_operands`): no scalar math, as in eager.
    meta = node.meta
    if loop_dtype.kind not in "iu" or not isinstance(meta, ArrayMeta) or meta.shape != ():
        return False
    if meta.device != "cpu":
        return False
    numpy_scalars = 0
    for value in node.inputs:
        if isinstance(value, np.generic):
            numpy_scalars += 1
        elif isinstance(value, Node) and isinstance(value.meta, ArrayMeta) and value.op is not None:
            if not gives_scalar(value):
                return False
            numpy_scalars += 1
    return numpy_scalars > 0


# NumPy's scalar math on float and complex NumPy scalars where it is not the ufunc's loop
# (codegen.common.FLOAT_SCALAR_MATH): `x ** y` is libm's `pow`, `z * w` rounds each product,
# `abs(z)` is libm's `hypot` (a complex array's absolute has no C spelling).
_SCALAR_FORMS = {
    ("power", "f"): "scalar_power",
    ("multiply", "c"): "scalar_multiply",
    ("absolute", "c"): "scalar_absolute",
}


def _float_scalar_math(node: Node, numpy_scalars: set[Node]) -> bool:
    # Whether eager computes `node` with NumPy's scalar math on floats (libm's `pow`, not the
    # ufunc's SVML loop): a 0-d result whose operands are all NumPy scalars of the host (an
    # element, a ufunc result, a value the caller knows is one) or Python / NumPy scalar
    # constants. A placeholder may be a 0-d array (the ufunc's loop) and a ufunc call has a
    # 0-d array operand: neither is taken.
    meta = node.meta
    if not isinstance(meta, ArrayMeta) or meta.shape != () or meta.device != "cpu":
        return False
    for value in node.inputs:
        if isinstance(value, Node):
            if not (isinstance(value.meta, ArrayMeta) and value.meta.device == "cpu"):
                return False
            if value.meta.shape != ():
                return False
            if not (gives_scalar(value) or value in numpy_scalars):
                return False
        elif not isinstance(value, int | float | np.generic):
            return False
    return any(isinstance(value, Node) for value in node.inputs)


def _fits(value: Any, dtype: np.dtype[Any]) -> bool:
    if isinstance(value, bool) or not isinstance(value, int) or dtype.kind not in "iu":
        return True
    info = np.iinfo(dtype)
    return bool(info.min <= value <= info.max)


def lower_ufunc(ctx: LoweringContext, node: Node) -> Lowered:
    """A pointwise node applying a NumPy ufunc, in the ufunc's loop dtypes."""
    ufunc = _ufunc_of(node)
    if ufunc is None or ufunc.nout != 1 or node.params:
        raise CannotLower("not a plain ufunc call")
    shape = out_shape(node)
    loaders: list[Loader] = []
    kinds: list[Any] = []
    for value in node.inputs:
        loader, kind = operand_loader(ctx, value, shape)
        loaders.append(loader)
        # A Python bool is NumPy's bool under NEP 50 (not weak as int, float and complex
        # are), which `resolve_dtypes` takes only as the dtype.
        kinds.append(np.dtype("bool") if kind is bool else kind)
        if not isinstance(value, Node) and not _fits(value, np.dtype("int64")):
            raise CannotLower("integer constant out of range")
    try:
        loop = ufunc.resolve_dtypes((*kinds, None))
    except (TypeError, ValueError, np.exceptions.DTypePromotionError) as error:
        raise CannotLower(str(error)) from error
    in_dtypes, result = loop[: ufunc.nin], loop[-1]
    assert isinstance(node.meta, ArrayMeta)
    if result != node.meta.dtype or len(set(in_dtypes)) != 1:
        raise CannotLower("loop dtypes")
    loop_dtype = in_dtypes[0]
    name = node.op.name  # type: ignore[union-attr]
    if f"scalar_{name}" in SCALAR_MATH and _numpy_scalar_math(node, loop_dtype):
        name = f"scalar_{name}"
    scalar_form = _SCALAR_FORMS.get((name, loop_dtype.kind))
    if scalar_form is not None and _float_scalar_math(node, ctx.numpy_scalars):
        name = scalar_form
    if not supports(name, loop_dtype) or not kernel_dtype(result):
        raise CannotLower(f"no C spelling for {ufunc.__name__} on {loop_dtype}")
    for value in node.inputs:
        if not isinstance(value, Node) and not _fits(value, loop_dtype):
            raise CannotLower("Python integer out of the loop dtype's range")
    if name == "power" and loop_dtype.kind in "fc":
        # NOTE: NumPy's float `pow` (SVML on AVX-512 machines) and libm's differ in the last
        # bit for most exponents (`x ** 4`): NumPy's own loop keeps exact programs exact.
        raise CannotLower("a float power runs as NumPy's np.power (bit-identical results)")

    def load(idx: tuple[Any, ...]) -> Expr:
        args = tuple(cast(loader(idx), loop_dtype) for loader in loaders)
        return Apply(name, args, result)

    ops, heavy = input_cost(ctx, node)
    return Lowered(shape, result, load, ops + 1, heavy=heavy or name in _HEAVY)


def _register_ufuncs() -> None:
    for name in sorted(set().union(*SCALAR_OPS.values())):
        LOWERINGS.setdefault(name, lower_ufunc)


_register_ufuncs()


@register_lowering("erf", "erfc", "gamma", "lgamma")
def _lower_special(ctx: LoweringContext, node: Node) -> Lowered:
    # scipy.special's functions libm has (capture's ops/special.py): computed in the
    # result's dtype (float32 stays float32, everything else is float64), as SciPy's loops.
    if len(node.inputs) != 1 or node.params or not isinstance(node.meta, ArrayMeta):
        raise CannotLower("not a one-argument special function call")
    result = node.meta.dtype
    name = node.op.name  # type: ignore[union-attr]
    if not supports(name, result):
        raise CannotLower(f"no spelling of {name} on {result}")
    shape = out_shape(node)
    loader, _ = operand_loader(ctx, node.inputs[0], shape)

    def load(idx: tuple[Any, ...]) -> Expr:
        return Apply(name, (cast(loader(idx), result),), result)

    ops, _heavy = input_cost(ctx, node)
    return Lowered(shape, result, load, ops + 1, heavy=True)


@register_lowering("where")
def _lower_where(ctx: LoweringContext, node: Node) -> Lowered:
    if len(node.inputs) != 3 or node.params:
        raise CannotLower("where takes three operands here")
    shape = out_shape(node)
    assert isinstance(node.meta, ArrayMeta)
    result = node.meta.dtype
    cond, x, y = (operand_loader(ctx, value, shape)[0] for value in node.inputs)
    bool_ = np.dtype("bool")

    def load(idx: tuple[Any, ...]) -> Expr:
        return Apply(
            "where", (cast(cond(idx), bool_), cast(x(idx), result), cast(y(idx), result)), result
        )

    ops, heavy = input_cost(ctx, node)
    return Lowered(shape, result, load, ops + 1, heavy=heavy)


@register_lowering("astype", "copy")
def _lower_astype(ctx: LoweringContext, node: Node) -> Lowered:
    if len(node.inputs) != 1 or not isinstance(node.inputs[0], Node):
        raise CannotLower("astype of a non-array")
    source = ctx.values[node.inputs[0]]
    shape = out_shape(node)
    assert isinstance(node.meta, ArrayMeta)
    result = node.meta.dtype
    if source.loader is None or source.shape != shape:
        raise CannotLower("astype input")
    if source.dtype.kind == "c" and result.kind != "c":
        raise CannotLower("complex to real astype")
    loader = source.loader

    def load(idx: tuple[Any, ...]) -> Expr:
        return cast(loader(idx), result)

    return Lowered(shape, result, load, source.ops + 1, heavy=source.heavy)


@register_lowering("carried_scalar")
def _lower_carried_scalar(ctx: LoweringContext, node: Node) -> Lowered:
    # A NumPy scalar input read by value (see read_as_numpy_scalar): the input's own value
    # and object, so an extern or the caller gets the very scalar the call passed.
    source = ctx.values[node.inputs[0]] if isinstance(node.inputs[0], Node) else None
    if source is None or source.buffer is None or ctx.buffers[source.buffer].kind != "scalar":
        raise CannotLower("a carried value that is no scalar input")
    return Lowered((), source.dtype, source.loader, buffer=source.buffer, pure_view=True)


# NOTE: NumPy's scalar constructors of a Python scalar (`np.float64(i)`) that kernels compute
# exactly and where NumPy never raises nor warns: a bool to any number, an int (an int64 in
# kernels) to int64, float64 or float32 (rounded through float64, as `float(i)` does), a
# float to float64. The others raise or warn for some values (`np.uint8(300)`,
# `np.int64(nan)`, `np.float32(1e300)`) and stay NumPy's own call, an extern.
_EXACT_NUMPY_SCALARS: dict[type, dict[str, tuple[str, ...]]] = {
    bool: {name: (name,) for name in ("bool", "int8", "int16", "int32", "int64", "uint8",
                                      "uint16", "uint32", "uint64", "float32", "float64")},
    int: {"int64": ("int64",), "float64": ("float64",), "float32": ("float64", "float32")},
    float: {"float64": ("float64",)},
}  # fmt: skip


@register_lowering("numpy_scalar")
def _lower_numpy_scalar(ctx: LoweringContext, node: Node) -> Lowered:
    assert isinstance(node.meta, ArrayMeta)
    target = node.meta.dtype
    loader, kind = operand_loader(ctx, node.inputs[0], ())
    path = _EXACT_NUMPY_SCALARS.get(kind, {}).get(target.name)
    if path is None or not kernel_dtype(target):
        raise CannotLower(f"np.{target.name}() of a Python {kind} may raise or warn in NumPy")
    dtypes = [np.dtype(name) for name in path]

    def load(idx: tuple[Any, ...]) -> Expr:
        expr = loader(idx)
        for dtype in dtypes:
            expr = cast(expr, dtype)
        return expr

    ops, heavy = input_cost(ctx, node)
    return Lowered((), target, load, ops + len(dtypes), heavy=heavy)
