"""numpile end to end: the real tracer, the eager backend, the dispatcher and the stances."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import numpile


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    numpile.reset()
    yield
    numpile.reset()
    numpile.set_stance("default")


@numpile.compile
def foo(x: Any) -> Any:
    if numpile.is_compiling():
        return x + 1
    return x - 1


def as_list(array: Any) -> list[float]:
    return [float(v) for v in np.asarray(array).ravel()]


def test_seed_set_stance_examples() -> None:
    inp = np.zeros(3)
    assert as_list(foo(inp)) == [1, 1, 1]

    @numpile.set_stance("force_eager")
    def bar(x: Any) -> Any:
        return foo(x)

    assert as_list(bar(inp)) == [-1, -1, -1]
    with numpile.set_stance("force_eager"):
        assert as_list(foo(inp)) == [-1, -1, -1]
    numpile.set_stance("force_eager")
    assert as_list(foo(inp)) == [-1, -1, -1]
    numpile.set_stance("default")
    assert as_list(foo(inp)) == [1, 1, 1]


def test_seed_eager_on_recompile() -> None:
    @numpile.compile
    def my_huge_model(x: Any) -> Any:
        if numpile.is_compiling():
            return x + 1
        return x - 1

    assert as_list(my_huge_model(np.zeros(3))) == [1, 1, 1]
    with numpile.set_stance("eager_on_recompile"):
        assert as_list(my_huge_model(np.zeros(3))) == [1, 1, 1]
        assert as_list(my_huge_model(np.zeros(4))) == [-1, -1, -1, -1]
        assert as_list(my_huge_model(np.zeros(3))) == [1, 1, 1]


def test_seed_fail_on_recompile() -> None:
    @numpile.compile
    def my_big_model(x: Any) -> Any:
        return np.maximum(x, 0)

    my_big_model(np.ones(3))
    with numpile.set_stance("fail_on_recompile"):
        my_big_model(np.ones(3))
        with pytest.raises(RuntimeError, match=r"Detected recompile when numpile\.compile stance"):
            my_big_model(np.ones(4))


def test_seed_crashing_sooner_with_force_eager() -> None:
    @numpile.compile
    def my_humongous_model(x: Any) -> Any:
        return np.sin(x, x, x, x)

    with pytest.raises(TypeError), numpile.set_stance("force_eager"):
        my_humongous_model(np.ones(3))


def test_compiled_matches_numpy_and_reuses_the_entry(caplog: pytest.LogCaptureFixture) -> None:
    @numpile.compile
    def f(x: Any, y: Any) -> Any:
        return np.sin(x) * 2 + y

    x = np.linspace(0, 1, 5, dtype=np.float32)
    y = np.arange(5, dtype=np.float32)
    expected = np.sin(x) * 2 + y
    with caplog.at_level(logging.INFO, logger="numpile.recompiles"):
        for _ in range(3):
            out = f(x, y)
            np.testing.assert_array_equal(out, expected)
            assert out.dtype == expected.dtype
    assert "Recompiling" not in caplog.text


def test_recompiles_log_the_failing_guard(caplog: pytest.LogCaptureFixture) -> None:
    @numpile.compile
    def f(x: Any) -> Any:
        return x * 2

    f(np.zeros(8, np.float32))
    with caplog.at_level(logging.INFO, logger="numpile.recompiles"):
        f(np.zeros(9, np.float32))
        f(np.zeros(9, np.float64))
        f(np.zeros((9, 2), np.float64)[:, 0])
    assert "L['x'].shape[0]: expected 8, got 9" in caplog.text
    assert "L['x'].dtype: expected float32, got float64" in caplog.text
    assert "L['x'].strides: expected (8,), got (16,)" in caplog.text


def test_strided_inputs_get_their_own_entry_and_right_values() -> None:
    @numpile.compile
    def f(x: Any) -> Any:
        return x + 1

    base = np.arange(12.0).reshape(3, 4)
    for value in (base, base.T, base[::-1], base[:, ::2], np.asfortranarray(base)):
        np.testing.assert_array_equal(f(value), value + 1)


def test_fullgraph_error_text() -> None:
    @numpile.compile(fullgraph=True)
    def loud(x: Any) -> Any:
        print("side effect")
        return x + 1

    with pytest.raises(numpile.Unsupported) as info:
        loud(np.zeros(2))
    message = str(info.value)
    assert message.startswith("not supported yet: ")
    assert message.endswith(f"({__file__}:{loud.__wrapped__.__code__.co_firstlineno + 2})")


def test_unsupported_warns_once_and_runs_eagerly(capsys: pytest.CaptureFixture[str]) -> None:
    # Compiling a generator function itself is not supported: it runs eagerly.
    @numpile.compile
    def loud(x: Any) -> Any:
        print("side effect")
        yield x + 1

    with pytest.warns(UserWarning, match="loud eagerly from now on"):
        (got,) = loud(np.zeros(2))
    np.testing.assert_array_equal(got, np.ones(2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (got,) = loud(np.zeros(2))
    np.testing.assert_array_equal(got, np.ones(2))
    assert capsys.readouterr().out == "side effect\nside effect\n"


def test_invalid_program_raises_numpys_error_from_the_users_line() -> None:
    @numpile.compile
    def bad(x: Any, y: Any) -> Any:
        return x + y

    with pytest.raises(ValueError, match="could not be broadcast") as info:
        bad(np.zeros(2), np.zeros(3))
    assert info.traceback[-1].name == "bad"
    np.testing.assert_array_equal(bad(np.ones(2), np.ones(2)), np.full(2, 2.0))


def test_cache_size_limit_from_config() -> None:
    @numpile.compile(dynamic=False)  # automatic dynamic would serve every size with one entry
    def f(x: Any) -> Any:
        return x + 1

    previous = numpile.config.cache_size_limit
    numpile.config.cache_size_limit = 2
    try:
        f(np.zeros(1))
        f(np.zeros(2))
        with pytest.warns(UserWarning, match="cache_size_limit"):
            np.testing.assert_array_equal(f(np.zeros(3)), np.ones(3))
    finally:
        numpile.config.cache_size_limit = previous


def test_compiled_function_called_from_compiled_code_is_inlined() -> None:
    @numpile.compile
    def inner(x: Any) -> Any:
        return x * 3

    @numpile.compile(fullgraph=True)
    def outer(x: Any) -> Any:
        return inner(x) + 1

    np.testing.assert_array_equal(outer(np.ones(2)), np.full(2, 4.0))


def test_list_backends_and_register_backend() -> None:
    assert "eager" in numpile.list_backends()
    calls: list[str] = []

    def counting(graph: Any, example_inputs: list[Any]) -> Any:
        calls.append(str(graph))
        return lambda *inputs: np.full(3, 42.0)

    @numpile.compile(backend=counting)
    def f(x: Any) -> Any:
        return x + 1

    assert as_list(f(np.zeros(3))) == [42.0] * 3
    assert len(calls) == 1


def test_disable_returns_the_function() -> None:
    def f(x: Any) -> Any:
        return x

    assert numpile.compile(f, disable=True) is f
