"""The scientific benchmark set (issue 24): kernels written as scientists write NumPy.

``python -m benchmarks.science`` times every kernel of the family modules below under NumPy
eager, numpile, Numba, JAX and torch.compile in one run (first call and warm time).

    >>> from benchmarks.science.kernel import ScienceKernel
    >>> all(isinstance(k, ScienceKernel) for k in all_kernels())
    True
"""

from __future__ import annotations

import importlib

from .kernel import ScienceKernel

FAMILIES = ("stencils", "linalg", "spectral")
"""Family modules, each with a ``KERNELS`` list; a module not written yet is skipped."""


def all_kernels() -> list[ScienceKernel]:
    """Every kernel of every family module that exists, in family order."""
    kernels: list[ScienceKernel] = []
    for family in FAMILIES:
        try:
            module = importlib.import_module(f"{__name__}.{family}")
        except ModuleNotFoundError as error:
            if error.name != f"{__name__}.{family}":
                raise
            continue
        kernels.extend(module.KERNELS)
    return kernels
