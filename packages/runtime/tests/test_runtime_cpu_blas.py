"""The CBLAS of the BLAS NumPy loaded: found, callable, and switched off by the environment."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from numpile_runtime import cpu_blas
from numpile_runtime.cpu_blas import cpu_blas_addresses, find_cpu_blas


@pytest.fixture
def fresh_lookup() -> object:
    find_cpu_blas.cache_clear()
    yield None
    find_cpu_blas.cache_clear()


def test_numpy_wheels_blas_gives_a_dgemm_that_computes_numpys_product() -> None:
    blas = find_cpu_blas()
    if blas is None:
        pytest.skip("this NumPy was not built against an ILP64 CBLAS")
    i64, f64 = ctypes.c_int64, ctypes.c_double
    pointer = ctypes.POINTER(ctypes.c_double)
    dgemm = ctypes.CFUNCTYPE(
        None,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
        i64,
        i64,
        i64,
        f64,
        pointer,
        i64,
        pointer,
        i64,
        f64,
        pointer,
        i64,
    )(blas.dgemm)
    a = np.arange(6.0).reshape(2, 3)
    b = np.arange(12.0).reshape(3, 4)
    c = np.full((2, 4), np.nan)

    def ptr(x: np.ndarray) -> object:
        return x.ctypes.data_as(pointer)

    dgemm(101, 111, 111, 2, 4, 3, 1.0, ptr(a), 3, ptr(b), 4, 0.0, ptr(c), 4)
    np.testing.assert_array_equal(c, a @ b)
    assert cpu_blas_addresses() == blas.addresses()
    assert all(blas.addresses())


def test_environment_switch_turns_it_off(
    fresh_lookup: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NUMPILE_CPU_BLAS", "0")
    assert find_cpu_blas() is None
    assert cpu_blas_addresses() == (0,) * 6


def test_a_library_without_ilp64_symbols_is_not_taken(
    fresh_lookup: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    # libc has no cblas_*64_: an LP64 or unknown BLAS must never be called with int64s.
    monkeypatch.setattr(cpu_blas, "_numpy_blas_libraries", lambda: ["libc.so.6"])
    assert find_cpu_blas() is None
