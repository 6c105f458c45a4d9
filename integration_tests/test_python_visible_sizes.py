"""Under dynamic shapes a size that reaches a Python-visible value is a number, not a symbol."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import numpile


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    numpile.reset()
    yield
    numpile.reset()


def report(x: Any) -> Any:
    print(f"size={x.size} rows={x.shape[0]}")
    return x * 2, str(x.shape[0] * 4), x.size, "%d" % x.size, repr(x.shape)  # noqa: UP031


@pytest.mark.parametrize("dynamic", [True, None])
def test_sizes_in_text_and_results_are_concrete(dynamic: bool | None) -> None:
    compiled = numpile.compile(report, dynamic=dynamic)
    for rows in (5, 6, 9):
        x = np.ones((rows, 4))
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            got = compiled(x)
        assert out.getvalue() == f"size={rows * 4} rows={rows}\n"
        assert got[1:] == (str(rows * 4), rows * 4, str(rows * 4), repr((rows, 4)))
        assert type(got[2]) is int
