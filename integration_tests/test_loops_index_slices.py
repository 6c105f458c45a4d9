"""Loops whose bodies slice by the loop index (`A[i, :j]`, `x[i:]`, `r[k - 1 :: -1]`) stay
loops end to end: capture keeps each one (the index is a bounded size symbol), and the
inductor runs the whole nest as C (no body run with NumPy per iteration). Values, in-place
effects and errors are the corpus' checks (programs_loops.py); these tests check the path.
"""

from __future__ import annotations

import logging

import numpy as np
import programs_loops
import pytest
from harness import loop_inputs

import numpile

# NOTE: corpus programs of the loops theme whose every loop slices or indexes by the index.
KEPT_AS_C = (
    "prefix_sums_by_growing_slices",
    "suffix_times_reversed_prefix_dot",
    "triangular_row_scaling_in_place",
    "gaussian_elimination_row_updates",
    "reversed_prefix_overlaps_its_store",
    "shifted_row_add_in_place_overlaps",
    "shift_right_by_index_overlapping",
    "negative_step_loop_with_suffix_slices",
    "slices_past_the_end_clamp",
    "forward_substitution_by_slices",
    "back_substitution_by_slices",
    "int_rows_prefix_dot_products",
    "index_slice_as_scalar_fill",
    "lu_row_by_row_in_place",
    "cholesky_row_by_row",
    "levinson_durbin",
    "floyd_warshall_rows_in_place",
)


@pytest.mark.parametrize("name", KEPT_AS_C)
def test_index_sliced_loop_is_kept_and_runs_as_c(
    name: str, caplog: pytest.LogCaptureFixture
) -> None:
    fn = getattr(programs_loops, name)
    assert numpile.explain(fn)(*loop_inputs(name, 5)).loops_not_kept == ()
    compiled = numpile.compile(fn, fullgraph=True)
    with caplog.at_level(logging.INFO, logger="numpile.perf_hints"):
        compiled(*loop_inputs(name, 5))
    assert not [r for r in caplog.records if "per iteration" in r.getMessage()]


def test_new_trip_counts_reuse_one_dynamic_entry() -> None:
    from numpile_guards import cache_for

    fn = programs_loops.lu_row_by_row_in_place
    compiled = numpile.compile(fn, dynamic=True)
    for n in (3, 6, 11):
        got = compiled(*loop_inputs("lu_row_by_row_in_place", n))
        np.testing.assert_allclose(got, fn(*loop_inputs("lu_row_by_row_in_place", n)))
    assert len(cache_for(fn.__code__).entries) == 1
