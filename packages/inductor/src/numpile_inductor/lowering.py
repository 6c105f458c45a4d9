"""Lowering: graph nodes become loop-IR values, kernels and extern calls.

Each array node becomes a `Lowered` value: a loader (index tuple -> scalar
`Expr`) composed from its inputs' loaders, so pointwise producers inline into
their consumers and views are index arithmetic, never copies. A value is
*realized* (stored to a buffer by a kernel) when it is a reduction, an
output, an extern call's argument, or too costly to recompute for several
users. Nodes without a lowering run as extern NumPy calls (`op.impl`).

The lowering table maps op names to functions; the decompositions in
`decompositions.py` register into the same table.

    >>> program = lower_graph(graph)  # doctest: +SKIP
    >>> [str(step) for step in program.steps]  # doctest: +SKIP
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np
import sympy

from numpile_capture import ArrayMeta, Graph, Node, OpKind, ScalarMeta, contiguous_strides

from .c_ops import c_type, supports
from .index import loop_var, unflatten_index
from .loop_ir import (
    Apply,
    Buffer,
    BufferRef,
    Constant,
    Expr,
    ExternCall,
    Kernel,
    Load,
    Loader,
    ReductionStore,
    ScalarArg,
    Store,
)

log = logging.getLogger("numpile.inductor.lowering")

# Python ops heavier than a few adds: never recomputed for a second user.
_HEAVY = frozenset(
    {"sin", "cos", "tan", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "power",
     "sqrt", "tanh", "sinh", "cosh", "arcsin", "arccos", "arctan", "arctan2", "floor_divide",
     "remainder", "hypot", "divide", "cbrt"}
)  # fmt: skip
_MAX_INLINE_OPS = 48
_MAX_SHARED_OPS = 6


class CannotLower(Exception):  # noqa: N818 - it names the event
    """A lowering gave up on a node; the node runs as an extern call instead."""


@attrs.define
class Lowered:
    """An array value of the program as the loop IR sees it.

    `loader` is None for values kernels cannot read (non-arrays, unsupported
    dtypes); `buffer` names the materialized array once there is one;
    `pure_view` says the loader only re-indexes materialized buffers.
    """

    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    loader: Loader | None
    ops: int = 0
    buffer: str | None = None
    pure_view: bool = False
    heavy: bool = False


LoweringFn = Callable[["LoweringContext", Node], Lowered]

# NOTE: the lowering table, keyed by op name (insertion-ordered, data only).
LOWERINGS: dict[str, LoweringFn] = {}


def register_lowering(*names: str) -> Callable[[LoweringFn], LoweringFn]:
    """Register a lowering for the ops called `names`.

    >>> @register_lowering("my_op")  # doctest: +SKIP
    ... def _lower_my_op(ctx, node): ...
    """

    def wrap(fn: LoweringFn) -> LoweringFn:
        for name in names:
            LOWERINGS[name] = fn
        return fn

    return wrap


@attrs.define
class Program:
    """A lowered graph: buffers, then kernels and extern calls in execution order.

    `outputs` maps each graph output node to the buffer holding it.
    """

    graph: Graph
    buffers: dict[str, Buffer]
    steps: list[Kernel | ExternCall]
    outputs: dict[Node, str]
    inputs: list[str]

    def __str__(self) -> str:
        return "\n".join(str(step) for step in self.steps)


class LoweringContext:
    """State of one lowering: lowered values, buffers and steps so far."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.users = graph.users()
        self.output_set = set(graph.output_nodes())
        self.values: dict[Node, Lowered] = {}
        self.buffers: dict[str, Buffer] = {}
        self.steps: list[Kernel | ExternCall] = []
        self._kernel_count = 0

    # -- values -----------------------------------------------------------------------------

    def value(self, node: Node) -> Lowered:
        return self.values[node]

    def operand(self, value: Any) -> tuple[Lowered | None, Any]:
        """A node input as (lowered value, None) or (None, Python constant)."""
        if isinstance(value, Node):
            return self.values[value], None
        return None, value

    def new_buffer(self, name: str, shape: tuple[int, ...], dtype: Any, kind: str) -> str:
        strides = contiguous_strides(shape) if kind == "kernel" else None
        self.buffers[name] = Buffer(name, tuple(shape), np.dtype(dtype), kind, strides)
        return name

    # -- realization ------------------------------------------------------------------------

    def realize(self, value: Lowered, name: str) -> str:
        """Store `value` to a fresh C-contiguous buffer (once) and read it from there."""
        if value.buffer is not None:
            return value.buffer
        assert value.loader is not None
        buffer = self.new_buffer(name, value.shape, value.dtype, "kernel")
        xs = tuple(loop_var(d) for d in range(len(value.shape)))
        store = Store(buffer, xs, value.loader(xs))
        self.add_kernel(value.shape, (), (store,), (name,))
        self._become_buffer(value, buffer)
        return buffer

    def _become_buffer(self, value: Lowered, buffer: str) -> None:
        dtype = value.dtype
        value.buffer = buffer
        value.loader = lambda idx: Load(buffer, idx, dtype)
        value.ops = 0
        value.pure_view = True
        value.heavy = False

    def add_kernel(
        self,
        ranges: tuple[int, ...],
        reduction_ranges: tuple[int, ...],
        stores: tuple[Store | ReductionStore, ...],
        origins: tuple[str, ...],
    ) -> None:
        name = f"kernel{self._kernel_count}"
        self._kernel_count += 1
        self.steps.append(Kernel(name, ranges, reduction_ranges, stores, origins))

    def materialize(self, node: Node) -> str:
        """The buffer holding `node`'s value as NumPy would return it (views stay views)."""
        value = self.values[node]
        if value.buffer is not None:
            return value.buffer
        if node.op is not None and node.op.kind is OpKind.VIEW:
            self._extern(node, barrier=False)
            return self.values[node].buffer  # type: ignore[return-value]
        return self.realize(value, node.name)

    def materialize_pending(self) -> None:
        """Realize every computed value not yet stored (before a mutation runs)."""
        for node, value in self.values.items():
            pending = value.buffer is None and not value.pure_view and value.loader is not None
            if pending and any(user not in self.values for user in self.users[node]):
                self.realize(value, node.name)

    # -- extern calls -----------------------------------------------------------------------

    def _extern(self, node: Node, *, barrier: bool) -> None:
        assert node.op is not None
        args: list[Any] = []
        for value in node.inputs:
            if isinstance(value, Node):
                args.append(BufferRef(self.materialize(value)))
            else:
                args.append(value)
        meta = node.meta
        shape = _extern_shape(meta)
        if isinstance(meta, ArrayMeta) and shape is not None:
            buffer = self.new_buffer(node.name, shape, meta.dtype, "extern")
            lowered = Lowered(shape, meta.dtype, None, buffer=buffer)
            if c_type(meta.dtype) is not None:
                self._become_buffer(lowered, buffer)
        else:
            buffer = self.new_buffer(node.name, (), np.dtype("O"), "object")
            lowered = Lowered((), np.dtype("O"), None, buffer=buffer)
        self.values[node] = lowered
        self.steps.append(
            ExternCall(
                buffer, node.op.name, node.op.impl, tuple(args), node.params, barrier, node.name
            )
        )

    # -- the walk ---------------------------------------------------------------------------

    def lower_node(self, node: Node) -> None:
        op = node.op
        assert op is not None
        is_mutation = op.kind is OpKind.MUTATION or bool(op.mutates)
        if is_mutation:
            self.materialize_pending()
            self._extern(node, barrier=True)
            return
        fn = LOWERINGS.get(op.name)
        if fn is None and op.kind is OpKind.VIEW:
            fn = _lower_view
        if fn is not None and _lowerable_meta(node):
            try:
                lowered = fn(self, node)
            except CannotLower as reason:
                log.debug("extern %s: %s", node.format(), reason)
            else:
                self.values[node] = lowered
                self._maybe_realize(node, lowered)
                return
        log.debug("extern %s (no lowering)", node.format())
        self._extern(node, barrier=False)

    def _maybe_realize(self, node: Node, value: Lowered) -> None:
        if value.buffer is not None or value.pure_view or value.loader is None:
            return
        n_users = len(self.users[node])
        if node in self.output_set and node.op is not None and node.op.kind is OpKind.VIEW:
            self.materialize(node)  # now, so a later mutation cannot change its source
        elif (
            node in self.output_set
            or value.ops > _MAX_INLINE_OPS
            or (n_users > 1 and (value.heavy or value.ops > _MAX_SHARED_OPS))
        ):
            self.realize(value, node.name)


