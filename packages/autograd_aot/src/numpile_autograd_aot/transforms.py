"""Transforms: `grad`, `value_and_grad` and `vjp` of plain NumPy functions, ahead of time.

A call captures the function on its arguments (`numpile_capture`), makes the
graph pure (`functionalize`), builds the joint forward/backward graph, cuts it
with a partitioner, and runs the forward graph at once and the backward graph
when asked, from the saved values only. The pipeline is cached per transform
and guarded like a compiled function: a call whose arguments pass the guards
reuses it. `compiler(graph, example_inputs) -> callable` compiles each half
(default: `run_graph`), so the inductor can take over.

    >>> import numpy as np
    >>> def loss(w, x):
    ...     return np.sum(np.tanh(x @ w) ** 2)
    >>> g = grad(loss)(np.ones(3), np.ones((2, 3)))
    >>> g.shape
    (3,)

Arguments are pytrees (tuples, lists, dicts) of arrays; Python floats among
the differentiated arguments are differentiated as 0-d float64 arrays.
Integer and bool leaves get None. Mutations of the inputs happen as in
NumPy; the gradient is with respect to the values passed in.
"""

from __future__ import annotations

import inspect
import logging
import types
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np

from numpile_capture import (
    Graph,
    Node,
    Unsupported,
    capture_function,
    run_graph,
    tree_flatten,
    tree_unflatten,
)
from numpile_guards import (
    GuardCheck,
    ItemSource,
    LocalSource,
    Source,
    compile_fetch,
    compile_guards,
)

from .functionalization import FunctionalGraph, apply_epilogue, functionalize
from .joint import build_joint
from .partition import Partition, min_cut_partition
from .vjp import differentiable

log = logging.getLogger("numpile.autograd_aot")

__all__ = ["CaptureError", "Compiler", "grad", "run_graph_compiler", "value_and_grad", "vjp"]

Compiler = Callable[[Graph, Sequence[Any]], Callable[..., Any]]
Partitioner = Callable[..., Partition]


class CaptureError(TypeError):
    """A function given to a transform could not be captured; says where and why.

    >>> raise CaptureError("not supported yet: print (model.py:3)")  # doctest: +SKIP
    """


def run_graph_compiler(graph: Graph, example_inputs: Sequence[Any]) -> Callable[..., Any]:
    """The default compiler: run the graph op by op with NumPy.

    >>> run_graph_compiler(graph, [x])(x)  # doctest: +SKIP
    """

    def run(*inputs: Any) -> Any:
        return run_graph(graph, inputs)

    return run


@attrs.define(eq=False)
class _Plan:
    # One cached pipeline: guards, input fetching, pure graph, partition, compiled halves.
    check: GuardCheck
    fetch: Callable[..., tuple[Any, ...]]
    functional: FunctionalGraph
    partition: Partition
    leaf_inputs: tuple[int | None, ...]
    diff_inputs: tuple[int, ...]
    tangent_outputs: tuple[int, ...]
    forward: Callable[..., Any]
    backward: Callable[..., Any] | None = None


