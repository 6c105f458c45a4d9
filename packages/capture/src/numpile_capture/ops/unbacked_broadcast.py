"""Broadcasting two data-dependent sizes: a run-time check in the graph, not a graph break.

`np.bincount(a, w) / np.bincount(a)` or `x[m1] + y[m2]` combine two sizes known only at
run time (`u1`, `u2`): capture can neither prove them equal nor guard on them. As torch
does with deferred run-time asserts, the graph gets a `broadcast_unbacked` node in front
of the op: it takes the op's operands, checks the two sizes when they are known and
returns the two clashing operands with one fresh unbacked size `u<k>` on that axis, which
the code after it uses (so it compiles once for all counts). At run time it keeps NumPy's
exact semantics: equal sizes pass; a size 1 broadcasts (a stride-0 view); otherwise it
raises NumPy's broadcasting `ValueError`, with NumPy's message, from the user's line.

`Graph.call` catches `UnbackedBroadcast` from a meta rule and calls `unify_operands`.

    >>> import numpy as np
    >>> a, b = _broadcast_impl(np.ones(1), np.arange(3.0), left=0, right=1, axis=-1, nnz="u")
    >>> a.shape, b.shape
    ((3,), (3,))
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..meta import ArrayMeta, ScalarMeta
from ..op import Op, OpKind, get_op, register_op
from ._shapes import UnbackedBroadcast, unbacked_size

if TYPE_CHECKING:
    from ..graph import Graph

_MISMATCH = "ValueError (two data-dependent sizes that do not broadcast)"


def _shape_text(value: Any) -> str:
    # NumPy's spelling of a shape in its broadcasting message: `(3,)`, `(2,4)`, `()`.
    shape = np.shape(value)
    return f"({shape[0]},)" if len(shape) == 1 else "(" + ",".join(map(str, shape)) + ")"


def _broadcast_impl(*operands: Any, left: int, right: int, axis: int, nnz: str) -> Any:
    a, b = np.asarray(operands[left]), np.asarray(operands[right])
    size_a, size_b = a.shape[axis], b.shape[axis]
    if size_a == size_b:
        return a, b
    if size_a == 1 or size_b == 1:
        size = size_b if size_a == 1 else size_a  # 1 against 0 broadcasts to 0
        return _expanded(a, axis, size), _expanded(b, axis, size)
    shapes = " ".join(_shape_text(value) for value in operands)
    raise ValueError(f"operands could not be broadcast together with shapes {shapes} ")


def _expanded(array: Any, axis: int, size: int) -> Any:
    if array.shape[axis] == size:
        return array
    shape = list(array.shape)
    shape[axis] = size
    return np.broadcast_to(array, tuple(shape))


def _broadcast_meta(*operands: Any, left: int, right: int, axis: int, nnz: str) -> ScalarMeta:
    return ScalarMeta(tuple)


def item_metas(
    operands: tuple[Any, ...], *, left: int, right: int, axis: int, nnz: str
) -> tuple[ArrayMeta, ArrayMeta]:
    """The metadata of the two operands after the check: the axis is the fresh size `nnz`,
    bounded by the larger of the two sizes' bounds where both have one."""
    a, b = operands[left], operands[right]
    assert isinstance(a, ArrayMeta) and isinstance(b, ArrayMeta)
    size = unbacked_size(nnz, 0, _upper(a.shape[axis], b.shape[axis]))
    return tuple(  # type: ignore[return-value]
        ArrayMeta(
            tuple(size if d == meta.ndim + axis else dim for d, dim in enumerate(meta.shape)),
            meta.dtype,
            None,
            meta.device,
        )
        for meta in (a, b)
    )


def _upper(left: Any, right: Any) -> Any:
    # The larger of two sizes' upper bounds (None when either has none).
    from ..dynamic_shapes import active_shape_env

    env = active_shape_env()
    highs = []
    for size in (left, right):
        bound = env.unbacked_bounds(size) if env is not None else None
        high = bound[1] if bound is not None else (None if env and env.is_unbacked(size) else size)
        if high is None:
            return None
        highs.append(high)
    if all(isinstance(high, int) for high in highs):
        return max(highs)
    import sympy

    return sympy.Max(*highs)


broadcast_unbacked = register_op(
    Op(
        "broadcast_unbacked",
        OpKind.EXTERN,
        _broadcast_meta,
        _broadcast_impl,
        doc="two operands whose data-dependent sizes must broadcast, checked at run time",
        run_time_error=_MISMATCH,
    )
)


def unify_operands(
    graph: Graph, inputs: tuple[Any, ...], clash: UnbackedBroadcast
) -> tuple[Any, ...]:
    """`inputs` with the two operands whose sizes clash (`clash.left`, `clash.right` at the
    same axis from the end) replaced by the checked pair of a `broadcast_unbacked` node.

    Re-raises `clash` (a graph break) when no two array operands hold those sizes.
    """
    from ..graph import Node

    def holding(size: Any) -> list[tuple[int, int]]:
        found = []
        for position, value in enumerate(inputs):
            if isinstance(value, Node) and isinstance(value.meta, ArrayMeta):
                shape = value.meta.shape
                found += [(position, d - len(shape)) for d, dim in enumerate(shape) if dim == size]
        return found

    for left, axis in holding(clash.left):
        for right, other_axis in holding(clash.right):
            if left != right and axis == other_axis:
                return _checked(graph, inputs, left, right, axis)
    raise clash


def _checked(
    graph: Graph, inputs: tuple[Any, ...], left: int, right: int, axis: int
) -> tuple[Any, ...]:
    from ..graph import Node

    params = {"left": left, "right": right, "axis": axis, "nnz": f"u{len(graph.nodes)}"}
    node = graph.call(broadcast_unbacked, *inputs, **params)
    metas = [value.meta if isinstance(value, Node) else value for value in inputs]
    pair = item_metas(tuple(metas), **params)  # type: ignore[arg-type]
    item = get_op("result_item")
    result = list(inputs)
    for k, (position, meta) in enumerate(zip((left, right), pair, strict=True)):
        result[position] = graph.add_node(item, (node,), {"index": k}, meta)
    return tuple(result)
