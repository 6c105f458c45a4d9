"""The C function that runs one top-level `while_loop` node whose body is 0-d work.

A `while` outside any `for` (Collatz steps, bisection, Newton iterations on scalars, a
`while` around a `for` over an array's elements) runs as one C function inside the
graph's module, as a `for_loop` does (`loop_function`): the same calling convention
(`name(argv, argc, eager, &np_fp)`), the same argument checks (else the loop runs with
NumPy through `eager`), the same checked int64 arithmetic for Python ints (a loop that
overflows restores what it wrote and runs with NumPy), and the same boxing of the final
carried values. A loop whose entry test fails gives back the initial objects themselves,
as eager does. The body's nodes are `loop_body`'s; every index into an array is checked
where it is used (a `while` has no range to hoist bounds checks to).

A first pass traced on other types (`x = 1.0` then `x = x * 0.5 + a[0]` carries a NumPy
float64 after it) runs as the body where the Python scalar converts exactly to the body's
dtype (float to float64, int to int64, bool to bool) and the first pass computes on it
as the body does on that dtype (`loop_entry_scalars`: not where a Python float meets a
float32). Otherwise (`cur = start` a Python int indexing, then `cur = nxt[cur]` an
np.int64) the first pass is emitted apart, its own graph on the Python types before the
`while` of the body's, as a `for` loop's first iteration is (`loop_function`), so C's
arithmetic is eager's from the start.

    >>> scalar_while_function(node, "loop_v0").bails  # doctest: +SKIP
    True
"""

from __future__ import annotations

from typing import Any

from numpile_capture import FIRST_ITERATION_APART, ArrayMeta, Graph, Node, ScalarMeta

from ...loop_reports import report_loop
from .loop_body import Env, LoopWriter, NotScalarLoop, _Finals, _Frame, _inner_env, _while_loop
from .loop_entry_scalars import computes_either_way
from .loop_function import (
    _EXACT_CARRY,
    LoopFunction,
    _box,
    _unpack,
    bail_restores,
    check_branch_kept_entries,
    initial_object,
    kept_entry,
    ran_flag_outcomes,
)


def scalar_while_function(node: Node, name: str) -> LoopFunction:
    """The C function `name` that runs `while_loop` node `node` (raises `NotScalarLoop`).

    Its C signature and result are `scalar_loop_function`'s: `argv` holds the node's
    inputs that are graph values (the first test, the initial carried values, the
    invariants), and it returns the tuple of final carried values.

    >>> scalar_while_function(node, "loop_v0").name  # doctest: +SKIP
    'loop_v0'
    """
    params = dict(node.params)
    body: Graph = params["body"]
    carried: int = params["carried"]
    first: Graph | None = params.get("first")
    kept = check_branch_kept_entries(node, body, carried)
    apart = first is not None and _first_pass_apart(node, body, first, carried, kept)
    if apart:
        report_loop(node, FIRST_ITERATION_APART, "it starts on other types than the body")
    writer = LoopWriter(name)
    placeholders = body.placeholders
    entry: list[str] = []
    stand_ins: list[Any] = []
    values: list[Any] = []
    initial = [initial_object(value, node.inputs) for value in node.inputs[1 : 1 + carried]]
    for position, value in enumerate(node.inputs):
        if position - 1 in kept:
            meta = placeholders[position - 1].meta
            values.append(kept_entry(writer, {}, entry, node.inputs, position, meta))
            stand_ins.append(Node(f"entry{position - 1}", None, (), (), ScalarMeta(int)))
            continue
        if not isinstance(value, Node):
            stand_ins.append(value)
            continue
        argument = sum(isinstance(v, Node) for v in node.inputs[:position])
        meta = value.meta if position == 0 else placeholders[position - 1].meta
        if apart and first is not None and 0 < position <= carried:
            meta = first.placeholders[position - 1].meta  # the first pass's Python scalar
        values.append(_unpack(writer, entry, meta, argument))
        stand_ins.append(Node(f"arg{argument}", None, (), (), ScalarMeta(int)))
    outer = Node(node.name, node.op, tuple(stand_ins), node.params, node.meta)
    env = dict(zip([s for s in stand_ins if isinstance(s, Node)], values, strict=True))
    pred = writer.operand(env, outer.inputs[0])
    enter = int(params["enter_if"])
    empty = [
        f"    if ((!!({pred.text})) != {enter}) {{",
        f"        result = PyTuple_New({carried});",
        "        if (result == NULL) { goto fail; }",
        *(f"        PyTuple_SET_ITEM(result, {k}, {item});" for k, item in enumerate(initial)),
        "        goto done;",
        "    }",
    ]
    # A loop frame for the nest (loop_body emits `while` loops inside one), with every
    # bounds check where its index is used: no range bounds them.
    writer.frames.append(_Frame(writer.fresh("lo"), writer.fresh("hi")))
    writer.checked = True
    looping = outer
    try:
        if apart:
            assert first is not None
            looping = _emit_first_pass(writer, outer, first, env)
        _while_loop(writer, looping, env)
    finally:
        writer.frames.pop()
    finals = env[looping]
    assert isinstance(finals, _Finals)
    outputs = body.output if isinstance(body.output, tuple) else (body.output,)
    boxes = [
        _box(final, out, placeholders[k], outer.inputs[1 + k], env)
        for k, (final, out) in enumerate(zip(finals.values, outputs[:carried], strict=True))
    ]
    for k in kept:
        # The entry object itself where no branch assigned the local (eager's Python float).
        flag = finals.values[k].kept
        assert flag is not None
        boxes[k] = f"({flag.flag} ? {initial[k]} : {boxes[k]})"
    names = [placeholder.name for placeholder in placeholders[:carried]]
    checks = ran_flag_outcomes(writer, node, names, boxes, initial)
    source = _function(writer, name, entry, empty, boxes, carried, checks)
    return LoopFunction(name, source, writer.bails)


