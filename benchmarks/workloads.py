"""The workloads: plain NumPy functions, their inputs, and their numexpr spellings.

Each workload is a row of ``WORKLOADS``: a module-level NumPy function (what numpile and
``torch.compile`` receive unchanged), a builder of inputs at full or quick size, the numexpr
version where numexpr can express it, and what bounds it (memory traffic or arithmetic).

    >>> workload = find_workloads(["chain_sin_f32"])[0]
    >>> args = workload.make_inputs(quick=True)
    >>> workload.fn(*args).dtype
    dtype('float32')
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from typing import Any, Literal

import attrs
import numpy as np
import numpy.typing as npt

Array = npt.NDArray[Any]
Bound = Literal["memory", "compute", "overhead"]

_SEED = 20261122


# --- the NumPy functions under test (module-level, plain NumPy, nothing else) ---------------


def sin_mul_add(a: Array, b: Array, c: Array) -> Any:
    """``np.sin(a) * b + c``: a transcendental plus two arithmetic ops, three passes in NumPy."""
    return np.sin(a) * b + c


def ten_op_chain(a: Array, b: Array, c: Array) -> Any:
    """Ten elementwise ops (mul, add, sub, mul, mul, add, div, abs, sqrt, sub) on three arrays."""
    return (a * b + c) * (a - b) / (c * c + 1.0) - np.sqrt(np.abs(a))


def softmax_rows(x: Array) -> Any:
    """Numerically stable softmax over the last axis."""
    shifted = x - x.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=1, keepdims=True)


def layernorm_rows(x: Array, gamma: Array, beta: Array) -> Any:
    """Layer normalization over the last axis with a learned scale and shift."""
    mean = x.mean(axis=1, keepdims=True)
    centered = x - mean
    var = (centered * centered).mean(axis=1, keepdims=True)
    return centered / np.sqrt(var + 1e-5) * gamma + beta


def sum_axis0(x: Array) -> Any:
    """Column sums: the reduced axis is the strided one."""
    return x.sum(axis=0)


def sum_axis1(x: Array) -> Any:
    """Row sums: the reduced axis is the contiguous one."""
    return x.sum(axis=1)


def sum_all(x: Array) -> Any:
    """The sum of every element: one long row, a scalar out."""
    return x.sum()


def outer_bcast(a: Array, b: Array, c: Array) -> Any:
    """A broadcast outer product plus a row vector: small inputs, one large output."""
    return a[:, None] * b[None, :] + c


def mlp_forward(x: Array, w1: Array, b1: Array, w2: Array, b2: Array) -> Any:
    """Two dense layers, each matmul + bias + relu."""
    h = np.maximum(x @ w1 + b1, 0.0)
    return np.maximum(h @ w2 + b2, 0.0)


def scale_shift(x: Array) -> Any:
    """``x * 2.0 + 1.0`` on a Fortran-order or transposed matrix: NumPy keeps the input's
    memory order (order='K'), and so do numpile's loops and output."""
    return x * 2.0 + 1.0


def add_one(x: Array) -> Any:
    """``x + 1.0``: one op, compiled first so that one-time initialization is measured alone."""
    return x + 1.0


def tiny_call(a: Array, b: Array, c: Array, d: Array) -> Any:
    """``a * b + c * d`` on 1-element arrays: nothing but per-call overhead."""
    return a * b + c * d


# --- numexpr spellings (numexpr is imported by the caller and passed in) -------------------


def _ne_sin_mul_add(ne: Any, a: Array, b: Array, c: Array) -> Any:
    return ne.evaluate("sin(a) * b + c", local_dict={"a": a, "b": b, "c": c})


def _ne_ten_op_chain(ne: Any, a: Array, b: Array, c: Array) -> Any:
    # numexpr makes a literal 1.0 float64 and upcasts float32 arrays with it; a constant of the
    # arrays' dtype keeps the work the same as NumPy's (NEP 50 weak scalar).
    names = {"a": a, "b": b, "c": c, "one": a.dtype.type(1.0)}
    return ne.evaluate("(a * b + c) * (a - b) / (c * c + one) - sqrt(abs(a))", local_dict=names)


