"""Unseen programs, the fifth set (round 2's eighteenth session): the programs of
`benchmarks.unseen_programs_fifth` against NumPy eager through the corpus harness, with the
default backend (the inductor: C loops) and with the eager backend (values bit for bit),
at each of their sizes, trip counts 0 and 1 included: values, dtypes, `type()` of scalar
results, the inputs afterwards, aliasing, exceptions (type and message) and NumPy's
warnings from the user's line.

CI runs `CI_C` on the C backend and `CI_EAGER` on the eager one (the two bugs the set found,
warnings, exceptions, in-place writes; under a minute together); every other pair is marked
``slow`` and runs with ``NUMPILE_UNSEEN_ALL=1``::

    NUMPILE_UNSEEN_ALL=1 pytest -n 2 integration_tests/test_unseen_fifth_set.py

``python -m benchmarks.unseen_loops --only 'sos_cascade*'`` checks and times any of them.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from harness import Program, run_program

import numpile
from benchmarks import unseen_programs_fifth
from benchmarks.unseen_loop_programs import PROGRAMS

#: Every program of the fifth set, in the order of its module.
FIFTH = tuple(
    name for name, loop in PROGRAMS.items() if loop.fn.__module__ == unseen_programs_fifth.__name__
)
#: Those that raise at every size: eager and compiled must raise the same error.
RAISING = (
    "table_lookup_raises_index_error",
    "harmonic_mean_python_zero_division",
    "validate_probabilities_value_error",
)
#: Run in CI with the default backend (C loops): the float32 fixed point C got wrong, and
#: scalar warnings and exceptions from C loops.
CI_C = (
    "fixed_point_cos_float32",
    "uint8_scalar_sum_overflow_warns",
    "float_scalar_divide_by_zero_warns",
    "gray_codes_uint32",
)
#: Run in CI with the eager backend (bit for bit): brent's nested resumes that raised
#: Unsupported, and the rest of the constructs (exceptions, views, in-place writes).
CI_EAGER = (
    "brent_root_polynomial",
    "dc_blocker_in_place_float32",
    "next_permutation_in_place",
    "flood_fill_explicit_stack",
    "int16_running_sum_overflow_warns",
    "table_lookup_raises_index_error",
    "harmonic_mean_python_zero_division",
    "validate_probabilities_value_error",
)
ALL = os.environ.get("NUMPILE_UNSEEN_ALL") == "1"


@pytest.fixture(autouse=True)
def _fresh() -> Any:
    numpile.reset()
    yield
    numpile.reset()


def _program(name: str) -> Program:
    loop = PROGRAMS[name]
    return Program(
        name,
        "unseen_loops",
        loop.fn,
        loop.inputs,
        loop.sizes,
        fullgraph=False,
        expect_error=name in RAISING,
    )


def _cases(ci: tuple[str, ...]) -> list[Any]:
    slow = [pytest.mark.slow, pytest.mark.skipif(not ALL, reason="NUMPILE_UNSEEN_ALL=1 runs it")]
    return [pytest.param(name, marks=() if name in ci else slow) for name in FIFTH]


def test_fifty_programs_and_the_ci_set_among_them() -> None:
    assert len(FIFTH) >= 50
    assert set(CI_C) | set(CI_EAGER) | set(RAISING) <= set(FIFTH)


@pytest.mark.filterwarnings("ignore::numpile.NumpilePerformanceWarning")
@pytest.mark.parametrize("name", _cases(CI_C))
def test_matches_eager_with_the_default_backend(name: str) -> None:
    assert run_program(_program(name), numpile.compile, "inductor") == []


@pytest.mark.filterwarnings("ignore::numpile.NumpilePerformanceWarning")
@pytest.mark.parametrize("name", _cases(CI_EAGER))
def test_matches_eager_bit_for_bit_on_the_eager_backend(name: str) -> None:
    assert run_program(_program(name), numpile.compile, "eager") == []
