"""Issue 23: NumPy scalar constructors of a loop's index (`x[np.int64(i)]`, `np.float64(i)`,
`np.int32(n - i)`) and of an unspecialized int argument keep the loop: capture makes them
`numpy_scalar` nodes (no graph break, no recompile per value) and the inductor runs the
loop as C (no body run with NumPy per iteration). Values, dtypes (NEP 50) and in-place
effects are the corpus' checks (programs_loops.py); these tests check that the loop is
kept, compiled once, and raises NumPy's errors from the user's line.
"""

from __future__ import annotations

import logging
import traceback

import numpy as np
import programs_loops
import pytest
from harness import compile_kept_loop, loop_inputs, per_iteration_hints

import numpile

SCALAR_LOOPS = (
    "sum_read_at_an_int64_of_the_index",
    "rows_scaled_by_a_float64_of_the_index",
    "int32_countdown_of_the_index",
    "float32_of_an_int_argument_meets_an_array",
    "uint8_of_the_index_meets_python_scalars",
)


def _assert_same(got: object, want: object) -> None:
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for mine, eager in zip(got, want, strict=True):
            _assert_same(mine, eager)
        return
    assert type(got) is type(want)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", SCALAR_LOOPS)
def test_loop_is_kept_and_runs_as_c(name: str, caplog: pytest.LogCaptureFixture) -> None:
    fn = getattr(programs_loops, name)
    compiled = compile_kept_loop(name)
    with caplog.at_level(logging.INFO, logger="numpile.perf_hints"):
        for n in (7, 0, 1, 4):
            _assert_same(compiled(*loop_inputs(name, n)), fn(*loop_inputs(name, n)))
    slow = per_iteration_hints(caplog.records)
    assert not slow, slow


def test_new_trip_counts_and_int_arguments_reuse_one_entry() -> None:
    # `np.float32(k - i)` reads `k` at run time: new values of `k` (and new trip counts)
    # reuse the dynamic entry instead of compiling one per value.
    from numpile_guards import cache_for

    fn = programs_loops.float32_of_an_int_argument_meets_an_array
    compiled = numpile.compile(fn, fullgraph=True, dynamic=True)
    x = np.round(np.random.default_rng(0).standard_normal(9), 2)
    compiled(x[:5], 11)
    entries = len(cache_for(fn.__code__).entries)
    for n, k in ((6, 4), (9, 12), (3, -5), (7, 100)):
        _assert_same(compiled(x[:n], k), fn(x[:n], k))
    assert len(cache_for(fn.__code__).entries) == entries


def _error_line(fn: object, *args: object) -> tuple[str, int | None]:
    with pytest.raises((OverflowError, IndexError)) as info:
        fn(*args)  # type: ignore[operator]
    frames = traceback.extract_tb(info.value.__traceback__)
    user = [f for f in frames if f.filename == programs_loops.__file__]
    return f"{type(info.value).__name__}: {info.value}", user[-1].lineno if user else None


@pytest.mark.parametrize(
    ("name", "users_line"),
    [("int8_of_the_index_overflows", True), ("int64_of_the_index_past_the_end", False)],
)
def test_errors_are_numpys(name: str, users_line: bool) -> None:
    # np.int8(200) raises OverflowError from the user's line (the C loop bails and NumPy
    # runs it), x[np.int64(n)] NumPy's IndexError (as `x[i + k]` in a C loop, its traceback
    # ends in the compiled call), with the writes of earlier iterations kept, as eager.
    fn = getattr(programs_loops, name)
    if users_line:  # at n=2 np.int8(100) fits: the loop is kept, not run in Python
        assert numpile.explain(fn)(*loop_inputs(name, 2)).loops_not_kept == ()
    compiled = numpile.compile(fn, fullgraph=True, dynamic=True)
    for n in (7, 4):
        eager_inputs, compiled_inputs = loop_inputs(name, n), loop_inputs(name, n)
        message, line = _error_line(compiled, *compiled_inputs)
        eager_message, eager_line = _error_line(fn, *eager_inputs)
        assert message == eager_message
        assert line == (eager_line if users_line else None)
        for mine, eager in zip(compiled_inputs, eager_inputs, strict=True):
            np.testing.assert_array_equal(mine, eager)
