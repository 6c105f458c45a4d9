"""Unseen programs, the third set (round 2's sixteenth session): fourteen of the forty-three
programs of `benchmarks.unseen_programs_third` against NumPy eager through the corpus
harness (values bit for bit on the eager backend, dtypes, `type()` of scalar results, the
inputs afterwards, aliasing of outputs with inputs, NumPy's warnings from the user's line)
at each of their sizes, trip counts 0 and 1 included.

Every program matched eager on the eager and C backends when the set was written; what it
found was slow, fixed with tests of their own:

- `popcount_uint32`, `bisection_per_element`, `dijkstra_dense`: a Python int stored into an
  int8 / int32 array (`counts[i] = c`) made the C backend run the loop op by op, 25-80x
  slower than eager; the store is range-checked in C now, bailing to NumPy's
  `OverflowError` outside the range (`test_inductor_loop_narrow_stores.py`);
- `goertzel_power`: a scalar recurrence whose carried types settle in its second iteration
  is not kept, and past the unroll budget it ran a compiled resume piece per iteration
  (0.04x eager); it runs whole in Python now (`test_capture_loop_region.py`).

``python -m benchmarks.unseen_loops`` / ``python -m benchmarks.unseen_arrays`` check all of
them on the C backend too, and time them.
"""

from __future__ import annotations

from typing import Any

import pytest
from harness import Program, run_program

import numpile
from benchmarks.unseen_array_programs import PROGRAMS as ARRAY_PROGRAMS
from benchmarks.unseen_loop_programs import PROGRAMS as LOOP_PROGRAMS

LOOPS = (
    "iir_biquad_float32",
    "goertzel_power",
    "popcount_uint32",
    "bisection_per_element",
    "dijkstra_dense",
    "connected_components_flood_fill",
    "ising_metropolis_int8",
    "integral_image_uint8",  # uint8 scalar overflow warnings from the user's line
    "bits_to_python_int",  # a Python int past int64
)
ARRAYS = (
    "integer_overflow_wraps",
    "division_by_zero_with_warnings",
    "out_arguments_into_views",
    "views_returned_alias_inputs",
    "unique_counts_and_inverse",
)


@pytest.fixture(autouse=True)
def _fresh() -> Any:
    numpile.reset()
    yield
    numpile.reset()


def _program(name: str) -> Program:
    if name in LOOP_PROGRAMS:
        loop = LOOP_PROGRAMS[name]
        return Program(name, "unseen_loops", loop.fn, loop.inputs, loop.sizes, fullgraph=False)
    entry = ARRAY_PROGRAMS[name]
    return Program(
        name,
        "unseen_arrays",
        entry.fn,
        entry.inputs,
        entry.sizes,
        fullgraph=False,
        rtol=entry.rtol,
        atol=entry.atol,
        expect_error=entry.expect_error,
    )


@pytest.mark.filterwarnings("ignore::numpile.NumpilePerformanceWarning")
@pytest.mark.parametrize("name", LOOPS + ARRAYS)
def test_matches_eager(name: str) -> None:
    assert run_program(_program(name), numpile.compile, "eager") == []
