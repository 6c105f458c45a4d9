"""numpile's versions: each package's one version source is its `pyproject.toml`.

A package's `__version__` is the version its distribution was installed with
(`importlib.metadata`), so the number is written once, in `pyproject.toml`; an
editable install must be reinstalled after the number moves. Each package resolves it
when first asked (its module `__getattr__`): `importlib.metadata` costs about 20 ms of
CPU to import, which a process that never asks for a version does not pay.

    >>> distribution_version("numpile-runtime") != UNKNOWN_VERSION
    True
    >>> distribution_version("numpile-no-such-package")
    '0+unknown'
"""

from __future__ import annotations

import functools

__all__ = ["UNKNOWN_VERSION", "distribution_version"]

# NOTE: the version of a package run from source without being installed (PYTHONPATH).
UNKNOWN_VERSION = "0+unknown"


@functools.cache
def distribution_version(name: str) -> str:
    """The installed version of distribution `name`, or `UNKNOWN_VERSION` when it is not installed.

    >>> distribution_version("numpile-runtime").count(".") >= 2
    True
    """
    # Late import: only a version asked for reads the installed metadata.
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return UNKNOWN_VERSION
