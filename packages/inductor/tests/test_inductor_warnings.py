"""NumPy's RuntimeWarnings under the default error state: compiled graphs warn as eager does.

Differential: each op runs eagerly and compiled on special values (NaN, infinities, signed
zeros, huge and tiny numbers); the warnings (category, message and line) must be the same.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import numpile_runtime as rt
from numpile_capture import capture_function
from numpile_inductor import compile_graph

_SPECIAL = [
    np.nan,
    np.inf,
    -np.inf,
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    2.0,
    1e30,
    -1e30,
    1e-30,
    100.0,
    -1e3,
]

Warned = list[tuple[str, str, int]]


def _compiled(fn: Callable[..., Any], *args: Any) -> Callable[..., Any]:
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return compile_graph(capture_function(fn, tuple(copies), {}).graph).fn


def _run(fn: Callable[..., Any], *args: Any) -> tuple[Any, Warned]:
    # Lines of ufunc-loop warnings ("... encountered in ..."); NumPy's Python-level ones
    # (Mean of empty slice) name a frame counted by stacklevel, which differs between
    # `x.mean()` and `np.mean(x)`, so only their text is compared.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(*args)
    return result, [
        (
            w.category.__name__,
            str(w.message),
            w.lineno if " encountered in " in str(w.message) else 0,
        )
        for w in caught
    ]


def _replays() -> int:
    return rt.counters().get("inductor_errstate_replay", 0)


def _check_same_warnings(fn: Callable[..., Any], *args: Any) -> Warned:
    compiled = _compiled(fn, *args)
    eager_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    compiled_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    expected, expected_warnings = _run(fn, *eager_args)
    got, got_warnings = _run(compiled, *compiled_args)
    # Values within a few ulps of vector math (other tests check values); warnings exactly.
    for got_leaf, expected_leaf in zip(_leaves(got), _leaves(expected), strict=True):
        np.testing.assert_allclose(got_leaf, expected_leaf, rtol=1e-5)
        assert np.asarray(got_leaf).dtype == np.asarray(expected_leaf).dtype
    assert got_warnings == expected_warnings
    for eager_arg, compiled_arg in zip(eager_args, compiled_args, strict=True):
        np.testing.assert_array_equal(compiled_arg, eager_arg)
    return expected_warnings


def _leaves(value: Any) -> list[Any]:
    return list(value) if isinstance(value, tuple) else [value]


def _unary(op: Callable[..., Any]) -> Callable[[Any], Any]:
    return lambda x: op(x) * 1  # the multiply fuses the op into a kernel


def _binary(op: Callable[..., Any]) -> Callable[[Any, Any], Any]:
    return lambda x, y: op(x, y) * 1


_UNARY = [
    np.log, np.log2, np.log10, np.log1p, np.sqrt, np.exp, np.exp2, np.expm1, np.sin, np.cos,
    np.tan, np.arcsin, np.arccos, np.arctan, np.arcsinh, np.arccosh, np.arctanh, np.sinh,
    np.cosh, np.tanh, np.reciprocal, np.square, np.negative, np.absolute, np.sign, np.floor,
    np.ceil, np.trunc, np.rint, np.isnan, np.isinf, np.isfinite, np.cbrt,
]  # fmt: skip
_BINARY = [
    np.add, np.subtract, np.multiply, np.divide, np.floor_divide, np.remainder, np.power,
    np.maximum, np.minimum, np.fmax, np.fmin, np.greater, np.less, np.greater_equal,
    np.less_equal, np.equal, np.not_equal, np.copysign, np.arctan2, np.hypot, np.fmod,
]  # fmt: skip


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", _UNARY, ids=lambda op: op.__name__)
def test_unary_ops_warn_as_numpy_does(op: Callable[..., Any], dtype: str) -> None:
    _check_same_warnings(_unary(op), np.array(_SPECIAL, dtype=dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", _BINARY, ids=lambda op: op.__name__)
def test_binary_ops_warn_as_numpy_does(op: Callable[..., Any], dtype: str) -> None:
    # Every pair of special values: a column against a row.
    values = np.array(_SPECIAL, dtype=dtype)
    _check_same_warnings(_binary(op), values[:, None], values[None, :])


def _relu_and_max(x: Any) -> Any:
    return np.where(x > 0, x, 0.0) + np.maximum(x, 0.0) * np.minimum(x, 1.0), x.max(axis=-1)


def _compare(x: Any, y: Any) -> Any:
    return (x < y) | (x >= y) | np.isnan(x), np.sign(x) * np.clip(y, -1.0, 1.0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nan_data_through_comparisons_and_selects_warns_nothing(dtype: str) -> None:
    # NumPy's orderings, maximum, sign and max reductions are quiet on NaN; so are the
    # kernels' (no invalid flag, so no op-by-op run either).
    x = np.full((8, 67), np.nan, dtype=dtype)  # 67: lanes and a tail
    x[::2] = 1.0
    x[1, :-1] = 2.0  # a NaN in the tail only
    x[3, 1:] = -2.0  # a NaN in the lanes only
    before = _replays()
    assert _check_same_warnings(_relu_and_max, x) == []
    assert _check_same_warnings(_compare, x, x[::-1].copy()) == []
    assert _replays() == before


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint16"])
@pytest.mark.parametrize("op", [np.floor_divide, np.remainder], ids=lambda op: op.__name__)
def test_integer_division_by_zero_and_overflow_warn(op: Callable[..., Any], dtype: str) -> None:
    info = np.iinfo(dtype)
    values = np.array([info.min, info.max, 7, 1, 0], dtype=dtype)
    divisors = np.array([-1 if info.min else 2, 0, 0, 3, 0], dtype=dtype)
    assert _check_same_warnings(_binary(op), values, divisors)


def _mean_and_reciprocal(x: Any, y: Any) -> Any:
    return x.mean(axis=1), 1.0 / y


def test_an_empty_mean_and_a_later_division_warn_once_each() -> None:
    expected = _check_same_warnings(_mean_and_reciprocal, np.ones((3, 0)), np.zeros(3))
    assert {message for _, message, _ in expected} >= {
        "Mean of empty slice",
        "divide by zero encountered in divide",
    }


def _in_place(x: Any, y: Any) -> Any:
    x /= y
    x += 1.0
    return np.sqrt(x)


def test_a_mutating_graph_warns_and_writes_its_input_once() -> None:
    x, y = np.array([1.0, -4.0, 0.0, 2.0]), np.array([1.0, 1.0, 0.0, 0.0])
    assert _check_same_warnings(_in_place, x, y) == [
        ("RuntimeWarning", "divide by zero encountered in divide", _in_place_line() + 1),
        ("RuntimeWarning", "invalid value encountered in divide", _in_place_line() + 1),
        ("RuntimeWarning", "invalid value encountered in sqrt", _in_place_line() + 3),
    ]


def _in_place_line() -> int:
    return _in_place.__code__.co_firstlineno


def _divide(x: Any, y: Any) -> Any:
    return np.sin(x) / y + 1


@pytest.fixture
def once_per_line() -> Iterator[None]:
    # Python's default action: one report per (message, category, line) of a module.
    registry = _divide.__globals__.setdefault("__warningregistry__", {})
    registry.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        yield
    registry.clear()


def test_the_default_filter_reports_once_per_line_as_for_eager(once_per_line: None) -> None:
    x, y = np.ones(8), np.zeros(8)
    compiled = _compiled(_divide, x, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        compiled(x, y)
        compiled(x, y)
        _divide(x, y)
    assert len(caught) == 1
    assert caught[0].lineno == _divide.__code__.co_firstlineno + 1


def test_an_error_filter_raises_the_warning_from_the_users_line() -> None:
    x, y = np.ones(8), np.zeros(8)
    compiled = _compiled(_divide, x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeWarning, match="divide by zero encountered in divide") as got:
            compiled(x, y)
    frames = [(entry.path.name, entry.lineno + 1) for entry in got.traceback]
    assert (__file__.rsplit("/", 1)[-1], _divide.__code__.co_firstlineno + 1) in frames


def test_no_warning_no_replay_and_ignore_is_free() -> None:
    x = np.linspace(1.0, 2.0, 4096)
    compiled = _compiled(_divide, x, x)
    before = _replays()
    assert _run(compiled, x, x)[1] == []
    with np.errstate(all="ignore"):
        assert _run(compiled, x, np.zeros_like(x))[1] == []
    with np.errstate(divide="ignore", invalid="warn"):
        assert _run(compiled, x, np.zeros_like(x))[1] == []
    assert _replays() == before
    assert _run(compiled, x, np.zeros_like(x))[1]
    assert _replays() == before + 1


def _overflowing_sum(x: Any) -> Any:
    return (x * x).sum(axis=-1)


def test_parallel_kernels_gather_every_threads_flags() -> None:
    # Large enough for the OpenMP threshold; the overflow lies in the last rows only.
    x = np.ones((512, 512), dtype=np.float32)
    x[-1, -1] = 1e30
    _check_same_warnings(_overflowing_sum, x)


def _matmul_then_divide(x: Any, w: Any, y: Any) -> Any:
    z = x @ w
    return z + w[0] / y


@pytest.mark.parametrize("divisor", [0.0, 1.0])
def test_extern_ops_warn_from_the_users_line_once(divisor: float) -> None:
    # matmul runs as an extern NumPy call inside the module: its warning names the user's
    # line, and the op-by-op run that the division's flag starts does not repeat it.
    x = np.full((4, 4), np.inf)
    w = np.ones((4, 4))
    w[:, 0] = 0.0
    warned = _check_same_warnings(_matmul_then_divide, x, w, np.full(4, divisor))
    first = _matmul_then_divide.__code__.co_firstlineno
    assert ("RuntimeWarning", "invalid value encountered in matmul", first + 1) in warned
    assert len(warned) == (3 if divisor == 0.0 else 1)


def _add_then_divide(x: Any, y: Any) -> Any:
    x += y
    return x / 0.0


def test_a_graph_that_cannot_run_again_puts_its_written_input_back_for_eager_warnings() -> None:
    # Inputs that overlap in memory run the graph with its in-place ops as barriers: the
    # kernels write the input, so the graph cannot run again as it is; it copies the input
    # it writes first and, after the flag, puts it back and runs op by op: eager's warning
    # from eager's line (it named "add_ or divide" on the function's first line before),
    # and the input written once.
    base = np.arange(1.0, 9.0)
    compiled = _compiled(_add_then_divide, base[:4].copy(), base[2:6].copy())
    eager_base, compiled_base = base.copy(), base.copy()
    expected, eager_warned = _run(_add_then_divide, eager_base[:4], eager_base[2:6])
    got, warned = _run(compiled, compiled_base[:4], compiled_base[2:6])
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(compiled_base, eager_base)
    assert warned == eager_warned
    line = _add_then_divide.__code__.co_firstlineno + 2
    assert warned == [("RuntimeWarning", "divide by zero encountered in divide", line)]


def _normalize_rows(P: Any) -> Any:
    sums = np.zeros(P.shape[0])
    for i in range(P.shape[0]):
        s = P[i].sum()
        P[i] = P[i] / s
        sums[i] = s
    return sums


def _ratios(x: Any, y: Any) -> Any:
    out = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = x[i] / y[i]
    return out


def test_loops_that_write_arrays_warn_as_eager() -> None:
    # A C loop writing an input (P) or only an array of its own (out) warned "invalid
    # value encountered in dim or for_loop" from the loop's line (main, unseen4): now
    # eager's message and line, and P written once.
    P = np.ones((4, 3))
    P[1] = 0.0
    _check_same_warnings(_normalize_rows, P)
    y = np.ones(5)
    y[2] = 0.0
    _check_same_warnings(_ratios, np.ones(5), y)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("target", ["int32", "int64", "uint8"])
def test_casts_of_nan_and_huge_values_warn_as_numpy_does(dtype: str, target: str) -> None:
    values = np.array(_SPECIAL, dtype=dtype)
    assert _check_same_warnings(lambda x: x.astype(target) + 1, values)
