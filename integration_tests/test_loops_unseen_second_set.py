"""Unseen loops, the second set (issue 23): the thirty programs of
`benchmarks.unseen_loop_programs_more` against NumPy eager through the corpus harness
(values bit for bit on the eager backend, dtypes, `type()` of scalar results, the inputs
afterwards, aliasing) at trip counts 0 and 1 too; each kept whole (no graph break, no loop
left to Python) unless its entry says it breaks, and called at ten times its trip count
without a new capture. A few run as C.

What the set found, fixed with tests of their own in the capture layer:

- `viterbi_log`: `path[n - 1] = last` and `score[n - 1, k]` pinned `n` (a guard), so every
  new trip count captured and compiled again (`test_capture_size_indices.py`);
- `kadane_from_the_first_element`, `min_max_with_nans_float32`: `max()` / `min()` of NumPy
  float scalars left the loop to Python; they are Python's pick now, as `where` of its
  comparison, NaNs and signed zeros included (`test_capture_min_max.py`);
- `enumerate_zip_weighted`, `jacobi_1d_until_converged`: the length of a zip of arrays and
  `maxit` in `while err > tol and it < maxit` were baked in, a second capture per new trip
  count (`test_capture_bound_origins.py`); the while loop's body of array work ran op by
  op with NumPy, its element loop included, 40x slower than NumPy at n=200: it runs
  compiled per iteration now (`test_inductor_while_bodies.py`);
- `write_through_a_view` (a loop bounded by a view's size), `newton_while_abs_dx` (a
  Python float argument), `csr_matvec` (the nonzero count) and `lu_partial_pivoting`
  (`np.arange(n)`) captured once more at a new size: not any more
  (`test_capture_bound_origins.py`).

Left as they are, with the reason `explain` gives: `smith_waterman` and
`kadane_max_subarray` (`max(0, h)`, `max(-np.inf, cur)`: the item Python returns, and so
its type, depends on the values), `newton_while_abs_dx` (its inner loop's `dp` changes
type in its second iteration).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from harness import Program, run_program

import numpile
from benchmarks.unseen_loop_programs import PROGRAMS
from benchmarks.unseen_loop_programs_more import (
    lu_partial_pivoting,
    seidel_fortran_input,
)
from numpile_capture.capture_events import recording_captures

SECOND_SET = [name for name, entry in PROGRAMS.items() if entry.fn.__module__.endswith("_more")]

# The few run as C (each entry is a compile): a size as an index; the float pick, on
# float32 with NaNs.
AS_C = ("viterbi_log", "min_max_with_nans_float32")


@pytest.fixture(autouse=True)
def _fresh() -> Any:
    numpile.reset()
    yield
    numpile.reset()


def _program(name: str, sizes: tuple[int, ...] | None = None) -> Program:
    entry = PROGRAMS[name]
    return Program(
        name,
        "unseen_loops",
        entry.fn,
        entry.inputs,
        sizes or entry.sizes,
        fullgraph=not entry.breaks,
    )


def _inputs(name: str, n: int) -> tuple[Any, ...]:
    return tuple(PROGRAMS[name].inputs(np.random.default_rng(n), n))


@pytest.mark.filterwarnings("ignore::numpile.NumpilePerformanceWarning")
@pytest.mark.parametrize("name", SECOND_SET)
def test_matches_eager(name: str) -> None:
    assert run_program(_program(name), numpile.compile, "eager") == []


# Loops unrolled, with the reason `explain` gives: `dp = dp * x + p` is a Python float in
# the first iteration, a NumPy float64 from the second (`p` is one after the first).
NOT_KEPT = {"newton_while_abs_dx": "the carried types change over more than one iteration"}


@pytest.mark.parametrize("name", [n for n in SECOND_SET if not PROGRAMS[n].breaks])
def test_kept_whole_and_not_captured_again_at_ten_times_the_trip_count(name: str) -> None:
    explained = numpile.explain(PROGRAMS[name].fn)(*_inputs(name, 3))
    assert explained.graph_break_count == 0
    reasons = [str(loop) for loop in explained.loops_not_kept]
    assert all(NOT_KEPT[name] in reason for reason in reasons) if name in NOT_KEPT else not reasons
    numpile.reset()  # what explain's capture observed must not widen the inputs below
    compiled = numpile.compile(PROGRAMS[name].fn, backend="eager")
    compiled(*_inputs(name, 2))
    with recording_captures() as events:
        compiled(*_inputs(name, 20))
    assert events == []


@pytest.mark.parametrize("name", AS_C)
def test_matches_eager_as_c(name: str) -> None:
    # Sizes 0 and 1 would each compile once more (their entries are specialized).
    assert run_program(_program(name, (6, 9)), numpile.compile, "inductor") == []


def test_an_output_from_a_fortran_order_copy_keeps_numpys_layout_on_c() -> None:
    compiled = numpile.compile(seidel_fortran_input)
    got = compiled(*_inputs("seidel_fortran_input", 5))
    assert (
        got.flags.f_contiguous
        == seidel_fortran_input(*_inputs("seidel_fortran_input", 5)).flags.f_contiguous
    )


def test_row_swaps_by_a_list_index_keep_the_pivoting_loop_and_match_eager_on_c() -> None:
    explained = numpile.explain(lu_partial_pivoting)(*_inputs("lu_partial_pivoting", 7))
    assert explained.loops_not_kept == ()
    assert explained.graph_break_count == 0
    numpile.reset()
    compiled = numpile.compile(lu_partial_pivoting, fullgraph=True, dynamic=True)
    for n in (0, 1, 2, 5, 30):
        rng = np.random.default_rng(n)
        # random pivots swap; a diagonally dominant matrix swaps no row
        for a in (rng.standard_normal((n, n)), rng.random((n, n)) + n * np.eye(n)):
            mine, eager = a.copy(), a.copy()
            got, want = compiled(mine), lu_partial_pivoting(eager)
            for x, y in zip(got, want, strict=True):
                assert x.dtype == y.dtype
                np.testing.assert_array_equal(x, y)
            np.testing.assert_array_equal(mine, eager)
