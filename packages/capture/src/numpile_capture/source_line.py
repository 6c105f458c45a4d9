"""Where in the user's code a graph node came from, and calls made as if from there.

NumPy reports a floating-point warning at the Python line that called the ufunc: the
warnings module reads the calling frame's file, line and globals (the module's name,
filters and `__warningregistry__`). A graph that runs op by op calls each op through
`SourceLine.call`, a one-line function whose code claims the user's file and line and
whose globals are the user's module's, so its warnings (and the tracebacks of warnings
turned into errors) name the user's line, exactly as eager NumPy's do.

    >>> import warnings
    >>> import numpy as np
    >>> import builtins
    >>> line = SourceLine("user.py", 7, {"__name__": "user", "__builtins__": builtins})
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = line.call(np.log, (np.zeros(1),), {})
    >>> (caught[0].filename, caught[0].lineno)
    ('user.py', 7)
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import attrs


# One line each, so the call sits on the code's first line (`SourceLine` moves that line).
def _call_here(fn: Any, args: Any, kwargs: Any) -> Any: return fn(*args, **kwargs)  # fmt: skip


def _call_method_here(name: str, args: Any, kwargs: Any) -> Any: return getattr(args[0], name)(*args[1:], **kwargs)  # noqa: E501  # fmt: skip


@attrs.frozen(eq=False)
class SourceLine:
    """A node's origin: the user's file, line and module globals (see the module docstring)."""

    filename: str
    lineno: int
    module_globals: dict[str, Any] = attrs.field(repr=False)
    _call: Callable[[Any, Any, Any], Any] = attrs.field(init=False, repr=False)
    _call_method: Callable[[Any, Any, Any], Any] = attrs.field(init=False, repr=False)

    @_call.default
    def _make_call(self) -> Callable[[Any, Any, Any], Any]:
        return self._here(_call_here)

    @_call_method.default
    def _make_call_method(self) -> Callable[[Any, Any, Any], Any]:
        return self._here(_call_method_here)

    def _here(self, template: Callable[[Any, Any, Any], Any]) -> Callable[[Any, Any, Any], Any]:
        code = template.__code__.replace(
            co_filename=self.filename,
            co_firstlineno=self.lineno,
            co_name="<numpile graph op>",
            co_qualname="<numpile graph op>",
        )
        function: Callable[[Any, Any, Any], Any] = types.FunctionType(code, self.module_globals)
        return function

    def call(self, fn: Callable[..., Any], args: Any, kwargs: dict[str, Any]) -> Any:
        """`fn(*args, **kwargs)`, called from a frame at this line (warnings name it)."""
        return self._call(fn, args, kwargs)

    def call_method(self, name: str, args: Any, kwargs: dict[str, Any]) -> Any:
        """`args[0].<name>(*args[1:], **kwargs)`, called from a frame at this line."""
        return self._call_method(name, args, kwargs)