def _extern_shape(meta: Any) -> tuple[Any, ...] | None:
    # The shape of an extern call's array result; None when it is no array (or odd dims).
    if not isinstance(meta, ArrayMeta):
        return None
    try:
        return tuple(as_dim(d) for d in meta.shape)
    except CannotLower:
        return None


def _lowerable_meta(node: Node) -> bool:
    meta = node.meta
    if not isinstance(meta, ArrayMeta):
        return False
    return c_type(meta.dtype) is not None


def as_dim(dim: Any) -> Any:
    """A dim of a meta as the loop IR holds it: an int, or a sympy expression over sizes.

    >>> as_dim(sympy.Integer(3)), as_dim(sympy.Symbol("s0", integer=True, positive=True))
    (3, s0)
    """
    if isinstance(dim, int | np.integer) or (isinstance(dim, sympy.Expr) and dim.is_Integer):
        return int(dim)
    if isinstance(dim, sympy.Expr):
        return dim
    raise CannotLower(f"dim {dim!r} is neither an int nor a sympy expression")


def is_static(shape: tuple[Any, ...]) -> bool:
    """Whether every dim of `shape` is an int (no size symbols).

    >>> is_static((2, 3)), is_static((sympy.Symbol("s0"), 3))
    (True, False)
    """
    return all(isinstance(d, int) for d in shape)


