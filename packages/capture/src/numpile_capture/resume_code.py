"""Code objects for graph breaks: resume functions and the code that runs a breaking instruction.

Both are built with the PyPI `bytecode` library from the original function's
own instructions, so they run exactly what CPython would have run:

- a *resume function* is a copy of the original code with a prologue that
  pushes the live stack values back (from parameters `___stack0`, ...) and
  jumps to the instruction where execution continues; its other parameters
  are the live locals, by their own names. The dispatcher wraps it as a
  compiled function, so the rest of the function is captured with its own
  cache and guards.
- a *break function* takes the same kind of parameters, pushes the stack,
  runs the breaking instruction(s) copied from the original code, and at each
  place execution may continue (the next instruction, a jump target) returns
  a `TailCall` of the matching resume function with the stack and locals of
  that moment; the runner makes the call (`break_runner`), so a loop that
  breaks in every iteration does not nest one Python call per iteration.

    >>> def f(x):
    ...     print(x)
    ...     return x
    >>> site = BreakSite.at(f.__code__, 3)  # doctest: +SKIP
"""

from __future__ import annotations

import dis
import functools
import inspect
import sys
import types
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import bytecode as bc
from bytecode.instr import TryBegin, TryEnd

from .bytecode import normalized_instructions
from .capture_result import Unsupported

_PY312 = sys.version_info >= (3, 12)
_PY313 = sys.version_info >= (3, 13)

STACK_PREFIX = "___stack"

# NOTE: raw instructions that belong to no group: they only set up the frame.
_PROLOGUE = frozenset({"RESUME", "COPY_FREE_VARS", "MAKE_CELL", "NOP", "CACHE", "EXTENDED_ARG"})

_TERMINATORS = frozenset({"RAISE_VARARGS", "RETURN_VALUE", "RETURN_CONST", "RERAISE"})

_CONDITIONAL_JUMPS = frozenset(
    {
        "POP_JUMP_IF_TRUE",
        "POP_JUMP_IF_FALSE",
        "POP_JUMP_IF_NONE",
        "POP_JUMP_IF_NOT_NONE",
        "POP_JUMP_FORWARD_IF_TRUE",
        "POP_JUMP_FORWARD_IF_FALSE",
        "POP_JUMP_FORWARD_IF_NONE",
        "POP_JUMP_FORWARD_IF_NOT_NONE",
        "POP_JUMP_BACKWARD_IF_TRUE",
        "POP_JUMP_BACKWARD_IF_FALSE",
        "POP_JUMP_BACKWARD_IF_NONE",
        "POP_JUMP_BACKWARD_IF_NOT_NONE",
    }
)


