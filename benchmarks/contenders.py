"""The contenders: who runs each workload, and why one is "n/a" when it cannot.

A contender turns a workload into a callable taking the workload's inputs: NumPy runs the
function as is, numpile and ``torch.compile`` compile the very same function object, numexpr
runs the workload's numexpr spelling. A contender that is missing, or cannot express a
workload, answers ``Unavailable`` with a reason, which the report prints as ``n/a``.

    >>> from benchmarks.workloads import find_workloads
    >>> prepared = NumpyContender().prepare(find_workloads(["tiny_call_f64"])[0])
    >>> callable(prepared)
    True
"""

from __future__ import annotations

import functools
import importlib
import logging
from collections.abc import Callable
from typing import Any, Protocol

import attrs

from .workloads import Workload

_log = logging.getLogger("numpile.benchmarks")


@attrs.frozen
class Unavailable:
    """Why a contender has no number for a workload (printed as ``n/a``).

    >>> Unavailable("torch is not installed").reason
    'torch is not installed'
    """

    reason: str


class Contender(Protocol):
    """Something that can run workloads: a name, a version, and ``prepare``.

    ``compiles`` marks a JIT: its first call minus its steady call is reported as a compile
    time, and it gets a warm-start measurement in a fresh process.
    """

    name: str
    compiles: bool

    def version(self) -> str:
        """The version of the library behind it, or ``"absent"``."""
        ...

    def prepare(self, workload: Workload) -> Callable[..., Any] | Unavailable:
        """A callable taking ``workload``'s inputs, or why there is none."""
        ...


def contender_named(name: str, *, threads: int | None = None) -> Contender:
    """The contender a report names: ``numpy``, ``numpile``, ``numpile[eager]``, ``numexpr``,
    ``torch`` (torch enabled).

        >>> contender_named("numpile[eager]").name
        'numpile[eager]'
    """
    if name == "numpy":
        return NumpyContender()
    if name == "numexpr":
        return NumexprContender(threads=threads)
    if name == "torch":
        return TorchContender(enabled=True, threads=threads)
    if name == "numpile":
        return NumpileContender()
    if name.startswith("numpile[") and name.endswith("]"):
        return NumpileContender(backend=name[len("numpile[") : -1])
    raise ValueError(f"unknown contender {name!r}; use numpy, numpile[, BACKEND], numexpr, torch")


def _import_or_none(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        return None
    except Exception as error:  # a broken install reads as absent, with a reason
        _log.warning("importing %s failed: %r", module, error)
        return None


class NumpyContender:
    """NumPy eager: the reference every ratio is taken against.

    >>> NumpyContender().name
    'numpy'
    """

    name = "numpy"
    compiles = False

    def version(self) -> str:
        """NumPy's version."""
        import numpy as np

        return np.__version__

    def prepare(self, workload: Workload) -> Callable[..., Any] | Unavailable:
        """The workload's own function."""
        return workload.fn


class NumpileContender:
    """numpile with ``backend`` (``"inductor"`` by default), compiling the same function.

    It is named ``numpile`` for the inductor backend and ``numpile[<backend>]`` otherwise.

    >>> NumpileContender(backend="eager").name
    'numpile[eager]'
    """

    def __init__(self, *, backend: str = "inductor") -> None:
        self.backend = backend
        self.compiles = True
        self.name = "numpile" if backend == "inductor" else f"numpile[{backend}]"
        self._module = _import_or_none("numpile")

    def version(self) -> str:
        """numpile's version, or ``"absent"``."""
        return str(getattr(self._module, "__version__", "absent"))

    def missing(self) -> str | None:
        """Why numpile cannot run at all right now, or None when it can."""
        if self._module is None:
            return "numpile is not importable"
        if not hasattr(self._module, "compile"):
            return "numpile.compile does not exist yet"
        list_backends = getattr(self._module, "list_backends", None)
        if list_backends is not None:
            try:
                # Every name, none loaded: listing without tags to exclude imports no backend
                # (the triton backend's import costs about 0.4 s of a warm start's import).
                backends = list(list_backends(exclude_tags=None))
            except Exception as error:  # report, do not crash the suite
                return f"numpile.list_backends() raised {error!r}"
            if self.backend not in backends:
                return f"backend {self.backend!r} is not registered (have {backends})"
        return None

    def prepare(self, workload: Workload) -> Callable[..., Any] | Unavailable:
        """``numpile.compile(workload.fn, backend=...)``; compiling happens on the first call."""
        reason = self.missing()
        if reason is not None:
            return Unavailable(reason)
        reset = getattr(self._module, "reset", None)
        if reset is not None:
            reset()
        try:
            compiled = self._module.compile(workload.fn, backend=self.backend)
        except Exception as error:  # a compiler failure is a result, not a crash
            return Unavailable(f"numpile.compile raised {error!r}")
        return compiled  # type: ignore[no-any-return]


class NumexprContender:
    """numexpr, where the workload has a numexpr spelling.

    >>> NumexprContender().name
    'numexpr'
    """

    name = "numexpr"
    compiles = False

    def __init__(self, *, threads: int | None = None) -> None:
        self._module = _import_or_none("numexpr")
        if self._module is not None and threads is not None:
            self._module.set_num_threads(threads)

    def version(self) -> str:
        """numexpr's version, or ``"absent"``."""
        return str(getattr(self._module, "__version__", "absent"))

    def prepare(self, workload: Workload) -> Callable[..., Any] | Unavailable:
        """The workload's numexpr spelling bound to the numexpr module."""
        if self._module is None:
            return Unavailable("numexpr is not installed")
        if workload.numexpr_fn is None:
            return Unavailable(workload.numexpr_note or "not expressible in numexpr")
        return functools.partial(workload.numexpr_fn, self._module)


class TorchContender:
    """``torch.compile`` of the same NumPy function, called with NumPy arrays.

    torch traces the NumPy calls itself and returns NumPy arrays. Dynamo's caches are reset
    before each workload, so every workload is a cold compile.

        >>> TorchContender(enabled=False).prepare  # doctest: +ELLIPSIS
        <bound method TorchContender.prepare of ...>
    """

    name = "torch"
    compiles = True

    def __init__(self, *, enabled: bool, threads: int | None = None) -> None:
        self._module = _import_or_none("torch") if enabled else None
        self._enabled = enabled
        if self._module is not None and threads is not None:
            self._module.set_num_threads(threads)

    def version(self) -> str:
        """torch's version, or ``"absent"``."""
        return str(getattr(self._module, "__version__", "absent"))

    def missing(self) -> str | None:
        """Why torch.compile cannot run, or None when it can."""
        if not self._enabled:
            return "torch not requested (pass --torch)"
        if self._module is None:
            return "torch is not installed"
        return None

    def prepare(self, workload: Workload) -> Callable[..., Any] | Unavailable:
        """``torch.compile(workload.fn)`` after a reset of dynamo's caches."""
        reason = self.missing()
        if reason is not None:
            return Unavailable(reason)
        torch = self._module
        assert torch is not None  # missing() said so
        torch._dynamo.reset()
        return torch.compile(workload.fn)  # type: ignore[no-any-return]
