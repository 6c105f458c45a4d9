"""Index lists of ints known only at run time (`A[[k, p]] = A[[p, k]]` in a loop): one
1-d intp array in the graph, read and stored as NumPy's integer indexing does (issue 23)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from numpile_capture import capture_function, compile_function, explain


def _pivot_rows(a: Any, perm: Any) -> Any:
    # partial pivoting's row swap, as LU writes it
    for k in range(a.shape[0]):
        p = k + int(np.argmax(np.abs(a[k:, k])))
        if p != k:
            a[[k, p]] = a[[p, k]]
            perm[[k, p]] = perm[[p, k]]
    return a, perm


def _repeated_and_negative(a: Any, b: Any, shift: int) -> Any:
    n = a.shape[0]
    for k in range(n):
        a[[k, k]] = b[[k, (k + shift) % n - n]]  # a repeated row keeps the last value
        a[(k - n, 0), 1:] = a[[0, k], :-1]  # a tuple, negative, next to slices
    return a


def _float_in_the_list(a: Any) -> Any:
    for k in range(a.shape[0]):
        a[[k, 0.5 * k]] = 0.0
    return a


def test_a_list_of_run_time_ints_is_one_int_array_in_the_kept_loop() -> None:
    a = np.random.default_rng(0).standard_normal((5, 5))
    assert explain(_pivot_rows)(a.copy(), np.arange(5)).loops_not_kept == ()
    text = str(capture_function(_pivot_rows, (a.copy(), np.arange(5)), {}).graph)
    assert "full(k, shape=(1,), dtype=int64)  # int64[1]" in text
    assert "concatenate(v0, v1, axis=0)  # int64[2]" in text
    assert "index_put(a, v3, v7, index=(arrays[0],))" in text


@pytest.mark.parametrize("n", [0, 1, 2, 5, 30])
def test_row_swaps_match_eager(n: int) -> None:
    rng = np.random.default_rng(n)
    for a in (rng.standard_normal((n, n)), np.eye(n)[::-1].copy(), np.eye(n)):
        # n = 0: the body traced at no row takes argmax of nothing (the loop runs no time)
        kept = explain(_pivot_rows)(a.copy(), np.arange(n)).loops_not_kept == ()
        assert kept or n == 0
        mine, eager = a.copy(), a.copy()
        got = compile_function(_pivot_rows, backend="eager")(mine, np.arange(n))
        want = _pivot_rows(eager, np.arange(n))
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
        assert got[1].dtype == want[1].dtype
        np.testing.assert_array_equal(mine, eager)


@pytest.mark.parametrize("n", [1, 2, 5])
def test_repeated_and_negative_indices_match_eager(n: int) -> None:
    rng = np.random.default_rng(n)
    a, b = rng.standard_normal((n, 4)), rng.standard_normal((n, 4))
    assert explain(_repeated_and_negative)(a.copy(), b, 2).loops_not_kept == ()
    got = compile_function(_repeated_and_negative, backend="eager")(a.copy(), b, 2)
    np.testing.assert_array_equal(got, _repeated_and_negative(a.copy(), b, 2))


def test_an_index_out_of_range_raises_numpys_index_error() -> None:
    def past_the_end(a: Any) -> Any:
        n = a.shape[0]
        for k in range(n):
            a[[k, n + k]] = a[[0, k]]
        return a

    # kept as one loop node, which raises where eager does
    assert "for_loop" in str(capture_function(past_the_end, (np.ones((3, 2)),), {}).graph)
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        compile_function(past_the_end, backend="eager")(np.ones((3, 2)))


def test_a_float_in_the_list_raises_numpys_index_error() -> None:
    # not captured (a graph break): eager raises, as NumPy does
    with pytest.raises(IndexError, match="only integers, slices"):
        compile_function(_float_in_the_list, backend="eager")(np.ones((3, 2)))
