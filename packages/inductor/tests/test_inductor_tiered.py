"""Tiered compilation: NumPy op by op while the build runs, then the kernels; same results."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import numpile_runtime as rt
from numpile_capture import capture_function, compile_function, has_loops, reset
from numpile_capture import config as capture_config
from numpile_inductor import InductorConfig, NoCompilerWarning, TieredGraph, inductor
from numpile_inductor import backend as backend_module
from numpile_inductor import background_build as bb
from numpile_inductor.no_compiler import _reset_warning_for_tests

# graph_cache off: every test's graph misses the graph cache and tiers (the builder's own
# cache still makes a rebuilt module cheap).
TIERED = {"tiered": True, "graph_cache": False}
RNG = np.random.default_rng(7)


@pytest.fixture
def held_worker() -> Iterator[threading.Event]:
    """Keeps the background worker busy until set, so a new graph's build stays queued."""
    released = threading.Event()
    started = threading.Event()

    def hold() -> None:
        started.set()
        released.wait(60)

    holder = bb.submit(hold)
    assert started.wait(30)
    yield released
    released.set()
    holder.wait(60)


def _tiered(fn: Callable[..., Any], *args: Any, **options: Any) -> TieredGraph:
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    graph = capture_function(fn, tuple(copies), {}).graph
    compiled = inductor(graph, copies, options={**TIERED, **options})
    assert isinstance(compiled, TieredGraph)
    return compiled


def _pointwise(x: Any, y: Any) -> Any:
    # Exact ops only (no reordered sums): the kernels give NumPy's bits.
    z = np.where(x > 0.5, x * y + 1.0, np.sqrt(x) - y)
    return np.maximum(z[1:] * 3.0, z[:-1]) / (y[1:] + 2.0)


def _inplace_view(x: Any, y: Any) -> Any:
    x[1:] += y[:-1] * 2.0
    return x[::2]


def test_first_calls_run_with_numpy_then_calls_switch_to_bit_identical_kernels(
    held_worker: threading.Event,
) -> None:
    x, y = RNG.random(301), RNG.random(301)
    fn = _tiered(_pointwise, x, y)
    before = rt.counters().get("inductor_tiered_numpy_call", 0)
    tier0 = fn(x, y)
    assert fn.tier == "numpy"
    assert rt.counters()["inductor_tiered_numpy_call"] == before + 1
    np.testing.assert_array_equal(tier0, _pointwise(x, y))
    held_worker.set()
    assert fn.wait(60)
    assert fn.tier == "compiled"
    tier1 = fn(x, y)
    assert tier1.dtype == tier0.dtype and tier1.tobytes() == tier0.tobytes()


def test_in_place_updates_and_views_of_inputs_are_the_same_in_both_tiers(
    held_worker: threading.Event,
) -> None:
    x, y = RNG.random(40), RNG.random(40)
    fn = _tiered(_inplace_view, x, y)
    for tier in ("numpy", "compiled"):
        if tier == "compiled":
            held_worker.set()
            assert fn.wait(60)
        eager_x, mine = x.copy(), x.copy()
        expected = _inplace_view(eager_x, y)
        got = fn(mine, y)
        assert fn.tier == tier
        np.testing.assert_array_equal(mine, eager_x)  # the input written in place
        np.testing.assert_array_equal(got, expected)
        assert np.shares_memory(got, mine)  # the result is a view of the input, as in eager


def test_numpy_warnings_come_from_the_tier0_call_as_in_eager(held_worker: threading.Event):
    def log_of(x: Any) -> Any:
        return np.log(x) + 1.0

    x = np.array([1.0, 0.0, 2.0])
    fn = _tiered(log_of, x)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn(x)
    assert fn.tier == "numpy"
    assert [w.category for w in caught] == [RuntimeWarning]
    assert "divide by zero" in str(caught[0].message)


def test_cancelled_builds_are_submitted_again_by_the_next_call(held_worker: threading.Event):
    x, y = RNG.random(16), RNG.random(16)
    fn = _tiered(_pointwise, x, y)
    assert bb.cancel_pending() >= 1  # what numpile.reset() does
    np.testing.assert_array_equal(fn(x, y), _pointwise(x, y))  # still answers, with NumPy
    held_worker.set()
    assert fn.wait(60) and fn.tier == "compiled"
    np.testing.assert_array_equal(fn(x, y), _pointwise(x, y))


