"""The loop-level IR: scalar expressions over index expressions, and kernels.

A kernel is a loop nest over `ranges` (loop variables `x0, x1, ...`), and for
reductions an inner nest over `reduction_ranges` (`r0, r1, ...`). Its body is
a list of stores; each stored value is a tree of `Expr`:

- `Load(buffer, index)`: element `index` (one sympy expression per dim of the
  buffer's logical shape) of a buffer; its address comes from the buffer's
  strides at run time, so views and non-contiguous inputs are index arithmetic.
- `Constant(value)`, `ScalarArg(name)` (a scalar graph input),
- `Apply(fn, args)`: one scalar operation of the C op table (`codegen/c/ops.py`);
  its args already have the op's loop dtypes.

    >>> from numpile_inductor.index import loop_var
    >>> print(Apply("sin", (Load("a", (loop_var(0),), np.dtype("float64")),),
    ...       np.dtype("float64")))
    sin(a[x0])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias

import attrs
import numpy as np

from numpile_capture import contiguous_strides


@attrs.frozen
class Indirect:
    """An index read from data (a gather): `symbol`, in the index expressions of a `Load`,
    stands for the integer value `value` (itself an `Expr` over loop variables), a negative
    one counted from the end of dim `axis` of the gathered array, of `size` elements, as
    NumPy's indices are. Code generators check it against the dim: out of bounds, the call
    fails with NumPy's IndexError."""

    symbol: Any
    value: Expr
    size: Any
    axis: int = 0

    def __str__(self) -> str:
        return f"{self.symbol}={self.value}"


@attrs.frozen
class Load:
    """Element `index` of buffer `buffer`; `indirect` binds the data-read symbols of
    `index` (a gather, `x[idx[x0]]`)."""

    buffer: str
    index: tuple[Any, ...]
    dtype: np.dtype[Any]
    indirect: tuple[Indirect, ...] = ()

    def __str__(self) -> str:
        text = f"{self.buffer}[{', '.join(str(i) for i in self.index)}]"
        if self.indirect:
            text += "{" + ", ".join(str(bound) for bound in self.indirect) + "}"
        return text


@attrs.frozen
class Constant:
    """A Python number used as a value of `dtype`."""

    value: Any
    dtype: np.dtype[Any]

    def __str__(self) -> str:
        return repr(self.value)


@attrs.frozen
class ScalarArg:
    """A scalar graph input, passed to the kernel by value."""

    name: str
    dtype: np.dtype[Any]

    def __str__(self) -> str:
        return self.name


@attrs.frozen
class Apply:
    """Scalar operation `fn` of the C op table applied to `args`."""

    fn: str
    args: tuple[Expr, ...]
    dtype: np.dtype[Any]

    def __str__(self) -> str:
        return f"{self.fn}({', '.join(str(a) for a in self.args)})"


Expr: TypeAlias = "Load | Constant | ScalarArg | Apply"
Loader: TypeAlias = "Callable[[tuple[Any, ...]], Expr]"


def count_ops(expr: Expr) -> int:
    """The number of `Apply` nodes in `expr` (a cost estimate for inlining).

    >>> count_ops(Constant(1, np.dtype("int64")))
    0
    """
    if isinstance(expr, Apply):
        return 1 + sum(count_ops(arg) for arg in expr.args)
    return 0


def loads_of(expr: Expr) -> list[Load]:
    """Every `Load` in `expr`, in evaluation order.

    >>> loads_of(Constant(1, np.dtype("int64")))
    []
    """
    if isinstance(expr, Load):
        return [load for bound in expr.indirect for load in loads_of(bound.value)] + [expr]
    if isinstance(expr, Apply):
        return [load for arg in expr.args for load in loads_of(arg)]
    return []


