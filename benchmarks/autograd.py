"""The autograd benchmarks: bytes saved for the backward, and the time of an MLP training step.

Two measurements, selected together as ``python -m benchmarks --only autograd``:

- **Saved bytes**: for an MLP loss, a softmax + layernorm chain and a 10-op pointwise chain,
  the bytes the forward keeps alive for the backward under the default partitioner (save
  what the backward reads) and under the min-cut partitioner (recompute cheap pointwise
  ops in the backward). Counted on the joint graph that ``numpile.grad`` builds
  (``numpile_autograd_aot.trace_joint``); no timing involved, so the figures are exact.
- **MLP training step** (loss and gradients of every parameter, float32): a hand-written
  NumPy backward (the reference, "numpy"), ``numpile.value_and_grad`` running its forward
  and backward graphs op by op with NumPy (``compiler="eager"``), and the same with both
  graphs compiled by the inductor (``compiler="inductor"``), and the whole step compiled as
  one graph (``numpile.compile(numpile.value_and_grad(...))``: forward and backward in one
  inductor graph, nothing saved between calls). Timed in interleaved rounds by
  ``benchmarks.timer``; ratio = NumPy's time / the contender's (> 1 is faster).

    >>> result = run_autograd(quick=True)  # doctest: +SKIP
    >>> print(render_autograd(result))  # doctest: +SKIP
"""

from __future__ import annotations

import fnmatch
import sys
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from .timer import Timing, measure_interleaved
from .workloads import Array, layernorm_rows, softmax_rows, ten_op_chain

# The name that selects these benchmarks (``--only autograd``).
AUTOGRAD = "autograd"

_SEED = 20261122


def autograd_selected(patterns: list[str] | None) -> bool:
    """Whether ``--only`` patterns select the autograd benchmarks (all do when there are none).

    >>> autograd_selected(["auto*"]), autograd_selected(["chain10"]), autograd_selected(None)
    (True, False, True)
    """
    if not patterns:
        return True
    return any(fnmatch.fnmatchcase(AUTOGRAD, p) or AUTOGRAD.startswith(p) for p in patterns)


# --- the differentiated functions (plain NumPy) ----------------------------------------------


def mlp_loss(params: dict[str, Array], x: Array, y: Array) -> Any:
    """Mean squared error of a two-hidden-layer ReLU MLP."""
    h1 = np.maximum(x @ params["w1"] + params["b1"], 0.0)
    h2 = np.maximum(h1 @ params["w2"] + params["b2"], 0.0)
    out = h2 @ params["w3"] + params["b3"]
    return np.mean((out - y) ** 2)


def mlp_loss_and_grad_numpy(params: dict[str, Array], x: Array, y: Array) -> Any:
    """``mlp_loss`` and its gradient, the backward written by hand in NumPy (the reference)."""
    pre1 = x @ params["w1"] + params["b1"]
    h1 = np.maximum(pre1, 0.0)
    pre2 = h1 @ params["w2"] + params["b2"]
    h2 = np.maximum(pre2, 0.0)
    out = h2 @ params["w3"] + params["b3"]
    diff = out - y
    loss = np.mean(diff**2)
    d_out = diff * (2.0 / diff.size)
    d_h2 = (d_out @ params["w3"].T) * (pre2 > 0)
    d_h1 = (d_h2 @ params["w2"].T) * (pre1 > 0)
    grads = {
        "w1": x.T @ d_h1,
        "b1": d_h1.sum(axis=0),
        "w2": h1.T @ d_h2,
        "b2": d_h2.sum(axis=0),
        "w3": h2.T @ d_out,
        "b3": d_out.sum(axis=0),
    }
    return loss, grads


def softmax_layernorm_loss(x: Array, gamma: Array, beta: Array) -> Any:
    """Softmax over rows, then layer normalization, then a weighted sum: a reduction chain."""
    out = layernorm_rows(softmax_rows(x), gamma, beta)
    return np.sum(out * out)


def pointwise_chain_loss(a: Array, b: Array, c: Array) -> Any:
    """The suite's ten-op elementwise chain, summed."""
    return np.sum(ten_op_chain(a, b, c))


# --- inputs ----------------------------------------------------------------------------------