def lower_graph(graph: Graph) -> Program:
    """Lower every node of `graph`; the graph's outputs end up in buffers.

    >>> lower_graph(graph).steps  # doctest: +SKIP
    """
    ctx = LoweringContext(graph)
    inputs: list[str] = []
    for node in graph.placeholders:
        inputs.append(_lower_placeholder(ctx, node))
    for node in graph.nodes:
        if node.op is not None:
            ctx.lower_node(node)
    outputs: dict[Node, str] = {}
    for node in graph.output_nodes():
        if node not in outputs:
            outputs[node] = ctx.materialize(node)
    return Program(graph, ctx.buffers, ctx.steps, outputs, inputs)


def _lower_placeholder(ctx: LoweringContext, node: Node) -> str:
    meta = node.meta
    if isinstance(meta, ScalarMeta):
        dtype = _SCALAR_DTYPES.get(meta.type)
        name = ctx.new_buffer(node.name, (), dtype or np.dtype("O"), "scalar")
        loader: Loader | None = None
        if dtype is not None:
            scalar = ScalarArg(name, dtype)
            loader = lambda idx: scalar  # noqa: E731
        ctx.values[node] = Lowered((), dtype or np.dtype("O"), loader, buffer=name)
        ctx.values[node].pure_view = True
        return name
    if c_type(meta.dtype) is None:
        name = ctx.new_buffer(node.name, (), np.dtype("O"), "object")
        ctx.values[node] = Lowered((), np.dtype("O"), None, buffer=name)
        return name
    shape = tuple(as_dim(d) for d in meta.shape)
    name = ctx.new_buffer(node.name, shape, meta.dtype, "input")
    strides = meta.strides if meta.strides is not None else contiguous_strides(shape)
    ctx.buffers[name] = attrs.evolve(ctx.buffers[name], example_strides=tuple(strides))
    value = Lowered(shape, meta.dtype, None)
    ctx._become_buffer(value, name)
    ctx.values[node] = value
    return name


