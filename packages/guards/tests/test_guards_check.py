"""compile_guards: the generated check agrees with the guards evaluated one by one."""

from __future__ import annotations

import itertools
from typing import Any

import attrs
import numpy as np
import pytest

from numpile_guards import (
    ArraySpec,
    AttrSource,
    ClosureSource,
    FunctionSource,
    GlobalSource,
    Guard,
    GuardKind,
    ItemSource,
    LocalSource,
    compile_fetch,
    compile_guards,
    constants_match,
    guard_failure,
    order_guards,
)

X = LocalSource("x")


def spec_of(array: np.ndarray[Any, Any]) -> ArraySpec:
    return ArraySpec(type(array), array.dtype, tuple(array.shape), tuple(array.strides))


def array_guard(array: np.ndarray[Any, Any], source: Any = X) -> Guard:
    return Guard(GuardKind.ARRAY_MATCH, source, spec_of(array))


def test_array_guard_accepts_same_metadata_any_values() -> None:
    check = compile_guards([array_guard(np.zeros((8, 4), np.float32))])
    assert check({"x": np.ones((8, 4), np.float32)}, {}, None)
    assert check.failure({"x": np.ones((8, 4), np.float32)}, {}, None) is None


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (np.zeros((9, 4), np.float32), "L['x'].shape[0]: expected 8, got 9"),
        (np.zeros((8, 4), np.float64), "L['x'].dtype: expected float32, got float64"),
        (np.zeros((8, 4, 1), np.float32), "L['x'].ndim: expected 2, got 3"),
        ([[0.0] * 4] * 8, "L['x']: expected numpy.ndarray, got list"),
        (np.ma.zeros((8, 4), np.float32), "L['x']: expected numpy.ndarray, got numpy.MaskedArray"),
    ],
)
def test_array_guard_failure_texts(value: Any, text: str) -> None:
    check = compile_guards([array_guard(np.zeros((8, 4), np.float32))])
    assert not check({"x": value}, {}, None)
    assert check.failure({"x": value}, {}, None) == text


def test_array_guard_checks_strides_and_contiguity() -> None:
    base = np.zeros((8, 4))
    check = compile_guards([array_guard(base)])
    fortran = np.asfortranarray(base)
    strided = np.zeros((8, 8))[:, ::2]
    reversed_rows = np.zeros((8, 4))[::-1]
    for value in (fortran, strided, reversed_rows):
        assert value.shape == base.shape
        assert not check({"x": value}, {}, None)
        text = check.failure({"x": value}, {}, None)
        assert text is not None
        assert text.startswith("L['x'].strides: expected (32, 8), got ")
    assert check({"x": np.ascontiguousarray(reversed_rows)}, {}, None)


def test_dynamic_dims_accept_any_size() -> None:
    spec = ArraySpec(np.ndarray, np.dtype("int64"), (None, 3), (None, 8))
    check = compile_guards([Guard(GuardKind.ARRAY_MATCH, X, spec)])
    for rows in (2, 5, 7):
        assert check({"x": np.zeros((rows, 3), np.int64)}, {}, None)
    assert not check({"x": np.zeros((5, 4), np.int64)}, {}, None)
    assert check.failure({"x": np.zeros((5, 4), np.int64)}, {}, None) == (
        "L['x'].shape[1]: expected 3, got 4"
    )


class _Device:
    def __init__(self, id: int) -> None:
        self.id = id


class DeviceArray(np.ndarray):  # an array "on GPU `device.id`", as CuPy's arrays say
    device = _Device(0)


def on_device(shape: tuple[int, ...], device: int) -> DeviceArray:
    array = np.zeros(shape).view(DeviceArray)
    array.device = _Device(device)
    return array


def test_device_arrays_are_guarded_on_their_gpu() -> None:
    spec = attrs.evolve(spec_of(on_device((3,), 0)), device_id=0)
    guard = Guard(GuardKind.ARRAY_MATCH, X, spec)
    check = compile_guards([guard])
    assert check({"x": on_device((3,), 0)}, {}, None)
    assert not check({"x": on_device((3,), 1)}, {}, None)
    assert check.failure({"x": on_device((3,), 1)}, {}, None) == (
        "L['x'].device.id: expected 0, got 1"
    )
    assert "device=0" in str(guard)
    assert "device.id == 0" in check.source


