"""Guards through the public API: guard_filter_fn and its helpers, recompile reasons."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest

import numpile
from numpile_capture import Graph, run_graph
from numpile_guards import GuardFilterEntry, cache_for

SCALE = 2.0


class Counting:
    # A backend that counts compiles and runs graphs with NumPy.
    def __init__(self) -> None:
        self.compiles = 0

    def __call__(self, graph: Graph, example_inputs: Sequence[Any]) -> Any:
        self.compiles += 1
        return lambda *inputs: run_graph(graph, inputs)


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    global SCALE
    numpile.reset()
    yield
    SCALE = 2.0
    numpile.reset()


def scale_by_global(x: Any) -> Any:
    return x * SCALE


def add_n(x: Any, n: int) -> Any:
    return x + n


def test_filter_sees_named_entries_and_default_keeps_every_guard() -> None:
    seen: list[GuardFilterEntry] = []

    def keep_all(entries: list[GuardFilterEntry]) -> list[bool]:
        seen.extend(entries)
        return [True] * len(entries)

    backend = Counting()
    f = numpile.compile(
        scale_by_global, backend=backend, options={"guard_filter_fn": keep_all}, dynamic=False
    )
    np.testing.assert_array_equal(f(np.ones(3)), np.ones(3) * 2.0)
    by_name = {entry.name: entry for entry in seen}
    assert by_name["L['x']"].kind == "ARRAY_MATCH" and not by_name["L['x']"].is_global
    assert by_name["G['SCALE']"].is_global and by_name["G['SCALE']"].value == 2.0
    global SCALE
    SCALE = 3.0
    np.testing.assert_array_equal(f(np.ones(3)), np.ones(3) * 3.0)
    assert backend.compiles == 2


def test_skip_guard_on_globals_keeps_using_the_entry_after_a_global_changes() -> None:
    backend = Counting()
    options = {"guard_filter_fn": numpile.skip_guard_on_globals_unsafe}
    f = numpile.compile(scale_by_global, backend=backend, options=options, dynamic=False)
    f(np.ones(3))
    global SCALE
    SCALE = 3.0
    # Unsafe by contract: the global is no longer checked, the old constant stays compiled in.
    np.testing.assert_array_equal(f(np.ones(3)), np.ones(3) * 2.0)
    assert backend.compiles == 1
    f(np.ones(4))  # array guards are still there
    assert backend.compiles == 2


def test_keep_array_guards_ignores_scalar_arguments() -> None:
    backend = Counting()
    options = {"guard_filter_fn": numpile.keep_array_guards_unsafe}
    f = numpile.compile(add_n, backend=backend, options=options, dynamic=False)
    np.testing.assert_array_equal(f(np.ones(3), 1), np.ones(3) + 1)
    f(np.ones(3), 5)
    assert backend.compiles == 1
    f(np.ones(3, np.float32), 1)
    assert backend.compiles == 2
    guards = [
        str(guard) for entry in cache_for(add_n.__code__).entries for guard in entry.check.guards
    ]
    assert guards and all(guard.startswith("ARRAY_MATCH") for guard in guards)


def test_skip_all_guards_serves_every_call_from_the_first_entry() -> None:
    backend = Counting()
    options = {"guard_filter_fn": numpile.skip_all_guards_unsafe}
    f = numpile.compile(add_n, backend=backend, options=options, dynamic=False)
    f(np.ones(3), 1)
    f(np.ones(7), 1)
    assert backend.compiles == 1
    assert cache_for(add_n.__code__).entries[0].check.source.endswith("return True\n")


def test_guard_filter_is_not_a_backend_option() -> None:
    # The eager backend takes no options: a guard filter alone must still be accepted, and
    # it combines with a mode as in torch.compile.
    options = {"guard_filter_fn": numpile.skip_guard_on_globals_unsafe}
    f = numpile.compile(add_n, backend="eager", options=options)
    np.testing.assert_array_equal(f(np.ones(2), 3), np.ones(2) + 3)
    g = numpile.compile(add_n, mode="max-autotune", options=options)
    assert callable(g)


def test_bad_guard_filters_raise_type_errors() -> None:
    with pytest.raises(TypeError, match="must be callable"):
        numpile.compile(add_n, backend="eager", options={"guard_filter_fn": "nope"})

    def wrong_length(entries: list[GuardFilterEntry]) -> list[bool]:
        return [True]

    f = numpile.compile(add_n, backend="eager", options={"guard_filter_fn": wrong_length})
    with pytest.raises(TypeError, match="one bool per guard entry"):
        f(np.ones(2), 1)


def test_recompile_reason_names_the_source_and_is_kept() -> None:
    f = numpile.compile(add_n, backend="eager", dynamic=False)
    f(np.zeros(8), 1)
    f(np.zeros(9), 1)
    f(np.zeros(9), 2)
    reasons = cache_for(add_n.__code__).recompile_reasons
    assert [reason.failures[0] for reason in reasons] == [
        "L['x'].shape[0]: expected 8, got 9",
        "L['n']: expected 1, got 2",
    ]


def test_skip_guard_eval_unsafe_checks_only_what_tells_entries_apart() -> None:
    backend = Counting()
    f = numpile.compile(add_n, backend=backend, dynamic=False)
    f(np.zeros(3), 1)
    f(np.zeros(5), 1)
    assert backend.compiles == 2
    cache = cache_for(add_n.__code__)
    with numpile.set_stance(skip_guard_eval_unsafe=True):
        np.testing.assert_array_equal(f(np.zeros(5), 1), np.ones(5))
        np.testing.assert_array_equal(f(np.zeros(3), 1), np.ones(3))
    assert backend.compiles == 2
    checks = [check for check, _ in next(iter(cache._diff_checks.values()))]
    # Only the array guards differ between the two entries; the value of n is shared.
    assert all("L['n']" not in check.source for check in checks)
    assert all("L['x']" in check.source for check in checks)