def _stack_use(name: str, arg: int | None) -> tuple[int, int] | None:
    # (popped, pushed) of one raw instruction that may break; None: not resumable after it.
    n = arg or 0
    fixed: dict[str, tuple[int, int]] = {
        "KW_NAMES": (0, 0),
        "PRECALL": (0, 0),
        "TO_BOOL": (1, 1),
        "STORE_ATTR": (2, 0),
        "DELETE_ATTR": (1, 0),
        "STORE_GLOBAL": (1, 0),
        "DELETE_GLOBAL": (0, 0),
        "STORE_DEREF": (1, 0),
        "STORE_SUBSCR": (3, 0),
        "DELETE_SUBSCR": (2, 0),
        "STORE_SLICE": (4, 0),
        "BINARY_OP": (2, 1),
        "COMPARE_OP": (2, 1),
        "CONTAINS_OP": (2, 1),
        "IS_OP": (2, 1),
        "UNARY_NEGATIVE": (1, 1),
        "UNARY_POSITIVE": (1, 1),
        "UNARY_INVERT": (1, 1),
        "UNARY_NOT": (1, 1),
        "BINARY_SUBSCR": (2, 1),
        "BINARY_SLICE": (3, 1),
        "FORMAT_SIMPLE": (1, 1),
        "FORMAT_WITH_SPEC": (2, 1),
        "CONVERT_VALUE": (1, 1),
        "CALL_INTRINSIC_1": (1, 1),
        "IMPORT_NAME": (2, 1),
        "IMPORT_FROM": (0, 1),
        "LOAD_BUILD_CLASS": (0, 1),
        "LOAD_GLOBAL": (0, 1),
        "LOAD_DEREF": (0, 1),
        "LOAD_ASSERTION_ERROR": (0, 1),
        "BEFORE_WITH": (1, 2),
        "RETURN_VALUE": (1, 0),
        "RETURN_CONST": (0, 0),
        "RAISE_VARARGS": (n, 0),
    }
    if name in fixed:
        return fixed[name]
    if name in _CONDITIONAL_JUMPS:
        return (1, 0)
    if name == "CALL":
        return (n + 2, 1)
    if name == "CALL_KW":
        return (n + 3, 1)
    if name == "CALL_FUNCTION_EX":
        return (3 + (n & 1), 1)
    if name in ("BUILD_SET", "BUILD_STRING", "BUILD_TUPLE", "BUILD_LIST"):
        return (n, 1)
    if name == "BUILD_MAP":
        return (2 * n, 1)
    if name == "FORMAT_VALUE":
        return (2 if n & 0x04 else 1, 1)
    if name == "UNPACK_SEQUENCE":
        return (1, n)
    if name in ("LOAD_ATTR", "LOAD_METHOD"):
        return (1, 1)  # the method form is rewritten to an attribute load (see _copy_group)
    return None


@attrs.frozen
class Continuation:
    """Where execution continues after a break: a raw offset and the stack layout there.

    `nulls[j]` is True where stack position j holds CPython's NULL (before a callable).
    """

    offset: int
    nulls: tuple[bool, ...]


@attrs.frozen
class BreakSite:
    """A breaking instruction of `code`: the raw instructions to run and where to continue.

    `group` are the raw instructions (from `bytecode`) that make up normalized
    instruction `index`; `continuations` are the fall-through and jump
    targets, each with the stack layout there (given the layout before).
    Build one with `BreakSite.at(code, index, nulls)`, which raises
    `Unsupported` when resuming there is not possible.
    """

    code: types.CodeType
    index: int
    nulls: tuple[bool, ...]
    group: tuple[Any, ...]
    fallthrough: Continuation | None
    jump: Continuation | None
    # NOTE: where an exception raised by the group goes: the original handler (of a try or
    # with block around the break), entered with `handler_lasti` as CPython does.
    handler: Continuation | None = None
    handler_lasti: bool = False

    @classmethod
    def at(cls, code: types.CodeType, index: int, nulls: Sequence[bool]) -> BreakSite:
        """The break site at normalized instruction `index` with stack layout `nulls`.

        >>> def f(x):
        ...     print(x)
        >>> [i.name for i in BreakSite.at(f.__code__, 2, (True, False, False)).group][-1]
        'CALL'
        """
        return _make_site(code, index, tuple(nulls))


def _raw_pairs(code: types.CodeType) -> list[tuple[dis.Instruction, Any]]:
    found = _PAIRS.get(code)
    if found is not None:
        return found
    raw = [inst for inst in dis.get_instructions(code) if inst.opname != "EXTENDED_ARG"]
    abstract = [item for item in bc.Bytecode.from_code(code) if isinstance(item, bc.Instr)]
    if len(raw) != len(abstract):
        raise Unsupported("not supported yet: resuming in this code object (unaligned bytecode)")
    pairs = list(zip(raw, abstract, strict=True))
    for inst, instr in pairs:
        if instr.name != inst.opname and not instr.name.startswith(("JUMP", "POP_JUMP")):
            raise Unsupported("not supported yet: resuming in this code object (unaligned)")
    _PAIRS[code] = pairs
    return pairs


