"""Known bits of a loop's carried integers: a bit test of a carried value read early.

A scalar loop body that tests bits of a carried integer and folds the test back into it
(`crc = (crc >> one) ^ ((crc & one) * poly)`: a bit-serial CRC, an LFSR step, a
carry-less multiply) is one chain through the test at every iteration: shift, test,
select, xor. Where the bits the test reads are provably untouched by what the carried
value is xored (or or-ed) with (`poly` is even, so `((x ^ sel) & 1) == (x & 1)`), the next
iteration's test is known from `x` alone, before the xor: the test and the values computed
from it alone (the select) move to the end of the previous iteration, as carried C locals
(`ForwardedMask`), and the chain left is a shift and an xor per iteration. This is what
LLVM's known-bits analysis finds for Numba; GCC does not, and it turns `x ^ (b ? p : 0)`
into `b ? x ^ p : x`, which puts the test back on the chain.

`known_zeros` is the analysis: the bits of a 0-d integer value that are zero whatever the
loop's inputs (constants, `&`, `|`, `^`, shifts by a constant, a 0/1 flag times a value).
`forwarded_masks` finds, in a straight-line body (no nested loop, no `if`, no `break`),
each `carried & K` whose next value is `source & K`. The results are exact: only the
order in which the same C operations run changes.

    >>> known_zeros(np.uint32(0xEDB88320), np.dtype("uint32")) & 1
    1
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from numpile_capture import ArrayMeta, Graph, Node

from .loop_scalar_forms import zero_one_result

__all__ = ["ForwardedMask", "forwarded_masks", "integer_constant", "known_zeros"]

# Ops a forwarded value may be computed with from the test: pure integer ops that cannot
# fail, warn or overflow (a multiply only by a 0/1 flag, which is a select).
_CONE_OPS = frozenset(
    {"bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift", "right_shift",
     "multiply", "equal", "not_equal", "logical_not"}
)  # fmt: skip


@attrs.frozen
class ForwardedMask:
    """`mask = carried[k] & constant` of a body whose carried value `k` leaves it as
    `source ^ other` (or `|`) where `other & constant` is zero: the next iteration's
    `mask` is `source & constant`. `cone`: `mask`, then the body's nodes computed from it
    alone (and constants), in the body's order; they are computed one iteration early."""

    carried: int
    mask: Node
    constant: int
    source: Node
    cone: tuple[Node, ...]


def integer_constant(value: Any) -> int | None:
    """`value` as an int when it is an integer constant of the graph (not a bool), else None.

    >>> integer_constant(np.int8(3)), integer_constant(True), integer_constant(2.0)
    (3, None, None)
    """
    if isinstance(value, bool | np.bool_):
        return None
    if isinstance(value, int | np.integer):
        return int(value)
    return None


def _zero_d(value: Any, dtype: np.dtype[Any] | None = None) -> bool:
    if not isinstance(value, Node) or not isinstance(value.meta, ArrayMeta):
        return False
    meta = value.meta
    return meta.shape == () and (dtype is None or meta.dtype == dtype)


def _zero_one(value: Any) -> bool:
    # Whether `value` is 0 or 1 whatever the inputs (loop_scalar_forms' rule, on nodes).
    constant = integer_constant(value)
    if constant is not None:
        return constant in (0, 1)
    if not _zero_d(value) or value.op is None:
        return False
    if value.meta.dtype.kind == "b":
        return True
    return zero_one_result(value.op.name, [_zero_one(item) for item in value.inputs])


def known_zeros(value: Any, dtype: np.dtype[Any]) -> int:
    """The bits of `value` (a 0-d integer node of `dtype`, or a constant) known to be zero.

    >>> known_zeros(6, np.dtype("uint8"))
    249
    """
    width = dtype.itemsize * 8
    full = (1 << width) - 1
    constant = integer_constant(value)
    if constant is not None:
        return ~constant & full
    if not _zero_d(value, dtype) or value.op is None or dtype.kind not in "iu":
        return 0
    name = value.op.name
    inputs = value.inputs
    if len(inputs) != 2:
        return 0
    left, right = inputs
    if name == "bitwise_and":
        return known_zeros(left, dtype) | known_zeros(right, dtype)
    if name in ("bitwise_or", "bitwise_xor"):
        return known_zeros(left, dtype) & known_zeros(right, dtype)
    if name == "multiply" and (_zero_one(left) or _zero_one(right)):
        # 0 or the other operand: a bit of the product is zero where the other's is.
        return known_zeros(right if _zero_one(left) else left, dtype)
    shift = integer_constant(right)
    if shift is None or not 0 <= shift < width:
        return 0
    if name == "right_shift" and dtype.kind == "u":
        return (known_zeros(left, dtype) >> shift) | (full ^ (full >> shift))
    if name == "left_shift":
        return ((known_zeros(left, dtype) << shift) | ((1 << shift) - 1)) & full
    return 0


