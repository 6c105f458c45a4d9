"""Nested loops of a body that runs op by op, each compiled as a C loop of its own.

A host loop whose body no kernel takes (array work whose shapes follow its index: LU's
`A[k + 1 :, k]`) runs that body op by op, and with it the body's inner `for_loop` and
`while_loop` nodes (those of its `cond` branches too), one Python call per element.
`loop_graph` makes each such inner loop a graph of its own, whose only work is that loop
node:

    graph(a0: int, a1: int, a2: int, a3: float64[s0, s0], a4: int):
      v0 = for_loop(a0, a1, a2, a3, a4, body=<graph>, carried=0)  # tuple
      return ()

and `NestedLoop` compiles it through the normal C path (the graph cache keys it by its
text), where the wrapper makes the loop node a C loop function. Where it does not (the
body needs NumPy per iteration), the loop keeps running op by op. A `while_loop`'s graph
takes whether it enters as a bool (`a0`), so the runner calls the module only for a loop
that runs.

The compile happens when the backend knows the enclosing loop runs from Python: the
outermost such loops (`loops_to_build`) in the same build as the module that runs their
enclosing host loop, the loops below them right after (`build_nested_loops`; in the
background when tiered), or else on the loop's first run; a loop that an outer C loop
function runs never runs its host runner.

    >>> set_loop_runner(body, nested_loop_runner(nested, host_loop(body, None)))  # doctest: +SKIP
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpile_runtime as rt
from numpile_capture import (
    ArrayMeta,
    Graph,
    Node,
    ScalarMeta,
    SourceLine,
    get_op,
    is_while_loop,
    mentions_loop_symbol,
)

from .loops import LoopRunner, WhileRunner, kernels_take, matches, own_copy

log = logging.getLogger("numpile.inductor.nested_loops")

# Compiles a graph as C; gives back the module's function and whether every loop node of
# the graph runs as a C loop function (no host loop).
LoopGraphCompiler = Callable[[Graph], tuple[Callable[..., Any], bool]]

_BOUNDS = 3  # start, stop, step: the first inputs of a `for_loop` node


def _head(node: Node) -> int:
    # The inputs before the carried values: a for_loop's bounds, a while_loop's first test.
    return 1 if is_while_loop(node) else _BOUNDS


def _taken(node: Node) -> list[int]:
    # The positions of the node's inputs that its loop graph takes as arguments: a
    # while_loop's entry, a for_loop's bounds that are graph values, its start too where it
    # has a `first` (the runner hands over the range that first iterations left), every
    # carried value (the runner hands over the values a first pass left, not the node's
    # constants), the invariants that are graph values.
    head = _head(node)
    params = dict(node.params)
    carried = head + params["carried"]
    entry = 0 if head == 1 or "first" in params else -1  # the head input always taken
    return [
        position
        for position, value in enumerate(node.inputs)
        if isinstance(value, Node) or position == entry or head <= position < carried
    ]


def loop_graph(node: Node, body: Graph) -> Graph | None:
    """A graph whose only work is loop node `node` (a `for_loop` or a `while_loop`) running
    `body`: one placeholder per input of the node that is a graph value or a carried value
    (a `for_loop`'s bounds as ints, a `while_loop`'s first test as a bool, the others with
    the metadata of the body's placeholders: the types after a first pass), the final
    carried values as its outputs; None where an input's shape follows an enclosing loop's
    index (kernels take sizes from shapes the graph states).

    >>> print(loop_graph(node, body))  # doctest: +SKIP
    """
    graph = Graph()
    inputs: list[Any] = []
    head = _head(node)
    params = dict(node.params)
    # The placeholders of the node's inputs after the head: a for body's after its index; a
    # while_loop's first pass, where it has one (its runner runs it: see `call`).
    if head == _BOUNDS:
        params.pop("first", None)
        takes = body.placeholders[1:]
    else:
        takes = params.get("first", body).placeholders
    taken = _taken(node)
    for position, value in enumerate(node.inputs):
        if position not in taken:
            inputs.append(value)
            continue
        if position < head:
            # The host loop hands a for_loop's bounds over as a range, a while_loop's entry
            # as a bool.
            meta: ArrayMeta | ScalarMeta = ScalarMeta(bool if head == 1 else int)
        else:
            meta = takes[position - head].meta
            given = value.meta if isinstance(value, Node) else meta
            if any(
                isinstance(m, ArrayMeta) and mentions_loop_symbol(m.shape) for m in (meta, given)
            ):
                return None
        inputs.append(graph.placeholder(f"a{position}", meta))
    # NOTE: a for_loop without `first`: capture runs its first iterations on other types
    # before it hands the rest of the range to its runner (the start a graph input, see
    # `_taken`), so that the module and NumPy's replay of this graph (`errstate`) run only
    # the iterations left. A copy of the body with no runner of its own:
    # where the C loop function hands a run back to NumPy (an index out of bounds), the loop
    # runs op by op, not through this module again.
    params["body"] = own_copy(body)
    loop = graph.add_node(node.op, tuple(inputs), params, node.meta)  # type: ignore[arg-type]
    output = get_op("loop_output")
    # The final carried values have the body's types (a first pass's types are the entry's).
    carried = (body.placeholders if head == 1 else body.placeholders[1:])[: params["carried"]]
    graph.output = tuple(
        graph.add_node(output, (loop,), {"index": k}, value.meta) for k, value in enumerate(carried)
    )
    return graph


class NestedLoop:
    """One nested loop node's `loop_graph`, compiled by `compile_graph` on `build()` or on
    its first `call`; `as_c` says whether its module runs the loop as C.

    >>> nested = NestedLoop(node, body, compile_graph)  # doctest: +SKIP
    >>> nested.build()  # doctest: +SKIP
    True
    """

    def __init__(
        self,
        node: Node,
        body: Graph,
        compile_graph: LoopGraphCompiler,
        line: SourceLine | None = None,
    ) -> None:
        self.node = node
        self.line = line  # the loop's source line, for explain (its graph's node has none)
        self._graph = loop_graph(node, body)
        self._compile_graph = compile_graph
        self._fn: Callable[..., Any] | None = None
        self._built = self._graph is None
        self._lock = rt.new_lock()
        head = _head(node)
        taken = _taken(node)
        self._head_at = [position for position in taken if position < head]
        self._values_at = [position - head for position in taken if position >= head]
        graph = self._graph
        self._metas = (
            [] if graph is None else [p.meta for p in graph.placeholders[len(self._head_at) :]]
        )

    @property
    def as_c(self) -> bool:
        """Whether the loop's module is built and runs the loop as C."""
        return self._fn is not None

    @property
    def built(self) -> bool:
        """Whether `build` ran (or there is nothing to build: no `loop_graph`)."""
        return self._built

    @property
    def graph(self) -> Graph | None:
        """The loop's `loop_graph`, which its module is compiled from."""
        return self._graph

    def build(self, compile_graph: LoopGraphCompiler | None = None) -> bool:
        """Compile the loop's graph now unless done before, with `compile_graph` where given
        (a batch that built it with others hands over its module), else the one the loop
        was made with; whether it runs as C. A compile that fails leaves the loop running as
        captured (op by op), with a warning, as a loop body's does (`LazyBody`): the
        enclosing graph was built."""
        if self._built:
            return self.as_c
        compile_graph = compile_graph or self._compile_graph
        with self._lock:
            if not self._built and self._graph is not None:
                try:
                    module, as_c = compile_graph(self._graph)
                    self._fn = module if as_c else None
                except Exception as error:
                    log.warning(
                        "nested loop %s did not compile (%s); it runs op by op with NumPy",
                        self.node,
                        error,
                    )
                    as_c = False
                if not as_c:
                    log.info(
                        "nested loop %s stays a host loop: its module does not run it as C",
                        self.node,
                    )
            self._built = True
        return self.as_c

    def call(self, head: tuple[Any, ...], values: tuple[Any, ...]) -> tuple[Any, ...] | None:
        """The loop's final carried values from its module, given the head inputs (the
        bounds, or the entry test) and the node's carried and invariant values; None where
        it has no C module or the values have other types than it was compiled for."""
        if not self._built:
            self.build()
        fn = self._fn
        if fn is None:
            return None
        arguments = [values[k] for k in self._values_at]
        if not matches(arguments, self._metas):
            return None
        rt.count("loop_nested_c_runs")
        return tuple(fn(*(head[k] for k in self._head_at), *arguments))


def nested_loop_runner(nested: NestedLoop, fallback: LoopRunner) -> LoopRunner:
    """The runner of `for_loop` node `nested.node` (inside a body that runs op by op): its
    module per run of the loop where it runs the loop as C (counted as
    `loop_nested_c_runs` on `numpile_runtime.counters()`), else `fallback` (the host
    loop).

    >>> runner = nested_loop_runner(nested, host_loop(body, None))  # doctest: +SKIP
    """

    def run(indices: range, values: tuple[Any, ...], carried: int) -> tuple[Any, ...]:
        limits = (indices.start, indices.stop, indices.step)
        result = nested.call(limits, values)
        return fallback(indices, values, carried) if result is None else result

    return run


def nested_while_runner(nested: NestedLoop) -> WhileRunner:
    """The runner of `while_loop` node `nested.node` (inside a body that runs op by op), as
    `nested_loop_runner` for a `for_loop`: its module where it runs the loop as C, its
    first pass on other types included; else None (capture runs the loop op by op, as it
    does a loop that does not enter).

    >>> set_while_runner(body, nested_while_runner(nested))  # doctest: +SKIP
    """
    entry = (bool(dict(nested.node.params)["enter_if"]),)  # the test's value that enters

    def run(going: bool, values: tuple[Any, ...], carried: int) -> tuple[Any, ...] | None:
        return nested.call(entry, values) if going else None

    return run


def loops_to_build(graphs: Iterable[Graph], nested: Mapping[Graph, NestedLoop]) -> list[NestedLoop]:
    """The outermost `NestedLoop`s of `nested` not built yet whose bodies are found in
    `graphs` (the bodies of loops that run from Python) or in the subgraphs that run op by
    op below them: those below a built loop whose module runs it as C are not (that module
    runs them), nor those in a body that kernels take (its own module runs them, or
    builds them after it: see `build_nested_loops`).

    >>> loops_to_build(compiled.host_loop_bodies, nested)  # doctest: +SKIP
    [<NestedLoop ...>]
    """
    found: list[NestedLoop] = []
    stack = list(graphs)
    while stack:
        graph = stack.pop()
        if kernels_take(graph):
            continue
        for node in graph.nodes:
            for _, value in node.params:
                if not isinstance(value, Graph):
                    continue
                loop = nested.get(value)
                if loop is not None and not loop.built:
                    found.append(loop)
                elif loop is None or not loop.as_c:
                    stack.append(value)
    return found


def build_nested_loops(
    graphs: Iterable[Graph],
    nested: Mapping[Graph, NestedLoop],
    build_all: Callable[[list[NestedLoop]], None] | None = None,
) -> None:
    """Build the `NestedLoop` of every loop body of `nested` found in `graphs` (see
    `loops_to_build`), outermost first: `build_all` builds the loops of one depth at once
    (one by one without it), then the loops below those whose module does not run them as
    C. A loop left out builds on its first run."""
    graphs = list(graphs)
    while True:
        level = loops_to_build(graphs, nested)
        if not level:
            return
        if build_all is not None:
            build_all(level)
        for loop in level:
            loop.build()  # a loop `build_all` left out; nothing for one it built