def map_indices(expr: Expr, fn: Callable[[Any], Any]) -> Expr:
    """`expr` with `fn` applied to every index expression of its loads, those that compute
    gather indices included.

    >>> from numpile_inductor.index import loop_var
    >>> print(map_indices(Load("a", (loop_var(0),), np.dtype("float64")), lambda i: i + 1))
    a[x0 + 1]
    """
    if isinstance(expr, Load):
        indirect = tuple(
            attrs.evolve(bound, value=map_indices(bound.value, fn)) for bound in expr.indirect
        )
        return attrs.evolve(expr, index=tuple(fn(i) for i in expr.index), indirect=indirect)
    if isinstance(expr, Apply):
        return attrs.evolve(expr, args=tuple(map_indices(arg, fn) for arg in expr.args))
    return expr


def has_indirect(expr: Expr) -> bool:
    """Whether `expr` loads through an index read from data (a gather).

    >>> has_indirect(Constant(1, np.dtype("int64")))
    False
    """
    return any(load.indirect for load in loads_of(expr))


@attrs.frozen
class Store:
    """`buffer[index] = value` in a pointwise kernel (index over loop variables)."""

    buffer: str
    index: tuple[Any, ...]
    value: Expr

    def __str__(self) -> str:
        return f"{self.buffer}[{', '.join(str(i) for i in self.index)}] = {self.value}"


@attrs.frozen
class ReductionStore:
    """`buffer[index] = reduce(reduction_type, value over r*)`, accumulated in `dtype`.

    `reduction_type` is one of sum, prod, max, min, any, all; `divisor`, when
    set, divides the result (mean): in float64 for float32 as NumPy does. `order` holds
    the loop variables (kept `x*` and reduced `r*`), outermost first, in the order NumPy
    walks the array it reduces (its memory order, `lowering.reduction.reduction_order`); empty:
    the kept ones, then the reduced ones. It fixes the order of the additions: the
    innermost reduced variable is summed pairwise where it is innermost of all, and
    every reduced variable adds in order where a kept one is (`accumulates_columns`).
    """

    buffer: str
    index: tuple[Any, ...]
    reduction_type: str
    value: Expr
    dtype: np.dtype[Any]
    divisor: float | None = None
    order: tuple[Any, ...] = ()

    @property
    def accumulates_columns(self) -> bool:
        """Whether NumPy walks a kept axis innermost: each output element then adds its
        reduced elements one by one, in `order` (no pairwise sum)."""
        return bool(self.order) and str(self.order[-1]).startswith("x")

    def __str__(self) -> str:
        idx = ", ".join(str(i) for i in self.index)
        tail = f" / {self.divisor}" if self.divisor is not None else ""
        return f"{self.buffer}[{idx}] = {self.reduction_type}({self.value}){tail}"


@attrs.frozen
class AccumulateStore:
    """`buffer[index] = op(buffer[index], value)` once per loop iteration, in iteration
    order (`ufunc.at`, `bincount`'s weights): a scatter-accumulate. `indirect` binds the
    data-read symbols of `index` (their `size` the target's dim). Before the loop the
    kernel stores `init` (an `Expr` over the target's own loop variables `x0, x1, ...`) into
    every element of the target, so the kernel alone makes the target's value.

    Its kernel runs sequentially and fuses with no other (repeated indices accumulate in
    NumPy's order, so float sums are bit-identical)."""

    buffer: str
    index: tuple[Any, ...]
    value: Expr
    op: str
    init: Expr
    target_shape: tuple[Any, ...]
    indirect: tuple[Indirect, ...] = ()

    def __str__(self) -> str:
        idx = ", ".join(str(i) for i in self.index)
        bound = ", ".join(str(b) for b in self.indirect)
        return (
            f"{self.buffer}[{idx}] {self.op}= {self.value}{{{bound}}}"
            f" (from {self.buffer} = {self.init})"
        )


def store_loads(store: Store | ReductionStore | AccumulateStore) -> list[Load]:
    """Every `Load` a store reads: its value's, and a scatter's init and index loads.

    >>> store_loads(Store("b", (), Constant(1, np.dtype("int64"))))
    []
    """
    loads = loads_of(store.value)
    if isinstance(store, AccumulateStore):
        loads = loads_of(store.init) + loads
        loads += [load for bound in store.indirect for load in loads_of(bound.value)]
    return loads


