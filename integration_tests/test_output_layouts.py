"""Compiled outputs keep NumPy's memory layout (C backend, issue 23): element-wise results
and reductions in the inputs' order (order='K'), a product's C-order result through a
transpose, an element-wise result a loop then writes row by row, on Fortran-order,
transposed and reversed inputs; a C and a Fortran input together give C order, as NumPy's
iterator decides. Values, dtypes, `flags` and strides are eager's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import numpile

Array = np.ndarray[Any, Any]


def _block(shape: tuple[int, ...], seed: int = 0) -> Array:
    return np.random.default_rng(seed).standard_normal(shape)


LAYOUTS: dict[str, Callable[[], Array]] = {
    "fortran": lambda: np.asfortranarray(_block((5, 6, 7))),
    "transposed": lambda: _block((7, 5, 6)).transpose(1, 2, 0),
    # NumPy's K order keeps a reversed input's result C-ordered (its strides positive).
    "reversed": lambda: _block((5, 6, 7))[::-1, :, ::-1],
    "fortran_reversed": lambda: np.asfortranarray(_block((5, 6, 7)))[:, ::-1],
    "transposed_reversed": lambda: _block((6, 7, 5)).transpose(2, 0, 1)[:, ::-1],
}


def chain_sum_product(a: Any) -> Any:
    chain = np.sqrt(np.abs(a * 2.0 + 1.0)) - a
    # A product's result is C-ordered; its transpose, scaled, is Fortran-ordered.
    product = 2.0 * (a[:, :, 0].T @ a[:, :, 1]).T
    return chain, a.sum(axis=1), product


def loop_written(a: Any) -> Any:
    # The loop writes an element-wise result (K order) row by row, each row from the last.
    out = a * 2.0
    for i in range(1, a.shape[0]):
        out[i] = out[i - 1] * 0.5 + a[i]
    return out


def mixed(a: Any, b: Any) -> Any:
    return a * b + 1.0, np.asfortranarray(b) - a.T.T


def _assert_same(got: Any, expected: Any) -> None:
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-12)
        assert g.dtype == e.dtype
        assert (g.flags.c_contiguous, g.flags.f_contiguous) == (
            e.flags.c_contiguous,
            e.flags.f_contiguous,
        )
        assert g.strides == e.strides


@pytest.mark.parametrize("layout", LAYOUTS)
def test_elementwise_reduction_and_product_layouts_match_eager(layout: str) -> None:
    expected = chain_sum_product(LAYOUTS[layout]())
    got = numpile.compile(chain_sum_product)(LAYOUTS[layout]())
    _assert_same(got, expected)


@pytest.mark.parametrize("layout", ["fortran", "transposed_reversed"])
def test_an_array_a_loop_writes_has_eagers_layout(layout: str) -> None:
    expected = loop_written(LAYOUTS[layout]())
    got = numpile.compile(loop_written)(LAYOUTS[layout]())
    _assert_same([got], [expected])


def test_a_c_and_a_fortran_input_give_c_order() -> None:
    a, b = _block((5, 6)), np.asfortranarray(_block((5, 6), 1))
    _assert_same(numpile.compile(mixed)(a, b), mixed(a, b))
