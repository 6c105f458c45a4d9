"""Xor maps: a constant-trip loop of bit operations on carried integers, folded to one step.

A loop whose carried values are integers of one dtype and whose body only xors them,
shifts them by constants, masks them with constants (`&`, `|`, `~`), ors values that
share no bit, multiplies a 0/1 bit of them by a constant (or negates it, signed), and
branches on such a bit into results that differ by a constant (`crc = (crc >> one) ^
((crc & one) * poly)` or its `if crc & one:` form, eight times per byte; an LFSR's
steps) computes an affine function of the carried bits over GF(2): each bit of each
result is the xor of some input bits and a constant. `fold_xor_loop` runs the body
symbolically for the loop's constant trip count and gives each carried value's final
value as an `XorMap`: one column per input bit (the result bits that input bit flips)
and the constant.

`XorMap.terms` writes a map the cheap way, which is how CRCs are computed by hand:

- input bits that only move, each to one place, by the same distance: one shift and a
  mask (`crc >> 8`);
- a run of up to 8 other input bits of one carried value: a lookup in a table of the xors
  of their columns, computed here (`table[crc & 0xFF]`, the table-driven CRC);
- any other input bit: its column masked by the bit (`-(x >> b & 1) & column`).

The terms are xored in a balanced tree, so a chain of `trips` dependent steps (a shift
and an xor per step, 16 instructions deep per CRC byte) becomes a few operations deep.
The fold is used when it runs fewer operations than the loop as written
(`XorLoop.folded_ops` against `XorLoop.serial_ops`). Results are exact: the same bits,
computed in another order. Ops that NumPy may warn on (a negative unsigned, a multiply
that can overflow, a shift by the width or more) are not folded.

    >>> xmap = XorMap.identity(np.dtype("uint8"), 0, 1)
    >>> [str(term) for term in xmap.shift_right(3).terms()]
    ['x0 >> 3']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from numpile_capture import ArrayMeta, Graph, Node

from .loop_known_bits import integer_constant
from .ops import c_literal, c_type

__all__ = ["XorLoop", "XorMap", "XorTerm", "fold_xor_loop", "xor_map_c"]

# Tables index at most this many input bits: 256 entries (1 KiB of uint32) stay in the
# first-level cache; a table of 16 bits (256 KiB) would not.
TABLE_BITS = 8
# Fewer bits than this run through per-bit masks (3 operations each, no memory).
_TABLE_MIN_BITS = 3
# Loops folded at most: trips, and carried bits in all (the symbolic run's cost).
_MAX_TRIPS = 64
_MAX_STATE_BITS = 256


@attrs.frozen
class XorMap:
    """A `width`-bit value as an affine map over GF(2) of the carried values' bits:
    the value is `constant` xor, for each set input bit (carried k, bit b), column
    `k * width + b`. Signed values are held as their two's complement bits."""

    width: int
    columns: tuple[int, ...]
    constant: int

    @property
    def full(self) -> int:
        """All `width` bits set."""
        return (1 << self.width) - 1

    @staticmethod
    def identity(dtype: np.dtype[Any], k: int, carried: int) -> XorMap:
        """Carried value `k` of `carried`, unchanged."""
        width = dtype.itemsize * 8
        columns = [0] * (width * carried)
        for b in range(width):
            columns[k * width + b] = 1 << b
        return XorMap(width, tuple(columns), 0)

    @staticmethod
    def const(value: int, width: int, carried: int) -> XorMap:
        """The constant `value` (its low `width` bits)."""
        return XorMap(width, (0,) * (width * carried), value & ((1 << width) - 1))

    def support(self) -> int:
        """The bits of the value that may be 1."""
        bits = self.constant
        for column in self.columns:
            bits |= column
        return bits

    def _each(self, fn: Callable[[int], int]) -> XorMap:
        columns = tuple(fn(column) for column in self.columns)
        return XorMap(self.width, columns, fn(self.constant))

    def xor(self, other: XorMap) -> XorMap:
        """`self ^ other`."""
        columns = tuple(a ^ b for a, b in zip(self.columns, other.columns, strict=True))
        return XorMap(self.width, columns, self.constant ^ other.constant)

    def mask(self, constant: int) -> XorMap:
        """`self & constant`."""
        return self._each(lambda column: column & constant)

    def set_bits(self, constant: int) -> XorMap:
        """`self | constant`: those bits are 1 whatever the inputs."""
        bits = constant & self.full
        return XorMap(self.width, tuple(c & ~bits for c in self.columns), self.constant | bits)

    def invert(self) -> XorMap:
        """`~self`."""
        return XorMap(self.width, self.columns, self.constant ^ self.full)

    def shift_left(self, amount: int) -> XorMap:
        """`self << amount` (bits past the width dropped)."""
        return self._each(lambda column: (column << amount) & self.full)

    def shift_right(self, amount: int, *, signed: bool = False) -> XorMap:
        """`self >> amount`: the sign bit copied into the freed bits where `signed`."""
        top = 1 << (self.width - 1)
        freed = self.full ^ (self.full >> amount)

        def shifted(column: int) -> int:
            return (column >> amount) | (freed if signed and column & top else 0)

        return self._each(shifted)

    def times_bit(self, value: int) -> XorMap:
        """`self * value` where `self` is 0 or 1 (only its bit 0 may be set)."""
        value &= self.full
        return self._each(lambda column: value if column & 1 else 0)

    def terms(self) -> list[XorTerm]:
        """The map as terms whose xor is its value (see the module's docstring)."""
        width = self.width
        carried = len(self.columns) // width
        left = list(self.columns)
        terms: list[XorTerm] = []
        for k in range(carried):
            # Bits that move to one place by the same distance: a shift and a mask.
            moves: dict[int, int] = {}
            for b in range(width):
                column = left[k * width + b]
                if column and column & (column - 1) == 0:
                    distance = b - (column.bit_length() - 1)
                    moves[distance] = moves.get(distance, 0) | column
                    left[k * width + b] = 0
            for distance, mask in sorted(moves.items()):
                reach = self.full >> distance if distance >= 0 else (self.full << -distance)
                reach &= self.full
                terms.append(XorTerm("shift", k, distance, mask if mask != reach else None))
            terms.extend(self._lookups(k, left))
        if self.constant:
            terms.append(XorTerm("constant", 0, 0, self.constant))
        return terms

    def _lookups(self, k: int, left: list[int]) -> list[XorTerm]:
        # The remaining bits of carried `k`: runs of TABLE_BITS as tables, the rest masked.
        width = self.width
        bits = [b for b in range(width) if left[k * width + b]]
        terms: list[XorTerm] = []
        while bits:
            low = bits[0]
            run = [b for b in bits if b < low + TABLE_BITS]
            bits = bits[len(run) :]
            if len(run) < _TABLE_MIN_BITS:
                terms.extend(XorTerm("bit", k, b, left[k * width + b]) for b in run)
                continue
            size = run[-1] - low + 1
            entries = []
            for index in range(1 << size):
                entry = 0
                for i in range(size):
                    if index >> i & 1:
                        entry ^= left[k * width + low + i]
                entries.append(entry)
            terms.append(XorTerm("table", k, low, (size, tuple(entries))))
        return terms


