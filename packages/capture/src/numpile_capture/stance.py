"""The compiler's stance: how compiled functions behave, switchable without recompiling.

`set_stance` works as a function, a context manager and a decorator:

    >>> set_stance("force_eager")        # from now on, compiled functions run eagerly
    set_stance('force_eager')
    >>> set_stance("default")
    set_stance('default')
    >>> with set_stance("force_eager"):  # only inside the block
    ...     pass
    >>> @set_stance("force_eager")       # only while bar runs
    ... def bar(x):
    ...     return foo(x)

Stances: "default" (compile as usual), "force_eager" (ignore every compile
directive), "eager_on_recompile" (use cached compiled code whose guards pass;
run eagerly whenever a compile would be needed), "fail_on_recompile" (raise
instead of recompiling a function that already has compiled code).

The stance is process-wide. It cannot change inside a compiled region (a
compiled function while it captures or runs): that raises RuntimeError.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Any, TypeVar

import attrs

from numpile_guards import advance_epoch

from .backends import BackendFn, lookup_backend
from .region import ThreadRegion
from .trace_rules import ForbiddenCallError, forbid_in_graph

_INSIDE = "inside a compiled region; set the stance outside the compiled function (around the call)"

STANCES = ("default", "force_eager", "eager_on_recompile", "fail_on_recompile")

_F = TypeVar("_F", bound=Callable[..., Any])


@attrs.frozen
class Stance:
    """One stance: its name, whether guards may be skipped, and a forced backend.

    >>> Stance().name
    'default'
    """

    name: str = "default"
    skip_guard_eval_unsafe: bool = False
    force_backend: str | BackendFn | None = None


# NOTE: the process-wide current stance (a module global by design, as in torch).
_current = Stance()

# NOTE: how deep this thread is in compiled regions (per thread).
_region = ThreadRegion()


def current_stance() -> Stance:
    """The stance in effect now.

    >>> current_stance().name
    'default'
    """
    return _current


def in_compiled_region() -> bool:
    """True while a compiled function captures or runs on this thread.

    >>> in_compiled_region()
    False
    """
    return _region.active


@contextlib.contextmanager
def compiled_region() -> Iterator[None]:
    """Mark the enclosed code as a compiled region (used by the dispatcher).

    >>> with compiled_region():
    ...     in_compiled_region()
    True
    """
    with _region.entered():
        yield


def _install(stance: Stance) -> Stance:
    global _current
    if in_compiled_region():
        raise ForbiddenCallError(f"attempted to call numpile.set_stance {_INSIDE}")
    previous = _current
    _current = stance
    # Compiled functions look their entries up again under the new stance.
    advance_epoch()
    return previous


def _validate(stance: str, force_backend: str | BackendFn | None) -> None:
    if stance not in STANCES:
        raise ValueError(f"unknown stance {stance!r}; valid stances: {', '.join(STANCES)}")
    if force_backend is not None:
        if stance != "default":
            raise RuntimeError(
                f"force_backend can only be used with stance 'default', not {stance!r}"
            )
        lookup_backend(force_backend)


class set_stance:  # noqa: N801 - a function-like API that is also a context manager
    """Set the compiler's stance: call it, use it in `with`, or decorate a function.

    Called, it sets the stance at once and keeps it; as a context manager the
    previous stance comes back on exit; as a decorator the stance holds only
    while the decorated function runs.

        >>> with set_stance("eager_on_recompile"):
        ...     current_stance().name
        'eager_on_recompile'
        >>> current_stance().name
        'default'
    """

    def __init__(
        self,
        stance: str = "default",
        *,
        skip_guard_eval_unsafe: bool = False,
        force_backend: str | BackendFn | None = None,
    ) -> None:
        _validate(stance, force_backend)
        self.stance = Stance(stance, skip_guard_eval_unsafe, force_backend)
        self._previous = _install(self.stance)

    def __enter__(self) -> set_stance:
        _install(self.stance)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        _install(self._previous)

    def __call__(self, fn: _F) -> _F:
        # Used as a decorator: undo the stance set by __init__, apply it per call instead.
        _install(self._previous)
        stance = self.stance

        @functools.wraps(fn)
        def with_stance(*args: Any, **kwargs: Any) -> Any:
            previous = _install(stance)
            try:
                return fn(*args, **kwargs)
            finally:
                _install(previous)

        # Called from compiled code it would switch the stance mid-region: forbidden, as torch.
        forbid_in_graph(
            with_stance,
            f"{fn.__qualname__} is decorated with set_stance, which cannot run {_INSIDE}",
        )
        return with_stance  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"set_stance({self.stance.name!r})"


forbid_in_graph(set_stance, f"numpile.set_stance cannot be called {_INSIDE}")
