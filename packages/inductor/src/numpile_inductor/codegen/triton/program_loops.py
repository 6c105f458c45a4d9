"""Nested `for` and `while` loops inside one Triton loop program (`loop_program.py`).

A `for_loop` node in the body of a loop that runs as one Triton program becomes a `for` of
the kernel itself: its trip count is computed from its start, stop and step (Python ints
of the enclosing body, a constant step) as Python's `range` gives it, its index is
`start + t * step`. A `while_loop` node becomes a `while` of the kernel: its first test
(the node's first input) decides entry, and the body's last output, computed from the
iteration's values before the carried ones change, the next test; `and` / `or` tests come
as capture lowered them (a `cond` whose other branch gives the short-circuit value), and
an error flag raised ends the `while` (the call reruns the loop with NumPy). The carried
0-d values of both are kernel variables updated at the end of each iteration (read before
any is rebound, as Python's tuple assignment does); their `loop_output`s are those
variables after the loop. So a whole loop nest of scalar work (`crc32`'s byte and bit
loops, the row and column loops of an LU factorization, mandelbrot's escape loop per
point) is one launch.

The carried values start as the loop's widened types (as the C loop function does): a
first iteration traced on other types (`first`, NEP 50's Python scalars) computes the same
numbers, except where a Python operator of that pass may raise (`1.0 / z`), which is not
taken. An inner loop that retypes a value only where it runs (`typed_if_ran`) is taken
only when the outermost loop carries that value (it enters the program with the loop's
type, so whether the inner loop ran no longer decides it). A nested loop whose body
kernels take (array-sized rows, `D[i, :] = ...`) is marked (`kernel_loops`): one warp
walks its rows here, and past `KERNEL_ROWS` elements the loop nest runs as host loops of
kernels instead (`loop_program.py`). Not taken (the outermost loop then runs as a host
loop): a `break` in a nested `for`, a step computed at run time, non-0-d carried values,
a `while` whose body kernels take.

    >>> "for t" in loop_program_source(node, body).source  # doctest: +SKIP
    True
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from numpile_capture import Graph, Node

from ...loops import kernels_take

if TYPE_CHECKING:
    from .loop_program import Env, _ProgramWriter, _Scalar

__all__ = ["nested_loop", "nested_while", "retyped_inside"]


def nested_loop(writer: _ProgramWriter, node: Node, env: Env) -> None:
    """Write the `for_loop` `node` of a loop program's body as a `for` of the kernel."""
    # Late import: loop_program imports this module at its bottom (it fills its table).
    from .loop_program import NotDeviceLoop, _Scalar

    params = dict(node.params)
    body: Graph = params["body"]
    if kernels_take(body):
        writer.kernel_loops = True
    if params.get("breaks", False):
        raise NotDeviceLoop("a nested loop with a break")
    step = node.inputs[2]
    if type(step) is not int or step == 0:
        raise NotDeviceLoop("a nested loop whose step is computed at run time")
    start, stop = (writer.operand(env, value) for value in node.inputs[:2])
    if start.python is not int or stop.python is not int:
        raise NotDeviceLoop("a nested loop bound that is no Python int")
    retyped_inside(writer, node)
    placeholders = body.placeholders
    inner: Env = {}
    variables = _carried_variables(writer, node, env, placeholders[1:], node.inputs[3:], inner)
    trips = writer.define(np.dtype("int64"), _trip_count(start.text, stop.text, step))
    t, index = writer.fresh("t"), writer.fresh("j")
    writer.buf.writeline(f"for {t} in range(0, {trips.text}):")
    with writer.buf.indent():
        writer.buf.writeline(f"{index} = {start.text} + {t} * {step}")
        inner[placeholders[0]] = _Scalar(index, np.dtype("int64"), int)
        outputs = writer.body(body, inner)
        _rebind(writer, variables, outputs)
    for k, variable in enumerate(variables):
        writer.cond_results[(node, k)] = variable


