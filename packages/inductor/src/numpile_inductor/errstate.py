"""NumPy's floating-point error state, as compiled graphs honour it.

NumPy checks the CPU's floating-point flags after each ufunc loop and warns, raises,
calls a function or logs, as `np.seterr` / `np.errstate` say. Fused kernels do not
check the flags. So a compiled graph runs op by op with NumPy (`run_graph`) whenever
the error state asks for more than a warning in some category ("raise", "call",
"print" or "log"): `FloatingPointError` and error callbacks then come exactly as in
eager. Under the default state ("warn" / "ignore") the kernels run, and NumPy's
RuntimeWarnings (division by zero, invalid values) are not emitted.

    >>> fn = honouring_errstate(kernel_fn, graph)  # doctest: +SKIP
"""

from __future__ import annotations

import contextvars
import importlib
from collections.abc import Callable
from typing import Any

import numpy as np

from numpile_capture import Graph, run_graph


def _state_variable() -> contextvars.ContextVar[Any] | None:
    # NumPy 2 keeps the error state in a context variable, a new object per change; with
    # another layout, None (np.geterr() is then read on every call).
    try:
        module = importlib.import_module("numpy._core._multiarray_umath")
    except ImportError:  # pragma: no cover
        return None
    variable = getattr(module, "_extobj_contextvar", None)
    return variable if isinstance(variable, contextvars.ContextVar) else None


_state_var = _state_variable()

_STRICT_MODES = frozenset({"raise", "call", "print", "log"})


def errstate_is_strict() -> bool:
    """True when NumPy's error state asks for more than a warning in some category.

    >>> with np.errstate(divide="raise"):
    ...     errstate_is_strict()
    True
    >>> errstate_is_strict()
    False
    """
    return any(mode in _STRICT_MODES for mode in np.geterr().values())


def honouring_errstate(call: Callable[..., Any], graph: Graph) -> Callable[..., Any]:
    """`call`, except that `graph` runs op by op with NumPy under a strict error state.

    The state is read once per change of NumPy's error-state object: a call pays an
    identity check and one Python frame (about 0.3 us measured).
    """
    if _state_var is None:  # pragma: no cover - see the import above

        def run_checking(*args: Any) -> Any:
            if errstate_is_strict():
                return run_graph(graph, args)
            return call(*args)

        return run_checking

    get_state = _state_var.get
    seen_state = get_state()  # held, so its id is never reused while compared
    strict = errstate_is_strict()

    def run(*args: Any) -> Any:
        nonlocal seen_state, strict
        state = get_state()
        if state is not seen_state:
            seen_state = state
            strict = errstate_is_strict()
        if strict:
            return run_graph(graph, args)
        return call(*args)

    return run
