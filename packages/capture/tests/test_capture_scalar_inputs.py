"""Python int and float inputs compiled unspecialized: weak scalar graph inputs, their guards."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from numpile_capture import ScalarMeta, compile_function, config, reset
from numpile_capture.capture_events import CaptureEvent, recording_captures
from numpile_capture.dynamic_shapes import DynamicPolicy
from numpile_guards import cache_for

pytestmark = pytest.mark.usefixtures("fresh_dispatch")


def _compiles(events: list[CaptureEvent]) -> int:
    return len(events)


def _entries(fn: Callable[..., Any]) -> int:
    return len(cache_for(fn.__code__).entries)


def _same(got: Any, want: Any) -> None:
    assert type(got) is type(want)
    if isinstance(got, tuple):
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _same(g, w)
        return
    if isinstance(want, np.ndarray):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        return
    assert got == want or (got != got and want != want)


def sgd(w: Any, g: Any, lr: Any) -> Any:
    return w - lr * g


W = np.linspace(-1, 1, 6, dtype=np.float32)
G = np.linspace(2, 3, 6, dtype=np.float32)
RATES = (0.1, 0.05, 0.025, 1e-3, 3.0, -0.5)


def _run(compiled: Callable[..., Any], fn: Callable[..., Any], *calls: tuple[Any, ...]) -> int:
    with recording_captures() as events:
        for args in calls:
            _same(compiled(*args), fn(*args))
    return _compiles(events)


def test_a_float_argument_is_a_graph_input_from_the_first_compile() -> None:
    compiled = compile_function(sgd, backend="eager")
    assert _run(compiled, sgd, *[(W, G, lr) for lr in RATES]) == 1
    (entry,) = cache_for(sgd.__code__).entries
    guards = [str(g) for g in entry.metadata["guards"] if "lr" in str(g)]
    assert guards == ["TYPE_MATCH(L['lr'], class float)"]
    metas = [node.meta for node in entry.metadata["graph"].placeholders]
    assert metas.count(ScalarMeta(float)) == 1


def test_a_changing_int_becomes_a_graph_input_after_one_recompile() -> None:
    def shift(w: Any, k: Any) -> Any:
        return w + k

    compiled = compile_function(shift, backend="eager")
    assert _run(compiled, shift, *[(W, k) for k in (1, 2, 3, 4)]) == 2
    guards = [
        [str(g) for g in entry.metadata["guards"] if "L['k']" in str(g)]
        for entry in cache_for(shift.__code__).entries
    ]
    assert ["EQUALS_MATCH(L['k'], 1)"] in guards


def test_a_float_global_is_baked_in_until_it_changes() -> None:
    compiled = compile_function(_scaled_by_global, backend="eager")
    global _SCALE
    with recording_captures() as events:
        for scale in (2.0, 3.0, 4.0):
            _SCALE = scale
            _same(compiled(W), _scaled_by_global(W))
    assert _compiles(events) == 2


_SCALE = 2.0


def _scaled_by_global(w: Any) -> Any:
    return w * _SCALE


def test_dynamic_true_takes_scalars_as_inputs_at_once_and_false_never() -> None:
    eager_first = compile_function(sgd, backend="eager", dynamic=True)
    assert _run(eager_first, sgd, *[(W, G, lr) for lr in RATES]) == 1
    reset()
    static = compile_function(sgd, backend="eager", dynamic=False)
    with config.patch(cache_size_limit=len(RATES)):
        assert _run(static, sgd, *[(W, G, lr) for lr in RATES]) == len(RATES)


@pytest.mark.parametrize("field", ["specialize_float", "specialize_int"])
def test_specialize_config_keeps_that_type_baked_in(field: str) -> None:
    values = RATES if field == "specialize_float" else (1, 2, 3, 4)
    with config.patch(**{field: True, "cache_size_limit": 16}):
        compiled = compile_function(sgd, backend="eager")
        assert _run(compiled, sgd, *[(W, G, v) for v in values]) == len(values)


def test_weak_float_keeps_the_array_dtype() -> None:
    # NEP 50: a Python float next to a float32 / float16 / int array converts as NumPy does.
    def f(x: Any, s: Any) -> Any:
        return x * s, s + x, x / s, x > s

    compiled = compile_function(f, backend="eager", dynamic=True)
    for dtype in (np.float16, np.float32, np.float64, np.int32, np.uint8, np.complex64):
        x = np.arange(5).astype(dtype)
        for s in (0.5, 2.0, -1.25):
            _same(compiled(x, s), f(x, s))


def test_int_input_is_range_guarded_to_the_array_dtype() -> None:
    def f(x: Any, k: Any) -> Any:
        return x + k

    x = np.arange(4, dtype=np.int8)
    compiled = compile_function(f, backend="eager", dynamic=True)
    assert _run(compiled, f, (x, 3), (x, -100), (x, 127 - 3)) == 1
    (entry,) = cache_for(f.__code__).entries
    relations = [str(g) for g in entry.metadata["guards"] if "L['k']" in str(g)]
    assert relations == ["TYPE_MATCH(L['k'], class int)", "SHAPE_RELATION(-128 <= L['k'] <= 127)"]
    with pytest.raises(OverflowError, match="out of bounds for int8"):
        compiled(x, 300)
    with pytest.raises(OverflowError, match="out of bounds for int8"):
        f(x, 300)


def test_comparison_with_an_int_outside_the_dtype_is_answered_as_numpy_does() -> None:
    def f(x: Any, k: Any) -> Any:
        return x > k, x == k

    x = np.arange(250, 256, dtype=np.uint8)
    compiled = compile_function(f, backend="eager", dynamic=True)
    for k in (252, -1, 300, 255, 2**70):
        _same(compiled(x, k), f(x, k))


def test_a_branch_on_a_comparison_guards_its_outcome_not_the_value() -> None:
    def f(x: Any, s: Any, step: Any) -> Any:
        x = x * s if s > 0 else x - s
        if step % 10 == 0:
            x = x + 1.0
        if s:
            x = x * 2.0
        return x

    compiled = compile_function(f, backend="eager", dynamic=True)
    calls = [(W, s, step) for step, s in enumerate((0.5, -0.5, 0.25, 2.0, -3.0, 0.0) * 4)]
    # (s > 0, step % 10 == 0, s != 0) takes five combinations over these calls.
    assert _run(compiled, f, *calls) == 5
    guards = {str(g) for e in cache_for(f.__code__).entries for g in e.metadata["guards"]}
    assert "EQUALS_MATCH((L['s'] > 0), True)" in guards
    assert "EQUALS_MATCH(((L['step'] % 10) == 0), False)" in guards
    assert "SHAPE_RELATION(L['s'] != 0)" in guards
    assert not any(g.startswith("EQUALS_MATCH(L['s']") for g in guards)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x, n: x[:n] * n,
        lambda x, n: (x * n, n),
        lambda x, n: (x + n, f"{n}"),
        lambda x, n: (x * n, n.real, isinstance(n, int)),
        lambda x, n: np.full(3, n) + x[:3],
        lambda x, n: np.clip(x, -n, n),
    ],
    ids=["slice", "returned", "formatted", "method", "creation", "clip"],
)
def test_uses_that_need_the_value_specialize_and_stay_correct(fn: Callable[..., Any]) -> None:
    x = np.linspace(-3, 3, 7)
    compiled = compile_function(fn, backend="eager", dynamic=True)
    for n in (1, 2, 1, 3):
        _same(compiled(x, n), fn(x, n))


def test_is_none_and_isinstance_do_not_specialize() -> None:
    def f(x: Any, s: Any = None) -> Any:
        if s is not None and isinstance(s, float):
            x = x * s
        return x

    compiled = compile_function(f, backend="eager", dynamic=True)
    assert _run(compiled, f, *[(W, s) for s in RATES]) == 1


def test_scalars_inside_containers_and_in_place_updates() -> None:
    def f(w: Any, v: Any, hyper: Any) -> None:
        lr, beta = hyper["lr"], hyper["beta"]
        v *= beta
        v += w
        w -= lr * v

    with recording_captures() as events:
        compiled = compile_function(f, backend="eager")
        for step in range(4):
            hyper = {"lr": 0.1 / (step + 1), "beta": 0.9 - 0.1 * step}
            w_c, v_c = W.copy(), G.copy()
            w_e, v_e = W.copy(), G.copy()
            compiled(w_c, v_c, hyper)
            f(w_e, v_e, hyper)
            _same((w_c, v_c), (w_e, v_e))
    assert _compiles(events) == 1  # floats in an argument's items are inputs at once


def test_scalar_live_across_a_graph_break_keeps_its_call_value(capsys: Any) -> None:
    def f(x: Any, s: Any) -> Any:
        y = np.sin(x) * s
        print("between")
        return y + s * x

    compiled = compile_function(f, backend="eager", dynamic=True)
    for s in RATES:
        _same(compiled(W, s), f(W, s))
    assert _entries(f) == 1


def test_float_overflowing_the_float32_cast_warns_as_numpy_does() -> None:
    def f(x: Any, s: Any) -> Any:
        return x * s

    compiled = compile_function(f, backend="eager", dynamic=True)
    for s in (2.0, 1e300, float("nan"), float("-inf"), -0.0):
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            result = compiled(W, s)
        with warnings.catch_warnings(record=True) as want:
            warnings.simplefilter("always")
            expected = f(W, s)
        _same(result, expected)
        assert [str(w.message) for w in got] == [str(w.message) for w in want]


def test_policy_records_changes_per_source() -> None:
    seen: dict[str, Any] = {}
    policy = DynamicPolicy(None, {}, scalars=seen)
    assert not policy.scalar_is_input(5, "L['steps']")
    assert not policy.scalar_is_input(5, "L['steps']")
    assert policy.scalar_is_input(6, "L['steps']")
    assert policy.scalar_is_input(5, "L['steps']")
    assert policy.scalar_is_input(0.5, "L['lr']")  # a float argument: at once
    assert not policy.scalar_is_input(0.5, "G['rate']")
    assert policy.scalar_is_input(0.25, "G['rate']")
    assert not policy.scalar_is_input(True, "L['flag']")
    assert not policy.scalar_is_input(np.float64(0.5), "L['np_scalar']")
    assert not DynamicPolicy(False).scalar_is_input(0.5, "L['lr']")


B1, B2 = 0.9, 0.999


def adam(w: Any, g: Any, m: Any, v: Any, lr: Any, t: Any) -> Any:
    m = B1 * m + (1 - B1) * g
    v = B2 * v + (1 - B2) * g * g
    mhat = m / (1 - B1**t)
    vhat = v / (1 - B2**t)
    return w - lr * mhat / (np.sqrt(vhat) + 1e-8), m, v


def test_arithmetic_on_scalar_inputs_stays_unspecialized() -> None:
    m = np.zeros_like(W)
    calls = [(W, G, m, m, 1e-3 * 0.99**t, t) for t in range(1, 12)]
    compiled = compile_function(adam, backend="eager")
    assert _run(compiled, adam, *calls) == 2
    guards = {str(g) for e in cache_for(adam.__code__).entries for g in e.metadata["guards"]}
    assert "TYPE_MATCH((0.9 ** L['t']), class float)" in guards


@pytest.mark.parametrize(
    "fn",
    [
        lambda x, a, b: x * (a / b),
        lambda x, a, b: x * (a // b) + a % b,
        lambda x, a, b: x * (-a) + (+b),
        lambda x, a, b: x * (a**b),
        lambda x, a, b: x * (2 ** (a - b)),
    ],
    ids=["truediv", "floordiv-mod", "unary", "pow", "int-pow"],
)
def test_scalar_arithmetic_keeps_python_semantics(fn: Callable[..., Any]) -> None:
    # Zero divisors, negative exponents and overflowing powers: the same values or the
    # same exceptions as eager, whichever entry (derived input or specialized) runs.
    x = np.linspace(-2, 2, 5)
    compiled = compile_function(fn, backend="eager", dynamic=True)
    for a, b in [(3, 2), (5, 3), (7, 0), (2, -3), (-2, 5), (4.5, 1.5), (0.5, 0.0), (10.0, 400)]:
        try:
            want = fn(x, a, b)
        except ArithmeticError as error:
            with pytest.raises(type(error)):
                compiled(x, a, b)
            continue
        _same(compiled(x, a, b), want)


def test_derived_scalar_live_across_a_break_and_returned(capsys: Any) -> None:
    def f(x: Any, lr: Any) -> Any:
        half = lr * 0.5
        print("between")
        return x * half, half

    compiled = compile_function(f, backend="eager", dynamic=True)
    for lr in RATES:
        _same(compiled(W, lr), f(W, lr))


def test_sum_of_scalar_inputs_is_pythons_own_sum() -> None:
    # Python 3.12+ sums floats with compensated summation; a chain of adds would not.
    def f(x: Any, values: Any) -> Any:
        total = sum(values)
        return x * total, total

    compiled = compile_function(f, backend="eager", dynamic=True)
    for values in ([0.1] * 10, [1e16, 1.0, -1e16], [0.5, 0.25, 3]):
        _same(compiled(W, values), f(W, values))


def test_returning_a_scalar_input_does_not_specialize_it() -> None:
    def f(x: Any, lr: Any) -> Any:
        half = lr * 0.5
        return x * lr, lr, {"half": half}

    compiled = compile_function(f, backend="eager", dynamic=True)
    assert _run(compiled, f, *[(W, lr) for lr in RATES]) == 1


def test_identity_tests_on_scalar_inputs_and_their_comparisons() -> None:
    def f(x: Any, s: Any) -> Any:
        positive = s > 0
        if positive is True and s is not None:
            return x * s
        return x - s

    compiled = compile_function(f, backend="eager", dynamic=True)
    for s in (0.5, -0.5, 2.0, -3.0):
        _same(compiled(W, s), f(W, s))


def test_math_functions_and_builtins_on_scalar_inputs_stay_unspecialized() -> None:
    import math

    def f(w: Any, g: Any, lr: Any, t: Any) -> Any:
        step = lr * math.sqrt(1 - 0.999**t) / (1 - 0.9**t)
        floor = max(lr, 0.01) + abs(-lr) + float(t) + round(lr * 100) + math.floor(t / 3)
        return w - step * g + floor

    compiled = compile_function(f, backend="eager")
    calls = [(W, G, 0.1 / t, t) for t in range(1, 10)]
    assert _run(compiled, f, *calls) == 2
    guards = {str(g) for e in cache_for(f.__code__).entries for g in e.metadata["guards"]}
    assert "TYPE_MATCH((math.sqrt((1 - (0.999 ** L['t'])))), class float)" in guards


def test_a_math_function_that_raises_on_a_later_value_raises_as_eager() -> None:
    import math

    def f(x: Any, s: Any) -> Any:
        return x * math.sqrt(s) + math.log(s + 1)

    compiled = compile_function(f, backend="eager", dynamic=True)
    for s in (4.0, 9.0, 0.25):
        _same(compiled(W, s), f(W, s))
    with pytest.raises(ValueError, match="math domain error"):
        compiled(W, -4.0)
    _same(compiled(W, 16.0), f(W, 16.0))


def test_numpy_ufuncs_of_scalar_inputs_alone_are_computed_in_the_graph() -> None:
    # Adam's bias correction through np.sqrt: was specialized on each call's value (a
    # recompile per step until the cache limit, then eager for good).
    def adam_step(w: Any, g: Any, lr: Any, t: Any) -> Any:
        corrected = lr * np.sqrt(1 - 0.999**t) / (1 - 0.9**t)
        return w - corrected * g, np.maximum(lr, 1e-3), np.add(t, 1), np.exp(-lr)

    compiled = compile_function(adam_step, backend="eager")
    calls = [(W, G, 0.1 / t, t) for t in range(1, 12)]
    assert _run(compiled, adam_step, *calls) == 2  # NumPy scalars and float64 as in eager
    texts = [
        " ".join(str(g) for g in entry.metadata["guards"])
        for entry in cache_for(adam_step.__code__).entries
    ]
    assert any("0.999 ** L['t']" in t and "EQUALS_MATCH(L['t']" not in t for t in texts)


def test_a_numpy_ufunc_of_a_scalar_input_warns_as_eager_on_a_bad_value() -> None:
    def f(x: Any, s: Any) -> Any:
        return x * np.sqrt(s)

    compiled = compile_function(f, backend="eager", dynamic=True)
    _same(compiled(W, 4.0), f(W, 4.0))
    with pytest.warns(RuntimeWarning, match="invalid value encountered in sqrt"):
        got = compiled(W, -1.0)
    assert got.dtype == np.float64 and np.isnan(got).all()
