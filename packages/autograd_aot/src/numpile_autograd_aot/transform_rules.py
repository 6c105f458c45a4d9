"""Trace rules of the transforms: `grad`, `value_and_grad` and `vjp` called from captured code.

Inside `numpile.compile`, a call to a transform's wrapper does not run the
transform: its trace rule (`numpile_capture.register_transform`) inlines the
differentiated function into the caller's graph, on fresh aliases of the
differentiated arguments, and appends the reverse sweep of that region
(`append_backward`) to the same graph. The compiled function then holds the
whole joint computation in one graph, which the backend compiles and fuses
like any other; there is nothing to partition, since forward and backward
run in the same call.

    >>> @numpile.compile  # doctest: +SKIP
    ... def step(w, x):
    ...     return w - 0.1 * grad(loss)(w, x)   # one graph: forward and backward of loss

What the rules cannot put in the graph raises `Unsupported`, which makes
the call a graph break where the transform runs eagerly (same values): a
differentiated function that writes to arrays, a differentiated leaf that is
neither an array nor a Python float, a transform of a function made inside
the compiled code. A graph break inside the differentiated function
surfaces from the eager transform as `CaptureError`, naming the break.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np

from numpile_capture import (
    Graph,
    Node,
    OpKind,
    ScalarInputVar,
    TransformCall,
    Unsupported,
    get_op,
    register_transform,
    tree_flatten,
    tree_unflatten,
)
from numpile_capture.trace_rules import RuleKind, rule_for

from .joint import append_backward, input_cotangent
from .vjp_table import differentiable

__all__ = [
    "GradSpec",
    "argnums_of",
    "expand_grad",
    "expand_vjp",
    "fold_constructor",
    "fold_transform",
]


@attrs.frozen
class GradSpec:
    """What a `grad` / `value_and_grad` wrapper computes: its function, `argnums` (a tuple;
    `single` when given as one int), `has_aux`, and `kind` ("grad" or "value_and_grad").

        >>> GradSpec(lambda x: x, (0,), True, False, "grad").kind
        'grad'
    """

    fn: Any
    argnums: tuple[int, ...]
    single: bool
    has_aux: bool
    kind: str


@attrs.frozen(eq=False)
class _Region:
    # The inlined forward of one transform call: its op nodes, the aliases standing for the
    # differentiated leaves (None for a leaf without gradient), and the output tree.
    nodes: tuple[Node, ...]
    targets: tuple[Node | None, ...]
    output: Any


def _alias_leaf(graph: Graph, leaf: Any) -> tuple[Any, Node | None]:
    # A differentiated leaf as a fresh node of its own, so that only this path is
    # differentiated (a closure reading the same array stays a constant, as in JAX).
    if isinstance(leaf, ScalarInputVar):
        leaf = leaf.as_python_constant()  # differentiated: its value becomes a constant
    if isinstance(leaf, Node):
        if differentiable(leaf.meta):
            alias = graph.call(get_op("alias"), leaf)
            return alias, alias
        return leaf, None
    if type(leaf) is float:
        node = graph.call(get_op("full"), leaf, shape=(), dtype=np.float64)
        return node, node
    if leaf is None or type(leaf) in (bool, int):
        return leaf, None
    raise Unsupported(f"not supported yet: differentiating a {type(leaf).__name__} in a graph")


def _trace_region(
    call: TransformCall, fn: Any, args: Sequence[Any], argnums: Sequence[int]
) -> tuple[_Region, list[Any]]:
    # Inline `fn` with its differentiated arguments aliased; the specs of those arguments.
    graph = call.graph
    start = len(graph.nodes)
    replaced = list(args)
    targets: list[Node | None] = []
    specs = []
    for argnum in argnums:
        if argnum >= len(args):
            raise TypeError(f"argnums {argnum} is out of range for {len(args)} arguments")
        leaves, spec = tree_flatten(args[argnum])
        aliased = [_alias_leaf(graph, leaf) for leaf in leaves]
        targets += [target for _, target in aliased]
        replaced[argnum] = tree_unflatten(spec, [value for value, _ in aliased])
        specs.append(spec)
    output = _inline(call, fn, tuple(replaced), dict(call.kwargs))
    nodes = tuple(node for node in graph.nodes[start:] if node.op is not None)
    written = [node for node in nodes if node.op is not None and node.op.kind is OpKind.MUTATION]
    if written:
        raise Unsupported(
            f"not supported yet: differentiating {_name(fn)}, which writes to arrays "
            f"({written[0].op.name}), inside a compiled function; the transform runs eagerly"  # type: ignore[union-attr]
        )
    return _Region(nodes, tuple(targets), output), specs


def _inline(call: TransformCall, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    # `fn` traced into the graph; a transform's function (`grad(f)` made in captured code,
    # under `jacfwd`) by its own rule, since inlining it would trace its eager body.
    rule = rule_for(fn)
    if rule is not None and rule.kind is RuleKind.TRANSFORM and rule.expand is not None:
        return rule.expand(TransformCall(call.graph, args, kwargs, call.inline))
    return call.inline(fn, args, kwargs)


def _cotangents(graph: Graph, region: _Region, seeds: list[tuple[Any, Node]]) -> list[Any]:
    cotangents = append_backward(graph, region.nodes, [t for t in region.targets if t], seeds)
    return [
        None if target is None else input_cotangent(graph, cotangents, target)
        for target in region.targets
    ]


def _per_argument(specs: Sequence[Any], grads: list[Any]) -> list[Any]:
    found = iter(grads)
    return [tree_unflatten(spec, [next(found) for _ in range(spec.num_leaves)]) for spec in specs]


def expand_grad(spec: GradSpec, call: TransformCall) -> Any:
    """The trace rule of a `grad` / `value_and_grad` wrapper: forward and backward nodes.

    >>> expand_grad(GradSpec(loss, (0,), True, False, "grad"), call)  # doctest: +SKIP
    """
    graph = call.graph
    region, specs = _trace_region(call, spec.fn, call.args, spec.argnums)
    output = region.output
    value = output[0] if spec.has_aux and isinstance(output, tuple | list) else output
    meta = value.meta if isinstance(value, Node) else None
    if meta is None or not differentiable(meta) or tuple(getattr(meta, "shape", ())) != ():
        raise TypeError(
            f"grad of {_name(spec.fn)} needs a scalar float output, got {meta or value}"
        )
    if meta.dtype.kind == "c":  # type: ignore[union-attr]
        raise TypeError("grad needs a real scalar output; use vjp for complex outputs")
    seed = graph.call(get_op("ones"), shape=(), dtype=meta.dtype)  # type: ignore[union-attr]
    per_arg = _per_argument(specs, _cotangents(graph, region, [(value, seed)]))
    gradient = per_arg[0] if spec.single else tuple(per_arg)
    if spec.kind == "value_and_grad":
        return (output, gradient)
    return (gradient, output[1]) if spec.has_aux else gradient


def expand_vjp(call: TransformCall) -> Any:
    """The trace rule of `vjp(fn, *primals, has_aux=...)`: the forward nodes now, and a
    pullback whose own trace rule appends the backward nodes where the code calls it.

    >>> expand_vjp(call)  # doctest: +SKIP
    """
    if not call.args:
        raise TypeError("vjp() needs a function")
    fn, primals = call.args[0], call.args[1:]
    unknown = set(call.kwargs) - {"has_aux", "compiler", "partitioner"}
    if unknown:
        raise TypeError(f"vjp() got unexpected keyword argument(s) {', '.join(sorted(unknown))}")
    has_aux = bool(call.kwargs.get("has_aux", False))
    inner = TransformCall(call.graph, tuple(primals), {}, call.inline)
    region, specs = _trace_region(inner, fn, primals, range(len(primals)))
    output = region.output
    value = output[0] if has_aux else output
    value_leaves, _ = tree_flatten(value)

    def pullback(cotangent: Any) -> tuple[Any, ...]:
        raise RuntimeError(
            "a vjp function made inside a compiled function can only be called inside it; "
            "return the cotangents instead, or call numpile.vjp outside the compiled function"
        )

    def expand_pullback(pull: TransformCall) -> Any:
        if len(pull.args) != 1 or pull.kwargs:
            raise TypeError("a vjp function takes one cotangent")
        leaves, _ = tree_flatten(pull.args[0])
        if len(leaves) != len(value_leaves):
            raise ValueError(
                f"the cotangent has {len(leaves)} leaves; the output of "
                f"{_name(fn)} has {len(value_leaves)}"
            )
        seeds = [
            (out, _cotangent_node(pull.graph, ct, out))
            for out, ct in zip(value_leaves, leaves, strict=True)
            if isinstance(out, Node) and differentiable(out.meta)
        ]
        return tuple(_per_argument(specs, _cotangents(pull.graph, region, seeds)))

    reason = f"the vjp function of {_name(fn)}"
    register_transform(pullback, expand_pullback, reason)
    return (value, pullback, output[1]) if has_aux else (value, pullback)


def _cotangent_node(graph: Graph, cotangent: Any, out: Node) -> Node:
    meta = out.meta
    if not isinstance(cotangent, Node):
        return graph.call(get_op("full"), cotangent, shape=meta.shape, dtype=meta.dtype)  # type: ignore[union-attr]
    if tuple(cotangent.meta.shape) != tuple(meta.shape):  # type: ignore[union-attr]
        raise ValueError(
            f"the cotangent has shape {tuple(cotangent.meta.shape)}; "  # type: ignore[union-attr]
            f"the output has shape {tuple(meta.shape)}"  # type: ignore[union-attr]
        )
    if cotangent.meta.dtype != meta.dtype:  # type: ignore[union-attr]
        return graph.call(get_op("astype"), cotangent, dtype=meta.dtype)  # type: ignore[union-attr]
    return cotangent


def fold_constructor(
    make: Callable[..., Any],
    call: TransformCall,
    rule: Callable[[inspect.BoundArguments], Callable[[TransformCall], Any]],
) -> Any:
    """The trace rule of a transform's constructor (`grad`, `jacfwd`, ...) called in captured
    code on constant arguments: on a Python function it runs, and the function it returns
    is traced by its own rule; on a function the captured code made (a lambda) it returns a
    stand-in that exists only in this graph, traced by `rule(bound arguments)`.

    >>> fold_constructor(grad, call, lambda bound: expand)  # doctest: +SKIP
    """
    leaves, _ = tree_flatten((call.args, call.kwargs))
    if any(isinstance(leaf, Node) for leaf in leaves):
        raise Unsupported("not supported yet: arrays as arguments of a transform's constructor")
    bound = inspect.signature(make).bind(*call.args, **call.kwargs)
    bound.apply_defaults()
    fn = bound.arguments["fn"]
    if isinstance(fn, types.FunctionType) or hasattr(fn, "_numpile_original"):
        return make(*call.args, **call.kwargs)

    def traced_only(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            f"a {make.__name__} of a function made inside a compiled function can only be "
            "called inside it"
        )

    register_transform(traced_only, rule(bound), f"{make.__name__} of {_name(fn)}")
    return traced_only


def argnums_of(bound: inspect.BoundArguments) -> tuple[tuple[int, ...], bool]:
    """A constructor's `argnums` as a tuple, and whether it was given as one int.

    >>> argnums_of(inspect.signature(lambda fn, argnums=0: None).bind(len))
    ((0,), True)
    """
    bound.apply_defaults()
    argnums = bound.arguments["argnums"]
    if isinstance(argnums, int):
        return (argnums,), True
    return tuple(argnums), False


def fold_transform(make: Callable[..., Any], call: TransformCall) -> Any:
    """The trace rule of `grad` / `value_and_grad` themselves (see `fold_constructor`).

    >>> fold_transform(grad, call)  # doctest: +SKIP
    """

    def rule(bound: inspect.BoundArguments) -> Callable[[TransformCall], Any]:
        numbers, single = argnums_of(bound)
        has_aux = bool(bound.arguments["has_aux"])
        spec = GradSpec(bound.arguments["fn"], numbers, single, has_aux, make.__name__)
        return lambda inner: expand_grad(spec, inner)

    return fold_constructor(make, call, rule)


def _name(fn: Any) -> str:
    # A function's qualified name; a function made by captured code is a variable with code.
    code = getattr(fn, "code", None)
    return str(getattr(fn, "__qualname__", None) or getattr(code, "co_qualname", fn))
