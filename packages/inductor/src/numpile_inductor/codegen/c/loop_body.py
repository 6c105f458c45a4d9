"""Scalar C for loop bodies: the loop nest of a `for_loop` node whose work is all 0-d.

A loop whose body (and the bodies of the loops nested in it) holds only 0-d work runs
as a plain C loop nest inside the generated module, as Numba compiles it: no Python
per iteration. Each body node becomes one C statement on C locals:

- NumPy ops on 0-d values (`add`, `multiply`, `sqrt`, comparisons, `where`, casts) go
  through the lowering and the C op table the kernels use, so they compute what the
  kernels compute (wrap-around, NaN handling, integer division by zero);
- `element_at` loads and `setitem_at` stores of single elements read and write array
  memory through its strides, after a bounds check that raises NumPy's `IndexError`
  ("index 7 is out of bounds for axis 0 with size 5") with the writes of earlier
  iterations kept, as eager leaves them;
- `py_binary` / `py_unary` on Python ints, floats and bools follow Python: floor
  division and `%` by Python's signs, shifts of negatives, unbounded ints. An int
  operation whose operands' bounds do not prove it fits 63 bits is checked
  (`__builtin_add_overflow` & co.); on overflow, and on a Python `ZeroDivisionError`,
  the loop *bails*: the arrays it wrote are restored from a copy taken before the loop
  (only loops that can bail take it) and the loop runs again with NumPy (the
  `for_loop` op's own implementation), which gives Python's result or error;
- carried values are C locals assigned at the end of each iteration; nested loops are
  nested C loops whose `loop_output`s are their carried locals.

`loop_function` wraps the nest in the C function the wrapper calls (arguments, the
empty range, boxing the results). A body this module cannot compile (`NotScalarLoop`: an
op without a scalar form, a slice, a carried array) stays an extern call.

    >>> writer = LoopWriter("loop_v0")  # doctest: +SKIP
    >>> emit_loop(writer, node, body, carried, bounds, bits, env)  # doctest: +SKIP
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from numpile_capture import ArrayMeta, Graph, Node, ScalarMeta, ScalarSlot, gives_scalar

from ...loop_ir import Apply, Constant, ScalarArg
from ..common import CodeBuffer
from ..numpy_scalar_rules import Check, int_range_bounds, scalar_rule
from .loop_known_bits import ForwardedMask, bit_select, forwarded_masks
from .loop_scalar_forms import quiet_compare, select_multiply, zero_one_result
from .loop_xor_maps import XorLoop, XorTerm, fold_xor_loop, xor_map_c
from .ops import c_expr, c_literal, c_type

if TYPE_CHECKING:
    from .loop_flag_typings import FlagTyping


class NotScalarLoop(Exception):  # noqa: N818 - it names the event
    """The loop's body holds work this module has no scalar C for (the reason)."""


#: Iterations of a scalar loop nest between two polls for signals (Ctrl-C).
POLL_WORK = 4096

# Python ints in the loop are C int64s. Values are tracked with a bound on their
# magnitude in bits; an operation whose result provably fits 62 bits is not checked.
_SAFE_BITS = 62
# Int arguments of the loop (bounds, invariants) are checked at entry to fit this many
# bits (else the loop runs with NumPy); loop indices then fit one more.
ENTRY_BITS = 60
# The bits the outermost loop function's int arguments are checked to fit at its entry,
# before it writes anything (else it runs with NumPy): a bound computed from them and an
# index (`k + bw + 1`) fits ENTRY_BITS unchecked, so the loop need not copy the arrays it
# writes at each call to restore them on a bail.
ARGUMENT_BITS = 56
# An array's length is at most its size in bytes, below 2**57 on every 64-bit address
# space (5-level paging).
DIM_BITS = 57

_PY_TYPES: dict[type, np.dtype[Any]] = {
    bool: np.dtype("bool"),
    int: np.dtype("int64"),
    float: np.dtype("float64"),
}


@attrs.frozen
class EntryKept:
    """Where a 0-d value of a loop body may be the very entry object of a carried local of
    the function's loop (a Python float a branch may leave as it came: capture's
    `may_hold_entry`): `owner` names that local, `flag` is a C int set exactly where the
    value is that object, so the function gives back the object itself there."""

    owner: str
    flag: str


#: The `EntryKept.owner` of a value that may still be the Python scalar the iteration gave
#: a local (`s = 0.1` per row, then an inner loop or an `if` that may keep it; see
#: loop_flag_typings.own_typing): its flag chooses the typing of the ops on it.
OWN_ENTRY = "own entry"


@attrs.define
class CValue:
    """A 0-d value of a loop body: its C expression, NumPy dtype (Python scalars: bool,
    int64, float64), its Python type when it is a Python scalar, and for ints a bound on
    its magnitude in bits."""

    text: str
    dtype: np.dtype[Any]
    python: type | None = None
    bits: int = 64
    # The same at every iteration of every loop (a C name of the function's entry).
    invariant: bool = False
    # (loop frame, c): the value is that loop's index plus the constant c.
    affine: tuple[_Frame, int] | None = None
    # Where it may be a carried local's entry object (see EntryKept).
    kept: EntryKept | None = None
    # Eager holds a NumPy scalar here, not a 0-d array (an element, a ufunc's result), so a
    # cond branch's placeholder bound to it takes NumPy's scalar math (`scalar_forms`).
    numpy_scalar: bool = False


@attrs.define(eq=False)
class _Frame:
    # One loop of the nest while its body is emitted: the C names of the least and the
    # greatest index it runs through, and the bounds conditions hoisted to its entry.
    low: str
    high: str
    conditions: list[str] = attrs.Factory(list)


@attrs.define
class CArray:
    """An array a loop body reads or writes: `{name}_d` its data, `{name}_s{d}` its
    element strides and `{name}_n{d}` its dims, in C; `argument` its position in argv."""

    name: str
    dtype: np.dtype[Any]
    ndim: int
    argument: int  # position among the function's arguments
    written: bool = False


#: What each node of a body stands for in C (`CVector`: a 1-d value, see loop_vectors).
Env = dict[Node, Any]