_SCALAR_DTYPES: dict[type, np.dtype[Any]] = {
    bool: np.dtype("bool"),
    int: np.dtype("int64"),
    float: np.dtype("float64"),
}


# -- helpers shared by the lowerings ---------------------------------------------------------


def cast(expr: Expr, dtype: np.dtype[Any]) -> Expr:
    """`expr` converted to `dtype` as NumPy's unsafe casting does.

    >>> cast(Constant(1, np.dtype("int64")), np.dtype("float64"))
    Constant(value=1, dtype=dtype('float64'))
    """
    if expr.dtype == dtype:
        return expr
    if isinstance(expr, Constant):
        return Constant(expr.value, dtype)
    if expr.dtype.kind == "c" and dtype.kind != "c" and dtype.kind != "b":
        raise CannotLower("complex to real cast")
    return Apply("cast", (expr,), dtype)


def broadcast_loader(value: Lowered, shape: tuple[int, ...]) -> Loader:
    """A loader of `value` broadcast to `shape` (leading dims dropped, size 1 dims pinned)."""
    loader = value.loader
    if loader is None:
        raise CannotLower("an input kernels cannot read")
    own = value.shape
    offset = len(shape) - len(own)
    if own == shape:
        return loader

    def load(idx: tuple[Any, ...]) -> Expr:
        inner = tuple(
            sympy.Integer(0) if size == 1 else idx[offset + d] for d, size in enumerate(own)
        )
        return loader(inner)

    return load


def operand_loader(ctx: LoweringContext, value: Any, shape: tuple[int, ...]) -> tuple[Loader, Any]:
    """(loader, dtype-or-Python-type) of one operand of a pointwise node."""
    lowered, constant = ctx.operand(value)
    if lowered is not None:
        assert isinstance(value, Node)
        if isinstance(value.meta, ScalarMeta):
            if lowered.loader is None:
                raise CannotLower("a scalar input of an unsupported type")
            return lowered.loader, value.meta.type
        return broadcast_loader(lowered, shape), lowered.dtype
    if isinstance(constant, bool | int | float):
        const = constant
        return (lambda idx: Constant(const, _SCALAR_DTYPES[type(const)])), type(const)
    if isinstance(constant, np.generic) and c_type(constant.dtype) is not None:
        item = constant.item()
        dt = constant.dtype
        return (lambda idx: Constant(item, dt)), dt
    raise CannotLower(f"operand {constant!r}")


def input_cost(ctx: LoweringContext, node: Node) -> tuple[int, bool]:
    ops = 0
    heavy = False
    for value in node.input_nodes():
        lowered = ctx.values[value]
        ops += lowered.ops
        heavy = heavy or lowered.heavy
    return ops, heavy


def out_shape(node: Node) -> tuple[Any, ...]:
    assert isinstance(node.meta, ArrayMeta)
    return tuple(as_dim(d) for d in node.meta.shape)


# -- pointwise ---------------------------------------------------------------------------------


def _ufunc_of(node: Node) -> np.ufunc | None:
    assert node.op is not None
    impl = node.op.impl
    if isinstance(impl, np.ufunc):
        return impl
    candidate = getattr(np, node.op.name, None)
    return candidate if isinstance(candidate, np.ufunc) else None


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
        kinds.append(kind)
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
    if not supports(node.op.name, loop_dtype) or c_type(result) is None:  # type: ignore[union-attr]
        raise CannotLower(f"no C spelling for {ufunc.__name__} on {loop_dtype}")
    for value in node.inputs:
        if not isinstance(value, Node) and not _fits(value, loop_dtype):
            raise CannotLower("Python integer out of the loop dtype's range")
    name = node.op.name  # type: ignore[union-attr]
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
    from .c_ops import _TABLES

    names: dict[str, None] = {}
    for table in _TABLES.values():
        for name in table:
            names[name] = None
    for name in names:
        LOWERINGS.setdefault(name, lower_ufunc)


_register_ufuncs()


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


