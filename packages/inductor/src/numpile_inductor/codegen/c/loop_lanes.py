"""Lanes: the escape loops of independent outer iterations interleaved on one thread.

`for p in range(n): <pre>; while test: <step>; <post>` (Mandelbrot's escape loop) runs
as fast as one `while` step's dependency chain allows; the chains of two outer
iterations are independent, so the CPU can overlap them if the C puts them side by
side. The outermost loop of a scalar nest runs as LANES lanes: each lane holds one outer
iteration (its own index, its own copies of the `while`'s carried values and of the
values `<pre>` computed); the lanes step together while every lane's `while` goes on,
then a lane whose `while` ended runs its `<post>` and takes the next outer iteration.
Once no iteration is left to take, the lanes still holding one finish it one after the
other.

    while (live0 && live1) {
        while (going0 && going1) { <step of lane 0>; <step of lane 1> }
        if (!going0) { <post of lane 0>; <take the next iteration into lane 0> }
        if (!going1) { <post of lane 1>; <take the next iteration into lane 1> }
    }

Each lane does exactly the operations of its iteration in their order, so every value is
bit-identical to the serial loop's; only the order of whole iterations changes. That
is exact when (and lanes are used only when):

- the outer iterations are independent: no carried value, no `break`, and every store
  writes and every read of a written array reads the outer index's own row
  (`loop_parallel.independent_iterations`, with its `while` loops analysed as nested
  loops, a carried value standing for no outer value);
- the body is `<pre>`, one `while`, `<post>`, all 0-d work, and `<pre>` holds no store
  and no loop (what it computes is copied into the lane's locals; an `if` there, such
  as the `while`'s first test, writes nothing either);
- nothing in the lane code can raise in the user's order: it is the fast copy of the
  nest (bounds checks hoisted before the loop), and a lane holding a jump anywhere but
  `bail` (`fail`: an index that could not be hoisted) keeps the serial loop. An `int`
  overflow or a Python `ZeroDivisionError` *bails*: the arrays the loop wrote are
  restored and the whole loop runs with NumPy, which is exact whatever order the
  lanes ran in;
- a signal (Ctrl-C) seen between iterations stops the lanes from taking more; those
  holding one finish it, so the iterations done are a prefix of the range, as eager
  leaves them, before the `KeyboardInterrupt` propagates. One that overflows meanwhile
  bails: the arrays are restored (the empty prefix) and the pending `KeyboardInterrupt`
  wins over the run with NumPy (`loop_function`'s `np_loop_eager`).

Floating-point flags are ORed over the run, the same set as the serial loop's.

    >>> lanes_shape(node)  # doctest: +SKIP
    LaneShape(body=..., pre=[], loop=v0, post=[v2, v3, v4, v5])
"""

from __future__ import annotations

import re

import attrs

from numpile_capture import Graph, Node

from ..common import CodeBuffer
from .loop_body import (
    POLL_WORK,
    CValue,
    Env,
    LoopWriter,
    WhileState,
    finish_while,
    while_start,
    while_step,
)
from .loop_parallel import independent_iterations
from .ops import c_type

#: Outer iterations in flight at once: three chains of Mandelbrot's step keep a core's
#: floating-point units busy where two left them waiting on the chains (AVX-512 core: 3 and
#: 4 lanes tie, 1.2x faster than 2; four would spill on 16-register AVX2 cores).
LANES = 3

# NOTE: a jump out of the nest other than `bail` (which restores the arrays and runs the
# whole loop with NumPy, exact in any order): `fail` raises with the writes done so far.
_LEAVES = re.compile(r"goto (?!bail;)")


@attrs.frozen
class LaneShape:
    """An outer loop body as lanes run it: the nodes before its one `while`, that
    `while_loop` node, the nodes after it."""

    body: Graph
    pre: list[Node]
    loop: Node
    post: list[Node]


def lanes_shape(node: Node) -> LaneShape | None:
    """The body of `for_loop` node `node` split around its one `while`, when its
    iterations may run as lanes (see the module's rules); else None."""
    params = dict(node.params)
    if params.get("carried") or params.get("breaks") or params.get("first") is not None:
        return None
    body: Graph = params["body"]
    ops = [item for item in body.nodes if item.op is not None]
    loops = [item for item in ops if item.op is not None and item.op.name == "while_loop"]
    if len(loops) != 1:
        return None
    at = ops.index(loops[0])
    pre, post = ops[:at], ops[at + 1 :]
    if not all(_reads_only(item) for item in pre):
        return None
    # A cond of `pre` is read through its loop_outputs (copied into the lane), in `pre`.
    conds = {item for item in pre if item.op is not None and item.op.name == "cond"}
    if any(value in conds for item in [loops[0], *post] for value in item.inputs):
        return None
    if not independent_iterations(node, while_loops=True):
        return None
    return LaneShape(body, pre, loops[0], post)


@attrs.define
class _Lane:
    # One lane's C: its index, whether it holds an iteration, its `while` (the state
    # and the lines of one step), the lines that end its iteration and take the next.
    index: str
    live: str
    state: WhileState
    step: list[str]
    take: list[str]
    post: list[str]


