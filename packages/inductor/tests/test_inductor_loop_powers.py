"""Float powers in C loops (`scalar_power`, codegen.common.FLOAT_SCALAR_MATH): `x[i] ** y`
of NumPy float scalars is NumPy's scalar math, libm's `pow`, where the ufunc on arrays calls
SVML's on AVX-512 machines; the C loop computes it with `pow` and gives eager's bits, its
warnings (through the replay) and its types, without running the body with NumPy."""

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


def _copies(args: tuple[Any, ...]) -> list[Any]:
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _same_bits(fn: Callable[..., Any], *args: Any) -> None:
    got = _compiled(fn)(*_copies(args))
    want = fn(*_copies(args))
    assert_same_as_eager(got, want)
    assert np.asarray(got).tobytes() == np.asarray(want).tobytes()


def _powers(x: Any, y: Any) -> Any:
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] ** 2 + x[i] ** 0.5 + x[i] ** y[i] + 1.5 ** y[i]
    return out


def _carried_power(x: Any) -> Any:
    s = x[0]
    for i in range(1, x.shape[0]):
        s = (s + x[i]) ** 0.75
    return s


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_scalar_powers_run_as_c_with_eagers_bits(dtype: str, numpy_runs: list[Any]) -> None:
    rng = np.random.default_rng(3)
    x = rng.uniform(0.0, 3.0, 400).astype(dtype)
    y = rng.uniform(-4.0, 4.0, 400).astype(dtype)
    _same_bits(_powers, x, y)
    assert numpy_runs == []


def test_square_and_root_of_a_numpy_scalar_are_pow() -> None:
    # `x[i] ** 2` is NumPy's scalar math, pow(x, 2.0): 2.835154870775152 here, where x * x
    # (NumPy's `array ** 2`, which capture used) gives 2.8351548707751526.
    x = np.array([1.6837918133709857, 0.3, 2.5])
    y = np.array([1.733690506913503, 2.0, -1.0])
    _same_bits(_powers, x, y)


def test_a_bool_scalar_squared_is_an_int64() -> None:
    def squares(b: Any) -> Any:
        out = np.zeros(b.shape[0], dtype=np.int64)
        for i in range(b.shape[0]):
            out[i] = b[i] ** 2 + (b[i] ** 2).itemsize
        return out

    _same_bits(squares, np.array([True, False, True]))


def test_a_power_of_a_carried_scalar_gives_eagers_bits() -> None:
    x = np.random.default_rng(4).uniform(0.0, 2.0, 300)
    _same_bits(_carried_power, x)


def test_np_power_of_scalars_keeps_the_ufuncs_bits() -> None:
    # `np.power(a, b)` on NumPy scalars is the ufunc's loop (SVML here), not scalar math.
    def ufunc_power(x: Any, y: Any) -> Any:
        out = np.empty_like(x)
        for i in range(x.shape[0]):
            out[i] = np.power(x[i], y[i])
        return out

    rng = np.random.default_rng(5)
    _same_bits(ufunc_power, rng.uniform(0.0, 3.0, 400), rng.uniform(-4.0, 4.0, 400))


def test_power_warnings_are_eagers() -> None:
    # 0.0 ** -1.0 (divide), -1.0 ** 0.5 (invalid) and 10.0 ** 400 (overflow) on NumPy scalars.
    def warned(x: Any, y: Any) -> Any:
        out = np.empty_like(x)
        for i in range(x.shape[0]):
            out[i] = x[i] ** y[i]
        return out

    x = np.array([2.0, 0.0, -1.0, 10.0, 3.0])
    y = np.array([0.5, -1.0, 0.5, 400.0, 2.0])
    outcomes = []
    for fn in (warned, _compiled(warned)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = fn(x.copy(), y.copy())
        outcomes.append((result, [(w.category, str(w.message), w.lineno) for w in caught]))
    (got, got_warnings), (want, want_warnings) = outcomes[1], outcomes[0]
    assert_same_as_eager(got, want)
    assert got_warnings == want_warnings


def _python_power(x: Any, t: float, e: float) -> Any:
    s = 0.0
    for i in range(x.shape[0]):
        s = s + t**e * x[i]
        t = t * 0.99
    return s


def _outcome(fn: Callable[..., Any], *args: Any) -> Any:
    try:
        return fn(*args)
    except (ZeroDivisionError, OverflowError, TypeError) as error:
        return (type(error), str(error))


@pytest.mark.parametrize(
    ("t", "e"),
    [
        (1.5, 2.0),
        (1.5, 0.5),
        (0.0, -1.0),
        (-1.5, 3.0),
        pytest.param(
            -1.5,
            0.5,
            marks=pytest.mark.xfail(
                strict=True,
                reason="known, on main too: a Python complex times a NumPy float64 comes back "
                "np.complex128 where eager keeps a Python complex",
            ),
        ),
        (10.0, 400.0),
        (1.5, -1800.0),
    ],
)
def test_python_float_powers_are_pythons(t: float, e: float) -> None:
    # libm's pow in C; ZeroDivisionError, a complex result, OverflowError and a subnormal
    # result (which CPython may raise on) leave the C loop for eager's body.
    x = np.random.default_rng(6).uniform(0.5, 1.5, 40)
    got = _outcome(_compiled(_python_power), x, t, e)
    want = _outcome(_python_power, x, t, e)
    assert type(got) is type(want)
    assert repr(got) == repr(want)


def test_python_float_powers_run_as_c(numpy_runs: list[Any]) -> None:
    x = np.random.default_rng(6).uniform(0.5, 1.5, 300)
    got = _compiled(_python_power)(x, 1.5, 2.5)
    assert repr(got) == repr(_python_power(x, 1.5, 2.5))
    assert numpy_runs == []
