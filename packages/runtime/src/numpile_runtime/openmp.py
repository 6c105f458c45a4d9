"""OpenMP's environment defaults: the one place numpile sets `OMP_*` variables.

libgomp reads its settings once, when it loads, and a process has one libgomp
(torch's, if torch was imported first, is the one numpile's kernels bind to), so
the defaults are set as early as possible: when `numpile_runtime` is imported,
before any kernel module loads. A value the user set wins.

    >>> import os
    >>> apply_openmp_defaults()
    >>> os.environ["OMP_WAIT_POLICY"] in ("PASSIVE", os.environ["OMP_WAIT_POLICY"])
    True
"""

from __future__ import annotations

import os

__all__ = ["OPENMP_DEFAULTS", "apply_openmp_defaults"]

# NOTE: OpenMP variables numpile sets unless the user did. Idle threads sleep instead of
# spinning: kernels alternate with NumPy and BLAS calls on the same cores, and spinning
# threads starve them (packages/inductor/README.md has the measured slowdowns).
OPENMP_DEFAULTS: dict[str, str] = {"OMP_WAIT_POLICY": "PASSIVE"}


def apply_openmp_defaults() -> None:
    """Set each of `OPENMP_DEFAULTS` in `os.environ` that the user has not set.

    >>> apply_openmp_defaults()  # idempotent: the module's import already did it
    """
    for name, value in OPENMP_DEFAULTS.items():
        os.environ.setdefault(name, value)