def emit_lanes(
    writer: LoopWriter,
    shape: LaneShape,
    inner: Env,
    bounds: tuple[str, str, int],
) -> list[str] | None:
    """The C of the outer loop of `shape` (`inner`: its body's env, its index's value
    included; `bounds`: start and stop in C and the constant step) as lanes, or None
    where a lane holds a statement that raises (its caller writes the serial loop)."""
    start, stop, step = bounds
    more = "<" if step > 0 else ">"
    declared, flags = len(writer.declarations), dict(writer.ran_flags)
    next_index, stopped = writer.fresh("lane_next"), writer.fresh("lane_stop")
    lanes = [
        _lane(writer, shape, inner, (next_index, stopped, more, stop, step)) for _ in range(LANES)
    ]
    if any(_LEAVES.search(line) for lane in lanes for line in lane.step + lane.take + lane.post):
        del writer.declarations[declared:]
        writer.ran_flags = flags  # those the lanes declared are gone with them
        return None
    unit = CodeBuffer.UNIT
    level = writer.buf.level
    lines = [
        f"/* lanes (codegen/c/loop_lanes.py): {LANES} iterations' `while` loops at a time */",
        f"int64_t {next_index} = {start};",
        f"int {stopped} = 0;",
    ]
    for lane in lanes:
        lines.append(f"int64_t {lane.index} = 0;")
        lines.append(f"int {lane.live} = 0;")
    for lane in lanes:
        lines += lane.take
    every = " && ".join(lane.live for lane in lanes)
    going = " && ".join(lane.state.going for lane in lanes)
    lines.append(f"while ({every}) {{")
    lines.append(f"{unit}while ({going}) {{")
    for lane in lanes:
        lines += _deeper(lane.step, 2)
    lines.append(f"{unit}}}")
    for lane in lanes:
        lines.append(f"{unit}if (!{lane.state.going}) {{")
        lines += _deeper(lane.post, 2)
        lines += _deeper(lane.take, 2)
        lines.append(f"{unit}}}")
    lines.append("}")
    for lane in lanes:
        lines.append(f"if ({lane.live}) {{")
        lines.append(f"{unit}while ({lane.state.going}) {{")
        lines += _deeper(lane.step, 2)
        lines.append(f"{unit}}}")
        lines += _deeper(lane.post, 1)
        lines.append("}")
    lines.append(f"if ({stopped}) {{ goto fail; }}")
    prefix = unit * level
    return [f"{prefix}{{", *(f"{prefix}{unit}{line}" for line in lines), f"{prefix}}}"]


def _lane(
    writer: LoopWriter,
    shape: LaneShape,
    inner: Env,
    machine: tuple[str, str, str, str, int],
) -> _Lane:
    # One lane's locals and the C of its parts, each written once at level 0 (placed
    # where the lane loop runs it).
    next_index, stopped, more, stop, step = machine
    name, live = writer.fresh("lane_i"), writer.fresh("lane_live")
    env = dict(inner)
    placeholder = shape.body.placeholders[0]
    index = env[placeholder]
    assert isinstance(index, CValue)
    env[placeholder] = attrs.evolve(index, text=name)
    level = writer.buf.level
    writer.buf.level = 0
    try:
        holder: list[WhileState] = []

        def take() -> None:
            buf = writer.buf
            ticks = writer.ticks
            if ticks is not None:
                with buf.block(f"if (++{ticks} >= {POLL_WORK}u)"):
                    buf.writeline(f"{ticks} = 0;")
                    buf.writeline(f"if (PyErr_CheckSignals() < 0) {{ {stopped} = 1; }}")
            buf.writeline(f"if (!{stopped} && {next_index} {more} {stop}) {{")
            with buf.indent():
                buf.writeline(f"{name} = {next_index};")
                buf.writeline(f"{next_index} += {step};")
                buf.writeline(f"{live} = 1;")
                writer.nodes(shape.pre, env)
                _keep_in_lane(writer, shape.pre, env)
                holder.append(while_start(writer, shape.loop, env, at_entry=True))
            with buf.block("} else"):
                buf.writeline(f"{live} = 0;")

        writer.note_results(shape.body)
        take_lines = writer.capture(take)
        state = holder[0]
        step_lines = writer.capture(lambda: while_step(writer, state))
        after = dict(env)
        finish_while(after, state)
        post_lines = writer.capture(lambda: writer.nodes(shape.post, after))
    finally:
        writer.buf.level = level
    return _Lane(name, live, state, step_lines, take_lines, post_lines)


def _reads_only(node: Node) -> bool:
    # Whether `node` writes no memory: no store, and no subgraph but a `cond` whose
    # branches write none.
    if node.op is None:
        return True
    if node.op.mutates:
        return False
    graphs = [value for _, value in node.params if isinstance(value, Graph)]
    if graphs and node.op.name != "cond":
        return False
    return all(_reads_only(inner) for graph in graphs for inner in graph.nodes)


def _keep_in_lane(writer: LoopWriter, nodes: list[Node], env: Env) -> None:
    # The values `nodes` computed, copied into locals of the lane declared at entry: the
    # lane's steps and its post read them in other blocks.
    for node in nodes:
        value = env.get(node)
        if not isinstance(value, CValue) or value.invariant:
            continue
        name = writer.fresh("lane_v")
        writer.declarations.append(f"    {c_type(value.dtype)} {name};")
        writer.buf.writeline(f"{name} = {value.text};")
        env[node] = attrs.evolve(value, text=name)


def _deeper(lines: list[str], levels: int) -> list[str]:
    return [CodeBuffer.UNIT * levels + line for line in lines]
