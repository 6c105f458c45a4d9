"""The hit path in C (`entry_gate`): a remembered entry's guards checked and its compiled
callable called by a call gate, and every change that makes the entry stale declining to
the Python path, which stays the reference.

The extension's `total_hits()` counts the calls gates answered: each test checks that hits
go through a gate and that, after an invalidation, the next call does not (its answer is
the Python path's) while a later one goes through a gate again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from plus_one_backend import PlusOne, minus_one

import numpile_runtime as rt
from numpile_capture import (
    CompiledFunction,
    Graph,
    disable,
    reset,
    set_stance,
)
from numpile_capture.eager_tier import NotCompiledYet
from numpile_guards import cache_for


@pytest.fixture(scope="module")
def gates() -> Any:
    rt.find_toolchain()  # the gate is built only where the kernels' compiler is known
    module = rt.gate_module()
    if module is None:
        pytest.skip("no call gate here (no C compiler, or NUMPILE_CALL_GATE=0)")
    return module


@pytest.fixture(autouse=True)
def _fresh(gates: Any) -> Iterator[None]:
    reset()
    yield
    reset()
    set_stance("default")


def gate_hits(f: Any) -> int:
    module = rt.gate_module()
    assert module is not None
    return int(module.total_hits())


def warm(f: Any, *args: Any) -> None:
    # Compile, hit (remembered, gate armed), hit through the gate.
    f(*args)
    f(*args)
    before = gate_hits(f)
    f(*args)
    assert gate_hits(f) == before + 1


def test_hits_run_through_the_gate_with_the_python_paths_results() -> None:
    capture = PlusOne()
    f = CompiledFunction(minus_one, capture_fn=capture, backend="eager")
    x = np.arange(4.0)
    warm(f, x)
    hits = gate_hits(f)
    for value in (x, x * 2, -x):
        np.testing.assert_array_equal(f(value), value + 1)
    assert gate_hits(f) == hits + 3
    assert capture.calls == 1


def _reset(f: Any, x: Any) -> None:
    reset()


def _clear_cache(f: Any, x: Any) -> None:
    cache_for(minus_one.__code__).clear()


def _new_entry(f: Any, x: Any) -> None:
    f(np.zeros(7))  # a recompile: another entry added


def _rebind_code(f: Any, x: Any) -> None:
    minus_one.__code__ = minus_one.__code__.replace()


# Each changes what the remembered entry depended on; the next call must not be the gate's.
INVALIDATIONS: dict[str, Callable[[Any, Any], None]] = {
    "reset": _reset,
    "one cache cleared": _clear_cache,
    "a recompile": _new_entry,
    "new code": _rebind_code,
}


@pytest.mark.parametrize("change", sorted(INVALIDATIONS))
def test_an_invalidation_declines_once_then_the_gate_is_armed_again(change: str) -> None:
    capture = PlusOne()
    f = CompiledFunction(minus_one, capture_fn=capture, backend="eager")
    x = np.arange(3.0)
    warm(f, x)
    INVALIDATIONS[change](f, x)
    hits = gate_hits(f)
    np.testing.assert_array_equal(f(x), x + 1)
    assert gate_hits(f) == hits
    warm(f, x)


def test_a_stance_is_seen_through_the_gate() -> None:
    f = CompiledFunction(minus_one, capture_fn=PlusOne(), backend="eager")
    x = np.zeros(3)
    warm(f, x)
    hits = gate_hits(f)
    with set_stance("force_eager"):
        np.testing.assert_array_equal(f(x), x - 1)
        np.testing.assert_array_equal(f(x), x - 1)
    assert gate_hits(f) == hits
    np.testing.assert_array_equal(f(x), x + 1)
    np.testing.assert_array_equal(f(x), x + 1)
    assert gate_hits(f) == hits + 1


def test_a_disabled_region_declines_and_runs_plain_python() -> None:
    f = CompiledFunction(minus_one, capture_fn=PlusOne(), backend="eager")
    x = np.zeros(3)
    warm(f, x)
    hits = gate_hits(f)
    np.testing.assert_array_equal(disable(lambda y: f(y), recursive=True)(x), x - 1)
    assert gate_hits(f) == hits
    np.testing.assert_array_equal(f(x), x + 1)
    assert gate_hits(f) == hits + 1


def test_new_defaults_decline_and_are_bound() -> None:
    def add_k(x: Any, k: int = 1) -> Any:
        return x + k

    f = CompiledFunction(add_k, backend="eager")
    x = np.zeros(2)
    warm(f, x, 1)
    hits = gate_hits(f)
    add_k.__defaults__ = (5,)
    np.testing.assert_array_equal(f(x), x + 5)  # one argument: declined, defaults bound
    np.testing.assert_array_equal(f(x, 2), x + 2)
    assert gate_hits(f) == hits
    warm(f, x, 1)


def test_keywords_decline_to_the_python_path() -> None:
    capture = PlusOne()
    f = CompiledFunction(minus_one, capture_fn=capture, backend="eager")
    x = np.zeros(3)
    warm(f, x)
    hits = gate_hits(f)
    np.testing.assert_array_equal(f(x=x), x + 1)
    assert gate_hits(f) == hits
    assert capture.calls == 1
    with pytest.raises(TypeError, match="minus_one"):
        f(x, 2)


@pytest.mark.parametrize(
    "other",
    [
        np.zeros(3, dtype=np.float32),  # dtype
        np.zeros(4),  # shape
        np.zeros(6)[::2],  # strides
        np.zeros((3, 1)),  # rank
        np.zeros(3).view(np.recarray),  # type
    ],
    ids=["dtype", "shape", "strides", "rank", "type"],
)
def test_a_guard_miss_recompiles_exactly_as_before(other: Any) -> None:
    capture = PlusOne()
    f = CompiledFunction(minus_one, capture_fn=capture, backend="eager")
    x = np.zeros(3)
    warm(f, x)
    hits = gate_hits(f)
    np.testing.assert_array_equal(f(other), other + 1)
    assert capture.calls == 2
    assert gate_hits(f) == hits
    # Both entries stay: each is remembered in turn, neither captured again.
    for value in (x, other, x):
        np.testing.assert_array_equal(f(value), value + 1)
    assert capture.calls == 2


SCALE = 2.0


def scaled(x: Any) -> Any:
    return x * SCALE + np.sin(x)


def test_a_global_rebind_is_checked_by_the_gate() -> None:
    global SCALE
    f = CompiledFunction(scaled, backend="eager")
    x = np.linspace(0.0, 1.0, 5)
    warm(f, x)
    assert f._gate is not None
    try:
        SCALE = 3.0
        np.testing.assert_allclose(f(x), x * 3.0 + np.sin(x))
        np.testing.assert_allclose(f(x), x * 3.0 + np.sin(x))
    finally:
        SCALE = 2.0
    np.testing.assert_allclose(f(x), x * 2.0 + np.sin(x))


def test_a_closure_cell_is_checked_by_the_gate() -> None:
    k = 1.5

    def add(x: Any) -> Any:
        return x + k

    f = CompiledFunction(add, backend="eager")
    x = np.zeros(2)
    warm(f, x)
    k = 4.0
    np.testing.assert_array_equal(f(x), x + 4.0)
    np.testing.assert_array_equal(f(x), x + 4.0)


def test_sizes_related_by_guards_are_checked_by_the_gate() -> None:
    def pair(a: Any, b: Any) -> Any:
        return a[:2] + b[1:3] * a[0]

    f = CompiledFunction(pair, backend="eager", dynamic=True)
    a, b = np.arange(5.0), np.arange(5.0) + 1
    warm(f, a, b)
    assert f._gate is not None
    hits = gate_hits(f)
    for n in (3, 4, 9):
        a, b = np.arange(float(n)), np.arange(float(n)) * 2
        np.testing.assert_array_equal(f(a, b), a[:2] + b[1:3] * a[0])
    assert gate_hits(f) == hits + 3
    a, b = np.arange(2.0), np.arange(2.0)  # b[1:3] has one element: another entry
    np.testing.assert_array_equal(f(a, b), a[:2] + b[1:3] * a[0])


def test_not_compiled_yet_runs_the_function_once_eagerly() -> None:
    calls: list[int] = []

    def tiered(graph: Graph, example_inputs: Any) -> Any:
        def run(x: Any) -> Any:
            calls.append(1)
            if len(calls) == 4:  # the fourth call of the compiled code is not ready
                raise NotCompiledYet
            return x + 1

        return run

    f = CompiledFunction(minus_one, capture_fn=PlusOne(), backend=tiered)
    x = np.zeros(2)
    warm(f, x)
    assert len(calls) == 3
    hits = gate_hits(f)
    # Through the gate: the compiled callable raises once, and the function runs eagerly
    # (not the compiled callable a second time).
    np.testing.assert_array_equal(f(x), x - 1)
    assert len(calls) == 4
    np.testing.assert_array_equal(f(x), x + 1)
    assert len(calls) == 5
    assert gate_hits(f) == hits + 1


def test_an_error_of_the_compiled_code_propagates_once() -> None:
    calls: list[int] = []

    def failing(graph: Graph, example_inputs: Any) -> Any:
        def run(x: Any) -> Any:
            calls.append(1)
            if len(calls) > 2:
                raise ZeroDivisionError("from the compiled code")
            return x + 1

        return run

    f = CompiledFunction(minus_one, capture_fn=PlusOne(), backend=failing)
    x = np.zeros(2)
    f(x)
    f(x)
    assert f._gate is not None
    with pytest.raises(ZeroDivisionError, match="compiled code"):
        f(x)
    assert len(calls) == 3


def test_the_gate_calls_the_form_a_compiled_callable_offers() -> None:
    # A compiled callable with a `GATE_FORM` attribute: the gate calls the form it makes
    # (the inductor's error-state check in C, say), the Python path the callable itself.
    ran: list[str] = []

    def backend(graph: Graph, example_inputs: Any) -> Any:
        def compiled(x: Any) -> Any:
            ran.append("callable")
            return x + 1

        def form(x: Any) -> Any:
            ran.append("form")
            return x + 1

        setattr(compiled, rt.GATE_FORM, lambda: form)
        return compiled

    f = CompiledFunction(minus_one, capture_fn=PlusOne(), backend=backend)
    x = np.arange(3.0)
    warm(f, x)
    assert ran[-1] == "form"
    np.testing.assert_array_equal(f(x=x), x + 1)  # keywords: the Python path
    assert ran[-1] == "callable"
    np.testing.assert_array_equal(f(x), x + 1)
    assert ran[-1] == "form"


def test_calls_take_the_python_path_while_the_gate_builds_then_the_gate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A process whose gate extension is not loaded yet (a fresh cache folder builds it with
    # the compiler): no call waits for it. Calls take the Python path while the build waits
    # on the build queue; once it is loaded, the next call makes the gate and the one after
    # goes through it.
    import threading

    from numpile_runtime import call_gate

    gates = rt.gate_module()
    monkeypatch.setattr(call_gate, "_LOADED", [])
    release = threading.Event()
    started = threading.Event()

    def hold() -> None:
        started.set()
        assert release.wait(60)

    rt.queue_build("hold the queue", hold)
    assert started.wait(60)
    capture = PlusOne()
    f = CompiledFunction(minus_one, capture_fn=capture, backend="eager")
    x = np.arange(3.0)
    hits = int(gates.total_hits())
    for _ in range(3):
        np.testing.assert_array_equal(f(x), x + 1)
    assert f._gate is None
    assert "call gate" in rt.queued_builds()
    assert int(gates.total_hits()) == hits
    release.set()
    assert rt.wait_for_queued_builds(timeout=120)
    np.testing.assert_array_equal(f(x), x + 1)  # a new epoch: looked up, its gate made
    np.testing.assert_array_equal(f(x), x + 1)
    assert int(gates.total_hits()) == hits + 1
    assert capture.calls == 1


def test_calls_alternating_between_two_entries_all_run_through_gates() -> None:
    capture = PlusOne()
    f = CompiledFunction(minus_one, capture_fn=capture, backend="eager")
    small, large = np.arange(3.0), np.arange(4.0)
    for x in (small, large, small, large, small):
        f(x)
    hits = gate_hits(f)
    for _ in range(3):
        np.testing.assert_array_equal(f(small), small + 1)
        np.testing.assert_array_equal(f(large), large + 1)
    assert gate_hits(f) == hits + 6
    assert capture.calls == 2
