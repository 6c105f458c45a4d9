"""Split reductions in one kernel, and the default mode's reduction tuning, interpreted.

`codegen/triton/split.py` finishes a split reduction in the kernel that splits it: the
last program to count runs stage 2 and resets the counter. Under `TRITON_INTERPRET=1`
programs run one after another, so the last one is the program the grid ends with;
the tests check NumPy's values, dtypes and shapes around the split thresholds, that a
second call (and a second launch) finds the counter at zero, and that the default mode's
tuning (`codegen/triton/autotune.py`) times nothing here but reads a stored choice.
Run alone, as `test_inductor_triton.py` is (nox session `tests-triton-interpret`).
"""

from __future__ import annotations

import math
import os
from typing import Any

import attrs
import numpy as np
import pytest
import triton_interpreter  # noqa: F401 - first: it chooses Triton's interpreter

import numpile_runtime as rt
from numpile_capture import Graph, get_op, meta_of, run_graph
from numpile_inductor import TritonOptions
from numpile_inductor.codegen.triton import runner
from numpile_inductor.codegen.triton.autotune import reduction_key
from numpile_inductor.codegen.triton.backend import compile_triton

_RNG = np.random.default_rng(34)
# Rows of 64 elements or more split, in chunks of 32 elements or more, 16 programs at most.
_SPLIT = TritonOptions(
    max_xblock=64, max_rblock=32, max_tile=256, looped_rblock=32, split_programs=16
)


def _compile(x: np.ndarray[Any, Any], kind: str, axis: Any, options: TritonOptions) -> Any:
    graph = Graph()
    node = graph.placeholder("in0", meta_of(x))
    graph.output = graph.call(get_op(kind), node, axis=axis)
    return graph, compile_triton(graph, options=options)


def _check(got: Any, want: Any, x: np.ndarray[Any, Any], kind: str, axis: Any) -> None:
    assert type(got) is type(want) and got.dtype == want.dtype
    assert np.shape(got) == np.shape(want)
    if kind in ("sum", "mean") and x.dtype.kind == "f":
        # tree order, not NumPy's pairwise one: within the bound the unsplit kernel has
        rtol = 8 * float(np.finfo(x.dtype).eps) * max(1.0, math.log2(max(x.size, 2)))
        scale = np.abs(x).sum(axis=axis) if kind == "sum" else np.abs(x).mean(axis=axis)
        ok = np.abs(got - want) <= rtol * (scale + 1)
        assert np.all(ok | (np.isnan(got) & np.isnan(want))), (got, want)
    elif kind == "prod" and x.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-4 if x.dtype == np.float32 else 1e-12)
    else:
        np.testing.assert_array_equal(got, want)


def _every_kind(g: Graph, a: Any) -> tuple[Any, ...]:
    def op(name: str, *args: Any, **kwargs: Any) -> Any:
        return g.call(get_op(name), *args, **kwargs)

    return (
        op("sum", a),
        op("prod", op("sign", a)),  # products that neither overflow nor vanish
        op("max", a),
        op("min", a),
        op("mean", a),
        op("any", op("greater", a, 2.5)),
        op("all", op("less", a, 2.5)),
    )


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_one_kernel_split_matches_numpy_around_the_split_thresholds(dtype: str) -> None:
    # 63: not split; 64: two chunks; 65 and 700: a short last chunk.
    for size in (63, 64, 700) if dtype == "float64" else (64, 65):
        if dtype.startswith("int"):
            x = _RNG.integers(-3, 4, size=size).astype(dtype)
        else:
            x = (_RNG.normal(size=size) * 2).astype(dtype)
        graph = Graph()
        graph.output = _every_kind(graph, graph.placeholder("in0", meta_of(x)))
        compiled = compile_triton(graph, options=_SPLIT)
        assert compiled.module is not None
        names = [kernel.name for kernel in compiled.module.kernels]
        split = [name for name in names if name.endswith("_split")]
        assert (split == names and "_finish(" in compiled.source) == (size >= 64), names
        got, want = compiled.fn(x), run_graph(graph, [x])
        kinds = ["sum", "prod", "max", "min", "mean", "any", "all"]
        for kind, g_, w_ in zip(kinds, got, want, strict=True):
            _check(g_, w_, x, kind, None)