def _ne_softmax_rows(ne: Any, x: Array) -> Any:
    # numexpr reduces only as the outermost operation, so the reductions stay in NumPy.
    m = x.max(axis=1, keepdims=True)
    e = ne.evaluate("exp(x - m)", local_dict={"x": x, "m": m})
    s = e.sum(axis=1, keepdims=True)
    return ne.evaluate("e / s", local_dict={"e": e, "s": s})


def _ne_layernorm_rows(ne: Any, x: Array, gamma: Array, beta: Array) -> Any:
    mean = x.mean(axis=1, keepdims=True)
    centered = ne.evaluate("x - mean", local_dict={"x": x, "mean": mean})
    square = ne.evaluate("centered * centered", local_dict={"centered": centered})
    var = square.mean(axis=1, keepdims=True)
    eps = x.dtype.type(1e-5)
    names = {"centered": centered, "var": var, "gamma": gamma, "beta": beta, "eps": eps}
    return ne.evaluate("centered / sqrt(var + eps) * gamma + beta", local_dict=names)


def _ne_sum_axis0(ne: Any, x: Array) -> Any:
    return ne.evaluate("sum(x, axis=0)", local_dict={"x": x})


def _ne_sum_axis1(ne: Any, x: Array) -> Any:
    return ne.evaluate("sum(x, axis=1)", local_dict={"x": x})


def _ne_sum_all(ne: Any, x: Array) -> Any:
    return ne.evaluate("sum(x)", local_dict={"x": x})


def _ne_outer_bcast(ne: Any, a: Array, b: Array, c: Array) -> Any:
    names = {"column": a[:, None], "row": b[None, :], "c": c}
    return ne.evaluate("column * row + c", local_dict=names)


def _ne_scale_shift(ne: Any, x: Array) -> Any:
    return ne.evaluate("x * 2.0 + 1.0")


def _ne_tiny_call(ne: Any, a: Array, b: Array, c: Array, d: Array) -> Any:
    return ne.evaluate("a * b + c * d", local_dict={"a": a, "b": b, "c": c, "d": d})


# --- inputs ---------------------------------------------------------------------------------


def _normal(rng: np.random.Generator, shape: tuple[int, ...], dtype: type[Any]) -> Array:
    if dtype is np.float32:
        return rng.standard_normal(shape, dtype=np.float32)
    return rng.standard_normal(shape)


def _vectors(
    count: int, full: int, quick: int, dtype: type[Any]
) -> Callable[[bool], tuple[Array, ...]]:
    def make(quick_size: bool) -> tuple[Array, ...]:
        rng = np.random.default_rng(_SEED)
        n = quick if quick_size else full
        return tuple(_normal(rng, (n,), dtype) for _ in range(count))

    return make


def _rows(
    full: tuple[int, int], quick: tuple[int, int], *, affine: bool
) -> Callable[[bool], tuple[Array, ...]]:
    def make(quick_size: bool) -> tuple[Array, ...]:
        rng = np.random.default_rng(_SEED)
        shape = quick if quick_size else full
        x = _normal(rng, shape, np.float32)
        if not affine:
            return (x,)
        gamma = 1.0 + 0.1 * _normal(rng, (shape[1],), np.float32)
        beta = 0.1 * _normal(rng, (shape[1],), np.float32)
        return (x, gamma, beta)

    return make


def _square(full: int, quick: int) -> Callable[[bool], tuple[Array, ...]]:
    def make(quick_size: bool) -> tuple[Array, ...]:
        rng = np.random.default_rng(_SEED)
        n = quick if quick_size else full
        return (_normal(rng, (n, n), np.float64),)

    return make


