"""One kernel of the scientific benchmark set: a plain NumPy function and its inputs.

A family module (``stencils``, ``linalg``, ``spectral``, ...) lists its kernels in a
module-level ``KERNELS``; the runner times each under NumPy eager, numpile, ``numba.njit``
of the same source (where ``numba`` is true), ``jax.jit`` of ``jax_port`` (where one is
given) and ``torch.compile`` of the same source, in one run.

    >>> import numpy as np
    >>> k = ScienceKernel("axpy", "demo", lambda a, x, y: a * x + y,
    ...                   lambda size: (2.0, np.ones(size), np.ones(size)), sizes=(8, 1000))
    >>> k.make_inputs(k.sizes[0])[1].shape
    (8,)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs


@attrs.frozen
class ScienceKernel:
    """A scientific kernel as a NumPy user writes it, with what each peer needs.

    ``make_inputs(size)`` returns fresh inputs (the same values for the same size: seed
    any generator from ``size``); ``sizes`` are (quick, full), the full size chosen so NumPy
    takes at least about a millisecond. ``jax_port`` takes ``jax.numpy`` as its first
    argument and the inputs after it (``None``: no one-line port). ``mutates`` marks a kernel
    that writes into its inputs, so the runner copies them before every call.
    """

    name: str
    family: str
    fn: Callable[..., Any]
    make_inputs: Callable[[int], tuple[Any, ...]]
    sizes: tuple[int, int]
    numba: bool = True
    jax_port: Callable[..., Any] | None = None
    mutates: bool = False
    rtol: float = 1e-7
    atol: float = 1e-9
