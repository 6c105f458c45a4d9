"""Lowering: graph nodes become loop-IR values, kernels and extern calls.

Each array node becomes a `Lowered` value: a loader (index tuple -> scalar
`Expr`) composed from its inputs' loaders, so pointwise producers inline into
their consumers and views are index arithmetic, never copies. A value is
*realized* (stored to a buffer by a kernel) when it is a reduction, an
output, an extern call's argument, or too costly to recompute for several
users. Nodes without a lowering run as extern NumPy calls (`op.impl`).

The lowering table maps op names to functions, one module per op family
(`pointwise.py`, `view.py`, `reduction.py`, `decompositions.py`), each registering
into the table this module defines; this module imports them at its bottom, so
importing the lowering loads every rule.

    >>> program = lower_graph(graph)  # doctest: +SKIP
    >>> [str(step) for step in program.steps]  # doctest: +SKIP
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from numpile_capture import ArrayMeta, Graph, Node, OpKind, ScalarMeta, contiguous_strides
from numpile_guards import AffineSize, light_active

from ..codegen.common import kernel_dtype
from ..index import index_int, loop_var
from ..loop_ir import (
    AccumulateStore,
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
    dense_strides,
)

if TYPE_CHECKING:
    import sympy
else:
    from ..light_lowering import sympy  # imported on first use (see light_lowering)

log = logging.getLogger("numpile.inductor.lowering")

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


# NOTE: lowerings by op kind, for ops of that kind without a lowering of their own (views).
KIND_LOWERINGS: dict[OpKind, LoweringFn] = {}


def register_kind_lowering(kind: OpKind) -> Callable[[LoweringFn], LoweringFn]:
    """Register the lowering of ops of `kind` that have none by name.

    >>> @register_kind_lowering(OpKind.VIEW)  # doctest: +SKIP
    ... def lower_view(ctx, node): ...
    """

    def wrap(fn: LoweringFn) -> LoweringFn:
        KIND_LOWERINGS[kind] = fn
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

    def __init__(self, graph: Graph, *, data_indices: bool = True) -> None:
        self.graph = graph
        # whether gathers and scatter-accumulates lower to kernels (lowering/gather.py)
        self.data_indices = data_indices
        self.users = graph.users()
        self.output_set = set(graph.output_nodes())
        self.values: dict[Node, Lowered] = {}
        self.buffers: dict[str, Buffer] = {}
        self.steps: list[Kernel | ExternCall] = []
        self._kernel_count = 0
        # 0-d inputs the caller knows eager holds as NumPy scalars where the graph cannot
        # tell (a C loop body's cond branch placeholder bound to an element): scalar math.
        self.numpy_scalars: set[Node] = set()

    # -- values -----------------------------------------------------------------------------

    def value(self, node: Node) -> Lowered:
        return self.values[node]

    def operand(self, value: Any) -> tuple[Lowered | None, Any]:
        """A node input as (lowered value, None) or (None, Python constant)."""
        if isinstance(value, Node):
            return self.values[value], None
        return None, value

    def new_buffer(
        self,
        name: str,
        shape: tuple[int, ...],
        dtype: Any,
        kind: str,
        *,
        layout: tuple[Any, ...] | None = None,
    ) -> str:
        """A buffer of the program; a "kernel" one is laid out by `layout` (dense strides,
        `dense_strides`) or C-contiguous."""
        strides = (layout or contiguous_strides(shape)) if kind == "kernel" else None
        self.buffers[name] = Buffer(name, tuple(shape), np.dtype(dtype), kind, strides)
        return name

    # -- realization ------------------------------------------------------------------------

    def realize(self, value: Lowered, name: str, node: Node | None = None) -> str:
        """Store `value` to a fresh buffer (once) and read it from there: laid out as NumPy
        lays `node`'s result out (order='K': a Fortran-order input's element-wise result
        is Fortran-ordered, and the kernels loop in that order), else C-contiguous."""
        if value.buffer is not None:
            return value.buffer
        assert value.loader is not None
        layout = node_layout(node, value.shape) if node is not None else None
        buffer = self.new_buffer(name, value.shape, value.dtype, "kernel", layout=layout)
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
        stores: tuple[Store | ReductionStore | AccumulateStore, ...],
        origins: tuple[str, ...],
    ) -> None:
        name = f"kernel{self._kernel_count}"
        self._kernel_count += 1
        kernel = Kernel(name, ranges, reduction_ranges, stores, origins)
        if not light_active():
            # Late import: range analysis is sympy's. A light kernel's indices are ints and
            # affine sizes, with no `FloorDiv` or `ModularIndexing` to rewrite.
            from ..value_range import simplify_kernel_indices

            kernel = simplify_kernel_indices(kernel)
        self.steps.append(kernel)

    def materialize(self, node: Node) -> str:
        """The buffer holding `node`'s value as NumPy would return it (views stay views)."""
        value = self.values[node]
        if value.buffer is not None:
            return value.buffer
        if node.op is not None and node.op.kind is OpKind.VIEW:
            self._extern(node, barrier=False)
            return self.values[node].buffer  # type: ignore[return-value]
        return self.realize(value, node.name, node)

    def materialize_pending(self) -> None:
        """Realize every computed value not yet stored (before a mutation runs)."""
        for node, value in self.values.items():
            pending = value.buffer is None and not value.pure_view and value.loader is not None
            if pending and any(user not in self.values for user in self.users[node]):
                self.realize(value, node.name, node)

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
        # A loop's final value is its initial one after an empty range: a Python scalar
        # where the meta says a 0-d NumPy value. It stays the object the loop gave.
        if isinstance(meta, ArrayMeta) and shape is not None and node.op.name != "loop_output":
            buffer = self.new_buffer(node.name, shape, meta.dtype, "extern")
            lowered = Lowered(shape, meta.dtype, None, buffer=buffer)
            if kernel_dtype(meta.dtype):
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
        if fn is None:
            fn = KIND_LOWERINGS.get(op.kind)
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
            self.realize(value, node.name, node)


