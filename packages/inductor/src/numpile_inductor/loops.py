"""Loop nodes in the inductor: the body compiled once, run by a host loop.

A `for_loop` node's body is a graph of its own. `compile_loop_bodies` compiles each body
once (inner loops first), with the index and the carried values as run-time arguments,
and gives back the graph with each loop node running a host loop that calls the
compiled body per iteration: no compile per iteration or per trip count. The loop node
itself stays an extern call of the outer graph's module (a barrier: it may write its
inputs in place).

The first iteration may receive carried values of other types than the body was
compiled for (a Python `0.0` where the body takes the float32 scalar the loop carries
from then on, NEP 50); such iterations run the body with `run_graph`, which follows
NumPy on any input, until the types match.

    >>> compiled = compile_loop_bodies(graph, lambda body: compile_graph(body).fn)  # doctest: +SKIP
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np

import numpile_runtime as rt
from numpile_capture import (
    ArrayMeta,
    Graph,
    Node,
    OpKind,
    ScalarMeta,
    body_runner,
    flagged_reads,
    is_loop,
    is_while_loop,
    mentions_loop_symbol,
    run_graph,
    set_body_runner,
    set_loop_runner,
    set_while_runner,
    tree_map,
)

from .loop_reports import locating_loops

log = logging.getLogger("numpile.inductor.loops")

BodyCompiler = Callable[[Graph], Callable[..., Any]]
LoopRunner = Callable[[range, tuple[Any, ...], int], tuple[Any, ...]]
# A whole loop of scalar work as one program of a backend's own (Triton's device-side loop),
# or None when that backend cannot take the loop; given the loop node, its own body copy and
# the loop's source line (for the perf hint that says why not).
LoopCompiler = Callable[[Node, Graph, str], LoopRunner | None]
# A backend's faster way of running the host loop of a compiled body (Triton's CUDA graph of
# the whole loop): given the loop node, its body, the host loop and the loop's source line,
# the runner to use instead (the host loop itself where it has none).
HostLoopReplayer = Callable[[Node, Graph, LoopRunner, str], LoopRunner]
WhileRunner = Callable[[bool, tuple[Any, ...], int], tuple[Any, ...] | None]


@attrs.frozen
class NestedLoopCompiler:
    """A backend's runners of the loops nested in a body that runs op by op (the C
    backend's module of each such loop, see `nested_loops`): given the loop node, its body
    and, for a `for_loop`, the runner it would have: the runner to use instead (a
    `while_loop`'s gives None where the loop runs as captured)."""

    for_loop: Callable[[Node, Graph, LoopRunner], LoopRunner]
    while_loop: Callable[[Node, Graph], WhileRunner]


def compile_loop_bodies(
    graph: Graph,
    compile_body: BodyCompiler,
    *,
    compile_loop: LoopCompiler | None = None,
    replay_host_loop: HostLoopReplayer | None = None,
    compile_nested_loop: NestedLoopCompiler | None = None,
    typed_results: bool = True,
    _in_op_by_op_body: bool = False,
) -> Graph:
    """`graph` with every `for_loop` node running its body compiled by `compile_body`, and
    every `while_loop` node whose body does array work running that body compiled per
    iteration.

    A body no kernel takes (no array work, or array work whose shapes follow the loop index)
    runs op by op, or as the runner `compile_loop` makes for the whole loop where it makes
    one. The host loop of a compiled body runs through the runner
    `replay_host_loop` makes of it, where given. A `for_loop` or `while_loop` inside a body
    that runs op by op (a `cond` branch that runs op by op included) runs as the runner
    `compile_nested_loop` makes of it, where given. `typed_results=False`
    keeps a carried Python scalar that no iteration changed as it is (for backends that run
    the loop node as a Python call).
    Returns `graph` itself when it has no loop node.
    """
    if not any(is_loop(node) or _is_cond(node) or is_while_loop(node) for node in graph.nodes):
        return graph
    result = Graph()
    mapping: dict[Node, Node] = {}

    def rename(value: Any) -> Any:
        return mapping.get(value, value) if isinstance(value, Node) else value

    for node in graph.nodes:
        if node.op is None:
            mapping[node] = result.placeholder(node.name, node.meta)
            continue
        op = node.op
        params = dict(node.params)
        if is_loop(node):
            # A body graph of the inductor's own, so the runner it registers on it does not
            # change how other backends run the same captured graph.
            inner = compile_loop_bodies(
                node.kwargs["body"],
                compile_body,
                compile_loop=compile_loop,
                replay_host_loop=replay_host_loop,
                compile_nested_loop=compile_nested_loop,
                typed_results=typed_results,
                _in_op_by_op_body=compile_loop is None and not kernels_take(node.kwargs["body"]),
            )
            body = own_copy(inner)
            # Kernels type a value that may still be the iteration's own Python scalar
            # (`s = 0.1`, then an inner loop that may keep it) as the NumPy value: op by op.
            takes = kernels_take(body) and not flagged_reads(body)
            compiled = compile_body(body) if takes else None
            whole = None
            if compiled is None and compile_loop is not None:
                # Scalar work, or array work whose shapes follow the index (no kernel takes
                # it): the whole loop as one program where it can be, else op by op.
                whole = compile_loop(node, body, _where(graph, node))
            runner = whole or host_loop(body, compiled, typed=typed_results)
            if compiled is not None and replay_host_loop is not None:
                runner = replay_host_loop(node, body, runner, _where(graph, node))
            if _in_op_by_op_body and compile_nested_loop is not None:
                with locating_loops(graph):  # the nested loop's line, for its reports
                    runner = compile_nested_loop.for_loop(node, body, runner)
            set_loop_runner(body, runner)
            params["body"] = body
        elif _is_cond(node):
            for key in ("then_branch", "else_branch"):
                branch = node.kwargs[key]
                if compile_nested_loop is not None and not kernels_take(branch):
                    # A branch that runs op by op: its loops are nested in it as in a body.
                    branch = compile_loop_bodies(
                        branch,
                        compile_body,
                        compile_loop=compile_loop,
                        replay_host_loop=replay_host_loop,
                        compile_nested_loop=compile_nested_loop,
                        typed_results=typed_results,
                        _in_op_by_op_body=compile_loop is None,
                    )
                params[key] = _compiled_branch(branch, compile_body)
        elif is_while_loop(node):
            inner = compile_loop_bodies(
                node.kwargs["body"],
                compile_body,
                compile_loop=compile_loop,
                replay_host_loop=replay_host_loop,
                compile_nested_loop=compile_nested_loop,
                typed_results=typed_results,
                _in_op_by_op_body=compile_loop is None and not kernels_take(node.kwargs["body"]),
            )
            body = _compiled_while_body(inner, compile_body, node.kwargs["carried"])
            if _in_op_by_op_body and compile_nested_loop is not None:
                body = body if body is not inner else own_copy(inner)
                with locating_loops(graph):  # the nested loop's line, for its reports
                    set_while_runner(body, compile_nested_loop.while_loop(node, body))
            params["body"] = body
        inputs = tuple(tree_map(rename, list(node.inputs)))
        copy = result.add_node(op, inputs, params, node.meta)
        mapping[node] = copy
        line = graph.locations.get(node)
        if line is not None:
            result.locations[copy] = line
    result.output = tree_map(rename, graph.output)
    return result


# NOTE: a body of scalar work runs faster op by op (NumPy's scalar fast paths) than as a
# compiled module calling back into Python for each indexing op; kernels pay off on arrays.
_ARRAY_WORK = (OpKind.POINTWISE, OpKind.REDUCTION, OpKind.SCAN)


def _has_array_work(body: Graph) -> bool:
    return any(
        node.op is not None
        and node.op.kind in _ARRAY_WORK
        and isinstance(node.meta, ArrayMeta)
        and node.meta.ndim > 0
        for node in body.nodes
    )


def kernels_take(body: Graph) -> bool:
    """Whether `body` is compiled to kernels: array work whose shapes do not follow a loop
    index (`A[i, :j]` has shape (i1,); kernels take sizes from their inputs' shapes)."""
    if not _has_array_work(body):
        return False
    return not any(
        isinstance(node.meta, ArrayMeta) and mentions_loop_symbol(node.meta.shape)
        for node in body.nodes
    )


def _is_cond(node: Node) -> bool:
    return node.op is not None and node.op.name == "cond"


def _compiled_branch(branch: Graph, compile_body: BodyCompiler) -> Graph:
    # A `cond` branch with array work (the copies of an unrolled loop after a run-time
    # `break`) runs compiled, on a copy of its own: other backends keep running the captured
    # branch op by op.
    if not kernels_take(branch):
        return branch
    copy = own_copy(branch)
    compiled = compile_body(copy)
    set_body_runner(copy, lambda arguments: tuple(compiled(*arguments)))
    return copy


def _compiled_while_body(body: Graph, compile_body: BodyCompiler, carried: int) -> Graph:
    # A `while_loop` body with array work (`new = u.copy()`, an element loop over it, the
    # residual `np.abs(new - u).max()`) runs compiled per iteration, its inner loops as C,
    # on a copy of its own, as a `cond` branch does; iterations whose carried values have
    # other types than it was compiled for (before a first pass retyped them) run op by op.
    if not kernels_take(body) or flagged_reads(body):
        return body  # scalar work, or a value that may be the Python scalar (see above)
    copy = own_copy(body)
    compiled = compile_body(copy)
    metas = [node.meta for node in copy.placeholders[:carried]]

    def run(arguments: tuple[Any, ...]) -> tuple[Any, ...]:
        if matches(arguments[:carried], metas):
            rt.count("while_compiled_iterations")  # which path the iterations took
            return tuple(compiled(*arguments))
        return tuple(run_graph(body, arguments))

    set_body_runner(copy, run)
    return copy


def _where(graph: Graph, node: Node) -> str:
    line = graph.locations.get(node)
    return "an unknown line" if line is None else f"{line.filename}:{line.lineno}"


def own_copy(graph: Graph) -> Graph:
    """A graph of the same nodes, on which a backend registers runners of its own."""
    copy = Graph()
    copy.nodes = list(graph.nodes)
    copy.output = graph.output
    copy.locations = dict(graph.locations)
    return copy


def host_loop(
    body: Graph, compiled: Callable[..., Any] | None, *, typed: bool = True
) -> LoopRunner:
    """The implementation of a `for_loop` node that calls `compiled` (the body) per index,
    or runs the body op by op (`body_runner`) when it was not worth compiling.

    With `typed`, the final carried values have the types of the node's metadata (a Python
    scalar an iteration left untouched comes back as the NumPy scalar the loop carries); a
    loop that ran no iteration gives back its initial objects themselves, as eager does.
    Each call counts `loop_host_runs` (a compiled body) or `loop_op_by_op_runs` on
    `numpile_runtime.counters()`: which path a loop took.
    """
    metas = [node.meta for node in body.placeholders]
    event = "loop_op_by_op_runs" if compiled is None else "loop_host_runs"
    if compiled is None:
        runner = body_runner(body)

        def compiled(*arguments: Any) -> Any:
            return runner(arguments)

    def run(indices: range, values: tuple[Any, ...], carried: int) -> tuple[Any, ...]:
        rt.count(event)
        state = tuple(values[:carried])
        invariants = values[carried:]
        matching = matches(state, metas[1 : 1 + carried])
        if not indices:
            return state  # no value went through the body: the initial objects, as eager
        for index in indices:
            if matching:
                new = tuple(compiled(index, *state, *invariants))
            else:
                new = tuple(run_graph(body, (index, *state, *invariants)))
            state = new[:carried]
            if len(new) > carried and new[carried]:
                break  # the body's stop flag: a `break` (see numpile_capture.loop_exit)
            if not matching:
                matching = matches(state, metas[1 : 1 + carried])
        if not typed:
            return state
        return tuple(_as_meta(value, meta) for value, meta in zip(state, metas[1:], strict=False))

    return run


def _as_meta(value: Any, meta: Any) -> Any:
    if isinstance(meta, ArrayMeta) and meta.ndim == 0 and type(value) in (bool, int, float):
        return meta.dtype.type(value)
    return value


# NOTE: the Python ints compiled code takes (as int64); a larger one runs with Python.
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def matches(values: Sequence[Any], metas: Sequence[Any]) -> bool:
    """Whether `values` have the types of `metas`, the ones a body was compiled for (a
    Python int only within int64, as compiled code holds it)."""
    for value, meta in zip(values, metas, strict=True):
        if isinstance(meta, ScalarMeta):
            if type(value) is not meta.type:
                return False
            if type(value) is int and not _INT64_MIN <= value <= _INT64_MAX:
                return False
        elif isinstance(meta, ArrayMeta):
            if not isinstance(value, np.ndarray | np.generic) or value.dtype != meta.dtype:
                return False
            if np.ndim(value) != meta.ndim:
                return False
    return True
