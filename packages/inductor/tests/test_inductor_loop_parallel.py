"""OpenMP over an outer loop whose iterations are independent (codegen/c/loop_parallel.py):
the pragma where each iteration writes its own row and reads nothing another writes, none
where a dependence is carried; values, in-place effects and errors as eager at sizes that
run threaded."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from numpile_capture import Node, capture_function, reset
from numpile_inductor import compile_graph
from numpile_inductor.codegen.c.loop_function import scalar_loop_function
from numpile_inductor.codegen.c.loop_parallel import PARALLEL_WORK, independent_iterations


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    reset()
    yield
    reset()


def row_norms(x: Any, out: Any) -> Any:
    for i in range(x.shape[0]):
        s = 0.0
        for j in range(x.shape[1]):
            s += x[i, j] * x[i, j]
        out[i] = np.sqrt(s)
    return out


def rows_scaled_in_place(a: Any) -> Any:
    for i in range(a.shape[0]):
        m = a[i, 0]
        for j in range(a.shape[1]):
            if a[i, j] > m:
                m = a[i, j]
        for j in range(a.shape[1]):
            a[i, j] = a[i, j] / m
    return a


def gauss_seidel(a: Any) -> Any:
    for i in range(1, a.shape[0] - 1):
        for j in range(1, a.shape[1] - 1):
            a[i, j] = 0.25 * (a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1])
    return a


def prefix_rows(a: Any) -> Any:
    for i in range(1, a.shape[0]):
        for j in range(a.shape[1]):
            a[i, j] += a[i - 1, j]
    return a


def running_total(x: Any) -> Any:
    s = 0.0
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            s += x[i, j]
    return s


def next_row_past_the_end(x: Any, out: Any) -> Any:
    for i in range(x.shape[0]):
        s = 0.0
        for j in range(x.shape[1]):
            s += x[i + 1, j]
        out[i] = s
    return out


def _outer_loop(fn: Callable[..., Any], args: tuple[Any, ...]) -> Node:
    graph = capture_function(fn, args, {}).graph
    (node,) = [n for n in graph.nodes if n.op is not None and n.op.name == "for_loop"]
    return node


def _source(fn: Callable[..., Any], args: tuple[Any, ...]) -> str:
    return scalar_loop_function(_outer_loop(fn, args), "loop_v0").source


def _rows(n: int, m: int) -> Any:
    return np.random.default_rng(n).uniform(0.5, 2.0, (n, m))


INDEPENDENT = [
    (row_norms, lambda: (_rows(8, 5), np.zeros(8))),
    (rows_scaled_in_place, lambda: (_rows(8, 5),)),
]
CARRIED = [
    (gauss_seidel, lambda: (_rows(8, 5),)),
    (prefix_rows, lambda: (_rows(8, 5),)),
    (running_total, lambda: (_rows(8, 5),)),
]


@pytest.mark.parametrize(("fn", "make"), INDEPENDENT, ids=[fn.__name__ for fn, _ in INDEPENDENT])
def test_independent_rows_get_the_pragma(fn: Callable[..., Any], make: Callable[[], Any]) -> None:
    assert independent_iterations(_outer_loop(fn, make()))
    source = _source(fn, make())
    assert "#pragma omp for schedule(static)" in source
    # Below the run-time conditions the nest runs outside any region (a region whose `if`
    # is false still sets up a team): the pragma sits in one branch of a plain `if`.
    assert "#pragma omp parallel reduction" in source and "#pragma omp parallel if" not in source
    assert "} else {" in source[source.index("#pragma omp parallel reduction") :]


@pytest.mark.parametrize(("fn", "make"), CARRIED, ids=[fn.__name__ for fn, _ in CARRIED])
def test_carried_dependences_get_no_pragma(fn: Callable[..., Any], make: Callable[[], Any]) -> None:
    assert not independent_iterations(_outer_loop(fn, make()))
    assert "#pragma omp" not in _source(fn, make())


def _compiled(fn: Callable[..., Any]) -> Callable[..., Any]:
    # The loop's graph captured at each call's shapes and compiled by the inductor.
    def run(*args: Any) -> Any:
        return compile_graph(capture_function(fn, args, {}).graph).fn(*args)

    return run


@pytest.mark.parametrize("fn", [row_norms, rows_scaled_in_place])
def test_threaded_rows_match_eager(fn: Callable[..., Any]) -> None:
    n, m = 600, 3 * PARALLEL_WORK // 600
    compiled = _compiled(fn)
    for shape in ((n, m), (3, 4), (1, 5)):
        args = (
            (_rows(*shape),) if fn is rows_scaled_in_place else (_rows(*shape), np.zeros(shape[0]))
        )
        expected = tuple(a.copy() for a in args)
        got = compiled(*args)
        want = fn(*expected)
        np.testing.assert_allclose(got, want, rtol=1e-13)
        for a, b in zip(args, expected, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-13)  # the in-place writes, as eager's


def test_overlapping_output_runs_as_eager_does() -> None:
    # `out` is a column of `x`: the written array shares memory with the read one, so the
    # run-time check keeps the loop serial and the result is eager's.
    n, m = 600, 3 * PARALLEL_WORK // 600
    compiled = _compiled(row_norms)
    x, y = _rows(n, m), _rows(n, m)
    np.testing.assert_array_equal(compiled(x, x[:, 1]), row_norms(y, y[:, 1]))
    np.testing.assert_array_equal(x, y)


def test_index_error_keeps_eager_writes() -> None:
    n, m = 600, 3 * PARALLEL_WORK // 600
    compiled = _compiled(next_row_past_the_end)
    x, out, want_out = _rows(n, m), np.zeros(n), np.zeros(n)
    with pytest.raises(IndexError) as want:
        next_row_past_the_end(x, want_out)
    with pytest.raises(IndexError) as got:
        compiled(x, out)
    assert str(got.value) == str(want.value)
    np.testing.assert_array_equal(out, want_out)


def test_only_calls_that_may_open_a_region_decide_their_threads() -> None:
    # A serial C loop nest opens no parallel region, so its call neither reads the busy
    # cores (a /proc/loadavg read and a sched_getaffinity after each idle spell) nor sets
    # OpenMP's threads; a nest of independent rows may open one and decides them.
    x = _rows(8, 5)
    serial = compile_graph(capture_function(running_total, (x,), {}).graph)
    threaded = compile_graph(capture_function(row_norms, (x, np.zeros(8)), {}).graph)
    assert "omp_get_max_threads" not in serial.source
    assert "np_idle_threads(threads_before)" in threaded.source
    assert serial.fn(x) == running_total(x)
    np.testing.assert_array_equal(threaded.fn(x, np.zeros(8)), row_norms(x, np.zeros(8)))


def dots_of_computed_rows(x: Any, y: Any, out: Any) -> Any:
    for i in range(x.shape[0]):
        out[i] = np.dot(x[i] * 2.0, y[i])  # x[i] * 2.0 is written into a scratch buffer
    return out


def rows_shifted_in_place(a: Any) -> Any:
    for i in range(a.shape[0]):
        a[i, 1:] = a[i, :-1] * 2.0  # overlapping: through a temporary, as NumPy does
    return a


SHARED_BUFFERS = [
    (dots_of_computed_rows, lambda: (_rows(8, 5), _rows(9, 5)[:8], np.zeros(8))),
    (rows_shifted_in_place, lambda: (_rows(8, 5),)),
]


@pytest.mark.parametrize(
    ("fn", "make"), SHARED_BUFFERS, ids=[fn.__name__ for fn, _ in SHARED_BUFFERS]
)
def test_a_body_with_a_function_buffer_runs_serially(
    fn: Callable[..., Any], make: Callable[[], Any]
) -> None:
    # The buffer is one for all iterations: threads would write it at once (a data race).
    assert independent_iterations(_outer_loop(fn, make()))
    assert "#pragma omp for" not in _source(fn, make())
    n, m = 600, 3 * PARALLEL_WORK // 600
    args = (
        (_rows(n, m), _rows(n + 1, m)[:n], np.zeros(n))
        if fn is dots_of_computed_rows
        else (_rows(n, m),)
    )
    expected = tuple(a.copy() for a in args)
    np.testing.assert_array_equal(_compiled(fn)(*args), fn(*expected))
