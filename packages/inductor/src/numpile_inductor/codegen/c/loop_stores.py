"""Stores into a loop body's input arrays as kernels: `B[1:-1, 1:-1] = expr`, `pos += dt * v`.

A body compiled for the host loop keeps its mutation ops as barriers (extern calls into
NumPy). A body run from a C loop (`loop_kernels`) needs them as kernels: `setitem` with a
basic index of constants becomes a copy kernel over the view, and an in-place binary ufunc
(`add_`, `subtract_`, ...) a pointwise kernel reading and writing the target. The
scheduler then fuses the copy into the kernel computing the value, so the value is stored
straight into the view. The op's result names its target from then on (the rename map).

Only what gives NumPy's result exactly is rewritten: the target is an input array of
static shape, the value has the target's dtype (or is a number the target's dtype holds),
and its shape broadcasts to the view's; anything else stays an extern (the caller then
keeps the host loop). Whether a fused kernel reads its target at other elements than it
writes is `loop_kernels`' check, after fusion.

A store at the loop's run-time index (`setitem_at`: `stack[i] = h`, `A[i, 1:] = v`) into an
input becomes a row view of the input (a `getitem_at` step, whose pointer the C loop moves
to row `i` per iteration, checking `i` as NumPy does) and a kernel storing the value into
that view (`written_rows`); `loop_kernels` then checks that the body reads the input only
through views of the same row, where NumPy's order of reads and writes is kept.

    >>> stores_as_kernels(program).renamed  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from numpile_capture import ArrayMeta, Graph, ScalarSlot, get_op
from numpile_capture import ops as capture_ops

from ...index import as_index, index_int, loop_var, replace_symbols
from ...loop_ir import (
    AccumulateStore,
    Apply,
    Buffer,
    BufferRef,
    Constant,
    Expr,
    ExternCall,
    Kernel,
    Load,
    ReductionStore,
    ScalarArg,
    Store,
    loads_of,
)
from ...lowering import Program
from ...lowering.context import CannotLower
from ...lowering.view import index_map

if TYPE_CHECKING:
    pass
else:
    pass  # imported on first use (see light_lowering)


@attrs.frozen
class BodyStores:
    """A body program's steps with its stores into inputs as kernels.

    `renamed`: the buffer of each rewritten op's result -> the input it wrote (later steps
    read it under the input's name). `views`: the buffers of the basic-index views of
    inputs the kernels now read and write through (no step computes them: a step or output
    that still names one cannot run from C). `buffers`: the program's, with the
    temporaries an overlapping store needs. `written_rows`: each row view a kernel stores
    into (a `setitem_at` at the loop index) -> the input it is a row of.
    """

    steps: list[Kernel | ExternCall]
    renamed: dict[str, str]
    views: frozenset[str]
    buffers: dict[str, Buffer]
    written_rows: dict[str, str] = attrs.field(factory=dict)


def stores_as_kernels(
    program: Program, starts: Mapping[str, tuple[Any, ...]] | None = None
) -> BodyStores:
    """The program's stores into its inputs (and views of them) as kernels.

    `starts`: by graph node name, where capture resolved each view of a symbolic size to
    start (`ArrayMeta.starts` of its getitem and setitem nodes); a view of a symbolic size
    without one stays an extern.
    """
    return _Rewriter(program, starts or {}).run()


def recorded_starts(graph: Graph) -> dict[str, tuple[Any, ...]]:
    """Where capture recorded each view of `graph` to start (`ArrayMeta.starts`), by node
    name: the `starts` that `stores_as_kernels` reads."""
    return {
        node.name: node.meta.starts
        for node in graph.nodes
        if isinstance(node.meta, ArrayMeta) and node.meta.starts is not None
    }


# A view of an input: the input and the element it shows at each view position (over the
# view's loop variables x0, x1, ...).
_View = tuple[str, tuple[Any, ...]]


class _Rewriter:
    def __init__(self, program: Program, starts: Mapping[str, tuple[Any, ...]]) -> None:
        self.program = program
        self.starts = starts
        self.buffers = dict(program.buffers)
        self.renamed: dict[str, str] = {}
        self.views: dict[str, _View] = {}
        self.steps: list[Kernel | ExternCall] = []
        self.rows: dict[str, str] = {}

    def run(self) -> BodyStores:
        for step in self.program.steps:
            step = _renamed(step, self.renamed, self.views)
            if isinstance(step, ExternCall) and self._rewrite(step):
                continue
            self.steps.append(step)
        views = frozenset(self.views)
        return BodyStores(self.steps, self.renamed, views, self.buffers, self.rows)

    def _target(self, arg: Any) -> tuple[Buffer, tuple[Any, ...], tuple[int, ...]] | None:
        # The input an op writes (directly or through a view), the element at each position
        # of what it writes, and that shape.
        if not isinstance(arg, BufferRef):
            return None
        if arg.name in self.views:
            base, element = self.views[arg.name]
            return self.buffers[base], element, tuple(self.buffers[arg.name].shape)
        buf = self.buffers[arg.name]
        if buf.kind != "input":
            return None
        shape = tuple(buf.shape)
        return buf, tuple(loop_var(d) for d in range(len(shape))), shape

    def _rewrite(self, step: ExternCall) -> bool:
        found = self._target(step.args[0]) if step.args else None
        if found is None:
            return self._copied_view(step)
        target, element, shape = found
        kwargs = dict(step.kwargs)
        if step.op_name == "setitem_at":
            return self._row_store(step, target)
        if step.op_name == "getitem" and len(step.args) == 1 and set(kwargs) == {"index"}:
            view = _basic_view(
                kwargs["index"],
                shape,
                self.buffers[step.buffer].shape,
                self.starts.get(step.node_name),
            )
            if view is None:
                return False
            inner, _ = view
            # The view of a view: compose the element maps.
            self.views[step.buffer] = (target.name, _compose(element, inner))
            return True
        if step.op_name == "setitem" and len(step.args) == 2 and set(kwargs) == {"index"}:
            view_shape = _view_shape(kwargs["index"], shape, self._shape_of(step.args[1]))
            starts = self.starts.get(step.node_name)
            view = (
                None
                if view_shape is None
                else _basic_view(kwargs["index"], shape, view_shape, starts)
            )
            if view is None:
                return False
            inner, shape = view
            element = _compose(element, inner)
            value = _operand(self.buffers, step.args[1], target.dtype, shape, exact=False)
            if value is None:
                return False
            value = _rename_expr(value, self.renamed, self.views)
            value = self._first(value, target, element, shape, step)
            store = Store(target.name, element, value)
            self._result(step, self._kernel(shape, store, step))
            return True
        base = step.op_name.removesuffix("_")
        ufunc = getattr(np, base, None)
        if (
            base == step.op_name
            or not isinstance(ufunc, np.ufunc)
            or ufunc.nin != 2
            or ufunc.nout != 1
            or len(step.args) != 2
            or step.kwargs
            or not _same_loop(ufunc, target.dtype)
        ):
            return False
        operand = _operand(self.buffers, step.args[1], target.dtype, shape, exact=True)
        if operand is None:
            return False
        operand = _rename_expr(operand, self.renamed, self.views)
        operand = self._first(operand, target, element, shape, step)
        own = Load(target.name, element, target.dtype)
        store = Store(target.name, element, Apply(base, (own, operand), target.dtype))
        self._result(step, self._kernel(shape, store, step))
        return True

    def _row_store(self, step: ExternCall, target: Buffer) -> bool:
        # `target[i, ...] = value` at run-time ints: a row view of the target (its pointer
        # set per iteration, a barrier so that no kernel before it stores through it) and a
        # kernel storing the value into the view. Only into the input itself, and with a
        # value that does not read it (the view is not a graph value anything else reads).
        first = step.args[0]
        kwargs = dict(step.kwargs)
        if not isinstance(first, BufferRef) or first.name in self.views or set(kwargs) != {"index"}:
            return False
        shape = _row_shape(kwargs["index"], tuple(target.shape))
        if shape is None:
            return False
        value = _operand(self.buffers, step.args[1], target.dtype, shape, exact=False)
        if value is None:
            return False
        value = _rename_expr(value, self.renamed, self.views)
        if any(load.buffer == target.name for load in loads_of(value)):
            return False
        row = f"{step.buffer}_row"
        self.buffers[row] = Buffer(row, shape, target.dtype, "extern")
        view = ExternCall(
            row,
            "getitem_at",
            get_op("getitem_at").impl,
            (first, *step.args[2:]),
            step.kwargs,
            is_barrier=True,
            node_name=step.node_name,
        )
        self.steps.append(view)
        index = tuple(loop_var(d) for d in range(len(shape)))
        self.steps.append(self._kernel(shape, Store(row, index, value), step))
        self.rows[row] = target.name
        self.renamed[step.buffer] = target.name
        return True

    def _copied_view(self, step: ExternCall) -> bool:
        # A basic-index view of a buffer the body computed (`r2[:, :, None]` handed to a
        # ufunc NumPy runs): its values copied by a kernel. Nothing writes through it (an
        # in-place op on it stays an extern, which the C loop refuses).
        if step.op_name != "getitem" or len(step.args) != 1:
            return False
        source = step.args[0]
        kwargs = dict(step.kwargs)
        if not isinstance(source, BufferRef) or set(kwargs) != {"index"}:
            return False
        buf = self.buffers[source.name]
        if buf.kind not in ("kernel", "extern"):
            return False
        view = _basic_view(
            kwargs["index"],
            tuple(buf.shape),
            self.buffers[step.buffer].shape,
            self.starts.get(step.node_name),
        )
        if view is None:
            return False
        element, shape = view
        result = self.buffers[step.buffer]
        if result.dtype != buf.dtype or tuple(result.shape) != shape:
            return False
        self.buffers[step.buffer] = Buffer(
            step.buffer, shape, buf.dtype, "kernel", _contiguous(shape)
        )
        index = tuple(loop_var(d) for d in range(len(shape)))
        store = Store(step.buffer, index, Load(source.name, element, buf.dtype))
        self.steps.append(self._kernel(shape, store, step))
        return True

    def _shape_of(self, value: Any) -> tuple[Any, ...]:
        # The shape of a stored value: a buffer's, or () for a number.
        return tuple(self.buffers[value.name].shape) if isinstance(value, BufferRef) else ()

    def _first(
        self,
        value: Expr,
        target: Buffer,
        element: tuple[Any, ...],
        shape: tuple[int, ...],
        step: ExternCall,
    ) -> Expr:
        # A value that reads the target at other elements than it is stored to is computed
        # whole first, into a temporary (NumPy's result for overlapping operands).
        if all(load.index == element for load in loads_of(value) if load.buffer == target.name):
            return value
        name = f"{step.buffer}_value"
        self.buffers[name] = Buffer(name, shape, target.dtype, "kernel", _contiguous(shape))
        index = tuple(loop_var(d) for d in range(len(shape)))
        self.steps.append(self._kernel(shape, Store(name, index, value), step))
        return Load(name, index, target.dtype)

    def _kernel(self, shape: tuple[int, ...], store: Store, step: ExternCall) -> Kernel:
        return Kernel(f"kernel_store{len(self.steps)}", shape, (), (store,), (step.node_name,))

    def _result(self, step: ExternCall, kernel: Kernel) -> None:
        # The op's result is what it wrote: the input, or the view it wrote through.
        self.steps.append(kernel)
        first = step.args[0]
        assert isinstance(first, BufferRef)
        if first.name in self.views:
            self.views[step.buffer] = self.views[first.name]
        else:
            self.renamed[step.buffer] = first.name


def _compose(outer: tuple[Any, ...], inner: tuple[Any, ...]) -> tuple[Any, ...]:
    # `outer` maps view positions (x0, x1, ...) to elements of an input; `inner` maps the
    # positions of a view of that view to positions of it.
    swap = {loop_var(d): index for d, index in enumerate(inner)}
    return tuple(replace_symbols(e, swap) for e in outer)


def _contiguous(shape: tuple[Any, ...]) -> tuple[Any, ...]:
    strides: list[Any] = []
    step: Any = 1
    for dim in reversed(shape):
        strides.append(step)
        step *= dim
    return tuple(reversed(strides))


def _same_loop(ufunc: np.ufunc, dtype: np.dtype[Any]) -> bool:
    # Whether the ufunc on two `dtype` operands computes in `dtype` and gives `dtype`.
    try:
        loop = ufunc.resolve_dtypes((dtype, dtype, None))
    except (TypeError, ValueError, np.exceptions.DTypePromotionError):
        return False
    return all(d == dtype for d in loop) and dtype.kind in "iuf"


def _operand(
    buffers: dict[str, Buffer],
    value: Any,
    dtype: np.dtype[Any],
    shape: tuple[int, ...],
    *,
    exact: bool,
) -> Expr | None:
    # The value stored (or combined) at each element of a view of `shape`, in `dtype`.
    # `exact`: an in-place ufunc (a number must be one NumPy's weak scalars give exactly).
    if isinstance(value, BufferRef):
        buf = buffers[value.name]
        if buf.kind == "scalar":
            if buf.dtype.kind == "i" and dtype == np.dtype("float64"):
                # A Python int meets a float64 array as float64 (NEP 50: a weak scalar).
                return Apply("cast", (ScalarArg(buf.name, buf.dtype),), dtype)
            return ScalarArg(buf.name, dtype) if buf.dtype == dtype else None
        if buf.kind not in ("input", "kernel", "extern") or buf.dtype.kind not in "biuf":
            return None
        # Safe casts only (`counts += mask`): their values are exact in any C spelling.
        if buf.dtype != dtype and not np.can_cast(buf.dtype, dtype, "safe"):
            return None
        index = _broadcast_index(buf.shape, shape)
        if index is None:
            return None
        load: Expr = Load(buf.name, index, buf.dtype)
        return load if buf.dtype == dtype else Apply("cast", (load,), dtype)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if dtype.kind == "f" or (
        dtype.kind in "iu" and isinstance(value, int) and _holds(dtype, value)
    ):
        if exact and dtype.kind == "f" and isinstance(value, int) and abs(value) > 2**24:
            return None
        return Constant(value, dtype)
    return None


def _holds(dtype: np.dtype[Any], value: int) -> bool:
    info = np.iinfo(dtype)
    return bool(info.min <= value <= info.max)


def _broadcast_index(source: tuple[Any, ...], shape: tuple[int, ...]) -> tuple[Any, ...] | None:
    # The index into an array of shape `source` broadcast to `shape` (NumPy's rules).
    if len(source) > len(shape):
        return None
    lead = len(shape) - len(source)
    index = []
    for d, size in enumerate(source):
        if size == shape[lead + d]:
            index.append(loop_var(lead + d))
        elif size == 1:
            index.append(index_int(0))
        else:
            return None
    return tuple(index)


def _basic_view(
    index: Any,
    shape: tuple[Any, ...],
    view_shape: tuple[Any, ...],
    starts: tuple[Any, ...] | None,
) -> tuple[tuple[Any, ...], tuple[Any, ...]] | None:
    # For a basic index of ints, slices, `None`s and one Ellipsis into an array of `shape`
    # giving a view of `view_shape` that starts at `starts` (capture's record; None for a
    # static shape): the element of the array at each view position, and the view's shape.
    # None where the lowering cannot follow it (the extern then raises NumPy's IndexError,
    # or runs it).
    items = index if isinstance(index, tuple) else (index,)
    if any(isinstance(item, bool | np.bool_) for item in items):
        return None
    allowed = (slice, int, type(None))
    if any(not (item is Ellipsis or isinstance(item, allowed)) for item in items):
        return None
    try:
        maps = index_map(items, shape, tuple(view_shape), starts=starts)
    except (CannotLower, IndexError, ValueError, TypeError):
        return None
    for (start, _step, dim), size in zip(maps, shape, strict=True):
        if dim is None and isinstance(size, int) and not 0 <= int(start) < size:
            return None  # NumPy's IndexError: the extern raises it
    element = tuple(
        as_index(start) if dim is None else start + step * loop_var(dim)
        for start, step, dim in maps
    )
    return element, tuple(view_shape)


def _row_shape(index: Any, shape: tuple[Any, ...]) -> tuple[Any, ...] | None:
    # The shape of the view a `getitem_at` index of ints, `ScalarSlot`s (an axis each) and
    # slices of constant bounds picks out of an array of `shape`; None for anything else.
    items = index if isinstance(index, tuple) else (index,)
    if len(items) > len(shape):
        return None
    dims: list[Any] = []
    for item, size in zip(items, shape, strict=False):
        if isinstance(item, ScalarSlot) or (isinstance(item, int) and not isinstance(item, bool)):
            continue
        if not isinstance(item, slice):
            return None
        parts = (item.start, item.stop, item.step)
        if any(not (p is None or (isinstance(p, int) and not isinstance(p, bool))) for p in parts):
            return None
        if item == slice(None):
            dims.append(size)
        elif isinstance(size, int):
            dims.append(len(range(*item.indices(size))))
        else:
            return None
    return (*dims, *shape[len(items) :])


def _view_shape(
    index: Any, shape: tuple[Any, ...], value_shape: tuple[Any, ...]
) -> tuple[Any, ...] | None:
    # The shape of the view `index` picks out of an array of `shape`, for a store of a
    # value of `value_shape`: a slice of a symbolic size has the value's length there (a
    # value broadcasts to the view, and capture checked it does). None where neither says.
    items = index if isinstance(index, tuple) else (index,)
    try:
        items = capture_ops.view.normalize_index(items, shape)
    except (IndexError, ValueError, TypeError):
        return None
    dims: list[Any] = []
    axis = 0
    for item in items:
        if item is Ellipsis:
            continue
        if item is None:
            dims.append(1)
            continue
        size = shape[axis]
        axis += 1
        if not isinstance(item, slice):
            continue
        if isinstance(size, int):
            dims.append(len(range(*item.indices(size))))
        elif item == slice(None):
            dims.append(size)
        else:
            dims.append(None)
    dims.extend(shape[axis:])
    lead = len(dims) - len(value_shape)
    for d, dim in enumerate(dims):
        if dim is None:
            k = d - lead
            if k < 0 or value_shape[k] == 1:
                return None
            dims[d] = value_shape[k]
    return tuple(dims)


def _renamed(
    step: Kernel | ExternCall, renamed: dict[str, str], views: dict[str, _View]
) -> Kernel | ExternCall:
    # `step` reading each renamed buffer under its new name, and each view as its input.
    if not renamed and not views:
        return step
    if isinstance(step, ExternCall):
        args = tuple(
            BufferRef(renamed.get(arg.name, arg.name)) if isinstance(arg, BufferRef) else arg
            for arg in step.args
        )
        return attrs.evolve(step, args=args)
    stores: list[Store | ReductionStore | AccumulateStore] = []
    for store in step.stores:
        value = _rename_expr(store.value, renamed, views)
        stores.append(attrs.evolve(store, value=value))
    return attrs.evolve(step, stores=tuple(stores))


def _rename_expr(expr: Expr, renamed: dict[str, str], views: dict[str, _View]) -> Expr:
    if isinstance(expr, Load) and expr.buffer in views:
        base, element = views[expr.buffer]
        swap = {loop_var(d): index for d, index in enumerate(expr.index)}
        return Load(base, tuple(replace_symbols(e, swap) for e in element), expr.dtype)
    if isinstance(expr, Load) and expr.buffer in renamed:
        return Load(renamed[expr.buffer], expr.index, expr.dtype)
    if isinstance(expr, Apply):
        args = tuple(_rename_expr(arg, renamed, views) for arg in expr.args)
        return Apply(expr.fn, args, expr.dtype)
    return expr
