"""Gate plans: an entry's guards and input fetches as a call gate's program, or a refusal.

A call gate (`numpile_runtime.call_gate`) runs a remembered entry's hit path in C. It can
run only what its operations express, so `gate_plan` translates each guard through
`GATE_KINDS` (which guard kinds a gate checks, and how) and each source through the
source table below; a guard or a source outside them (a dict's keys, a constant compared
with NaN care, an arithmetic expression, a relation that is not integer arithmetic over
array sizes) refuses the whole entry, which keeps the Python path: a gate never checks
less than the Python check does.

A NumPy array is one `array` operation, which reads NumPy's array struct. An array of
another library (CuPy's: `ArraySpec.device_id` set) is checked through its attributes
(`type`, then `eq` on its dtype, shape, strides and `device.id`, as `check` compares them),
and a relation reads its sizes as items of its `shape` and `strides`: only NumPy arrays
reach the gate's `dim` and `stride` steps.

The calls a gate takes are positional only, exactly as many as the function's positional
parameters (`argcount`): keywords, defaults and `*args` decline to the Python path.

    >>> import numpy as np
    >>> from numpile_guards import ArraySpec, Guard, GuardKind, LocalSource
    >>> spec = ArraySpec(np.ndarray, np.dtype("float64"), (None,), (8,))
    >>> plan = gate_plan([Guard(GuardKind.ARRAY_MATCH, LocalSource("x"), spec)],
    ...                  [LocalSource("x")], ("x",))
    >>> plan.program
    (('arg', 0, 0), ('array', 0, <class 'numpy.ndarray'>, dtype('float64'), (None,), (8,)))
    >>> plan.inputs
    (0,)
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np

from .check import order_guards
from .guard import ArraySpec, Guard, GuardKind
from .source import (
    AttrSource,
    ClosureSource,
    FunctionSource,
    GlobalSource,
    ItemSource,
    LocalSource,
    Source,
    StateSource,
)

__all__ = ["GATE_KINDS", "GatePlan", "GateRefusedError", "gate_plan"]

# A gate's registers (the C side's MAX_REGS).
_MAX_REGISTERS = 64
_MAX_DIMS = 32


class GateRefusedError(ValueError):
    """What a gate cannot check or fetch; the entry keeps the Python path.

    >>> str(GateRefusedError("DICT_KEYS"))
    'DICT_KEYS'
    """


@attrs.frozen
class GatePlan:
    """A gate's `program` (operations) and the registers of the compiled call's `inputs`.

    >>> GatePlan((), ()).inputs
    ()
    """

    program: tuple[tuple[Any, ...], ...]
    inputs: tuple[int, ...]


class _Program:
    # The operations so far and the register each source's value is in.

    def __init__(self, parameters: Sequence[str]) -> None:
        self.parameters = {name: index for index, name in enumerate(parameters)}
        self.ops: list[tuple[Any, ...]] = []
        self.registers: dict[Source, int] = {}
        # NOTE: registers of NumPy arrays (`array` checked them: `dim`/`stride` read their
        # struct) and of other libraries' arrays (checked through attributes: sizes are
        # items of their `shape` and `strides`).
        self.arrays: set[int] = set()
        self.attribute_arrays: set[int] = set()

    def register(self, source: Source) -> int:
        found = self.registers.get(source)
        if found is not None:
            return found
        op = self._source_op(source)
        register = len(self.registers)
        if register >= _MAX_REGISTERS:
            raise GateRefusedError(f"more than {_MAX_REGISTERS} values")
        self.ops.append((op[0], register, *op[1:]))
        self.registers[source] = register
        return register

    def _source_op(self, source: Source) -> tuple[Any, ...]:
        if isinstance(source, LocalSource):
            index = self.parameters.get(source.local)
            if index is None:
                raise GateRefusedError(f"{source.name} is no positional parameter")
            return ("arg", index)
        if isinstance(source, GlobalSource):
            return ("global", source.global_name)
        if isinstance(source, ClosureSource):
            return ("cell", source.index)
        if isinstance(source, FunctionSource):
            return ("func",)
        if isinstance(source, AttrSource):
            if type(source.attr) is not str:
                raise GateRefusedError(f"attribute name of {source.name}")
            return ("attr", self.register(source.base), source.attr)
        if isinstance(source, ItemSource):
            return ("item", self.register(source.base), source.key)
        if isinstance(source, StateSource):
            return ("probe", source.probe)
        raise GateRefusedError(f"source {type(source).__name__} ({source.name})")


def _type_op(program: _Program, guard: Guard) -> None:
    program.ops.append(("type", program.register(guard.source), guard.expected))


def _id_op(program: _Program, guard: Guard) -> None:
    program.ops.append(("is", program.register(guard.source), guard.expected))


def _equals_op(program: _Program, guard: Guard) -> None:
    # As `check._equals_clause`: `is None`, or an exact type and `==` for the constants the
    # Python check compares that way; the others (NaN, signed zeros, containers) refuse.
    expected = guard.expected
    register = program.register(guard.source)
    kind = type(expected)
    if expected is None:
        program.ops.append(("is", register, None))
        return
    plain_float = kind is float and math.isfinite(expected) and expected != 0.0
    if kind in (bool, int, str, bytes) or plain_float:
        program.ops.append(("eq", register, kind, expected))
        return
    raise GateRefusedError(f"EQUALS_MATCH on a {kind.__name__}")


def _length_op(program: _Program, guard: Guard) -> None:
    program.ops.append(("len", program.register(guard.source), int(guard.expected)))


def _array_op(program: _Program, guard: Guard) -> None:
    spec: ArraySpec = guard.expected
    if len(spec.shape) > _MAX_DIMS or len(spec.strides) != len(spec.shape):
        raise GateRefusedError("array rank")
    if spec.device_id is not None or not issubclass(spec.type, np.ndarray):
        _attribute_array_ops(program, guard.source, spec)
        return
    register = program.register(guard.source)
    dtype = np.dtype(spec.dtype)
    program.ops.append(("array", register, spec.type, dtype, spec.shape, spec.strides))
    program.arrays.add(register)


def _attribute_array_ops(program: _Program, source: Source, spec: ArraySpec) -> None:
    # An array of another library (CuPy's): `check._array_clauses` as reads of its Python
    # attributes, never NumPy's array struct, so its register stays out of `arrays` (a
    # relation reads its sizes from `shape` and `strides` items instead of `dim`/`stride`).
    # Each comparison also demands the exact type CuPy gives (np.dtype, tuple, int): the
    # gate may decline a value the Python check accepts, never the reverse.
    register = program.register(source)
    program.ops.append(("type", register, spec.type))
    dtype = np.dtype(spec.dtype)
    program.ops.append(("eq", program.register(AttrSource(source, "dtype")), type(dtype), dtype))
    _tuple_ops(program, AttrSource(source, "shape"), spec.shape)
    _tuple_ops(program, AttrSource(source, "strides"), spec.strides)
    if spec.device_id is not None:
        device_id = program.register(AttrSource(AttrSource(source, "device"), "id"))
        program.ops.append(("eq", device_id, int, spec.device_id))
    program.attribute_arrays.add(register)


def _tuple_ops(program: _Program, source: Source, expected: tuple[int | None, ...]) -> None:
    # As `check._tuple_clause`: the whole tuple, or its length and each known entry.
    register = program.register(source)
    if all(item is not None for item in expected):
        program.ops.append(("eq", register, tuple, expected))
        return
    program.ops.append(("len", register, len(expected)))
    for index, item in enumerate(expected):
        if item is not None:
            program.ops.append(("eq", program.register(ItemSource(source, index)), int, item))


def _relation_op(program: _Program, guard: Guard) -> None:
    try:
        tree = ast.parse(guard.expected.text, mode="eval").body
    except SyntaxError as error:
        raise GateRefusedError(f"relation {guard.expected.text!r}") from error
    if not isinstance(tree, ast.Compare):
        raise GateRefusedError(f"relation {guard.expected.text!r} is no comparison")
    left = _integers(program, tree.left)
    for operator, operand in zip(tree.ops, tree.comparators, strict=True):
        right = _integers(program, operand)
        name = _COMPARISONS.get(type(operator))
        if name is None:
            raise GateRefusedError(f"comparison {type(operator).__name__}")
        program.ops.append(("rel", name, left, right))
        left = right


_COMPARISONS: dict[type[ast.cmpop], str] = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
}
_OPERATORS: dict[type[ast.operator], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.FloorDiv: "//",
    ast.Mod: "%",
}


def _integers(program: _Program, node: ast.expr) -> tuple[tuple[Any, ...], ...]:
    # An integer expression as the gate's stack steps: constants, array sizes, exact ints.
    constant = _constant(node)
    if constant is not None:
        if not _INT64_MIN <= constant <= _INT64_MAX:
            raise GateRefusedError(f"constant {constant} is no 64-bit integer")
        return (("const", constant),)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return (*_integers(program, node.operand), ("neg",))
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left = _integers(program, node.left)
        right = _integers(program, node.right)
        return (*left, *right, (_OPERATORS[type(node.op)],))
    size = _array_size(node)
    if size is not None:
        array, attribute, axis = size
        register = program.registers.get(LocalSource(array))
        if register is not None and register in program.arrays:
            return ((_ARRAY_TERMS[attribute], register, axis),)
        if register is not None and register in program.attribute_arrays:
            item = ItemSource(AttrSource(LocalSource(array), attribute), axis)
            return (("int", program.register(item)),)
        raise GateRefusedError(f"a size of {array!r}, which no array guard checks first")
    local = _local_name(node)
    if local is not None:
        return (("int", program.register(LocalSource(local))),)
    raise GateRefusedError(f"relation term {ast.unparse(node)!r}")


_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1


def _constant(node: ast.expr) -> int | None:
    # Integer arithmetic of literals, folded with Python's own ints (`-9223372036854775808`
    # is the negation of a literal past int64).
    if isinstance(node, ast.Constant):
        return node.value if type(node.value) is int else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = _constant(node.operand)
        return None if value is None else -value
    if isinstance(node, ast.BinOp) and type(node.op) in (ast.Add, ast.Sub, ast.Mult):
        left, right = _constant(node.left), _constant(node.right)
        if left is None or right is None:
            return None
        if isinstance(node.op, ast.Add):
            return left + right
        return left - right if isinstance(node.op, ast.Sub) else left * right
    return None


def _local_name(node: ast.expr) -> str | None:
    # `L['x']`
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and node.value.id == "L"
        and isinstance(node.slice, ast.Constant)
        and type(node.slice.value) is str
    ):
        return node.slice.value
    return None


# The array attributes a relation may read, as the gate's integer steps.
_ARRAY_TERMS = {"shape": "dim", "strides": "stride"}


def _array_size(node: ast.expr) -> tuple[str, str, int] | None:
    # `L['x'].shape[k]` or `L['x'].strides[k]` (symbolic strides: any layout of a size)
    if not (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)):
        return None
    axis = node.slice.value
    attribute = node.value
    if type(axis) is not int or axis < 0 or axis >= _MAX_DIMS:
        return None
    if not (isinstance(attribute, ast.Attribute) and attribute.attr in _ARRAY_TERMS):
        return None
    local = _local_name(attribute.value)
    return None if local is None else (local, attribute.attr, axis)


# NOTE: the guard kinds a gate checks, and how; a kind missing here (DICT_KEYS) refuses.
GATE_KINDS: dict[GuardKind, Callable[[_Program, Guard], None]] = {
    GuardKind.TYPE_MATCH: _type_op,
    GuardKind.ID_MATCH: _id_op,
    GuardKind.EQUALS_MATCH: _equals_op,
    GuardKind.LENGTH_MATCH: _length_op,
    GuardKind.ARRAY_MATCH: _array_op,
    GuardKind.SHAPE_RELATION: _relation_op,
}


def gate_plan(
    guards: Sequence[Guard], inputs: Sequence[Source], parameters: Sequence[str]
) -> GatePlan:
    """The gate program checking `guards` (in `order_guards`' order) and fetching `inputs`,
    over positional `parameters` (the function's, in order).

    Raises `GateRefusedError` naming the first guard or source a gate cannot take.
    """
    program = _Program(parameters)
    for guard in order_guards(guards):
        rule = GATE_KINDS.get(guard.kind)
        if rule is None:
            raise GateRefusedError(f"guard kind {guard.kind.name}")
        rule(program, guard)
    registers = tuple(program.register(source) for source in inputs)
    return GatePlan(tuple(program.ops), registers)