def test_a_failed_build_raises_from_the_next_call(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise rt.BuildError("the compiler crashed", source_path="k.c", command=(), stderr="")

    monkeypatch.setattr(backend_module, "_compile", broken)
    x, y = RNG.random(8), RNG.random(8)
    fn = _tiered(_pointwise, x, y)
    with pytest.raises(rt.BuildError, match="compiler crashed"):
        fn.wait(60)
    with pytest.raises(rt.BuildError, match="compiler crashed"):
        fn(x, y)


def test_with_suppress_errors_a_failed_build_keeps_numpy(monkeypatch: pytest.MonkeyPatch):
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise rt.BuildError("the compiler crashed", source_path="k.c", command=(), stderr="")

    monkeypatch.setattr(backend_module, "_compile", broken)
    monkeypatch.setattr(capture_config, "suppress_errors", True)
    x, y = RNG.random(8), RNG.random(8)
    fn = _tiered(_pointwise, x, y)
    assert fn.wait(60)
    np.testing.assert_array_equal(fn(x, y), _pointwise(x, y))


def test_no_compiler_found_by_the_build_runs_op_by_op_with_the_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def missing(*args: Any, **kwargs: Any) -> Any:
        raise rt.CompilerNotFoundError("no C compiler found")

    monkeypatch.setattr(backend_module, "_compile", missing)
    _reset_warning_for_tests()
    x, y = RNG.random(8), RNG.random(8)
    fn = _tiered(_pointwise, x, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert fn.wait(60)
    _reset_warning_for_tests()
    assert [w.category for w in caught] == [NoCompilerWarning]
    np.testing.assert_array_equal(fn(x, y), _pointwise(x, y))


def test_a_graph_cache_hit_is_compiled_from_the_first_call() -> None:
    x = RNG.random(32)

    def f(x: Any) -> Any:
        return np.cos(x) * 3.0 - x

    graph = capture_function(f, (x,), {}).graph
    inductor(graph, [x], options={"tiered": False})  # fills the graph cache
    again = inductor(graph, [x], options={"tiered": True})
    assert not isinstance(again, TieredGraph)
    # cos: the kernels call glibc's vector cos, NumPy its own (within an ulp).
    np.testing.assert_allclose(again(x), f(x), rtol=1e-15)


def test_the_option_the_modes_and_the_environment_choose_tiering(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NUMPILE_TIERED", raising=False)
    assert InductorConfig.from_options(None).tiered
    assert not InductorConfig.from_options(None, mode="max-autotune").tiered
    monkeypatch.setenv("NUMPILE_TIERED", "0")
    assert not InductorConfig.from_options(None).tiered
    assert InductorConfig.from_options({"tiered": True}).tiered
    monkeypatch.setenv("NUMPILE_TIERED", "1")
    assert InductorConfig.from_options(None).tiered
    with pytest.raises(TypeError, match="'tiered' takes bool"):
        InductorConfig.from_options({"tiered": "yes"})


# -- graphs with kept loops: the function's own Python before the switch --------------------


def _squares_into(x: Any, out: Any) -> Any:
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
        out[i] = s
    return s


def _loop_graph(x: Any) -> Any:
    graph = capture_function(_squares_into, (x, np.zeros_like(x)), {}).graph
    assert has_loops(graph)
    return graph


def _eager_and_mine(fn: Callable[..., Any], x: Any) -> None:
    want_out, out = np.zeros_like(x), np.zeros_like(x)
    want = _squares_into(x, want_out)
    got = fn(x, out)
    assert type(got) is type(want) and got == want
    assert out.tobytes() == want_out.tobytes()


def test_a_loop_graphs_calls_run_the_function_until_its_build_is_done(
    held_worker: threading.Event,
) -> None:
    # The first calls do not wait for the C build (the worker is held: it cannot run).
    reset()  # the capture cache holds compiled code per function: none from another test
    compiled = compile_function(_squares_into, backend="inductor", options=TIERED)
    x = RNG.random(50)
    counters = rt.counters()
    eager_before = counters.get("inductor_tiered_eager_call", 0)
    switch_before = counters.get("inductor_tiered_switch", 0)
    for _ in range(3):
        _eager_and_mine(compiled, x)
    assert rt.counters()["inductor_tiered_eager_call"] == eager_before + 3
    held_worker.set()
    assert bb.wait_idle(120)
    for _ in range(2):
        _eager_and_mine(compiled, x)
    assert rt.counters()["inductor_tiered_eager_call"] == eager_before + 3
    assert rt.counters()["inductor_tiered_switch"] == switch_before + 1


def test_a_loop_graph_not_offered_the_eager_tier_waits_for_its_build() -> None:
    x = RNG.random(20)
    fn = inductor(_loop_graph(x), [x, np.zeros_like(x)], options=TIERED)
    assert isinstance(fn, TieredGraph)
    assert not fn.eager_tier
    _eager_and_mine(fn, x)
    assert fn.tier == "compiled"


def test_a_loop_graph_in_the_graph_cache_is_compiled_from_the_first_call() -> None:
    x = RNG.random(12)
    graph = _loop_graph(x)
    inductor(graph, [x, np.zeros_like(x)], options={"tiered": False})  # fills the cache
    again = inductor(graph, [x, np.zeros_like(x)], options={"tiered": True})
    assert not isinstance(again, TieredGraph)
    _eager_and_mine(again, x)


def test_a_failed_loop_build_keeps_running_the_function_eagerly(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise rt.BuildError("the compiler crashed", source_path="k.c", command=(), stderr="")

    monkeypatch.setattr(backend_module, "_prepare", broken)
    reset()  # the capture cache holds compiled code per function: none from another test
    compiled = compile_function(_squares_into, backend="inductor", options=TIERED)
    x = RNG.random(9)
    with caplog.at_level("WARNING", logger="numpile.inductor"):
        _eager_and_mine(compiled, x)
        assert bb.wait_idle(120)
        _eager_and_mine(compiled, x)
        _eager_and_mine(compiled, x)
    assert "keeps running eagerly" in caplog.text
