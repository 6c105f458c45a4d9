"""The extern-op table: library functions that stay one graph node, run by calling the library.

A NumPy (or SciPy) function without a lowering is one `ExternRow`: the callable, a meta
rule that gives its result's shape and dtype (symbolic where the inputs are), which of its
parameters take arrays (graph inputs; every other argument is a static param), what it
does to state (a `np.random.Generator` method advances its generator), whether its result
sizes depend on the data (a fresh unbacked size symbol, `u<k>`, named by the `nnz` param),
and why it has no VJP rule when it has none (autograd registers the rules, keyed by op),
and which of its params are sizes that may stay symbolic (`sizes`: a draw's `size=x.shape`
is `ScalarSlot` templates over trailing int inputs that compute the sizes at run time, so
one graph serves every size).
Registering a row registers its `Op`; capture binds the callable by identity (see
`numpy_bindings/_extern.py`), autograd reads `no_grad`, and the inductor runs the node as
an extern call between its kernels, so the graph is not cut and the kernels around fuse.
Adding a function is one row plus a corpus program.

A meta rule takes the row's parameters by name: arrays as `ArrayMeta` (or Python
constants), static params as given; it returns one `ArrayMeta`, or a tuple of them for a
function that returns a tuple (its node holds the tuple; `result_item` nodes project it).

    >>> from numpile_capture import ArrayMeta
    >>> row = extern_row("fft.rfft")
    >>> str(row.meta(a=ArrayMeta((8, 6), "float32"), axis=0))
    'complex64[5, 6]'
    >>> row.no_grad
    ''
"""

from __future__ import annotations

import enum
import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from ..meta import ArrayMeta, ScalarMeta
from ..op import Op, OpKind, register_op
from ._shapes import normalize_axis
from ._shapes import unbacked_size as _unbacked_size
from .loop_values import ScalarSlot

__all__ = [
    "ExternRow",
    "ExternState",
    "RunTimeSize",
    "call_by_name",
    "extern_row",
    "extern_rows",
    "register_extern",
    "unbacked_size",
]


class ExternState(enum.Enum):
    """What an extern op does besides computing its result."""

    PURE = "pure"
    GENERATOR = "advances its np.random.Generator"  # input 0 is the generator


ExternMeta = Callable[..., "ArrayMeta | tuple[ArrayMeta, ...]"]


