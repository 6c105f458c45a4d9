"""The graph IR: the contract between capture and every backend.

A `Graph` is a straight-line program. It holds `Node`s in topological order:
placeholders (the inputs), then operations, each applying one `Op` to earlier
nodes and Python constants with static params; `output` is a pytree of nodes
and constants. Every node carries the metadata of its result, so a graph
prints as a readable program:

    graph(a: float32[8, 4], b: float32[4]):
      v0 = sin(a)  # float32[8, 4]
      v1 = multiply(v0, b)  # float32[8, 4]
      return (v1,)

Invariants: nodes appear after their inputs; node names are unique; the
printed text determines the structural hash, so two graphs that print the
same are interchangeable for every cache.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import attrs
import numpy as np

from .meta import ArrayMeta, ScalarMeta
from .op import Op, OpKind, RaisesWhen
from .pytree import tree_flatten, tree_map
from .source_line import SourceLine


@attrs.frozen(eq=False)
class Node:
    """One value of a graph: a placeholder (`op is None`) or an op application.

    `inputs` are earlier nodes or Python constants; `params` are static
    keyword arguments (ints, tuples, strings, dtypes, None), in order.
    """

    name: str
    op: Op | None
    inputs: tuple[Any, ...]
    params: tuple[tuple[str, Any], ...]
    meta: ArrayMeta | ScalarMeta

    @property
    def is_placeholder(self) -> bool:
        return self.op is None

    @property
    def kwargs(self) -> dict[str, Any]:
        return dict(self.params)

    def input_nodes(self) -> list[Node]:
        return [value for value in self.inputs if isinstance(value, Node)]

    def run_time_error(self) -> str:
        """The exception this node may raise on some input values (see `Op`), or ""."""
        if self.op is None or not self.op.run_time_error:
            return ""
        if self.op.raises_when is RaisesWhen.INTEGER_RESULT and not _is_integer(self):
            return ""
        if self.op.raises_when is RaisesWhen.INTEGER_INDEX and not any(
            _is_integer(node) for node in self.input_nodes()[1:]
        ):
            return ""
        if self.op.may_raise is not None and not self.op.may_raise(self.inputs, self.kwargs):
            return ""
        return self.op.run_time_error

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"Node({self.format()})"

    def format(self) -> str:
        """The node as one line of the printed graph."""
        if self.op is None:
            return f"{self.name}: {self.meta}"
        args = [_format_value(value) for value in self.inputs]
        args += [f"{key}={_format_value(value)}" for key, value in self.params]
        return f"{self.name} = {self.op.name}({', '.join(args)})  # {self.meta}{_starts(self)}"


# Ops whose result records where the view they write starts (`ArrayMeta.starts`).
_STORES_THROUGH_VIEWS = frozenset({"setitem"})


def _starts(node: Node) -> str:
    # A view's start in its input when it depends on sizes: the same printed index and
    # shape may start elsewhere under other guards (`x[-6:-4:3]` is `float64[1]` from 0
    # at size 5, from s0 - 6 above), and the printed graph is the cache key. A store into
    # a view prints where it writes (its result is its target, whose start it does not
    # print).
    starts = getattr(node.meta, "starts", None)
    if node.op is None or starts is None:
        return ""
    if node.op.kind is not OpKind.VIEW and node.op.name not in _STORES_THROUGH_VIEWS:
        return ""
    if all(isinstance(start, int) for start in starts):
        return ""
    return " from [" + ", ".join(str(start) for start in starts) + "]"


def _is_integer(node: Node) -> bool:
    return isinstance(node.meta, ArrayMeta) and node.meta.dtype.kind in "iu"


def writeable(node: Node) -> bool | None:
    """Whether NumPy's array for `node` is writeable; None for an input or a view of one
    (inputs' flags are not guarded). Views follow back to the array owning the memory; a
    `read_only` view op (`broadcast_to`, `diagonal`) makes the result read-only.

    >>> writeable(Node("x", None, (), (), None))  # a placeholder: an input
    """
    while node.op is not None and node.op.kind in (OpKind.VIEW, OpKind.MUTATION):
        if node.op.read_only and not node.kwargs.get("writeable", False):
            return False
        node = node.inputs[0]
    return None if node.op is None else True


def _refuse_broadcast_write(node: Node) -> None:
    # A write into a writeable broadcast view (`np.broadcast_arrays`) writes one element
    # through many indices: no backend models that, so it runs in Python.
    while node.op is not None and node.op.kind in (OpKind.VIEW, OpKind.MUTATION):
        if node.op.name == "broadcast_to" and node.kwargs.get("writeable", False):
            from .capture_result import Unsupported  # late: capture_result imports this module

            raise Unsupported("not supported yet: writing into a view from np.broadcast_arrays")
        node = node.inputs[0]


# Ops whose 0-d results NumPy returns as 0-d arrays although their kind gives scalars.
_ZERO_D_ARRAY_OPS = frozenset({"astype", "copy", "where"})
_SCALAR_KINDS = frozenset(
    {OpKind.POINTWISE, OpKind.REDUCTION, OpKind.INDEXING, OpKind.EXTERN, OpKind.RANDOM}
)


def gives_scalar(node: Node) -> bool:
    """Whether NumPy returns `node`'s value, when 0-d, as a NumPy scalar rather than a 0-d
    array: ufuncs, reductions, integer indexing and functions such as `dot` do; creation
    and views give 0-d arrays; `astype` keeps its input's kind.

    >>> gives_scalar(Node("x", None, (), (), None))
    False
    """
    if node.op is None:
        return False
    if node.op.name == "astype" and node.inputs and isinstance(node.inputs[0], Node):
        return gives_scalar(node.inputs[0])
    return node.op.kind in _SCALAR_KINDS and node.op.name not in _ZERO_D_ARRAY_OPS


def array_devices(inputs: Any) -> list[str]:
    """The devices of the array nodes among `inputs` (searched through lists and tuples)."""
    leaves, _ = tree_flatten(inputs)
    return [
        leaf.meta.device
        for leaf in leaves
        if isinstance(leaf, Node) and isinstance(leaf.meta, ArrayMeta)
    ]


def input_device(inputs: Any) -> str:
    """Where an op on `inputs` runs: the first non-"cpu" device among them, else "cpu"."""
    return next((device for device in array_devices(inputs) if device != "cpu"), "cpu")


def _format_value(value: Any) -> str:
    if isinstance(value, Node):
        return value.name
    if isinstance(value, Graph):
        return "<graph>"  # printed below its node as an indented block
    if isinstance(value, np.dtype):
        return f"{value.name}"
    if isinstance(value, type) and issubclass(value, np.generic):
        return np.dtype(value).name
    if isinstance(value, tuple):
        inner = ", ".join(_format_value(item) for item in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, np.generic):
        # A NumPy scalar is a strong operand: its dtype shows, unlike a weak Python `2.0`.
        return f"{value.dtype.name}({value.item()!r})"
    return repr(value)


class Graph:
    """A straight-line program of `Node`s, built in order and then frozen by use.

    >>> from numpile_capture import ArrayMeta, Graph, get_op
    >>> g = Graph()
    >>> a = g.placeholder("a", ArrayMeta((3,), "float64"))
    >>> g.output = g.call(get_op("sin"), a)
    """

    def __init__(self) -> None:
        # NOTE: a list in topological order; codegen walks it as is.
        self.nodes: list[Node] = []
        self.output: Any = None
        # Where each captured node came from; not part of the structure (nor the hash).
        self.locations: dict[Node, SourceLine] = {}
        self._names: set[str] = set()
        self._counter = 0

    @property
    def placeholders(self) -> list[Node]:
        return [node for node in self.nodes if node.op is None]

    def placeholder(self, name: str, meta: ArrayMeta | ScalarMeta) -> Node:
        """Add an input called `name` (made unique if taken)."""
        node = Node(self._unique(name), None, (), (), meta)
        self.nodes.append(node)
        return node

    def call(self, op: Op, *inputs: Any, **params: Any) -> Node:
        """Add a node applying `op`; its metadata comes from the op's meta rule.

        Exceptions raised by the meta rule (NumPy's own, for invalid programs)
        propagate to the caller and leave the graph unchanged.
        """
        if op.kind is OpKind.MUTATION and inputs and isinstance(inputs[0], Node):
            _refuse_broadcast_write(inputs[0])
        input_metas = [value.meta if isinstance(value, Node) else value for value in inputs]
        try:
            meta = op.meta(*input_metas, **params)
        except NotImplementedError as clash:
            # Two data-dependent sizes to broadcast: a run-time check node in front, then
            # the op on its checked operands (see ops/unbacked_broadcast.py).
            from .ops._shapes import UnbackedBroadcast
            from .ops.unbacked_broadcast import unify_operands

            if not isinstance(clash, UnbackedBroadcast) or op.kind is OpKind.MUTATION:
                raise  # an in-place op keeps its operands: a graph break, as before
            return self.call(op, *unify_operands(self, inputs, clash), **params)
        device = input_device(inputs)
        if isinstance(meta, ArrayMeta) and device != meta.device:
            meta = attrs.evolve(meta, device=device)  # meta rules compute on the host's terms
        return self.add_node(op, inputs, params, meta)

    def add_node(
        self, op: Op, inputs: tuple[Any, ...], params: dict[str, Any], meta: ArrayMeta | ScalarMeta
    ) -> Node:
        """Add a node whose metadata is already known (for passes that copy nodes)."""
        node = Node(self._fresh_name(), op, tuple(inputs), tuple(params.items()), meta)
        self.nodes.append(node)
        return node

    def output_nodes(self) -> list[Node]:
        leaves, _ = tree_flatten(self.output)
        return [leaf for leaf in leaves if isinstance(leaf, Node)]

    def users(self) -> dict[Node, list[Node]]:
        """For each node, the nodes that read it, in graph order."""
        result: dict[Node, list[Node]] = {node: [] for node in self.nodes}
        for node in self.nodes:
            for value in node.input_nodes():
                result[value].append(node)
        return result

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    def __str__(self) -> str:
        return "\n".join(self.format_lines("graph"))

    def format_lines(self, title: str) -> list[str]:
        """The printed graph as lines, headed `title(...)`; subgraphs (loop bodies) in the
        params of a node follow its line as indented blocks headed by the param's name."""
        header = ", ".join(node.format() for node in self.placeholders)
        lines = [f"{title}({header}):"]
        for node in self.nodes:
            if node.op is None:
                continue
            lines.append(f"  {node.format()}")
            for key, value in node.params:
                if isinstance(value, Graph):
                    lines += [f"    {line}" for line in value.format_lines(key)]
        lines.append(f"  return {_format_output(self.output)}")
        return lines

    def structural_hash(self) -> str:
        """A stable hex digest of the graph's structure, metadata and params."""
        return hashlib.sha256(str(self).encode()).hexdigest()

    def adopt_names(self, other: Graph) -> None:
        """Count `other`'s node names as taken here: a copy of `other` keeps its names and
        later nodes get fresh ones."""
        self._names |= other._names
        self._counter = max(self._counter, other._counter)

    def _fresh_name(self) -> str:
        while f"v{self._counter}" in self._names:
            self._counter += 1
        return self._unique(f"v{self._counter}")

    def _unique(self, name: str) -> str:
        candidate = name
        suffix = 1
        while candidate in self._names:
            candidate = f"{name}_{suffix}"
            suffix += 1
        self._names.add(candidate)
        return candidate


def _format_output(output: Any) -> str:
    return str(tree_map(lambda leaf: _Printed(_format_value(leaf)), output))


class _Printed:
    # Prints as given, so containers of nodes print their names without quotes.
    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text
