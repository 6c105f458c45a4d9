"""Gradients through loops in compiled code (issue 23, item 6): `numpile.compile(numpile.grad(f))`
and a compiled function calling `numpile.grad(f)(x)` keep `f`'s `for` loops as loops.

In both placements the transform traces `f` into the caller's graph; its `for` loop stays a
`for_loop` node swept by the loop VJP `numpile.grad(f)` uses (a loop stacking the carried
values, which also gives the forward's results, and a reverse loop), so the graph does not
grow with the trip count. A loop without such a VJP (`break`, `while`) is traced again
unrolled up to the capture's limit; past it the eager transform names the loop and its
line. Every gradient is compared with `numpile.grad(f, compiler="eager")` and with central
differences (values, dtypes, shapes, inputs left unchanged), in the three placements, at
trip counts 0, 1 and several.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from loop_grad_programs import (
    branch_on_the_index,
    break_late,
    central_differences,
    pendulum_chain,
    scalar_and_array_carries,
)

import numpile
from benchmarks.loop_grad import tanh_recurrence


def break_early(x: Any, n: int) -> Any:
    h = x * 1.0
    for i in range(n):
        h = h * np.cos(h)
        if i == 2:  # a loop that breaks: no loop VJP, unrolled
            break
    return h.sum()


def while_counter(x: Any, n: int) -> Any:
    h = x * 1.0
    k = 0
    while k < n:  # a while loop: no loop VJP, unrolled
        h = np.sin(h) + 0.5 * h
        k += 1
    return (h * h).sum()


FUNCTIONS: dict[str, Callable[[Any, int], Any]] = {
    "tanh_recurrence": tanh_recurrence,
    "pendulum_chain": pendulum_chain,
    "scalar_and_array_carries": scalar_and_array_carries,
    "branch_on_the_index": branch_on_the_index,
    "break_early": break_early,
    "while_counter": while_counter,
}


def _compile_of_grad(fn: Callable[[Any, int], Any]) -> Callable[[Any, int], Any]:
    return numpile.compile(numpile.grad(fn), fullgraph=True)


def _grad_inside_compile(fn: Callable[[Any, int], Any]) -> Callable[[Any, int], Any]:
    def step(x: Any, n: int) -> Any:
        return x - 0.1 * numpile.grad(fn)(x, n)

    compiled = numpile.compile(step, fullgraph=True)
    return lambda x, n: (x - compiled(x, n)) / 0.1


def _grad_of_compile(fn: Callable[[Any, int], Any]) -> Callable[[Any, int], Any]:
    return numpile.grad(numpile.compile(fn))


PLACEMENTS = {
    "compile_of_grad": _compile_of_grad,
    "grad_inside_compile": _grad_inside_compile,
    "grad_of_compile": _grad_of_compile,
}


def _loops(graph: Any) -> list[Any]:
    return [node for node in graph.nodes if node.op is not None and node.op.name == "for_loop"]


@pytest.mark.parametrize("placement", list(PLACEMENTS))
@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_grad_through_a_loop_in_every_placement(name: str, placement: str) -> None:
    fn = FUNCTIONS[name]
    run = PLACEMENTS[placement](fn)
    for n in (0, 1, 5):
        x = np.random.default_rng(n).uniform(-0.8, 0.8, 4)
        before = x.copy()
        got = run(x, n)
        np.testing.assert_array_equal(x, before)  # no input mutation
        want = numpile.grad(fn, compiler="eager")(x, n)
        assert (got.dtype, got.shape) == (want.dtype, want.shape) == (x.dtype, x.shape)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
        differences = central_differences(lambda v, n=n: fn(v, n), x)
        np.testing.assert_allclose(got, differences, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("placement", ["compile_of_grad", "grad_inside_compile"])
def test_the_compiled_graph_holds_a_forward_loop_and_a_reverse_loop(placement: str) -> None:
    # One graph whose size does not depend on the trip count: the stacking loop (the
    # forward runs once) and the reverse loop, at 3 and at 3000 steps.
    make = PLACEMENTS[placement]
    sizes = []
    for steps in (3, 3000):
        x = np.random.default_rng(steps).uniform(-1, 1, 6)
        target = numpile.grad(pendulum_chain)
        if placement == "grad_inside_compile":

            def target(x: Any, n: int) -> Any:
                return numpile.grad(pendulum_chain)(x, n)

        explained = numpile.explain(target)(x, steps)
        assert (explained.graph_count, explained.graph_break_count) == (1, 0)
        (graph,) = explained.graphs
        forward, _reverse = _loops(graph)
        body = forward.kwargs["body"]
        assert sum(1 for n in body.nodes if n.op is not None and n.op.name == "setitem_at") == 2
        sizes.append(len(graph.nodes))
        got = make(pendulum_chain)(x, steps)
        want = numpile.grad(pendulum_chain, compiler="eager")(x, steps)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    assert sizes[0] == sizes[1]


def test_value_and_grad_and_vjp_inside_compile_keep_the_loop() -> None:
    from numpile_capture.capture_events import recording_captures

    def caller(x: Any, n: int) -> Any:
        value, gradient = numpile.value_and_grad(tanh_recurrence)(x, n)
        out, pullback = numpile.vjp(lambda v: tanh_recurrence(v, n), x)
        (pulled,) = pullback(2.0)
        return value, gradient, out, pulled

    x = np.random.default_rng(7).uniform(-1, 1, 5)
    explained = numpile.explain(caller)(x, 40)
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)
    # Each transform's stacking loop gives the forward's results (the forward runs once)
    # and its reverse loop reads the stacks: two loops each, `vjp`'s pullback included.
    assert len(_loops(explained.graphs[0])) == 4
    compiled = numpile.compile(caller, fullgraph=True)
    with recording_captures() as events:
        for n in (40, 0, 3):
            value, gradient, out, pulled = compiled(x, n)
            want_value, want = numpile.value_and_grad(tanh_recurrence, compiler="eager")(x, n)
            assert value == pytest.approx(want_value, rel=1e-12) and out == value
            np.testing.assert_allclose(gradient, want, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(pulled, 2.0 * want, rtol=1e-10, atol=1e-12)
    assert sum(1 for event in events if event.graph is not None) == 1


@pytest.mark.parametrize("fullgraph", [False, True])
def test_a_loop_without_a_vjp_too_long_to_unroll_names_the_loop(fullgraph: bool) -> None:
    # Never minutes of unrolling: past the capture's limit the transform's call is a graph
    # break (an error with fullgraph=True) and the eager transform raises, naming the loop.
    x = np.linspace(-1, 1, 3)
    line = break_late.__code__.co_firstlineno + 2
    compiled = numpile.compile(numpile.grad(break_late), fullgraph=fullgraph)
    where = rf"loop_grad_programs.py:{line}"
    message = rf"1500 iterations.*{where}" if fullgraph else rf"{where}: loop not kept"
    with pytest.raises(Exception, match=message):
        compiled(x, 1500)


def countdown(x: Any, n: int) -> Any:
    h = x * 1.0
    for i in range(n - 1, -1, -1):  # a start computed from n, a negative step
        h = np.sin(h) * (0.5 + 0.1 * i) + x
    return (h * h).sum()


def odd_steps(x: Any, n: int) -> Any:
    h = x
    for i in range(1, n, 2):  # ceil((n - 1) / 2) iterations, none below n = 2
        h = np.tanh(h * x[i % 4] + 0.1)
    return h.sum()


def triangle(x: Any, n: int) -> Any:
    h = x
    for i in range(n):
        for j in range(i):  # an inner trip count that depends on the outer index
            h = np.sin(h) * 0.9 + 0.01 * j
    return h.sum()


def inner_steps(x: Any, n: int) -> Any:
    h = x
    for _ in range(n):
        for _ in range(3):  # its first iteration reads x's strides: the same computation
            h = np.cos(h) * 0.5 + h * 0.1
    return h.sum()


RUN_TIME_TRIPS: dict[str, Callable[[Any, int], Any]] = {
    "tanh_recurrence": tanh_recurrence,
    "pendulum_chain": pendulum_chain,
    "branch_on_the_index": branch_on_the_index,
    "countdown": countdown,
    "odd_steps": odd_steps,
    "triangle": triangle,
    "inner_steps": inner_steps,
}


def _captured(events: list[Any]) -> int:
    return sum(1 for event in events if event.graph is not None)


@pytest.mark.parametrize(
    ("name", "placement"),
    [(name, "compile_of_grad") for name in RUN_TIME_TRIPS] + [("countdown", "grad_inside_compile")],
)
def test_a_new_trip_count_does_not_compile_again(name: str, placement: str) -> None:
    # The loop VJP's stacks take their length at run time (the loop's trip count computed
    # from its bounds): one graph for every trip count, 0 included, on the C backend.
    from numpile_capture.capture_events import recording_captures

    fn = RUN_TIME_TRIPS[name]
    compiled = PLACEMENTS[placement](fn)
    with recording_captures() as events:
        for n in (0, 1, 2, 7, 23):
            x = np.random.default_rng(n).uniform(-0.9, 0.9, 4)
            got = compiled(x, n)
            want = numpile.grad(fn, compiler="eager")(x, n)
            assert (got.dtype, got.shape) == (want.dtype, want.shape)
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
            differences = central_differences(lambda v, n=n: fn(v, n), x)
            np.testing.assert_allclose(got, differences, rtol=1e-5, atol=1e-7)
    assert _captured(events) == 1


def test_a_loop_whose_first_iteration_changes_types_compiles_per_trip_count() -> None:
    # `s = 0.0` made a NumPy scalar by the first iteration: that iteration is differentiated
    # before the loop, which needs the trip count, so its bounds are pinned (a new trip
    # count compiles again), with exact gradients.
    from numpile_capture.capture_events import recording_captures

    compiled = numpile.compile(numpile.grad(scalar_and_array_carries))
    x = np.linspace(-0.8, 0.8, 4)
    with recording_captures() as events:
        for n in (2, 5):
            want = numpile.grad(scalar_and_array_carries, compiler="eager")(x, n)
            np.testing.assert_allclose(compiled(x, n), want, rtol=1e-10, atol=1e-12)
    assert _captured(events) == 2