@attrs.frozen
class XorTerm:
    """One term of an `XorMap`: `kind` "shift" (carried `k` shifted right by `at`, left
    where negative, masked with `data` unless None), "table" (`data` = (bits, entries):
    the entry at carried `k`'s `bits` bits from bit `at`), "bit" (`data` where bit `at` of
    carried `k` is set, else 0) or "constant" (`data`)."""

    kind: str
    k: int
    at: int
    data: Any

    def ops(self) -> int:
        """The C operations the term takes (before the xor that adds it)."""
        if self.kind == "shift":
            return int(self.at != 0) + int(self.data is not None)
        if self.kind == "table":
            return int(self.at != 0) + 2  # shift, mask, load
        if self.kind == "bit":
            return 3
        return 0

    def __str__(self) -> str:
        x = f"x{self.k}"
        if self.kind == "shift":
            text = x
            if self.at:
                text = f"{x} >> {self.at}" if self.at > 0 else f"{x} << {-self.at}"
            return text if self.data is None else f"({text}) & {self.data:#x}"
        if self.kind == "table":
            bits, _ = self.data
            return f"table[({x} >> {self.at}) & {(1 << bits) - 1:#x}]"
        if self.kind == "bit":
            return f"{x}[{self.at}] ? {self.data:#x} : 0"
        return f"{self.data:#x}"


@attrs.frozen
class XorLoop:
    """A loop folded: its carried values' `dtype`, each one's final value as a map of their
    initial values, and the operations of the loop as written (body ops times trips)."""

    dtype: np.dtype[Any]
    maps: tuple[XorMap, ...]
    serial_ops: int

    def folded_ops(self) -> int:
        """The operations of the folded form: its terms and the xors between them."""
        total = 0
        for xmap in self.maps:
            terms = xmap.terms()
            total += sum(term.ops() for term in terms) + max(len(terms) - 1, 0)
        return total


