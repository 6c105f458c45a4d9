"""`explain` names how the inductor runs each kept loop, and why not faster (issue 23).

Each program below gets one tier of the inductor: one C loop nest, a C loop calling its
body's kernels, a host loop calling its body compiled, op by op with NumPy, a first
iteration emitted apart, a run again with NumPy where a run-time flag is clear, and a C
loop handing a call to NumPy at run time (an int64 overflow). Each test asserts that
`explain`'s text names the loop's kind, its line and the reason, and that the compiled
function still gives eager's results.
"""

from __future__ import annotations

import inspect
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import numpile_runtime as rt
from numpile_capture import (
    C_KERNEL_LOOP,
    C_LOOP,
    FIRST_ITERATION_APART,
    HOST_LOOP,
    NUMPY_AT_RUN_TIME,
    NUMPY_RERUN,
    OP_BY_OP,
    ExplainOutput,
    LoopTier,
    compile_function,
    explain,
)
from numpile_capture.testing import assert_same_as_eager


def sum_of_squares(x: Any) -> Any:
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    return s


def same_sum_elsewhere(x: Any) -> Any:
    # The graph of `sum_of_squares`, captured at other lines: a graph cache hit.

    s = 0.0

    for i in range(x.shape[0]):
        s += x[i] * x[i]
    return s


def count_below(x: Any, limit: float) -> Any:
    k = 0
    while k < x.shape[0] and x[k] < limit:
        k += 1
    return k


def smooth(u: Any, n: int) -> Any:
    for _ in range(n):
        u[1:-1] = 0.5 * (u[:-2] + u[2:])
    return u


def sorted_rows(x: Any, n: int) -> Any:
    acc = np.zeros(x.shape[1])
    for i in range(n):
        acc = acc + np.sort(x[i])
    return acc


def lu_rows(a: Any) -> Any:
    n = a.shape[0]
    for k in range(n - 1):
        a[k + 1 :, k] /= a[k, k]
        a[k + 1 :, k + 1 :] -= np.outer(a[k + 1 :, k], a[k, k + 1 :])
    return a


def halving_sum(x: Any) -> Any:
    s = 0.0
    for i in range(x.shape[0]):
        s = s * 0.5 + x[i]  # a Python float in the first iteration, float32 after
    return s


def assigned_before_the_break_test(x: Any, n: int) -> Any:
    t = 0.0
    for i in range(n):
        for j in range(i, 8):
            t = t + x[j]
            if x[j] <= 0.5:
                break
    return t * np.float32(2.0)


def python_product_before(x: Any, z: Any, y: Any, n: int) -> Any:
    t = 1.1
    for i in range(n):
        y[i] = t * 2.0 * z[i]  # Python's `*` where `t` is a Python float
        k = i
        while x[k] > 0.5:
            t = t + x[k]
            k += 1
    return t, y


def powers(n: int) -> Any:
    c = 1
    for _ in range(n):
        c = c * 3  # past int64 after 39 iterations: the C loop hands the call to NumPy
    return c


def _line(fn: Callable[..., Any], text: str) -> str:
    # "file:line" of the first line of `fn` that holds `text`.
    lines, first = inspect.getsourcelines(fn)
    offset = next(k for k, line in enumerate(lines) if text in line)
    return f"{inspect.getsourcefile(fn)}:{first + offset}"


def _explained(fn: Callable[..., Any], *args: Any) -> tuple[ExplainOutput, str]:
    # `explain`'s output for fn(*args) (on copies), and its text.
    out = explain(fn)(*(_copy(a) for a in args))
    return out, str(out)


def _copy(value: Any) -> Any:
    return value.copy() if isinstance(value, np.ndarray) else value


def _tiers(out: ExplainOutput) -> list[LoopTier]:
    return [tier for graph in out.loop_tiers for tier in graph]


def _says(text: str, kind: str, where: str, tier: str, *reasons: str) -> None:
    # A line of `text` that names the loop, its tier and each of `reasons`.
    pattern = re.escape(f"{kind} loop ({where}) ") + r"runs( as)? " + re.escape(tier)
    found = [line for line in text.splitlines() if re.search(pattern, line)]
    assert found, f"no line says {kind} loop at {where} runs as {tier}:\n{text}"
    assert any(all(reason in line for reason in reasons) for line in found), found


def _same(fn: Callable[..., Any], *args: Any) -> None:
    compiled = compile_function(fn)
    assert_same_as_eager(compiled(*(_copy(a) for a in args)), fn(*(_copy(a) for a in args)))


def test_a_loop_of_scalar_work_is_one_c_loop_nest_and_nothing_else() -> None:
    x = np.arange(7.0)
    out, text = _explained(sum_of_squares, x)
    _says(text, "for", _line(sum_of_squares, "for i"), C_LOOP)
    assert [tier.tier for tier in _tiers(out)] == [C_LOOP]
    assert [tier.reason for tier in _tiers(out)] == [None]
    assert out.run_time_fallbacks == ()
    _same(sum_of_squares, x)


