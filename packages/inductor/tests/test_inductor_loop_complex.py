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

from numpile_capture import C_LOOP, compile_function, explain, reset
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


# -- complex scalar math and Python complex entries (round 2's eighteenth session) --------


def _loop_tiers(fn: Callable[..., Any], *args: Any) -> list[str]:
    # How the inductor runs each kept loop of `fn` (explain's `LoopTier`s).
    return [tier.tier for graph in explain(fn)(*args).loop_tiers for tier in graph]


def _escape_counts(c: Any, limit: int) -> Any:
    # Mandelbrot: a Python complex entry per row, `abs(z)` in the while's test.
    out = np.zeros(c.shape[0], dtype=np.int64)
    for i in range(c.shape[0]):
        z = 0j
        k = 0
        while k < limit and abs(z) <= 2.0:
            z = z * z + c[i]
            k += 1
        out[i] = k
    return out


def _carried_abs(c: Any) -> Any:
    # A carried NumPy complex, its `abs` in a condition and summed.
    z = c[0] * 0
    s = 0.0
    for i in range(c.shape[0]):
        z = z * z + c[i]
        if abs(z) > 2:
            z = c[i]
        s = s + abs(z)
    return s


def _plane(dtype: str, n: int = 400) -> Any:
    rng = np.random.default_rng(3)
    return (rng.uniform(-2, 1, n) + 1j * rng.uniform(-1.5, 1.5, n)).astype(dtype)


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
@pytest.mark.parametrize("fn", [_escape_counts, _carried_abs])
def test_abs_of_complex_scalars_runs_as_c_with_eagers_bits(
    fn: Callable[..., Any], dtype: str
) -> None:
    # `abs` of a complex NumPy scalar is libm's `hypot` (npy_cabs); main ran these loops op
    # by op with NumPy ("no C spelling for absolute"; `0j` was no C operand).
    args = (_plane(dtype), 60) if fn is _escape_counts else (_plane(dtype),)
    _same_bits(fn, *args)
    assert _loop_tiers(fn, *args)[0] == C_LOOP


def _moduli(z: Any) -> Any:
    out = np.empty(z.shape[0], dtype=z.real.dtype)
    for i in range(z.shape[0]):
        out[i] = abs(z[i]) + abs(z[i] * 2)
    return out


def _ufunc_moduli(z: Any) -> Any:
    # `np.abs` of a NumPy scalar runs NumPy's array loop (SIMD, other last bits than hypot).
    out = np.empty(z.shape[0], dtype=z.real.dtype)
    for i in range(z.shape[0]):
        out[i] = np.abs(z[i])
    return out


def _extremes(dtype: str) -> Any:
    rng = np.random.default_rng(5)
    n = 5000
    scale = 10.0 ** rng.integers(-30, 30, n)
    return (rng.standard_normal(n) * scale + 1j * rng.standard_normal(n)).astype(dtype)


def _specials(dtype: str) -> Any:
    # Zeros, infinities and NaNs in either part: eager's values (a NaN's sign may differ).
    parts = (0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -2.5, 1e30)
    return np.array([complex(a, b) for a in parts for b in parts], dtype=dtype)


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
def test_python_abs_and_np_abs_of_complex_elements_give_eagers_bits(dtype: str) -> None:
    z = _extremes(dtype)
    with np.errstate(all="ignore"):
        _same_bits(_moduli, z)
        _same_bits(_ufunc_moduli, z)
        _same_bits(_moduli, _specials(dtype))
    assert _loop_tiers(_moduli, z) == [C_LOOP]


def _complex_functions(z: Any) -> Any:
    out = np.empty_like(z)
    for i in range(z.shape[0]):
        out[i] = np.exp(z[i]) + np.log(z[i]) * np.sqrt(z[i])
    return out


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
def test_complex_exp_log_sqrt_run_as_c_with_eagers_bits(dtype: str) -> None:
    # NumPy's complex exp, log and sqrt are libm's cexp, clog, csqrt: main ran them with NumPy.
    z = _extremes(dtype)
    specials = _specials(dtype)
    with np.errstate(all="ignore"):
        _same_bits(_complex_functions, z)
        assert_same_as_eager(_compiled(_complex_functions)(specials), _complex_functions(specials))
    assert _loop_tiers(_complex_functions, z) == [C_LOOP]


def _branch_product(z: Any, w: Any) -> Any:
    # `a` reaches the branch as a placeholder: eager multiplies NumPy scalars there (each
    # product rounded), not 0-d arrays (the array loop's fused multiply-add).
    out = np.empty_like(z)
    for i in range(z.shape[0]):
        a = z[i] + 0
        if a != w[0]:
            out[i] = a * w[i]
        else:
            out[i] = a
    return out


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
def test_a_complex_product_in_a_branch_gives_eagers_bits(dtype: str) -> None:
    # Main multiplied with `_np_cmul` (one rounding on AVX-512): other bits for complex128.
    z, w = _pairs(dtype)
    _same_bits(_branch_product, z, w)
    assert _loop_tiers(_branch_product, z, w) == [C_LOOP]


def _phasors(x: Any, w: Any) -> Any:
    acc = 0j
    for i in range(x.shape[0]):
        acc = acc + x[i] * np.exp(1j * w[i])
    return acc


@pytest.mark.parametrize("n", [0, 1, 300])
def test_a_python_complex_entry_runs_as_c(n: int) -> None:
    # `acc = 0j` then NumPy complex128 values: C from the first iteration; no iteration
    # gives back the Python complex itself.
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal(n), rng.standard_normal(n)
    _same_bits(_phasors, x, w)
    if n:
        assert _loop_tiers(_phasors, x, w) == [C_LOOP]


def _largest_seen(z: Any) -> Any:
    best = 0j
    for i in range(z.shape[0]):
        if abs(z[i]) > 1.5:
            best = z[i]
    return best


@pytest.mark.parametrize("scale", [0.3, 1.0])
def test_a_complex_entry_a_branch_keeps_comes_back_as_eagers_object(scale: float) -> None:
    # No iteration assigns `best` at scale 0.3: eager gives back the Python complex 0j.
    rng = np.random.default_rng(4)
    z = (rng.standard_normal(60) + 1j * rng.standard_normal(60)) * scale
    _same_bits(_largest_seen, z)
    assert _loop_tiers(_largest_seen, z) == [C_LOOP]
