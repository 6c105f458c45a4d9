"""Constant-trip loops of bit operations folded to one step (`codegen/c/loop_xor_maps.py`).

Each fold is checked against brute force (every uint8 register, the body run step by step
in NumPy), and the compiled loops (CRCs by table, left- and right-shifting, two registers,
signed masks, `|` of disjoint bits, trip counts 0, 1, 3, 8 and 13) against eager on values
and dtypes (random bytes, all-ones items); bodies the fold must refuse (an add, an `&` of
two values, a negative unsigned, a shift by the width) or should not take (one xorshift
step, one CRC step: the fold costs more) keep their loop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numpile_capture import Graph, capture_function
from numpile_inductor import compile_graph
from numpile_inductor.codegen.c.loop_xor_maps import XorMap, fold_xor_loop

_U8 = np.dtype("uint8")


def _apply(xmap: XorMap, registers: list[int]) -> int:
    # The map's value for the given input registers (unsigned bits).
    value = xmap.constant
    for index, column in enumerate(xmap.columns):
        k, b = divmod(index, xmap.width)
        if registers[k] >> b & 1:
            value ^= column
    return value


def _inner_body(fn: Callable[..., Any], *args: Any) -> tuple[Graph, int, int]:
    # The body, carried count and trip count of the first loop nested in `fn`'s loop.
    graph = capture_function(fn, args, {}).graph
    outer = next(n for n in graph.nodes if n.op is not None and n.op.name == "for_loop")
    body: Graph = dict(outer.params)["body"]
    inner = next(n for n in body.nodes if n.op is not None and n.op.name == "for_loop")
    start, stop, step = (int(value) for value in inner.inputs[:3])
    return dict(inner.params)["body"], dict(inner.params)["carried"], len(range(start, stop, step))


def _reflected(trips: int, poly: int) -> Callable[[Any], Any]:
    def fn(data: Any) -> Any:
        c = np.uint8(0xFF)
        one = np.uint8(1)
        p = np.uint8(poly)
        n = trips
        for i in range(data.shape[0]):
            c = c ^ data[i]
            for _ in range(n):
                c = (c >> one) ^ ((c & one) * p)
        return c

    return fn


def _step(c: Any, poly: int, trips: int) -> int:
    for _ in range(trips):
        c = (c >> np.uint8(1)) ^ ((c & np.uint8(1)) * np.uint8(poly))
    return int(c)


@pytest.mark.parametrize("trips", [0, 1, 3, 8, 13])
@pytest.mark.parametrize("poly", [0x8C, 0xB9])
def test_fold_matches_the_steps_for_every_uint8(trips: int, poly: int) -> None:
    body, carried, found = _inner_body(_reflected(trips, poly), np.zeros(64, np.uint8))
    assert (carried, found) == (1, trips)
    fold = fold_xor_loop(body, carried, trips)
    assert fold is not None
    assert fold.dtype == _U8
    for value in range(256):
        assert _apply(fold.maps[0], [value]) == _step(np.uint8(value), poly, trips)


def test_fold_writes_moved_bits_as_a_shift_and_the_rest_as_a_table() -> None:
    body, carried, trips = _inner_body(_reflected(8, 0x8C), np.zeros(64, np.uint8))
    fold = fold_xor_loop(body, carried, trips)
    assert fold is not None
    assert [term.kind for term in fold.maps[0].terms()] == ["table"]  # 8 bits: all moved
    body, carried, trips = _inner_body(_reflected(3, 0x8C), np.zeros(64, np.uint8))
    fold = fold_xor_loop(body, carried, trips)
    assert fold is not None
    kinds = [term.kind for term in fold.maps[0].terms()]
    assert kinds == ["shift", "table"]  # bits 3..7 move down by 3; bits 0..2 index a table
    assert fold.folded_ops() < fold.serial_ops


def _adds(data: Any) -> Any:
    c = np.uint8(1)
    for i in range(data.shape[0]):
        c = c ^ data[i]
        for _ in range(4):
            c = c + np.uint8(1)  # not a bit operation
    return c


def _ands_registers(data: Any) -> Any:
    c = np.uint8(1)
    for i in range(data.shape[0]):
        c = c ^ data[i]
        for _ in range(4):
            c = (c >> np.uint8(1)) ^ (c & (c >> np.uint8(2)))  # a product of bits
    return c


def _negates_unsigned(data: Any) -> Any:
    c = np.uint8(1)
    for i in range(data.shape[0]):
        c = c ^ data[i]
        for _ in range(4):
            c = (c >> np.uint8(1)) ^ (-(c & np.uint8(1)) & np.uint8(0x8C))  # NumPy warns
    return c


def _shifts_by_the_width(data: Any) -> Any:
    c = np.uint8(1)
    for i in range(data.shape[0]):
        c = c ^ data[i]
        for _ in range(4):
            c = (c << np.uint8(8)) ^ np.uint8(3)
    return c


@pytest.mark.parametrize("fn", [_adds, _ands_registers, _negates_unsigned, _shifts_by_the_width])
def test_fold_refuses_other_operations(fn: Callable[..., Any]) -> None:
    body, carried, trips = _inner_body(fn, np.zeros(64, np.uint8))
    assert fold_xor_loop(body, carried, trips) is None


_DTYPES = ["uint8", "int8", "uint16", "int32", "uint32", "int64", "uint64"]
_OPS = ["xor_other", "xor", "and", "or", "invert", "shl", "shr", "flag_times", "neg_flag"]


def _numpy_step(op: str, x: Any, other: Any, arg: int) -> Any:
    # One operation on NumPy scalars of one dtype (`arg` a constant or a shift).
    dtype = x.dtype.type
    if op == "xor_other":
        return x ^ other
    if op in ("xor", "and", "or"):
        constant = dtype(np.array(arg).astype(x.dtype))
        return x ^ constant if op == "xor" else x & constant if op == "and" else x | constant
    if op == "invert":
        return ~x
    if op in ("shl", "shr"):
        amount = dtype(arg % (x.dtype.itemsize * 8))
        return x << amount if op == "shl" else x >> amount
    flag = x & dtype(1)
    if op == "neg_flag":
        return -flag
    return flag * dtype(np.array(arg).astype(x.dtype))


def _map_step(op: str, x: XorMap, other: XorMap, arg: int, signed: bool) -> XorMap:
    # The same operation on maps.
    if op == "xor_other":
        return x.xor(other)
    if op == "xor":
        return x.xor(XorMap.const(arg, x.width, len(x.columns) // x.width))
    if op == "and":
        return x.mask(arg)
    if op == "or":
        return x.set_bits(arg)
    if op == "invert":
        return x.invert()
    if op in ("shl", "shr"):
        amount = arg % x.width
        return x.shift_left(amount) if op == "shl" else x.shift_right(amount, signed=signed)
    flag = x.mask(1)
    return flag.times_bit(-1 if op == "neg_flag" else arg)


@settings(max_examples=200, deadline=None)
@given(
    dtype=st.sampled_from(_DTYPES),
    steps=st.lists(
        st.tuples(st.booleans(), st.sampled_from(_OPS), st.integers(0, 2**64 - 1)), max_size=12
    ),
    registers=st.tuples(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1)),
)
def test_map_operations_match_numpy(
    dtype: str, steps: list[tuple[bool, str, int]], registers: tuple[int, int]
) -> None:
    # Two registers, each step updating one of them from itself and the other: the maps'
    # value on the initial registers' bits equals NumPy's, bit for bit.
    kind = np.dtype(dtype)
    width = kind.itemsize * 8
    unsigned = np.dtype(f"uint{width}")
    signed = kind.kind == "i"
    initial = [value & ((1 << width) - 1) for value in registers]
    values = [np.array(value, unsigned).view(kind)[()] for value in initial]
    maps = [XorMap.identity(kind, k, 2) for k in range(2)]
    for second, op, arg in steps:
        if op == "neg_flag" and not signed:
            continue  # NumPy warns on the negative of an unsigned 1: never folded
        k = int(second)
        values[k] = _numpy_step(op, values[k], values[1 - k], arg)
        maps[k] = _map_step(op, maps[k], maps[1 - k], arg, signed)
    for value, xmap in zip(values, maps, strict=True):
        assert _apply(xmap, initial) == int(np.array(value).view(unsigned))


# -- compiled loops against eager -----------------------------------------------------------


def _crc16_ccitt(data: Any) -> Any:
    # Left-shifting (not reflected): the top bit selects the polynomial.
    c = np.uint16(0xFFFF)
    for i in range(data.shape[0]):
        c = c ^ (data[i] << np.uint16(8))
        for _ in range(8):
            c = (c << np.uint16(1)) ^ ((c >> np.uint16(15)) * np.uint16(0x1021))
    return c


def _signed_mask(data: Any) -> Any:
    # A signed register: `-(c & 1) & poly`, arithmetic shifts.
    c = np.int64(-1)
    for i in range(data.shape[0]):
        c = c ^ data[i]
        for _ in range(8):
            c = (c >> np.int64(1)) ^ (-(c & np.int64(1)) & np.int64(-3932672073523589310))
    return c


def _two_registers(data: Any) -> Any:
    # Two carried registers feeding each other, `|` of disjoint bits, an inverted mask.
    a = np.uint32(0x12345678)
    b = np.uint32(0x9ABCDEF0)
    for i in range(data.shape[0]):
        a = a ^ data[i]
        for _ in range(13):
            a, b = (b >> np.uint32(3)) | (a << np.uint32(29)), ~(a ^ b) & np.uint32(0xFFFF0FFF)
    return a, b


def _branchy(data: Any) -> Any:
    # An `if` on the low bit whose branches differ by the polynomial.
    c = np.uint32(0xFFFFFFFF)
    one = np.uint32(1)
    for i in range(data.shape[0]):
        c = c ^ data[i]
        for _ in range(8):
            if c & one:  # noqa: SIM108 - the statement form users write
                c = (c >> one) ^ np.uint32(0xEDB88320)
            else:
                c = c >> one
    return c


def _branches_differ(data: Any) -> Any:
    # Branches whose results differ by a value of the register: not folded.
    c = np.uint32(0xFFFFFFFF)
    one = np.uint32(1)
    for i in range(data.shape[0]):
        c = c ^ data[i]
        for _ in range(8):
            if c & one:  # noqa: SIM108 - the statement form users write
                c = (c >> one) ^ np.uint32(0xEDB88320)
            else:
                c = c << one
    return c


def _outermost(data: Any) -> Any:
    # The folded loop is the function's outermost loop.
    c = data[0]
    for _ in range(8):
        c = (c >> np.uint32(1)) ^ ((c & np.uint32(1)) * np.uint32(0x82F63B78))
    return c


def _xorshift_once(data: Any) -> Any:
    # One xorshift32 step per item: the fold (many bits to select) costs more; kept.
    c = np.uint32(2463534242)
    for i in range(data.shape[0]):
        c = c ^ data[i]
        for _ in range(1):
            c = c ^ (c << np.uint32(13))
            c = c ^ (c >> np.uint32(17))
            c = c ^ (c << np.uint32(5))
    return c


def _compare(fn: Callable[..., Any], data: Any) -> str:
    captured = capture_function(fn, (data.copy(),), {}).graph
    compiled = compile_graph(captured)
    got, want = compiled.fn(data.copy()), fn(data.copy())
    assert "loop_v" in compiled.source
    for g, w in zip(
        got if isinstance(got, tuple) else (got,),
        want if isinstance(want, tuple) else (want,),
        strict=True,
    ):
        assert type(g) is type(w)
        assert g == w
    return str(compiled.source)


@pytest.mark.parametrize(
    ("fn", "dtype", "folded"),
    [
        pytest.param(_reflected(8, 0x8C), np.uint8, True, id="crc8_8_steps"),
        pytest.param(_reflected(13, 0xB9), np.uint8, True, id="odd_poly_13_steps"),
        # One step: a shift and a masked bit, no cheaper than the loop.
        pytest.param(_reflected(1, 0x8C), np.uint8, False, id="one_step"),
        pytest.param(_reflected(0, 0x8C), np.uint8, None, id="no_step"),
        pytest.param(_crc16_ccitt, np.uint16, True, id="crc16_ccitt"),
        pytest.param(_signed_mask, np.int64, True, id="signed_mask"),
        pytest.param(_two_registers, np.uint32, True, id="two_registers"),
        pytest.param(_outermost, np.uint32, True, id="outermost"),
        pytest.param(_branchy, np.uint32, True, id="branchy"),
        pytest.param(_branches_differ, np.uint32, False, id="branches_differ"),
        pytest.param(_xorshift_once, np.uint32, False, id="xorshift_once"),
    ],
)
def test_folded_loops_match_eager(fn: Callable[..., Any], dtype: Any, folded: bool | None) -> None:
    rng = np.random.default_rng(34)
    top = np.iinfo(dtype).max
    data = np.concatenate([rng.integers(0, 256, 64), np.full(9, top)]).astype(dtype)
    source = _compare(fn, data)
    if folded is not None:
        assert ("folded to one step" in source) == folded