def has_data_index(store: Store | ReductionStore | AccumulateStore) -> bool:
    """Whether `store` loads or stores at an index read from data (its kernel may fail
    with an IndexError).

    >>> has_data_index(Store("b", (), Constant(1, np.dtype("int64"))))
    False
    """
    if isinstance(store, AccumulateStore) and store.indirect:
        return True
    return any(load.indirect for load in store_loads(store))


@attrs.frozen
class Kernel:
    """One loop nest: pointwise (`reduction_ranges == ()`, `Store`s) or reduction.

    Invariant: every store shares `ranges`; reduction kernels hold only
    `ReductionStore`s and share `reduction_ranges`.
    """

    name: str
    ranges: tuple[int, ...]
    reduction_ranges: tuple[int, ...]
    stores: tuple[Store | ReductionStore | AccumulateStore, ...]
    origins: tuple[str, ...] = ()

    @property
    def is_reduction(self) -> bool:
        return any(isinstance(store, ReductionStore) for store in self.stores)

    @property
    def is_scatter(self) -> bool:
        """Whether the kernel scatter-accumulates (`AccumulateStore`): it fuses with none."""
        return any(isinstance(store, AccumulateStore) for store in self.stores)

    def reads(self) -> list[str]:
        names: dict[str, None] = {}
        for store in self.stores:
            for load in store_loads(store):
                names[load.buffer] = None
        return list(names)

    def writes(self) -> list[str]:
        return [store.buffer for store in self.stores]

    def __str__(self) -> str:
        kind = "reduction" if self.is_reduction else "pointwise"
        head = f"{self.name}: {kind} over {list(self.ranges)}"
        if self.reduction_ranges:
            head += f" x {list(self.reduction_ranges)}"
        return "\n".join([head, *(f"  {store}" for store in self.stores)])


@attrs.frozen
class ExternCall:
    """Graph node `node_name` runs its op's NumPy implementation; the result is `buffer`.

    `args` are buffer names (str wrapped in `BufferRef`) or Python constants.
    """

    buffer: str
    op_name: str
    impl: Callable[..., Any] = attrs.field(eq=False, repr=False)
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...]
    is_barrier: bool = False
    node_name: str = ""

    def reads(self) -> list[str]:
        return [arg.name for arg in self.args if isinstance(arg, BufferRef)]

    def writes(self) -> list[str]:
        return [self.buffer]

    def __str__(self) -> str:
        args = ", ".join(str(arg) for arg in self.args)
        return f"{self.buffer} = extern {self.op_name}({args})"


@attrs.frozen
class BufferRef:
    """A reference to a materialized buffer among an extern call's arguments."""

    name: str

    def __str__(self) -> str:
        return self.name


@attrs.frozen
class Buffer:
    """A named array of the program.

    `kind` is "input" (a graph input), "scalar" (a scalar graph input),
    "kernel" (allocated by the wrapper with its `example_strides`: C-contiguous, or the
    dense layout NumPy gives its graph node, `dense_strides`) or "extern" (returned by
    an extern call; any strides).
    """

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    kind: str
    example_strides: tuple[int, ...] | None = None


def dense_strides(shape: tuple[Any, ...], strides: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """`strides` where they lay `shape` out densely (each axis steps over the ones inside
    it, from the axis of stride 1 out: Fortran order, a transpose), None otherwise. A
    size-1 axis keeps its stride where that places it among the others (NumPy's keepdims
    results), else takes C's. Strides may be ints or products of size symbols.

    >>> dense_strides((2, 3), (1, 2)), dense_strides((2, 3), (1, 4))
    ((1, 2), None)
    >>> dense_strides((2, 1, 3), (1, 2, 2))  # a Fortran-order sum over axis 1, keepdims
    (1, 2, 2)
    """
    rest = [d for d, size in enumerate(shape) if size != 1]
    ones = [d for d, size in enumerate(shape) if size == 1]
    result = list(contiguous_strides(shape))
    step: Any = 1
    while True:
        for one in [d for d in ones if strides[d] == step]:
            result[one] = step
            ones.remove(one)
        if not rest:
            return tuple(result)
        axis = next((d for d in rest if strides[d] == step), None)
        if axis is None:
            return None
        result[axis] = step
        step = step * shape[axis]
        rest.remove(axis)
