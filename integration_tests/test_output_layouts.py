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


def reductions(a: Any) -> Any:
    # NumPy's layouts (a keepdims axis in its place in memory; argmax C-ordered; cumsum in
    # the input's order) and NumPy's order of additions: a kept axis innermost in memory
    # adds the reduced elements one by one, as NumPy's iterator does.
    return (
        a.sum(axis=1),
        a.sum(axis=2, keepdims=True),
        # Two reduced axes: values to within rounding, see the test.
        a.sum(axis=(0, 2), keepdims=True),
        (a * 2.0).sum(axis=0),
        a.mean(axis=1, keepdims=True),
        a.var(axis=2),
        a.std(axis=0, keepdims=True),
        a.max(axis=1),
        np.cumsum(a, axis=1),
        np.argmax(a, axis=2),
    )


def normalized(a: Any) -> Any:
    # Over axis 1: a row group for C order; column sums for Fortran order, as NumPy adds.
    # (Squares, not exp: C's exp and NumPy's may differ in the last bit.)
    d = a - a.max(axis=1, keepdims=True)
    e = d * d
    return e / e.sum(axis=1, keepdims=True), e.sum(axis=1)


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


def _assert_bits(got: Any, expected: Any) -> None:
    # Values to the bit (sums add in NumPy's order), dtypes and strides.
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_array_equal(g, e)
        assert g.dtype == e.dtype
        assert g.strides == e.strides, (g.strides, e.strides)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_reductions_have_eagers_layouts_and_bits(layout: str) -> None:
    # A (50, 60, 70) block: runs past one group of lanes, under one block of 128.
    block = np.random.default_rng(3).standard_normal((50, 60, 70))
    a = {
        "fortran": np.asfortranarray(block),
        "transposed": np.ascontiguousarray(block.transpose(2, 0, 1)).transpose(1, 2, 0),
        "reversed": block[::-1, :, ::-1],
        "fortran_reversed": np.asfortranarray(block)[:, ::-1],
        "transposed_reversed": np.ascontiguousarray(block.transpose(1, 2, 0)).transpose(2, 0, 1)[
            :, ::-1
        ],
    }[layout]
    compiled = numpile.compile(reductions)
    compiled(a)
    numpile.wait_for_compiles()
    got, expected = compiled(a), reductions(a)
    # Over two reduced axes NumPy may add otherwise: it sums axes that are one run in
    # memory as one pairwise run, and walks a reversed kept axis its own way.
    _assert_same([got[2]], [expected[2]])
    _assert_bits(got[:2] + got[3:], expected[:2] + expected[3:])


@pytest.mark.parametrize("layout", ["fortran", "C"])
def test_a_row_normalization_adds_as_eager_adds(layout: str) -> None:
    a = np.asarray(np.random.default_rng(4).standard_normal((40, 90)), order=layout[0].upper())
    compiled = numpile.compile(normalized)
    compiled(a)
    numpile.wait_for_compiles()
    _assert_bits(compiled(a), normalized(a))


@pytest.mark.parametrize("dynamic", [None, True])
@pytest.mark.parametrize("layout", ["fortran", "transposed_reversed"])
def test_an_array_a_loop_writes_has_eagers_layout(layout: str, dynamic: bool | None) -> None:
    # Symbolic sizes too: the written array's strides are products of them (`s0*s1`).
    expected = loop_written(LAYOUTS[layout]())
    got = numpile.compile(loop_written, dynamic=dynamic)(LAYOUTS[layout]())
    _assert_same([got], [expected])


def test_a_c_and_a_fortran_input_give_c_order() -> None:
    a, b = _block((5, 6)), np.asfortranarray(_block((5, 6), 1))
    _assert_same(numpile.compile(mixed)(a, b), mixed(a, b))