# -- views ---------------------------------------------------------------------------------------


def _lower_view(ctx: LoweringContext, node: Node) -> Lowered:
    """Any view op, as index arithmetic found by running the op on a stride probe."""
    assert node.op is not None
    if not node.inputs or not isinstance(node.inputs[0], Node):
        raise CannotLower("view of a non-array")
    if any(isinstance(value, Node) for value in node.inputs[1:]):
        raise CannotLower("view with array operands")
    source = ctx.values[node.inputs[0]]
    if source.loader is None:
        raise CannotLower("view input")
    shape = out_shape(node)
    assert isinstance(node.meta, ArrayMeta)
    if node.meta.dtype != source.dtype:
        raise CannotLower("a view that changes the dtype")
    in_shape = source.shape
    if not (is_static(shape) and is_static(in_shape)):
        raise CannotLower("a view of symbolic shape (the stride probe needs sizes)")
    base = np.zeros(max(1, math.prod(in_shape)), np.uint8)
    probe = np.lib.stride_tricks.as_strided(base, in_shape, contiguous_strides(in_shape))
    result = node.op.impl(probe, *node.inputs[1:], **node.kwargs)
    if not isinstance(result, np.ndarray) or result.shape != shape or result.itemsize != 1:
        raise CannotLower("the probe did not give a view of the right shape")
    if result.size and not np.shares_memory(result, base):
        raise CannotLower("the op copies")
    offset = result.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    remap = _affine_remap(offset, tuple(result.strides), shape, in_shape)
    loader = source.loader

    def load(idx: tuple[Any, ...]) -> Expr:
        return loader(remap(idx))

    return Lowered(
        shape, source.dtype, load, source.ops, pure_view=source.pure_view, heavy=source.heavy
    )


def _affine_remap(
    offset: int, strides: tuple[int, ...], shape: tuple[int, ...], in_shape: tuple[int, ...]
) -> Callable[[tuple[Any, ...]], tuple[Any, ...]]:
    # Output index -> input index, given the view's element offset and strides over a
    # C-contiguous input. Each output dim is matched to one input dim when that keeps every
    # input index in bounds; otherwise the flat position is unflattened (floor div / mod).
    in_strides = contiguous_strides(in_shape)
    start = list(unflatten_static(offset, in_shape))
    terms: list[list[tuple[int, int]]] = [[] for _ in in_shape]
    direct = True
    for d, (size, stride) in enumerate(zip(shape, strides, strict=True)):
        if size == 1 or stride == 0:
            continue
        target = None
        for j in reversed(range(len(in_shape))):
            if in_shape[j] > 1 and stride % in_strides[j] == 0:
                target = j
                break
        if target is None:
            direct = False
            break
        terms[target].append((d, stride // in_strides[target]))
    if direct:
        for j, dim_terms in enumerate(terms):
            low = start[j] + sum(min(0, (shape[d] - 1) * m) for d, m in dim_terms)
            high = start[j] + sum(max(0, (shape[d] - 1) * m) for d, m in dim_terms)
            if low < 0 or high >= max(in_shape[j], 1):
                direct = False
                break
    if direct:

        def remap(idx: tuple[Any, ...]) -> tuple[Any, ...]:
            return tuple(
                start[j] + sum((idx[d] * m for d, m in terms[j]), sympy.Integer(0))
                for j in range(len(in_shape))
            )

        return remap

    def remap_flat(idx: tuple[Any, ...]) -> tuple[Any, ...]:
        flat = offset + sum(
            (idx[d] * s for d, s in enumerate(strides) if shape[d] != 1), sympy.Integer(0)
        )
        return unflatten_index(flat, in_shape)

    return remap_flat


def unflatten_static(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The index of flat C-order position `flat` in `shape` (plain ints).

    >>> unflatten_static(5, (2, 3))
    (1, 2)
    """
    result = []
    for size in reversed(shape):
        result.append(flat % size if size else 0)
        flat = flat // size if size else 0
    return tuple(reversed(result))