def node_layout(node: Node, shape: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The dense strides NumPy lays `node`'s array result out with (its meta's), or None
    for C order (or a layout that is not dense over `shape`)."""
    meta = node.meta
    if not isinstance(meta, ArrayMeta) or meta.strides is None or len(shape) != meta.ndim:
        return None
    return dense_strides(tuple(shape), tuple(meta.strides))


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
    return kernel_dtype(meta.dtype)


def as_dim(dim: Any) -> Any:
    """A dim of a meta as the loop IR holds it: an int, or an expression over sizes (a light
    capture's `AffineSize`, or sympy's).

    >>> as_dim(sympy.Integer(3)), as_dim(sympy.Symbol("s0", integer=True, positive=True))
    (3, s0)
    """
    if isinstance(dim, int | np.integer):
        return int(dim)
    if isinstance(dim, AffineSize):
        return dim
    if isinstance(dim, sympy.Expr) and dim.is_Integer:
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


def lower_graph(graph: Graph, *, data_indices: bool = True) -> Program:
    """Lower every node of `graph`; the graph's outputs end up in buffers.

    `data_indices=False` keeps gathers and scatter-accumulates extern calls (for code
    generators without loads and stores at indices read from data).

    >>> lower_graph(graph).steps  # doctest: +SKIP
    """
    ctx = LoweringContext(graph, data_indices=data_indices)
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


# NOTE: a graph input's buffer name becomes a C (or Triton) identifier beside the names code
# generation makes itself (loop variables x0/r0, sizes s0, temporaries t0, strides a_s0) and
# the names of C and libm; an input whose name could clash is renamed `in_<name>`.
_GENERATED_NAME = re.compile(r"[a-z]\d+|.*_s\d+|g_.*|np_.*|npy_.*|Py.*|NPY.*|_.*")
_C_RESERVED = frozenset(
    [
        "auto",
        "break",
        "case",
        "char",
        "const",
        "continue",
        "default",
        "do",
        "double",
        "else",
        "enum",
        "extern",
        "float",
        "for",
        "goto",
        "if",
        "inline",
        "int",
        "long",
        "register",
        "restrict",
        "return",
        "short",
        "signed",
        "sizeof",
        "static",
        "struct",
        "switch",
        "typedef",
        "union",
        "unsigned",
        "void",
        "volatile",
        "while",
        "bool",
        "true",
        "false",
        "complex",
        "main",
        "call",
        "args",
        "nargs",
        "self",
        "out",
        "result",
        "sin",
        "cos",
        "tan",
        "exp",
        "log",
        "sqrt",
        "pow",
        "fabs",
        "floor",
        "ceil",
        "fmin",
        "fmax",
        "tanh",
        "sinh",
        "cosh",
        "asin",
        "acos",
        "atan",
        "atan2",
        "log1p",
        "expm1",
        "log2",
        "log10",
        "exp2",
        "cbrt",
        "hypot",
        "fmod",
        "round",
        "trunc",
        "rint",
        "erf",
        "erfc",
        "copysign",
        "nextafter",
        "isnan",
        "isinf",
        "isfinite",
        "signbit",
        "tl",
        "math",
        "libdevice",
    ]
)


def input_buffer_name(ctx: LoweringContext, name: str) -> str:
    """The buffer name of graph input `name`: itself unless it could clash in generated code.

    A name that is no C identifier (a body's `.retval0`, the slot of a value returned from
    inside a loop) keeps its letters, digits and underscores.

    >>> input_buffer_name(LoweringContext(Graph()), "x0")
    'in_x0'
    >>> input_buffer_name(LoweringContext(Graph()), ".retval0")
    'in__retval0'
    """
    identifier = name.isidentifier() and name.isascii()
    if identifier and not (_GENERATED_NAME.fullmatch(name) or name in _C_RESERVED):
        return name
    candidate = "in_" + "".join(
        c if c.isascii() and (c.isalnum() or c == "_") else "_" for c in name
    )
    while candidate in ctx.buffers:
        candidate += "_"
    return candidate


def _lower_placeholder(ctx: LoweringContext, node: Node) -> str:
    meta = node.meta
    if isinstance(meta, ScalarMeta) or read_as_numpy_scalar(ctx, node):
        dtype = meta.dtype if isinstance(meta, ArrayMeta) else _SCALAR_DTYPES.get(meta.type)
        name = ctx.new_buffer(
            input_buffer_name(ctx, node.name), (), dtype or np.dtype("O"), "scalar"
        )
        loader: Loader | None = None
        if dtype is not None:
            scalar = ScalarArg(name, dtype)
            loader = lambda idx: scalar  # noqa: E731
        ctx.values[node] = Lowered((), dtype or np.dtype("O"), loader, buffer=name)
        ctx.values[node].pure_view = True
        return name
    if not kernel_dtype(meta.dtype):
        name = ctx.new_buffer(input_buffer_name(ctx, node.name), (), np.dtype("O"), "object")
        ctx.values[node] = Lowered((), np.dtype("O"), None, buffer=name)
        return name
    shape = tuple(as_dim(d) for d in meta.shape)
    name = ctx.new_buffer(input_buffer_name(ctx, node.name), shape, meta.dtype, "input")
    strides = meta.strides if meta.strides is not None else contiguous_strides(shape)
    ctx.buffers[name] = attrs.evolve(ctx.buffers[name], example_strides=tuple(strides))
    value = Lowered(shape, meta.dtype, None)
    ctx._become_buffer(value, name)
    ctx.values[node] = value
    return name


def read_as_numpy_scalar(ctx: LoweringContext, node: Node) -> bool:
    """Whether graph input `node` is a 0-d value read only as a NumPy scalar (through
    `carried_scalar`, as capture reads a NumPy scalar input): kernels take its value as a
    scalar argument, as they take a Python float's, and no array is made of it. A value on
    a device (a loop's carried 0-d result of device kernels) stays an array there.

    >>> read_as_numpy_scalar(ctx, dt_placeholder)  # doctest: +SKIP
    True
    """
    meta = node.meta
    if not isinstance(meta, ArrayMeta) or meta.shape != () or not kernel_dtype(meta.dtype):
        return False
    if meta.device != "cpu":
        return False
    users = ctx.users.get(node, ())
    reads = [user.op is not None and user.op.name == "carried_scalar" for user in users]
    return bool(reads) and all(reads) and node not in ctx.output_set


_SCALAR_DTYPES: dict[type, np.dtype[Any]] = {
    bool: np.dtype("bool"),
    int: np.dtype("int64"),
    float: np.dtype("float64"),
}
# NOTE: Python constants of a pointwise op (weak scalars: the loop dtype comes from the
# arrays); a complex one (`1j * k`) is a C complex literal cast to the loop's type.
_CONSTANT_DTYPES: dict[type, np.dtype[Any]] = {**_SCALAR_DTYPES, complex: np.dtype("complex128")}


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
        inner = tuple(index_int(0) if size == 1 else idx[offset + d] for d, size in enumerate(own))
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
    if isinstance(constant, bool | int | float | complex):
        const = constant
        return (lambda idx: Constant(const, _CONSTANT_DTYPES[type(const)])), type(const)
    if isinstance(constant, np.generic) and kernel_dtype(constant.dtype):
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


def readable_source(ctx: LoweringContext, node: Node) -> tuple[Lowered, Loader]:
    """The lowered first input of a view or index `node` and its loader, where kernels read
    it element by element at the node's own dtype; CannotLower otherwise."""
    if not node.inputs or not isinstance(node.inputs[0], Node):
        raise CannotLower("a view or index of a non-array")
    source = ctx.values[node.inputs[0]]
    if source.loader is None:
        raise CannotLower("a view or index of a value kernels cannot read")
    assert isinstance(node.meta, ArrayMeta)
    if node.meta.dtype != source.dtype:
        raise CannotLower("a view or index that changes the dtype")
    return source, source.loader


def out_shape(node: Node) -> tuple[Any, ...]:
    assert isinstance(node.meta, ArrayMeta)
    return tuple(as_dim(d) for d in node.meta.shape)


# NOTE: the op families that fill LOWERINGS and KIND_LOWERINGS: importing the lowering
# loads every rule (the registry loads its own rules, in one place).
from . import decompositions as decompositions  # noqa: E402
from . import gather as gather  # noqa: E402
from . import pointwise as pointwise  # noqa: E402
from . import reduction as reduction  # noqa: E402
from . import scatter as scatter  # noqa: E402
from . import view as view  # noqa: E402
