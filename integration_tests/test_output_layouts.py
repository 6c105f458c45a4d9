"""Compiled outputs keep NumPy's memory layout (C backend): element-wise results and
reductions in the input's order (order='K'), matmul in C order, arrays a loop writes in the
layout `np.empty_like` gives them, each on Fortran-order, transposed and reversed inputs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import numpile


@pytest.fixture(autouse=True)
def _fresh() -> Any:
    numpile.reset()
    yield
    numpile.reset()


def _block(shape: tuple[int, ...]) -> np.ndarray[Any, Any]:
    return np.random.default_rng(0).standard_normal(shape)


LAYOUTS: dict[str, Callable[[], np.ndarray[Any, Any]]] = {
    "fortran": lambda: np.asfortranarray(_block((5, 6, 7))),
    "transposed": lambda: _block((7, 5, 6)).transpose(1, 2, 0),
    "reversed": lambda: _block((5, 6, 7))[::-1, :, ::-1],
    "transposed_reversed": lambda: _block((6, 7, 5)).transpose(2, 0, 1)[:, ::-1],
}


def chain(a: Any) -> Any:
    return np.sqrt(np.abs(a * 2.0 + 1.0)) - a


def row_sums(a: Any) -> Any:
    return a.sum(axis=1)


def products(a: Any) -> Any:
    return a[:, :, 0] @ a[:, :, 1].T


def loop_written(a: Any) -> Any:
    out = np.empty_like(a)
    for i in range(a.shape[0]):
        out[i] = a[i] * 2.0
    return out


# Each (function, layout) is one compile: the element-wise chain on every layout, the rest on
# the two that exercise their rule (NumPy's K order keeps the chain's reversed input C-ordered).
CASES = [
    *((chain, layout) for layout in LAYOUTS),
    *(
        (fn, layout)
        for fn in (row_sums, loop_written)
        for layout in ("fortran", "transposed_reversed")
    ),
    (products, "fortran"),
]


@pytest.mark.parametrize(("fn", "layout"), CASES, ids=lambda x: getattr(x, "__name__", x))
def test_output_layout_matches_eager(fn: Callable[..., Any], layout: str) -> None:
    expected = fn(LAYOUTS[layout]())
    got = numpile.compile(fn)(LAYOUTS[layout]())
    np.testing.assert_allclose(got, expected)
    assert got.dtype == expected.dtype
    assert (got.flags.c_contiguous, got.flags.f_contiguous) == (
        expected.flags.c_contiguous,
        expected.flags.f_contiguous,
    )
    assert got.strides == expected.strides
