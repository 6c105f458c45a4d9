"""Host loops: a `for_loop` whose body has array-sized work runs its body compiled.

A loop whose body is not all 0-d work (`a[i, 1:] += a[i - 1, :-1]`, a stencil step per
time step, a carried array) cannot be scalar C (`codegen/c/loop_body.py`). Its extern
call then runs `host_loop`'s implementation instead of the `for_loop` op's: the body
graph is compiled once, on the loop's first run, into a module of its own (fused kernels;
mutation ops stay NumPy barriers, so in-place writes are never copied back), and called
once per iteration from a Python loop with the index and the carried values as arguments.

Only a body that computes at least `MIN_COMPILED_ELEMENTS` array elements per iteration
(static shapes) is compiled: below that a compiled call's fixed cost (its input checks,
extern calls for the index-dependent views, allocations) exceeds what fusion saves, and
the body runs with NumPy (`run_graph`). The first iteration always runs with NumPy: it
takes the initial values as they come (a Python `0.0` for a carried float64), and its
results have the carried types the body was compiled for. An iteration whose inputs the
compiled body refuses (its input checks run before anything is written) runs with NumPy.

    >>> impl = host_loop(lambda body: compile_graph(body).fn)  # doctest: +SKIP
    >>> impl(0, 5, 1, x, body=body, carried=0)  # doctest: +SKIP
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

from numpile_capture import ArrayMeta, Graph, run_graph

perf_log = logging.getLogger("numpile.perf_hints")
log = logging.getLogger("numpile.inductor")

# Elements computed per iteration from which a compiled body beats NumPy op by op: large
# stencil steps gain from fusion, small row updates lose to a call's fixed cost (the
# measurements are in docs/status.md).
MIN_COMPILED_ELEMENTS = 1 << 16

# What an input check of a compiled module says when it refuses an argument.
_REFUSED = "compiled graph input"


def host_loop(compile_body: Callable[[Graph], Callable[..., Any]]) -> Callable[..., Any]:
    """A `for_loop` implementation whose bodies run through `compile_body` (once each)."""
    compiled: dict[str, Callable[..., Any]] = {}

    def body_fn(body: Graph) -> Callable[..., Any]:
        key = body.structural_hash()
        found = compiled.get(key)
        if found is None and _elements(body) < MIN_COMPILED_ELEMENTS:
            found = _eager(body)
            compiled[key] = found
        if found is None:
            try:
                found = compile_body(body)
            except Exception as error:  # a fallback path: NumPy runs what does not compile
                log.warning("a loop body did not compile (%s); it runs with NumPy", error)
                found = _eager(body)
            compiled[key] = found
        return found

    def run(start: Any, stop: Any, step: Any, *values: Any, body: Graph, carried: int) -> Any:
        if step == 0:
            raise ValueError("range() arg 3 must not be zero")
        state = tuple(values[:carried])
        invariants = values[carried:]
        indices = iter(range(start, stop, step))
        first = next(indices, None)
        if first is None:
            return state
        state = tuple(run_graph(body, (first, *state, *invariants)))
        fn = body_fn(body)
        for index in indices:
            try:
                state = tuple(fn(index, *state, *invariants))
            except TypeError as error:
                if _REFUSED not in str(error):
                    raise
                state = tuple(run_graph(body, (index, *state, *invariants)))
        return state

    return run


def _elements(body: Graph) -> int:
    # Array elements the body's ops compute per iteration (0 for symbolic sizes).
    total = 0
    for node in body.nodes:
        meta = node.meta
        if node.op is None or not isinstance(meta, ArrayMeta):
            continue
        if not all(isinstance(d, int) for d in meta.shape):
            return 0
        total += math.prod(meta.shape)
    return total


def _eager(body: Graph) -> Callable[..., Any]:
    return lambda *values: run_graph(body, values)
