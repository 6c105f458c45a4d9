"""Generators consumed inside a compiled function: traced lazily, one yield at a time."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from numpile_capture import capture_function, compile_function
from numpile_capture.dispatch import CaptureEvent, CaptureFallbackWarning, recording_captures

pytestmark = pytest.mark.usefixtures("fresh_dispatch")


def _run(
    fn: Callable[..., Any], make_args: Callable[[], tuple[Any, ...]], capsys: Any
) -> list[CaptureEvent]:
    # Eager and compiled (twice) on fresh arguments: values, dtypes, prints, no fallback.
    compiled = compile_function(fn, backend="eager")
    events: list[CaptureEvent] = []
    for _ in range(2):
        args = make_args()
        expected = fn(*copy.deepcopy(args))
        printed = capsys.readouterr().out
        with recording_captures() as seen, warnings.catch_warnings():
            warnings.simplefilter("error", CaptureFallbackWarning)
            got = compiled(*args)
        events += seen
        assert capsys.readouterr().out == printed
        for a, b in zip(np.atleast_1d(*_flat(got)), np.atleast_1d(*_flat(expected)), strict=True):
            assert np.asarray(a).dtype == np.asarray(b).dtype
            np.testing.assert_array_equal(a, b)
    return events


def _flat(value: Any) -> list[Any]:
    if isinstance(value, tuple | list):
        return [item for part in value for item in _flat(part)]
    return [value]


def _squares(arrays: list[np.ndarray]) -> Iterator[np.ndarray]:
    for a in arrays:
        yield a * a


def _countdown(x: np.ndarray, n: int) -> Iterator[np.ndarray]:
    while n > 0:
        yield x * n
        n -= 1
    return


def _arrays() -> tuple[Any, ...]:
    return ([np.arange(3.0) + i for i in range(3)],)


def _sum_of_generator(arrays: list[np.ndarray]) -> np.ndarray:
    return sum(_squares(arrays), np.zeros(3))


def _list_of_generator(x: np.ndarray) -> np.ndarray:
    return np.stack(list(_countdown(x, 3)))


def _next_twice(x: np.ndarray) -> np.ndarray:
    gen = _countdown(x, 5)
    first = next(gen)
    second = next(gen)
    return first - second


def _for_over_generator(arrays: list[np.ndarray]) -> np.ndarray:
    total = arrays[0] * 0
    for k, square in enumerate(_squares(arrays)):
        total = total + square * k
    return total


def _zip_with_genexpr(arrays: list[np.ndarray]) -> list[np.ndarray]:
    return [a * w for a, w in zip((b + 1 for b in arrays), [0.5, 1.0, 2.0], strict=True)]


def _next_with_default(x: np.ndarray) -> np.ndarray:
    gen = _countdown(x, 1)
    next(gen)
    return next(gen, x * 0)


def _any_over_shapes(arrays: list[np.ndarray]) -> np.ndarray:
    if any(a.shape[0] > 5 for a in arrays):
        return arrays[0]
    return arrays[1]


@pytest.mark.parametrize(
    ("fn", "make_args"),
    [
        (_sum_of_generator, _arrays),
        (_list_of_generator, lambda: (np.arange(3.0),)),
        (_next_twice, lambda: (np.arange(3.0),)),
        (_for_over_generator, _arrays),
        (_zip_with_genexpr, _arrays),
        (_next_with_default, lambda: (np.arange(3.0),)),
        (_any_over_shapes, _arrays),
    ],
)
def test_generators_are_captured_in_one_graph(
    fn: Callable[..., Any], make_args: Callable[[], tuple[Any, ...]], capsys: Any
) -> None:
    events = _run(fn, make_args, capsys)
    assert [event.break_reason for event in events] == [None]
    assert not events[0].eager


def test_generator_frames_interleave_with_the_consumer() -> None:
    # Lazy: the generator runs up to its next yield only when the consumer asks.
    def gen(x: np.ndarray) -> Iterator[np.ndarray]:
        yield x + 1
        yield np.sin(x)

    def f(x: np.ndarray) -> np.ndarray:
        g = gen(x)
        a = next(g)
        return a

    result = capture_function(f, (np.ones(2),), {})
    ops = [node.op.name for node in result.graph if node.op is not None]
    assert ops == ["add"]  # the second yield's work was never traced


def _breaks_with_live_generator(x: np.ndarray) -> np.ndarray:
    gen = _countdown(x, 3)
    print("made")
    return sum(gen, x * 0)


def _generator_consumed_across_break(arrays: list[np.ndarray]) -> np.ndarray:
    squares = (a * a for a in arrays)
    print("before the sum")
    return sum(squares, arrays[0] * 0)


@pytest.mark.parametrize("fn", [_breaks_with_live_generator, _generator_consumed_across_break])
def test_a_generator_not_started_is_made_again_at_a_break(
    fn: Callable[..., Any], capsys: Any
) -> None:
    make = (lambda: (np.arange(3.0),)) if fn is _breaks_with_live_generator else _arrays
    events = _run(fn, make, capsys)
    reasons = [event.break_reason for event in events if event.break_reason]
    assert reasons and reasons[0].endswith("print")


def _generator_with_data_branch(arrays: list[np.ndarray]) -> Any:
    return max(a.sum().item() for a in arrays)


def test_a_break_inside_the_generator_breaks_at_the_consumer(capsys: Any) -> None:
    events = _run(_generator_with_data_branch, _arrays, capsys)
    assert any("item" in (event.break_reason or "") for event in events)