def fold_xor_loop(body: Graph, carried: int, trips: int) -> XorLoop | None:
    """`body` (a `for_loop` body with `carried` carried values) run `trips` times as an
    `XorLoop`, or None where it holds anything but the bit operations this module folds.

    >>> fold_xor_loop(Graph(), 0, 8) is None
    True
    """
    placeholders = body.placeholders
    outputs = body.output if isinstance(body.output, tuple) else (body.output,)
    if carried == 0 or len(outputs) != carried or not 0 <= trips <= _MAX_TRIPS:
        return None
    metas = [placeholder.meta for placeholder in placeholders[1 : 1 + carried]]
    first = metas[0]
    if not isinstance(first, ArrayMeta) or first.shape != () or first.dtype.kind not in "iu":
        return None
    dtype = first.dtype
    if any(meta != first for meta in metas) or dtype.itemsize * 8 * carried > _MAX_STATE_BITS:
        return None
    symbols = _Symbols(dtype, carried)
    state = [XorMap.identity(dtype, k, carried) for k in range(carried)]
    ops = 0
    for _ in range(trips):
        ran = _run(body, dict(zip(placeholders[1 : 1 + carried], state, strict=True)), symbols)
        if ran is None:
            return None
        state, ops = ran
    return XorLoop(dtype, tuple(state), ops * trips)


@attrs.frozen
class _Symbols:
    # What every node of a folded body is checked against: the carried values' dtype and
    # how many there are (the maps' columns).
    dtype: np.dtype[Any]
    carried: int

    @property
    def width(self) -> int:
        return self.dtype.itemsize * 8


def _run(
    graph: Graph, inputs: dict[Node, XorMap], symbols: _Symbols
) -> tuple[list[XorMap], int] | None:
    # `graph`'s outputs as maps of the carried bits, and the operations it runs (a `cond`:
    # its test and its costlier branch); None where a node is no foldable bit operation.
    env: dict[Node, Any] = dict(inputs)
    ops = 0
    for node in graph.nodes:
        if node.op is None:
            continue
        if node.op.name == "cond":
            found = _cond(node, env, symbols)
            if found is None:
                return None
            env[node], cost = found
            ops += cost
            continue
        value = _apply(node, env, symbols)
        if value is None:
            return None
        env[node] = value
        ops += node.op.name not in ("carried_scalar", "loop_output")
    outputs = graph.output if isinstance(graph.output, tuple) else (graph.output,)
    news = [_operand(out, env, symbols) for out in outputs]
    if any(new is None for new in news):
        return None
    return [new for new in news if new is not None], ops


def _cond(
    node: Node, env: dict[Node, Any], symbols: _Symbols
) -> tuple[tuple[XorMap, ...], int] | None:
    # `if` on a 0/1 value (a bit of the registers) whose branches' results differ by a
    # constant: `else's ^ (bit * difference)` (`crc = (crc >> 1) ^ poly if crc & 1 else
    # crc >> 1`); and the operations of the test and the costlier branch.
    params = dict(node.params)
    test = _operand(node.inputs[0], env, symbols)
    found = [_operand(value, env, symbols) for value in node.inputs[1:]]
    args = [arg for arg in found if arg is not None]
    if test is None or test.support() & ~1 or len(args) != len(found):
        return None
    results = []
    for branch in (params["then_branch"], params["else_branch"]):
        if len(branch.placeholders) != len(args):
            return None
        ran = _run(branch, dict(zip(branch.placeholders, args, strict=True)), symbols)
        if ran is None:
            return None
        results.append(ran)
    (taken, taken_ops), (other, other_ops) = results
    maps = []
    for yes, no in zip(taken, other, strict=True):
        difference = yes.xor(no)
        if any(difference.columns):
            return None
        maps.append(no.xor(test.times_bit(difference.constant)))
    return tuple(maps), 1 + max(taken_ops, other_ops)


def _operand(value: Any, env: dict[Node, Any], symbols: _Symbols) -> XorMap | None:
    if isinstance(value, Node):
        found = env.get(value)
        return found if isinstance(found, XorMap) else None
    constant = integer_constant(value)
    if constant is None:
        return None
    return XorMap.const(constant, symbols.width, symbols.carried)


