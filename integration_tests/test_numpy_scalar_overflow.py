"""Issue 23, item 4: integer overflow of NumPy scalars warns in compiled code as in eager.

NumPy's scalar math warns ("overflow encountered in scalar multiply", `np.errstate`'s
"over") where an integer op on NumPy scalars overflows, and integer arrays wrap silently.
A compiled function gives the same values, warnings (messages, categories, counts, the
user's line) and errors, straight-line and in a loop that runs as C.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from harness import per_iteration_hints

import numpile


def _product(a: Any, b: Any) -> Any:
    return a * b


def _hash(x: Any, n: int, m: Any) -> Any:
    h = np.int64(1)
    for i in range(n):
        h = h * m + x[i]
    return h


def _recorded(
    fn: Callable[..., Any], *args: Any, action: str = "always"
) -> tuple[Any, list[tuple[str, type, int]]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter(action)
        result = fn(*args)
    return result, [(str(w.message), w.category, w.lineno) for w in caught]


def test_a_compiled_product_of_numpy_scalars_warns_as_eager() -> None:
    compiled = numpile.compile(_product)
    calls = [
        (np.int64(2**62), np.int64(4)),  # the first call: constants, folded at capture
        (np.int64(2**61), np.int64(8)),  # the scalars are inputs from here on
        (np.int64(3), np.int64(5)),
        (np.uint64(2**63), np.uint64(2)),
        (np.uint8(200), np.uint8(2)),
        (np.int8(-128), np.int8(-1)),
    ]
    for args in calls:
        expected, eager_warnings = _recorded(_product, *args)
        got, compiled_warnings = _recorded(compiled, *args)
        assert type(got) is type(expected) and got == expected, args
        assert compiled_warnings == eager_warnings, args
    with np.errstate(over="raise"), pytest.raises(FloatingPointError, match="scalar multiply"):
        compiled(np.int64(2**40), np.int64(2**40))


def test_an_overflowing_loop_warns_on_every_iteration_as_eager(
    caplog: pytest.LogCaptureFixture,
) -> None:
    compiled = numpile.compile(_hash)
    x = np.arange(30, dtype=np.int64)
    # The first multiplier is a constant of the loop, the second an input read in the body.
    with caplog.at_level(logging.INFO, logger="numpile.perf_hints"):
        for m in (np.int64(31), np.int64(37)):
            compiled(x, 10, m)
    assert not per_iteration_hints(caplog.records)  # the loop runs as C
    for m in (np.int64(31), np.int64(37)):
        for n in (30, 10, 20):  # 10 iterations do not overflow
            for action in ("always", "default"):
                expected, eager_warnings = _recorded(_hash, x, n, m, action=action)
                got, compiled_warnings = _recorded(compiled, x, n, m, action=action)
                assert type(got) is type(expected) and got == expected
                assert compiled_warnings == eager_warnings, (m, n, action)
    with np.errstate(over="ignore"):
        assert _recorded(compiled, x, 30, m) == _recorded(_hash, x, 30, m)
        assert _recorded(compiled, x, 30, m)[1] == []


def _ufunc_product(a: Any, b: Any) -> Any:
    return np.multiply(a, b) + a * b


def _method_product(a: Any, b: Any) -> Any:
    return a.__mul__(b) - b.__rsub__(a)


def _ufunc_negative(a: Any, b: Any) -> Any:
    return np.negative(a) + np.absolute(b) + a.__neg__()


@pytest.mark.parametrize("fn", [_ufunc_product, _method_product, _ufunc_negative])
def test_each_spelling_warns_as_eager(fn: Callable[..., Any]) -> None:
    # `np.multiply(a, b)` wraps integer scalars silently where `a * b` and `a.__mul__(b)`
    # warn "overflow encountered in scalar multiply": the first call's constants, then inputs.
    compiled = numpile.compile(fn, options={"tiered": False})
    calls = [
        (np.int64(2**62), np.int64(-(2**63))),
        (np.int64(-(2**63)), np.int64(4)),
        (np.uint8(200), np.uint8(3)),
        (np.int64(3), np.int64(5)),
    ]
    for args in calls:
        expected, eager_warnings = _recorded(fn, *args)
        got, compiled_warnings = _recorded(compiled, *args)
        assert type(got) is type(expected) and got == expected, args
        assert compiled_warnings == eager_warnings, args


def test_integer_arrays_wrap_silently() -> None:
    def scaled(x: Any, k: Any) -> Any:
        return x * k - k

    compiled = numpile.compile(scaled)
    x = np.array([2**62, -(2**62), 7], dtype=np.int64)
    for k in (np.int64(4), np.int64(8), np.int64(-(2**63))):
        expected, eager_warnings = _recorded(scaled, x, k)
        got, compiled_warnings = _recorded(compiled, x, k)
        np.testing.assert_array_equal(got, expected)
        assert compiled_warnings == eager_warnings == []


def _scale_in_place(x: Any, n: int, s: Any) -> Any:
    for i in range(n):
        x[i] = x[i] * s
    return x


def test_a_loop_writing_its_input_in_place_warns_and_writes_as_eager() -> None:
    # The loop keeps writing `x` in place: a call that overflowed puts `x` back and runs
    # with NumPy, for eager's warnings and eager's writes (up to an "error" filter's stop).
    compiled = numpile.compile(_scale_in_place, options={"tiered": False})
    s = np.int64(2**40)
    for n, action in ((5, "always"), (5, "default"), (5, "ignore"), (6, "always")):
        eager_x = np.full(6, 2**30, dtype=np.int64)
        compiled_x = eager_x.copy()
        returned, eager_warnings = _recorded(_scale_in_place, eager_x, n, s, action=action)
        got, compiled_warnings = _recorded(compiled, compiled_x, n, s, action=action)
        assert returned is eager_x and got is compiled_x
        np.testing.assert_array_equal(compiled_x, eager_x)
        assert compiled_warnings == eager_warnings, (n, action)
    assert eager_warnings[0][0] == "overflow encountered in scalar multiply"
    eager_x = np.array([1, 2**30, 2**30], dtype=np.int64)
    compiled_x = eager_x.copy()
    for fn, x in ((_scale_in_place, eager_x), (compiled, compiled_x)):
        with pytest.raises(RuntimeWarning, match="scalar multiply"):
            _recorded(fn, x, 3, s, action="error")
    np.testing.assert_array_equal(compiled_x, eager_x)  # the first element only
