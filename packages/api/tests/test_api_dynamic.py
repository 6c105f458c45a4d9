"""numpile's dynamic-shape surface: compile(dynamic=...), mark_dynamic, mark_static, explain."""

from __future__ import annotations

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


def _scale_rows(x: Any) -> Any:
    return x / x.sum(axis=1, keepdims=True)


def test_mark_dynamic_and_mark_static_are_reexported() -> None:
    from numpile_capture import mark_dynamic, mark_static

    assert numpile.mark_dynamic is mark_dynamic
    assert numpile.mark_static is mark_static
    assert "min" in (numpile.mark_dynamic.__doc__ or "")


def test_marked_dim_compiles_symbolic_from_the_first_call() -> None:
    compiled = numpile.compile(_scale_rows, backend="eager")
    x = np.arange(1.0, 13.0).reshape(4, 3)
    numpile.mark_dynamic(x, 0, max=100)
    np.testing.assert_array_equal(compiled(x), _scale_rows(x))
    for n in (2, 7, 100):
        y = np.arange(1.0, 3 * n + 1).reshape(n, 3)
        np.testing.assert_array_equal(compiled(y), _scale_rows(y))
    from numpile_guards import cache_for

    entries = cache_for(_scale_rows.__code__).entries
    assert len(entries) == 1
    guards = [str(guard) for guard in entries[0].metadata["guards"]]
    assert any("L['x'].shape[0] <= 100" in text for text in guards)


def test_explain_lists_symbolic_guards() -> None:
    def f(x: Any) -> Any:
        return x.reshape(-1, 2) * 2

    x = np.ones(8)
    numpile.mark_dynamic(x, 0)
    report = numpile.explain(f)(x)
    text = str(report)
    assert "float64[s0]" in text
    assert "L['x'].shape[0] % 2 == 0" in text


def test_specialization_is_visible_in_the_guards() -> None:
    # A Python list as long as the array needs its length as an int: the size specializes.
    # (`np.zeros(x.shape[0])` keeps it symbolic.)
    def f(x: Any) -> Any:
        return np.array([1.0] * x.shape[0]) + x

    x = np.ones(6)
    numpile.mark_dynamic(x, 0)
    report = numpile.explain(f)(x)
    assert "L['x'].shape[0] == 6" in str(report)


def test_full_stack_default_backend_handles_changing_batch_sizes() -> None:
    def f(x: Any) -> Any:
        return np.tanh(x) * 2.0 + 1.0

    compiled = numpile.compile(f)
    for n in (3, 5, 8, 13):
        x = np.linspace(-1.0, 1.0, n * 2).reshape(n, 2)
        got = compiled(x)
        assert got.dtype == f(x).dtype
        np.testing.assert_allclose(got, f(x), rtol=1e-12)
