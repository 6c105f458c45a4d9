"""`math` module functions in loop bodies (`math.sqrt(abs(x[i]))`, `math.floor`,
`math.isnan`): the loop stays kept and runs as C, with CPython's values bit for bit,
its Python result types, and its errors ("math domain error") from the user's line
with the writes of earlier iterations as eager left them.
"""

from __future__ import annotations

import logging
import math
import traceback
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from harness import per_iteration_hints

import numpile


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    numpile.reset()
    yield
    numpile.reset()


def sqrt_exp_sum(x: Any) -> Any:
    s = 0.0
    for i in range(x.shape[0]):
        s += math.sqrt(abs(x[i])) + math.exp(-x[i] * x[i])
    return s


def root_sum(x: Any) -> Any:
    s = 0.0
    for i in range(x.shape[0]):
        s += math.sqrt(x[i]) * 3.0 + math.log(x[i])
    return s


def trig_log_sum(x: Any) -> Any:
    s = 0.0
    for i in range(x.shape[0]):
        s += math.log(abs(x[i]) + 1.0) * math.sin(x[i]) + math.cos(x[i]) - math.tan(x[i] / 7)
    return s


def floors_and_ceils(x: Any) -> Any:
    total = 0
    for i in range(x.shape[0]):
        total += math.floor(x[i] * 3.5) - math.ceil(x[i]) + math.floor(i)
    return total


def classify(x: Any, out: Any) -> Any:
    nans = 0
    odd = 0
    for i in range(x.shape[0]):
        nans += math.isnan(x[i])
        if math.isinf(x[i]) or not math.isfinite(x[i]):
            odd += 1
        out[i] = math.copysign(math.fabs(x[i]), -1.0) + math.sqrt(i)
    return nans, odd


def square_roots_into(x: Any, out: Any) -> Any:
    for i in range(x.shape[0]):
        out[i] = math.sqrt(x[i])
    return out


def exps_into(x: Any, out: Any) -> Any:
    for i in range(x.shape[0]):
        out[i] = math.exp(x[i])
    return out


def logs_into(x: Any, out: Any) -> Any:
    for i in range(x.shape[0]):
        out[i] = math.log(x[i])
    return out


def floors_into(x: Any, out: Any) -> Any:
    last = 0
    for i in range(x.shape[0]):
        last = math.floor(x[i])
        out[i] = last
    return last


def _data(dtype: str, n: int) -> Any:
    values = np.random.default_rng(n).standard_normal(n) * 4
    return values.astype(dtype)


def _same(got: Any, want: Any) -> None:
    # Bit for bit, with Python's scalar types.
    assert type(got) is type(want)
    if isinstance(want, tuple):
        for mine, eager in zip(got, want, strict=True):
            _same(mine, eager)
    elif isinstance(want, np.ndarray):
        assert got.dtype == want.dtype
        assert got.tobytes() == want.tobytes()
    else:
        assert repr(got) == repr(want)


def _runs_as_c(fn: Callable[..., Any], *args: Any) -> None:
    out = numpile.explain(fn)(*args)
    assert out.loops_not_kept == () and out.graph_break_count == 0, str(out)
    tiers = [str(tier) for graph in out.loop_tiers for tier in graph]
    assert tiers and all("runs as one C loop nest" in tier for tier in tiers), tiers


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
@pytest.mark.parametrize("fn", [sqrt_exp_sum, trig_log_sum, floors_and_ceils])
def test_sums_match_eager_bit_for_bit_as_c(
    fn: Callable[..., Any], dtype: str, caplog: pytest.LogCaptureFixture
) -> None:
    _runs_as_c(fn, _data(dtype, 9))
    compiled = numpile.compile(fn, fullgraph=True, dynamic=True)
    with caplog.at_level(logging.INFO, logger="numpile.perf_hints"):
        for n in (0, 1, 2, 9, 1000):
            _same(compiled(_data(dtype, n)), fn(_data(dtype, n)))
    assert not per_iteration_hints(caplog.records)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_classifiers_and_signs_write_what_eager_writes(dtype: str) -> None:
    def inputs(n: int) -> tuple[Any, Any]:
        x = _data(dtype, n)
        x[1::5] = np.nan
        x[2::7] = -np.inf
        x[3::11] = -0.0
        return x, np.zeros(n)

    _runs_as_c(classify, *inputs(9))
    compiled = numpile.compile(classify, fullgraph=True, dynamic=True)
    for n in (0, 1, 2, 30, 1000):
        mine, eager = inputs(n), inputs(n)
        _same(compiled(*mine), classify(*eager))
        _same(mine[1], eager[1])


def test_ints_past_two_to_the_53_convert_as_cpython() -> None:
    # sqrt and log of the double CPython converts to; floor of 2**63 - 1 as a double is
    # 2**63, a Python big int (the C loop hands over to NumPy there).
    x = np.array([2**53 + 1, 2**62 + 3, 2**63 - 1, 7, 2**63 - 1], dtype=np.int64)
    _runs_as_c(root_sum, x[:3])
    for fn in (root_sum, floors_and_ceils):
        compiled = numpile.compile(fn, fullgraph=True, dynamic=True)
        for n in (2, 3, 5):
            _same(compiled(x[:n]), fn(x[:n]))


def _error(fn: Callable[..., Any], *args: Any) -> tuple[str, int | None]:
    with pytest.raises((ValueError, OverflowError)) as info:
        fn(*args)
    frames = traceback.extract_tb(info.value.__traceback__)
    user = [frame for frame in frames if frame.filename == __file__]
    return f"{type(info.value).__name__}: {info.value}", user[-1].lineno if user else None


@pytest.mark.parametrize(
    ("fn", "bad"),
    [
        (square_roots_into, -1.0),
        (exps_into, 1000.0),
        (logs_into, 0.0),
        (logs_into, -np.inf),
        (floors_into, np.nan),
        (floors_into, np.inf),
    ],
)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_errors_are_cpythons_from_the_users_line_after_eagers_writes(
    fn: Callable[..., Any], bad: float, dtype: str
) -> None:
    def inputs(n: int, at: int | None) -> tuple[Any, Any]:
        x = (np.abs(_data(dtype, n)) + 0.5).astype(dtype)
        if at is not None:
            x[at] = bad
        return x, np.full(n, -7.0)

    _runs_as_c(fn, *inputs(9, None))
    compiled = numpile.compile(fn, fullgraph=True, dynamic=True)
    _same(compiled(*inputs(9, None)), fn(*inputs(9, None)))
    for n, at in ((1, 0), (9, 4), (50, 49)):
        mine, eager = inputs(n, at), inputs(n, at)
        message, line = _error(compiled, *mine)
        assert (message, line) == _error(fn, *eager)
        assert line is not None
        _same(mine[1], eager[1])
    _same(compiled(*inputs(9, None)), fn(*inputs(9, None)))


def test_floor_past_int64_gives_cpythons_big_int() -> None:
    x = np.array([1.5, 2.0**70, -3.25])
    _runs_as_c(floors_and_ceils, x[:1])
    compiled = numpile.compile(floors_and_ceils, fullgraph=True, dynamic=True)
    for n in (1, 2, 3):
        _same(compiled(x[:n]), floors_and_ceils(x[:n]))