@attrs.frozen(eq=False)
class ExternRow:
    """One library function as an extern op (see the module docstring).

    `function` is what the binding is keyed by and what the node calls (for a generator
    method: the unbound method, called with the generator first). `arrays` names the
    parameters that become graph inputs, in order; `variadic` names one of them that takes
    a sequence of arrays (`multi_dot`). `no_grad` says why no VJP rule exists ("" when
    autograd has one: a test checks both directions). `refuse` is a predicate on the static
    params that returns a reason for a call numpile does not capture (a graph break).
    `sizes` names the params whose ints may be `ScalarSlot`s: the k-th slot is the k-th of
    the node's inputs after the arrays (an int computed at run time; its `expr`, the size
    symbolically, is what the meta rule sees).
    """

    name: str
    function: Callable[..., Any] = attrs.field(repr=False)
    meta: ExternMeta = attrs.field(repr=False)
    arrays: tuple[str, ...]
    no_grad: str = ""
    state: ExternState = ExternState.PURE
    data_dependent: bool = False
    variadic: str = ""
    run_time_error: str = ""
    refuse: Callable[..., str] | None = attrs.field(default=None, repr=False)
    sizes: tuple[str, ...] = ()

    @property
    def signature(self) -> inspect.Signature:
        """The library function's signature (without `self` for a generator method)."""
        return _signature(self.function, self.state is ExternState.GENERATOR)

    @property
    def op(self) -> Op:
        """The registered op of this row."""
        return _OPS[self.name]

    def call(self, *inputs: Any, **params: Any) -> Any:
        """Run the library function on a node's inputs (in `arrays` order) and params."""
        params.pop("nnz", None)
        inputs, params = self._filled(inputs, params, run_time=True)
        if self.state is ExternState.GENERATOR:
            generator, *rest = inputs
            return call_by_name(self.function, {**self._by_name(rest), **params}, generator)
        return call_by_name(self.function, {**self._by_name(inputs), **params})

    def meta_of_node(self, *inputs: Any, **params: Any) -> ArrayMeta | tuple[ArrayMeta, ...]:
        """The meta rule applied to a node's input metadata (in `arrays` order) and params."""
        inputs, params = self._filled(inputs, params, run_time=False)
        if self.state is ExternState.GENERATOR:
            inputs = inputs[1:]
        return self.meta(**self._by_name(inputs), **params)

    def _filled(
        self, inputs: tuple[Any, ...], params: dict[str, Any], *, run_time: bool
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        # The size params with their slots filled: by the trailing inputs' values at run
        # time, by the slots' expressions for the meta rule; the trailing inputs dropped.
        slots = [slot for name in self.sizes for slot in _slots(params.get(name))]
        if not slots:
            return inputs, params
        count = max(slot.position for slot in slots) + 1
        inputs, scalars = inputs[:-count], inputs[-count:]

        def fill(slot: ScalarSlot) -> Any:
            return int(scalars[slot.position]) if run_time else slot.expr

        filled = {name: _replace_slots(params[name], fill) for name in self.sizes if name in params}
        return inputs, {**params, **filled}

    def _by_name(self, inputs: Any) -> dict[str, Any]:
        if not self.variadic:
            return dict(zip(self.arrays, inputs, strict=True))
        count = len(inputs) - len(self.arrays) + 1
        at = self.arrays.index(self.variadic)
        values = dict(zip(self.arrays[:at], inputs[:at], strict=True))
        values[self.variadic] = list(inputs[at : at + count])
        values.update(zip(self.arrays[at + 1 :], inputs[at + count :], strict=True))
        return values


def _slots(value: Any) -> list[ScalarSlot]:
    if isinstance(value, ScalarSlot):
        return [value]
    if isinstance(value, tuple | list):
        return [slot for item in value for slot in _slots(item)]
    return []


def _replace_slots(value: Any, fill: Callable[[ScalarSlot], Any]) -> Any:
    if isinstance(value, ScalarSlot):
        return fill(value)
    if isinstance(value, tuple | list):
        return tuple(_replace_slots(item, fill) for item in value)
    return value


@attrs.frozen
class RunTimeSize:
    """A symbolic size (a `SymInt`) handed to a binding that may keep it symbolic.

    `node()` gives the graph value that computes it at run time (an int node, or a plain int),
    or None when capture cannot compute it (then `int(value)` pins it, with its guard).
    """

    value: Any
    node: Callable[[], Any] = attrs.field(repr=False)


@functools.cache
def _signature(function: Callable[..., Any], method: bool) -> inspect.Signature:
    signature = inspect.signature(function)
    if method:
        parameters = list(signature.parameters.values())[1:]
        signature = signature.replace(parameters=parameters)
    return signature


# NOTE: insertion-ordered, so listings (docs, coverage tests) are deterministic.
_ROWS: dict[str, ExternRow] = {}
_OPS: dict[str, Op] = {}


def register_extern(row: ExternRow) -> Op:
    """Add `row` to the table and register its op (kind EXTERN, or RANDOM for a generator)."""
    kind = OpKind.RANDOM if row.state is ExternState.GENERATOR else OpKind.EXTERN
    impl = row.call

    def meta(*inputs: Any, **params: Any) -> ArrayMeta | ScalarMeta:
        result = row.meta_of_node(*inputs, **params)
        return ScalarMeta(tuple) if isinstance(result, tuple) else result

    doc = f"numpy.{row.name} as an extern call ({row.state.value})"
    op = register_op(Op(row.name, kind, meta, impl, doc=doc, run_time_error=row.run_time_error))
    _ROWS[row.name] = row
    _OPS[row.name] = op
    return op


def call_by_name(function: Callable[..., Any], arguments: dict[str, Any], *bound: Any) -> Any:
    """`function(*bound, **arguments)`, its positional-only parameters passed by position.

    >>> call_by_name(np.bincount, {"x": np.array([1, 1])})
    array([0, 2])
    >>> call_by_name(np.gradient, {"f": np.array([1.0, 4.0]), "varargs": (0.5,)})
    array([6., 6.])
    """
    positional, star, before = _call_plan(function, bool(bound))
    values = dict(arguments)
    if star is not None and star in values:
        # `*args` given (np.gradient's spacings): everything before it goes by position too.
        leading = [values.pop(name) for name in before if name in values]
        return function(*bound, *leading, *values.pop(star), **values)
    leading = [values.pop(name) for name in positional if name in values]
    return function(*bound, *leading, **values)


@functools.cache
def _call_plan(
    function: Callable[..., Any], method: bool
) -> tuple[tuple[str, ...], str | None, tuple[str, ...]]:
    # How call_by_name passes arguments, read from the signature once (a compiled graph
    # calls an extern on every call): the positional-only names, the `*args` name, and
    # the names before it.
    parameters = list(_signature(function, method).parameters.values())
    names = [p.name for p in parameters]
    positional = tuple(p.name for p in parameters if p.kind is inspect.Parameter.POSITIONAL_ONLY)
    star = [p.name for p in parameters if p.kind is inspect.Parameter.VAR_POSITIONAL]
    if not star:
        return positional, None, ()
    return positional, star[0], tuple(names[: names.index(star[0])])


def extern_row(name: str) -> ExternRow:
    """The row of the extern op called `name`; KeyError if there is none."""
    return _ROWS[name]


def extern_rows() -> list[ExternRow]:
    """Every row of the table, in registration order."""
    return list(_ROWS.values())


def unbacked_size(name: str, low: Any = 0, high: Any = None) -> Any:
    """The size symbol of a data-dependent length, `low <= n <= high` (recorded in the
    capture's shape environment; None: unbounded).

    >>> unbacked_size("u3", 0, 6)
    u3
    """
    return _unbacked_size(name, low, high)


# -- helpers the family modules share ---------------------------------------------------------


def dtype_of(function: Callable[..., Any], *probes: Any, **kwargs: Any) -> np.dtype[Any]:
    """The dtype of `function` on tiny concrete probes (NumPy's warnings silenced)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            result = function(*probes, **kwargs)
    if isinstance(result, tuple):
        result = result[0]
    return np.asarray(result).dtype


def small(meta: Any, shape: tuple[int, ...] | None = None) -> Any:
    """A tiny well-conditioned probe with `meta`'s dtype (identity matrices; ones otherwise)."""
    if not isinstance(meta, ArrayMeta):
        return meta
    dims = shape if shape is not None else (2,) * max(meta.ndim, 1)
    if len(dims) >= 2 and dims[-1] == dims[-2]:
        return np.broadcast_to(np.eye(dims[-1], dtype=meta.dtype), dims).copy()
    return np.ones(dims, dtype=meta.dtype)


def shaped(shape: tuple[Any, ...], dtype: Any) -> ArrayMeta:
    """An ArrayMeta of `shape` (dims: ints or sympy expressions) and `dtype`."""
    return ArrayMeta(shape, dtype)


def require_array(meta: Any, what: str) -> ArrayMeta:
    """`meta` as an ArrayMeta; TypeError naming `what` otherwise."""
    if not isinstance(meta, ArrayMeta):
        raise TypeError(f"{what} must be an array")
    return meta


def replace_dims(shape: tuple[Any, ...], changes: dict[int, Any]) -> tuple[Any, ...]:
    """`shape` with the dims at the axes of `changes` replaced."""
    return tuple(changes.get(axis, dim) for axis, dim in enumerate(shape))


def axis_of(axis: Any, ndim: int) -> int:
    """A non-negative axis (NumPy's AxisError otherwise)."""
    return normalize_axis(axis, ndim)


def _result_item_meta(results: Any, *, index: int) -> ArrayMeta | ScalarMeta:
    raise TypeError("result_item's metadata comes from its tuple's row (see bind_extern)")


def _result_item_impl(results: tuple[Any, ...], *, index: int) -> Any:
    return results[index]


result_item = register_op(
    Op(
        "result_item",
        OpKind.EXTERN,
        _result_item_meta,
        _result_item_impl,
        doc="one item of an extern op's tuple result (np.linalg.svd's U, S, Vh)",
    )
)


# The family modules register their rows on import (one place, as the registry rule says).
from . import extern_fft as extern_fft  # noqa: E402
from . import extern_linalg as extern_linalg  # noqa: E402
from . import extern_numeric as extern_numeric  # noqa: E402
from . import extern_random as extern_random  # noqa: E402
from . import extern_sizes as extern_sizes  # noqa: E402
