"""One instruction set for 3.11, 3.12 and 3.13: the differences, normalized in one place.

The tracer reads code with the standard library's `dis`: it hides CACHE and
EXTENDED_ARG, resolves jump targets, names and constants, and gives each
instruction its source position for error messages, always matching the
running interpreter. Writing code is another matter: the resume functions of
graph breaks are generated with the PyPI `bytecode` package
(`resume_code.py`), which assembles labels, exception tables (`TryBegin` /
`TryEnd`) and line tables for each version.

What `normalized_instructions` rewrites (everything else passes through):

| raw (version)                                   | normalized                             |
| ----------------------------------------------- | -------------------------------------- |
| RESUME, NOP, CACHE, PRECALL (3.11), TO_BOOL,    | dropped                                |
| COPY_FREE_VARS, END_FOR (+ its POP_TOP in 3.13) |                                        |
| KW_NAMES names; CALL n (3.11, 3.12)             | CALL n, argval = names                 |
| LOAD_METHOD name (3.11)                         | LOAD_ATTR name, flag = method          |
| LOAD_ATTR with low bit (3.12+)                  | LOAD_ATTR name, flag = method          |
| LOAD_GLOBAL with low bit                        | LOAD_GLOBAL name, flag = push NULL     |
| LOAD_FAST_LOAD_FAST, STORE_FAST_LOAD_FAST,      | two LOAD_FAST / STORE_FAST             |
| STORE_FAST_STORE_FAST (3.13)                    |                                        |
| LOAD_FAST_CHECK, LOAD_CLOSURE                   | LOAD_FAST (cells live in the locals)   |
| POP_JUMP_{FORWARD,BACKWARD}_IF_X (3.11)         | POP_JUMP_IF_X                          |
| JUMP_FORWARD, JUMP_BACKWARD(_NO_INTERRUPT)      | JUMP                                   |
| BINARY_OP n                                     | BINARY_OP, argval = "add", "iadd", ... |
| CALL_INTRINSIC_1 n                              | CALL_INTRINSIC_1, argval = its name    |

Jump targets become indices into the normalized list. A FOR_ITER that is
exhausted pops its iterator and continues at its target (the END_FOR it
skips is gone). Instructions inside a `try` block carry `in_try`: there the
tracer keeps out of the graph any op that may raise on some data (its handler
must see the error), and the liveness analyses of graph breaks treat every
local as read.

The call layout differs too ([NULL, f] before 3.13, [f, NULL] after); the
tracer's CALL handler accepts either order, so it is not rewritten here.
"""

from __future__ import annotations

import dis
import sys
import weakref
from types import CodeType
from typing import Any

import attrs

# NOTE: BINARY_OP's argument numbering (NB_* in CPython's opcode.h), the same in 3.11-3.13.
_BINARY_OPS = (
    "add",
    "and",
    "floordiv",
    "lshift",
    "matmul",
    "mul",
    "mod",
    "or",
    "pow",
    "rshift",
    "sub",
    "truediv",
    "xor",
)

_DROPPED = frozenset(
    {"RESUME", "NOP", "CACHE", "PRECALL", "TO_BOOL", "COPY_FREE_VARS", "EXTENDED_ARG"}
)

_JUMP_RENAMES = {
    "JUMP_FORWARD": "JUMP",
    "JUMP_BACKWARD": "JUMP",
    "JUMP_BACKWARD_NO_INTERRUPT": "JUMP",
    "POP_JUMP_FORWARD_IF_TRUE": "POP_JUMP_IF_TRUE",
    "POP_JUMP_BACKWARD_IF_TRUE": "POP_JUMP_IF_TRUE",
    "POP_JUMP_FORWARD_IF_FALSE": "POP_JUMP_IF_FALSE",
    "POP_JUMP_BACKWARD_IF_FALSE": "POP_JUMP_IF_FALSE",
    "POP_JUMP_FORWARD_IF_NONE": "POP_JUMP_IF_NONE",
    "POP_JUMP_BACKWARD_IF_NONE": "POP_JUMP_IF_NONE",
    "POP_JUMP_FORWARD_IF_NOT_NONE": "POP_JUMP_IF_NOT_NONE",
    "POP_JUMP_BACKWARD_IF_NOT_NONE": "POP_JUMP_IF_NOT_NONE",
}

_SPLIT_PAIRS = {
    "LOAD_FAST_LOAD_FAST": ("LOAD_FAST", "LOAD_FAST"),
    "STORE_FAST_LOAD_FAST": ("STORE_FAST", "LOAD_FAST"),
    "STORE_FAST_STORE_FAST": ("STORE_FAST", "STORE_FAST"),
}

_PY312 = sys.version_info >= (3, 12)
_PY313 = sys.version_info >= (3, 13)


@attrs.frozen
class Instruction:
    """One normalized instruction.

    `argval` is the resolved argument (a name, a constant, an operator name,
    keyword names for CALL); `target` is the index of the jump target in the
    normalized list; `flag` is LOAD_GLOBAL's push-NULL bit or LOAD_ATTR's
    method bit; `lineno` is the user's source line (None when CPython has none).

        >>> Instruction("LOAD_FAST", "x", lineno=3).opname
        'LOAD_FAST'
    """

    opname: str
    argval: Any = None
    arg: int | None = None
    target: int | None = None
    flag: bool = False
    lineno: int | None = None
    offset: int = 0
    in_try: bool = False
    # Where an exception raised here goes: the normalized index of its handler (None: out
    # of the function). Exception edges, for the flow analyses that need them.
    handler: int | None = None


