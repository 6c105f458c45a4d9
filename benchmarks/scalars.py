"""Scalar inputs and loops: an optimizer loop whose learning rate and step count change, and
a training loop that prints from inside the compiled function.

Selected as ``python -m benchmarks --only scalars`` (and run with the full suite). Each
workload is one optimizer step on float32 vectors called ``STEPS`` times, with the learning
rate decayed and the step count incremented every call, as a training loop does. Two
settings: ``default`` (Python ints and floats become graph inputs once a recompile sees them
change) and ``specialized`` (``config.specialize_int = config.specialize_float = True``:
every value baked into the graph and guarded, numpile's behaviour before 2026-11-25), and
``numpy`` (the learning rate and step count passed as ``np.float32`` / ``np.int64`` scalars,
which follow the same automatic dynamic as Python numbers since issue 23/28's fix). The
report counts compiles and calls that ran eagerly (past ``cache_size_limit``), checks every
result against NumPy, and gives the total time of the loop (compiles included) and the
median time of one step over the second half of the loop, both against NumPy in the same
run.

Prediction written before measuring (1M float32, 2 cores): ``default`` compiles twice and
then runs every step compiled, as fast as a fused elementwise chain (Adam is about eleven
NumPy passes: 5-8x); ``specialized`` compiles 8 times, then runs the other 92 steps eagerly,
so its steps cost what NumPy's do and its total is NumPy's plus 8 compiles.

The second table times one call of ``train_loop``: ``LOOP_STEPS`` iterations of an update
inside the compiled function, printing every 100th step (the data-dependent ``float``
breaks; after the first break each iteration steps the loop in Python: a break per
iteration). Prediction written before measuring: it now compiles a handful of times and
runs every iteration compiled, at the speed of the fused update (3-5x NumPy at 100K float64
elements); before, each iteration made and compiled new resume code and the call went eager
after 48 iterations, so it ran at NumPy's speed or slower.

    >>> print(render_scalars(run_scalars(quick=True)))  # doctest: +SKIP
"""

from __future__ import annotations

import statistics
import time
import warnings
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from .selection import run_if_selected

# The name that selects this benchmark (``--only scalars``).
SCALARS = "scalars"

STEPS = 100
FULL_N = 1 << 20
QUICK_N = 1 << 14


def adam_step(w: Any, g: Any, m: Any, v: Any, lr: float, t: int) -> Any:
    """Adam with bias correction: the step count enters through ``0.9 ** t``."""
    m = 0.9 * m + 0.1 * g
    v = 0.999 * v + 0.001 * g * g
    step = lr * (1 - 0.999**t) ** 0.5 / (1 - 0.9**t)
    return w - step * m / (np.sqrt(v) + 1e-8), m, v


def momentum_step(w: Any, g: Any, m: Any, v: Any, lr: float, t: int) -> Any:
    """SGD with momentum and weight decay; the learning rate changes every call."""
    m = 0.9 * m + g + 1e-4 * w
    return w - lr * m, m, v


def train_loop(w: Any, target: Any, steps: int) -> Any:
    """Gradient steps with a periodic print: after the first, a graph break per iteration."""
    for i in range(steps):
        grad = np.tanh(w - target) * 2.0
        w = w - 0.01 * grad
        if i % 100 == 0:
            print("step", i, float(np.abs(grad).max()))
    return w


WORKLOADS: dict[str, Callable[..., Any]] = {"adam": adam_step, "momentum": momentum_step}
LOOP_STEPS = 1000
LOOP_N = 100_000
SETTINGS = ("default", "specialized", "numpy")


@attrs.frozen
class ScalarRow:
    """One workload under one setting: compiles, eager calls, loop and step times."""

    workload: str
    setting: str
    compiles: int
    eager_calls: int
    correct: bool
    total_s: float
    numpy_total_s: float
    step_s: float
    numpy_step_s: float


def _schedule(setting: str = "default") -> list[tuple[Any, Any]]:
    if setting == "numpy":
        return [(np.float32(1e-3 * 0.98**t), np.int64(t)) for t in range(1, STEPS + 1)]
    return [(1e-3 * 0.98**t, t) for t in range(1, STEPS + 1)]


