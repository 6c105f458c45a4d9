"""A C loop nest is written twice: for arrays whose last strides are all 1 (each loop with
its bounds checks hoisted where they hold, else checked), and for any strides, checked only
(`NP_CHECKED_ONLY`: the unchecked forms of that copy were half of what GCC compiled for the
rare case). Both copies give NumPy's values, in-place writes and errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from numpile_capture import capture_function
from numpile_inductor import compile_graph


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


def _compiled(fn: Any, example: Any) -> Any:
    return compile_graph(capture_function(fn, (example.copy(),), {}).graph)


def test_the_strided_copy_keeps_only_the_checked_forms() -> None:
    source = _compiled(_lu_in_place, _matrix(6, 6)).source
    loop = source[source.index("static PyObject *loop_") :]
    loop = loop[: loop.index("\n}\n")]  # the loop function alone
    unit, strided = loop.split("\n    } else {\n", 1)  # the test of the last strides
    assert "NP_LIKELY(" in unit  # hoisted bounds checks in the contiguous copy
    assert "NP_CHECKED_ONLY(" in strided
    assert "NP_LIKELY(" not in strided


@pytest.mark.parametrize("n", [1, 2, 5, 9])
@pytest.mark.parametrize("layout", ["C", "F", "every other column"])
def test_lu_in_place_on_any_layout_gives_numpys_values(n: int, layout: str) -> None:
    compiled = _compiled(_lu_in_place, _matrix(n, n))
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


@pytest.mark.parametrize("layout", ["C", "every other column"])
def test_an_index_error_keeps_the_earlier_writes_on_any_layout(layout: str) -> None:
    compiled = _compiled(_past_the_diagonal, _matrix(5, 5))
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