@pytest.mark.parametrize("kind", ["max", "min", "sum"])
def test_nan_and_all_nan_rows_propagate_through_the_finish(kind: str) -> None:
    x = _RNG.normal(size=(3, 300))
    x[1, 290] = np.nan  # in the last chunk of a row
    x[2] = np.nan
    graph, compiled = _compile(x, kind, 1, _SPLIT)
    assert compiled.kernel_count == 1 and "_finish(" in compiled.source
    np.testing.assert_array_equal(compiled.fn(x)[1:], run_graph(graph, [x])[1:])


def test_empty_and_chunk_major_splits_match_numpy() -> None:
    empty = np.zeros(0)
    graph, compiled = _compile(empty, "sum", None, _SPLIT)
    assert compiled.fn(empty) == run_graph(graph, [empty]) == 0.0
    tall = _RNG.normal(size=(3000, 3))  # few columns over many rows: chunk-major
    for kind in ("max", "sum"):
        graph, compiled = _compile(tall, kind, 0, _SPLIT)
        assert compiled.kernel_count == 1 and "chunk-major" in compiled.source
        _check(compiled.fn(tall), run_graph(graph, [tall]), tall, kind, 0)


def test_the_finishing_program_resets_the_counter_for_the_next_call_and_launch() -> None:
    x = _RNG.normal(size=1000)
    _, compiled = _compile(x, "max", None, _SPLIT)
    runner = compiled.fn
    first, second = runner(x), runner(x)  # a counter left at its count would finish nothing
    assert first == second == x.max()
    (scratch,) = runner.scratch.held().values()
    *partials, counter = scratch
    assert counter.dtype == np.int32 and counter.tolist() == [0]
    assert [p.dtype for p in partials] == [np.dtype("float64")]
    y = -x  # two calls in a row on other values: each finishes with its own
    assert runner(y) == y.max() and runner(x) == x.max()


def test_the_partials_are_allocated_once_and_every_call_gets_its_own_result() -> None:
    x = _RNG.normal(size=(2, 300))
    _, compiled = _compile(x, "sum", 1, _SPLIT)
    runner = compiled.fn
    first = runner(x)
    (kept,) = runner.scratch.held().values()
    for scale in (2.0, -1.0, 0.0):
        np.testing.assert_allclose(runner(x * scale), (x * scale).sum(axis=1), rtol=1e-12)
    (again,) = runner.scratch.held().values()
    assert all(a is b for a, b in zip(kept, again, strict=True))
    np.testing.assert_allclose(first, x.sum(axis=1), rtol=1e-12)


def test_a_float_sum_is_the_same_from_run_to_run() -> None:
    x = _RNG.normal(size=1000) * 1e6
    _, compiled = _compile(x, "sum", None, _SPLIT)
    results = {float(compiled.fn(x)) for _ in range(3)}
    assert len(results) == 1


def test_two_kernels_remain_an_option_and_agree() -> None:
    x = _RNG.normal(size=(2, 200)).astype(np.float32)
    _, one = _compile(x, "max", 1, _SPLIT)
    _, two = _compile(x, "max", 1, attrs.evolve(_SPLIT, split_in_one_kernel=False))
    assert one.kernel_count == 1 and two.kernel_count == 2
    assert "_finish(" not in two.source
    np.testing.assert_array_equal(one.fn(x), two.fn(x))


def _launches(monkeypatch: Any) -> list[tuple[str, int, int, int]]:
    # Every launch's kernel and configuration (xblock, rblock, warps), as the runner calls it.
    seen: list[tuple[str, int, int, int]] = []
    call = runner.TritonRunner._call

    def record(self: Any, kernel: Any, *args: Any) -> None:
        seen.append((kernel.name, kernel.xblock, kernel.rblock, kernel.num_warps))
        call(self, kernel, *args)

    monkeypatch.setattr(runner.TritonRunner, "_call", record)
    return seen


