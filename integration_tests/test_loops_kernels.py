"""Loops with array-sized bodies (time-stepped stencils, particle steps, in-place updates)
run as one C loop calling the body's fused kernels: no body run with NumPy per iteration,
and one compiled loop for every trip count. Values, in-place effects and errors are the
corpus' checks (programs_loops.py); these tests check the path.
"""

from __future__ import annotations

import logging

import numpy as np
import programs_loops
import pytest
from harness import loop_inputs

import numpile
from benchmarks.unseen_loop_programs import PROGRAMS

# NOTE: corpus programs of the loops theme whose loops have array-sized bodies.
KERNEL_LOOPS = (
    "jacobi_2d_steps_argument",
    "stencil_into_the_argument_in_place",
    "heat_2d_swapping_buffers",
    "leapfrog_in_place_with_the_index",
    "particles_carried_anew",
    "stores_overlapping_their_reads",
    "int_counts_with_mask_and_index",
    "jacobi_2d_time_steps",
    "heat_1d_swapping_buffers",
    "particles_time_steps",
    "mandelbrot_escape_counts",
    # rows by the loop index (`A[i]`, `for x in xs`): views moved per iteration
    "rows_accumulate_squares",
    "blocks_of_a_3d_array",
    "rows_of_a_reversed_view",
    "int8_array_accumulator_wraps",
    "rnn_state_carried",
)


@pytest.mark.parametrize("name", KERNEL_LOOPS)
def test_array_body_runs_as_a_c_loop_of_kernels(
    name: str, caplog: pytest.LogCaptureFixture
) -> None:
    fn = getattr(programs_loops, name)
    assert numpile.explain(fn)(*loop_inputs(name, 5)).loops_not_kept == ()
    compiled = numpile.compile(fn, fullgraph=True)
    with caplog.at_level(logging.INFO, logger="numpile.perf_hints"):
        compiled(*loop_inputs(name, 5))
    assert not [r for r in caplog.records if "per iteration" in r.getMessage()]


def test_new_trip_counts_reuse_the_compiled_loop() -> None:
    # The trip count is a Python int: baked in at the first call, a graph input once it
    # changes (0 and 1 are specialized, as sizes are); later counts reuse that entry.
    from numpile_guards import cache_for

    fn = programs_loops.jacobi_2d_steps_argument
    compiled = numpile.compile(fn)
    grid = np.random.default_rng(0).standard_normal((6, 7))
    entries = 0
    for steps in (3, 5, 7, 12, 2):
        got = compiled(grid.copy(), steps)
        want = fn(grid.copy(), steps)
        for mine, eager in zip(got, want, strict=True):
            np.testing.assert_array_equal(mine, eager)
        if steps == 5:
            entries = len(cache_for(fn.__code__).entries)
    assert len(cache_for(fn.__code__).entries) == entries


def test_rows_of_a_symbolic_shape_run_as_a_c_loop_of_kernels() -> None:
    # atax with dynamic shapes: `for row in A` gives rows of `s1` elements (the body's
    # elements and carried floats are the inductor's tests). No host loop runs it.
    import numpile_runtime as rt

    entry = PROGRAMS["atax_over_rows"]
    compiled = numpile.compile(entry.fn, fullgraph=True, dynamic=True)
    for n in (4, 7):
        rt.reset_counters()
        args = entry.inputs(np.random.default_rng(n), n)
        np.testing.assert_allclose(compiled(*args), entry.fn(*args), rtol=1e-12)
        assert not {"loop_op_by_op_runs", "loop_host_runs"} & set(rt.counters())
