"""The dispatcher's fast path: the entry the last call hit, checked first while it is valid.

Each test calls a compiled function at least twice first, so the second call took the
fast path and the function remembers a hit; then it changes what the hit depended on
(the stance, the caches, a region, the function's defaults or code) and checks that the
next call sees the change. The fake capture compiles any `f(x)` to `x + 1`; eagerly,
`minus_one` gives `x - 1`, so the result says which path ran.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from plus_one_backend import PlusOne, minus_one

from numpile_capture import (
    CaptureResult,
    CompiledFunction,
    Graph,
    disable,
    register_backend,
    reset,
    run_graph,
    set_stance,
)
from numpile_guards import EPOCH, cache_for


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    reset()
    yield
    reset()
    set_stance("default")


@register_backend(name="fast_path_second_backend")
def _second_backend(graph: Graph, example_inputs: Any) -> Any:
    # Another backend (this layer has only "eager"): the graph run op by op.
    return lambda *args: run_graph(graph, args)


def make(capture: PlusOne) -> Any:
    return CompiledFunction(minus_one, capture_fn=capture, backend="eager")


def warm(compiled: Any, x: Any) -> None:
    # Two calls: the first compiles, the second hits and is remembered.
    compiled(x)
    np.testing.assert_array_equal(compiled(x), x + 1)
    assert compiled._hit.epoch is EPOCH.current


def test_the_last_hit_is_checked_first_and_a_miss_of_it_looks_up_the_rest() -> None:
    capture = PlusOne()
    f = make(capture)
    small, large = np.zeros(3), np.zeros(4)
    warm(f, small)
    warm(f, large)
    large_entry = cache_for(minus_one.__code__).entries[0]
    assert f._hit.compiled is large_entry.compiled
    # The remembered entry rejects `small`: the full lookup finds the other entry, which is
    # remembered in turn; nothing is captured again.
    np.testing.assert_array_equal(f(small), small + 1)
    assert f._hit.compiled is cache_for(minus_one.__code__).entries[1].compiled
    for _ in range(3):
        np.testing.assert_array_equal(f(large), large + 1)
        np.testing.assert_array_equal(f(small), small + 1)
    assert capture.calls == 2


def test_a_new_stance_is_seen_by_a_function_that_hit_before() -> None:
    capture = PlusOne()
    f = make(capture)
    x = np.zeros(3)
    warm(f, x)
    with set_stance("force_eager"):
        np.testing.assert_array_equal(f(x), x - 1)
        np.testing.assert_array_equal(f(x), x - 1)
    np.testing.assert_array_equal(f(x), x + 1)
    set_stance("force_eager")
    np.testing.assert_array_equal(f(x), x - 1)
    set_stance("default")
    np.testing.assert_array_equal(f(x), x + 1)
    assert capture.calls == 1


def test_a_forced_backend_is_seen_by_a_function_that_hit_before() -> None:
    capture = PlusOne()
    f = make(capture)
    x = np.zeros(3)
    warm(f, x)
    with set_stance(force_backend="fast_path_second_backend"):
        f(x)
    # The forced backend is another tag: one more compile, then the default one hits again.
    assert capture.calls == 2
    np.testing.assert_array_equal(f(x), x + 1)
    assert capture.calls == 2


def test_eager_on_recompile_after_hits_runs_new_inputs_eagerly() -> None:
    capture = PlusOne()
    f = make(capture)
    x = np.zeros(3)
    warm(f, x)
    with set_stance("eager_on_recompile"):
        np.testing.assert_array_equal(f(np.zeros(5)), np.zeros(5) - 1)
        np.testing.assert_array_equal(f(x), x + 1)
    assert capture.calls == 1


def test_reset_after_hits_captures_again() -> None:
    capture = PlusOne()
    f = make(capture)
    x = np.zeros(3)
    warm(f, x)
    reset()
    np.testing.assert_array_equal(f(x), x + 1)
    assert capture.calls == 2


def test_clearing_one_cache_after_hits_captures_again() -> None:
    capture = PlusOne()
    f = make(capture)
    x = np.zeros(3)
    warm(f, x)
    cache_for(minus_one.__code__).clear()
    f(x)
    assert capture.calls == 2


def test_a_disabled_region_after_hits_runs_eagerly() -> None:
    capture = PlusOne()
    f = make(capture)
    x = np.zeros(3)
    warm(f, x)

    def caller(y: Any) -> Any:
        return f(y)

    np.testing.assert_array_equal(disable(caller, recursive=True)(x), x - 1)
    np.testing.assert_array_equal(f(x), x + 1)


def test_a_capture_in_progress_runs_a_function_that_hit_before_eagerly() -> None:
    # A capture that calls `f` itself (as an allow_in_graph function run on example inputs
    # would): `f` runs as plain Python inside it, as before it was ever remembered.
    inner = PlusOne()
    f = make(inner)
    x = np.zeros(3)
    warm(f, x)
    seen: list[Any] = []

    def capturing(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> CaptureResult:
        seen.append(f(args[0]))
        return PlusOne()(fn, args, kwargs)

    g = CompiledFunction(lambda x: x, capture_fn=capturing, backend="eager")
    g(x)
    np.testing.assert_array_equal(seen[0], x - 1)


def test_another_thread_in_a_disabled_region_does_not_change_this_one() -> None:
    capture = PlusOne()
    f = make(capture)
    x = np.zeros(3)
    warm(f, x)
    inside = threading.Event()
    release = threading.Event()
    results: list[Any] = []

    def waits_inside(y: Any) -> Any:
        inside.set()
        release.wait(10)
        return f(y)

    thread = threading.Thread(target=lambda: results.append(disable(waits_inside)(x)))
    thread.start()
    assert inside.wait(10)
    try:
        np.testing.assert_array_equal(f(x), x + 1)
    finally:
        release.set()
        thread.join(10)
    np.testing.assert_array_equal(results[0], x - 1)


def test_new_defaults_after_hits_are_bound() -> None:
    def add_k(x: Any, k: int = 1) -> Any:
        return x + k

    f = CompiledFunction(add_k, backend="eager")
    x = np.zeros(2)
    f(x)
    np.testing.assert_array_equal(f(x), x + 1)
    add_k.__defaults__ = (5,)
    np.testing.assert_array_equal(f(x), x + 5)
    np.testing.assert_array_equal(f(x), x + 5)


def test_new_keyword_defaults_after_hits_are_bound() -> None:
    def add_k(x: Any, *, k: int = 1) -> Any:
        return x + k

    f = CompiledFunction(add_k, backend="eager")
    x = np.zeros(2)
    f(x)
    np.testing.assert_array_equal(f(x), x + 1)
    add_k.__kwdefaults__ = {"k": 7}
    np.testing.assert_array_equal(f(x), x + 7)


def test_new_code_after_hits_runs_the_new_code() -> None:
    def first(x: Any) -> Any:
        return x + 1

    def second(x: Any) -> Any:
        return x * 10 + 3

    f = CompiledFunction(first, backend="eager")
    x = np.ones(2)
    f(x)
    np.testing.assert_array_equal(f(x), x + 1)
    first.__code__ = second.__code__
    np.testing.assert_array_equal(f(x), x * 10 + 3)
    np.testing.assert_array_equal(f(x), x * 10 + 3)


def test_wrong_arguments_after_hits_raise_pythons_error() -> None:
    capture = PlusOne()
    f = make(capture)
    warm(f, np.zeros(3))
    with pytest.raises(TypeError, match="minus_one"):
        f(np.zeros(3), 2)
    with pytest.raises(TypeError, match="minus_one"):
        f(y=np.zeros(3))


def test_keyword_arguments_take_the_fast_path_too() -> None:
    capture = PlusOne()
    f = make(capture)
    x = np.zeros(3)
    warm(f, x)
    np.testing.assert_array_equal(f(x=x), x + 1)
    assert capture.calls == 1


def test_skip_guard_eval_unsafe_with_one_entry_checks_nothing() -> None:
    capture = PlusOne()
    f = make(capture)
    x = np.zeros(3)
    warm(f, x)
    with set_stance(skip_guard_eval_unsafe=True):
        f(x)
        # Unsafe by contract: a new shape runs the lone entry instead of compiling.
        np.testing.assert_array_equal(f(np.zeros(5)), np.ones(5))
    assert capture.calls == 1
    f(np.zeros(5))
    assert capture.calls == 2


def counting_lookups(f: CompiledFunction) -> list[int]:
    # How many calls went past the remembered hits to the full lookup (`_dispatch`).
    lookups: list[int] = []
    dispatch = f._dispatch

    def counted(*args: Any) -> Any:
        lookups.append(1)
        return dispatch(*args)

    f._dispatch = counted  # type: ignore[method-assign]
    return lookups


def test_calls_alternating_between_two_entries_look_nothing_up() -> None:
    # Keyword calls: the Python fast path (a call gate takes positional calls only).
    capture = PlusOne()
    f = make(capture)
    small, large = np.zeros(3), np.zeros(4)
    for x in (small, large, small, large):
        f(x=x)
    lookups = counting_lookups(f)
    for _ in range(3):
        np.testing.assert_array_equal(f(x=small), small + 1)
        np.testing.assert_array_equal(f(x=large), large + 1)
    assert lookups == []
    assert capture.calls == 2
    # Move to front: the entry the last call hit is the one checked first.
    assert f._hit.compiled is cache_for(minus_one.__code__).entries[0].compiled


def test_a_third_entry_is_looked_up_and_the_oldest_forgotten() -> None:
    capture = PlusOne()
    f = make(capture)
    arrays = [np.zeros(3), np.zeros(4), np.zeros(5)]
    for x in arrays + arrays:
        f(x=x)
    lookups = counting_lookups(f)
    for x in arrays:
        np.testing.assert_array_equal(f(x=x), x + 1)
    assert len(lookups) == 3
    assert capture.calls == 3