def test_reduction_tuning_times_nothing_interpreted_and_reads_a_stored_choice(
    fresh_cache: Any, monkeypatch: Any
) -> None:
    def no_timing(*args: Any) -> float:
        raise AssertionError("a launch was timed without a GPU")

    monkeypatch.setattr(runner, "_time", no_timing)
    seen = _launches(monkeypatch)
    x = _RNG.normal(size=(4, 300))
    _, compiled = _compile(x, "sum", 1, attrs.evolve(_SPLIT, split_reductions=False))
    assert compiled.module is not None
    (kernel,) = compiled.module.kernels
    np.testing.assert_allclose(compiled.fn(x), x.sum(axis=1))
    assert seen == [(kernel.name, kernel.xblock, kernel.rblock, kernel.num_warps)]
    assert not [key for key in os.listdir(fresh_cache) if "triton-tune" in key]
    # a choice stored (by a GPU process) for this kernel and shape class: the next compile
    # launches with it, and still gives NumPy's sums
    key = reduction_key(kernel, (4, 300), ("float64", "float64"), False, "interpreter")
    choice = {"xblock": 1, "rblock": kernel.rblock // 2, "num_warps": 2}
    rt.default_cache().put_bytes(key, repr(choice).replace("'", '"').encode())
    _, again = _compile(x, "sum", 1, attrs.evolve(_SPLIT, split_reductions=False))
    seen.clear()
    np.testing.assert_allclose(again.fn(x), x.sum(axis=1))
    assert seen == [(kernel.name, 1, kernel.rblock // 2, 2)]


def test_reduction_candidates_are_few_and_start_with_the_heuristic_choice() -> None:
    from numpile_inductor.codegen.triton.autotune import REDUCTION_CANDIDATES, reduction_candidates

    x = _RNG.normal(size=(4, 300))
    for options in (_SPLIT, attrs.evolve(_SPLIT, split_reductions=False)):
        _, compiled = _compile(x, "sum", 1, options)
        assert compiled.module is not None
        for kernel in compiled.module.kernels:
            found = reduction_candidates(kernel)
            assert found[0] == kernel and 1 < len(found) <= REDUCTION_CANDIDATES
            configs = {(k.xblock, k.rblock, k.num_warps) for k in found}
            assert len(configs) == len(found)


def test_reduction_tuning_is_bounded_in_candidates_and_time(fresh_cache: Any) -> None:
    from numpile_inductor.codegen.triton.autotune import (
        REDUCTION_BUDGET_S,
        REDUCTION_WORTH_S,
        reduction_candidates,
        tune,
    )

    x = _RNG.normal(size=(4, 300))
    _, compiled = _compile(x, "sum", 1, attrs.evolve(_SPLIT, split_reductions=False))
    assert compiled.module is not None
    (kernel,) = compiled.module.kernels
    choices = reduction_candidates(kernel)

    def timed(seconds: list[float]) -> tuple[Any, list[Any]]:
        seen: list[Any] = []

        def time_launch(candidate: Any) -> float:
            seen.append(candidate)
            return seconds[len(seen) - 1]

        key = f"triton-tune-test-{seconds[0]}"
        best = tune(
            kernel,
            time_launch,
            key,
            choices=choices,
            budget_s=REDUCTION_BUDGET_S,
            worth_s=REDUCTION_WORTH_S,
        )
        return best, seen

    best, seen = timed([REDUCTION_WORTH_S / 2, 0.0, 0.0, 0.0])  # too short to be worth it
    assert seen == [kernel] and best == kernel
    slow = [REDUCTION_BUDGET_S * 0.6, REDUCTION_BUDGET_S * 0.5, 0.0, 0.0]
    best, seen = timed(slow)  # the budget is spent after two
    assert len(seen) == 2 and best == choices[1]
    best, seen = timed([1e-3, 2e-3, 5e-4, 3e-3])  # every candidate, the fastest kept
    assert seen == choices and best == choices[2]
