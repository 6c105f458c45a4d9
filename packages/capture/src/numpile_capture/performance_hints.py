"""Performance hints: one `NumpilePerformanceWarning` per function that runs as several graphs.

A graph break is silent by design (it is not an error), but a function that splits
into eight graphs around an `np.fft` call runs slower than it could, and users
should not have to ask `explain` to find out. So the first break of a decorated
function warns once per code object, naming the break and its line; every break
is logged on the `perf_hints` channel (`NUMPILE_LOGS=perf_hints`), each time a
graph around it is compiled. `config.performance_warnings = False` silences
the warning (the log stays); so does a `warnings` filter on the category.

    >>> from numpile_capture.fallbacks import NumpilePerformanceWarning
    >>> issubclass(NumpilePerformanceWarning, UserWarning)
    True
"""

from __future__ import annotations

import logging
import types
import warnings
import weakref

from numpile_runtime import new_lock

from .config import config
from .fallbacks import NumpilePerformanceWarning, where

__all__ = ["graph_break_message", "report_graph_break"]

perf_log = logging.getLogger("numpile.perf_hints")

# NOTE: the code objects whose first break was warned about (weak: a function that is gone
# is forgotten).
_WARNED: weakref.WeakSet[types.CodeType] = weakref.WeakSet()
_LOCK = new_lock()


def report_graph_break(
    fn: types.FunctionType,
    reason: str,
    filename: str | None,
    lineno: int | None,
    *,
    quiet: bool,
) -> None:
    """Log a break of `fn` on `perf_hints`; warn once per code object unless `quiet`.

    `quiet` functions are the resume functions and callees numpile compiled itself:
    their breaks are logged, and the user's function already warned.

        >>> def f(x):
        ...     return x
        >>> report_graph_break(f, "calling print", None, None, quiet=True)
    """
    code = fn.__code__
    with _LOCK:
        first = not quiet and code not in _WARNED
        if first:
            _WARNED.add(code)
    at = f"{filename}:{lineno}" if filename and lineno else where(fn)
    perf_log.info("graph break in %s (%s) at %s: %s", fn.__qualname__, where(fn), at, reason)
    if first and config.performance_warnings:
        warnings.warn_explicit(
            graph_break_message(fn, reason, at),
            NumpilePerformanceWarning,
            filename or code.co_filename,
            lineno or code.co_firstlineno,
            # A function made by exec() has no module; warnings then records nothing.
            module=fn.__module__ or "__main__",
        )


def graph_break_message(fn: types.FunctionType, reason: str, at: str) -> str:
    """The warning for the first graph break of `fn`.

    >>> def f(x):
    ...     return x
    >>> "graph break at m.py:3" in graph_break_message(f, "calling print", "m.py:3")
    True
    """
    name = fn.__qualname__
    return (
        f"numpile runs {name} ({where(fn)}) as more than one compiled graph, with Python in "
        f"between: graph break at {at}: {reason}. Moving that code out of {name} (or "
        f"replacing it) makes it one graph; numpile.explain({fn.__name__})(...) lists every "
        "break and NUMPILE_LOGS=perf_hints logs each one. Silence this with "
        "numpile.config.performance_warnings = False or a warnings filter on "
        "numpile.NumpilePerformanceWarning."
    )