def _past_extended_args(code: types.CodeType, target: Continuation) -> Continuation:
    # A jump's target is the EXTENDED_ARG prefix of the instruction it jumps to, where that
    # instruction's argument needs one (a long `JUMP_BACKWARD`); resume at the instruction.
    offset = target.offset
    raw = code.co_code
    while offset + 1 < len(raw) and raw[offset] == dis.opmap["EXTENDED_ARG"]:
        offset += 2
    return target if offset == target.offset else attrs.evolve(target, offset=offset)


# NOTE: aligned (dis, bytecode) instruction pairs per code object, weakly keyed.
_PAIRS: weakref.WeakKeyDictionary[types.CodeType, list[tuple[dis.Instruction, Any]]] = (
    weakref.WeakKeyDictionary()
)


def _make_site(code: types.CodeType, index: int, nulls: tuple[bool, ...]) -> BreakSite:
    normalized = normalized_instructions(code)
    inst = normalized[index]
    if index + 1 < len(normalized) and normalized[index + 1].offset == inst.offset:
        raise Unsupported(f"not supported yet: resuming after {inst.opname}")
    previous = normalized[index - 1].offset if index > 0 else -1
    pairs = _raw_pairs(code)
    group = [
        (raw, instr)
        for raw, instr in pairs
        if previous < raw.offset <= inst.offset and raw.opname not in _PROLOGUE
    ]
    if not group:
        raise Unsupported(f"not supported yet: resuming after {inst.opname}")
    depth = len(nulls)
    low = depth
    after = list(nulls)
    last_raw = group[-1][0]
    if last_raw.opname == "FOR_ITER" and len(group) == 1:
        return _for_iter_site(code, index, nulls, group[0][1], pairs, last_raw)
    jump_nulls: list[bool] | None = None
    for raw, _ in group:
        use = _stack_use(raw.opname, raw.arg)
        if use is None:
            raise Unsupported(f"not supported yet: resuming after {raw.opname}")
        popped, pushed = use
        if len(after) < popped:
            raise Unsupported(f"not supported yet: resuming after {raw.opname} (stack)")
        if raw.opname in ("JUMP_IF_TRUE_OR_POP", "JUMP_IF_FALSE_OR_POP"):
            jump_nulls = list(after)
        del after[len(after) - popped :]
        low = min(low, len(after))
        after.extend([False] * pushed)
        if raw.opname in ("LOAD_ATTR", "LOAD_METHOD") and _is_method_load(raw):
            # Rewritten to `LOAD_ATTR name; PUSH_NULL` (+ SWAP before 3.13): [NULL, bound].
            after.insert(len(after) - (0 if _PY313 else 1), True)
    fallthrough = None
    if last_raw.opname not in _TERMINATORS:
        following = [raw.offset for raw, _ in pairs if raw.offset > last_raw.offset]
        if following:
            fallthrough = Continuation(following[0], tuple(after))
    jump = None
    if last_raw.opname in _CONDITIONAL_JUMPS:
        jump = Continuation(int(last_raw.argval), tuple(after))
    elif jump_nulls is not None:
        jump = Continuation(int(last_raw.argval), tuple(jump_nulls))
    elif _is_jump(last_raw):
        raise Unsupported(f"not supported yet: resuming after {last_raw.opname}")
    site = BreakSite(code, index, nulls, tuple(instr for _, instr in group), fallthrough, jump)
    return _with_handler(site, [raw.offset for raw, _ in group])


