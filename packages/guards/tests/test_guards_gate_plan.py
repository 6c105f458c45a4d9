"""Gate plans (`gate_plan`): which guards a call gate takes, and, differentially, that a
gate built from a plan accepts exactly the calls the Python check accepts."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import numpile_runtime as rt
from numpile_guards import (
    VALIDITY,
    ArraySpec,
    AttrSource,
    ClosureSource,
    ExpressionSource,
    GateRefusedError,
    GlobalSource,
    Guard,
    GuardKind,
    LocalSource,
    ShapeGuard,
    compile_guards,
    gate_generation,
    gate_plan,
    resume_gates,
    suspend_gates,
)
from numpile_guards.symbolic import shape_guard_as_guard

X, Y, N = LocalSource("x"), LocalSource("y"), LocalSource("n")


def relation(text: str) -> Guard:
    return shape_guard_as_guard(ShapeGuard(None, text))


def array(source: Any, dtype: str, shape: tuple[Any, ...], strides: tuple[Any, ...]) -> Guard:
    spec = ArraySpec(np.ndarray, np.dtype(dtype), shape, strides)
    return Guard(GuardKind.ARRAY_MATCH, source, spec)


@pytest.mark.parametrize(
    "guard",
    [
        Guard(GuardKind.DICT_KEYS, X, ["a"]),
        Guard(GuardKind.EQUALS_MATCH, X, math.nan),
        Guard(GuardKind.EQUALS_MATCH, X, -0.0),
        Guard(GuardKind.EQUALS_MATCH, X, (1, 2)),
        Guard(GuardKind.TYPE_MATCH, ExpressionSource("L['x'] + 1"), int),
        Guard(GuardKind.TYPE_MATCH, LocalSource("not_a_parameter"), int),
        relation("max(L['x'].shape[0], 2) == 3"),
        relation("L['x'].shape[0] == 3"),  # no array guard on x checks it first
        relation("L['n'] < 2 ** 70"),
    ],
    ids=str,
)
def test_what_a_gate_cannot_check_refuses_the_entry(guard: Guard) -> None:
    with pytest.raises(GateRefusedError):
        gate_plan([guard], [X], ("x", "y", "n"))


def test_sources_shared_by_guards_and_inputs_are_read_once() -> None:
    np_module = GlobalSource("np")
    guards = [
        Guard(GuardKind.ID_MATCH, np_module, np),
        Guard(GuardKind.ID_MATCH, AttrSource(np_module, "sin"), np.sin),
        array(X, "float64", (None,), (8,)),
    ]
    plan = gate_plan(guards, [X, AttrSource(np_module, "sin")], ("x",))
    reads = [op for op in plan.program if op[0] in ("arg", "global", "attr")]
    assert [op[0] for op in reads] == ["arg", "global", "attr"]
    assert plan.inputs == (0, 2)


@pytest.fixture(scope="module")
def gates() -> Any:
    rt.find_toolchain()
    module = rt.gate_module()
    if module is None:
        pytest.skip("no call gate here (no C compiler, or NUMPILE_CALL_GATE=0)")
    return module


SCALE = 2.0


def holder(x: Any, y: Any, n: Any) -> Any:
    return (x, y, n, SCALE)


# Guards over (x, y, n), and calls: a gate must accept exactly those the Python check does.
GUARDS = [
    array(X, "float64", (None, 3), (None, 8)),
    array(Y, "int32", (None,), (4,)),
    Guard(GuardKind.TYPE_MATCH, N, int),
    relation("L['y'].shape[0] == L['x'].shape[0] + 1"),
    relation("L['x'].shape[0] % 2 == 0"),
    relation("-9223372036854775808 <= L['n'] <= 9223372036854775807"),
    relation("(L['n'] - 7) // 3 >= -(L['x'].shape[0] * 2)"),
    relation("L['x'].strides[0] == 8*L['x'].shape[1]"),  # a symbolic stride: rows
    Guard(GuardKind.EQUALS_MATCH, GlobalSource("SCALE"), 2.0),
    Guard(GuardKind.ID_MATCH, GlobalSource("np"), np),
]


def _calls() -> list[tuple[Any, Any, Any]]:
    x = np.zeros((4, 3))
    y = np.zeros(5, dtype=np.int32)
    return [
        (x, y, 0),
        (x, y, -5),
        (np.zeros((2, 3)), np.zeros(3, dtype=np.int32), 10),
        (x, y, -100),  # (n - 7) // 3 = -36 < -8
        (x, y, -17),  # (n - 7) // 3 = -8
        (x, y, -18),  # -25 // 3 is -9 in Python (-8 truncated, as C divides)
        (x, y, 2**63),  # past int64
        (x, y, True),  # a bool is no int
        (x, y, 3.0),
        (np.zeros((3, 3)), np.zeros(4, dtype=np.int32), 0),  # odd rows
        (x, np.zeros(6, dtype=np.int32), 0),  # y's length
        (np.zeros((4, 4)), y, 0),  # x's columns
        (np.zeros((4, 6))[:, ::2], y, 0),  # x's strides
        (np.zeros((4, 5))[:, :3], y, 0),  # x's row stride (40, not 8 * 3)
        (np.asfortranarray(x), y, 0),
        (x.astype(np.float32), y, 0),
        (x, y.astype(np.int64), 0),
        (x, np.zeros(10, dtype=np.int32)[::2], 0),
        (x.view(np.recarray), y, 0),
        (x, list(y), 0),
        (np.zeros((0, 3)), np.zeros(1, dtype=np.int32), 0),
    ]


@pytest.mark.parametrize("call", range(len(_calls())))
def test_a_gate_accepts_exactly_what_the_python_check_accepts(gates: Any, call: int) -> None:
    x, y, n = _calls()[call]
    plan = gate_plan(GUARDS, [X, Y, N], ("x", "y", "n"))
    gate = gates.Gate(holder, lambda *args: args, plan.program, plan.inputs, VALIDITY, 3)
    generation = gate_generation(_current_epoch())
    assert generation is not None
    gate.arm(generation)
    check = compile_guards(GUARDS)
    expected = check({"x": x, "y": y, "n": n}, holder.__globals__, holder)
    answer = gate.enter(x, y, n)
    assert (answer is not NotImplemented) == expected
    if expected:
        assert answer[0] is x and answer[1] is y and answer[2] is n


def _current_epoch() -> object:
    from numpile_guards import EPOCH

    return EPOCH.current


def test_a_gate_declines_when_a_global_it_checks_is_rebound(gates: Any) -> None:
    global SCALE
    plan = gate_plan(GUARDS, [X, Y, N], ("x", "y", "n"))
    gate = gates.Gate(holder, lambda *args: args, plan.program, plan.inputs, VALIDITY, 3)
    gate.arm(VALIDITY[0])
    x, y, n = _calls()[0]
    assert gate.enter(x, y, n) is not NotImplemented
    SCALE = 3.0
    try:
        assert gate.enter(x, y, n) is NotImplemented
    finally:
        SCALE = 2.0


def test_a_gate_declines_in_a_new_generation_and_while_suspended(gates: Any) -> None:
    from numpile_guards import advance_epoch

    plan = gate_plan([Guard(GuardKind.TYPE_MATCH, N, int)], [N], ("n",))
    gate = gates.Gate(lambda n: n, lambda n: n + 1, plan.program, plan.inputs, VALIDITY, 1)
    assert gate.enter(1) is NotImplemented  # never armed
    gate.arm(VALIDITY[0])
    assert gate.enter(1) == 2
    assert gate.enter(1, 2) is NotImplemented  # another number of arguments
    suspend_gates()
    try:
        assert gate.enter(1) is NotImplemented
    finally:
        resume_gates()
    assert gate.enter(1) == 2
    advance_epoch()
    assert gate.enter(1) is NotImplemented
    assert gate.hits == 2


def test_closure_cells_are_read_by_the_gate(gates: Any) -> None:
    k = 1

    def f(x: Any) -> Any:
        return x + k

    guard = Guard(GuardKind.EQUALS_MATCH, ClosureSource("k", 0), 1)
    plan = gate_plan([guard], [X], ("x",))
    gate = gates.Gate(f, lambda x: x, plan.program, plan.inputs, VALIDITY, 1)
    gate.arm(VALIDITY[0])
    assert gate.enter(5) == 5
    k = 2
    assert gate.enter(5) is NotImplemented
    assert f(0) == k


class Device:
    """A stand-in `cupy.cuda.Device`: what the guards read of it."""

    def __init__(self, ordinal: int) -> None:
        self.id = ordinal


class DeviceArray:
    """A stand-in CuPy array: the attributes the guards read, NumPy-free (no array struct)."""

    def __init__(self, host: np.ndarray[Any, Any], device: int = 0) -> None:
        self.shape = host.shape
        self.strides = host.strides
        self.dtype = host.dtype
        self.device = Device(device)


def device_array(
    source: Any, dtype: str, shape: tuple[Any, ...], strides: tuple[Any, ...]
) -> Guard:
    spec = ArraySpec(DeviceArray, np.dtype(dtype), shape, strides, device_id=0)
    return Guard(GuardKind.ARRAY_MATCH, source, spec)


_FETCHES = ("arg", "global", "cell", "func", "attr", "item", "probe")


def _fetch_of(program: tuple[tuple[Any, ...], ...], register: int) -> tuple[Any, ...]:
    (op,) = [op for op in program if op[0] in _FETCHES and op[1] == register]
    return op


def test_a_device_array_is_checked_through_attributes_never_as_a_numpy_array() -> None:
    guards = [
        device_array(X, "float32", (None, 3), (None, 4)),
        array(Y, "int32", (None,), (4,)),
        relation("L['y'].shape[0] == L['x'].shape[0]"),
        relation("L['x'].strides[0] == 4*L['x'].shape[1]"),
    ]
    program = gate_plan(guards, [X, Y], ("x", "y")).program
    (x,) = [op[1] for op in program if op[0] == "arg" and op[2] == 0]
    (y,) = [op[1] for op in program if op[0] == "arg" and op[2] == 1]
    assert ("type", x, DeviceArray) in program
    assert [op[1] for op in program if op[0] == "array"] == [y]
    steps = [step for op in program if op[0] == "rel" for step in (*op[2], *op[3])]
    assert ("dim", y, 0) in steps
    assert not [step for step in steps if step[0] in ("dim", "stride") and step[1] != y]
    # x's sizes: exact ints fetched as items of its `shape` and `strides`
    reads = [_fetch_of(program, step[1]) for step in steps if step[0] == "int"]
    items = [(op[0], _fetch_of(program, op[2])[3], op[3]) for op in reads]
    assert sorted(items) == [("item", "shape", 0), ("item", "shape", 1), ("item", "strides", 0)]


Z = LocalSource("z")


def device_holder(x: Any, y: Any, z: Any, n: Any) -> Any:
    return (x, y, z, n)


# Device arrays (x dynamic rows, y static) beside a NumPy one (z): the same decisions.
DEVICE_GUARDS = [
    device_array(X, "float64", (None, 3), (None, 8)),
    device_array(Y, "int32", (5,), (4,)),
    array(Z, "float32", (2,), (4,)),
    Guard(GuardKind.TYPE_MATCH, N, int),
    relation("L['x'].shape[0] % 2 == 0"),
    relation("L['x'].strides[0] == 8*L['x'].shape[1]"),
    relation("L['x'].shape[0] <= L['n'] + 4"),
]


def _device_calls() -> list[tuple[Any, Any, Any, Any]]:
    x = DeviceArray(np.zeros((4, 3)))
    y = DeviceArray(np.zeros(5, dtype=np.int32))
    z = np.zeros(2, dtype=np.float32)
    swapped = DeviceArray(np.zeros((4, 3), dtype=">f8"))
    no_device = DeviceArray(np.zeros((4, 3)))
    del no_device.device
    return [
        (x, y, z, 0),
        (DeviceArray(np.zeros((2, 3))), y, z, 0),
        (DeviceArray(np.zeros((0, 3))), y, z, 0),  # empty: strides (0, 0) here
        (DeviceArray(np.zeros((4, 3)), device=1), y, z, 0),  # another GPU
        (x, DeviceArray(np.zeros(5, dtype=np.int32), device=1), z, 0),
        (DeviceArray(np.zeros((4, 3), dtype=np.float32)), y, z, 0),  # another dtype
        (swapped, y, z, 0),  # the same kind, another byte order
        (x, DeviceArray(np.zeros(5, dtype=np.int64)), z, 0),
        (DeviceArray(np.zeros((4, 6))[:, ::2]), y, z, 0),  # a non-contiguous view
        (DeviceArray(np.zeros((4, 5))[:, :3]), y, z, 0),  # rows 40 bytes apart, not 24
        (DeviceArray(np.asfortranarray(np.zeros((4, 3)))), y, z, 0),
        (DeviceArray(np.zeros(10, dtype=np.int32)[::2]), y, z, 0),
        (x, DeviceArray(np.zeros(10, dtype=np.int32)[::2]), z, 0),
        (DeviceArray(np.zeros((3, 3))), y, z, 0),  # odd rows
        (DeviceArray(np.zeros((8, 3))), y, z, 0),  # 8 rows > n + 4
        (DeviceArray(np.zeros((8, 3))), y, z, 4),
        (x, DeviceArray(np.zeros(6, dtype=np.int32)), z, 0),
        (DeviceArray(np.zeros((4, 3, 1))), y, z, 0),  # another rank
        (np.zeros((4, 3)), y, z, 0),  # a NumPy array where a device array was guarded
        (x, np.zeros(5, dtype=np.int32), z, 0),
        (x, y, DeviceArray(np.zeros(2, dtype=np.float32)), 0),  # and the reverse
        (no_device, y, z, 0),  # an exception in a check: a miss
        (x, y, z, 1.0),
        (x, y, z, True),
    ]


@pytest.mark.parametrize("call", range(len(_device_calls())))
def test_a_gate_over_device_arrays_decides_as_the_python_check(gates: Any, call: int) -> None:
    x, y, z, n = _device_calls()[call]
    plan = gate_plan(DEVICE_GUARDS, [X, Y, Z, N], ("x", "y", "z", "n"))
    gate = gates.Gate(device_holder, lambda *args: args, plan.program, plan.inputs, VALIDITY, 4)
    gate.arm(VALIDITY[0])
    check = compile_guards(DEVICE_GUARDS)
    expected = check({"x": x, "y": y, "z": z, "n": n}, device_holder.__globals__, None)
    answer = gate.enter(x, y, z, n)
    assert (answer is not NotImplemented) == expected
    if expected:
        assert answer == (x, y, z, n)