def _function(
    writer: LoopWriter,
    name: str,
    entry: list[str],
    empty: list[str],
    boxes: list[str],
    n: int,
    checks: list[str],
) -> str:
    written = [array for array in writer.arrays if array.written]
    snapshots = [array for array in written if writer.bails]
    lines = [
        f"static PyObject *{name}(PyObject *const *argv, Py_ssize_t argc, PyObject *eager, "
        "int *np_fp)",
        "{",
        "    PyObject *result = NULL;",
        *writer.prelude,
        *(f"    PyObject *snap_{array.name} = NULL;" for array in snapshots),
        *entry,
        *empty,
        *(f"    if (!PyArray_ISWRITEABLE(a_{array.name})) {{ goto eager; }}" for array in written),
    ]
    for array in snapshots:
        lines.append(f"    snap_{array.name} = np_loop_snapshot(a_{array.name});")
        lines.append(f"    if (snap_{array.name} == NULL) {{ goto fail; }}")
    lines.append("    NP_FP_CLEAR();")
    lines += writer.declarations
    lines += writer.buf.lines
    lines += checks
    lines.append("    *np_fp |= NP_FP_TEST();")
    lines.append(f"    result = PyTuple_New({n});")
    lines.append("    if (result == NULL) { goto fail; }")
    for k, box in enumerate(boxes):
        lines.append("    {")
        lines.append(f"        PyObject *item = {box};")
        lines.append("        if (item == NULL) { Py_CLEAR(result); goto fail; }")
        lines.append(f"        PyTuple_SET_ITEM(result, {k}, item);")
        lines.append("    }")
    lines.append("    goto done;")
    if writer.bails:
        lines.append("bail:")
        lines.append("    NP_FP_CLEAR();")
        lines += bail_restores(snapshots)
    lines.append("eager:")
    lines.append("    result = np_loop_eager(eager, argv, argc);")
    lines.append("    goto done;")
    lines.append("fail:")
    lines.append("    result = NULL;")
    lines.append("done:")
    lines += [f"    Py_XDECREF(snap_{array.name});" for array in snapshots]
    lines += writer.cleanup
    lines.append("    return result;")
    lines.append("}")
    return "\n".join(lines)


def _first_pass_apart(node: Node, body: Graph, first: Graph, carried: int, kept: list[int]) -> bool:
    # Whether the first pass (on other types: a Python int index carried into np.int64)
    # runs apart, its own graph emitted before the `while` of the body's.
    try:
        _check_first_pass(node, body, first, carried)
    except _FirstPassDiffers:
        pass
    else:
        return False
    if kept or dict(node.params).get("typed_if_ran"):
        # Flags that would follow the entry through the first pass: not written yet.
        raise NotScalarLoop("the first pass computes otherwise on Python scalars of another type")
    first_out = first.output if isinstance(first.output, tuple) else (first.output,)
    body_out = body.output if isinstance(body.output, tuple) else (body.output,)
    for k in range(carried):
        if body_out[k] is body.placeholders[k] and first_out[k] is not first.placeholders[k]:
            # The body would give back the initial object (see `_box`), not the first's.
            raise NotScalarLoop("a carried value only the first pass assigns")
    return True


def _emit_first_pass(writer: LoopWriter, outer: Node, first: Graph, env: Env) -> Node:
    # The first pass as straight C on the initial values (the entry test passed): its
    # results, of the body's types, start the `while` that follows, whose entry test is
    # the first pass's next test. Returns that loop's node (stand-ins for those values).
    params = {key: value for key, value in outer.params if key != "first"}
    carried: int = params["carried"]
    inner = _inner_env(writer, env, first.placeholders, outer.inputs[1:])
    outputs = writer.body(first, inner)
    if len(outputs) != carried + 1:
        raise NotScalarLoop("a while first pass without its test")
    stand_ins = []
    for k, output in enumerate(outputs):
        assert output is not None
        stand_in = Node(f"{outer.name}_first{k}", None, (), (), ScalarMeta(int))
        env[stand_in] = output
        stand_ins.append(stand_in)
    params["enter_if"] = params["again_if"]
    inputs = (stand_ins[carried], *stand_ins[:carried], *outer.inputs[1 + carried :])
    return Node(outer.name, outer.op, inputs, tuple(params.items()), outer.meta)


class _FirstPassDiffers(NotScalarLoop):
    # The first pass computes otherwise on its types than the body would.
    pass


def _check_first_pass(node: Node, body: Graph, first: Graph, carried: int) -> None:
    # The first pass ran on the initial types in eager: C runs the body from the start
    # only where that gives eager's values (each initial Python scalar exact in the dtype
    # the body carries it as).
    first_out = first.output if isinstance(first.output, tuple) else (first.output,)
    body_out = body.output if isinstance(body.output, tuple) else (body.output,)
    for k in range(carried):
        if getattr(first_out[k], "meta", None) != getattr(body_out[k], "meta", None):
            raise NotScalarLoop("the first pass gives other types than the body")
        meta = body.placeholders[k].meta
        init = node.inputs[1 + k]
        if isinstance(init, Node):
            if not isinstance(init.meta, ScalarMeta):
                continue  # a NumPy value: the body's types from the start
            python = init.meta.type
        else:
            python = type(init)
        if isinstance(meta, ScalarMeta) and meta.type is python:
            continue
        if (
            isinstance(meta, ArrayMeta)
            and _EXACT_CARRY.get(python) == meta.dtype
            and computes_either_way(first, first.placeholders[k], meta.dtype)
        ):
            continue
        raise _FirstPassDiffers(
            "the first pass computes otherwise on Python scalars of another type"
        )
