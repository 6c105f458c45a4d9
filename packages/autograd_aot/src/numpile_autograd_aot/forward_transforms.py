"""Forward-mode transforms and Jacobians: `jvp`, `linearize`, `jacfwd`, `jacrev`, `hessian`.

`jvp` captures the function like `grad` does, builds its tangent graph
(`jvp_graph.build_jvp`: one JVP rule per op, or the transpose of its VJP
rule), and cuts it with a partitioner: the first half computes the outputs
and the residuals, the second maps residuals and input tangents to the
output tangents. Plans are cached and guarded like `grad`'s. `linearize` runs
the first half once and returns the second as a function. `jacfwd` pushes
the columns of the identity through the tangent graph, `jacrev` pulls its
rows back through `vjp`; `hessian` is `jacfwd(grad(f))` (forward over
reverse), one graph holding `f`'s forward and backward and their tangents.

    >>> import numpy as np
    >>> out, tangent = jvp(np.sin, (np.zeros(2),), (np.ones(2),))
    >>> tangent
    array([1., 1.])
    >>> hessian(lambda x: np.sum(x**3))(np.array([1.0, 2.0]))
    array([[ 6.,  0.],
           [ 0., 12.]])

Arguments are pytrees; a Jacobian of output leaf `o` with respect to input
leaf `i` has shape `o.shape + i.shape`, and Jacobians of trees nest as in
JAX: the output's structure, each leaf holding the input's structure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from numpile_capture import register_transform
from numpile_capture import tree_unflatten as capture_unflatten

from .config import Compiler, Partitioner
from .functionalization import apply_epilogue
from .jacobian_rules import (
    expand_jacfwd,
    expand_jacrev,
    expand_jvp,
    expand_linearize,
    fold_hessian,
    fold_jacobian,
    traceable_jacobian,
)
from .pytree import tree_flatten, tree_unflatten
from .transforms import _make, _normalize_argnums, grad

__all__ = ["hessian", "jacfwd", "jacrev", "jvp", "linearize"]


def _linearized(
    fn: Callable[..., Any],
    args: Sequence[Any],
    argnums: tuple[int, ...],
    compiler: str | Compiler | None,
    partitioner: str | Partitioner | None,
    transforms: dict[Any, Any] | None = None,
) -> tuple[Any, Callable[[Sequence[Any]], Any]]:
    # The outputs, and a function mapping the tangent leaves of the arguments `argnums` to
    # the output tangents (a tree like the output) from the residuals the first half saved.
    key = (compiler, partitioner)
    transform = transforms.get(key) if transforms is not None else None
    if transform is None:
        transform = _make(fn, argnums, "jvp", False, compiler, partitioner)
        if transforms is not None:
            transforms[key] = transform
    args, local, leaves, specs = transform.prepare(tuple(args), {})
    key_specs = tuple(specs)
    globals_ = transform.fn.__globals__
    plan = next(
        (p for p in transform.plans if p.specs == key_specs and p.check(local, globals_, fn)),
        None,
    )
    if plan is None:
        plan = transform._plan(args, {}, local, leaves, key_specs)
        transform.plans.append(plan)
    inputs = plan.fetch(local, globals_, transform.fn)
    results = plan.forward(*inputs)
    functional = plan.functional
    pure_count = len(functional.graph.output)
    saved = tuple(np.copy(v) if isinstance(v, np.ndarray) else v for v in results[pure_count:])
    output = apply_epilogue(functional, inputs, results[:pure_count])
    with_tangent = plan.tangent_outputs  # the graph inputs that have tangent placeholders

    def tangents_of(tangent_leaves: Sequence[Any]) -> Any:
        if len(tangent_leaves) != len(leaves):
            raise ValueError(
                f"the tangents have {len(tangent_leaves)} leaves; the primals have {len(leaves)}"
            )
        by_input: dict[int, Any] = {}
        for index, tangent in zip(plan.leaf_inputs, tangent_leaves, strict=True):
            if index is not None and tangent is not None:
                meta = np.asarray(inputs[index])
                value = np.broadcast_to(np.asarray(tangent, meta.dtype), meta.shape)
                by_input[index] = value if index not in by_input else by_input[index] + value
        values = [
            by_input[i] if i in by_input else np.zeros_like(np.asarray(inputs[i]))
            for i in with_tangent
        ]
        if plan.backward is None:
            plan.backward = transform.compiler(plan.partition.backward, [*saved, *values])
        found = plan.backward(*saved, *values)
        leaves_out = [_tangent_leaf(value) for value in found[: functional.num_outputs]]
        return capture_unflatten(functional.output_spec, leaves_out)

    return output, tangents_of


def _tangent_leaf(value: Any) -> Any:
    return None if value is None else np.asarray(value)


def jvp(
    fn: Callable[..., Any],
    primals: Sequence[Any],
    tangents: Sequence[Any],
    *,
    compiler: str | Compiler | None = None,
    partitioner: str | Partitioner | None = None,
) -> tuple[Any, Any]:
    """`(fn(*primals), J @ tangents)`: the output and its directional derivative along
    `tangents` (a sequence like `primals`, each tangent a tree like its primal).

    >>> primals, tangents = (np.ones(2), np.full(2, 3.0)), (np.ones(2), np.zeros(2))
    >>> out, tangent = jvp(lambda x, y: x * y, primals, tangents)
    >>> tangent
    array([3., 3.])
    """
    primals = tuple(primals)
    tangents = tuple(tangents)
    if len(primals) != len(tangents):
        raise ValueError(f"jvp got {len(primals)} primals and {len(tangents)} tangents")
    tangent_leaves: list[Any] = []
    for primal, tangent in zip(primals, tangents, strict=True):
        want, got = tree_flatten(primal)[1], tree_flatten(tangent)
        if got[1] != want:
            raise ValueError(f"a tangent's structure {got[1]} differs from its primal's {want}")
        tangent_leaves += got[0]
    numbers = tuple(range(len(primals)))
    output, tangents_of = _linearized(fn, primals, numbers, compiler, partitioner)
    return output, tangents_of(tangent_leaves)


def linearize(
    fn: Callable[..., Any],
    *primals: Any,
    compiler: str | Compiler | None = None,
    partitioner: str | Partitioner | None = None,
) -> tuple[Any, Callable[..., Any]]:
    """`(fn(*primals), f_jvp)`: `f_jvp(*tangents)` is the JVP at `primals`, computed from the
    residuals the forward saved (the forward does not run again).

    >>> out, f_jvp = linearize(np.exp, np.zeros(2))
    >>> f_jvp(np.full(2, 3.0))
    array([3., 3.])
    """
    numbers = tuple(range(len(primals)))
    output, tangents_of = _linearized(fn, primals, numbers, compiler, partitioner)

    def f_jvp(*tangents: Any) -> Any:
        if len(tangents) != len(primals):
            raise TypeError(f"f_jvp takes {len(primals)} tangent(s), got {len(tangents)}")
        leaves: list[Any] = []
        for tangent in tangents:
            leaves += tree_flatten(tangent)[0]
        return tangents_of(leaves)

    return output, f_jvp


def _arguments(args: tuple[Any, ...], argnums: tuple[int, ...]) -> list[Any]:
    for argnum in argnums:
        if argnum >= len(args):
            raise TypeError(f"argnums {argnum} is out of range for {len(args)} arguments")
    return [args[i] for i in argnums]


def _float_leaf(leaf: Any) -> np.ndarray[Any, Any]:
    array = np.asarray(leaf)
    if array.dtype.kind not in "fc":
        raise TypeError(f"a Jacobian needs float or complex inputs, got {array.dtype}")
    return array


def _nest(out_tree: Any, in_specs: list[Any], blocks: list[list[list[Any]]], single: bool) -> Any:
    # blocks[o][a][i]: the Jacobian of output leaf o w.r.t. leaf i of argument a.
    out_leaves, out_spec = tree_flatten(out_tree)
    nested = []
    for o in range(len(out_leaves)):
        per_arg = [tree_unflatten(spec, blocks[o][a]) for a, spec in enumerate(in_specs)]
        nested.append(per_arg[0] if single else tuple(per_arg))
    return tree_unflatten(out_spec, nested)


def jacfwd(
    fn: Callable[..., Any],
    argnums: int | Sequence[int] = 0,
    *,
    compiler: str | Compiler | None = None,
) -> Callable[..., Any]:
    """The Jacobian of `fn` by forward mode: one tangent per input element, through the
    tangent graph of one cached, compiled `linearize`.

    >>> jacfwd(lambda x: x**2)(np.array([1.0, 2.0]))
    array([[2., 0.],
           [0., 4.]])
    """
    numbers, single = _normalize_argnums(argnums)
    transforms: dict[Any, Any] = {}

    def jacobian(*args: Any) -> Any:
        chosen = _arguments(args, numbers)
        in_leaves: list[list[np.ndarray[Any, Any]]] = []
        in_specs = []
        for value in chosen:
            leaves, spec = tree_flatten(value)
            in_leaves.append([_float_leaf(leaf) for leaf in leaves])
            in_specs.append(spec)
        flat_inputs = [leaf for leaves in in_leaves for leaf in leaves]
        output, tangents_of = _linearized(fn, args, numbers, compiler, None, transforms)
        out_leaves = [np.asarray(leaf) for leaf in tree_flatten(output)[0]]
        columns: list[list[Any]] = []  # columns[k]: output tangent leaves for basis k
        for k, leaf in enumerate(flat_inputs):
            for index in range(leaf.size):
                basis = [np.zeros_like(other) for other in flat_inputs]
                basis[k].reshape(-1)[index] = 1
                columns.append(tree_flatten(tangents_of(basis))[0])
        blocks: list[list[list[Any]]] = []
        for o, out_leaf in enumerate(out_leaves):
            per_arg: list[list[Any]] = []
            start = 0
            for leaves in in_leaves:
                per_leaf = []
                for leaf in leaves:
                    stacked = [
                        np.zeros_like(out_leaf) if c[o] is None else c[o]
                        for c in columns[start : start + leaf.size]
                    ]
                    jac = np.stack(stacked, axis=-1) if stacked else np.zeros((*out_leaf.shape, 0))
                    per_leaf.append(jac.reshape(out_leaf.shape + leaf.shape))
                    start += leaf.size
                per_arg.append(per_leaf)
            blocks.append(per_arg)
        return _nest(output, in_specs, blocks, single)

    return traceable_jacobian(jacobian, expand_jacfwd, fn, numbers, single, "jacfwd")


def jacrev(
    fn: Callable[..., Any],
    argnums: int | Sequence[int] = 0,
    *,
    compiler: str | Compiler | None = None,
) -> Callable[..., Any]:
    """The Jacobian of `fn` by reverse mode: one cotangent per output element, pulled back
    through one `vjp` (its backward graph runs once per row).

    >>> jacrev(lambda x: np.cumsum(x))(np.array([1.0, 2.0]))
    array([[1., 0.],
           [1., 1.]])
    """
    numbers, single = _normalize_argnums(argnums)
    transform = _make(fn, numbers, "vjp", False, compiler, None)

    def jacobian(*args: Any) -> Any:
        chosen = _arguments(args, numbers)
        output, pullback = _pullback(transform, args)
        out_leaves, out_spec = tree_flatten(output)
        out_arrays = [np.asarray(leaf) for leaf in out_leaves]
        in_leaves_per_arg = [[_float_leaf(x) for x in tree_flatten(a)[0]] for a in chosen]
        in_specs = [tree_flatten(a)[1] for a in chosen]
        blocks: list[list[list[Any]]] = []
        for o, out_leaf in enumerate(out_arrays):
            rows: list[list[list[Any]]] = []
            for index in range(out_leaf.size):
                seeds = [np.zeros_like(leaf) for leaf in out_arrays]
                seeds[o].reshape(-1)[index] = 1
                pulled = pullback(tree_unflatten(out_spec, seeds))
                rows.append([tree_flatten(arg)[0] for arg in pulled])
            per_arg: list[list[Any]] = []
            for a, in_leaves in enumerate(in_leaves_per_arg):
                per_leaf = []
                for i, leaf in enumerate(in_leaves):
                    stacked = [
                        np.zeros_like(leaf) if row[a][i] is None else np.asarray(row[a][i])
                        for row in rows
                    ]
                    jac = np.stack(stacked) if stacked else np.zeros((0, *leaf.shape))
                    per_leaf.append(jac.reshape(out_leaf.shape + leaf.shape))
                per_arg.append(per_leaf)
            blocks.append(per_arg)
        return _nest(output, in_specs, blocks, single)

    return traceable_jacobian(jacobian, expand_jacrev, fn, numbers, single, "jacrev")


def _pullback(transform: Any, args: tuple[Any, ...]) -> tuple[Any, Callable[[Any], Any]]:
    # `vjp` over the arguments `transform.argnums` only: the output, and the pullback that
    # maps an output cotangent to one tree per differentiated argument.
    output, (plan, backward, specs) = transform.forward(args, {})

    def pullback(cotangent: Any) -> tuple[Any, ...]:
        leaves = tree_flatten(cotangent)[0]
        grads = iter(backward([np.asarray(leaves[i]) for i in plan.tangent_outputs]))
        return tuple(
            tree_unflatten(spec, [next(grads) for _ in range(spec.num_leaves)]) for spec in specs
        )

    return output, pullback


def hessian(
    fn: Callable[..., Any],
    argnums: int | Sequence[int] = 0,
    *,
    compiler: str | Compiler | None = None,
) -> Callable[..., Any]:
    """The Hessian of a scalar-valued `fn`: `jacfwd(grad(fn))`, forward over reverse.

    >>> hessian(lambda x: np.sum(x**2 * x[0]))(np.array([1.0, 2.0]))
    array([[6., 4.],
           [4., 2.]])
    """
    return jacfwd(grad(fn, argnums), argnums, compiler=compiler)


register_transform(jvp, expand_jvp, "numpile.jvp")
register_transform(linearize, expand_linearize, "numpile.linearize")
register_transform(
    jacfwd, lambda call: fold_jacobian(jacfwd, expand_jacfwd, call), "numpile.jacfwd"
)
register_transform(
    jacrev, lambda call: fold_jacobian(jacrev, expand_jacrev, call), "numpile.jacrev"
)
register_transform(hessian, lambda call: fold_hessian(hessian, jacfwd, call), "numpile.hessian")
