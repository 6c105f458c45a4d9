"""A C loop nest is written twice: for arrays whose last strides are all 1 (each loop with
its bounds checks hoisted where they hold, else checked), and for any strides, checked only
(`NP_CHECKED_ONLY`: the unchecked forms of that copy were half of what GCC compiled for the
rare case). Where the outermost loop's bounds are tested before it, the checked copy is a
function of its own built at -O1 (`loop_vN_checked`), called when the test fails or a stride
is not 1. Both copies give NumPy's values, in-place writes and errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from numpile_capture import capture_function
from numpile_inductor import compile_graph
from numpile_inductor.codegen.c.translation_units import split_module


def _lu_in_place(A: Any) -> Any:
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            A[i, j] = (A[i, j] - A[i, :j] @ A[:j, j]) / A[j, j]
        for j in range(i, n):
            A[i, j] = A[i, j] - A[i, :i] @ A[:i, j]
    return A


def _past_the_diagonal(A: Any) -> Any:
    # The last row writes one column past the end: IndexError after the earlier writes.
    for i in range(A.shape[0]):
        A[i, i + 1] = A[i, i] * 2.0 + A[i, 0]
    return A


def _matrix(n: int, columns: int) -> Any:
    rng = np.random.default_rng(n)
    A = rng.random((n, columns))
    A[:, :n] += n * np.eye(n)
    return A


def _compiled(fn: Any, example: Any, units: int = 0) -> Any:
    options = {"cpp.translation_units": units} if units else None
    return compile_graph(capture_function(fn, (example.copy(),), {}).graph, options=options)


def _function(source: str, name: str) -> str:
    # The C function `name` of a module's source, from its declaration to its closing brace.
    start = source.index(f" static PyObject *{name}(")
    start = source.rindex("\n", 0, start) + 1
    return source[start : source.index("\n}\n", start)]


def test_the_strided_copy_keeps_only_the_checked_forms() -> None:
    source = _compiled(_lu_in_place, _matrix(6, 6)).source
    fast = _function(source, "loop_v0")
    checked = _function(source, "loop_v0_checked")
    # The unit-stride copy hoists bounds checks; the outermost loop's checked form and the
    # copy for any strides are the checked function's, built at -O1.
    assert "NP_LIKELY(" in fast and "NP_CHECKED_ONLY(" not in fast
    assert fast.count("goto checked;") == 2  # a failed test of the bounds, or of the strides
    assert "result = loop_v0_checked(argv, argc, eager, np_fp);" in fast
    assert checked.startswith('__attribute__((noinline, cold, optimize("O1"')
    assert "NP_CHECKED_ONLY(" in checked
    assert "NP_LIKELY(" not in checked


@pytest.mark.parametrize("units", [1, 2])
@pytest.mark.parametrize("n", [1, 2, 5, 9])
@pytest.mark.parametrize("layout", ["C", "F", "every other column"])
def test_lu_in_place_on_any_layout_gives_numpys_values(n: int, layout: str, units: int) -> None:
    # One C file, or two compiled at once (the loop function in one, `call` in the other).
    compiled = _compiled(_lu_in_place, _matrix(n, n), units)
    assert len(split_module(compiled.source, parts=units, min_lines=0).sources) == units
    if layout == "every other column":
        ours, theirs = _matrix(n, 2 * n), _matrix(n, 2 * n)
        got = compiled.fn(ours[:, ::2])
        want = _lu_in_place(theirs[:, ::2])
    else:
        ours = np.asarray(_matrix(n, n), order=layout)
        theirs = ours.copy(order="K")
        got = compiled.fn(ours)
        want = _lu_in_place(theirs)
    # Inner products sum in another order than NumPy's BLAS dot: equal to rounding.
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)  # the writes, the untouched columns


@pytest.mark.parametrize("units", [1, 2])
@pytest.mark.parametrize("layout", ["C", "every other column"])
def test_an_index_error_keeps_the_earlier_writes_on_any_layout(layout: str, units: int) -> None:
    # Two units: the loop raises NumPy's IndexError from the other file than `call`.
    compiled = _compiled(_past_the_diagonal, _matrix(5, 5), units)
    if layout == "C":
        ours, theirs = _matrix(5, 5), _matrix(5, 5)
        mine, eager = ours, theirs
    else:
        ours, theirs = _matrix(5, 10), _matrix(5, 10)
        mine, eager = ours[:, ::2], theirs[:, ::2]
    with pytest.raises(IndexError) as eager_error:
        _past_the_diagonal(eager)
    with pytest.raises(IndexError) as our_error:
        compiled.fn(mine)
    assert str(our_error.value) == str(eager_error.value)
    np.testing.assert_array_equal(ours, theirs)


def _wrapped_neighbours(A: Any) -> Any:
    # Row i - 1 of row 0 is the last row (it wraps): the outermost loop's bounds test fails,
    # and the whole nest runs in the checked function.
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            A[i, j] = A[i - 1, j] * 0.5 + A[i, j]
    return A


@pytest.mark.parametrize("layout", ["C", "every other column"])
def test_an_index_that_wraps_runs_the_checked_function_with_numpys_values(layout: str) -> None:
    compiled = _compiled(_wrapped_neighbours, _matrix(4, 4))
    assert "loop_v0_checked(" in compiled.source
    if layout == "C":
        ours, theirs = _matrix(4, 4), _matrix(4, 4)
        got, want = compiled.fn(ours), _wrapped_neighbours(theirs)
    else:
        ours, theirs = _matrix(4, 8), _matrix(4, 8)
        got, want = compiled.fn(ours[:, ::2]), _wrapped_neighbours(theirs[:, ::2])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(ours, theirs)
