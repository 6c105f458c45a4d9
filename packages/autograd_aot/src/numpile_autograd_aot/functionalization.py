"""Functionalization: a graph with in-place ops and views becomes a pure graph plus an epilogue.

Captured graphs are imperative: `add_(x, y)` writes `x`, a later `sum(x)`
reads the written value, views (`getitem`, `reshape`, ...) alias their first
input and a write through a view changes its base. `functionalize` replays
the graph on values instead of memory:

- every array value belongs to a *storage* (a placeholder or a fresh result)
  and is reached from it by a chain of view ops;
- a mutation computes the new content of the written view with pure ops
  (`add_` -> `add` + `astype`, `setitem` -> `view_scatter`, `setitem_at` ->
  `setitem_at_scatter`, `index_put` -> `index_scatter`, `ufunc_at` ->
  `index_accumulate`, ...) and writes it back
  into a new value of the storage's base with `view_scatter`;
- a read of a view after its storage changed replays the view chain on the
  storage's newest value.

The pure graph returns the user's output leaves followed by the new values
of the mutated inputs. `run_functionalized` runs it and applies the epilogue:
mutated inputs are written back in place, and outputs that alias inputs are
rebuilt as views of them, so results, in-place effects and aliasing are the
ones NumPy gives.

    >>> import numpy as np
    >>> from numpile_capture import capture_function
    >>> def f(x):
    ...     x[1:] += 1.0
    ...     return x[::2]
    >>> fg = functionalize(capture_function(f, (np.zeros(4),), {}).graph)
    >>> x = np.zeros(4)
    >>> out = run_functionalized(fg, [x])
    >>> x.tolist(), np.shares_memory(out, x)
    ([0.0, 1.0, 1.0, 1.0], True)

Limits: inputs that alias each other are not modelled; when a mutated input
shares memory with another input at run time, `run_functionalized` runs the
original graph instead. Two outputs that are views of the same intermediate
array come back as separate arrays.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from numpile_capture import (
    ArrayMeta,
    Graph,
    Node,
    Op,
    OpKind,
    TreeSpec,
    get_op,
    run_graph,
    tree_flatten,
    tree_unflatten,
)
from numpile_capture.ops.scatter import (
    ViewChain,
    apply_views,
    chain_of,
    index_accumulate,
    index_scatter,
    view_scatter,
)
from numpile_runtime import timed

from .subgraph import eliminate_dead_code

log = logging.getLogger("numpile.autograd_aot")

__all__ = ["FunctionalGraph", "OutputAlias", "functionalize", "run_functionalized"]


@attrs.frozen
class OutputAlias:
    """User output `output` is input `input` seen through the view chain `views`.

    >>> OutputAlias(0, 1, ())
    OutputAlias(output=0, input=1, views=())
    """

    output: int
    input: int
    views: ViewChain


@attrs.frozen(eq=False)
class FunctionalGraph:
    """A pure graph and the epilogue that gives it the original graph's effects.

    `graph.output` is a tuple: the `num_outputs` user output leaves (rebuilt
    into the original output with `output_spec`), then one new value per
    entry of `mutated_inputs`, pairs `(placeholder index, output position)`.
    `output_aliases` lists the user outputs that are views of inputs.
    `original` is the graph it came from.
    """

    graph: Graph
    output_spec: TreeSpec
    num_outputs: int
    mutated_inputs: tuple[tuple[int, int], ...]
    output_aliases: tuple[OutputAlias, ...]
    original: Graph

    def __str__(self) -> str:
        lines = [str(self.graph)]
        lines += [f"  # write back input {i} from output {o}" for i, o in self.mutated_inputs]
        lines += [
            f"  # output {a.output} is a view of input {a.input}: {list(a.views)}"
            for a in self.output_aliases
        ]
        return "\n".join(lines)


@attrs.define
class _Storage:
    # The newest value of one base array in the new graph, and how often it was written.
    value: Node
    placeholder: int | None
    version: int = 0


class _Functionalizer:
    def __init__(self, graph: Graph) -> None:
        self.source = graph
        self.graph = Graph()
        self.storages: list[_Storage] = []
        # For each original array node: its storage and the view nodes from the base to it.
        self.where: dict[Node, tuple[_Storage, tuple[Node, ...]]] = {}
        self.cache: dict[Node, tuple[Node, int]] = {}

    def run(self) -> FunctionalGraph:
        for position, node in enumerate(self.source.placeholders):
            new = self.graph.placeholder(node.name, node.meta)
            storage = _Storage(new, position)
            self.storages.append(storage)
            self.where[node] = (storage, ())
            self.cache[node] = (new, 0)
        for node in self.source.nodes:
            if node.op is not None:
                before = len(self.graph.nodes)
                self._visit(node, node.op)
                self._locate(node, before)
        leaves, spec = tree_flatten(self.source.output)
        outputs: list[Any] = [self.read(leaf) for leaf in leaves]
        aliases = []
        for position, leaf in enumerate(leaves):
            if isinstance(leaf, Node) and leaf in self.where:
                storage, views = self.where[leaf]
                if storage.placeholder is not None:
                    aliases.append(OutputAlias(position, storage.placeholder, chain_of(views)))
        mutated = []
        for storage in self.storages:
            if storage.placeholder is not None and storage.version > 0:
                mutated.append((storage.placeholder, len(outputs)))
                outputs.append(storage.value)
        self.graph.output = tuple(outputs)
        pure = eliminate_dead_code(self.graph)
        return FunctionalGraph(pure, spec, len(leaves), tuple(mutated), tuple(aliases), self.source)

    def _locate(self, node: Node, before: int) -> None:
        # The nodes made for `node` come from its line (NumPy's warnings name it).
        line = self.source.locations.get(node)
        if line is not None:
            for new in self.graph.nodes[before:]:
                self.graph.locations.setdefault(new, line)

    def read(self, value: Any) -> Any:
        """The new-graph value of an original node as of now."""
        if not isinstance(value, Node):
            return value
        if value not in self.where:
            return self.cache[value][0]
        storage, views = self.where[value]
        cached = self.cache.get(value)
        if cached is not None and cached[1] == storage.version:
            return cached[0]
        current = storage.value
        for view in views:
            assert view.op is not None
            scalars = tuple(self.read(scalar) for scalar in view.inputs[1:])  # getitem_at's
            current = self.graph.add_node(view.op, (current, *scalars), view.kwargs, view.meta)
        self.cache[value] = (current, storage.version)
        return current

    def _visit(self, node: Node, op: Op) -> None:
        if op.kind is OpKind.VIEW and isinstance(node.inputs[0], Node):
            base = node.inputs[0]
            if base in self.where:
                storage, views = self.where[base]
                self.where[node] = (storage, (*views, node))
                return
        if op.mutates:
            self._mutate(node, op)
            return
        inputs = tuple(self.read(value) for value in node.inputs)
        new = self.graph.add_node(op, inputs, node.kwargs, node.meta)
        self.cache[node] = (new, 0)
        if isinstance(node.meta, ArrayMeta):
            storage = _Storage(new, None)
            self.storages.append(storage)
            self.where[node] = (storage, ())

    def _mutate(self, node: Node, op: Op) -> None:
        if op.mutates != (0,):
            raise NotImplementedError(f"functionalize: {op.name} writes inputs {op.mutates}")
        target = node.inputs[0]
        current = self.read(target)
        args = [self.read(value) for value in node.inputs[1:]]
        content = self._new_content(op, current, args, node.kwargs)
        storage, views = self.where[target]
        if views:
            base = self.graph.call(view_scatter, storage.value, content, views=chain_of(views))
        else:
            base = content
        storage.value = base
        storage.version += 1
        self.where[node] = (storage, views)
        self.cache[node] = (content, storage.version)
        self.cache[target] = (content, storage.version)

    def _new_content(self, op: Op, current: Node, args: list[Any], params: dict[str, Any]) -> Node:
        # The new value of the written array, of its shape and dtype, from pure ops.
        g = self.graph
        meta = current.meta
        assert isinstance(meta, ArrayMeta)
        name = op.name
        if name == "setitem":
            step = (("getitem", (("index", params["index"]),)),)
            return g.call(view_scatter, current, args[0], views=step)
        if name == "setitem_at":  # run-time ints in the index: a resumed loop's writes
            return g.call(get_op("setitem_at_scatter"), current, *args, **params)
        if name in ("fill", "copyto"):
            return g.call(view_scatter, current, args[0], views=())
        if name == "index_put":
            return g.call(index_scatter, current, *args, **params)
        if name == "ufunc_at":
            return g.call(index_accumulate, current, *args, **params)
        if name.endswith("_"):
            pure = get_op(name[:-1])
            result = g.call(pure, current, *args, **params)
            assert isinstance(result.meta, ArrayMeta)
            if result.meta.dtype != meta.dtype:
                result = g.call(get_op("astype"), result, dtype=meta.dtype, casting="unsafe")
            return result
        raise NotImplementedError(f"functionalize: no pure form for the mutation op {name}")


def functionalize(graph: Graph) -> FunctionalGraph:
    """The pure form of `graph` and its write-back epilogue (see the module docstring).

    >>> fg = functionalize(graph)  # doctest: +SKIP
    >>> print(fg)  # doctest: +SKIP
    """
    with timed("aot"):
        result = _Functionalizer(graph).run()
    log.debug("functionalized:\n%s", result)
    return result


def inputs_alias_mutated(fg: FunctionalGraph, inputs: Sequence[Any]) -> bool:
    """Whether a mutated input shares memory with another input (the pure graph cannot tell).

    >>> inputs_alias_mutated(fg, [x, x[1:]])  # doctest: +SKIP
    True
    """
    for position, _ in fg.mutated_inputs:
        target = inputs[position]
        for other_position, other in enumerate(inputs):
            if other_position == position or not isinstance(other, np.ndarray):
                continue
            if np.may_share_memory(target, other):
                return True
    return False


def apply_epilogue(fg: FunctionalGraph, inputs: Sequence[Any], results: Sequence[Any]) -> Any:
    """Write mutated inputs back, rebuild aliased outputs, and return the user's output tree.

    `results` are the values of `fg.graph.output`.
    """
    for position, output in fg.mutated_inputs:
        np.copyto(inputs[position], results[output], casting="unsafe")
    leaves = list(results[: fg.num_outputs])
    for alias in fg.output_aliases:
        leaves[alias.output] = apply_views(inputs[alias.input], alias.views)
    return tree_unflatten(fg.output_spec, leaves)


def run_functionalized(fg: FunctionalGraph, inputs: Sequence[Any]) -> Any:
    """Run the pure graph with `run_graph`, then the epilogue: the original graph's semantics.

    >>> run_functionalized(functionalize(graph), [x])  # doctest: +SKIP
    """
    if inputs_alias_mutated(fg, inputs):
        log.debug("mutated input aliases another input: running the original graph")
        return run_graph(fg.original, inputs)
    results = run_graph(fg.graph, inputs)
    return apply_epilogue(fg, inputs, results)