def _for_iter_site(
    code: types.CodeType,
    index: int,
    nulls: tuple[bool, ...],
    instr: Any,
    pairs: list[tuple[dis.Instruction, Any]],
    raw: dis.Instruction,
) -> BreakSite:
    # FOR_ITER on an iterator from Python: the next item continues the body (pushed on the
    # iterator), exhaustion pops the iterator and continues after the loop (after END_FOR,
    # and its POP_TOP on 3.13, which FOR_ITER skips).
    following = [item.offset for item, _ in pairs if item.offset > raw.offset]
    offsets = [item.offset for item, _ in pairs]
    names = [item.opname for item, _ in pairs]
    position = offsets.index(int(raw.argval))
    while names[position] == "END_FOR" or (
        _PY313 and names[position] == "POP_TOP" and names[position - 1] == "END_FOR"
    ):
        position += 1
    body = Continuation(following[0], (*nulls, False))
    done = Continuation(offsets[position], nulls[:-1])
    return _with_handler(BreakSite(code, index, nulls, (instr,), body, done), [raw.offset])


def _with_handler(site: BreakSite, offsets: list[int]) -> BreakSite:
    # The exception-table entry covering the group (one, as CPython's entries do not overlap).
    entries = getattr(dis.Bytecode(site.code), "exception_entries", [])
    found = {
        (entry.target, entry.depth, entry.lasti)
        for offset in offsets
        for entry in entries
        if entry.start <= offset < entry.end
    }
    if not found:
        return site
    if len(found) > 1 or any(
        not any(entry.start <= offset < entry.end for entry in entries) for offset in offsets
    ):
        raise Unsupported("not supported yet: resuming across the edge of a try block")
    ((target, depth, lasti),) = found
    if depth > len(site.nulls):
        raise Unsupported("not supported yet: resuming in this try block (stack)")
    nulls = (*site.nulls[:depth], *([False] if lasti else []), False)
    return attrs.evolve(site, handler=Continuation(target, nulls), handler_lasti=bool(lasti))


def _is_method_load(raw: dis.Instruction) -> bool:
    if raw.opname == "LOAD_METHOD":
        return True
    return raw.opname == "LOAD_ATTR" and _PY312 and bool((raw.arg or 0) & 1)


def _is_jump(raw: dis.Instruction) -> bool:
    return raw.opcode in dis.hasjrel or raw.opcode in dis.hasjabs


def stack_names(nulls: Sequence[bool]) -> list[str]:
    """Parameter names of the non-NULL stack positions.

    >>> stack_names((True, False, False))
    ['___stack1', '___stack2']
    """
    return [f"{STACK_PREFIX}{index}" for index, null in enumerate(nulls) if not null]


def _push_stack(nulls: Sequence[bool]) -> list[Any]:
    return [
        bc.Instr("PUSH_NULL") if null else bc.Instr("LOAD_FAST", f"{STACK_PREFIX}{index}")
        for index, null in enumerate(nulls)
    ]


def _configure(code: bc.Bytecode, original: types.CodeType, params: list[str], name: str) -> None:
    code.argnames = params
    code.argcount = len(params)
    code.posonlyargcount = 0
    code.kwonlyargcount = 0
    code.name = name
    if hasattr(code, "qualname"):
        code.qualname = name
    code.filename = original.co_filename
    code.first_lineno = original.co_firstlineno
    code.freevars = list(original.co_freevars)
    code.flags = bc.CompilerFlags(
        original.co_flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
    )


# NOTE: resume code objects per original code and (offset, stack layout, local names), so one
# place of one function always resumes in the same code object (and so the same code cache).
_RESUMES: weakref.WeakKeyDictionary[types.CodeType, dict[Any, types.CodeType]] = (
    weakref.WeakKeyDictionary()
)

# NOTE: resume code -> (the code it resumes, its raw offsets -> that code's raw offsets). A
# break inside a resume function resumes in a code object made from the original code, so a
# loop that breaks in every iteration keeps resuming in the same few code objects.
_ORIGINS: weakref.WeakKeyDictionary[types.CodeType, tuple[types.CodeType, dict[int, int]]] = (
    weakref.WeakKeyDictionary()
)