def _apply(node: Node, env: dict[Node, Any], symbols: _Symbols) -> XorMap | None:
    # The map of one body node, or None where it is not a bit operation of `dtype` values.
    assert node.op is not None
    dtype = symbols.dtype
    meta = node.meta
    if not isinstance(meta, ArrayMeta) or meta.shape != () or meta.dtype != dtype:
        return None
    width = symbols.width
    name = node.op.name
    inputs = node.inputs
    if name == "carried_scalar":
        return _operand(inputs[0], env, symbols)
    if name == "loop_output":
        results = env.get(inputs[0]) if isinstance(inputs[0], Node) else None
        index = dict(node.params)["index"]
        return results[index] if isinstance(results, tuple) else None
    maps = [_operand(value, env, symbols) for value in inputs]
    if any(item is None for item in maps):
        return None
    if name == "invert" and len(maps) == 1 and maps[0] is not None:
        return maps[0].invert()
    if name == "negative" and len(maps) == 1 and maps[0] is not None:
        # -flag: 0 or all ones. Only signed: NumPy warns on the negative of an unsigned 1.
        if dtype.kind != "i" or maps[0].support() & ~1:
            return None
        return maps[0].times_bit(-1)
    if len(maps) != 2:
        return None
    left, right = maps
    assert left is not None and right is not None
    constants = [integer_constant(value) for value in inputs]
    if name == "bitwise_xor":
        return left.xor(right)
    if name in ("bitwise_and", "bitwise_or"):
        known = constants[1] if constants[1] is not None else constants[0]
        other = left if constants[1] is not None else right
        if name == "bitwise_and" and known is not None:
            return other.mask(known)
        if name == "bitwise_or" and known is not None:
            return other.set_bits(known)
        if name == "bitwise_or" and left.support() & right.support() == 0:
            return left.xor(right)  # no bit in both: `|` is `^`
        return None
    if name in ("left_shift", "right_shift"):
        amount = constants[1]
        if amount is None or not 0 <= amount < width:
            return None
        if name == "left_shift":
            return left.shift_left(amount)
        return left.shift_right(amount, signed=dtype.kind == "i")
    if name == "multiply":
        # A 0/1 bit times a constant: never overflows (NumPy would warn where it did).
        for flag, constant in ((left, constants[1]), (right, constants[0])):
            if constant is not None and flag.support() & ~1 == 0:
                return flag.times_bit(constant)
        return None
    return None


def xor_map_c(
    xmap: XorMap, inputs: list[str], dtype: np.dtype[Any], table: Callable[[XorTerm], str]
) -> str:
    """The C expression of `xmap` of the C values `inputs` (the carried values, `dtype`):
    its terms computed unsigned and xored in a balanced tree. `table(term)` names the C
    array of a "table" term's entries (declared by the caller).

    >>> u8 = np.dtype("uint8")
    >>> xor_map_c(XorMap.identity(u8, 0, 1).shift_right(3), ["c"], u8, str)
    '((uint8_t)(((uint8_t)(((uint8_t)c) >> 3))))'
    """
    width = xmap.width
    unsigned = np.dtype(f"uint{width}")
    u_type = c_type(unsigned)
    s_type = c_type(np.dtype(f"int{width}"))
    texts = []
    for term in xmap.terms():
        x = f"(({u_type}){inputs[term.k]})"
        if term.kind == "shift":
            moved = x
            if term.at > 0:
                moved = f"({u_type})({x} >> {term.at})"
            elif term.at < 0:
                moved = f"({u_type})({x} << {-term.at})"
            mask = "" if term.data is None else f" & {c_literal(term.data, unsigned)}"
            texts.append(f"({moved}{mask})")
        elif term.kind == "table":
            bits, _ = term.data
            index = f"({x} >> {term.at}) & {(1 << bits) - 1}u"
            texts.append(f"{table(term)}[{index}]")
        elif term.kind == "bit":
            # The bit shifted into the sign and back arithmetically: all ones or zero.
            moved = f"({u_type})({x} << {width - 1 - term.at})"
            texts.append(
                f"(({u_type})((({s_type}){moved}) >> {width - 1}) & "
                f"{c_literal(term.data, unsigned)})"
            )
        else:
            texts.append(c_literal(term.data, unsigned))
    text = _balanced(texts) if texts else c_literal(0, unsigned)
    return f"(({c_type(dtype)})({text}))"


def _balanced(texts: list[str]) -> str:
    # `a ^ b ^ ...` as a tree of depth log2(n): the terms are independent of each other.
    if len(texts) == 1:
        return texts[0]
    half = len(texts) // 2
    return f"({_balanced(texts[:half])} ^ {_balanced(texts[half:])})"