def nested_while(writer: _ProgramWriter, node: Node, env: Env) -> None:
    """Write the `while_loop` `node` of a loop program's body as a `while` of the kernel."""
    from .loop_program import NotDeviceLoop

    params = dict(node.params)
    body: Graph = params["body"]
    carried: int = params["carried"]
    if kernels_take(body):
        raise NotDeviceLoop("a nested while loop whose body kernels take")
    retyped_inside(writer, node)
    pred = writer.operand(env, node.inputs[0])
    inner: Env = {}
    variables = _carried_variables(writer, node, env, body.placeholders, node.inputs[1:], inner)
    going = writer.fresh("w")
    writer.buf.writeline(f"{going} = {_test(writer, pred, params['enter_if'])}")
    writer.buf.writeline(f"while {going}:")
    with writer.buf.indent():
        outputs = writer.body(body, dict(inner))
        if len(outputs) != carried + 1:
            raise NotDeviceLoop("a while body without its test")
        # The next test reads this iteration's values (before the carried ones change); an
        # error flag raised ends the loop (the call reruns it with NumPy).
        test = _test(writer, outputs[carried], params["again_if"])
        writer.buf.writeline(f"{going} = ({test}) & (bad == 0)")
        _rebind(writer, variables, outputs[:carried])
    for k, variable in enumerate(variables):
        writer.cond_results[(node, k)] = variable


def retyped_inside(writer: _ProgramWriter, node: Node) -> None:
    """Refuse inner loop `node` where its first pass on Python scalars differs from its
    body on the loop's types (a Python operator that may raise where NumPy's scalars give
    inf or NaN), or where a value it retypes (its `typed_if_ran`) has eager's type after the
    loop nest only where it ran, unless the outermost loop carries the value (it enters the
    program with the loop's type: numpile_capture.loop_entry)."""
    from .loop_program import NotDeviceLoop

    first = dict(node.params).get("first")
    if first is not None and _may_raise(first):
        raise NotDeviceLoop("a first pass on Python scalars that may raise where NumPy's do not")
    for name in dict(node.params).get("typed_if_ran", ()):
        if name not in writer.entry_typed:
            raise NotDeviceLoop(f"the type of `{name}` depends on whether an inner loop ran")


def _carried_variables(
    writer: _ProgramWriter,
    node: Node,
    env: Env,
    placeholders: list[Node],
    inputs: tuple[Any, ...],
    inner: Env,
) -> list[_Scalar]:
    # The carried values of loop `node` as kernel variables set to their initial values at
    # the loop's widened types, bound in `inner` with its invariants.
    from .loop_program import _input_value, _meta_type, _Scalar

    carried: int = dict(node.params)["carried"]
    variables: list[_Scalar] = []
    for k in range(carried):
        dtype, python = _meta_type(placeholders[k].meta)
        initial = writer.cast(writer.operand(env, inputs[k]), dtype)
        variable = _Scalar(writer.fresh("v"), dtype, python)
        writer.buf.writeline(f"{variable.text} = {initial.text}")
        variables.append(variable)
        inner[placeholders[k]] = variable
    for k, value in enumerate(inputs[carried:]):
        inner[placeholders[carried + k]] = _input_value(writer, env, value)
    return variables


def _rebind(writer: _ProgramWriter, variables: list[_Scalar], outputs: list[_Scalar]) -> None:
    # Every new value takes a fresh name before any carried variable is rebound (Python's
    # tuple assignment reads them all first).
    news = []
    for variable, value in zip(variables, outputs, strict=False):
        new = writer.cast(value, variable.dtype)
        fresh = writer.fresh("n")
        writer.buf.writeline(f"{fresh} = {new.text}")
        news.append(fresh)
    for variable, fresh in zip(variables, news, strict=True):
        writer.buf.writeline(f"{variable.text} = {fresh}")


def _test(writer: _ProgramWriter, value: _Scalar, expected: bool) -> str:
    # Whether the truth of `value` is `expected` (a `while` runs on while that holds).
    truth = writer.cast(value, np.dtype("bool")).text
    return truth if expected else f"{truth} == 0"


def _may_raise(graph: Graph) -> bool:
    # Whether a first pass on Python scalars has a Python operator that may raise
    # (`1.0 / z`, `z ** 2`) where the body's NumPy scalars give inf or NaN.
    for node in graph.nodes:
        op = node.op
        if op is None:
            continue
        if any(_may_raise(g) for g in dict(node.params).values() if isinstance(g, Graph)):
            return True
        rule = op.may_raise if op.name in ("py_binary", "py_unary") else None
        if rule is not None and rule(node.inputs, dict(node.params)):
            return True
    return False


def _trip_count(start: str, stop: str, step: int) -> str:
    # len(range(start, stop, step)) for a constant step: the division is of a value >= 0.
    if step > 0:
        return f"tl.maximum({stop} - {start} + {step - 1}, 0) // {step}"
    return f"tl.maximum({start} - {stop} + {-step - 1}, 0) // {-step}"