def _origin_offsets(
    made: types.CodeType, original: types.CodeType, inserted: int
) -> dict[int, int]:
    # `made` is `original` with `inserted` raw instructions after its RESUME: pair the rest.
    made_pairs, original_pairs = _raw_pairs(made), _raw_pairs(original)
    names = [raw.opname for raw, _ in original_pairs]
    if "RESUME" not in names or len(made_pairs) != len(original_pairs) + inserted:
        return {}
    start = names.index("RESUME") + 1
    kept = made_pairs[:start] + made_pairs[start + inserted :]
    mapping = {}
    for (raw, _), (base, _) in zip(kept, original_pairs, strict=True):
        same = raw.opname == base.opname or (_is_jump(raw) and _is_jump(base))
        if not same:
            return {}
        mapping[raw.offset] = base.offset
    return mapping


def resume_code(
    original: types.CodeType, target: Continuation, local_names: Sequence[str]
) -> types.CodeType:
    """The code of a function that continues `original` at `target`.

    Its parameters are the non-NULL stack values (`stack_names(target.nulls)`)
    followed by `local_names`.

        >>> def f(x):
        ...     print(x)
        ...     return x + 1
        >>> site = BreakSite.at(f.__code__, 2, (True, False, False))  # doctest: +SKIP
        >>> resume_code(f.__code__, site.fallthrough, ["x"]).co_varnames[:2]  # doctest: +SKIP
        ('___stack0', 'x')
    """
    target = _past_extended_args(original, target)
    origin = _ORIGINS.get(original)
    if origin is not None and target.offset in origin[1]:
        base, offsets = origin
        target = attrs.evolve(target, offset=offsets[target.offset])
        return resume_code(base, target, local_names)
    key = (target, tuple(local_names))
    per_code = _RESUMES.setdefault(original, {})
    found = per_code.get(key)
    if found is not None:
        return found
    program = bc.Bytecode.from_code(original, conserve_exception_block_stackdepth=True)
    label = bc.Label()
    placed = False
    items: list[Any] = []
    pairs = _raw_pairs(original)
    position = next((k for k, (raw, _) in enumerate(pairs) if raw.offset == target.offset), None)
    if position is None:
        raise Unsupported("not supported yet: resuming at this instruction")
    count = 0
    for item in program:
        if isinstance(item, bc.Instr):
            if count == position:
                items.append(label)
                placed = True
            count += 1
        items.append(item)
    assert placed
    entry = [*_push_stack(target.nulls), bc.Instr("JUMP_FORWARD", label)]
    insert_at = next(
        (
            i + 1
            for i, item in enumerate(items)
            if isinstance(item, bc.Instr) and item.name == "RESUME"
        ),
        0,
    )
    _strip_locations(entry, original.co_firstlineno)
    items[insert_at:insert_at] = entry
    program.clear()
    program.extend(items)
    line = _line_of(pairs, target.offset, original.co_firstlineno)
    params = [*stack_names(target.nulls), *local_names]
    _configure(program, original, params, f"{original.co_name}__resume_at_line_{line}")
    stacksize = original.co_stacksize + len(target.nulls) + 2
    made = program.to_code(stacksize=stacksize, compute_exception_stack_depths=False)
    per_code[key] = made
    _MADE[made] = _in_loop(original, target.offset)
    offsets = _origin_offsets(made, original, len(entry))
    if offsets:
        _ORIGINS[made] = (original, offsets)
    return made


# NOTE: resume code objects made here -> whether their target lies inside a loop of the code
# they resume.
_MADE: weakref.WeakKeyDictionary[types.CodeType, bool] = weakref.WeakKeyDictionary()

_JUMPS = frozenset({*dis.hasjrel, *dis.hasjabs, *getattr(dis, "hasjump", ())})


def _in_loop(code: types.CodeType, offset: int) -> bool:
    # Inside a loop: some backward jump at or after `offset` goes back to or before it.
    return any(
        inst.opcode in _JUMPS and isinstance(inst.argval, int) and inst.argval <= offset
        for inst in dis.get_instructions(code)
        if inst.offset >= offset
    )