def _normal(rng: np.random.Generator, shape: tuple[int, ...], scale: float = 1.0) -> Array:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def mlp_inputs(*, quick: bool) -> tuple[dict[str, Array], Array, Array]:
    """Parameters, a batch and targets: batch x features -> hidden -> hidden -> outputs."""
    batch, features, hidden, outputs = (64, 64, 128, 8) if quick else (512, 512, 1024, 16)
    rng = np.random.default_rng(_SEED)
    params = {
        "w1": _normal(rng, (features, hidden), features**-0.5),
        "b1": _normal(rng, (hidden,), 0.1),
        "w2": _normal(rng, (hidden, hidden), hidden**-0.5),
        "b2": _normal(rng, (hidden,), 0.1),
        "w3": _normal(rng, (hidden, outputs), hidden**-0.5),
        "b3": np.zeros(outputs, np.float32),
    }
    return params, _normal(rng, (batch, features)), _normal(rng, (batch, outputs))


def _softmax_inputs(*, quick: bool) -> tuple[Array, ...]:
    rows, cols = (256, 256) if quick else (8192, 1024)
    rng = np.random.default_rng(_SEED)
    return (
        _normal(rng, (rows, cols)),
        1.0 + _normal(rng, (cols,), 0.1),
        _normal(rng, (cols,), 0.1),
    )


def _chain_inputs(*, quick: bool) -> tuple[Array, ...]:
    n = (1 << 17) if quick else 10_000_000
    rng = np.random.default_rng(_SEED)
    return tuple(_normal(rng, (n,)) for _ in range(3))


# --- results ---------------------------------------------------------------------------------


@attrs.frozen
class SavedBytes:
    """Bytes kept between forward and backward by each partitioner, for one function.

    >>> SavedBytes("f", "1 x [4]", 32, 2, 16, 1).reduction
    2.0
    """

    program: str
    inputs: str
    default_bytes: int
    default_values: int
    min_cut_bytes: int
    min_cut_values: int

    @property
    def reduction(self) -> float:
        """Default bytes / min-cut bytes (> 1: min-cut saves less)."""
        return self.default_bytes / self.min_cut_bytes if self.min_cut_bytes else float("inf")


@attrs.frozen
class StepTiming:
    """One contender's MLP training step (loss + all gradients), seconds per call.

    >>> StepTiming("numpy", "ok").median_s is None
    True
    """

    contender: str
    status: str
    reason: str = ""
    first_s: float | None = None
    median_s: float | None = None
    min_s: float | None = None
    repeats: int = 0
    ratio_vs_numpy: float | None = None
    check: str = ""


@attrs.frozen
class AutogradResult:
    """Everything the autograd benchmarks measured (plain data: ``attrs.asdict`` is JSON).

    >>> AutogradResult([], "", []).training
    []
    """

    saved: list[SavedBytes]
    mlp_size: str
    training: list[StepTiming]


# --- measuring -------------------------------------------------------------------------------


def _describe(args: tuple[Any, ...]) -> str:
    leaves = [leaf for arg in args for leaf in (arg.values() if isinstance(arg, dict) else [arg])]
    shapes = ["x".join(map(str, leaf.shape)) for leaf in leaves]
    return f"{leaves[0].dtype} " + " ".join(f"[{shape}]" for shape in shapes)


def measure_saved_bytes(*, quick: bool) -> list[SavedBytes]:
    """Default and min-cut saved bytes for the three programs (see the module docstring)."""
    from numpile_autograd_aot import (
        default_partition,
        min_cut_partition,
        saved_bytes,
        trace_joint,
    )

    programs: list[tuple[str, Callable[..., Any], tuple[Any, ...], tuple[int, ...]]] = [
        ("mlp", mlp_loss, mlp_inputs(quick=quick), (0,)),
        ("softmax_layernorm", softmax_layernorm_loss, _softmax_inputs(quick=quick), (0, 1, 2)),
        ("pointwise_chain10", pointwise_chain_loss, _chain_inputs(quick=quick), (0, 1, 2)),
    ]
    rows = []
    for name, fn, args, argnums in programs:
        joint = trace_joint(fn, *args, argnums=argnums)
        default = default_partition(joint)
        min_cut = min_cut_partition(joint)
        rows.append(
            SavedBytes(
                name,
                _describe(args),
                saved_bytes(default),
                len(default.saved),
                saved_bytes(min_cut),
                len(min_cut.saved),
            )
        )
    return rows


def _compare(got: Any, want: Any) -> str:
    loss, grads = got
    want_loss, want_grads = want
    if not np.allclose(loss, want_loss, rtol=2e-4, atol=1e-6):
        return f"loss {float(loss):.6g} != {float(want_loss):.6g}"
    for key, reference in want_grads.items():
        value = np.asarray(grads[key])
        if value.dtype != reference.dtype or value.shape != reference.shape:
            return f"grad {key}: {value.dtype}{value.shape} != {reference.dtype}{reference.shape}"
        scale = float(np.max(np.abs(reference))) or 1.0
        if float(np.max(np.abs(value - reference))) > 2e-4 * scale:
            return f"grad {key} differs"
    return "ok"