def test_zero_dim_and_empty_arrays() -> None:
    check = compile_guards([array_guard(np.ones(()))])
    assert check({"x": np.zeros(())}, {}, None)
    assert not check({"x": np.zeros(1)}, {}, None)
    empty = compile_guards([array_guard(np.zeros((0, 3)))])
    assert empty({"x": np.ones((0, 3))}, {}, None)
    assert not empty({"x": np.ones((1, 3))}, {}, None)


def test_type_id_length_and_keys() -> None:
    marker = object()
    guards = [
        Guard(GuardKind.TYPE_MATCH, LocalSource("t"), tuple),
        Guard(GuardKind.LENGTH_MATCH, LocalSource("t"), 2),
        Guard(GuardKind.ID_MATCH, GlobalSource("np"), np),
        Guard(GuardKind.ID_MATCH, GlobalSource("marker"), marker),
        Guard(GuardKind.DICT_KEYS, LocalSource("d"), ["a", "b"]),
    ]
    check = compile_guards(guards)
    L = {"t": (1, 2), "d": {"a": 1, "b": 2}}
    G = {"np": np, "marker": marker}
    assert check(L, G, None)
    cases = [
        ({**L, "t": [1, 2]}, G, "L['t']: expected type tuple, got list"),
        ({**L, "t": (1, 2, 3)}, G, "len(L['t']): expected 2, got 3"),
        ({**L, "d": {"b": 2, "a": 1}}, G, "L['d'] keys: expected ['a', 'b'], got ['b', 'a']"),
        (L, {**G, "marker": object()}, "G['marker']: expected the object <object object"),
    ]
    for locals_, globals_, text in cases:
        assert not check(locals_, globals_, None)
        failure = check.failure(locals_, globals_, None)
        assert failure is not None
        assert failure.startswith(text)


def test_equals_guard_texts_and_exact_types() -> None:
    check = compile_guards([Guard(GuardKind.EQUALS_MATCH, GlobalSource("scale"), 2.0)])
    assert check({}, {"scale": 2.0}, None)
    assert check.failure({}, {"scale": 3.0}, None) == "G['scale']: expected 2.0, got 3.0"
    assert not check({}, {"scale": 2}, None)
    assert check.failure({}, {"scale": 2}, None) == "G['scale']: expected 2.0 (float), got 2 (int)"
    assert not check({}, {"scale": np.float64(2.0)}, None)


@pytest.mark.parametrize(
    ("expected", "same", "different"),
    [
        (float("nan"), float("nan"), 1.0),
        (0.0, 0.0, -0.0),
        (-0.0, -0.0, 0.0),
        (float("inf"), float("inf"), float("-inf")),
        (True, True, 1),
        (3, 3, True),
        ((1, 2.0), (1, 2.0), (1, 2)),
        (complex(0, float("nan")), complex(0, float("nan")), complex(0, 0)),
        (None, None, 0),
        ("relu", "relu", "gelu"),
        (np.float32(1.5), np.float32(1.5), np.float64(1.5)),
    ],
)
def test_equals_guard_constants(expected: Any, same: Any, different: Any) -> None:
    check = compile_guards([Guard(GuardKind.EQUALS_MATCH, LocalSource("c"), expected)])
    assert check({"c": same}, {}, None)
    assert check.failure({"c": same}, {}, None) is None
    assert not check({"c": different}, {}, None)
    assert check.failure({"c": different}, {}, None) is not None
    assert constants_match(same, expected)
    assert not constants_match(different, expected)


def test_missing_keys_attributes_and_cells_fail_without_raising() -> None:
    def make(value: Any) -> Any:
        def inner() -> Any:
            return value

        return inner

    guards = [
        array_guard(np.zeros(3)),
        Guard(GuardKind.EQUALS_MATCH, AttrSource(LocalSource("cfg"), "alpha"), 1.5),
        Guard(GuardKind.EQUALS_MATCH, ItemSource(LocalSource("d"), "k"), 4),
        Guard(GuardKind.EQUALS_MATCH, ClosureSource("value", 0), 7),
    ]
    check = compile_guards(guards)

    class Cfg:
        alpha = 1.5

    L = {"x": np.zeros(3), "cfg": Cfg(), "d": {"k": 4}}
    assert check(L, {}, make(7))
    assert check.failure(L, {}, make(7)) is None
    broken = [
        ({k: v for k, v in L.items() if k != "x"}, make(7), "L['x']: not found (KeyError"),
        ({**L, "cfg": object()}, make(7), "L['cfg'].alpha: not found (AttributeError"),
        ({**L, "d": {}}, make(7), "L['d']['k']: not found (KeyError"),
        (L, lambda: None, "F.__closure__[0].cell_contents: not found (TypeError"),
    ]
    for locals_, fn, text in broken:
        assert check(locals_, {}, fn) is False
        failure = check.failure(locals_, {}, fn)
        assert failure is not None
        assert failure.startswith(text)