# NOTE: normalized streams are cached per code object; code objects are weakly referenced.
_CACHE: weakref.WeakKeyDictionary[CodeType, tuple[Instruction, ...]] = weakref.WeakKeyDictionary()


def normalized_instructions(code: CodeType) -> tuple[Instruction, ...]:
    """The instructions of `code` in the version-independent form described above.

    >>> ops = normalized_instructions((lambda x: x + 1).__code__)
    >>> [(i.opname, i.argval) for i in ops][1:]
    [('LOAD_CONST', 1), ('BINARY_OP', 'add'), ('RETURN_VALUE', None)]
    """
    cached = _CACHE.get(code)
    if cached is None:
        cached = _normalize(code)
        _CACHE[code] = cached
    return cached


def _protected_offsets(code: CodeType, raw: list[dis.Instruction]) -> set[int]:
    # Offsets covered by a try/except/finally or with handler (one that starts with
    # PUSH_EXC_INFO); 3.12 inlined comprehensions have cleanup-only handlers, not these.
    by_offset = {inst.offset: inst for inst in raw}
    entries = getattr(dis.Bytecode(code), "exception_entries", [])
    covered: set[int] = set()
    for entry in entries:
        handler = by_offset.get(entry.target)
        if handler is None or handler.opname != "PUSH_EXC_INFO":
            continue
        covered.update(range(entry.start, entry.end))
    return covered


def _handler_offsets(code: CodeType) -> dict[int, int]:
    # The offset of the handler each covered offset's exceptions go to (entries do not
    # overlap: CPython flattens nested blocks into disjoint ranges).
    handlers: dict[int, int] = {}
    for entry in getattr(dis.Bytecode(code), "exception_entries", []):
        for offset in range(entry.start, entry.end):
            handlers[offset] = entry.target
    return handlers


def _normalize(code: CodeType) -> tuple[Instruction, ...]:
    raw = list(dis.get_instructions(code))
    protected = _protected_offsets(code, raw)
    handlers = _handler_offsets(code)
    pending: list[tuple[dis.Instruction, Instruction]] = []
    # Offsets of dropped instructions map to the next kept one.
    offset_to_index: dict[int, int] = {}
    unresolved: list[int] = []
    kw_names: tuple[str, ...] | None = None
    last_line: int | None = code.co_firstlineno
    skip_pop_after_end_for = False
    for inst in raw:
        unresolved.append(inst.offset)
        positions = inst.positions
        if positions is not None and positions.lineno is not None:
            last_line = positions.lineno
        name = inst.opname
        if skip_pop_after_end_for and name == "POP_TOP":
            skip_pop_after_end_for = False
            continue
        skip_pop_after_end_for = False
        if name in _DROPPED:
            continue
        if name == "END_FOR":
            skip_pop_after_end_for = _PY313
            continue
        if name == "KW_NAMES":
            kw_names = code.co_consts[inst.arg] if inst.arg is not None else ()
            continue
        common = {"lineno": last_line, "offset": inst.offset, "in_try": inst.offset in protected}
        made = _rewrite(inst, kw_names, common)
        if name == "CALL":
            kw_names = None
        for offset in unresolved:
            offset_to_index[offset] = len(pending)
        unresolved = []
        for item in made:
            pending.append((inst, item))
    result = []
    for source, item in pending:
        if source.opname in _JUMP_RENAMES or _is_jump(source):
            target = offset_to_index.get(source.argval, len(pending))
            item = attrs.evolve(item, target=target)
        if source.offset in handlers:
            item = attrs.evolve(item, handler=offset_to_index.get(handlers[source.offset]))
        result.append(item)
    return tuple(result)


def _is_jump(inst: dis.Instruction) -> bool:
    return inst.opcode in dis.hasjrel or inst.opcode in dis.hasjabs


def _rewrite(
    inst: dis.Instruction, kw_names: tuple[str, ...] | None, common: dict[str, Any]
) -> list[Instruction]:
    name = inst.opname
    arg = inst.arg
    if name in _SPLIT_PAIRS:
        first, second = _SPLIT_PAIRS[name]
        left, right = inst.argval
        return [Instruction(first, left, **common), Instruction(second, right, **common)]
    if name in ("LOAD_FAST_CHECK", "LOAD_CLOSURE"):
        return [Instruction("LOAD_FAST", inst.argval, arg, **common)]
    if name in _JUMP_RENAMES:
        return [Instruction(_JUMP_RENAMES[name], inst.argval, arg, **common)]
    if name == "CALL":
        return [Instruction("CALL", kw_names or (), arg, **common)]
    if name == "LOAD_METHOD":
        return [Instruction("LOAD_ATTR", inst.argval, arg, flag=True, **common)]
    if name == "LOAD_ATTR":
        method = _PY312 and arg is not None and bool(arg & 1)
        return [Instruction("LOAD_ATTR", inst.argval, arg, flag=method, **common)]
    if name == "LOAD_GLOBAL":
        push_null = arg is not None and bool(arg & 1)
        return [Instruction("LOAD_GLOBAL", inst.argval, arg, flag=push_null, **common)]
    if name == "BINARY_OP":
        assert arg is not None
        op = _BINARY_OPS[arg % 13]
        return [Instruction("BINARY_OP", op if arg < 13 else "i" + op, arg, **common)]
    if name == "CALL_INTRINSIC_1":
        return [Instruction(name, inst.argrepr, arg, **common)]
    return [Instruction(name, inst.argval, arg, **common)]