@attrs.define(eq=False)
class _Transform:
    fn: Any  # a types.FunctionType (typed Any: mypy would bind it as a method)
    argnums: tuple[int, ...]
    mode: str  # "grad" (one scalar output, maybe with aux) or "vjp" (every float output)
    has_aux: bool
    compiler: Compiler
    partitioner: Partitioner
    plans: list[_Plan] = attrs.field(factory=list)

    def forward(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
        """Run the forward; return the output tree and a function of the cotangent leaves."""
        args = tuple(
            _as_array_tree(arg) if i in self.argnums else arg for i, arg in enumerate(args)
        )
        bound = inspect.signature(self.fn).bind(*args, **kwargs)
        bound.apply_defaults()
        local = dict(bound.arguments)
        globals_ = self.fn.__globals__
        plan = next((p for p in self.plans if p.check(local, globals_, self.fn)), None)
        if plan is None:
            plan = self._plan(args, kwargs, local)
            self.plans.append(plan)
        inputs = plan.fetch(local, globals_, self.fn)
        results = plan.forward(*inputs)
        pure_count = len(plan.functional.graph.output)
        output = apply_epilogue(plan.functional, inputs, results[:pure_count])
        saved = tuple(results[pure_count:])
        leaves = [leaf for i in self.argnums for leaf in tree_flatten(args[i])[0]]

        def backward(cotangent_leaves: Sequence[Any]) -> list[Any]:
            if plan.backward is None:
                plan.backward = self.compiler(plan.partition.backward, [*saved, *cotangent_leaves])
            grads = plan.backward(*saved, *cotangent_leaves)
            by_input = dict(zip(plan.diff_inputs, grads, strict=True))
            return [
                _leaf_grad(leaf, by_input, index)
                for leaf, index in zip(leaves, plan.leaf_inputs, strict=True)
            ]

        return output, (plan, backward)

    def _plan(self, args: tuple[Any, ...], kwargs: dict[str, Any], local: dict[str, Any]) -> _Plan:
        try:
            result = capture_function(self.fn, args, kwargs)
        except Unsupported as error:
            where = f" ({error.filename}:{error.lineno})" if error.filename else ""
            raise CaptureError(
                f"cannot differentiate {self.fn.__qualname__}: {error.reason}{where}; "
                "differentiated functions must be captured whole (no graph breaks)"
            ) from error
        functional = functionalize(result.graph)
        names = [source.name for source in result.input_sources]
        leaf_inputs = tuple(
            names.index(name) if name in names else None
            for name in self._leaf_source_names(args, local)
        )
        diff_inputs = tuple(sorted({i for i in leaf_inputs if i is not None}))
        tangent_outputs = self._tangent_outputs(functional)
        joint = build_joint(functional.graph, diff_inputs, tangent_outputs)
        partition = self.partitioner(joint)
        inputs = compile_fetch(result.input_sources)(local, self.fn.__globals__, self.fn)
        forward = self.compiler(partition.forward, list(inputs))
        log.debug("planned %s:\n%s", self.fn.__qualname__, partition)
        return _Plan(
            compile_guards(result.guards),
            compile_fetch(result.input_sources),
            functional,
            partition,
            leaf_inputs,
            diff_inputs,
            tangent_outputs,
            forward,
        )

    def _leaf_source_names(self, args: tuple[Any, ...], local: dict[str, Any]) -> list[str]:
        parameters = list(inspect.signature(self.fn).parameters.values())
        names: list[str] = []
        for argnum in self.argnums:
            if argnum >= len(args) or argnum >= len(parameters):
                raise TypeError(f"argnums {argnum} is out of range for {len(args)} arguments")
            parameter = parameters[argnum]
            if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
                raise TypeError("argnums cannot point into *args")
            names += [s.name for s in _leaf_sources(LocalSource(parameter.name), args[argnum])]
        return names

    def _tangent_outputs(self, functional: FunctionalGraph) -> tuple[int, ...]:
        leaves = functional.graph.output[: functional.num_outputs]
        if self.mode == "vjp":
            return tuple(
                i
                for i, leaf in enumerate(leaves)
                if isinstance(leaf, Node) and differentiable(leaf.meta)
            )
        position = 0
        leaf = leaves[position] if leaves else None
        meta = leaf.meta if isinstance(leaf, Node) else None
        if meta is None or not differentiable(meta) or tuple(getattr(meta, "shape", ())) != ():
            raise TypeError(
                f"grad of {self.fn.__qualname__} needs a scalar float output, got {meta or leaf}"
            )
        if meta.dtype.kind == "c":  # type: ignore[union-attr]
            raise TypeError("grad needs a real scalar output; use vjp for complex outputs")
        return (position,)


def _leaf_sources(base: Source, tree: Any) -> list[Source]:
    if type(tree) in (tuple, list):
        return [s for i, item in enumerate(tree) for s in _leaf_sources(ItemSource(base, i), item)]
    if type(tree) is dict:
        return [s for key, item in tree.items() for s in _leaf_sources(ItemSource(base, key), item)]
    return [base]


def _as_array_tree(tree: Any) -> Any:
    leaves, spec = tree_flatten(tree)
    converted = [np.asarray(leaf, np.float64) if type(leaf) is float else leaf for leaf in leaves]
    return tree_unflatten(spec, converted)


def _leaf_grad(leaf: Any, by_input: dict[int, Any], index: int | None) -> Any:
    array = np.asarray(leaf)
    if array.dtype.kind not in "fc":
        return None
    if index is None:
        return np.zeros_like(array)
    return by_input[index]


def _normalize_argnums(argnums: int | Sequence[int]) -> tuple[tuple[int, ...], bool]:
    if isinstance(argnums, int):
        return (argnums,), True
    return tuple(argnums), False


def _make(
    fn: Callable[..., Any],
    argnums: tuple[int, ...],
    mode: str,
    has_aux: bool,
    compiler: Compiler | None,
    partitioner: Partitioner | None,
) -> _Transform:
    if not isinstance(fn, types.FunctionType):
        raise TypeError(f"can only differentiate Python functions, not {type(fn).__name__}")
    return _Transform(
        fn,
        argnums,
        mode,
        has_aux,
        compiler or run_graph_compiler,
        partitioner or min_cut_partition,
    )


def value_and_grad(
    fn: Callable[..., Any],
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    *,
    compiler: Compiler | None = None,
    partitioner: Partitioner | None = None,
) -> Callable[..., Any]:
    """`fn` returning `(value, grad)`; with `has_aux`, `fn` returns `(value, aux)` and the
    result is `((value, aux), grad)`. `grad` has the structure of the argument (a tuple of
    them when `argnums` is a sequence).

    >>> value, g = value_and_grad(lambda x: np.sum(x * x))(np.arange(3.0))
    >>> g
    array([0., 2., 4.])
    """
    numbers, single = _normalize_argnums(argnums)
    transform = _make(fn, numbers, "grad", has_aux, compiler, partitioner)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        output, (_, backward) = transform.forward(args, kwargs)
        leaves, _ = tree_flatten(output)
        seed = np.ones((), dtype=np.asarray(leaves[0]).dtype)
        grads = iter(backward([seed]))
        per_arg = []
        for argnum in numbers:
            spec = tree_flatten(_as_array_tree(args[argnum]))[1]
            per_arg.append(tree_unflatten(spec, [next(grads) for _ in range(spec.num_leaves)]))
        result = per_arg[0] if single else tuple(per_arg)
        return output, result

    wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
    return wrapper


def grad(
    fn: Callable[..., Any],
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    *,
    compiler: Compiler | None = None,
    partitioner: Partitioner | None = None,
) -> Callable[..., Any]:
    """The gradient of a scalar-valued NumPy function with respect to argument(s) `argnums`.

    >>> grad(lambda x: np.sum(np.sin(x)))(np.zeros(2))
    array([1., 1.])
    """
    inner = value_and_grad(fn, argnums, has_aux, compiler=compiler, partitioner=partitioner)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        output, gradient = inner(*args, **kwargs)
        return (gradient, output[1]) if has_aux else gradient

    wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
    return wrapper


def vjp(
    fn: Callable[..., Any],
    *primals: Any,
    has_aux: bool = False,
    compiler: Compiler | None = None,
    partitioner: Partitioner | None = None,
) -> Any:
    """`(fn(*primals), vjp_fn)`: `vjp_fn(cotangent)` maps a cotangent shaped like the output
    to one cotangent per primal, running the backward graph from saved values only.

    >>> out, vjp_fn = vjp(np.sin, np.zeros(2))  # doctest: +SKIP
    >>> out, vjp_fn = vjp(lambda x: np.sin(x), np.zeros(2))
    >>> vjp_fn(np.ones(2))
    (array([1., 1.]),)
    """
    numbers = tuple(range(len(primals)))
    transform = _make(fn, numbers, "vjp", has_aux, compiler, partitioner)
    output, (plan, backward) = transform.forward(primals, {})
    value = output[0] if has_aux else output
    specs = [tree_flatten(_as_array_tree(p))[1] for p in primals]

    def vjp_fn(cotangent: Any) -> tuple[Any, ...]:
        leaves, _ = tree_flatten(cotangent)
        if has_aux:
            leaves = leaves + [None] * (plan.functional.num_outputs - len(leaves))
        chosen = [np.asarray(leaves[i]) for i in plan.tangent_outputs]
        grads = iter(backward(chosen))
        return tuple(
            tree_unflatten(spec, [next(grads) for _ in range(spec.num_leaves)]) for spec in specs
        )

    return (value, vjp_fn, output[1]) if has_aux else (value, vjp_fn)
