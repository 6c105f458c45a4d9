"""Nested `for` loops inside one Triton loop program (`loop_program.py`).

A `for_loop` node in the body of a loop that runs as one Triton program becomes a `for` of
the kernel itself: its trip count is computed from its start, stop and step (Python ints
of the enclosing body, a constant step) as Python's `range` gives it, its index is
`start + t * step`, and its carried 0-d values are kernel variables updated at the end of
each iteration (read before any is rebound, as Python's tuple assignment does); its
`loop_output`s are those variables after it. So a whole loop nest of scalar work (`crc32`'s
byte and bit loops, the row and column loops of an LU factorization) is one launch.

The carried values start as the loop's widened types (as the C loop function does): a
first iteration traced on other types (`first`, NEP 50's Python scalars) computes the same
numbers. A nested loop whose body kernels take (array-sized rows, `D[i, :] = ...`) is
marked (`kernel_loops`): one warp walks its rows here, and past `KERNEL_ROWS` elements the
loop nest runs as host loops of kernels instead (`loop_program.py`). Not taken (the
outermost loop then runs as a host loop): a `break`, a step computed at run time, carried
Python ints (unbounded), bool and non-0-d carried values.

    >>> "for t" in loop_program_source(node, body).source  # doctest: +SKIP
    True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from numpile_capture import Graph, Node

from ...loops import kernels_take

if TYPE_CHECKING:
    from .loop_program import Env, _ProgramWriter, _Scalar

__all__ = ["nested_loop"]


def nested_loop(writer: _ProgramWriter, node: Node, env: Env) -> None:
    """Write the `for_loop` `node` of a loop program's body as a `for` of the kernel."""
    # Late import: loop_program imports this module at its bottom (it fills its table).
    from .loop_program import NotDeviceLoop, _input_value, _meta_type, _Scalar

    params = dict(node.params)
    body: Graph = params["body"]
    carried: int = params["carried"]
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
    placeholders = body.placeholders
    inner: Env = {}
    variables: list[_Scalar] = []
    for k in range(carried):
        dtype, python = _meta_type(placeholders[1 + k].meta)
        if python is int:
            raise NotDeviceLoop("a carried Python int (unbounded) in a nested loop")
        initial = writer.cast(writer.operand(env, node.inputs[3 + k]), dtype)
        variable = _Scalar(writer.fresh("v"), dtype, python)
        writer.buf.writeline(f"{variable.text} = {initial.text}")
        variables.append(variable)
        inner[placeholders[1 + k]] = variable
    for k, value in enumerate(node.inputs[3 + carried :]):
        inner[placeholders[1 + carried + k]] = _input_value(writer, env, value)
    trips = writer.define(np.dtype("int64"), _trip_count(start.text, stop.text, step))
    t, index = writer.fresh("t"), writer.fresh("j")
    writer.buf.writeline(f"for {t} in range(0, {trips.text}):")
    with writer.buf.indent():
        writer.buf.writeline(f"{index} = {start.text} + {t} * {step}")
        inner[placeholders[0]] = _Scalar(index, np.dtype("int64"), int)
        outputs = writer.body(body, inner)
        # Every new value takes a fresh name before any carried variable is rebound.
        news = []
        for variable, value in zip(variables, outputs, strict=False):
            new = writer.cast(value, variable.dtype)
            fresh = writer.fresh("n")
            writer.buf.writeline(f"{fresh} = {new.text}")
            news.append(fresh)
        for variable, fresh in zip(variables, news, strict=True):
            writer.buf.writeline(f"{variable.text} = {fresh}")
    for k, variable in enumerate(variables):
        writer.cond_results[(node, k)] = variable


def _trip_count(start: str, stop: str, step: int) -> str:
    # len(range(start, stop, step)) for a constant step: the division is of a value >= 0.
    if step > 0:
        return f"tl.maximum({stop} - {start} + {step - 1}, 0) // {step}"
    return f"tl.maximum({start} - {stop} + {-step - 1}, 0) // {-step}"
