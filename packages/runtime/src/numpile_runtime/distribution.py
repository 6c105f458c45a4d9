"""numpile's versions: each package's one version source is its `pyproject.toml`.

A package's `__version__` is the version its distribution was installed with
(`importlib.metadata`), so the number is written once, in `pyproject.toml`; an
editable install must be reinstalled after the number moves.

    >>> distribution_version("numpile-runtime") != UNKNOWN_VERSION
    True
    >>> distribution_version("numpile-no-such-package")
    '0+unknown'
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

__all__ = ["UNKNOWN_VERSION", "distribution_version"]

# NOTE: the version of a package run from source without being installed (PYTHONPATH).
UNKNOWN_VERSION = "0+unknown"


def distribution_version(name: str) -> str:
    """The installed version of distribution `name`, or `UNKNOWN_VERSION` when it is not installed.

    >>> distribution_version("numpile-runtime").count(".") >= 2
    True
    """
    try:
        return version(name)
    except PackageNotFoundError:
        return UNKNOWN_VERSION
