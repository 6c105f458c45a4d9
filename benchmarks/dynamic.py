"""The dynamic-shape benchmark: how many compiles 100 random batch sizes cost.

Selected as ``python -m benchmarks --only dynamic`` (and run with the full suite). For a
few workloads, a compiled function (``dynamic=None``, the default: static first, a size
made symbolic once a recompile sees it change) is called on 100 batch sizes drawn
uniformly from [2, 1024] (sizes 0 and 1 are always specialized: each costs one more
compile); the report counts the graphs compiled, the calls that ran eagerly (past
``cache_size_limit``), checks every result against NumPy, and gives the total time of the
100 calls against NumPy's in the same run (compiles included). ``dynamic=False`` is the
contrast: one compile per new size until the cache limit, then eager. Target: at most 2
compiles with ``dynamic=None``.

Prediction written before measuring: with the eager backend, 2 compiles per workload (the
static first one, then one symbolic entry serving every later size); the inductor, then
thought static-only, up to the cache limit (8) and eager after it. Measured (2 cores,
Python 3.11): 2 compiles for all four workloads on both backends with ``dynamic=None``, 0
eager calls, all results correct; ``dynamic=False`` compiles 8 times and runs 91 of the
100 calls eagerly. A backend that raises on a symbolic graph (or sets
``supports_dynamic_shapes = False``) gets static graphs instead.

    >>> print(render_dynamic(run_dynamic(quick=True)))  # doctest: +SKIP
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from .selection import run_if_selected

# The name that selects this benchmark (``--only dynamic``).
DYNAMIC = "dynamic"

CALLS = 100
FEATURES = 64


def _mlp(x: Any, w: Any, b: Any) -> Any:
    return np.maximum(x @ w + b, 0.0).sum(axis=1)


def _softmax(x: Any, w: Any, b: Any) -> Any:
    z = x - x.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def _standardize(x: Any, w: Any, b: Any) -> Any:
    return (x - x.mean(axis=0)) / (x.std(axis=0) + 1e-6) * b[:FEATURES].sum()


def _pairs(x: Any, w: Any, b: Any) -> Any:
    rows = x.reshape(-1, 2 * FEATURES)
    return rows[:, :FEATURES] - rows[:, FEATURES:]


WORKLOADS: dict[str, Callable[..., Any]] = {
    "mlp": _mlp,
    "softmax": _softmax,
    "standardize": _standardize,
    "reshape_pairs": _pairs,
}


@attrs.frozen
class DynamicRow:
    """One workload under one backend and `dynamic` setting: compiles, eager calls, times."""

    workload: str
    backend: str
    dynamic: bool | None
    compiles: int
    eager_calls: int
    correct: bool
    compiled_s: float
    numpy_s: float


def _sizes(seed: int) -> list[int]:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 1025, size=CALLS)
    return [int(2 * (n // 2)) if n % 2 else int(n) for n in sizes]  # even: reshape_pairs


def _run_one(name: str, backend: str, dynamic: bool | None, sizes: list[int]) -> DynamicRow:
    import numpile
    from numpile_capture.capture_events import recording_captures
    from numpile_capture.dispatch import CaptureFallbackWarning

    numpile.reset()
    fn = WORKLOADS[name]
    compiled = numpile.compile(fn, backend=backend, dynamic=dynamic)
    rng = np.random.default_rng(0)
    w = rng.standard_normal((FEATURES, FEATURES))
    b = rng.standard_normal(FEATURES)
    inputs = [rng.standard_normal((n, FEATURES)) for n in sizes]
    correct = True
    start = time.perf_counter()
    with recording_captures() as events, warnings.catch_warnings():
        warnings.simplefilter("ignore", CaptureFallbackWarning)
        results = [compiled(x, w, b) for x in inputs]
    compiled_s = time.perf_counter() - start
    start = time.perf_counter()
    expected = [fn(x, w, b) for x in inputs]
    numpy_s = time.perf_counter() - start
    for got, want in zip(results, expected, strict=True):
        same_kind = got.shape == want.shape and got.dtype == want.dtype
        if not same_kind or not np.allclose(got, want, rtol=1e-10, atol=1e-10):
            correct = False
    compiles = sum(1 for event in events if event.graph is not None and not event.eager)
    eager_calls = sum(1 for x in inputs if not _has_entry(fn, {"x": x, "w": w, "b": b}))
    numpile.reset()
    return DynamicRow(name, backend, dynamic, compiles, eager_calls, correct, compiled_s, numpy_s)


def _has_entry(fn: Callable[..., Any], L: dict[str, Any]) -> bool:
    # Whether a compiled entry admits these inputs (otherwise the call ran eagerly).
    from numpile_guards import cache_for

    entries = cache_for(fn.__code__).entries
    return any(entry.check(L, fn.__globals__, fn) for entry in entries)


def run_dynamic(
    *, quick: bool = False, backends: tuple[str, ...] = ("eager", "inductor")
) -> list[DynamicRow]:
    """Every workload under each backend with `dynamic=None`, and `dynamic=False` for contrast."""
    sizes = _sizes(seed=6)
    rows = []
    names = list(WORKLOADS)[:2] if quick else list(WORKLOADS)
    for backend in backends:
        for name in names:
            for dynamic in (None, False):
                rows.append(_run_one(name, backend, dynamic, sizes))
    return rows


def render_dynamic(rows: list[DynamicRow]) -> str:
    """The rows as a text table."""
    lines = [
        f"Dynamic shapes: {CALLS} random batch sizes in [2, 1024] x {FEATURES} features "
        "(target: at most 2 compiles with dynamic=None)",
        f"{'workload':15} {'backend':9} {'dynamic':8} {'compiles':>8} {'eager':>6} "
        f"{'correct':>8} {'numpile s':>10} {'numpy s':>9} {'ratio':>7}",
    ]
    for row in rows:
        ratio = row.compiled_s / row.numpy_s if row.numpy_s else float("nan")
        lines.append(
            f"{row.workload:15} {row.backend:9} {row.dynamic!s:8} {row.compiles:8d} "
            f"{row.eager_calls:6d} {row.correct!s:>8} {row.compiled_s:10.3f} "
            f"{row.numpy_s:9.3f} {ratio:7.2f}"
        )
    return "\n".join(lines) + "\n"


def run_selected(patterns: list[str] | None, *, quick: bool) -> list[str] | None:
    """Run and print this benchmark when selected; the patterns left for the main suite.

    >>> run_selected(["chain*"], quick=True)
    ['chain*']
    """
    return run_if_selected(DYNAMIC, patterns, lambda: render_dynamic(run_dynamic(quick=quick)))
