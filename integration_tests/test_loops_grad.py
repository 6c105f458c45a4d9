"""Gradients through loops (issue 23, item 6): `numpile.grad` and `compile` of a function
calling it, through `for` loops with array carries.

`grad` keeps a `for` loop with array (and NumPy scalar) carries as a loop: its VJP is a
loop that stacks the carried values and a reverse loop over them (vjp_loop.py), so the
graphs do not grow with the trip count; an `if` in the body is a `cond` with a VJP of its
own (vjp_cond.py). A loop without such a VJP (one that breaks) is unrolled, up to 1000
iterations (the capture's unroll limit).
Gradients are checked against central differences at trip counts 0, 1, 2, 7 (and 300, run
op by op), and against the same program written out by hand. A loop too long to unroll
and without a VJP is an error that names the loop and its line, never a wrong or zero
gradient.
"""

from __future__ import annotations

import logging
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
from numpile_autograd_aot.config import run_graph_compiler


def tanh_recurrence(x: Any, w: float, n: int) -> Any:
    h = x
    for _ in range(n):
        h = np.tanh(h * w + 0.1)
    return h.sum()


def index_dependent_slices(x: Any, n: int) -> Any:
    acc = np.zeros(2)
    for i in range(n):
        acc = acc * 0.9 + x[i : i + 2] * np.sin(x[i])
    return (acc * acc).sum()


def break_and_branch(x: Any, n: int) -> Any:
    h = x * 1.0
    for i in range(n):
        if i % 2 == 0:  # noqa: SIM108 - the if statement is the construct tested
            h = h * np.cos(h)
        else:
            h = h + 0.5 * h * h
        if i == 5:
            break
    return h.sum()


CASES: dict[str, tuple[Callable[..., Any], Callable[[int], tuple[Any, ...]]]] = {
    "tanh_recurrence": (tanh_recurrence, lambda n: (0.7, n)),
    "index_dependent_slices": (index_dependent_slices, lambda n: (n,)),
    "break_and_branch": (break_and_branch, lambda n: (n,)),
    "scalar_and_array_carries": (scalar_and_array_carries, lambda n: (n,)),
}


@pytest.mark.parametrize("n", [0, 1, 2, 7])
@pytest.mark.parametrize("name", list(CASES))
def test_grad_through_a_loop_matchescentral_differences(name: str, n: int) -> None:
    _check_againstcentral_differences(name, n, None)


@pytest.mark.parametrize("name", list(CASES))
def test_grad_through_hundreds_of_iterations(name: str) -> None:
    # The unrolled graph's C build grows with the trip count (minutes at 60-300 iterations
    # on a loaded 2-core machine): the graph runs op by op here; the gradient is the point.
    _check_againstcentral_differences(name, 300, "eager")


def _check_againstcentral_differences(name: str, n: int, compiler: str | None) -> None:
    fn, rest = CASES[name]
    size = max(n, 1) + 2 if name == "index_dependent_slices" else 4
    x = np.random.default_rng(n).uniform(-0.8, 0.8, size)
    if name == "break_and_branch":
        x = x * 0.5
    extra = rest(n)
    got = numpile.grad(fn, compiler=compiler)(x, *extra)
    want = central_differences(lambda v: fn(v, *extra), x)
    assert got.dtype == np.float64 and got.shape == x.shape
    # Central differences lose |f| * 2**-52 / eps to rounding: a long sum needs more room.
    atol = max(1e-7, 1e-9 * abs(float(fn(x, *extra))))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=atol)


def test_grad_through_a_loop_equals_the_program_written_out() -> None:
    x = np.random.default_rng(1).uniform(-1, 1, 5)

    def written_out(x: Any) -> Any:
        h = np.tanh(x * 0.7 + 0.1)
        h = np.tanh(h * 0.7 + 0.1)
        h = np.tanh(h * 0.7 + 0.1)
        return h.sum()

    np.testing.assert_array_equal(
        numpile.grad(tanh_recurrence)(x, 0.7, 3), numpile.grad(written_out)(x)
    )


def test_compiled_function_calling_grad_through_a_loop() -> None:
    def loss_and_grad(x: Any, n: int) -> Any:
        value, gradient = numpile.value_and_grad(index_dependent_slices)(x, n)
        return value, gradient * 2.0

    compiled = numpile.compile(loss_and_grad)
    for n in (3, 6):
        x = np.random.default_rng(n).uniform(-1, 1, n + 2)
        value, gradient = compiled(x, n)
        assert value == pytest.approx(index_dependent_slices(x, n), rel=1e-12)
        want = central_differences(lambda v, n=n: index_dependent_slices(v, n), x)
        np.testing.assert_allclose(gradient, 2.0 * want, rtol=1e-5, atol=1e-7)


def test_grad_through_a_loop_without_a_vjp_too_long_to_unroll_names_the_loop() -> None:
    x = np.linspace(-1, 1, 3)
    line = break_late.__code__.co_firstlineno + 2
    with pytest.raises(TypeError, match=rf"loop_grad_programs.py:{line}: loop not kept") as info:
        numpile.grad(break_late)(x, 1500)
    assert "1500 iterations" in str(info.value)