def test_function_source_guards_defaults_of_f() -> None:
    def f(x: Any, k: int = 2) -> Any:
        return x

    defaults = ItemSource(AttrSource(FunctionSource(), "__defaults__"), 0)
    assert defaults.name == "F.__defaults__[0]"
    check = compile_guards([Guard(GuardKind.EQUALS_MATCH, defaults, 2)])
    assert check({}, {}, f)
    f.__defaults__ = (3,)
    assert not check({}, {}, f)
    assert check.failure({}, {}, f) == "F.__defaults__[0]: expected 2, got 3"


def test_order_puts_types_and_arrays_before_values() -> None:
    guards = [
        Guard(GuardKind.EQUALS_MATCH, LocalSource("n"), 3),
        Guard(GuardKind.ID_MATCH, GlobalSource("np"), np),
        array_guard(np.zeros(2)),
        Guard(GuardKind.TYPE_MATCH, LocalSource("n"), int),
    ]
    kinds = [guard.kind for guard in order_guards(guards)]
    # The argument's value runs before the identity of a global (which almost never changes).
    assert kinds == [
        GuardKind.ARRAY_MATCH,
        GuardKind.TYPE_MATCH,
        GuardKind.EQUALS_MATCH,
        GuardKind.ID_MATCH,
    ]
    source = compile_guards(guards).source
    assert source.index("type(") < source.index(".dtype") < source.index("== 3")
    assert source.index("== 3") < source.index("G['np'] is")


def test_shared_fetches_are_bound_once() -> None:
    inner = AttrSource(LocalSource("model"), "weight")
    guards = [
        array_guard(np.zeros(3), inner),
        Guard(GuardKind.EQUALS_MATCH, AttrSource(LocalSource("model"), "scale"), 2.0),
    ]
    source = compile_guards(guards).source
    assert source.count("L['model']") == 1
    assert source.count(".weight") == 1


def test_empty_guard_list_always_passes() -> None:
    check = compile_guards([])
    assert check({}, {}, None)
    assert check.failure({}, {}, None) is None


def _random_guards_and_values(rng: np.random.Generator) -> tuple[list[Guard], list[dict[str, Any]]]:
    arrays = [
        np.zeros((2, 3)),
        np.zeros((3, 2)),
        np.zeros((2, 3), np.float32),
        np.zeros((4, 6))[::2, ::2],
    ]
    scalars = [1, 2, 1.0, True, None, "a", (1, 2)]
    guards: list[Guard] = []
    for name in ("a", "b"):
        guards.append(array_guard(arrays[rng.integers(len(arrays))], LocalSource(name)))
    guards.append(
        Guard(GuardKind.EQUALS_MATCH, LocalSource("s"), scalars[rng.integers(len(scalars))])
    )
    guards.append(
        Guard(GuardKind.TYPE_MATCH, LocalSource("s"), type(scalars[rng.integers(len(scalars))]))
    )
    candidates = []
    for a, b, s in itertools.product(arrays, arrays[:2], scalars):
        candidates.append({"a": a, "b": b, "s": s})
    candidates.append({"a": arrays[0]})
    return guards, candidates


def test_generated_check_matches_guards_one_by_one() -> None:
    rng = np.random.default_rng(0)
    for _ in range(20):
        guards, candidates = _random_guards_and_values(rng)
        check = compile_guards(guards)
        for L in candidates:
            one_by_one = all(guard_failure(guard, L, {}, None) is None for guard in guards)
            assert check(L, {}, None) is one_by_one
            assert (check.failure(L, {}, None) is None) is one_by_one


def test_compile_fetch_returns_sources_in_order() -> None:
    fetch = compile_fetch(
        [X, AttrSource(X, "shape"), ItemSource(LocalSource("t"), 1), GlobalSource("g")]
    )
    x = np.arange(3)
    values = fetch({"x": x, "t": (5, 6)}, {"g": "G"}, None)
    assert values[0] is x
    assert values[1:] == ((3,), 6, "G")
    assert compile_fetch([X])({"x": 1}, {}, None) == (1,)
    assert compile_fetch([])({}, {}, None) == ()