def test_a_cache_hit_names_the_lines_of_its_own_function() -> None:
    # One graph text from two functions: the second compile is a graph cache hit.
    x = np.arange(7.0)
    _, first = _explained(sum_of_squares, x)
    _, second = _explained(same_sum_elsewhere, x)
    _says(first, "for", _line(sum_of_squares, "for i"), C_LOOP)
    _says(second, "for", _line(same_sum_elsewhere, "for i"), C_LOOP)
    assert _line(sum_of_squares, "for i") not in second


def test_the_loop_records_survive_the_graph_cache(fresh_cache: Path) -> None:
    x = np.arange(7.0)
    cold = _explained(halving_sum, x.astype(np.float32))[1]
    misses = rt.counters().get("inductor_graph_cache_miss", 0)
    warm = _explained(halving_sum, x.astype(np.float32))[1]
    assert rt.counters().get("inductor_graph_cache_miss", 0) == misses  # all hits
    assert "Loops of graph 0:" in cold
    assert cold.split("Loops of graph 0:")[1] == warm.split("Loops of graph 0:")[1]


def test_a_while_loop_of_scalar_work_is_one_c_loop_nest() -> None:
    x = np.array([0.1, 0.2, 0.9, 0.3])
    _, text = _explained(count_below, x, 0.5)
    _says(text, "while", _line(count_below, "while k"), C_LOOP)
    _same(count_below, x, 0.5)


def test_a_body_of_array_work_is_a_c_loop_calling_its_kernels() -> None:
    u = np.arange(12.0) ** 2
    _, text = _explained(smooth, u, 3)
    _says(text, "for", _line(smooth, "for _"), C_KERNEL_LOOP, "no C loop nest")
    _same(smooth, u, 3)


def test_a_body_with_an_extern_is_a_host_loop_of_its_compiled_body() -> None:
    x = np.random.default_rng(0).random((4, 5))
    _, text = _explained(sorted_rows, x, 4)
    _says(text, "for", _line(sorted_rows, "for i"), HOST_LOOP, "sort", "no C loop of kernels")
    _same(sorted_rows, x, 4)


def test_shapes_that_follow_the_index_run_op_by_op() -> None:
    a = np.eye(5) * 4 + 1
    _, text = _explained(lu_rows, a)
    _says(text, "for", _line(lu_rows, "for k"), OP_BY_OP, "depends on the loop index")
    _same(lu_rows, a)


def test_a_first_iteration_on_other_types_is_emitted_apart() -> None:
    x = np.arange(6, dtype=np.float32)
    _, text = _explained(halving_sum, x)
    where = _line(halving_sum, "for i")
    _says(text, "for", where, C_LOOP)
    _says(text, "for", where, FIRST_ITERATION_APART, "other types")
    _same(halving_sum, x)


def test_a_flag_no_proof_covers_runs_the_loop_again_with_numpy() -> None:
    x = np.array([0.9] * 7 + [0.0])
    _, text = _explained(assigned_before_the_break_test, x, 3)
    where = _line(assigned_before_the_break_test, "for i")
    _says(text, "for", where, NUMPY_RERUN, "`t`")
    _same(assigned_before_the_break_test, x, 3)


def test_a_flagged_local_computed_on_both_ways_falls_back_with_its_reason() -> None:
    x = np.array([0.9] * 7 + [0.0])
    z = np.linspace(1, 2, 8, dtype=np.float32)
    y = np.zeros(8, np.float32)
    _, text = _explained(python_product_before, x, z, y, 5)
    where = _line(python_product_before, "for i")
    _says(text, "for", where, OP_BY_OP, "computes on `t`")
    # The inner loop, run from the op-by-op body, is a C loop module of its own.
    _says(text, "while", _line(python_product_before, "while x"), C_LOOP)
    _same(python_product_before, x, z, y, 5)


def test_a_c_loop_handing_calls_to_numpy_is_counted_and_said_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    out, text = _explained(powers, 50)
    where = _line(powers, "for _")
    _says(text, "for", where, C_LOOP)
    (fallback,) = out.run_time_fallbacks
    assert fallback.tier == NUMPY_AT_RUN_TIME
    assert f"for loop ({where}) ran {NUMPY_AT_RUN_TIME}" in text
    assert "int64 overflow" in text
    compiled = compile_function(powers)
    before = rt.counters().get("loop_c_handed_to_numpy", 0)
    with caplog.at_level(logging.INFO, logger="numpile.perf_hints"):
        for n in (50, 60, 10):
            assert_same_as_eager(compiled(n), powers(n))
    assert rt.counters().get("loop_c_handed_to_numpy", 0) - before == 2
    said = [r for r in caplog.records if NUMPY_AT_RUN_TIME in r.getMessage()]
    assert len(said) == 1 and where in said[0].getMessage()


def test_explain_waits_for_a_tiered_build(
    monkeypatch: pytest.MonkeyPatch, fresh_cache: Path
) -> None:
    # With tiering on, a graph cache miss would return before its build (NumPy meanwhile,
    # nothing decided yet): explain builds at once.
    monkeypatch.setenv("NUMPILE_TIERED", "1")
    _, text = _explained(sum_of_squares, np.arange(5.0))
    _says(text, "for", _line(sum_of_squares, "for i"), C_LOOP)