def mark_loop_exit(code: types.CodeType) -> None:
    """Count resume function `code` as inside its loop: it continues after a loop that ran in
    Python (its FOR_ITER broke), with the values the iterations left.

        >>> mark_loop_exit((lambda: 0).__code__)
    """
    if code in _MADE:
        _MADE[code] = True


def resumes_in_loop(code: types.CodeType) -> bool:
    """Whether `code` is a resume function that continues inside a loop of its function.

    Such a function runs once per iteration of a loop that was not kept (its body breaks):
    the dispatcher compiles its int and float locals as graph inputs from the start.

        >>> resumes_in_loop((lambda: 0).__code__)
        False
    """
    return _MADE.get(code, False)


def _strip_locations(instrs: list[Any], line: int) -> None:
    for instr in instrs:
        instr.lineno = line


def _line_of(pairs: list[tuple[dis.Instruction, Any]], offset: int, default: int) -> int:
    line = default
    for raw, _ in pairs:
        positions = raw.positions
        if positions is not None and positions.lineno is not None:
            line = positions.lineno
        if raw.offset >= offset:
            return line
    return line


class TailCall:
    """`fn(*args)`, handed back by a break function for its runner to make.

    `fn` is what makes the call: a compiled resume function's `call_tail` (resolved once,
    when the break function's code is made, not per call), or a plain function. The
    runners make it inline (`result.fn(*result.args)`), one Python frame per resume.

    >>> TailCall(max, 1, 2).run()
    2
    """

    __slots__ = ("args", "fn")

    def __init__(self, fn: Callable[..., Any], *args: Any) -> None:
        self.fn = fn
        self.args = args

    def run(self) -> Any:
        """Make the call (a compiled resume function may hand back another TailCall)."""
        return self.fn(*self.args)


def tail_target(resume: Callable[..., Any]) -> Callable[..., Any]:
    """What a `TailCall` of `resume` calls: its `call_tail` if it is a compiled function
    (which hands a further break's resume call back instead of making it), else itself.

    >>> tail_target(max) is max
    True
    """
    target: Callable[..., Any] = getattr(resume, "call_tail", resume)
    return target


def _call_resume(
    resume: Callable[..., Any], nulls: Sequence[bool], locals_: list[str]
) -> list[Any]:
    # Store the stack (top first) into the stack parameters, then return TailCall(resume, ...).
    instrs: list[Any] = []
    for index in reversed(range(len(nulls))):
        instrs.append(bc.Instr("STORE_FAST", f"{STACK_PREFIX}{index}"))
    args = [bc.Instr("LOAD_FAST", name) for name in [*stack_names(nulls), *locals_]]
    count = len(args)
    make = functools.partial(TailCall, tail_target(resume))
    if _PY313:
        instrs += [bc.Instr("LOAD_CONST", make), bc.Instr("PUSH_NULL")]
    else:
        instrs += [bc.Instr("PUSH_NULL"), bc.Instr("LOAD_CONST", make)]
    instrs += args
    if not _PY312:
        instrs.append(bc.Instr("PRECALL", count))
    instrs += [bc.Instr("CALL", count), bc.Instr("RETURN_VALUE")]
    return instrs


