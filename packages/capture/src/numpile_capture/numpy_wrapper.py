"""`wrap_numpy`: a NumPy function that takes and returns CuPy arrays, on their GPU.

torch's `torch.compiler.wrap_numpy` lets a NumPy function take and return torch
tensors (CUDA ones included) with no copy. numpile's arrays on the GPU are CuPy
arrays, so the mirror is a NumPy function that takes CuPy arrays where it
expects NumPy ones and returns CuPy arrays:

- compiled (`numpile.compile(wrap_numpy(fn))`, or called from compiled code), `fn`
  itself is captured; its CuPy inputs are graph inputs on their GPU, so the graph
  runs there as Triton kernels (the inductor's GPU backend) with no copies;
- called eagerly, CuPy's NumPy protocols (`__array_function__`, `__array_ufunc__`)
  run `fn` on the GPU;
- either way, a NumPy array among the results of a call that had CuPy inputs (an
  array `fn` created, e.g. with `np.zeros`) is moved to the GPU of the first CuPy
  input: the results are CuPy arrays. Without CuPy inputs `fn` runs as it is.

    >>> wrapped = wrap_numpy(lambda x: x * 2)
    >>> wrapped(np.arange(3))
    array([0, 2, 4])
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from numpile_runtime import is_device_array

from .pytree import tree_flatten, tree_map

_F = TypeVar("_F", bound=Callable[..., Any])

# The attribute that marks a `wrap_numpy` wrapper (`numpile.compile` compiles what it wraps).
WRAPPED_ATTRIBUTE = "_numpile_wrap_numpy"


def _on_device(result: Any, like: Any) -> Any:
    # CuPy is loaded (a CuPy array exists); it is looked up, never imported, here.
    module = sys.modules[type(like).__module__.partition(".")[0]]
    device = like.device

    def move(value: Any) -> Any:
        if type(value) is not np.ndarray:
            return value
        with device:
            return module.asarray(value)

    return tree_map(move, result)


def with_device_results(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` whose NumPy-array results move to the GPU of its first CuPy input (if any)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        result = fn(*args, **kwargs)
        leaves, _ = tree_flatten((args, kwargs))
        like = next((leaf for leaf in leaves if is_device_array(leaf)), None)
        return result if like is None else _on_device(result, like)

    return call


def wrap_numpy(fn: _F) -> _F:
    """Make the NumPy function `fn` take and return CuPy arrays, computing on their GPU.

    Use it under `numpile.compile` (fullgraph=True recommended: a graph break
    runs its Python part eagerly through CuPy's NumPy protocols):

        >>> @numpile.compile(fullgraph=True)  # doctest: +SKIP
        ... @wrap_numpy
        ... def numpy_fn(X, Y):
        ...     return np.sum(X[:, :, None] * Y[:, None, :], axis=(-2, -1))
        >>> Z = numpy_fn(cupy.ones((1024, 64)), cupy.ones((1024, 64)))  # doctest: +SKIP
        >>> type(Z).__module__  # doctest: +SKIP
        'cupy'
    """
    wrapped = functools.wraps(fn)(with_device_results(fn))
    # Compiled code traces `fn` itself through this attribute (as for compiled functions).
    wrapped._numpile_original = getattr(fn, "_numpile_original", fn)  # type: ignore[attr-defined]
    setattr(wrapped, WRAPPED_ATTRIBUTE, True)
    return wrapped  # type: ignore[return-value]
