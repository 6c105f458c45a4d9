"""The NumPy-to-op mapping: how the tracer turns a NumPy call on traced arrays into graph nodes.

A `Binding` takes the graph and the call's arguments as the user wrote them,
except that traced arrays are `Node`s, normalizes NumPy's signature
(positional or keyword, defaults), emits one or more nodes and returns what
NumPy would return (a Node, a tuple of Nodes, or a plain value). Python
scalars stay weak constants; NumPy scalars (np.float32(2.0)) stay constants
that the meta rules treat as strong. Argument combinations numpile does not
capture yet raise `UnsupportedCall`; invalid programs raise NumPy's own
exceptions, at capture time.

    >>> g = Graph()
    >>> x = g.placeholder("x", ArrayMeta((2, 3), "float32"))
    >>> s = lookup_function(np.sum).apply(g, x, axis=-1)
    >>> print(s.format())
    v0 = sum(x, axis=(1,))  # float32[2]

Four tables: `lookup_function` (by identity of the NumPy callable),
`lookup_method` (ndarray methods, the array is the first argument),
`lookup_attribute` (T, mT, real, imag) and `lookup_operator` (Python
operators by dunder name without underscores: "add", "iadd", "getitem").
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

import numpy as np

from ..graph import Graph as Graph
from ..meta import ArrayMeta as ArrayMeta
from ..ops.pointwise import UFUNC_NAMES
from ._arguments import Binding as Binding
from ._arguments import UnsupportedCall as UnsupportedCall
from ._compositions import (
    bind_ascontiguousarray,
    bind_asfortranarray,
    bind_column_stack,
    bind_count_nonzero,
    bind_diag,
    bind_dstack,
    bind_inner,
    bind_kron,
    bind_method_view,
    bind_ptp,
    bind_repeat,
    bind_tile,
    bind_tri,
    bind_vdot,
    ufunc_method_binding,
)
from ._creation import (
    bind_arange,
    bind_array,
    bind_asarray,
    bind_eye,
    bind_filled,
    bind_full,
    bind_full_like,
    bind_identity,
    bind_like,
    bind_linspace,
)
from ._extern import extern_functions, generator_binding, special_binding
from ._indexing import (
    bind_getitem,
    bind_setitem,
)
from ._join import (
    bind_concatenate,
    bind_hstack,
    bind_roll,
    bind_stack,
    bind_vstack,
)
from ._linalg import (
    bind_det,
    bind_dot,
    bind_einsum,
    bind_inv,
    bind_norm,
    bind_outer,
    bind_solve,
    bind_tensordot,
    bind_triangle,
)
from ._ordering import (
    bind_ordering,
)
from ._pointwise import (
    bind_angle,
    bind_astype,
    bind_clip,
    bind_copy,
    bind_copyto,
    bind_fill,
    bind_method_astype,
    bind_method_clip,
    bind_method_copy,
    bind_round,
    bind_where,
    build_operators,
    ufunc_binding,
)
from ._reduction import (
    REDUCTION_SIGNATURES,
    bind_scan,
    reduction_binding,
)
from ._view import (
    bind_atleast_1d,
    bind_atleast_2d,
    bind_broadcast_arrays,
    bind_broadcast_to,
    bind_diagonal,
    bind_expand_dims,
    bind_flatten,
    bind_flip,
    bind_fliplr,
    bind_flipud,
    bind_imag,
    bind_matrix_transpose,
    bind_method_reshape,
    bind_method_transpose,
    bind_moveaxis,
    bind_ravel,
    bind_real,
    bind_reshape,
    bind_squeeze,
    bind_swapaxes,
    bind_trace,
    bind_transpose,
)

logger = logging.getLogger("numpile.capture.bindings")

__all__ = [
    "Binding",
    "UnsupportedCall",
    "lookup_attribute",
    "lookup_function",
    "lookup_generator_method",
    "lookup_method",
    "lookup_operator",
]

# --- tables --------------------------------------------------------------------------------


def _build_functions() -> dict[int, tuple[object, Binding]]:
    entries: list[tuple[object, Binding]] = []
    for name in (*UFUNC_NAMES, "divmod", "matmul"):
        ufunc = getattr(np, name)
        entries.append((ufunc, ufunc_binding(ufunc)))
    for name in REDUCTION_SIGNATURES:
        entries.append((getattr(np, name), Binding(f"numpy.{name}", reduction_binding(name))))
    entries += [(np.amax, Binding("numpy.amax", reduction_binding("max")))]
    entries += [(np.amin, Binding("numpy.amin", reduction_binding("min")))]
    for name in ("cumsum", "cumprod", "nancumsum", "nancumprod"):
        entries.append((getattr(np, name), Binding(f"numpy.{name}", bind_scan(name))))
    for name in ("zeros", "ones", "empty"):
        binding = Binding(f"numpy.{name}", bind_filled(name), run_time_sizes=True)
        entries.append((getattr(np, name), binding))
    for name in ("zeros_like", "ones_like", "empty_like"):
        entries.append((getattr(np, name), Binding(f"numpy.{name}", bind_like(name))))
    for name in ("tril", "triu"):
        entries.append((getattr(np, name), Binding(f"numpy.{name}", bind_triangle(name))))
    functions: list[tuple[object, str, Callable[..., Any]]] = [
        (np.round, "round", bind_round),
        (np.around, "around", bind_round),
        (np.clip, "clip", bind_clip),
        (np.where, "where", bind_where),
        (np.astype, "astype", bind_astype),
        (np.copy, "copy", bind_copy),
        (np.angle, "angle", bind_angle),
        (np.real, "real", bind_real),
        (np.imag, "imag", bind_imag),
        (np.reshape, "reshape", bind_reshape),
        (np.ravel, "ravel", bind_ravel),
        (np.transpose, "transpose", bind_transpose),
        (np.swapaxes, "swapaxes", bind_swapaxes),
        (np.moveaxis, "moveaxis", bind_moveaxis),
        (np.matrix_transpose, "matrix_transpose", bind_matrix_transpose),
        (np.expand_dims, "expand_dims", bind_expand_dims),
        (np.squeeze, "squeeze", bind_squeeze),
        (np.broadcast_to, "broadcast_to", bind_broadcast_to),
        (np.broadcast_arrays, "broadcast_arrays", bind_broadcast_arrays),
        (np.flip, "flip", bind_flip),
        (np.fliplr, "fliplr", bind_fliplr),
        (np.flipud, "flipud", bind_flipud),
        (np.atleast_1d, "atleast_1d", bind_atleast_1d),
        (np.atleast_2d, "atleast_2d", bind_atleast_2d),
        (np.linspace, "linspace", bind_linspace),
        (np.eye, "eye", bind_eye),
        (np.identity, "identity", bind_identity),
        (np.full_like, "full_like", bind_full_like),
        (np.array, "array", bind_array),
        (np.asarray, "asarray", bind_asarray),
        (np.concatenate, "concatenate", bind_concatenate),
        (np.stack, "stack", bind_stack),
        (np.hstack, "hstack", bind_hstack),
        (np.vstack, "vstack", bind_vstack),
        (np.roll, "roll", bind_roll),
        (np.dot, "dot", bind_dot),
        (np.outer, "outer", bind_outer),
        (np.einsum, "einsum", bind_einsum),
        (np.tensordot, "tensordot", bind_tensordot),
        (np.copyto, "copyto", bind_copyto),
        (np.sort, "sort", bind_ordering("sort")),
        (np.argsort, "argsort", bind_ordering("argsort")),
        (np.diagonal, "diagonal", bind_diagonal),
        (np.trace, "trace", bind_trace),
        (np.linalg.norm, "linalg.norm", bind_norm),
        (np.linalg.inv, "linalg.inv", bind_inv),
        (np.linalg.det, "linalg.det", bind_det),
        (np.linalg.solve, "linalg.solve", bind_solve),
        (np.ptp, "ptp", bind_ptp),
        (np.count_nonzero, "count_nonzero", bind_count_nonzero),
        (np.tri, "tri", bind_tri),
        (np.diag, "diag", bind_diag),
        (np.kron, "kron", bind_kron),
        (np.column_stack, "column_stack", bind_column_stack),
        (np.dstack, "dstack", bind_dstack),
        (np.inner, "inner", bind_inner),
        (np.vdot, "vdot", bind_vdot),
        (np.repeat, "repeat", bind_repeat),
        (np.tile, "tile", bind_tile),
        (np.ascontiguousarray, "ascontiguousarray", bind_ascontiguousarray),
        (np.asfortranarray, "asfortranarray", bind_asfortranarray),
    ]
    entries += [(fn, Binding(f"numpy.{name}", apply)) for fn, name, apply in functions]
    entries.append((np.full, Binding("numpy.full", bind_full, run_time_sizes=True)))
    entries.append((np.arange, Binding("numpy.arange", bind_arange, run_time_sizes=True)))
    # NOTE: the extern table first, so a function with its own binding keeps it.
    entries = [*extern_functions(), *entries]
    return {id(fn): (fn, binding) for fn, binding in entries}


def _method(name: str, apply: Callable[..., Any]) -> Binding:
    return Binding(f"ndarray.{name}", apply)


def _build_methods() -> dict[str, Binding]:
    table: dict[str, Binding] = {}
    for name in (
        "sum",
        "prod",
        "max",
        "min",
        "argmax",
        "argmin",
        "any",
        "all",
        "mean",
        "var",
        "std",
    ):
        table[name] = _method(name, reduction_binding(name))
    for name in ("cumsum", "cumprod"):
        table[name] = _method(name, bind_scan(name))
    table.update(
        {
            "reshape": _method("reshape", bind_method_reshape),
            "transpose": _method("transpose", bind_method_transpose),
            "swapaxes": _method("swapaxes", bind_swapaxes),
            "squeeze": _method("squeeze", bind_squeeze),
            "ravel": _method("ravel", bind_ravel),
            "flatten": _method("flatten", bind_flatten),
            "astype": _method("astype", bind_method_astype),
            "copy": _method("copy", bind_method_copy),
            "clip": _method("clip", bind_method_clip),
            "round": _method("round", bind_round),
            "dot": _method("dot", bind_dot),
            "conj": _method("conj", ufunc_binding(np.conjugate).apply),
            "conjugate": _method("conjugate", ufunc_binding(np.conjugate).apply),
            "fill": _method("fill", bind_fill),
            "argsort": _method("argsort", bind_ordering("argsort")),
            "diagonal": _method("diagonal", bind_diagonal),
            "trace": _method("trace", bind_trace),
            "repeat": _method("repeat", bind_repeat),
            "view": _method("view", bind_method_view),
        }
    )
    return table


_ATTRIBUTES: dict[str, Binding] = {
    "T": Binding("ndarray.T", bind_transpose),
    "mT": Binding("ndarray.mT", bind_matrix_transpose),
    "real": Binding("ndarray.real", bind_real),
    "imag": Binding("ndarray.imag", bind_imag),
}

# NOTE: module-level registries, built once at import; keyed by id() so lookups are by identity.
_FUNCTIONS = _build_functions()
_METHODS = _build_methods()
_OPERATORS = {
    **build_operators(),
    "getitem": Binding("operator.getitem", bind_getitem),
    "setitem": Binding("operator.setitem", bind_setitem),
}


def lookup_function(fn: object) -> Binding | None:
    """The binding of a NumPy callable (by identity), or None when numpile does not capture it.

    A method of a ufunc (`np.multiply.outer`, a new object on each access) is
    looked up by its ufunc and name.

    >>> lookup_function(np.sin).name
    'numpy.sin'
    >>> lookup_function(np.multiply.outer).name
    'numpy.multiply.outer'
    >>> lookup_function(np.float32) is None
    True
    """
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, np.random.Generator):
        return generator_binding(owner, getattr(fn, "__name__", ""))
    if isinstance(owner, np.ufunc) and owner is getattr(np, owner.__name__, None):
        return _ufunc_method(owner, getattr(fn, "__name__", ""))
    entry = _FUNCTIONS.get(id(fn))
    if entry is None or entry[0] is not fn:
        return special_binding(fn) if isinstance(fn, np.ufunc) else None
    return entry[1]


@functools.lru_cache(maxsize=256)
def _ufunc_method(ufunc: np.ufunc, method: str) -> Binding | None:
    return ufunc_method_binding(ufunc, method)


def lookup_generator_method(generator: Any, name: str) -> Binding | None:
    """The binding of a `np.random.Generator` method (the generator, a graph input, bound in),
    or None for a method the extern table has no row for.

    >>> lookup_generator_method(np.random.default_rng(0), "normal").name
    'numpy.random.Generator.normal'
    """
    return generator_binding(generator, name)


def lookup_method(name: str) -> Binding | None:
    """The binding of an ndarray method called on a traced array (the array comes first).

    >>> lookup_method("sum").name
    'ndarray.sum'
    """
    return _METHODS.get(name)


def lookup_attribute(name: str) -> Binding | None:
    """The binding of an array attribute that produces an array: T, mT, real, imag.

    >>> lookup_attribute("T").name
    'ndarray.T'
    """
    return _ATTRIBUTES.get(name)


def lookup_operator(name: str) -> Binding:
    """The binding of a Python operator on arrays, by dunder name without underscores.

    >>> lookup_operator("iadd").name
    'operator.iadd'
    """
    try:
        return _OPERATORS[name]
    except KeyError:
        raise KeyError(f"no binding for operator {name!r}") from None
