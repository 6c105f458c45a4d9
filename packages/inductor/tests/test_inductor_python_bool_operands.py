"""A Python bool meeting a NumPy value in a C loop (`(a[i] > a[j]) == ascending`).

Under NEP 50 a Python bool is NumPy's bool, not a weak scalar as int, float and complex
are; the pointwise lowering asked NumPy's `resolve_dtypes` with the Python type, which it
refuses, and the loop ran its body with NumPy per iteration (the fourth unseen set's
bitonic sorting network). Each program runs compiled and eagerly at several sizes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numpile_capture import compile_function, reset
from numpile_capture.testing import assert_same_as_eager


def compare_exchange_flags(a: Any, k: int) -> Any:
    out = np.zeros(a.shape[0], dtype=np.bool_)
    count = 0
    for i in range(a.shape[0]):
        ascending = (i & k) == 0  # a Python bool
        out[i] = (a[i] > a[0]) == ascending
        if (a[i] < a[0]) != ascending:
            count += 1
    return out, count


def bool_mixed_with_numbers(a: Any, flag: bool) -> Any:
    out = np.empty(a.shape[0], dtype=np.int8)
    for i in range(a.shape[0]):
        out[i] = a[i] + flag  # int8 plus NumPy's bool: int8
    return out


def test_a_python_bool_operand_runs_in_c(numpy_runs: list[Any]) -> None:
    reset()
    rng = np.random.default_rng(0)
    for fn, args in (
        (compare_exchange_flags, lambda n: (rng.standard_normal(n), 2)),
        (bool_mixed_with_numbers, lambda n: (rng.integers(-5, 5, n).astype(np.int8), True)),
    ):
        compiled = compile_function(fn, backend="inductor", dynamic=True)
        for n in (6, 9, 1, 0):
            made = args(n)
            assert_same_as_eager(compiled(*made), fn(*made))
    assert numpy_runs == []