def measure_training_step(*, quick: bool) -> tuple[str, list[StepTiming]]:
    """Time the MLP's loss + gradients: hand-written NumPy, numpile eager, numpile inductor."""
    import numpile

    args = mlp_inputs(quick=quick)
    reference = mlp_loss_and_grad_numpy(*args)
    contenders: dict[str, Callable[..., Any]] = {
        "numpy (hand-written backward)": mlp_loss_and_grad_numpy,
        "numpile eager (run_graph)": numpile.value_and_grad(mlp_loss, compiler="eager"),
        "numpile inductor": numpile.value_and_grad(mlp_loss, compiler="inductor"),
        "numpile.compile(value_and_grad)": numpile.compile(
            numpile.value_and_grad(mlp_loss), backend="inductor"
        ),
    }
    timings = measure_interleaved(
        contenders,
        args,
        # NOTE: a sub-millisecond step on a shared 2-core machine needs many rounds for a
        # stable median (0.1 s gave medians off by 5x under load).
        budget_s=0.6 if quick else 2.0,
        min_repeats=30 if quick else 9,
        max_repeats=300 if quick else 100,
    )
    base = timings["numpy (hand-written backward)"]
    base_median = base.median_s if isinstance(base, Timing) else None
    rows = []
    for name, fn in contenders.items():
        timing = timings[name]
        if isinstance(timing, Exception):
            reason = f"{type(timing).__name__}: {timing}"[:300]
            rows.append(StepTiming(name, "error", reason=reason))
            continue
        rows.append(
            StepTiming(
                name,
                "ok",
                first_s=timing.first_s,
                median_s=timing.median_s,
                min_s=timing.min_s,
                repeats=timing.repeats,
                ratio_vs_numpy=base_median / timing.median_s if base_median else None,
                check="ref" if fn is mlp_loss_and_grad_numpy else _compare(fn(*args), reference),
            )
        )
    return _describe(args), rows


def run_autograd(*, quick: bool) -> AutogradResult:
    """Both autograd measurements at quick or full size."""
    print("[bench] autograd: saved bytes per partitioner", file=sys.stderr, flush=True)
    saved = measure_saved_bytes(quick=quick)
    print("[bench] autograd: MLP training step", file=sys.stderr, flush=True)
    size, training = measure_training_step(quick=quick)
    return AutogradResult(saved, size, training)


# --- the report ------------------------------------------------------------------------------


def _seconds(value: float | None) -> str:
    if value is None:
        return "n/a"
    if value >= 1:
        return f"{value:.2f} s"
    if value >= 1e-3:
        return f"{value * 1e3:.2f} ms"
    return f"{value * 1e6:.1f} us"


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(lines)


def render_autograd(result: AutogradResult) -> str:
    """The autograd section of the report as text."""
    saved_rows = [
        [
            row.program,
            row.inputs,
            f"{row.default_bytes:,} ({row.default_values})",
            f"{row.min_cut_bytes:,} ({row.min_cut_values})",
            f"{row.reduction:.2f}x",
        ]
        for row in result.saved
    ]
    saved = _table(
        [
            "program",
            "inputs",
            "default bytes (values)",
            "min-cut bytes (values)",
            "default/min-cut",
        ],
        saved_rows,
    )
    eager = next((r for r in result.training if r.contender.startswith("numpile eager")), None)
    step_rows = []
    for row in result.training:
        if row.status != "ok":
            step_rows.append([row.contender, row.status, "", "", "", row.reason[:60]])
            continue
        vs_eager = (
            f"{eager.median_s / row.median_s:.2f}x"
            if eager and eager.median_s and row.median_s
            else "n/a"
        )
        ratio = row.ratio_vs_numpy
        step_rows.append(
            [
                row.contender,
                _seconds(row.median_s),
                "n/a" if ratio is None else f"{ratio:.2f}x",
                vs_eager,
                _seconds(row.first_s),
                row.check,
            ]
        )
    step = _table(
        ["contender", "time/step", "vs numpy", "vs numpile eager", "first call", "check"],
        step_rows,
    )
    return (
        "== autograd: bytes saved between forward and backward ==\n"
        f"{saved}\n\n"
        f"== autograd: MLP training step (loss + gradients), {result.mlp_size} ==\n"
        "ratios: other time / this time (> 1 is faster); first call includes capture + compile\n"
        f"{step}\n"
    )
