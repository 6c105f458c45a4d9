"""`out=` arguments: the result node is computed first, then a `copyto` mutation writes it
into the target with NumPy's checks, and the call returns the `out` node itself.

So `np.add(x, y, out=x) is x` holds, and an `out` that aliases an input sees the
inputs as they were before the call, as NumPy's elementwise ufuncs do.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..graph import Graph, Node
from ..ops._probes import is_static_shape, probe, shaped_probe
from ..ops.mutation import check_target_shape
from ._arguments import UnsupportedCall, array_meta, emit

# --- out= ----------------------------------------------------------------------------------


def out_target(out: Any, nout: int = 1) -> Node | None:
    """The array an `out=` argument names (a Node), None when there is none."""
    if isinstance(out, tuple):
        if len(out) != nout:
            raise ValueError("The 'out' tuple must have exactly one entry per ufunc output")
        out = out[0]
    if out is None:
        return None
    if not isinstance(out, Node):
        if isinstance(out, list | bool | int | float | complex | np.generic):
            raise TypeError("return arrays must be of ArrayType")
        raise UnsupportedCall(f"out= of type {type(out).__name__}")
    array_meta(out)
    return out


def write_ufunc_out(
    graph: Graph, ufunc: np.ufunc, inputs: list[Any], result: Node, out: Node, casting: str
) -> Node:
    """Copy a ufunc's `result` into `out` with the ufunc's casting and shape checks."""
    target = array_meta(out)
    probes = [probe(v.meta) if isinstance(v, Node) else v for v in inputs]
    with np.errstate(all="ignore"):
        ufunc(*probes, out=np.zeros((0,), dtype=target.dtype), casting=casting)
    check_target_shape(target, array_meta(result))
    emit(graph, "copyto", out, result, casting=casting)
    return out


def write_reduction_out(graph: Graph, function: Any, x: Node, result: Node, out: Node) -> Node:
    """Copy a reduction's `result` into `out` (exact shape, unsafe casting, as NumPy does)."""
    target, meta = array_meta(out), array_meta(result)
    if tuple(target.shape) != tuple(meta.shape):
        source = array_meta(x)
        if is_static_shape(source, target) and target.numel <= 1 << 16:
            function(shaped_probe(source), out=np.empty(target.shape, dtype=target.dtype))
        raise ValueError(
            f"output parameter for reduction has shape {tuple(target.shape)}, "
            f"expected {tuple(meta.shape)}"
        )
    emit(graph, "copyto", out, result, casting="unsafe")
    return out
