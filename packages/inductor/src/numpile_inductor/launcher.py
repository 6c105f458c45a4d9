"""The Python side of a built graph module: extern callables, output rebuild, write-back.

A graph's extension module (see `codegen/c/wrapper.py`) returns the array leaves of the
graph's output; `output_rebuilder` puts them back into the output pytree when it is
not a single array or a flat tuple of them. `with_epilogue` runs a functionalized
graph with the original graph's in-place effects and aliasing. Nothing here imports
sympy or the code generator: a warm start from the graph cache needs only this.

    >>> fn = output_rebuilder(generated, module.call)  # doctest: +SKIP
    >>> fn(a, b)  # doctest: +SKIP
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from numpile_capture import get_op, tree_unflatten
from numpile_runtime import byte_extent, is_device_array

from .graph_cache import Epilogue
from .loop_ir import BufferRef, ExternCall


@attrs.frozen
class GeneratedModule:
    """The C source of a graph's extension module and what its loader needs.

    `externs` are the callables handed to the module's `set_externs`, made from
    `extern_steps`; `output_spec` and `output_slots` rebuild the output pytree (slots
    say which leaves the module returns and which are constants), unless `direct`.

        >>> generated.module_name  # doctest: +SKIP
        'numpile_graph_0123456789abcdef'
    """

    module_name: str
    source: str
    externs: tuple[Callable[..., Any], ...]
    output_spec: Any
    output_slots: tuple[tuple[bool, Any], ...]
    direct: bool
    extern_steps: tuple[ExternCall, ...] = ()
    # Positions among the externs of the loops that run as C (what the module's `c_loops`
    # gives): known before the module is built.
    c_loops: tuple[int, ...] = ()


def extern_callable(step: ExternCall) -> Callable[..., Any]:
    """The Python callable the module calls for `step`: its op's NumPy implementation with
    the step's constant arguments and keywords filled in.

        >>> extern_callable(step)(array)  # doctest: +SKIP
    """
    impl = step.impl
    template = step.args
    kwargs = dict(step.kwargs)
    slots = [i for i, arg in enumerate(template) if isinstance(arg, BufferRef)]
    if len(slots) == len(template) and not kwargs:
        return impl
    if len(slots) == len(template):
        return lambda *values: impl(*values, **kwargs)

    def call(*values: Any) -> Any:
        args = list(template)
        for slot, value in zip(slots, values, strict=True):
            args[slot] = value
        return impl(*args, **kwargs)

    return call


def extern_callables(steps: tuple[ExternCall, ...]) -> tuple[Callable[..., Any], ...]:
    """The callables a module's `set_externs` takes, in the order of its extern steps.

    >>> module.set_externs(extern_callables(generated.extern_steps))  # doctest: +SKIP
    """
    return tuple(extern_callable(step) for step in steps)


def output_rebuilder(generated: GeneratedModule, call: Callable[..., Any]) -> Callable[..., Any]:
    """The compiled callable: `call` itself, or `call` followed by the pytree rebuild.

    >>> output_rebuilder(generated, module.call)(a, b)  # doctest: +SKIP
    """
    if generated.direct:
        return call
    spec = generated.output_spec
    slots = generated.output_slots

    def run(*args: Any) -> Any:
        values = iter(call(*args))
        leaves = [next(values) if is_node else constant for is_node, constant in slots]
        return tree_unflatten(spec, leaves)

    return run


def with_epilogue(
    call: Callable[..., Any], epilogue: Epilogue, barrier: Callable[[], Callable[..., Any]]
) -> Callable[..., Any]:
    """Run a functionalized graph with the original graph's effects.

    `call` runs the pure graph; then mutated inputs are written back in place and
    outputs that are views of inputs are rebuilt as views of them. When a mutated
    input shares memory with another input (which the pure graph cannot model),
    the callable made by `barrier()` (compiled once, on first need) runs instead.

        >>> fn = with_epilogue(pure_fn, epilogue, compile_with_barriers)  # doctest: +SKIP
    """
    mutated = epilogue.mutated_inputs
    positions = tuple(position for position, _ in mutated)
    aliases = epilogue.output_aliases
    count = epilogue.num_outputs
    spec = epilogue.output_spec
    fallback: list[Callable[..., Any]] = []
    if spec.kind == "leaf":
        rebuild: Callable[[list[Any]], Any] = lambda leaves: leaves[0]  # noqa: E731
    elif spec.kind == "tuple" and all(child.kind == "leaf" for child in spec.children):
        rebuild = tuple
    else:
        rebuild = functools.partial(tree_unflatten, spec)
    overlaps = _overlaps if positions else None
    # A flat tuple of outputs none of which is a view: the results' first `count` as they are.
    plain = rebuild is tuple and not aliases

    def run(*args: Any) -> Any:
        if overlaps is not None and len(args) > 1 and overlaps(args, positions):
            if not fallback:
                fallback.append(barrier())
            return fallback[0](*args)
        results = call(*args)
        for position, output in mutated:
            # (an input a scatter stored into in place is already its new value)
            if results[output] is not args[position]:
                # NumPy's assignment casts as `np.copyto(casting="unsafe")` does, without
                # its dispatcher's Python frame (this runs once per iteration of a loop
                # whose body breaks).
                args[position][...] = results[output]
        if plain:
            return tuple(results[:count])
        leaves = list(results[:count])
        for output, position, views in aliases:
            leaves[output] = _apply_views(args[position], views)
        return rebuild(leaves)

    return run


def _overlaps(args: tuple[Any, ...], positions: tuple[int, ...]) -> bool:
    # Bounds-only test (np.may_share_memory; address ranges for CuPy arrays): a false alarm
    # only costs the barrier path. NumPy pairs are tested inline: this runs on every call
    # of a graph that mutates an input (once per iteration of a loop whose body breaks).
    ndarray = np.ndarray
    may_share = np.may_share_memory
    for position in positions:
        target = args[position]
        numpy_target = type(target) is ndarray
        for other_position, other in enumerate(args):
            if other_position == position:
                continue
            if numpy_target and type(other) is ndarray:
                if may_share(target, other):
                    return True
            elif _may_share(target, other):
                return True
    return False


def _may_share(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return bool(np.may_share_memory(a, b))
    if not (is_device_array(a) and is_device_array(b)) or a.size == 0 or b.size == 0:
        return False
    a_low, a_high = (int(a.data.ptr) + offset for offset in byte_extent(a))
    b_low, b_high = (int(b.data.ptr) + offset for offset in byte_extent(b))
    return a_low < b_high and b_low < a_high


def _apply_views(value: Any, views: tuple[Any, ...]) -> Any:
    for name, params in views:
        value = get_op(name).impl(value, **dict(params))
    return value
