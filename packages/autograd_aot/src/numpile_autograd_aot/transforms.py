"""Transforms: `grad`, `value_and_grad` and `vjp` of plain NumPy functions, ahead of time.

A call captures the function on its arguments (`numpile_capture`), makes the
graph pure (`functionalize`), builds the joint forward/backward graph, cuts it
with a partitioner, and runs the forward graph at once and the backward graph
when asked, from the saved values only. The pipeline is cached per transform
and guarded like a compiled function: a call whose arguments pass the guards
reuses it. `compiler(graph, example_inputs) -> callable`, or a backend name,
compiles each half; the default is `config.compiler` (`"eager"`: `run_graph`;
the numpile façade sets `"inductor"`, which compiles both halves to C).

    >>> import numpy as np
    >>> def loss(w, x):
    ...     return np.sum(np.tanh(x @ w) ** 2)
    >>> g = grad(loss)(np.ones(3), np.ones((2, 3)))
    >>> g.shape
    (3,)

Called from code that `numpile.compile` captures (or compiled themselves),
the wrappers trace into the caller's graph instead (`transform_rules`); a
function compiled with `numpile.compile` is differentiated through the
function it wraps, both halves compiled with its backend.

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
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from numpile_capture import (
    CaptureResult,
    Node,
    Unsupported,
    capture_function,
    register_transform,
)
from numpile_guards import (
    AttrSource,
    GuardCheck,
    ItemSource,
    LocalSource,
    Source,
    compile_fetch,
    compile_guards,
)

from .checkpoint import differentiating
from .config import Compiler, Partitioner, config, resolve_compiler, resolve_partitioner
from .custom_rule import CustomJvp, CustomVjp
from .functionalization import FunctionalGraph, apply_epilogue, functionalize
from .joint import JointGraph, build_joint
from .jvp_graph import build_jvp
from .partition import Partition
from .pytree import check_leaves, leaf_paths, tree_flatten, tree_unflatten

if TYPE_CHECKING:
    from .pytree import PyTreeSpec
from .transform_rules import GradSpec, expand_grad, expand_vjp, fold_transform
from .vjp_table import differentiable

log = logging.getLogger("numpile.autograd_aot")

__all__ = ["CaptureError", "grad", "trace_joint", "value_and_grad", "vjp"]


class CaptureError(TypeError):
    """A function given to a transform could not be captured; says where and why.

    >>> raise CaptureError("not supported yet: print (model.py:3)")  # doctest: +SKIP
    """


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
    specs: tuple[PyTreeSpec, ...]
    backward: Callable[..., Any] | None = None


@attrs.frozen(eq=False)
class _Traced:
    # What capture and differentiation made of one call, before partitioning and compiling.
    result: CaptureResult
    functional: FunctionalGraph
    joint: JointGraph
    leaf_inputs: tuple[int | None, ...]


@attrs.define(eq=False)
class _Transform:
    fn: Any  # a types.FunctionType (typed Any: mypy would bind it as a method)
    argnums: tuple[int, ...]
    # "grad" (one scalar output, maybe with aux), "vjp" (every float output) or "jvp" (the
    # tangent graph: its `diff_inputs` are the primals with tangents, see forward_transforms)
    mode: str
    has_aux: bool
    compiler: Compiler
    partitioner: Partitioner
    plans: list[_Plan] = attrs.field(factory=list)
    signature: inspect.Signature = attrs.field(init=False)
    positional: tuple[str, ...] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.signature = inspect.signature(self.fn)  # cached: it costs ~10 us per call
        # Parameter names when all are plain positional ones: binding is then a zip.
        kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        parameters = self.signature.parameters.values()
        plain = all(p.kind in kinds for p in parameters)
        self.positional = tuple(p.name for p in parameters) if plain else ()

    def forward(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
        """Run the forward; return the output tree and `(plan, backward, specs)`: `backward`
        maps the cotangent leaves to one gradient per differentiated leaf, `specs` are the
        tree specs of the differentiated arguments."""
        args, local, leaves, specs = self.prepare(args, kwargs)
        globals_ = self.fn.__globals__
        key = tuple(specs)
        plan = next(
            (p for p in self.plans if p.specs == key and p.check(local, globals_, self.fn)), None
        )
        if plan is None:
            plan = self._plan(args, kwargs, local, leaves, key)
            self.plans.append(plan)
        inputs = plan.fetch(local, globals_, self.fn)
        results = plan.forward(*inputs)
        pure_count = len(plan.functional.graph.output)
        saved = tuple(results[pure_count:])
        # Saved values that share memory with the caller's arrays (saved primals, views of
        # them) are copied when those arrays change before the backward runs: always for vjp
        # (it runs later), else when the function writes to its inputs (the epilogue below).
        if self.mode == "vjp":
            saved = _detach(saved, inputs)
        elif plan.functional.mutated_inputs:
            saved = _detach(saved, [inputs[i] for i, _ in plan.functional.mutated_inputs])
        output = apply_epilogue(plan.functional, inputs, results[:pure_count])

        def backward(cotangent_leaves: Sequence[Any]) -> list[Any]:
            if plan.backward is None:
                plan.backward = self.compiler(plan.partition.backward, [*saved, *cotangent_leaves])
            grads = plan.backward(*saved, *cotangent_leaves)
            by_input = dict(zip(plan.diff_inputs, grads, strict=True))
            return [
                _leaf_grad(leaf, by_input, index)
                for leaf, index in zip(leaves, plan.leaf_inputs, strict=True)
            ]

        return output, (plan, backward, specs)

    def prepare(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any], list[Any], list[PyTreeSpec]]:
        """Python floats among the differentiated leaves made 0-d arrays; the arguments bound
        to parameter names; the differentiated leaves and the tree spec of each argnum."""
        converted = list(args)
        leaves: list[Any] = []
        specs: list[PyTreeSpec] = []
        for argnum in self.argnums:
            if argnum >= len(args):
                raise TypeError(f"argnums {argnum} is out of range for {len(args)} arguments")
            arg_leaves, spec = tree_flatten(args[argnum])
            check_leaves(arg_leaves, f"differentiating {self.fn.__qualname__}")
            if any(type(leaf) is float for leaf in arg_leaves):
                arg_leaves = [_as_array(leaf) for leaf in arg_leaves]
                converted[argnum] = tree_unflatten(spec, arg_leaves)
            leaves += arg_leaves
            specs.append(spec)
        if not kwargs and self.positional and len(converted) == len(self.positional):
            local = dict(zip(self.positional, converted, strict=True))
            return tuple(converted), local, leaves, specs
        bound = self.signature.bind(*converted, **kwargs)
        bound.apply_defaults()
        return tuple(converted), dict(bound.arguments), leaves, specs

    def trace(
        self,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        local: dict[str, Any],
        leaves: Sequence[Any],
    ) -> _Traced:
        """Capture `fn` on these arguments and build its joint graph (nothing is compiled).

        Reverse mode keeps the loops it can differentiate as loops (`vjp_loop`); a loop
        whose VJP is not built makes it capture again with every loop unrolled.
        """
        if self.mode == "jvp":
            result, functional, leaf_inputs = self.capture(args, kwargs, local, leaves)
            diff_inputs = tuple(sorted({i for i in leaf_inputs if i is not None}))
            joint = build_jvp(functional.graph, diff_inputs).joint
            return _Traced(result, functional, joint, leaf_inputs)
        if config.keep_loops:
            try:
                return self._reverse(args, kwargs, local, leaves, keep_loops=True)
            except NotImplementedError as error:
                # A loop without a VJP (or one functionalization cannot take): unrolled.
                log.debug("%s: loops unrolled: %s", self.fn.__qualname__, error)
        return self._reverse(args, kwargs, local, leaves, keep_loops=False)

    def _reverse(
        self,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        local: dict[str, Any],
        leaves: Sequence[Any],
        *,
        keep_loops: bool,
    ) -> _Traced:
        result, functional, leaf_inputs = self.capture(args, kwargs, local, leaves, keep_loops)
        diff_inputs = tuple(sorted({i for i in leaf_inputs if i is not None}))
        joint = build_joint(functional.graph, diff_inputs, self._tangent_outputs(functional))
        return _Traced(result, functional, joint, leaf_inputs)

    def capture(
        self,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        local: dict[str, Any],
        leaves: Sequence[Any],
        keep_loops: bool = False,
    ) -> tuple[CaptureResult, FunctionalGraph, tuple[int | None, ...]]:
        """Capture `fn` on these arguments: the capture, its pure graph, and the graph input
        of each differentiated leaf (None when the function does not read it).
        `keep_loops`: loops stay loop nodes (else they are unrolled)."""
        self._check_argnums(args)
        try:
            with differentiating():
                result = capture_function(self.fn, args, kwargs, keep_loops=keep_loops)
        except Unsupported as error:
            raise CaptureError(_graph_break_message(self.fn, error)) from error
        functional = functionalize(result.graph)
        # Each differentiated leaf is the graph input read by its path in the arguments (an
        # item, a field of a dataclass): as in JAX, a leaf repeated in a tree is one input
        # per place. A leaf whose path a container does not tell (a registered class) is the
        # input fetched as that very array, if only one is.
        names = [source.name for source in result.input_sources]
        values = compile_fetch(result.input_sources)(local, self.fn.__globals__, self.fn)
        counts: dict[int, int] = {}
        for value in values:
            counts[id(value)] = counts.get(id(value), 0) + 1
        by_id = {id(v): i for i, v in enumerate(values) if counts[id(v)] == 1}
        parameters = list(self.signature.parameters)
        found: list[int | None] = []
        for argnum in self.argnums:
            base: Source = LocalSource(parameters[argnum])
            for path in leaf_paths(args[argnum]):
                name = _path_source(base, path).name if path is not None else None
                found.append(names.index(name) if name in names else None)
        leaf_inputs = tuple(
            index if index is not None else by_id.get(id(leaf))
            for index, leaf in zip(found, leaves, strict=True)
        )
        leaf_inputs = tuple(
            i if isinstance(leaf, np.ndarray) else None
            for i, leaf in zip(leaf_inputs, leaves, strict=True)
        )
        return result, functional, leaf_inputs

    def _plan(
        self,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        local: dict[str, Any],
        leaves: Sequence[Any],
        specs: tuple[PyTreeSpec, ...],
    ) -> _Plan:
        traced = self.trace(args, kwargs, local, leaves)
        result, joint = traced.result, traced.joint
        partition = self.partitioner(joint)
        inputs = compile_fetch(result.input_sources)(local, self.fn.__globals__, self.fn)
        forward = self.compiler(partition.forward, list(inputs))
        log.debug("planned %s:\n%s", self.fn.__qualname__, partition)
        return _Plan(
            compile_guards(result.guards),
            compile_fetch(result.input_sources),
            traced.functional,
            partition,
            traced.leaf_inputs,
            joint.diff_inputs,
            joint.tangent_outputs,
            forward,
            specs,
        )

    def _check_argnums(self, args: tuple[Any, ...]) -> None:
        parameters = list(self.signature.parameters.values())
        for argnum in self.argnums:
            if argnum >= len(args) or argnum >= len(parameters):
                raise TypeError(f"argnums {argnum} is out of range for {len(args)} arguments")
            if parameters[argnum].kind is inspect.Parameter.VAR_POSITIONAL:
                raise TypeError("argnums cannot point into *args")

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


def _graph_break_message(fn: Any, error: Unsupported) -> str:
    where = f" at {error.filename}:{error.lineno}" if error.filename else ""
    return (
        f"cannot differentiate {fn.__qualname__}: graph break{where}: {error.reason}. "
        "A differentiated function is captured whole: move that code out of it "
        "(run it before calling the transform, or after it returns)"
    )


def _path_source(base: Source, path: tuple[tuple[str, Any], ...]) -> Source:
    for kind, key in path:
        base = AttrSource(base, key) if kind == "attr" else ItemSource(base, key)
    return base


def _detach(saved: tuple[Any, ...], inputs: Sequence[Any]) -> tuple[Any, ...]:
    arrays = [value for value in inputs if isinstance(value, np.ndarray)]
    return tuple(
        value.copy()
        if isinstance(value, np.ndarray)
        and any(np.may_share_memory(value, array) for array in arrays)
        else value
        for value in saved
    )


def _as_array(leaf: Any) -> Any:
    return np.asarray(leaf, np.float64) if type(leaf) is float else leaf


def _leaf_grad(leaf: Any, by_input: dict[int, Any], index: int | None) -> Any:
    array = np.asarray(leaf)
    if array.dtype.kind not in "fc":
        return None
    if index is None:
        return np.zeros_like(array)
    return by_input[index]


def as_function(fn: Callable[..., Any]) -> types.FunctionType:
    """A Python function of fixed arity that calls `fn` (a ufunc, a NumPy function, a
    `custom_vjp` function, any callable with a signature), so capture traces that call.

    >>> as_function(np.tanh).__qualname__
    'tanh'
    """
    if isinstance(fn, np.ufunc):
        count = fn.nin
    else:
        try:
            signature = inspect.signature(fn)
        except (TypeError, ValueError) as error:
            raise TypeError(
                f"can only differentiate Python functions and callables with a signature, "
                f"not {type(fn).__name__}"
            ) from error
        kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        count = sum(
            1
            for p in signature.parameters.values()
            if p.kind in kinds and p.default is inspect.Parameter.empty
        )
    names = ", ".join(f"arg{i}" for i in range(count))
    namespace: dict[str, Any] = {"target": fn}
    # Generated so that the parameters are plain positional ones (argnums points at them).
    exec(f"def call({names}):\n    return target({names})\n", namespace)
    call: types.FunctionType = namespace["call"]
    name = getattr(fn, "__name__", type(fn).__name__)
    call.__name__ = name
    call.__qualname__ = getattr(fn, "__qualname__", name)
    return call


def _normalize_argnums(argnums: int | Sequence[int]) -> tuple[tuple[int, ...], bool]:
    if isinstance(argnums, int):
        return (argnums,), True
    return tuple(argnums), False


def _make(
    fn: Callable[..., Any],
    argnums: tuple[int, ...],
    mode: str,
    has_aux: bool,
    compiler: str | Compiler | None,
    partitioner: str | Partitioner | None,
) -> _Transform:
    original = getattr(fn, "_numpile_original", None)
    if isinstance(original, types.FunctionType) and not isinstance(fn, CustomVjp | CustomJvp):
        # A function compiled with numpile.compile: differentiate the graph its backend
        # compiles (same capture), and compile both halves with that backend by default.
        backend = getattr(fn, "backend", None)
        if compiler is None and backend is not None:
            compiler = backend
        fn = original
    if not isinstance(fn, types.FunctionType) or hasattr(fn, "__wrapped__"):
        # A ufunc, a custom rule, or a transform's wrapper (`grad(f)`, whose signature is
        # f's, not its code's): differentiate a plain function calling it.
        fn = as_function(fn)
    return _Transform(
        fn,
        argnums,
        mode,
        has_aux,
        resolve_compiler(compiler),
        resolve_partitioner(partitioner),
    )


def value_and_grad(
    fn: Callable[..., Any],
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    *,
    compiler: str | Compiler | None = None,
    partitioner: str | Partitioner | None = None,
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

    def run(*args: Any, **kwargs: Any) -> Any:
        output, (_, backward, specs) = transform.forward(args, kwargs)
        value = output[0] if has_aux else output
        seed = np.ones((), dtype=np.asarray(value).dtype)
        grads = iter(backward([seed]))
        per_arg = [
            tree_unflatten(spec, [next(grads) for _ in range(spec.num_leaves)]) for spec in specs
        ]
        result = per_arg[0] if single else tuple(per_arg)
        return output, result

    spec = GradSpec(transform.fn, numbers, single, has_aux, "value_and_grad")
    return _traceable(run, spec)


def grad(
    fn: Callable[..., Any],
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    *,
    compiler: str | Compiler | None = None,
    partitioner: str | Partitioner | None = None,
) -> Callable[..., Any]:
    """The gradient of a scalar-valued NumPy function with respect to argument(s) `argnums`.

    >>> grad(lambda x: np.sum(np.sin(x)))(np.zeros(2))
    array([1., 1.])
    """
    inner = value_and_grad(fn, argnums, has_aux, compiler=compiler, partitioner=partitioner)

    def run(*args: Any, **kwargs: Any) -> Any:
        output, gradient = inner(*args, **kwargs)
        return (gradient, output[1]) if has_aux else gradient

    numbers, single = _normalize_argnums(argnums)
    wrapped = inner.__wrapped__  # type: ignore[attr-defined]
    return _traceable(run, GradSpec(wrapped, numbers, single, has_aux, "grad"))


def _traceable(run: Callable[..., Any], spec: GradSpec) -> Callable[..., Any]:
    # The wrapper a transform returns, and the `run` it calls, carry a trace rule: called from
    # captured code (or compiled itself, through `run`) they add forward and backward nodes to
    # the graph being captured instead of running (see transform_rules).
    def expand(call: Any) -> Any:
        return expand_grad(spec, call)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return run(*args, **kwargs)

    reason = f"{spec.kind} of {spec.fn.__qualname__}"
    for function in (run, wrapper):
        function.__wrapped__ = spec.fn  # type: ignore[attr-defined]
        function.__name__ = f"{spec.kind}_{spec.fn.__name__}"
        function.__qualname__ = f"{spec.kind}({spec.fn.__qualname__})"
        register_transform(function, expand, reason)
    return wrapper


def trace_joint(
    fn: Callable[..., Any],
    *args: Any,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    **kwargs: Any,
) -> JointGraph:
    """The joint forward/backward graph that `grad(fn, argnums, has_aux)` builds for these
    arguments, before partitioning: for inspecting what a partitioner saves.

    >>> from numpile_autograd_aot import default_partition, min_cut_partition, saved_bytes
    >>> joint = trace_joint(lambda x: np.sum(np.sin(x) ** 2), np.ones(3))
    >>> saved_bytes(min_cut_partition(joint)) < saved_bytes(default_partition(joint))
    True
    """
    numbers, _ = _normalize_argnums(argnums)
    transform = _make(fn, numbers, "grad", has_aux, "eager", "default")
    args, local, leaves, _ = transform.prepare(args, kwargs)
    return transform.trace(args, kwargs, local, leaves).joint


def vjp(
    fn: Callable[..., Any],
    *primals: Any,
    has_aux: bool = False,
    compiler: str | Compiler | None = None,
    partitioner: str | Partitioner | None = None,
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
    output, (plan, backward, specs) = transform.forward(primals, {})
    value = output[0] if has_aux else output

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


# NOTE: the reverse-mode transforms of linear maps `linear(primals, tangents)` (custom_jvp
# rules transposed), keyed by the function; each keeps its own plans.
_LINEAR_TRANSFORMS: dict[Any, _Transform] = {}


def linear_pullback(
    linear: Callable[..., Any], primals: tuple[Any, ...], cotangent: Any
) -> tuple[Any, ...]:
    """The transpose of the map `tangents -> linear(primals, tangents)` (linear in the
    tangents) applied to `cotangent`: one value per primal.

    >>> linear_pullback(lambda p, t: p[0] * t[0], (np.full(2, 3.0),), np.ones(2))
    (array([3., 3.]),)
    """
    transform = _LINEAR_TRANSFORMS.get(linear)
    if transform is None:
        transform = _make(linear, (1,), "vjp", False, "eager", "default")
        _LINEAR_TRANSFORMS[linear] = transform
    floats = tuple(np.zeros_like(np.asarray(p, dtype=np.result_type(p, 0.0))) for p in primals)
    _, (plan, backward, specs) = transform.forward((primals, floats), {})
    chosen = [np.asarray(cotangent)][: len(plan.tangent_outputs)]
    grads = iter(backward(chosen))
    (tangents,) = (
        tree_unflatten(spec, [next(grads) for _ in range(spec.num_leaves)]) for spec in specs
    )
    return tuple(tangents)


# Called from captured code, the transforms trace into the caller's graph (transform_rules).
register_transform(vjp, expand_vjp, "numpile.vjp")
register_transform(grad, lambda call: fold_transform(grad, call), "numpile.grad")
register_transform(
    value_and_grad, lambda call: fold_transform(value_and_grad, call), "numpile.value_and_grad"
)
