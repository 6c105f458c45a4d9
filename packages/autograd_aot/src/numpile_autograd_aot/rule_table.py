"""A table of transform rules keyed by op, and what every rule sees: what the VJP, JVP and
batching tables share.

Each table holds the op set's rules, registered by decorator from its rule modules, and,
kept apart, the rules of user functions' opaque ops (`custom_vjp` / `custom_jvp`), so
that `ops()` lists the op set's rules only. A table loads its own rule modules, once, on
its first read: `load` is the one function that imports them (late, because those modules
import the table to register into it).

    >>> from numpile_capture import get_op
    >>> table: RuleTable[str] = RuleTable("demo", load=lambda: None)
    >>> _ = table.register(get_op("sin"), get_op("cos"))("rule of sin and cos")
    >>> table.get(get_op("cos")), table.get(get_op("tan"))
    ('rule of sin and cos', None)
    >>> [op.name for op in table.ops()]
    ['sin', 'cos']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

import attrs

from numpile_capture import ArrayMeta, Graph, Node, Op, get_op

__all__ = ["RuleContext", "RuleTable"]

R = TypeVar("R")


class RuleTable(Generic[R]):
    """Rules of kind `R` keyed by op (ops hash by identity), in registration order.

    `name` says which table it is ("VJP", "JVP", "batching"); `load` imports the modules
    that fill it and runs before the first `get` or `ops`.

        >>> table: RuleTable[int] = RuleTable("demo", load=lambda: None)
        >>> table.register_function(allowed_op(f), 1)  # doctest: +SKIP
    """

    def __init__(self, name: str, *, load: Callable[[], object]) -> None:
        self.name = name
        self._load = load
        self._loaded = False
        # NOTE: insertion-ordered, so `ops()` lists rules in registration order.
        self._rules: dict[Op, R] = {}
        self._function_rules: dict[Op, R] = {}

    def register(self, *ops: Op) -> Callable[[R], R]:
        """A decorator that registers its function as the rule of each op in `ops`.

        >>> @VJP_RULES.register(get_op("sin"))  # doctest: +SKIP
        ... def _sin_vjp(ctx): ...
        """

        def decorate(rule: R) -> R:
            for op in ops:
                self._rules[op] = rule
            return rule

        return decorate

    def register_function(self, op: Op, rule: R) -> None:
        """Set the rule of the opaque op of a user function (see `custom_rule`)."""
        self._function_rules[op] = rule

    def get(self, op: Op) -> R | None:
        """The rule of `op` (the op set's, else a user function's), or None."""
        self._ensure_loaded()
        found = self._rules.get(op)
        return found if found is not None else self._function_rules.get(op)

    def ops(self) -> list[Op]:
        """The ops of the op set that have a rule, in registration order."""
        self._ensure_loaded()
        return list(self._rules)

    def _ensure_loaded(self) -> None:
        if not self._loaded:
            self._load()
            self._loaded = True

    def __repr__(self) -> str:
        return f"RuleTable({self.name!r}, {len(self._rules)} rules)"


@attrs.frozen(eq=False)
class RuleContext:
    """What every rule sees: the graph it adds nodes to and the node it is the rule of; the
    VJP, JVP and batching contexts add their own fields.

        >>> from numpile_capture import ArrayMeta
        >>> graph = Graph()
        >>> x = graph.placeholder("x", ArrayMeta((3,), "float64"))
        >>> ctx = RuleContext(graph, graph.call(get_op("sum"), x, axis=(0,)))
        >>> ctx.params, ctx.call("negative", ctx.node).op.name
        ({'axis': (0,)}, 'negative')
    """

    graph: Graph
    node: Node

    @property
    def params(self) -> dict[str, Any]:
        """The node's parameters (its op's keyword arguments)."""
        return self.node.kwargs

    @property
    def meta(self) -> ArrayMeta:
        """The node's result metadata."""
        meta = self.node.meta
        assert isinstance(meta, ArrayMeta)
        return meta

    def call(self, op_name: str, *inputs: Any, **params: Any) -> Node:
        """Add a node applying the op called `op_name` (see `Graph.call`)."""
        return self.graph.call(get_op(op_name), *inputs, **params)