@pytest.mark.parametrize("compiler", ["eager", "inductor"])
def test_grad_through_a_loop_with_an_if_past_the_unroll_limit(compiler: str) -> None:
    # A `cond` in the body has a VJP: the loop is kept, at any trip count (this raised
    # "loop not kept" past 1000 iterations before).
    x = np.linspace(-1, 1, 3)
    got = numpile.grad(branch_on_the_index, compiler=compiler)(x, 1500)
    want = central_differences(lambda v: branch_on_the_index(v, 1500), x)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)


def test_grad_through_thousands_of_iterations_is_one_reverse_loop() -> None:
    # Past the unroll limit, and with graphs of the same size at 10 and 3000 iterations:
    # the loop and its reverse stay loops (what a 100,000-step recurrence compiles).
    sizes: dict[int, list[int]] = {}

    def counting(steps: int) -> Any:
        def compiler(graph: Any, example_inputs: Any) -> Any:
            sizes.setdefault(steps, []).append(len(graph.nodes))
            return run_graph_compiler(graph, example_inputs)

        return compiler

    x = np.random.default_rng(3).uniform(-0.8, 0.8, 4)
    for steps in (10, 3000):
        got = numpile.grad(tanh_recurrence, compiler=counting(steps))(x, 0.9, steps)
        want = central_differences(lambda v, steps=steps: tanh_recurrence(v, 0.9, steps), x)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-9)
    assert sizes[10] == sizes[3000]


def _loops(graph: Any) -> list[Any]:
    return [node for node in graph.nodes if node.op is not None and node.op.name == "for_loop"]


def test_the_forward_runs_one_loop_that_also_stacks_the_carried_values() -> None:
    # The forward graph holds one loop (it gives the loop's results and the stacks the
    # reverse loop reads); the backward graph one reverse loop.
    graphs: list[Any] = []

    def recording(graph: Any, example_inputs: Any) -> Any:
        graphs.append(graph)
        return run_graph_compiler(graph, example_inputs)

    x = np.random.default_rng(5).uniform(-1, 1, 4)
    got = numpile.grad(pendulum_chain, compiler=recording)(x, 20)
    forward, backward = graphs
    (loop,) = _loops(forward)
    body_ops = [node.op.name for node in loop.kwargs["body"].nodes if node.op is not None]
    assert body_ops.count("setitem_at") == 2  # one stack per carried array
    assert len(_loops(backward)) == 1
    want = central_differences(lambda v: pendulum_chain(v, 20), x)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("n", [0, 1, 2, 7, 2500])
def test_grad_through_loops_compiled_runs_every_loop_in_c(
    n: int, caplog: pytest.LogCaptureFixture
) -> None:
    # With the inductor, the loop stacking the carried values and the reverse loop are
    # C loops (no NumPy per iteration: the perf hint names a loop that is not); the
    # gradient as central differences say, and as the graphs run op by op give it.
    x = np.random.default_rng(n).uniform(-1, 1, 6)
    with caplog.at_level(logging.INFO, logger="numpile.perf_hints"):
        got = numpile.grad(pendulum_chain, compiler="inductor")(x, n)
    assert "with NumPy per iteration" not in caplog.text
    want = central_differences(lambda v: pendulum_chain(v, n), x)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
    eager = numpile.grad(pendulum_chain, compiler="eager")(x, n)
    np.testing.assert_allclose(got, eager, rtol=1e-12, atol=1e-14)
    value, gradient = numpile.value_and_grad(pendulum_chain, compiler="inductor")(x, n)
    assert value == pytest.approx(pendulum_chain(x, n), rel=1e-12)
    np.testing.assert_allclose(gradient, got, rtol=1e-12, atol=1e-14)


def driven_recurrence(h0: Any, xs: Any) -> Any:
    # A recurrence driven by one row of `xs` per step: the reverse loop adds each row's
    # cotangent into the sum of `xs` where it was read.
    h = h0
    for i in range(xs.shape[0]):
        h = np.tanh(h * 0.7 + xs[i])
    return (h * h).sum()


@pytest.mark.parametrize("n", [0, 1, 2, 7])
@pytest.mark.parametrize("argnum", [0, 1])
def test_grad_through_rows_read_by_the_index_runs_in_c(
    n: int, argnum: int, caplog: pytest.LogCaptureFixture
) -> None:
    rng = np.random.default_rng(n)
    h0, xs = rng.uniform(-1, 1, 5), rng.uniform(-1, 1, (n, 5))
    with caplog.at_level(logging.INFO, logger="numpile.perf_hints"):
        got = numpile.grad(driven_recurrence, argnums=argnum, compiler="inductor")(h0, xs)
    assert "with NumPy per iteration" not in caplog.text
    args = [h0, xs]

    def along(v: Any) -> Any:
        moved = list(args)
        moved[argnum] = v.reshape(args[argnum].shape)
        return driven_recurrence(*moved)

    want = central_differences(along, args[argnum].ravel()).reshape(args[argnum].shape)
    assert got.shape == args[argnum].shape and got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)