class LoopWriter:
    """The C of one loop nest as it is written: statements in `buf`, the arrays it uses,
    whether it can bail, the loops it is inside of (their hoisted bounds checks)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.buf = CodeBuffer(level=1)
        self.counter = 0
        self.bails = False
        # A run-time flag per local whose type holds only where an inner loop assigning it
        # ran (see `ran_flag`).
        self.ran_flags: dict[str, str] = {}
        # The `typed_if_ran` locals of the `for` loop whose iterations are being written.
        self.ran_names: tuple[str, ...] = ()
        # The graphs whose work on such a local is written both ways, the flag choosing
        # (see loop_flag_typings).
        self.flag_typings: dict[Graph, FlagTyping] = {}
        # The results (control-flow node, index) that may be the iteration's own Python
        # scalar where its ops compute on it both ways: they carry an EntryKept flag.
        self.own_results: set[tuple[Node, int]] = set()
        # The locals retyped by inner loops (`typed_if_ran`) each of which is such a result
        # wherever it is retyped: its own flag, not the ran flag, says its type.
        self.own_names: set[str] = set()
        self._unflagged_names: set[str] = set()
        self.arrays: list[CArray] = []
        self.frames: list[_Frame] = []
        self.declarations: list[str] = []
        # (cond node, k) -> the metadata of its k-th result (from its loop_output).
        self.result_metas: dict[tuple[Node, int], Any] = {}
        # Emitting the checked copy of a loop: every index is checked where it is used.
        self.checked = False
        # How many nodes that may write memory were emitted: a 1-d value computed before
        # one (loop_vectors) is not recomputed after it.
        self.stores = 0
        # The outermost loop's work counter between signal polls (see _signal_poll), while
        # its nest is written and it counts work; else None.
        self.ticks: str | None = None
        # C lines at the function's top (pointers set to NULL) and after its `done:` label
        # (freeing what the entry allocated): temporaries allocated once, at their largest.
        self.prelude: list[str] = []
        self.cleanup: list[str] = []
        # The C test of "the outermost loop's first iteration" when a break there must run
        # the loop with NumPy instead (see _emit_body), else None.
        self.first_break: str | None = None
        # C names and literals whose value is 0 or 1 (loop_scalar_forms' select multiply).
        self.zero_one: set[str] = set()
        # Whether the outermost loop may run with OpenMP (see loop_parallel): the function
        # around it numbers its labels and defines its helpers.
        self.threads = False
        # The lookup tables of folded loops (loop_xor_maps), by C type and entries: their
        # C names, declared once in the prelude (both copies of a nest read the same one).
        self.tables: dict[tuple[str, tuple[int, ...]], str] = {}
        # Whether the body uses a buffer of the function's (`scratch`): one for all
        # iterations, so its outer loop never runs on OpenMP threads.
        self.shares_scratch = False

    def ran_flag(self, name: str) -> str:
        """The C flag set where an inner loop assigning local `name` ran, its type after
        the loop right only then (the capture's loop_entry.mark_typed_if_ran): where it is
        clear, the loop gives back the local's entry object or bails to NumPy, which
        gives eager's objects (see loop_function.ran_flag_outcomes)."""
        if name not in self.ran_flags:
            self.ran_flags[name] = self.fresh("ran")
            self.declarations.append(f"    int {self.ran_flags[name]} = 0;")
        return self.ran_flags[name]

    def scratch(self) -> tuple[str, str]:
        """A growable buffer of the function (its pointer and capacity, in bytes; grown
        with `np_loop_reserve`, freed at its end), shared by every iteration."""
        pointer, capacity = self.fresh("scratch"), self.fresh("cap")
        self.prelude.append(f"    char *{pointer} = NULL;")
        self.prelude.append(f"    int64_t {capacity} = 0;")
        self.cleanup.append(f"    free({pointer});")
        self.shares_scratch = True
        return pointer, capacity

    def fresh(self, stem: str) -> str:
        self.counter += 1
        return f"{stem}{self.counter}"

    def capture(self, emit: Callable[[], None], *, deeper: int = 0) -> list[str]:
        # The lines `emit` writes, at this buffer's indentation plus `deeper` levels, kept
        # out of the buffer (for a copy of a loop placed under a condition).
        outer = self.buf
        self.buf = CodeBuffer(level=outer.level + deeper)
        try:
            emit()
            return self.buf.lines
        finally:
            self.buf = outer

    # -- values -------------------------------------------------------------------------

    def operand(self, env: Env, value: Any) -> CValue:
        if isinstance(value, Node):
            found = env.get(value)
            if not isinstance(found, CValue):
                raise NotScalarLoop(f"{value.name} is not a 0-d value here")
            return found
        if isinstance(value, np.generic) and c_type(value.dtype) is not None:
            # Before the Python types: np.float64 is a float subclass.
            text = c_literal(value.item(), value.dtype)
            if value.dtype.kind in "biu" and value in (0, 1):
                self.zero_one.add(text)
            return CValue(text, value.dtype, invariant=True)
        if isinstance(value, bool | int | float):
            kind = type(value)
            if kind is int and not -(2**62) < value < 2**62:
                raise NotScalarLoop(f"Python int constant {value} is too large")
            dtype = _PY_TYPES[kind]
            bits = int(abs(value)).bit_length() if kind is not float else 64
            text = c_literal(value, dtype)
            if kind is not float and value in (0, 1):
                self.zero_one.add(text)
            return CValue(text, dtype, kind, bits, invariant=True)
        if isinstance(value, complex):
            # A Python complex entry (`z = 0j`) of a carried NumPy complex, converted to it at
            # entry; no Python complex arithmetic runs in C (`_py_binary` refuses it).
            c128 = np.dtype("complex128")
            return CValue(c_literal(value, c128), c128, complex, 64, invariant=True)
        raise NotScalarLoop(f"operand {value!r}")

    def table(self, term: XorTerm, dtype: np.dtype[Any]) -> str:
        # The C name of a static table holding a folded loop's term's entries.
        _, entries = term.data
        key = (c_type(dtype) or "", tuple(entries))
        found = self.tables.get(key)
        if found is None:
            found = self.tables[key] = self.fresh("xor_table")
            self.prelude.append(f"    static const {key[0]} {found}[{len(entries)}] = {{")
            for row in range(0, len(entries), 8):
                values = ", ".join(f"{entry}u" for entry in entries[row : row + 8])
                self.prelude.append(f"        {values},")
            self.prelude.append("    };")
        return found

    def define(self, dtype: np.dtype[Any], text: str, stem: str = "t") -> str:
        name = self.fresh(stem)
        self.buf.writeline(f"const {c_type(dtype)} {name} = {text};")
        return name

    # -- the body -------------------------------------------------------------------------

    def body(self, graph: Graph, env: Env) -> list[CValue | None]:
        # Emit every op node of `graph`; the values of its outputs (None: unchanged).
        self.note_results(graph)
        typing = self.flag_typings.get(graph)
        # Late import: loop_flag_typings imports this module's LoopWriter.
        from .loop_flag_typings import own_typing

        own = own_typing(graph)
        if own is not None:
            if typing is not None:
                raise NotScalarLoop(
                    "it computes both on locals whose types follow whether inner loops ran "
                    "and on Python scalars a branch may keep"
                )
            typing = own
            self.own_results.update(
                (source.inputs[0], dict(source.params)["index"]) for source in own.boundaries
            )
        self._note_own_names(graph)
        if typing is None:
            self.nodes(graph.nodes, env)
        else:
            from .loop_flag_typings import emit_typed_nodes

            emit_typed_nodes(self, graph.nodes, env, typing)
        outputs = graph.output if isinstance(graph.output, tuple) else (graph.output,)
        return [self.operand(env, out) for out in outputs]

    def _note_own_names(self, graph: Graph) -> None:
        # Each local an inner loop of `graph` retypes is an own name while every such loop
        # hands it back as a flagged result (`own_results`).
        for node in graph.nodes:
            params = dict(node.params)
            if node.op is None or "typed_if_ran" not in params:
                continue
            offset = 1 if node.op.name == "for_loop" else 0
            places = params["body"].placeholders[offset : offset + params["carried"]]
            for k, place in enumerate(places):
                if place.name not in params["typed_if_ran"]:
                    continue
                if (node, k) in self.own_results:
                    self.own_names.add(place.name)
                else:
                    self._unflagged_names.add(place.name)
        self.own_names -= self._unflagged_names

    def note_results(self, graph: Graph) -> None:
        # The metadata of the results of `graph`'s conds, from their loop_outputs.
        for node in graph.nodes:
            if node.op is not None and node.op.name == "loop_output":
                source = node.inputs[0]
                if isinstance(source, Node) and source.op is not None:
                    key = (source, dict(node.params)["index"])
                    self.result_metas[key] = node.meta

    def nodes(self, nodes: list[Node], env: Env) -> None:
        # Emit each op node of `nodes` (of a graph whose results were noted) in order.
        for node in nodes:
            if node.op is None or node in env:  # in env: computed an iteration early
                continue
            self.node(node, env)

    def node(self, node: Node, env: Env) -> None:
        # Emit op node `node`, its value bound in `env`.
        assert node.op is not None
        handler = _NODE_HANDLERS.get(node.op.name, _DEFAULT_HANDLER[0])
        handler(self, node, env)
        if node.op.mutates or any(isinstance(value, Graph) for _, value in node.params):
            self.stores += 1

    def pointwise(self, node: Node, env: Env, *, elementwise: bool = False) -> CValue:
        # A 0-d NumPy op, or (`elementwise`) one element of a 1-d one whose operands `env`
        # maps to that element's values.
        meta = node.meta
        if not isinstance(meta, ArrayMeta) or not (meta.shape == () or elementwise):
            raise NotScalarLoop(f"{node.op.name if node.op else node.name} gives {meta}")
        if c_type(meta.dtype) is None:
            raise NotScalarLoop(f"{node.op.name if node.op else node.name} gives {meta}")
        # Late import: the lowering (sympy) loads only when a loop is compiled.
        from ...lowering import LOWERINGS, CannotLower, Lowered, LoweringContext

        assert node.op is not None
        fn = LOWERINGS.get(node.op.name)
        if fn is None:
            raise NotScalarLoop(f"{node.op.name} has no scalar form")
        ctx = LoweringContext(Graph())
        for value in node.input_nodes():
            found = self.operand(env, value)
            arg = ScalarArg(found.text, found.dtype)
            ctx.values[value] = Lowered((), found.dtype, _constant_loader(arg), pure_view=True)
            if found.numpy_scalar:
                ctx.numpy_scalars.add(value)
        try:
            lowered = fn(ctx, node)
        except CannotLower as reason:
            raise NotScalarLoop(f"{node.op.name}: {reason}") from reason
        if ctx.steps or lowered.loader is None:
            raise NotScalarLoop(f"{node.op.name} needs a kernel of its own")
        text, _ = self.expression(lowered.loader(()), scalar=not elementwise)
        return CValue(text, meta.dtype, numpy_scalar=not elementwise and gives_scalar(node))

    def expression(self, expr: Any, *, scalar: bool) -> tuple[str, bool]:
        # A scalar loop-IR expression (Apply, Constant, ScalarArg): one statement per Apply;
        # its C text and whether its value is 0 or 1. `scalar`: computed one element at a
        # time (the scalar forms of loop_scalar_forms), not in a loop GCC may vectorize.
        if isinstance(expr, Constant):
            zero_one = expr.dtype.kind in "biu" and expr.value in (0, 1)
            return c_literal(expr.value, expr.dtype), zero_one
        if isinstance(expr, ScalarArg):
            zero_one = expr.dtype.kind == "b" or expr.name in self.zero_one
            return f"(({c_type(expr.dtype)}){expr.name})", zero_one
        if not isinstance(expr, Apply):
            raise NotScalarLoop(f"a loop-IR value {expr}")
        values = [self.expression(arg, scalar=scalar) for arg in expr.args]
        args = [text for text, _ in values]
        flags = [flag for _, flag in values]
        dtypes = [arg.dtype for arg in expr.args]
        fn = expr.fn
        if fn == "scalar_multiply" and any(flags):
            fn = "multiply"  # NumPy scalars' product with a 0 or a 1 never overflows
        text = None
        if scalar:
            text = quiet_compare(fn, args, dtypes)
        if text is None and fn == "multiply":
            text = select_multiply(args, flags, expr.dtype)
        if text is None:
            text = c_expr(fn, args, dtypes, expr.dtype)
        name = self.define(expr.dtype, text)
        zero_one = expr.dtype.kind == "b" or zero_one_result(fn, flags)
        if zero_one:
            self.zero_one.add(name)
        return name, zero_one

    def hoisted(self, value: CValue, size: str) -> bool:
        # Whether `0 <= value < size` is checked once at the entry of an enclosing loop
        # (for all its iterations) instead of here; the loop's unchecked copy then runs
        # only when every condition holds, its checked copy otherwise.
        if self.checked or not self.frames:
            return False
        if value.affine is not None and value.affine[0] in self.frames:
            frame, offset = value.affine
            frame.conditions.append(
                f"{frame.low} + {offset} >= 0 && {frame.high} + {offset} < {size}"
            )
            return True
        if value.invariant and value.python in (int, bool):
            self.frames[0].conditions.append(f"{value.text} >= 0 && {value.text} < {size}")
            return True
        return False

    def element(self, array: CArray, index: list[CValue]) -> str:
        # The C address expression of array[index] after bounds checks.
        terms = []
        for axis, value in enumerate(index):
            if value.python not in (int, bool) and value.dtype.kind not in "iub":
                raise NotScalarLoop("a non-integer index")
            if self.hoisted(value, f"{array.name}_n{axis}"):
                terms.append(f"(int64_t){value.text} * {array.name}_s{axis}")
                continue
            name = self.fresh("ix")
            self.buf.writeline(f"int64_t {name};")
            self.buf.writeline(
                f"if (!np_loop_index((int64_t){value.text}, {array.name}_n{axis}, {axis}, "
                f"&{name})) {{ goto fail; }}",
            )
            terms.append(f"{name} * {array.name}_s{axis}")
        return f"{array.name}_d[{' + '.join(terms) or '0'}]"


def _constant_loader(arg: ScalarArg) -> Callable[[tuple[Any, ...]], ScalarArg]:
    return lambda idx: arg


def _index_values(
    writer: LoopWriter, node: Node, env: Env, scalars: tuple[Any, ...], array: CArray
) -> list[CValue]:
    # The run-time ints of an element index template, one per axis.
    template = dict(node.params)["index"]
    values = []
    for item in template:
        if isinstance(item, ScalarSlot):
            values.append(writer.operand(env, scalars[item.position]))
        elif isinstance(item, int | np.integer) and not isinstance(item, bool):
            values.append(writer.operand(env, int(item)))
        else:
            raise NotScalarLoop(f"index item {item!r} is not an int")
    if len(values) != array.ndim:
        raise NotScalarLoop("not one int per dimension")
    return values


def _array(env: Env, value: Any) -> CArray:
    found = env.get(value) if isinstance(value, Node) else None
    if not isinstance(found, CArray):
        raise NotScalarLoop("an indexed value that is no array argument of the loop")
    return found


def _element_at(writer: LoopWriter, node: Node, env: Env) -> None:
    array = _array(env, node.inputs[0])
    index = _index_values(writer, node, env, node.inputs[1:], array)
    address = writer.element(array, index)
    env[node] = CValue(writer.define(array.dtype, address), array.dtype, numpy_scalar=True)


def _setitem_at(writer: LoopWriter, node: Node, env: Env) -> None:
    array = _array(env, node.inputs[0])
    value = writer.operand(env, node.inputs[1])
    index = _index_values(writer, node, env, node.inputs[2:], array)
    if value.python is int and array.dtype.kind in "iu":
        check_in_range(writer, value, array.dtype)  # `counts[i] = c` into int8
    if value.dtype.kind == "c" and array.dtype.kind != "c":
        raise NotScalarLoop("a complex value stored into a real array (NumPy warns)")
    address = writer.element(array, index)
    cast = c_expr("cast", [value.text], [value.dtype], array.dtype)
    writer.buf.writeline(f"{address} = {cast};")
    array.written = True
    env[node] = array


def _carried_scalar(writer: LoopWriter, node: Node, env: Env) -> None:
    source = writer.operand(env, node.inputs[0])
    meta = node.meta
    assert isinstance(meta, ArrayMeta)
    if source.dtype != meta.dtype:
        text = c_expr("cast", [source.text], [source.dtype], meta.dtype)
        value = CValue(writer.define(meta.dtype, text), meta.dtype, kept=source.kept)
    else:
        value = CValue(source.text, source.dtype, kept=source.kept)
    value.numpy_scalar = True  # `carried_scalar` gives eager's NumPy scalar (`x[()]`)
    env[node] = value


# NOTE: C spells the int range check of NumPy's scalar constructors (codegen/
# numpy_scalar_rules.py) as a bail; a float's checks (truncation, float32 overflow) stay
# NumPy's, with the loop.
_C_CHECKS = frozenset({Check.INT_RANGE})
_INT64 = np.iinfo(np.int64)


def _numpy_scalar(writer: LoopWriter, node: Node, env: Env) -> None:
    # `np.int32(i)`: an int outside the target's range bails (NumPy raises OverflowError,
    # the loop's NumPy run raises it from the user's line).
    value = writer.operand(env, node.inputs[0])
    meta = node.meta
    assert isinstance(meta, ArrayMeta)
    target = meta.dtype
    rule = None if value.python is None else scalar_rule(value.python, target)
    if (
        rule is None
        or c_type(target) is None
        or (rule.check is not None and rule.check not in _C_CHECKS)
    ):
        raise NotScalarLoop(f"numpy_scalar of a Python {value.python} to {target}")
    if rule.check is Check.INT_RANGE:
        check_in_range(writer, value, target)
    text, dtype = value.text, value.dtype
    if rule.through is not None:
        text, dtype = c_expr("cast", [text], [dtype], rule.through), rule.through
    text = c_expr("cast", [text], [dtype], target)
    env[node] = CValue(writer.define(target, text), target)


def _python_number(writer: LoopWriter, node: Node, env: Env) -> None:
    # `int(v)` / `float(v)` of a NumPy value: a Python scalar local. An int() that NumPy's
    # value would make raise (NaN, infinities) or leave int64 (a Python big int) bails:
    # the loop's NumPy run raises, or carries the big int, as eager does.
    value = writer.operand(env, node.inputs[0])
    kind = dict(node.params)["kind"]
    if value.python is not None or value.dtype.kind not in "biuf":
        raise NotScalarLoop(f"python_number of {value.dtype}")
    if kind is float:
        text = f"(double)({value.text})"
        env[node] = CValue(writer.define(np.dtype("float64"), text), np.dtype("float64"), float)
        return
    bits = 63
    if value.dtype.kind == "f":
        limit = c_literal(2.0**63, np.dtype("float64"))
        writer.buf.writeline(f"if (!(fabs((double)({value.text})) < {limit})) {{ goto bail; }}")
        writer.bails = True
    elif value.dtype == np.dtype("uint64"):
        writer.buf.writeline(f"if ({value.text} > (uint64_t)INT64_MAX) {{ goto bail; }}")
        writer.bails = True
    else:
        bits = 1 if value.dtype.kind == "b" else value.dtype.itemsize * 8 - 1
    # C converts a float toward zero, as int() does.
    text = f"(int64_t)({value.text})"
    env[node] = CValue(writer.define(np.dtype("int64"), text), np.dtype("int64"), int, bits)


def check_in_range(writer: LoopWriter, value: CValue, target: np.dtype[Any]) -> None:
    """Bail where the Python int `value` lies outside integer `target`'s range (NumPy raises
    OverflowError there: the loop's NumPy run raises it from the user's line)."""
    # The loop's ints are C int64s of magnitude below 2**bits: check the bounds they may pass.
    most = min(2**value.bits - 1, int(_INT64.max))
    least, greatest = int_range_bounds(target, -most, most)
    a = f"(int64_t){value.text}"
    conditions = [f"{a} < {least}"] if least is not None else []
    conditions += [f"{a} > {greatest}"] if greatest is not None else []
    if conditions:
        writer.buf.writeline(f"if ({' || '.join(conditions)}) {{ goto bail; }}")
        writer.bails = True


def _dim(writer: LoopWriter, node: Node, env: Env) -> None:
    array = _array(env, node.inputs[0])
    axis = dict(node.params)["axis"]
    env[node] = CValue(f"{array.name}_n{axis}", np.dtype("int64"), int, DIM_BITS, True)


_INT_BINARY = {"add": "+", "sub": "-", "mul": "*"}
_OVERFLOW_BUILTIN = {"add": "__builtin_add_overflow", "sub": "__builtin_sub_overflow",
                     "mul": "__builtin_mul_overflow"}  # fmt: skip
_COMPARE = {"lt": "<", "le": "<=", "eq": "==", "ne": "!=", "gt": ">", "ge": ">="}
_BITWISE = {"and": "&", "or": "|", "xor": "^"}


def _py_binary(writer: LoopWriter, node: Node, env: Env) -> None:
    operator = dict(node.params)["operator"]
    left = writer.operand(env, node.inputs[0])
    right = writer.operand(env, node.inputs[1])
    if left.python is None or right.python is None:
        raise NotScalarLoop("py_binary on a NumPy value")
    if complex in (left.python, right.python):
        raise NotScalarLoop("Python complex arithmetic")
    meta = node.meta
    assert isinstance(meta, ScalarMeta)
    result = _PY_TYPES[meta.type]
    is_float = float in (left.python, right.python)
    if operator in _COMPARE:
        if is_float and left.python is not right.python and max(left.bits, right.bits) > 53:
            raise NotScalarLoop("an int compared with a float beyond 2**53")
        text = f"(npy_bool)({left.text} {_COMPARE[operator]} {right.text})"
        env[node] = CValue(writer.define(result, text), result, bool, 1)
        return
    if is_float:
        env[node] = _py_float(writer, operator, left, right)
        return
    a, b = f"(int64_t){left.text}", f"(int64_t){right.text}"
    bits = max(left.bits, right.bits)
    if operator in _BITWISE:
        kind = bool if meta.type is bool else int
        text = f"({a} {_BITWISE[operator]} {b})"
        env[node] = CValue(writer.define(result, text), result, kind, bits)
        return
    if operator in _INT_BINARY:
        bound = left.bits + right.bits if operator == "mul" else bits + 1
        if bound <= _SAFE_BITS:
            text = f"({a} {_INT_BINARY[operator]} {b})"
            value = CValue(writer.define(result, text), result, int, bound)
            value.affine = _affine(operator, left, right, node.inputs[1])
            value.invariant = left.invariant and right.invariant and not writer.frames
            env[node] = value
            return
        name = writer.fresh("t")
        writer.buf.writeline(f"int64_t {name};")
        writer.buf.writeline(
            f"if ({_OVERFLOW_BUILTIN[operator]}({a}, {b}, &{name})) {{ goto bail; }}"
        )
        writer.bails = True
        env[node] = CValue(name, result, int, 63)
        return
    if operator in ("floordiv", "mod"):
        if isinstance(node.inputs[1], Node) or node.inputs[1] == 0:
            writer.buf.writeline(f"if ({b} == 0) {{ goto bail; }}")
            writer.bails = True
        if operator == "floordiv" and left.bits >= 63:
            writer.buf.writeline(f"if ({a} == INT64_MIN && {b} == -1) {{ goto bail; }}")
            writer.bails = True
        helper = "np_py_floordiv" if operator == "floordiv" else "np_py_mod"
        out_bits = left.bits if operator == "floordiv" else right.bits
        text = f"{helper}({a}, {b})"
        env[node] = CValue(writer.define(result, text), result, int, out_bits)
        return
    if operator == "rshift":
        name = writer.fresh("t")
        writer.buf.writeline(f"int64_t {name};")
        writer.buf.writeline(f"if ({b} < 0) {{ goto bail; }}")
        writer.bails = True
        writer.buf.writeline(f"{name} = {b} >= 63 ? ({a} < 0 ? -1 : 0) : ({a} >> {b});")
        env[node] = CValue(name, result, int, left.bits)
        return
    if operator == "lshift":
        name = writer.fresh("t")
        writer.buf.writeline(f"int64_t {name};")
        writer.buf.writeline(
            f"if ({b} < 0 || ({a} != 0 && ({b} >= 63 || (({a} << {b}) >> {b}) != {a}))) "
            "{ goto bail; }",
        )
        writer.buf.writeline(f"{name} = {a} == 0 ? 0 : ({a} << {b});")
        writer.bails = True
        env[node] = CValue(name, result, int, 63)
        return
    if operator == "truediv":
        if max(left.bits, right.bits) > 53:
            raise NotScalarLoop("int true division beyond 2**53")
        if isinstance(node.inputs[1], Node) or node.inputs[1] == 0:
            writer.buf.writeline(f"if ({b} == 0) {{ goto bail; }}")
            writer.bails = True
        text = f"((double){a} / (double){b})"
        env[node] = CValue(writer.define(result, text), result, float)
        return
    raise NotScalarLoop(f"Python operator {operator} on ints")


def _affine(operator: str, left: CValue, right: CValue, constant: Any) -> tuple[_Frame, int] | None:
    # index + c or index - c stays an index plus a constant.
    if (
        operator in ("add", "sub")
        and left.affine is not None
        and isinstance(constant, int)
        and not isinstance(constant, bool)
        and right.invariant
    ):
        frame, offset = left.affine
        return frame, offset + (constant if operator == "add" else -constant)
    return None


def _py_float(writer: LoopWriter, operator: str, left: CValue, right: CValue) -> CValue:
    # Python converts an int operand to the nearest float, as C's conversion does.
    f64 = np.dtype("float64")
    a, b = f"(double){left.text}", f"(double){right.text}"
    if operator in ("add", "sub", "mul"):
        text = f"({a} {_INT_BINARY[operator]} {b})"
    elif operator in ("truediv", "floordiv", "mod"):
        writer.buf.writeline(f"if ({b} == 0.0) {{ goto bail; }}")
        writer.bails = True
        helper = {"truediv": None, "floordiv": "_np_floor_divide_double",
                  "mod": "_np_remainder_double"}[operator]  # fmt: skip
        text = f"({a} / {b})" if helper is None else f"{helper}({a}, {b})"
    elif operator == "pow":
        return _py_float_power(writer, a, b)
    else:
        raise NotScalarLoop(f"Python operator {operator} on floats")
    return CValue(writer.define(f64, text), f64, float)


def _py_float_power(writer: LoopWriter, a: str, b: str) -> CValue:
    # CPython's float ** is libm's `pow` (its special cases give `pow`'s values) except where
    # it raises or leaves the floats: 0.0 ** -1.0 (ZeroDivisionError), a negative base to a
    # fractional power (a complex), a result past the doubles (OverflowError) or below the
    # normal ones (glibc's ERANGE, which CPython may raise). Those bail, as NaN operands do
    # (CPython hands back the operand's own NaN): eager's body runs them.
    f64 = np.dtype("float64")
    writer.buf.writeline(
        f"if (isnan({a}) || isnan({b}) || ({a} == 0.0 && {b} < 0.0) "
        f"|| ({a} < 0.0 && {b} != floor({b}))) {{ goto bail; }}"
    )
    name = writer.define(f64, f"_np_scalar_power_double({a}, {b})")
    writer.buf.writeline(
        f"if ((isinf({name}) && isfinite({a}) && isfinite({b})) "
        f"|| fpclassify({name}) == FP_SUBNORMAL) {{ goto bail; }}"
    )
    writer.bails = True
    return CValue(name, f64, float)


def _py_unary(writer: LoopWriter, node: Node, env: Env) -> None:
    operator = dict(node.params)["operator"]
    value = writer.operand(env, node.inputs[0])
    meta = node.meta
    assert isinstance(meta, ScalarMeta)
    result = _PY_TYPES[meta.type]
    if value.python is float:
        text = {"neg": f"(-{value.text})", "abs": f"fabs({value.text})"}.get(operator)
        if text is None:
            raise NotScalarLoop(f"Python {operator} on a float")
        env[node] = CValue(writer.define(result, text), result, float)
        return
    if value.python not in (int, bool):
        raise NotScalarLoop("py_unary on a NumPy value")
    a = f"(int64_t){value.text}"
    if operator == "invert":
        env[node] = CValue(writer.define(result, f"(~{a})"), result, int, value.bits)
        return
    if operator not in ("neg", "abs"):
        raise NotScalarLoop(f"Python {operator}")
    if value.bits >= 63:
        writer.buf.writeline(f"if ({a} == INT64_MIN) {{ goto bail; }}")
        writer.bails = True
    text = f"(-{a})" if operator == "neg" else f"({a} < 0 ? -{a} : {a})"
    env[node] = CValue(writer.define(result, text), result, int, value.bits)


def _loop_output(writer: LoopWriter, node: Node, env: Env) -> None:
    loop = node.inputs[0]
    finals = env.get(loop)
    if not isinstance(finals, _Finals):
        raise NotScalarLoop("loop_output of a loop this function did not run")
    env[node] = finals.values[dict(node.params)["index"]]


@attrs.define
class _Finals:
    # The carried C locals of a nested loop, after it.
    values: list[CValue]


def _nested_loop(writer: LoopWriter, node: Node, env: Env) -> None:
    params = dict(node.params)
    body: Graph = params["body"]
    carried: int = params["carried"]
    start, stop, step = (writer.operand(env, value) for value in node.inputs[:3])
    for bound in (start, stop, step):
        if bound.python not in (int, bool):
            raise NotScalarLoop("a loop bound that is no Python int")
    bits = max(start.bits, stop.bits, step.bits)
    if bits > ENTRY_BITS:
        limit = f"(1LL << {ENTRY_BITS})"
        checks = " || ".join(
            f"{b.text} > {limit} || {b.text} < -{limit}" for b in (start, stop, step)
        )
        writer.buf.writeline(f"if ({checks}) {{ goto bail; }}")
        writer.bails = True
        bits = ENTRY_BITS
    finals = emit_loop(writer, node, body, carried, (start, stop, step), bits, env)
    env[node] = _Finals(finals)


def emit_loop(
    writer: LoopWriter,
    node: Node,
    body: Graph,
    carried: int,
    bounds: tuple[CValue, CValue, CValue],
    bits: int,
    env: Env,
) -> list[CValue]:
    """Write the C `for` over range(start, stop, step) of `node`; its carried values are C
    locals declared before it, returned (the loop's final carried values)."""
    start, stop, step = bounds
    placeholders = body.placeholders
    inner: Env = {}
    index = writer.fresh("i")
    locals_: list[CValue] = []
    for k in range(carried):
        meta = placeholders[1 + k].meta
        if isinstance(meta, ArrayMeta) and meta.shape != ():
            raise NotScalarLoop(f"a carried array ({meta})")
        init = _own_flagged(writer, (node, k), writer.operand(env, node.inputs[3 + k]))
        value = _carried_local(writer, meta, init)
        locals_.append(value)
        inner[placeholders[1 + k]] = value
    for k, value in enumerate(node.inputs[3 + carried :]):
        placeholder = placeholders[1 + carried + k]
        found = env.get(value) if isinstance(value, Node) else None
        if isinstance(found, CArray | CValue):
            inner[placeholder] = found
        else:
            inner[placeholder] = writer.operand(env, value)
    # A local that may be its entry object (EntryKept) keeps its flag in the plain loop.
    plain = any(local.kept is not None for local in locals_)
    fold = None if plain else _foldable(node, body, carried)
    if fold is not None:
        _emit_folded(writer, fold, locals_)
        return locals_
    outermost = not writer.frames
    forwards = [] if outermost and writer.threads else forwarded_masks(body, carried)
    forwarded = [(fm, _forward_start(writer, fm, locals_[fm.carried])) for fm in forwards]
    constant_step = _literal_value(step.text)
    if constant_step is None:
        condition = f"({step.text} > 0 ? {index} < {stop.text} : {index} > {stop.text})"
        writer.buf.writeline(f"if ({step.text} == 0) {{")
        with writer.buf.indent():
            writer.buf.writeline(
                'PyErr_SetString(PyExc_ValueError, "range() arg 3 must not be zero");'
            )
            writer.buf.writeline("goto fail;")
        writer.buf.writeline("}")
    elif constant_step == 0:
        raise NotScalarLoop("range() with a constant step of 0")
    else:
        condition = f"{index} < {stop.text}" if constant_step > 0 else f"{index} > {stop.text}"
    frame = _Frame(writer.fresh("lo"), writer.fresh("hi"))
    a, b, c = start.text, stop.text, step.text
    if constant_step == 1:
        low, high = a, f"{b} - 1"
    else:
        last = f"{a} + (({b} - {a} - ({c} > 0 ? 1 : -1)) / {c}) * {c}"
        low, high = f"({c} > 0 ? {a} : {last})", f"({c} > 0 ? {last} : {a})"
    writer.buf.writeline(f"const int64_t {frame.low} = {low};")
    writer.buf.writeline(f"const int64_t {frame.high} = {high};")
    head = f"for (int64_t {index} = {a}; {condition}; {index} += {c}) {{"
    # Late import: loop_parallel imports this module's CArray.
    from .loop_parallel import independent_iterations, parallel_nest

    threads = outermost and writer.threads
    parallel = threads and constant_step is not None and not plain and independent_iterations(node)
    chunk = None
    breaks = bool(dict(node.params).get("breaks"))
    if outermost and not parallel and not breaks and constant_step is not None:
        chunk = _poll_chunk(body, constant_step)
    if chunk is not None and constant_step is not None:
        head = _chunked_head(writer, index, (a, b), constant_step, chunk)
    elif not writer.frames:
        head += _signal_poll(writer, body)
    elif writer.ticks is not None:
        # An inner loop's work counts towards the outermost loop's next poll (its index
        # range: at least its trip count).
        lo, hi = frame.low, frame.high
        writer.buf.writeline(f"{writer.ticks} += {hi} >= {lo} ? (uint64_t)({hi} - {lo}) + 1 : 0;")
    params = dict(node.params)
    if not writer.frames and params.get("breaks") and params.get("first") is not None:
        writer.first_break = f"{index} == {a}"
    writer.ran_names = tuple(params.get("typed_if_ran", ()))
    inner[placeholders[0]] = CValue(index, np.dtype("int64"), int, bits + 1, affine=(frame, 0))
    writer.frames.append(frame)
    try:
        unchecked = None
        if outermost and not parallel and constant_step is not None and not forwarded and not plain:
            unchecked = _lanes(writer, node, inner, (a, b, constant_step))
        if unchecked is None:
            unchecked = writer.capture(
                lambda: _emit_iterations(writer, head, body, inner, locals_, forwarded)
            )
        if parallel and constant_step is not None and not writer.shares_scratch:
            trips = f"({frame.high} - {frame.low}) / {abs(constant_step)} + 1"
            unchecked, bails = parallel_nest(unchecked, writer.arrays, trips)
            writer.bails = writer.bails or bails
        copy = None
        if frame.conditions:
            # Two copies: without the bounds checks hoisted here when they all hold (each
            # index in range at every iteration), else with every check where eager makes it.
            checked = writer.checked
            writer.checked = True
            try:
                copy = writer.capture(
                    lambda: _emit_iterations(writer, head, body, inner, locals_, forwarded),
                    deeper=1,
                )
            finally:
                writer.checked = checked
    finally:
        writer.frames.pop()
        if not writer.frames:
            writer.ticks = None
    if copy is None:
        writer.buf.splice(unchecked)
        return locals_
    conditions = " && ".join(f"({cond})" for cond in dict.fromkeys(frame.conditions))
    writer.buf.writeline(f"if (NP_LIKELY({conditions})) {{")  # LOOP_HELPERS' macro
    writer.buf.splice(CodeBuffer.UNIT + line for line in unchecked)
    writer.buf.writeline("} else {")
    writer.buf.splice(copy)
    writer.buf.writeline("}")
    return locals_


def _lanes(
    writer: LoopWriter, node: Node, inner: Env, bounds: tuple[str, str, int]
) -> list[str] | None:
    # The fast copy of an outermost loop of escape loops as lanes (loop_lanes), or None.
    # Late import: loop_lanes imports this module.
    from .loop_lanes import emit_lanes, lanes_shape

    if _holds_array_work(dict(node.params)["body"]):
        return None  # a 1-d temporary's buffer is one for the whole nest, not one a lane
    shape = lanes_shape(node)
    return None if shape is None else emit_lanes(writer, shape, inner, bounds)


def _foldable(node: Node, body: Graph, carried: int) -> XorLoop | None:
    # The loop as one step of bit operations (loop_xor_maps), when its trip count is a
    # constant and the folded step runs fewer operations than the loop.
    params = dict(node.params)
    if params.get("breaks") or params.get("first") is not None:
        return None
    trips = _constant_trips(node)
    if trips is None:
        return None
    fold = fold_xor_loop(body, carried, trips)
    if fold is None or fold.folded_ops() > fold.serial_ops:
        return None
    return fold


def _emit_folded(writer: LoopWriter, fold: XorLoop, locals_: list[CValue]) -> None:
    # The carried locals' final values, all computed from their initial ones.
    writer.buf.writeline("/* a loop folded to one step of bit operations (loop_xor_maps) */")
    inputs = [local.text for local in locals_]
    unsigned = np.dtype(f"uint{fold.dtype.itemsize * 8}")
    news = []
    for xmap in fold.maps:
        text = xor_map_c(xmap, inputs, fold.dtype, lambda term: writer.table(term, unsigned))
        news.append(writer.define(fold.dtype, text))
    for local, new in zip(locals_, news, strict=True):
        writer.buf.writeline(f"{local.text} = {new};")


def _signal_poll(writer: LoopWriter, body: Graph) -> str:
    # Ctrl-C: the outermost loop runs pending signal handlers (a few nanoseconds with the GIL
    # held) before each iteration when its nest holds array work, else once per POLL_WORK
    # iterations of the nest's loops (`writer.ticks` counts them; inner loops add theirs).
    # A poll per outer iteration of a short inner loop cost Mandelbrot's escape loop 4 %.
    if _holds_array_work(body):
        return "\nif (PyErr_CheckSignals() < 0) { goto fail; }"
    ticks = writer.fresh("ticks")
    writer.buf.writeline(f"uint64_t {ticks} = 0;")
    writer.ticks = ticks
    return (
        f"\nif (++{ticks} >= {POLL_WORK}u) {{\n"
        f"{CodeBuffer.UNIT}{ticks} = 0;\n"
        f"{CodeBuffer.UNIT}if (PyErr_CheckSignals() < 0) {{ goto fail; }}\n"
        "}"
    )


def _poll_chunk(body: Graph, step: int) -> int | None:
    # Iterations of an outermost loop with body `body` between two polls for signals when
    # every iteration does the same known work, else None (the nest counts its work).
    work = _static_work(body)
    if work is None or abs(step) > _MAX_CHUNKED_STEP:
        return None
    return max(1, POLL_WORK // work)


def _static_work(body: Graph) -> int | None:
    # Iterations of loops that one iteration of a loop with body `body` runs, itself and
    # the loops nested in it (what `_signal_poll`'s counter counts), when that is the same
    # at every iteration: None for a `while`, a bound known only at run time, array work.
    if _holds_array_work(body):
        return None
    work = 1
    for node in body.nodes:
        if node.op is None:
            continue
        params = dict(node.params)
        if node.op.name == "while_loop":
            return None
        if node.op.name == "for_loop":
            trips = _constant_trips(node)
            inner = _static_work(params["body"])
            if trips is None or inner is None:
                return None
            work += trips * inner
            continue
        # A `cond`: the work of its costlier branch (a branch is no loop iteration).
        branches = [_static_work(value) for value in params.values() if isinstance(value, Graph)]
        if any(branch is None for branch in branches):
            return None
        work += max((branch - 1 for branch in branches if branch is not None), default=0)
    return work


def _constant_trips(node: Node) -> int | None:
    # The trip count of `for_loop` node `node` when its start, stop and step are constants.
    bounds = node.inputs[:3]
    if not all(isinstance(value, int | np.integer) for value in bounds):
        return None
    start, stop, step = (int(value) for value in bounds)
    return len(range(start, stop, step)) if step != 0 else None


# Larger constant steps are not chunked: `step * chunk` must stay far from int64's limits.
_MAX_CHUNKED_STEP = 1 << 20


def _chunked_head(
    writer: LoopWriter, index: str, bounds: tuple[str, str], step: int, chunk: int
) -> str:
    # The outermost loop as chunks of `chunk` iterations, a poll for signals before each:
    # the iterations run with no work counter (Ctrl-C is still seen every POLL_WORK
    # iterations of the nest's loops), which is what lets the C compiler unroll or
    # vectorize the loop. A chunk's first index is an index of the range (start + k*step).
    start, stop = bounds
    outer, end = writer.fresh("chunk"), writer.fresh("end")
    stride = f"((int64_t){step * chunk}LL)"
    more = "<" if step > 0 else ">"
    nearer = f"{outer} + {stride} {more} {stop} ? {outer} + {stride} : {stop}"
    return "\n".join(
        [
            f"for (int64_t {outer} = {start}; {outer} {more} {stop}; {outer} += {stride}) {{",
            "if (PyErr_CheckSignals() < 0) { goto fail; }",
            f"const int64_t {end} = {nearer};",
            f"for (int64_t {index} = {outer}; {index} {more} {end}; {index} += {step}) {{",
        ]
    )


# Ops of one element whose node stands for the whole array (the store's result).
_ELEMENT_OPS = frozenset({"setitem_at", "setitem"})


def _holds_array_work(body: Graph) -> bool:
    # Whether `body` or a body nested in it computes a value that is not 0-d.
    for node in body.nodes:
        if node.op is None:
            continue
        one_element = node.op.name in _ELEMENT_OPS and _stores_one_element(node)
        if isinstance(node.meta, ArrayMeta) and node.meta.shape != () and not one_element:
            return True
        if any(isinstance(value, Graph) and _holds_array_work(value) for _, value in node.params):
            return True
    return False


def _stores_one_element(node: Node) -> bool:
    # A store through an index template of one int per axis (`A[i, j] = v`).
    meta = node.inputs[0].meta if isinstance(node.inputs[0], Node) else None
    template = dict(node.params).get("index")
    if not isinstance(meta, ArrayMeta) or not isinstance(template, tuple):
        return False
    ints = [item for item in template if isinstance(item, ScalarSlot | int | np.integer)]
    return len(ints) == len(template) == len(meta.shape)


# A forwarded bit test (loop_known_bits) and the C locals holding its cone's values.
_Forwarded = tuple[ForwardedMask, list[CValue]]


def _forward_cone(writer: LoopWriter, fm: ForwardedMask, value: CValue) -> list[CValue]:
    # The cone of `fm` computed from `value & K` (`value`: the carried value, or the source).
    dtype = fm.mask.meta.dtype  # type: ignore[union-attr]
    literal = c_literal(fm.constant, dtype)
    text = c_expr("bitwise_and", [value.text, literal], [value.dtype, dtype], dtype)
    mask = writer.define(dtype, text)
    if fm.constant in (0, 1):
        writer.zero_one.add(mask)
    env: Env = {fm.mask: CValue(mask, dtype)}
    for node in fm.cone[1:]:
        assert node.op is not None
        _NODE_HANDLERS.get(node.op.name, _DEFAULT_HANDLER[0])(writer, node, env)
    return [env[node] for node in fm.cone]


def _sign_mask(base: CValue, bit: int, value: int) -> str:
    # `value` where bit `bit` of `base` is set, else 0: the bit shifted into the sign and
    # shifted back arithmetically (all ones or zero), and `value` masked with it.
    width = base.dtype.itemsize * 8
    unsigned = c_type(base.dtype)
    signed = c_type(np.dtype(f"int{width}"))
    literal = c_literal(value, base.dtype)
    moved = f"({unsigned})((({unsigned}){base.text}) << {width - 1 - bit})"
    return f"(({unsigned})((({signed}){moved}) >> {width - 1}) & {literal})"


def _forward_start(writer: LoopWriter, fm: ForwardedMask, init: CValue) -> list[CValue]:
    # Before the loop: the cone of the first iteration, in C locals the iterations update.
    locals_ = []
    for value in _forward_cone(writer, fm, init):
        name = writer.fresh("f")
        writer.buf.writeline(f"{c_type(value.dtype)} {name} = {value.text};")
        if value.text in writer.zero_one:
            writer.zero_one.add(name)
        locals_.append(CValue(name, value.dtype))
    return locals_


def _emit_iterations(
    writer: LoopWriter,
    head: str,
    body: Graph,
    inner: Env,
    locals_: list[CValue],
    forwarded: list[_Forwarded],
) -> None:
    # The `for` statement(s) around one iteration: `head`'s lines, each line that ends in
    # `{` opening a block and each `}` closing one; the blocks still open close after it.
    opened = 0
    for line in head.split("\n"):
        line = line.strip()
        if line.startswith("}"):
            opened -= 1
        writer.buf.writeline(CodeBuffer.UNIT * opened + line)
        if line.endswith("{"):
            opened += 1
    with writer.buf.indent(opened):
        _emit_body(writer, body, inner, locals_, forwarded)
    for level in reversed(range(opened)):
        writer.buf.writeline(CodeBuffer.UNIT * level + "}")


def _emit_body(
    writer: LoopWriter,
    body: Graph,
    inner: Env,
    locals_: list[CValue],
    forwarded: list[_Forwarded],
) -> None:
    # One iteration: the body's statements, then the carried locals' new values (and the
    # forwarded bit tests' values for the next iteration, from their sources).
    placeholders = body.placeholders
    first_break, writer.first_break = writer.first_break, None  # this body's, not inner ones'
    ran_names, writer.ran_names = writer.ran_names, ()
    env = dict(inner)
    for fm, cone_locals in forwarded:
        env.update(zip(fm.cone, cone_locals, strict=True))
    outputs: list[CValue | None] = writer.body(body, env)
    writer.first_break = first_break
    writer.ran_names = ran_names
    for fm, cone_locals in forwarded:
        source = env[fm.source]
        assert isinstance(source, CValue)
        news = _forward_cone(writer, fm, source)
        select = bit_select(fm)
        if select is not None:
            bit, value, base = select
            found = source if base is None else env.get(base)
            if isinstance(found, CValue):
                news[1] = CValue(_sign_mask(found, bit, value), source.dtype)
        for local, forward in zip(cone_locals, news, strict=True):
            writer.buf.writeline(f"{local.text} = {forward.text};")
    stop_flag = None
    if len(outputs) == len(locals_) + 1:
        # A body that breaks returns its stop flag last (numpile_capture.loop_exit): read
        # before the carried locals change, tested after they hold this iteration's values.
        flag = outputs.pop()
        assert flag is not None
        stop_flag = writer.fresh("brk")
        writer.buf.writeline(f"const int {stop_flag} = !!({flag.text});")
        if first_break is not None:
            # A break in the first iteration, which ran on Python scalars in eager: the
            # carried values it left untouched are Python scalars there, not C's NumPy
            # ones; that one iteration runs again with NumPy (its writes undone first).
            writer.buf.writeline(f"if ({stop_flag} && {first_break}) {{ goto bail; }}")
            writer.bails = True
    for name in ran_names:
        # An iteration that did not break assigned the local (see `LoopWriter.ran_flag`).
        done = "1" if stop_flag is None else f"!{stop_flag}"
        writer.buf.writeline(f"{writer.ran_flag(name)} |= {done};")
    if len(outputs) != len(locals_):
        raise NotScalarLoop("the body's outputs are not its carried values")
    outs = body.output if isinstance(body.output, tuple) else (body.output,)
    _read_before_assigning(writer, outputs, locals_)
    for k, (local, new) in enumerate(zip(locals_, outputs, strict=True)):
        if outs[k] is placeholders[1 + k]:
            continue
        assert new is not None
        cast = c_expr("cast", [new.text], [new.dtype], local.dtype)
        writer.buf.writeline(f"{local.text} = {cast};")
    _assign_kept(writer, outputs, locals_)
    if stop_flag is not None:
        writer.buf.writeline(f"if ({stop_flag}) {{ break; }}")


def _read_before_assigning(
    writer: LoopWriter, news: list[CValue | None], locals_: list[CValue]
) -> None:
    # The carried locals take their new values one after another, while Python's tuple
    # assignment (`a, b = b, a % b`) reads every value first: a new value whose C text
    # reads another carried local (as the local itself, or through a `carried_scalar` or
    # an expression that kept its name) is copied before any local is assigned.
    for k, new in enumerate(news):
        if new is None:
            continue
        others = [local.text for j, local in enumerate(locals_) if j != k]
        if any(re.search(rf"\b{re.escape(name)}\b", new.text) for name in others):
            copy = writer.define(new.dtype, new.text)
            news[k] = CValue(copy, new.dtype, new.python, new.bits, kept=new.kept)


def _own_flagged(writer: LoopWriter, result: tuple[Node, int], value: Any) -> Any:
    # A Python scalar that `result` may hand back as it is (see OWN_ENTRY), flagged so.
    if result not in writer.own_results or not isinstance(value, CValue):
        return value
    if value.kept is not None or value.python is None:
        return value
    return attrs.evolve(value, kept=EntryKept(OWN_ENTRY, "1"))


def _assign_kept(writer: LoopWriter, news: list[CValue | None], locals_: list[CValue]) -> None:
    # Each carried local's entry flag (see EntryKept) from its new value's: 0 where the
    # iteration assigned it another object. An entry object that may leave the loop as
    # another local is left to NumPy. The iteration's own Python scalar (OWN_ENTRY) left
    # in a local of the enclosing loop is read by no code (capture's own_entries).
    flags = {local.kept.flag for local in locals_ if local.kept is not None}
    for local, new in zip(locals_, news, strict=True):
        kept = None if new is None else new.kept
        own = local.kept
        if kept is not None and kept.owner == OWN_ENTRY and (own is None or own.owner != OWN_ENTRY):
            kept = None
        if kept is not None and (
            own is None or kept.owner != own.owner or kept.flag in flags - {own.flag}
        ):
            raise NotScalarLoop("a carried local may leave the loop as another's entry object")
        if own is not None and (kept is None or kept.flag != own.flag):
            writer.buf.writeline(f"{own.flag} = {0 if kept is None else kept.flag};")


def _literal_value(text: str) -> int | None:
    # The value of an int literal as c_literal spells it ("((int64_t)1LL)").
    inner = text.replace("(int64_t)", "").strip("()").removesuffix("LL")
    try:
        return int(inner)
    except ValueError:
        return None


def _carried_local(
    writer: LoopWriter, meta: Any, init: CValue, *, at_entry: bool = False
) -> CValue:
    if isinstance(meta, ScalarMeta):
        if meta.type not in _PY_TYPES:
            raise NotScalarLoop(f"a carried {meta.type.__name__}")
        dtype = _PY_TYPES[meta.type]
        python: type | None = meta.type
        bits = 63 if meta.type is int else (1 if meta.type is bool else 64)
        if meta.type is int and init.python not in (int, bool):
            raise NotScalarLoop("a carried Python int that starts as a NumPy value")
    elif isinstance(meta, ArrayMeta) and meta.shape == () and c_type(meta.dtype) is not None:
        dtype = meta.dtype
        python = None
        bits = 64
    else:
        raise NotScalarLoop(f"a carried {meta}")
    name = writer.fresh("c")
    cast = c_expr("cast", [init.text], [init.dtype], dtype)
    kept = None if init.kept is None else EntryKept(init.kept.owner, writer.fresh("kept"))
    lines = [(c_type(dtype), name, cast)]
    if init.kept is not None and kept is not None:
        lines.append(("int", kept.flag, init.kept.flag))
    for ct, local, value in lines:
        if writer.frames and not at_entry:
            writer.buf.writeline(f"{ct} {local} = {value};")
        else:  # the outermost loop's (read after the nest) or a lane's: declared at entry
            writer.declarations.append(f"    {ct} {local};")
            writer.buf.writeline(f"{local} = {value};")
    return CValue(name, dtype, python, bits, kept=kept)


def _scalar_type(meta: Any) -> tuple[np.dtype[Any], type | None, int]:
    # The C dtype, Python type and bound in bits of a 0-d value of `meta`.
    if isinstance(meta, ScalarMeta) and meta.type in _PY_TYPES:
        bits = 63 if meta.type is int else (1 if meta.type is bool else 64)
        return _PY_TYPES[meta.type], meta.type, bits
    if isinstance(meta, ArrayMeta) and meta.shape == () and c_type(meta.dtype) is not None:
        return meta.dtype, None, 64
    raise NotScalarLoop(f"a value {meta} is not 0-d")


def _assign_outputs(
    writer: LoopWriter, outputs: list[CValue | None], targets: list[CValue]
) -> None:
    for target, value in zip(targets, outputs, strict=True):
        assert value is not None
        cast = c_expr("cast", [value.text], [value.dtype], target.dtype)
        writer.buf.writeline(f"{target.text} = {cast};")


def _cond(writer: LoopWriter, node: Node, env: Env) -> None:
    # `if` on a run-time value: both branches as C blocks assigning the results.
    params = dict(node.params)
    branches: tuple[Graph, Graph] = (params["then_branch"], params["else_branch"])
    pred = writer.operand(env, node.inputs[0])
    count = len(branches[0].output) if isinstance(branches[0].output, tuple) else 1
    results = []
    for k in range(count):
        meta = writer.result_metas.get((node, k))
        if meta is None:
            raise NotScalarLoop("a cond result without its loop_output")
        dtype, python, bits = _scalar_type(meta)
        name = writer.fresh("r")
        writer.buf.writeline(f"{c_type(dtype)} {name};")
        results.append(CValue(name, dtype, python, bits))
    assigned: list[list[CValue | None]] = []
    at = len(writer.buf.lines)
    kept: dict[int, EntryKept] = {}
    for position, branch in enumerate(branches):
        writer.buf.writeline(f"if ({pred.text}) {{" if position == 0 else "} else {")
        inner = _inner_env(writer, env, branch.placeholders, node.inputs[1:])
        with writer.buf.indent():
            outputs = writer.body(branch, inner)
            outputs = [_own_flagged(writer, (node, k), v) for k, v in enumerate(outputs)]
            _assign_outputs(writer, outputs, results)
            _assign_kept_results(writer, outputs, kept)
        assigned.append(outputs)
    writer.buf.writeline("}")
    for k, result in enumerate(results):
        # A Python int result is bounded as the branches' values are (a clamp `hi = n`
        # bounds a loop without an overflow check, so without a bail).
        values = [outputs[k] for outputs in assigned]
        if result.python is int and all(v is not None and v.python in (int, bool) for v in values):
            result.bits = min(result.bits, max(v.bits for v in values if v is not None))
    # A result a branch may hand back as an entry object has a flag of its own, clear
    # where the branch taken computed it.
    writer.buf.lines[at:at] = [f"{writer.buf.prefix}int {e.flag} = 0;" for e in kept.values()]
    for k, entry in kept.items():
        results[k] = attrs.evolve(results[k], kept=entry)
    env[node] = _Finals(results)


def _assign_kept_results(
    writer: LoopWriter, outputs: list[CValue | None], kept: dict[int, EntryKept]
) -> None:
    # In a branch of a cond: the flag of each result it hands back as an entry object.
    for k, value in enumerate(outputs):
        if value is None or value.kept is None:
            continue
        entry = kept.setdefault(k, EntryKept(value.kept.owner, writer.fresh("kept")))
        if entry.owner != value.kept.owner:
            raise NotScalarLoop("a cond result may be the entry object of two locals")
        writer.buf.writeline(f"{entry.flag} = {value.kept.flag};")


def _inner_env(writer: LoopWriter, env: Env, placeholders: list[Node], inputs: Any) -> Env:
    # A subgraph's placeholders bound to the values the node passes it.
    inner: Env = {}
    for placeholder, value in zip(placeholders, inputs, strict=True):
        found = env.get(value) if isinstance(value, Node) else None
        inner[placeholder] = found if found is not None else writer.operand(env, value)
    return inner


def _while_loop(writer: LoopWriter, node: Node, env: Env) -> None:
    # `while` on a run-time test: carried values as C locals, the body's last output the
    # next test.
    if not writer.frames:
        raise NotScalarLoop("a while loop outside a for loop")
    state = while_start(writer, node, env)
    writer.buf.writeline(f"while ({state.going}) {{")
    with writer.buf.indent():
        while_step(writer, state)
    writer.buf.writeline("}")
    finish_while(env, state)


@attrs.define
class WhileState:
    """A `while_loop` node being written: its carried C locals, its body with the env its
    placeholders are bound in, and the C name of its "one more iteration" flag."""

    node: Node
    going: str
    locals_: list[CValue]
    inner: Env


def while_start(writer: LoopWriter, node: Node, env: Env, *, at_entry: bool = False) -> WhileState:
    """Write the C that starts `while_loop` node `node` (its carried locals set, its first
    test taken); `at_entry` declares the locals at the function's entry (a loop started
    in several places: loop_lanes)."""
    params = dict(node.params)
    body: Graph = params["body"]
    carried: int = params["carried"]
    pred = writer.operand(env, node.inputs[0])
    placeholders = body.placeholders
    locals_ = []
    for k in range(carried):
        meta = placeholders[k].meta
        if isinstance(meta, ArrayMeta) and meta.shape != ():
            raise NotScalarLoop(f"a carried array ({meta})")
        init = _own_flagged(writer, (node, k), writer.operand(env, node.inputs[1 + k]))
        locals_.append(_carried_local(writer, meta, init, at_entry=at_entry))
    inner = _inner_env(writer, env, placeholders[carried:], node.inputs[1 + carried :])
    for placeholder, local in zip(placeholders, locals_, strict=False):
        inner[placeholder] = local
    going = writer.fresh("going")
    test = f"(!!({pred.text})) == {int(params['enter_if'])}"
    if at_entry:
        writer.declarations.append(f"    int {going} = 0;")
        writer.buf.writeline(f"{going} = {test};")
    else:
        writer.buf.writeline(f"int {going} = {test};")
    for name in params.get("typed_if_ran", ()):
        writer.buf.writeline(f"{writer.ran_flag(name)} |= {going};")
    return WhileState(node, going, locals_, inner)


def while_step(writer: LoopWriter, state: WhileState) -> None:
    """Write one iteration of the `while` of `state`: its body, its next test into
    `state.going`, its carried locals' new values."""
    params = dict(state.node.params)
    body: Graph = params["body"]
    carried: int = params["carried"]
    if writer.ticks is not None:
        writer.buf.writeline(f"++{writer.ticks};")
    outputs = writer.body(body, dict(state.inner))
    if len(outputs) != carried + 1:
        raise NotScalarLoop("a while body without its test")
    new = outputs[:carried]
    _read_before_assigning(writer, new, state.locals_)
    test = outputs[carried]
    assert test is not None
    # The test first: it may read the carried values of this iteration.
    writer.buf.writeline(f"{state.going} = (!!({test.text})) == {int(params['again_if'])};")
    _assign_outputs(writer, new, state.locals_)
    _assign_kept(writer, new, state.locals_)


def finish_while(env: Env, state: WhileState) -> None:
    """Bind `state`'s node in `env` to its carried locals (what its `loop_output`s read)."""
    env[state.node] = _Finals(state.locals_)


def _pointwise(writer: LoopWriter, node: Node, env: Env) -> None:
    env[node] = writer.pointwise(node, env)


_NODE_HANDLERS: dict[str, Callable[[LoopWriter, Node, Env], None]] = {
    "cond": _cond,
    "while_loop": _while_loop,
    "element_at": _element_at,
    "element": _element_at,  # a constant index (`a[0]` in a body): the same load
    "setitem_at": _setitem_at,
    "carried_scalar": _carried_scalar,
    "numpy_scalar": _numpy_scalar,
    "python_number": _python_number,
    "dim": _dim,
    "py_binary": _py_binary,
    "py_unary": _py_unary,
    "for_loop": _nested_loop,
    "loop_output": _loop_output,
}

# NOTE: the handler of nodes without an entry above (0-d NumPy ops); loop_vectors, loaded
# below, widens it to 1-d values and adds its entries (views, reductions, in-place ops).
_DEFAULT_HANDLER: list[Callable[[LoopWriter, Node, Env], None]] = [_pointwise]

# loop_products imports loop_vectors and loop_reductions first, then widens their handlers.
from . import loop_math_calls, loop_products, loop_reductions, loop_vectors  # noqa: E402, F401 - fills the tables
