"""Pure scatter ops: functional forms of writing into an array (functionalization, VJPs).

They are canonical ops like any other, registered here with the rest of the op set:
numpile_autograd_aot emits them (functionalization, VJP rules), the inductor lowers or
calls them, and a cached graph that holds one runs without importing the autograd layer.

`view_scatter(base, value, views=...)` is a copy of `base` whose region
reached through a chain of view ops is `value` (assigned as NumPy assigns:
broadcast, unsafe cast); `index_scatter` is the pure `index_put`; and
`index_add` accumulates `value` at an advanced index (`np.add.at`), the
transpose of advanced indexing; `index_accumulate` is the pure `ufunc_at` (any
binary ufunc's `.at`, its `ufunc` param naming it). They are EXTERN ops: they
run NumPy and never mutate their inputs. `view_scatter_` is the one exception:
`view_scatter` storing into `base` itself, made by the inductor's reinplacing.

A view chain is a tuple of `(op name, params)` pairs, params as a tuple of
`(key, value)` pairs, so it prints and hashes like any static param.

    >>> from numpile_capture import ArrayMeta
    >>> str(view_scatter.meta(ArrayMeta((4,), "float64"), 1.0, views=()))
    'float64[4]'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..graph import Node
from ..meta import ArrayMeta
from ..op import Op, OpKind, RaisesWhen, get_op, register_op
from .indexing import IndexArray

ViewChain = tuple[tuple[str, tuple[tuple[str, Any], ...]], ...]

__all__ = [
    "ViewChain",
    "apply_views",
    "chain_of",
    "index_accumulate",
    "index_add",
    "index_scatter",
    "view_scatter",
    "view_scatter_",
]


def chain_of(nodes: Sequence[Node]) -> ViewChain:
    """The view chain that replays the view nodes `nodes` (first applied first).

    >>> chain_of([])
    ()
    """
    steps: list[tuple[str, tuple[tuple[str, Any], ...]]] = []
    for node in nodes:
        assert node.op is not None
        if len(node.inputs) > 1:
            # A view by a run-time index (`getitem_at`): its scalars are graph values.
            raise NotImplementedError(f"no static view chain for {node.op.name} ({node.name})")
        steps.append((node.op.name, node.params))
    return tuple(steps)


def apply_views(value: Any, views: ViewChain) -> Any:
    """Apply a view chain to a concrete array: the result aliases `value`.

    >>> x = np.arange(6.0)
    >>> np.shares_memory(apply_views(x, (("getitem", (("index", (slice(None, None, 2),)),)),)), x)
    True
    """
    for name, params in views:
        value = get_op(name).impl(value, **dict(params))
    return value


def _fresh(base: ArrayMeta) -> ArrayMeta:
    return ArrayMeta(base.shape, base.dtype, None, base.device)


def _view_scatter_meta(base: ArrayMeta, value: Any, *, views: ViewChain) -> ArrayMeta:
    return _fresh(base)


def _view_scatter_impl(base: Any, value: Any, *, views: ViewChain) -> Any:
    out = np.copy(base)  # dispatches to CuPy for CuPy arrays (np.array does not)
    return _view_scatter_inplace_impl(out, value, views=views)


def _view_scatter_inplace_impl(base: Any, value: Any, *, views: ViewChain) -> Any:
    # NumPy's assignment: the value is read in full before the store when the two overlap.
    parent = apply_views(base, views[:-1])
    if views and views[-1][0] == "getitem":
        # NOTE: assign through the index: an all-int index gives a scalar, not a view.
        parent[dict(views[-1][1])["index"]] = value
    elif views:
        apply_views(parent, views[-1:])[...] = value
    else:
        base[...] = value
    return base


def _view_scatter_inplace_meta(base: ArrayMeta, value: Any, *, views: ViewChain) -> ArrayMeta:
    return base


view_scatter = register_op(
    Op("view_scatter", OpKind.EXTERN, _view_scatter_meta, _view_scatter_impl)
)

# `view_scatter` storing into `base` itself: what the inductor's reinplacing makes of a
# `view_scatter` whose base is not read afterwards (numpile_inductor.reinplace).
view_scatter_ = register_op(
    Op(
        "view_scatter_",
        OpKind.MUTATION,
        _view_scatter_inplace_meta,
        _view_scatter_inplace_impl,
        mutates=(0,),
    )
)


def _concrete(index: tuple[Any, ...], arrays: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(arrays[item.position] if isinstance(item, IndexArray) else item for item in index)


def _index_scatter_meta(
    base: ArrayMeta, value: Any, *arrays: ArrayMeta, index: tuple[Any, ...], nnz: Any = None
) -> ArrayMeta:
    return _fresh(base)


def _index_scatter_impl(
    base: Any, value: Any, *arrays: Any, index: tuple[Any, ...], nnz: Any = None
) -> Any:
    out = np.copy(base)  # dispatches to CuPy for CuPy arrays (np.array does not)
    out[_concrete(index, arrays)] = value
    return out


index_scatter = register_op(
    Op("index_scatter", OpKind.EXTERN, _index_scatter_meta, _index_scatter_impl)
)


def _index_add_impl(
    base: Any, value: Any, *arrays: Any, index: tuple[Any, ...], nnz: Any = None
) -> Any:
    out = np.copy(base)  # dispatches to CuPy for CuPy arrays (np.array does not)
    np.add.at(out, _concrete(index, arrays), value)
    return out


index_add = register_op(Op("index_add", OpKind.EXTERN, _index_scatter_meta, _index_add_impl))


def _index_accumulate_meta(
    base: ArrayMeta,
    value: Any,
    *arrays: ArrayMeta,
    ufunc: str,
    index: tuple[Any, ...],
    nnz: Any = None,
) -> ArrayMeta:
    return _fresh(base)


def _index_accumulate_impl(
    base: Any, value: Any, *arrays: Any, ufunc: str, index: tuple[Any, ...], nnz: Any = None
) -> Any:
    out = np.copy(base)  # dispatches to CuPy for CuPy arrays (np.array does not)
    getattr(np, ufunc).at(out, _concrete(index, arrays), value)
    return out


index_accumulate = register_op(
    Op(
        "index_accumulate",
        OpKind.EXTERN,
        _index_accumulate_meta,
        _index_accumulate_impl,
        run_time_error="IndexError (an integer index out of bounds)",
        raises_when=RaisesWhen.INTEGER_INDEX,
    )
)
