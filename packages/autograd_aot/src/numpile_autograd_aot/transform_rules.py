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

A `for` loop in the differentiated function stays a loop there, with the loop VJP
`grad` uses (`transform_region.trace_reversed`); a loop it does not cover is unrolled.

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

from numpile_capture import (
    Node,
    TransformCall,
    Unsupported,
    get_op,
    register_transform,
    tree_flatten,
    tree_unflatten,
)

from .loop_sharing import map_tree, share_forward_loops
from .loop_stacks import LoopStacks
from .transform_region import (
    Region,
    cotangent_node,
    drop_added,
    function_name,
    map_region,
    region_cotangents,
    trace_reversed,
)
from .vjp_loop import LoopVjpUnsupported
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


def _per_argument(specs: Sequence[Any], grads: list[Any]) -> list[Any]:
    found = iter(grads)
    return [tree_unflatten(spec, [next(found) for _ in range(spec.num_leaves)]) for spec in specs]


def expand_grad(spec: GradSpec, call: TransformCall) -> Any:
    """The trace rule of a `grad` / `value_and_grad` wrapper: forward and backward nodes.

    >>> expand_grad(GradSpec(loss, (0,), True, False, "grad"), call)  # doctest: +SKIP
    """
    graph = call.graph
    shared: dict[Node, Node] = {}

    def sweep(region: Region) -> list[Any]:
        shared.clear()
        value = _scalar_output(spec, region.output)
        seed = graph.call(get_op("ones"), shape=(), dtype=value.meta.dtype)  # type: ignore[union-attr]
        return region_cotangents(graph, region, [(value, seed)], shared_loops=shared)

    region, specs, cotangents = trace_reversed(call, spec.fn, call.args, spec.argnums, sweep)
    # A kept loop runs once: its stacking loop stands for it (as in `build_joint`).
    replaced = share_forward_loops(graph, shared)
    output = map_tree(region.output, replaced)
    per_arg = _per_argument(specs, map_tree(cotangents, replaced))
    gradient = per_arg[0] if spec.single else tuple(per_arg)
    if spec.kind == "value_and_grad":
        return (output, gradient)
    return (gradient, output[1]) if spec.has_aux else gradient


def _scalar_output(spec: GradSpec, output: Any) -> Node:
    # The differentiated value of a grad's function: a real float scalar node.
    value = output[0] if spec.has_aux and isinstance(output, tuple | list) else output
    meta = value.meta if isinstance(value, Node) else None
    if meta is None or not differentiable(meta) or tuple(getattr(meta, "shape", ())) != ():
        raise TypeError(
            f"grad of {function_name(spec.fn)} needs a scalar float output, got {meta or value}"
        )
    if meta.dtype.kind == "c":  # type: ignore[union-attr]
        raise TypeError("grad needs a real scalar output; use vjp for complex outputs")
    assert isinstance(value, Node)
    return value


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
    graph = call.graph
    shared: dict[Node, Node] = {}
    stacked: dict[Node, LoopStacks] = {}

    def probe(region: Region) -> None:
        # The pullback's sweep is appended where the code calls it, after values of this
        # region have escaped: the loops are checked now by a sweep from every output.
        # Its nodes are dropped, except the loops stacking what a reverse loop reads,
        # which then stand for the forward loops (the forward runs once).
        shared.clear()
        stacked.clear()
        end = len(graph.nodes)
        value = region.output[0] if has_aux else region.output
        leaves, _ = tree_flatten(value)
        seeds = [
            (out, cotangent_node(graph, 1.0, out))
            for out in leaves
            if isinstance(out, Node) and differentiable(out.meta)
        ]
        try:
            region_cotangents(graph, region, seeds, shared_loops=shared, stacked_loops=stacked)
        except LoopVjpUnsupported:
            drop_added(graph, end)
            raise  # traced again with the loops unrolled
        except NotImplementedError:
            shared.clear()  # a missing rule is raised where the pullback is called, as before
            stacked.clear()
        for loop in [loop for loop, twin in shared.items() if twin not in stacked]:
            del shared[loop]  # its stacking loop differentiates a first iteration too
        twins = set(shared.values())
        outputs = [
            node
            for node in graph.nodes[end:]
            if node.op is not None and node.op.name == "loop_output" and node.inputs[0] in twins
        ]
        drop_added(graph, end, keep=[*twins, *outputs])

    first, specs, _ = trace_reversed(inner, fn, primals, range(len(primals)), probe)
    replaced = share_forward_loops(graph, shared)
    region = map_region(first, replaced)
    held = {replaced.get(loop, loop): stacks.mapped(replaced) for loop, stacks in stacked.items()}
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
                f"{function_name(fn)} has {len(value_leaves)}"
            )
        seeds = [
            (out, cotangent_node(pull.graph, ct, out))
            for out, ct in zip(value_leaves, leaves, strict=True)
            if isinstance(out, Node) and differentiable(out.meta)
        ]
        found = region_cotangents(pull.graph, region, seeds, stacked_loops=dict(held))
        return tuple(_per_argument(specs, found))

    reason = f"the vjp function of {function_name(fn)}"
    register_transform(pullback, expand_pullback, reason)
    return (value, pullback, output[1]) if has_aux else (value, pullback)


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

    register_transform(traced_only, rule(bound), f"{make.__name__} of {function_name(fn)}")
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