# Steps whose results are kept and checked (keeping all would hold 100 x 3 outputs).
_CHECKED = (0, 1, 2, STEPS // 2, STEPS - 1)


def _loop(
    fn: Callable[..., Any], state: tuple[Any, ...], setting: str
) -> tuple[list[Any], list[float]]:
    w, g, m, v = state
    results, times = [], []
    for index, (lr, t) in enumerate(_schedule(setting)):
        start = time.perf_counter()
        result = fn(w, g, m, v, lr, t)
        times.append(time.perf_counter() - start)
        if index in _CHECKED:
            results.append(result)
    return results, times


def _run_one(name: str, setting: str, n: int) -> ScalarRow:
    import numpile
    from numpile_capture.capture_events import recording_captures
    from numpile_capture.dispatch import CaptureFallbackWarning

    numpile.reset()
    fn = WORKLOADS[name]
    rng = np.random.default_rng(0)
    state = tuple(rng.standard_normal(n).astype(np.float32) for _ in range(3))
    state = (*state, rng.uniform(0, 1, n).astype(np.float32))
    fixed = setting == "specialized"
    with numpile.config.patch(specialize_int=fixed, specialize_float=fixed):
        compiled = numpile.compile(fn)
        with recording_captures() as events, warnings.catch_warnings():
            warnings.simplefilter("ignore", CaptureFallbackWarning)
            results, times = _loop(compiled, state, setting)
    expected, numpy_times = _loop(fn, state, setting)
    correct = all(
        got.dtype == want.dtype and np.allclose(got, want, rtol=1e-5, atol=1e-6)
        for pair in zip(results, expected, strict=True)
        for got, want in zip(*pair, strict=True)
    )
    compiles = sum(1 for event in events if event.graph is not None and not event.eager)
    eager = _eager_calls(fn, state, setting)
    half = len(times) // 2
    numpile.reset()
    return ScalarRow(
        name,
        setting,
        compiles,
        eager,
        correct,
        sum(times),
        sum(numpy_times),
        statistics.median(times[half:]),
        statistics.median(numpy_times[half:]),
    )


def _eager_calls(fn: Callable[..., Any], state: tuple[Any, ...], setting: str) -> int:
    # Calls of the schedule that no compiled entry admits (they ran eagerly).
    from numpile_guards import cache_for

    entries = cache_for(fn.__code__).entries
    w, g, m, v = state
    count = 0
    for lr, t in _schedule(setting):
        L = {"w": w, "g": g, "m": m, "v": v, "lr": lr, "t": t}
        count += not any(entry.check(L, fn.__globals__, fn) for entry in entries)
    return count


def run_scalars(*, quick: bool = False) -> list[ScalarRow]:
    """Every workload under every setting."""
    n = QUICK_N if quick else FULL_N
    return [_run_one(name, setting, n) for name in WORKLOADS for setting in SETTINGS]


def render_scalars(rows: list[ScalarRow]) -> str:
    """The rows as a text table."""
    lines = [
        f"Scalar inputs: {STEPS} optimizer steps, learning rate and step count changing "
        "every call (float32 vectors)",
        f"{'workload':9} {'setting':12} {'compiles':>8} {'eager':>6} {'correct':>8} "
        f"{'loop s':>8} {'numpy s':>8} {'step ms':>8} {'numpy ms':>9} {'vs numpy':>9}",
    ]
    for row in rows:
        speedup = row.numpy_step_s / row.step_s if row.step_s else float("nan")
        lines.append(
            f"{row.workload:9} {row.setting:12} {row.compiles:8d} {row.eager_calls:6d} "
            f"{row.correct!s:>8} {row.total_s:8.3f} {row.numpy_total_s:8.3f} "
            f"{row.step_s * 1e3:8.3f} {row.numpy_step_s * 1e3:9.3f} {speedup:8.2f}x"
        )
    return "\n".join(lines) + "\n"


@attrs.frozen
class LoopRow:
    """One call of ``train_loop``: compiles, the call's time (first and warm) against NumPy."""

    compiles: int
    correct: bool
    first_s: float
    warm_s: float
    numpy_s: float


def run_loop(*, quick: bool = False) -> LoopRow:
    """``train_loop`` compiled: the first call (compiles included), then the best of 3."""
    import contextlib
    import io

    import numpile
    from numpile_capture.capture_events import recording_captures

    numpile.reset()
    steps = LOOP_STEPS // 10 if quick else LOOP_STEPS
    rng = np.random.default_rng(0)
    w, target = rng.standard_normal(LOOP_N), rng.standard_normal(LOOP_N)
    compiled = numpile.compile(train_loop)
    timings: dict[str, list[float]] = {"compiled": [], "numpy": []}
    results = {}
    with contextlib.redirect_stdout(io.StringIO()), recording_captures() as events:
        for _ in range(4):
            for name, fn in (("compiled", compiled), ("numpy", train_loop)):
                start = time.perf_counter()
                results[name] = fn(w, target, steps)
                timings[name].append(time.perf_counter() - start)
    correct = bool(np.allclose(results["compiled"], results["numpy"], rtol=1e-9, atol=1e-12))
    numpile.reset()
    return LoopRow(
        len(events),
        correct,
        timings["compiled"][0],
        min(timings["compiled"][1:]),
        min(timings["numpy"][1:]),
    )


def render_loop(row: LoopRow, *, quick: bool = False) -> str:
    """The loop figures as text."""
    steps = LOOP_STEPS // 10 if quick else LOOP_STEPS
    return (
        f"Loop with a break in every iteration: train_loop, {steps} steps on {LOOP_N:,} "
        "float64, print every 100\n"
        f"compiles {row.compiles}, correct {row.correct}, first call {row.first_s:.3f} s, "
        f"warm {row.warm_s * 1e3:.1f} ms, numpy {row.numpy_s * 1e3:.1f} ms "
        f"({row.numpy_s / row.warm_s:.2f}x)\n"
    )


def run_selected(patterns: list[str] | None, *, quick: bool) -> list[str] | None:
    """Run and print this benchmark when selected; the patterns left for the main suite.

    >>> run_selected(["chain*"], quick=True)
    ['chain*']
    """

    def report() -> str:
        loop = render_loop(run_loop(quick=quick), quick=quick)
        return render_scalars(run_scalars(quick=quick)) + "\n" + loop

    return run_if_selected(SCALARS, patterns, report)
