"""User classes inside a compiled function: constructors, attributes, methods, descriptors."""

from __future__ import annotations

import copy
import dataclasses
import warnings
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np
import pytest

from numpile_capture import capture_function, compile_function
from numpile_capture.dispatch import CaptureEvent, CaptureFallbackWarning, recording_captures

pytestmark = pytest.mark.usefixtures("fresh_dispatch")


class Accumulator:
    scale = 2.0

    def __init__(self, x: np.ndarray) -> None:
        self.total = x * 0
        self.count = 0

    def add(self, value: np.ndarray) -> Accumulator:
        self.total = self.total + value * self.scale
        self.count += 1
        return self

    @property
    def mean(self) -> np.ndarray:
        return self.total / self.count

    @mean.setter
    def mean(self, value: np.ndarray) -> None:
        self.total = value * self.count

    @staticmethod
    def twice(value: np.ndarray) -> np.ndarray:
        return value * 2

    @classmethod
    def starting_at(cls, x: np.ndarray) -> Accumulator:
        return cls(x)


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self, a: np.ndarray) -> None:
        self.a = a


@dataclasses.dataclass
class Pair:
    left: np.ndarray
    weight: float = 1.0

    def combined(self) -> np.ndarray:
        return self.left * self.weight


@dataclasses.dataclass(frozen=True)
class Frozen:
    value: np.ndarray
    power: int = 2


@attrs.define
class Scaled:
    data: np.ndarray
    factor: float = 0.5


class Counter:
    """A context manager written in Python: inlined."""

    def __init__(self) -> None:
        self.depth = 0

    def __enter__(self) -> Counter:
        self.depth += 1
        return self

    def __exit__(self, *exc: Any) -> bool:
        self.depth -= 1
        return False


def _values(value: Any) -> list[Any]:
    if isinstance(value, tuple | list):
        return [item for part in value for item in _values(part)]
    if hasattr(value, "__dict__") or hasattr(value, "__slots__"):
        names = getattr(value, "__slots__", None) or sorted(vars(value))
        return [type(value).__name__, *[_values(getattr(value, n, None)) for n in names]]
    return [value]


def _same(got: Any, expected: Any) -> None:
    for a, b in zip(_values(got), _values(expected), strict=True):
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)
        elif isinstance(a, list):
            _same(a, b)
        else:
            assert a == b


def _run(fn: Callable[..., Any], capsys: Any, *args: Any) -> list[CaptureEvent]:
    compiled = compile_function(fn, backend="eager")
    events: list[CaptureEvent] = []
    for _ in range(2):
        expected = fn(*copy.deepcopy(args))
        printed = capsys.readouterr().out
        with recording_captures() as seen, warnings.catch_warnings():
            warnings.simplefilter("error", CaptureFallbackWarning)
            got = compiled(*copy.deepcopy(args))
        events += seen
        assert capsys.readouterr().out == printed
        _same(got, expected)
    return events


X = np.arange(3.0)


def _methods_and_descriptors(x: np.ndarray) -> Any:
    acc = Accumulator.starting_at(x)
    acc.add(x).add(Accumulator.twice(x))
    mean = acc.mean
    acc.mean = mean + 1
    return acc.total, acc.count, mean, acc.scale


def _slots(x: np.ndarray) -> Any:
    s = Slotted(x)
    s.b = x + 1
    return s.a + s.b


def _dataclasses_and_attrs(x: np.ndarray) -> Any:
    pair = Pair(x)
    frozen = Frozen(x * 2)
    scaled = Scaled(x)
    scaled.factor = 3.0
    return pair.combined() + frozen.value**frozen.power + scaled.data * scaled.factor


def _user_context_manager(x: np.ndarray) -> Any:
    counter = Counter()
    with counter as c:
        y = x * c.depth
    return y, counter.depth


def _isinstance_of_user_object(x: np.ndarray) -> Any:
    pair = Pair(x, 2.0)
    if isinstance(pair, Pair) and type(pair) is Pair:
        return pair.combined()
    return x


@pytest.mark.parametrize(
    "fn",
    [
        _methods_and_descriptors,
        _slots,
        _dataclasses_and_attrs,
        _user_context_manager,
        _isinstance_of_user_object,
    ],
)
def test_user_classes_are_captured_without_a_break(fn: Callable[..., Any], capsys: Any) -> None:
    events = _run(fn, capsys, X)
    assert [event.break_reason for event in events] == [None]
    assert events[0].graph is not None and not events[0].eager


def _object_returned(x: np.ndarray) -> Any:
    acc = Accumulator(x)
    acc.add(x)
    return acc


def _object_across_a_break(x: np.ndarray) -> Any:
    acc = Accumulator(x)
    acc.add(x)
    print("between")
    acc.add(x * 3)
    return acc.total, acc.count


def _slotted_across_a_break(x: np.ndarray) -> Any:
    s = Slotted(x)
    s.b = x * 2
    print("slots")
    return s.a - s.b


def _frozen_across_a_break(x: np.ndarray) -> Any:
    frozen = Frozen(x)
    print("frozen")
    return frozen.value * frozen.power


@pytest.mark.parametrize(
    ("fn", "breaks"),
    [
        (_object_returned, 0),
        (_object_across_a_break, 1),
        (_slotted_across_a_break, 1),
        (_frozen_across_a_break, 1),
    ],
)
def test_objects_made_inside_are_rebuilt_in_python(
    fn: Callable[..., Any], breaks: int, capsys: Any
) -> None:
    events = _run(fn, capsys, X)
    first_call = [event.break_reason for event in events[: len(events) // 2]]
    assert sum(reason is not None for reason in first_call) == breaks
    assert not any(event.eager and not event.internal for event in events)


def test_attribute_writes_on_an_input_object_replay_in_order() -> None:
    def f(acc: Accumulator, x: np.ndarray) -> np.ndarray:
        acc.add(x)
        acc.count = acc.count + 10
        return acc.total

    eager_acc, compiled_acc = Accumulator(X), Accumulator(X)
    expected = f(eager_acc, X)
    got = compile_function(f, backend="eager")(compiled_acc, X)
    np.testing.assert_array_equal(got, expected)
    assert compiled_acc.count == eager_acc.count == 11
    np.testing.assert_array_equal(compiled_acc.total, eager_acc.total)


def test_property_of_an_input_object_is_inlined() -> None:
    def f(acc: Accumulator) -> np.ndarray:
        return acc.mean + 1

    acc = Accumulator(X)
    acc.add(X)
    result = capture_function(f, (acc,), {})
    ops = [node.op.name for node in result.graph if node.op is not None]
    assert ops == ["divide", "add"]


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ("s = Slotted(x)\n    s.c = 1", AttributeError),
        ("f = Frozen(x)\n    f.value = x", dataclasses.FrozenInstanceError),
        ("a = Accumulator(x)\n    a.missing", AttributeError),
        ("p = Pair()", TypeError),
    ],
)
def test_invalid_uses_raise_as_python_does(body: str, error: type[Exception]) -> None:
    namespace: dict[str, Any] = {
        "Slotted": Slotted,
        "Frozen": Frozen,
        "Accumulator": Accumulator,
        "Pair": Pair,
    }
    exec(f"def f(x):\n    {body}\n    return x\n", namespace)
    fn = namespace["f"]
    with pytest.raises(error):
        fn(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(error):
            compile_function(fn, backend="eager")(X)