def _square_laid_out(
    full: int, quick: int, *, transposed: bool
) -> Callable[[bool], tuple[Array, ...]]:
    def make(quick_size: bool) -> tuple[Array, ...]:
        x = _square(full, quick)(quick_size)[0]
        return (x.T if transposed else np.asfortranarray(x),)

    return make


def _mlp(full: tuple[int, int], quick: tuple[int, int]) -> Callable[[bool], tuple[Array, ...]]:
    def make(quick_size: bool) -> tuple[Array, ...]:
        rng = np.random.default_rng(_SEED)
        batch, width = quick if quick_size else full
        scale = np.float32(1.0 / np.sqrt(width))
        x = _normal(rng, (batch, width), np.float32)
        w1 = _normal(rng, (width, width), np.float32) * scale
        b1 = 0.1 * _normal(rng, (width,), np.float32)
        w2 = _normal(rng, (width, width), np.float32) * scale
        b2 = 0.1 * _normal(rng, (width,), np.float32)
        return (x, w1, b1, w2, b2)

    return make


def _mlp_flops(args: tuple[Array, ...]) -> float:
    x, w1, _, w2, _ = args
    batch, width = x.shape
    return float(2 * batch * width * w1.shape[1] + 2 * batch * w1.shape[1] * w2.shape[1])


# --- the table --------------------------------------------------------------------------------


@attrs.frozen
class Workload:
    """One benchmarked NumPy function with its inputs and peers.

    ``bound`` says what limits it: ``memory`` rows report GB/s of the minimum traffic (every
    input read once, every output written once) beside STREAM; ``compute`` rows report
    GFLOP/s from ``flops``; ``overhead`` rows measure the call path alone.

        >>> find_workloads(["tiny_call"])[0].bound
        'overhead'
    """

    name: str
    fn: Callable[..., Any]
    inputs: Callable[[bool], tuple[Array, ...]]
    bound: Bound
    numexpr_fn: Callable[..., Any] | None = None
    numexpr_note: str = ""
    flops: Callable[[tuple[Array, ...]], float] | None = None

    def make_inputs(self, *, quick: bool) -> tuple[Array, ...]:
        """Fresh, seeded inputs at full or quick size (same seed, same values, every process)."""
        return self.inputs(quick)


# Not in the table: compiled once before the workloads to absorb a compiler's process start-up.
STARTUP_WORKLOAD = Workload(
    name="startup_add_one", fn=add_one, inputs=_vectors(1, 1, 1, np.float64), bound="overhead"
)

_TEN_M = 10_000_000
_QUICK_N = 1 << 17
_PARTIAL = "elementwise in numexpr, reductions in NumPy"

