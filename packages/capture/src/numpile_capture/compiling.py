"""Whether the code running now is being compiled: `is_compiling` and its two siblings.

The tracer folds a call to `is_compiling()` or `is_dynamo_compiling()` to the
constant True, so code can take a different path when captured; run eagerly,
both return False. While a backend compiles a graph (and while an
`allow_in_graph` function runs on example inputs to learn its result's
metadata), `is_compiling()` is True and `is_dynamo_compiling()` False, as in
torch, where the first covers every tracer and the second only the bytecode
one. `is_exporting()` is False: numpile has no export yet.

    >>> is_compiling(), is_dynamo_compiling(), is_exporting()
    (False, False, False)
    >>> with backend_compiling():
    ...     is_compiling(), is_dynamo_compiling()
    (True, False)
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

_state = threading.local()


def is_compiling() -> bool:
    """True inside captured code and while a backend compiles; False when run eagerly.

    >>> is_compiling()
    False
    """
    return bool(getattr(_state, "depth", 0))


def is_dynamo_compiling() -> bool:
    """True only inside captured code (capture folds the call); False in backends and eagerly.

    >>> is_dynamo_compiling()
    False
    """
    return False


def is_exporting() -> bool:
    """False: numpile has no export; kept for code written against `torch.compiler`.

    >>> is_exporting()
    False
    """
    return False


@contextlib.contextmanager
def backend_compiling() -> Iterator[None]:
    """Inside the block, `is_compiling()` is True (a backend or a meta rule is at work).

    >>> with backend_compiling():
    ...     is_compiling()
    True
    """
    _state.depth = getattr(_state, "depth", 0) + 1
    try:
        yield
    finally:
        _state.depth -= 1


# NOTE: what capture folds each probe's call to (the table the tracer and builder consult).
COMPILE_PROBES: dict[Callable[[], bool], bool] = {
    is_compiling: True,
    is_dynamo_compiling: True,
    is_exporting: False,
}
