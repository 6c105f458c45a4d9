"""Complex arithmetic in C loops (codegen/c/ops.py): NumPy's product and its quotient by
Smith's method, with each product rounded before the add beside it (GCC's SLP pass fused
them into one `vfmaddsub` rounding), and Python complex constants meeting complex64 as weak
scalars: eager's bits and dtypes, without running the body with NumPy."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from numpile_capture import compile_function, reset
from numpile_capture.testing import assert_same_as_eager
from numpile_inductor import compile_graph


def _compiled(fn: Callable[..., Any]) -> Callable[..., Any]:
    reset()

    def backend(graph: Any, example_inputs: Any) -> Any:
        return compile_graph(graph).fn

    return compile_function(fn, backend=backend, dynamic=True)


def _same_bits(fn: Callable[..., Any], *args: Any) -> None:
    got = _compiled(fn)(*args)
    want = fn(*args)
    assert_same_as_eager(got, want)
    assert np.asarray(got).tobytes() == np.asarray(want).tobytes()


def _pairs(dtype: str, n: int = 3000) -> tuple[Any, Any]:
    rng = np.random.default_rng(7)
    z = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dtype)
    scale = 10.0 ** rng.integers(-3, 3, n)
    w = (rng.standard_normal(n) * scale + 1j * rng.standard_normal(n)).astype(dtype)
    w[::97] = 0  # a quotient by zero: NumPy's inf / nan parts (and its warnings)
    return z, w


def _products(z: Any, w: Any) -> Any:
    out = np.empty_like(z)
    for i in range(z.shape[0]):
        out[i] = z[i] * w[i]
    return out


def _quotients_and_constants(z: Any, w: Any) -> Any:
    out = np.empty_like(z)
    for i in range(z.shape[0]):
        out[i] = z[i] / w[i] + 1j * z[i] * (0.5 - 2j) / (1.5 + 0.5j)
    return out


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
def test_complex_products_give_eagers_bits(dtype: str, numpy_runs: list[Any]) -> None:
    # Main gave other bits for about half the products of complex128 (a fused multiply-add).
    z, w = _pairs(dtype)
    _same_bits(_products, z, w)
    assert numpy_runs == []


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
def test_complex_quotients_run_as_c_with_eagers_bits(dtype: str, numpy_runs: list[Any]) -> None:
    z, w = _pairs(dtype)
    with np.errstate(all="ignore"):
        _same_bits(_quotients_and_constants, z, w)
    assert numpy_runs == []


def test_a_complex_quotient_by_zero_warns_as_eager() -> None:
    z, w = _pairs("complex128", 200)
    outcomes = []
    for fn in (_quotients_and_constants, _compiled(_quotients_and_constants)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = fn(z, w)
        outcomes.append((result, [(w.category, str(w.message), w.lineno) for w in caught]))
    (want, want_warnings), (got, got_warnings) = outcomes
    assert got.tobytes() == want.tobytes()
    assert got_warnings == want_warnings
    assert want_warnings
