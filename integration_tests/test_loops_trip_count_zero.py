"""Code after a loop that may run zero times computes with eager's types (issue 23, item 4).

A carried value changes type in a loop's first iteration (a Python `0.0` becomes
`np.float64`, a Python int an int64); after a loop of no iteration it keeps its type.
Each program runs compiled and eagerly at trip counts 0, 1 and several: the results must
have exactly eager's types (`type(got) is type(want)`) and values. A range of sizes or int
inputs guards its emptiness (one entry for every trip count from 1, one for 0); a `while`
or a loop that may `break` ends the graph after it; inside a kept body the rest of the
iteration is a `cond` on whether the inner loop ran.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from type_gap_programs import (
    float_in_breaking_for,
    float_in_inner_while,
    float_product_before_inner_while,
    inner_data,
    int_in_inner_while,
)

import numpile


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    numpile.reset()
    yield
    numpile.reset()


def float_into_float64(x: Any, y: Any, n: int) -> Any:
    s = 0.0
    for i in range(n):
        s = s + x[i]  # np.float64 after one iteration
    return s + 1.0, s + y[0]  # float32 for a Python float, float64 for a NumPy one


def int_into_int64(x: Any, n: int) -> Any:
    c = 2**62
    for i in range(n):
        c = c ^ x[i]
    return c * 4, c ^ 0xFFFFFFFF  # a Python int grows past int64, an int64 wraps


def over_rows(a: Any, n: int) -> Any:
    s = 0
    for row in a[:n]:
        s = s + row[0]
    return s * 3


def while_sum(x: Any, n: int) -> Any:
    s = 0.0
    k = 0
    while k < n:
        s = s + x[k]
        k += 1
    return s + 1.0, s * np.float32(2.0)


def sum_to_negative(x: Any, n: int) -> Any:
    s = 0.0
    for i in range(n):
        if x[i] < 0.0:
            break  # in the first iteration too: `s` stays a Python float
        s = s + x[i]
    return s * np.float32(2.0)


def inner_range_of_outer_index(x: Any, n: int) -> Any:
    acc = np.float32(0.0)
    for i in range(n):
        t = 0.0
        for j in range(i):  # empty at i = 0 inside a running outer loop
            t = t + x[j]
        acc = acc + t  # float32 for a Python float `t`, float64 for a NumPy one
    return acc


def inner_range_int_chain(x: Any, n: int) -> Any:
    acc = np.float32(0.0)
    for i in range(n):
        t = 0
        for j in range(i):  # empty at i = 0 inside a running outer loop
            t = t + x[j]  # float32 after one iteration
        acc = acc + t * 2  # float32 either way: the rest of the iteration is a cond
    return acc


def _x(n: int) -> Any:
    return np.arange(1.0, 9.0)


PROGRAMS: list[tuple[Callable[..., Any], Callable[[int], tuple[Any, ...]]]] = [
    (float_into_float64, lambda n: (_x(n), np.ones(2, np.float32), n)),
    (int_into_int64, lambda n: (np.arange(8), n)),
    (over_rows, lambda n: (np.arange(16).reshape(8, 2), n)),
    (while_sum, lambda n: (_x(n), n)),
    (sum_to_negative, lambda n: (np.array([-1.0, 2.0, 3.0, -4.0, 5, 6, 7, 8]) * (-1) ** n, n)),
    (inner_range_of_outer_index, lambda n: (_x(n), n)),
]


def _same(got: Any, want: Any) -> None:
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for one, other in zip(got, want, strict=True):
            _same(one, other)
        return
    assert type(got) is type(want), (got, want)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    assert got == want


@pytest.mark.parametrize(("fn", "make"), PROGRAMS, ids=[fn.__name__ for fn, _ in PROGRAMS])
def test_types_after_a_loop_match_eager_at_every_trip_count(
    fn: Callable[..., Any], make: Callable[[int], tuple[Any, ...]]
) -> None:
    compiled = numpile.compile(fn, backend="eager", dynamic=True)
    for n in (3, 1, 0, 2, 5):  # 1 right after 3: the same entry serves both
        _same(compiled(*make(n)), fn(*make(n)))


# NOTE: the programs whose graphs the eager backend runs right on any types (it computes
# on the objects the loop gives back); compiled to C, their types are the graph's.
AS_C = [(fn, make) for fn, make in PROGRAMS if fn in (sum_to_negative, inner_range_of_outer_index)]


@pytest.mark.parametrize(("fn", "make"), AS_C, ids=[fn.__name__ for fn, _ in AS_C])
def test_types_after_a_loop_match_eager_as_c(
    fn: Callable[..., Any], make: Callable[[int], tuple[Any, ...]]
) -> None:
    compiled = numpile.compile(fn, dynamic=True)
    for n in (3, 1, 0, 2, 5):
        _same(compiled(*make(n)), fn(*make(n)))


def test_an_empty_range_compiles_one_entry_and_every_other_trip_count_shares_one() -> None:
    from numpile_guards import cache_for

    compiled = numpile.compile(float_into_float64, dynamic=True)
    y = np.ones(2, np.float32)
    for n in (3, 0, 1, 8, 0):
        _same(compiled(_x(n), y, n), float_into_float64(_x(n), y, n))
    assert len(cache_for(float_into_float64.__code__).entries) == 2


def test_a_loop_whose_trip_count_only_the_run_time_knows_ends_the_graph() -> None:
    report = numpile.explain(sum_to_negative)(_x(3), 3)
    (reason,) = [b.reason for b in report.break_reasons]
    assert "the type of `s` (float before the loop, float64 after an iteration)" in reason
    assert "depends on whether it ran" in reason


def test_an_inner_loop_of_no_iteration_in_a_running_loop_is_a_cond_in_c(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from numpile_guards import cache_for

    compiled = numpile.compile(inner_range_int_chain, dynamic=True)
    x = np.arange(8.0, dtype=np.float32)
    with caplog.at_level(logging.INFO, logger="numpile.perf_hints"):
        for n in (3, 1, 0, 2, 6):
            _same(compiled(x, n), inner_range_int_chain(x, n))
    assert len(cache_for(inner_range_int_chain.__code__).entries) == 1
    assert not [r for r in caplog.records if "per iteration" in r.getMessage()]
    (graph,) = numpile.explain(inner_range_int_chain)(x, 4).graphs
    assert "cond(" in str(graph)


def while_of_scalar_input(x: Any, limit: Any) -> Any:
    s = 0.0
    k = np.float64(0.0)
    while k < limit:  # a NumPy scalar input: the first test is guarded
        s = s + x[int(k)]
        k += 1.0
    return s * np.float32(2.0)


def while_writing_in_place(x: Any, y: Any, n: int) -> Any:
    s = 0
    k = 0
    while k < n:
        y[k] = s
        s = s + x[k]  # int64 after one iteration
        k += 1
    return s * 2**62, y  # a Python int grows, an int64 wraps


def inner_while_of_int_input(x: Any, n: int, m: int) -> Any:
    acc = np.float32(0.0)
    for i in range(n):
        t = 0.0
        k = 0
        while k < m:  # the same first test in every iteration: guarded
            t = t + x[i + k]
            k += 1
        acc = acc + t  # float32 for a Python float `t`, float64 for a NumPy one
    return acc


def test_a_while_on_guarded_values_stays_one_graph_with_an_entry_per_first_test() -> None:
    from numpile_guards import cache_for

    compiled = numpile.compile(while_sum, dynamic=True, backend="eager")  # C: the next test
    for n in (3, 0, 1, 5, 0):
        _same(compiled(_x(n), n), while_sum(_x(n), n))
    assert len(cache_for(while_sum.__code__).entries) == 2  # one graph for n > 0, one for 0


def test_a_while_on_a_numpy_scalar_input_guards_its_first_test() -> None:
    compiled = numpile.compile(while_of_scalar_input, dynamic=True, backend="eager")
    for limit in (2.5, 0.0, 1.0, -1.0, 4.0):
        want = while_of_scalar_input(_x(0), np.float64(limit))
        _same(compiled(_x(0), np.float64(limit)), want)
    assert not numpile.explain(while_of_scalar_input)(_x(0), np.float64(0.0)).break_reasons


def test_a_guarded_while_writes_in_place_as_eager() -> None:
    from numpile_guards import cache_for

    compiled = numpile.compile(while_writing_in_place, dynamic=True)
    for n in (3, 0, 1, 6):
        got_y, want_y = np.full(8, -1), np.full(8, -1)
        got, got_out = compiled(np.arange(1, 9), got_y, n)
        want, _ = while_writing_in_place(np.arange(1, 9), want_y, n)
        _same(got, want)
        assert got_out is got_y
        np.testing.assert_array_equal(got_y, want_y)
    assert len(cache_for(while_writing_in_place.__code__).entries) == 2


def test_an_inner_while_on_guarded_values_takes_eager_types_in_c() -> None:
    compiled = numpile.compile(inner_while_of_int_input, dynamic=True)
    x = np.arange(16.0)
    for n, m in ((3, 2), (3, 0), (0, 0), (2, 1), (4, 0)):
        _same(compiled(x, n, m), inner_while_of_int_input(x, n, m))


@pytest.mark.parametrize(
    ("fn", "backend"),
    [
        pytest.param(float_in_inner_while, "eager", id="float-eager"),
        pytest.param(int_in_inner_while, "eager", id="int-eager"),
        pytest.param(float_in_inner_while, None, id="float-c"),
        pytest.param(int_in_inner_while, None, id="int-c"),
    ],
)
def test_an_inner_while_on_array_data_that_never_runs_keeps_eager_types(
    fn: Callable[..., Any], backend: str | None
) -> None:
    options = {} if backend is None else {"backend": backend}
    compiled = numpile.compile(fn, dynamic=True, **options)
    integer = fn is int_in_inner_while
    for n in (3, 0, 1, 3):
        for kind in ("never", "sometimes", "always"):
            _same(compiled(inner_data(kind, integer), n), fn(inner_data(kind, integer), n))


@pytest.mark.parametrize("backend", ["eager", None], ids=["eager", "c"])
def test_a_breaking_inner_for_that_never_assigns_keeps_eager_types_and_writes_once(
    backend: str | None,
) -> None:
    options = {} if backend is None else {"backend": backend}
    compiled = numpile.compile(float_in_breaking_for, dynamic=True, **options)
    for n in (3, 0, 1, 3):
        for kind in ("never", "sometimes", "always"):
            got_y, want_y = np.zeros(8), np.zeros(8)
            got, got_out = compiled(inner_data(kind, False), got_y, n)
            want, _ = float_in_breaking_for(inner_data(kind, False), want_y, n)
            _same(got, want)
            assert got_out is got_y
            np.testing.assert_array_equal(got_y, want_y)


def test_work_on_a_flagged_local_before_an_inner_loop_ran_runs_as_c_with_eager_types(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fn = float_product_before_inner_while
    compiled = numpile.compile(fn, dynamic=True)
    z = np.linspace(0.3, 2.9, 8).astype(np.float32)  # products that round otherwise in float32
    with caplog.at_level(logging.INFO, logger="numpile.perf_hints"):
        for n in (5, 0, 1, 5):
            for kind in ("never", "sometimes", "always"):
                got_y, want_y = np.zeros(8, np.float32), np.zeros(8, np.float32)
                got, got_out = compiled(inner_data(kind, False), z, got_y, n)
                want, _ = fn(inner_data(kind, False), z, want_y, n)
                _same(got, want)  # a Python float where no inner loop ran
                assert got_out is got_y
                assert got_y.tobytes() == want_y.tobytes()
    assert "with NumPy" not in caplog.text  # no run of the loop with NumPy, no fallback


def assigned_outside_too(x: Any, n: int) -> Any:
    t = 0.0
    for i in range(n):
        k = i
        while x[k] > 0.5:
            t = t + x[k]
            k += 1
        if i == 2:
            t = x[i] * 1.0  # float64 where no inner loop ran: C's flag cannot tell
    return t * np.float32(2.0)


def read_in_the_loop(x: Any, y: Any, n: int) -> Any:
    t = 0.1
    for i in range(n):
        k = i
        while x[k] > 0.5:
            t = t + x[k]
            k += 1
        y[i] = t * np.float32(1.1)  # float32 product where no inner loop ran yet
    return t * np.float32(2.0), y


def inner_while_in_a_while_on_data(x: Any, n: int) -> Any:
    t = 0.1
    i = 0
    while x[i] < 5.0:  # ends the graph: its C function keeps the inner loop's flag
        k = i
        while 0.5 < x[k] < 5.0:
            t = t + x[k]
            k += 1
        i += 1
    return t * np.float32(2.0)


def reset_in_an_outer_loop(x: Any, y: Any, n: int, m: int) -> Any:
    for j in range(m):
        t = 0.1  # a Python float again in each outer iteration
        for i in range(n):
            k = i + 4 * j
            while x[k] > 0.5:
                t = t + x[k]
                k += 1
        y[j] = t * np.float32(1.1)  # read where the graph cannot end after the loop
    return y


@pytest.mark.parametrize(
    "fn", [assigned_outside_too, read_in_the_loop, inner_while_in_a_while_on_data]
)
def test_a_flagged_local_the_loop_also_reads_or_assigns_keeps_eager_types_in_c(
    fn: Callable[..., Any],
) -> None:
    compiled = numpile.compile(fn, dynamic=True)
    for n in (3, 0, 1, 3):
        for kind in ("never", "sometimes", "always"):
            x = inner_data(kind, False)
            if fn is inner_while_in_a_while_on_data:
                x[n] = 9.0  # where the outer `while` stops
            args: tuple[Any, ...] = (x, n) if fn is not read_in_the_loop else (x, np.zeros(8), n)
            theirs = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
            got, want = compiled(*args), fn(*theirs)
            if fn is read_in_the_loop:
                np.testing.assert_array_equal(args[1], theirs[1])
                got, want = got[0], want[0]
            _same(got, want)
    graph = str(numpile.explain(fn)(*args).graphs[0])
    assert ("entry_unless_ran=" in graph) is (fn is inner_while_in_a_while_on_data)


@pytest.mark.parametrize("backend", ["eager", None], ids=["eager", "c"])
def test_a_flagged_local_inside_another_kept_loop_keeps_eager_types(backend: str | None) -> None:
    options = {} if backend is None else {"backend": backend}
    compiled = numpile.compile(reset_in_an_outer_loop, dynamic=True, **options)
    for n, m in ((3, 2), (0, 2), (1, 2), (3, 1)):
        for runs in (1, 5, None):  # the inner loop runs in the first outer iteration, the second
            x = np.zeros(12)
            if runs is not None:
                x[runs] = 0.9
            got_y, want_y = np.zeros(m, np.float32), np.zeros(m, np.float32)
            compiled(x, got_y, n, m)
            reset_in_an_outer_loop(x, want_y, n, m)
            np.testing.assert_array_equal(got_y, want_y)
