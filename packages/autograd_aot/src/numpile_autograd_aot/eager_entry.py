"""Plain Python entry functions for transforms that compile their own root (`vmap`,
`jacfwd`/`jacrev` called eagerly): a forwarding function in the user's namespace.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

__all__ = ["forwarding_function", "in_namespace_of"]


def forwarding_function(run: Callable[..., Any]) -> types.FunctionType:
    """A plain Python function calling `run`, so that `compile` can take it as a root."""

    def batched(*args: Any, **kwargs: Any) -> Any:
        return run(*args, **kwargs)

    return batched  # type: ignore[return-value]


def in_namespace_of(fn: Any, function: types.FunctionType) -> types.FunctionType:
    """`function` with the globals of the user's function under `fn` (through transform
    wrappers): compiled as the root, it may then read the globals of the code it inlines."""
    inner = fn
    while not isinstance(inner, types.FunctionType) or hasattr(inner, "__wrapped__"):
        following = getattr(inner, "__wrapped__", None) or getattr(inner, "fn", None)
        if following is None or following is inner:
            break
        inner = following
    if not isinstance(inner, types.FunctionType):
        return function
    return types.FunctionType(
        function.__code__,
        inner.__globals__,
        function.__name__,
        function.__defaults__,
        function.__closure__,
    )
