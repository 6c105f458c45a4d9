"""Without a C compiler: graphs run op by op with NumPy, with one warning per process.

The inductor turns graphs into C; where no compiler can be found (none installed,
`CC` names a missing one, Python's headers are missing) it would fail every
compiled call. Instead, by default, the backend returns a callable that runs the
graph op by op with NumPy (`run_graph`: the results of eager NumPy, without a
speed-up) and warns once per process with the fix. `cpp.no_compiler="raise"`
(or env `NUMPILE_NO_COMPILER=raise`) makes it an error again.

    >>> issubclass(NoCompilerWarning, UserWarning)
    True
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpile_runtime as rt
from numpile_capture import Graph, NumpilePerformanceWarning, run_graph
from numpile_runtime import new_lock

__all__ = ["NoCompilerWarning", "op_by_op"]

# NOTE: whether this process has warned about the missing compiler (once per process).
_WARNED = False
_WARNED_LOCK = new_lock()


class NoCompilerWarning(NumpilePerformanceWarning):
    """No C compiler: compiled functions run op by op with NumPy (same results, no speed-up).

    The message says how to install one or point `CC` at one.
    """


def op_by_op(graph: Graph, error: rt.CompilerNotFoundError) -> Callable[..., Any]:
    """A callable that runs `graph` with NumPy, op by op; warns once per process.

    >>> fn = op_by_op(graph, rt.CompilerNotFoundError("no C compiler found"))  # doctest: +SKIP
    """
    _warn_once(error)
    rt.count("inductor_no_compiler_fallback")

    def run(*inputs: Any) -> Any:
        return run_graph(graph, inputs)

    return run


def no_compiler_message(error: rt.CompilerNotFoundError) -> str:
    """The warning's text: what is missing, what numpile does instead, and the fixes.

    >>> "apt-get install gcc" in no_compiler_message(rt.CompilerNotFoundError("none"))
    True
    """
    # The runtime's own error (what is missing), not the backend's advice for raising it.
    cause = error.__cause__ if isinstance(error.__cause__, rt.CompilerNotFoundError) else error
    return (
        f"numpile found no usable C compiler ({cause}), so compiled functions run op by op "
        "with NumPy: the same results, without a speed-up. To compile them, install one "
        "(apt-get install gcc, or clang) or point CC at one (CC=/usr/bin/gcc); "
        "`python -m numpile info` shows what numpile finds. To make this an error instead, "
        "set NUMPILE_NO_COMPILER=raise or pass options={'cpp.no_compiler': 'raise'}."
    )


def _warn_once(error: rt.CompilerNotFoundError) -> None:
    global _WARNED
    with _WARNED_LOCK:
        if _WARNED:
            return
        _WARNED = True
    warnings.warn(no_compiler_message(error), NoCompilerWarning, stacklevel=_user_level())


def _user_level() -> int:
    # The first frame outside numpile's packages: the user's call that compiled.
    import sys

    frame = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith("numpile"):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level


def _reset_warning_for_tests() -> None:
    global _WARNED
    with _WARNED_LOCK:
        _WARNED = False
