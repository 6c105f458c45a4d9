"""Scalar forms in C loop bodies (`codegen/c/loop_scalar_forms.py`): float orderings as C99's
quiet comparisons, an integer multiply by a 0/1 value as a select. Each program is compared
with eager on values, dtypes and in-place effects, and its C is checked for the form."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from numpile_capture import capture_function
from numpile_inductor import compile_graph


def _compare(fn: Callable[..., Any], *args: Any, invalid: str = "raise") -> str:
    # The compiled graph's C source, after checking it against eager with the invalid flag
    # raising: a comparison that raised it on a NaN operand would raise there.
    compiled = compile_graph(capture_function(fn, tuple(a.copy() for a in args), {}).graph)
    ours = [a.copy() for a in args]
    theirs = [a.copy() for a in args]
    with np.errstate(invalid=invalid):  # type: ignore[arg-type]
        got = compiled.fn(*ours)
        want = fn(*theirs)
    assert type(got) is type(want)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_array_equal(got, want)
    for mine, eager in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(mine, eager)
    assert "loop_v" in compiled.source
    return compiled.source


def _escape_counts(x: Any, limit: Any) -> Any:
    # Mandelbrot's shape: a while loop on an ordering of NumPy floats, in a for loop.
    counts = np.zeros(x.shape[0], dtype=np.int64)
    for p in range(x.shape[0]):
        z = 0.0
        k = 0
        while k < 8 and z * z <= limit:
            z = z * z + x[p]
            k += 1
        counts[p] = k
    return counts


def _orderings(x: Any, y: Any) -> Any:
    lt = 0
    le = 0
    gt = 0
    ge = 0
    for i in range(x.shape[0]):
        if x[i] < y[i]:
            lt += 1
        if x[i] <= y[i]:
            le += 1
        if x[i] > y[i]:
            gt += 1
        if x[i] >= y[i]:
            ge += 1
    return lt, le, gt, ge


_SPECIALS = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.5, 5e-324]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_float_orderings_in_scalar_bodies_are_quiet_c99_comparisons(dtype: str) -> None:
    x = np.array(_SPECIALS, dtype=dtype)
    pairs = np.array([(a, b) for a in _SPECIALS for b in _SPECIALS], dtype=dtype)
    source = _compare(_orderings, pairs[:, 0].copy(), pairs[:, 1].copy())
    for macro in ("isless", "islessequal", "isgreater", "isgreaterequal"):
        assert f"__builtin_{macro}(" in source
    source = _compare(_escape_counts, x, np.array(4.0, dtype=dtype))
    assert "__builtin_islessequal(" in source


def _orderings_of_rows(A: Any, t: Any) -> Any:
    # A 1-d comparison inside the loop (loop_vectors): its elements in a loop GCC may
    # vectorize, where the quiet macros would become signaling vector compares.
    counts = np.zeros(A.shape[0], dtype=np.int64)
    for i in range(A.shape[0]):
        counts[i] = np.sum(A[i, :] < t)
    return counts


def test_orderings_of_one_dimensional_values_keep_the_vectorizable_form() -> None:
    A = np.array([_SPECIALS, _SPECIALS[::-1]])
    source = _compare(_orderings_of_rows, A, np.array(1.0))
    assert "__builtin_isless(" not in source


def _crc(data: Any, poly: Any) -> Any:
    one = data.dtype.type(1)
    crc = data.dtype.type(-1) if data.dtype.kind == "i" else ~data.dtype.type(0)
    for i in range(data.shape[0]):
        crc = crc ^ data[i]
        for _ in range(8):
            crc = (crc >> one) ^ ((crc & one) * poly)
    return crc


@pytest.mark.parametrize(
    ("dtype", "poly"),
    [("uint32", 0xEDB88320), ("uint64", 0xC96C5795D7870F42), ("int64", -(2**62) - 7),
     ("uint8", 0xB8), ("int16", -32000)],
)  # fmt: skip
def test_multiply_by_a_masked_bit_is_a_select_with_numpy_values(dtype: str, poly: int) -> None:
    rng = np.random.default_rng(3)
    data = rng.integers(0, 256, 37).astype(dtype)
    source = _compare(_crc, data, np.array(poly).astype(dtype))
    ct = {"uint32": "uint32_t", "uint64": "uint64_t", "int64": "int64_t", "uint8": "uint8_t",
          "int16": "int16_t"}[dtype]  # fmt: skip
    assert re.search(rf"\? \({ct}\)\(.*\) : \({ct}\)0\)", source), "no select"


def _gated(x: Any, y: Any) -> Any:
    s = 0
    f = 0.0
    for i in range(x.shape[0]):
        s = s + (x[i] > 0) * y[i]  # bool times int64: a select
        f = f + (x[i] > 0) * x[i]  # bool times float: stays a product (0 * inf is NaN)
    return s, f


def test_bool_times_int_is_a_select_and_bool_times_float_a_product() -> None:
    x = np.array([1.0, -2.0, np.inf, 0.0, 3.0, -np.inf])
    y = np.array([5, -(2**62), 7, 2**62, -1, 9])
    source = _compare(_gated, x, y, invalid="ignore")  # 0 * inf: NaN, as eager's
    assert re.search(r"\? \(int64_t\)\(", source)
    products = [line for line in source.splitlines() if re.search(r"const double t\d+ = ", line)]
    assert any(" * " in line for line in products)