WORKLOADS: tuple[Workload, ...] = (
    Workload(
        name="chain_sin_f32",
        fn=sin_mul_add,
        inputs=_vectors(3, _TEN_M, _QUICK_N, np.float32),
        bound="memory",
        numexpr_fn=_ne_sin_mul_add,
    ),
    Workload(
        name="chain_sin_f64",
        fn=sin_mul_add,
        inputs=_vectors(3, _TEN_M, _QUICK_N, np.float64),
        bound="memory",
        numexpr_fn=_ne_sin_mul_add,
    ),
    Workload(
        name="chain10_f32",
        fn=ten_op_chain,
        inputs=_vectors(3, _TEN_M, _QUICK_N, np.float32),
        bound="memory",
        numexpr_fn=_ne_ten_op_chain,
    ),
    Workload(
        name="chain10_f64",
        fn=ten_op_chain,
        inputs=_vectors(3, _TEN_M, _QUICK_N, np.float64),
        bound="memory",
        numexpr_fn=_ne_ten_op_chain,
    ),
    Workload(
        name="softmax_rows_f32",
        fn=softmax_rows,
        inputs=_rows((8192, 1024), (256, 256), affine=False),
        bound="memory",
        numexpr_fn=_ne_softmax_rows,
        numexpr_note=_PARTIAL,
    ),
    Workload(
        # rows wider than a Triton tile: the GPU's looped row kernel (codegen/triton/rows.py)
        name="softmax_wide_f32",
        fn=softmax_rows,
        inputs=_rows((256, 32768), (16, 4096), affine=False),
        bound="memory",
        numexpr_fn=_ne_softmax_rows,
        numexpr_note=_PARTIAL,
    ),
    Workload(
        name="layernorm_rows_f32",
        fn=layernorm_rows,
        inputs=_rows((8192, 1024), (256, 256), affine=True),
        bound="memory",
        numexpr_fn=_ne_layernorm_rows,
        numexpr_note=_PARTIAL,
    ),
    Workload(
        name="sum_axis0_f64",
        fn=sum_axis0,
        inputs=_square(4096, 384),
        bound="memory",
        numexpr_fn=_ne_sum_axis0,
    ),
    Workload(
        name="sum_axis1_f64",
        fn=sum_axis1,
        inputs=_square(4096, 384),
        bound="memory",
        numexpr_fn=_ne_sum_axis1,
    ),
    Workload(
        name="sum_all_f64",
        fn=sum_all,
        inputs=_square(4096, 384),
        bound="memory",
        numexpr_fn=_ne_sum_all,
    ),
    Workload(
        name="outer_bcast_f32",
        fn=outer_bcast,
        inputs=_vectors(3, 4096, 384, np.float32),
        bound="memory",
        numexpr_fn=_ne_outer_bcast,
    ),
    Workload(
        name="mlp_f32",
        fn=mlp_forward,
        inputs=_mlp((512, 1024), (32, 128)),
        bound="compute",
        numexpr_note="not expressible (matmul)",
        flops=_mlp_flops,
    ),
    Workload(
        name="scale_fortran_f64",
        fn=scale_shift,
        inputs=_square_laid_out(2000, 384, transposed=False),
        bound="memory",
        numexpr_fn=_ne_scale_shift,
    ),
    Workload(
        name="scale_transposed_f64",
        fn=scale_shift,
        inputs=_square_laid_out(2000, 384, transposed=True),
        bound="memory",
        numexpr_fn=_ne_scale_shift,
    ),
    Workload(
        name="tiny_call_f64",
        fn=tiny_call,
        inputs=_vectors(4, 1, 1, np.float64),
        bound="overhead",
        numexpr_fn=_ne_tiny_call,
    ),
)


def _matches(name: str, pattern: str) -> bool:
    return fnmatch.fnmatchcase(name, pattern) or name.startswith(pattern)


def find_workloads(patterns: list[str] | None) -> list[Workload]:
    """The workloads matching any of ``patterns`` (all if none).

    A pattern is a shell-style pattern (``sum_*``); one without wildcards also matches as a
    prefix, so ``chain10`` selects both dtypes.

    >>> [w.name for w in find_workloads(["sum_*"])]
    ['sum_axis0_f64', 'sum_axis1_f64']
    """
    if not patterns:
        return list(WORKLOADS)
    chosen = [w for w in WORKLOADS if any(_matches(w.name, p) for p in patterns)]
    # "autograd" selects benchmarks/autograd.py and "dynamic_kernel" the symbolic-size
    # comparison in suite.py; the suite runs them beside the workloads.
    extras = ("autograd", "dynamic_kernel")
    if not chosen and not any(_matches(extra, p) for extra in extras for p in patterns):
        known = ", ".join([*(w.name for w in WORKLOADS), *extras])
        raise ValueError(f"no workload matches {patterns}; known workloads: {known}")
    return chosen


def min_bytes(args: tuple[Array, ...], result: Any) -> int:
    """Bytes that must move at least: every input read once and every output written once.

    >>> min_bytes((np.zeros(4),), np.zeros(2))
    48
    """
    outputs = result if isinstance(result, tuple | list) else (result,)
    moved = sum(int(a.nbytes) for a in args)
    return moved + sum(int(np.asarray(o).nbytes) for o in outputs)