def forwarded_masks(body: Graph, carried: int) -> list[ForwardedMask]:
    """The bit tests of carried integers of `body` (a loop body with `carried` carried
    values first after its index) whose next value is known before the carried value's.

    >>> forwarded_masks(Graph(), 0)
    []
    """
    outputs = body.output if isinstance(body.output, tuple) else (body.output,)
    if len(outputs) != carried:
        return []  # a body that breaks returns its stop flag too
    for node in body.nodes:
        if any(isinstance(value, Graph) for _, value in node.params):
            return []  # nested loops and conds: not straight-line
    placeholders = body.placeholders
    found: list[ForwardedMask] = []
    for k in range(carried):
        placeholder = placeholders[1 + k]
        out = outputs[k]
        meta = placeholder.meta
        if not isinstance(meta, ArrayMeta) or meta.shape != () or meta.dtype.kind not in "iu":
            continue
        dtype = meta.dtype
        if not _zero_d(out, dtype) or out.op is None:
            continue
        if out.op.name not in ("bitwise_xor", "bitwise_or") or len(out.inputs) != 2:
            continue
        for mask, constant in _masks_of(body, placeholder, dtype):
            source = _source(out, constant, dtype)
            if source is not None:
                found.append(ForwardedMask(k, mask, constant, source, _cone(body, mask)))
    return found


def _masks_of(body: Graph, placeholder: Node, dtype: np.dtype[Any]) -> list[tuple[Node, int]]:
    # The `carried & K` nodes of the body (K a constant), with K.
    reads = {placeholder}
    masks: list[tuple[Node, int]] = []
    for node in body.nodes:
        if node.op is None or not _zero_d(node, dtype):
            continue
        if node.op.name == "carried_scalar" and node.inputs[0] in reads:
            reads.add(node)
        elif node.op.name == "bitwise_and" and len(node.inputs) == 2:
            left, right = node.inputs
            if left in reads and integer_constant(right) is not None:
                masks.append((node, integer_constant(right) or 0))
            elif right in reads and integer_constant(left) is not None:
                masks.append((node, integer_constant(left) or 0))
    return masks


def _source(out: Node, constant: int, dtype: np.dtype[Any]) -> Node | None:
    # The operand x of `out = x ^ y` (or `|`) with `y & constant` known zero.
    width = dtype.itemsize * 8
    bits = constant & ((1 << width) - 1)
    for x, y in (out.inputs, out.inputs[::-1]):
        # `x` computed in the body (a placeholder may stand for an array of the caller)
        computed = isinstance(x, Node) and x.op is not None
        if computed and _zero_d(x, dtype) and bits & ~known_zeros(y, dtype) == 0:
            assert isinstance(x, Node)
            return x
    return None


def _cone(body: Graph, mask: Node) -> tuple[Node, ...]:
    # `mask` and the nodes computed from it alone with _CONE_OPS, in the body's order.
    cone = [mask]
    members = {mask}
    for node in body.nodes:
        if node.op is None or node in members or node.op.name not in _CONE_OPS:
            continue
        if not _zero_d(node) or not isinstance(node.meta, ArrayMeta):
            continue
        if node.meta.dtype.kind not in "biu":
            continue
        nodes = [value for value in node.inputs if isinstance(value, Node)]
        if not nodes or any(value not in members for value in nodes):
            continue
        if any(
            integer_constant(value) is None for value in node.inputs if not isinstance(value, Node)
        ):
            continue
        if node.op.name == "multiply" and not any(_zero_one(value) for value in node.inputs):
            continue
        cone.append(node)
        members.add(node)
    return tuple(cone)


def bit_select(fm: ForwardedMask) -> tuple[int, int, Node | None] | None:
    """(j, value, base) where `fm`'s cone selects `value` or 0 by bit j of `base`'s value
    (`base` None: of `fm.source`'s), for the cone `[source & 2**s, (source & 2**s) * value]`.

    Forwarded, such a select is off the carried chain and is written as a mask made by
    shifting the bit into the sign (`(int32_t)(x << 30) >> 31 & value`): GCC would turn a
    conditional `b ? value : 0` xored into the chain back into a conditional move on it.
    `source = base >> r` (unsigned, r a constant) tests bit `s + r` of `base`.
    """
    if len(fm.cone) != 2 or fm.constant <= 0 or fm.constant & (fm.constant - 1):
        return None
    select = fm.cone[1]
    assert select.op is not None
    if select.op.name != "multiply":
        return None
    values = [integer_constant(item) for item in select.inputs if item is not fm.mask]
    if len(values) != 1 or values[0] is None:
        return None
    assert isinstance(select.meta, ArrayMeta)
    dtype = select.meta.dtype
    width = dtype.itemsize * 8
    bit = fm.constant.bit_length() - 1
    source = fm.source
    assert source.op is not None
    shift = integer_constant(source.inputs[1]) if len(source.inputs) == 2 else None
    if source.op.name == "right_shift" and dtype.kind == "u" and shift is not None:
        base = source.inputs[0]
        if _zero_d(base, dtype) and 0 <= bit + shift < width:
            assert isinstance(base, Node)
            return bit + shift, values[0], base
    return bit, values[0], None
