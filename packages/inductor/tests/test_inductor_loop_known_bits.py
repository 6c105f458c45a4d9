"""Bit tests of carried integers read an iteration early (`codegen/c/loop_known_bits.py`).

`known_zeros` is checked against brute force over every uint8 value; the bit loops it
rewrites (CRCs of every unsigned width, signed ones, `|` instead of `^`, a test also used
outside its select, odd polynomials that must not be rewritten) are compared with eager
on values, dtypes and wrap-around edge cases (all-ones bytes, values near the top).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from crc_programs import crc

from numpile_capture import Graph, Node, capture_function
from numpile_inductor import compile_graph
from numpile_inductor.codegen.c.loop_known_bits import bit_select, forwarded_masks, known_zeros

_ONE = np.uint8(1)


def _steps() -> list[Callable[[Any], Any]]:
    return [
        lambda c: (c >> _ONE) ^ ((c & _ONE) * np.uint8(0xB8)),
        lambda c: (c >> _ONE) ^ ((c & _ONE) * np.uint8(0xB9)),
        lambda c: (c & np.uint8(0xF0)) | np.uint8(0x0C),
        lambda c: (c << np.uint8(3)) ^ (c >> np.uint8(6)),
        lambda c: ((c > np.uint8(100)) * c) & np.uint8(0x7E),
        lambda c: (c ^ np.uint8(0x55)) & (c | np.uint8(0x81)),
        lambda c: c + np.uint8(1),
    ]


def _output(fn: Callable[[Any], Any]) -> Node:
    graph = capture_function(fn, (np.array(7, np.uint8),), {}).graph
    output = graph.output[0] if isinstance(graph.output, tuple) else graph.output
    assert isinstance(output, Node)
    return output


@pytest.mark.parametrize("index", range(len(_steps())))
def test_known_zero_bits_are_zero_for_every_uint8(index: int) -> None:
    fn = _steps()[index]
    zeros = known_zeros(_output(fn), np.dtype("uint8"))
    every = np.arange(256, dtype=np.uint8)
    values = np.array([fn(np.array(v, np.uint8)) for v in every], dtype=np.uint8)
    assert not np.any(values & np.uint8(zeros))


def test_known_zero_bits_find_an_even_polynomial_select() -> None:
    select = _output(lambda c: (c & _ONE) * np.uint8(0xB8))
    assert known_zeros(select, np.dtype("uint8")) == 0x47
    assert known_zeros(_output(lambda c: c + np.uint8(1)), np.dtype("uint8")) == 0


def _or_bits(data: Any) -> Any:
    c = np.uint16(0xFFFF)
    one = np.uint16(1)
    for i in range(data.shape[0]):
        c = (c >> one) | ((c & one) * np.uint16(0x8000)) | data[i]
    return c


def _shared_test(data: Any) -> Any:
    # The test is also counted outside its select: both read the forwarded value.
    c = np.uint32(0xFFFFFFFF)
    ones = np.uint32(0)
    one = np.uint32(1)
    for i in range(data.shape[0]):
        c = c ^ data[i]
        for _ in range(8):
            bit = c & one
            ones = ones + bit
            c = (c >> one) ^ (bit * np.uint32(0x82F63B78))
    return c, ones


def _two_bit_mask(data: Any) -> Any:
    # A mask of two bits (no single-bit select), forwarded through `|`.
    c = np.uint32(7)
    for i in range(data.shape[0]):
        low = c & np.uint32(3)
        c = (c >> np.uint32(2)) ^ ((low == np.uint32(1)) * np.uint32(0xA000)) ^ data[i]
    return c


def _invariant_source(data: Any) -> Any:
    # The carried value becomes a loop invariant xored with the select, and the carried
    # value itself xored with one: sources that are not computed from the shift.
    base = data[0] ^ np.uint32(5)
    c = np.uint32(0xFFFFFFFF)
    d = np.uint32(3)
    one = np.uint32(1)
    for _ in range(data.shape[0]):
        c = base ^ ((c & one) * np.uint32(0xEDB88320))
        d = d ^ ((d & one) * np.uint32(0x10))
    return c, d


def _compare(fn: Callable[..., Any], data: Any) -> Graph:
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
        assert np.asarray(g).dtype == np.asarray(w).dtype
        assert g == w
    return captured


def _inputs(dtype: Any) -> list[Any]:
    top = np.iinfo(dtype).max
    rng = np.random.default_rng(23)
    return [
        np.full(64, 0xFF, dtype=dtype),
        np.full(9, top, dtype=dtype),
        rng.integers(0, 256, 300).astype(dtype),
        np.array([1], dtype=dtype),
    ]


@pytest.mark.parametrize(
    ("dtype", "poly", "init"),
    [
        (np.uint32, 0xEDB88320, 0xFFFFFFFF),  # zlib's CRC-32: forwarded
        (np.uint32, 0xEDB88321, 0xFFFFFFFF),  # odd: bit 0 changes, not forwarded
        (np.uint8, 0x8C, 0x00),  # CRC-8/MAXIM
        (np.uint16, 0xA001, 0xFFFF),  # CRC-16/MODBUS
        (np.uint64, 0xC96C5795D7870F42, 0xFFFFFFFFFFFFFFFF),  # CRC-64/XZ
        (np.int32, -306674912, -1),  # signed: arithmetic shifts
        (np.int64, 0x42F0E1EBA9EA3693, 2**63 - 1),
    ],
)
def test_bit_loops_match_eager(dtype: Any, poly: int, init: int) -> None:
    fn = crc(dtype, poly, init)
    for data in _inputs(dtype):
        graph = _compare(fn, data)
    loops = [node for node in graph.nodes if node.op is not None and node.op.name == "for_loop"]
    inner = [
        node for node in dict(loops[0].params)["body"].nodes
        if node.op is not None and node.op.name == "for_loop"
    ]  # fmt: skip
    masks = forwarded_masks(dict(inner[0].params)["body"], 1)
    assert len(masks) == (0 if poly & 1 else 1)
    if dtype in (np.uint32, np.uint8, np.uint16, np.uint64) and not poly & 1:
        assert bit_select(masks[0]) is not None


@pytest.mark.parametrize("fn", [_or_bits, _shared_test, _two_bit_mask, _invariant_source])
def test_other_forwarded_bit_tests_match_eager(fn: Callable[..., Any]) -> None:
    dtype = np.uint16 if fn is _or_bits else np.uint32
    for data in _inputs(dtype):
        _compare(fn, data)