def _copy_group(group: Sequence[Any], jump_label: bc.Label | None) -> list[Any]:
    copied: list[Any] = []
    for instr in group:
        truth_jump = instr.name in ("POP_JUMP_IF_TRUE", "POP_JUMP_IF_FALSE")
        if _PY313 and truth_jump and not (copied and copied[-1].name == "TO_BOOL"):
            # 3.13 jumps on exact bools only; COMPARE_OP's own bool conversion was not run.
            copied.append(bc.Instr("TO_BOOL", location=instr.location))
        if isinstance(instr.arg, bc.Label):
            assert jump_label is not None
            # The copied jump always goes forward, to the code that calls its resume function.
            name = instr.name.replace("_BACKWARD_", "_FORWARD_")
            copied.append(bc.Instr(name, jump_label, location=instr.location))
        elif instr.name == "LOAD_METHOD":
            copied.append(bc.Instr("LOAD_ATTR", instr.arg, location=instr.location))
            copied += [bc.Instr("PUSH_NULL"), bc.Instr("SWAP", 2)]
        elif instr.name == "LOAD_ATTR" and isinstance(instr.arg, tuple) and instr.arg[0]:
            copied.append(bc.Instr("LOAD_ATTR", (False, instr.arg[1]), location=instr.location))
            copied.append(bc.Instr("PUSH_NULL"))
            if not _PY313:
                copied.append(bc.Instr("SWAP", 2))
        else:
            copied.append(instr.copy())
    return copied


def break_code(
    site: BreakSite,
    local_names: Sequence[str],
    resume_next: Callable[..., Any] | None,
    resume_jump: Callable[..., Any] | None,
    resume_handler: Callable[..., Any] | None = None,
) -> types.CodeType:
    """The code of a function that runs the breaking instruction(s) of `site`, then resumes.

    Parameters: the non-NULL stack values before the break
    (`stack_names(site.nulls)`), then `local_names`. It returns the `TailCall`
    of the resume function to continue with (or what the instruction returns
    or raises).
    """
    original = site.code
    program = bc.Bytecode()
    if original.co_freevars:
        program.append(bc.Instr("COPY_FREE_VARS", len(original.co_freevars)))
    program.append(bc.Instr("RESUME", 0))
    jump_label = bc.Label() if site.jump is not None else None
    prologue = _push_stack(site.nulls)
    _strip_locations(prologue, original.co_firstlineno)
    program.extend(prologue)
    handler_label = None
    try_begin = None
    if site.handler is not None:
        # An exception raised by the breaking instruction goes to the original handler, run
        # in Python by `resume_handler` (the except clause, or the with block's __exit__).
        handler_label = bc.Label()
        depth = len(site.handler.nulls) - 1 - int(site.handler_lasti)
        try_begin = TryBegin(handler_label, site.handler_lasti, depth)
        program.append(try_begin)
        # NOTE: 3.13 looks up the handler of a Python callee's exception at the offset before
        # the CALL; a NOP in the region keeps that offset covered.
        program.append(bc.Instr("NOP"))
    program.extend(_copy_group(site.group, jump_label))
    if try_begin is not None:
        program.append(TryEnd(try_begin))
    if site.fallthrough is not None:
        assert resume_next is not None
        program.extend(_call_resume(resume_next, site.fallthrough.nulls, list(local_names)))
    if site.jump is not None:
        assert resume_jump is not None and jump_label is not None
        program.append(jump_label)
        if _PY312 and site.group[-1].name == "FOR_ITER":
            # Skipped by an exhausted FOR_ITER, as in the original code.
            program.append(bc.Instr("END_FOR"))
            if _PY313:
                program.append(bc.Instr("POP_TOP"))
        program.extend(_call_resume(resume_jump, site.jump.nulls, list(local_names)))
    if site.handler is not None:
        assert resume_handler is not None and handler_label is not None
        program.append(handler_label)
        program.extend(_call_resume(resume_handler, site.handler.nulls, list(local_names)))
    params = [*stack_names(site.nulls), *local_names]
    for name in stack_names([False] * (len(site.nulls) + 4)):
        if name not in params:
            params.append(name)
    program.argnames = params
    _configure(program, original, params, f"{original.co_name}__graph_break")
    program.argcount = len(stack_names(site.nulls)) + len(local_names)
    program.flags = bc.CompilerFlags(program.flags & ~(inspect.CO_GENERATOR | inspect.CO_COROUTINE))
    stacksize = len(site.nulls) + len(local_names) + 16
    return program.to_code(stacksize=stacksize, compute_exception_stack_depths=False)
