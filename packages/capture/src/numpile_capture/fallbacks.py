"""When compiled code runs eagerly instead: the warning, the errors, and their messages.

A function numpile cannot capture, or one past `cache_size_limit`, runs
eagerly with one `CaptureFallbackWarning`; numpile's own failures raise
`InternalCompilerError` (or run eagerly with `config.suppress_errors`).

    >>> issubclass(CaptureFallbackWarning, UserWarning)
    True
"""

from __future__ import annotations

import types
from collections.abc import Sequence

from .capture_result import Unsupported


class NumpilePerformanceWarning(UserWarning):
    """Compiled code runs slower than it could: split into several graphs, or eagerly.

    Each kind says once (per function, or per process) what happened, where, and what to
    do. Every warning numpile gives about speed is one, so one filter silences them all:
    `warnings.filterwarnings("ignore", category=numpile.NumpilePerformanceWarning)`.

        >>> issubclass(NumpilePerformanceWarning, UserWarning)
        True
    """


class CaptureFallbackWarning(NumpilePerformanceWarning):
    """A compiled function runs eagerly: it could not be captured, or hit the cache limit.

    Silence it with `warnings.filterwarnings("ignore", category=CaptureFallbackWarning)`.
    """


class InternalCompilerError(RuntimeError):
    """numpile itself failed (e.g. guards rejected the inputs they were built from).

    Set `config.suppress_errors = True` to run such functions eagerly instead.
    """


class DynamicCompileError(Exception):
    """A capture or backend compile with symbolic sizes failed: the call compiles static.

    Internal to the dispatcher; never reaches the user.
    """


def where(fn: types.FunctionType) -> str:
    """`file:line` of `fn`'s definition.

    >>> where(where).endswith(".py:42")  # doctest: +SKIP
    True
    """
    code = fn.__code__
    return f"{code.co_filename}:{code.co_firstlineno}"


def unsupported_message(fn: types.FunctionType, exc: Unsupported) -> str:
    """The warning for a function that could not be captured and now runs eagerly."""
    name = fn.__qualname__
    return (
        f"numpile could not capture {name}: {exc}; running {name} eagerly from now on "
        "(numpile.reset() forgets this). Pass fullgraph=True to make this an error, or "
        "silence it with warnings.filterwarnings('ignore', "
        "category=numpile_capture.CaptureFallbackWarning)."
    )


def limit_message(fn: types.FunctionType, failures: Sequence[str], limit: int) -> str:
    """The warning for a function that hit the cache size limit."""
    last = failures[0] if failures else "unknown"
    return (
        f"{fn.__qualname__} ({where(fn)}) hit numpile.config.cache_size_limit "
        f"({limit}); new kinds of inputs run eagerly from now on "
        f"(cached compiled code is still used). Last recompile reason: {last}. Raise "
        "numpile.config.cache_size_limit, or make the inputs more uniform; the logger "
        "NUMPILE_LOGS=recompiles shows every recompile."
    )


def fail_on_recompile_message(fn: types.FunctionType, failures: Sequence[str]) -> str:
    """The error of the "fail_on_recompile" stance, with the guard failures that caused it."""
    message = (
        "Detected recompile when numpile.compile stance is 'fail_on_recompile'. "
        f"function: {fn.__qualname__!r}, file: {fn.__code__.co_filename!r}, "
        f"line: {fn.__code__.co_firstlineno}"
    )
    if failures:
        lines = "\n".join(f"    - {text}" for text in failures)
        message += f"\n  triggered by the following guard failure(s):\n{lines}"
    return message
