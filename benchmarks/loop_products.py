"""Warm call times of loop bodies with a matrix-vector product (`W @ H[i - 1]`, `H[i - 1] @
W`): numpile (default options, tiering off, builds waited for) against NumPy eager,
interleaved, medians in milliseconds, at several hidden sizes.

    python -m benchmarks.loop_products --steps 400 --hidden 16 64 256
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .child import load_average
from .timer import Timing, measure_interleaved


def matrix_times_rows(H: Any, W: Any, b: Any) -> Any:
    """A linear recurrence: each row `W @ previous row * 0.5 + b`, in place."""
    for i in range(1, H.shape[0]):
        H[i] = W @ H[i - 1] * 0.5 + b
    return H


def rows_times_matrix(H: Any, W: Any, b: Any) -> Any:
    """Each row `max(previous row @ W, 0) - b`, in place."""
    for i in range(1, H.shape[0]):
        H[i] = np.maximum(H[i - 1] @ W, 0.0) - b
    return H


PROGRAMS: dict[str, Callable[..., Any]] = {
    fn.__name__: fn for fn in (matrix_times_rows, rows_times_matrix)
}


def _inputs(steps: int, hidden: int) -> tuple[Any, Any, Any]:
    rng = np.random.default_rng(hidden)
    H = np.zeros((steps, hidden))
    H[0] = rng.standard_normal(hidden)
    W = rng.standard_normal((hidden, hidden)) / np.sqrt(hidden)
    return H, W, rng.standard_normal(hidden)


def time_program(name: str, steps: int, hidden: int, *, budget_s: float) -> tuple[float, float]:
    """Median seconds of one call, NumPy eager then numpile."""
    import numpile
    import numpile_runtime

    fn = PROGRAMS[name]
    args = _inputs(steps, hidden)
    compiled = numpile.compile(fn, options={"tiered": False})
    compiled(*(a.copy() for a in args))
    numpile_runtime.wait_for_queued_builds(timeout=240.0)
    timings = measure_interleaved(
        {"numpy": fn, "numpile": compiled}, args, budget_s=budget_s, min_repeats=5
    )
    numpy_t, numpile_t = timings["numpy"], timings["numpile"]
    assert isinstance(numpy_t, Timing) and isinstance(numpile_t, Timing)
    return numpy_t.median_s, numpile_t.median_s


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.loop_products")
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--hidden", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--budget", type=float, default=1.0, help="seconds of timing each")
    options = parser.parse_args(argv)
    print(f"steps {options.steps}; load average {load_average()}")
    print("| program | hidden | NumPy ms | numpile ms | NumPy / numpile |")
    print("| --- | --- | --- | --- | --- |")
    for name in PROGRAMS:
        for hidden in options.hidden:
            numpy_s, numpile_s = time_program(name, options.steps, hidden, budget_s=options.budget)
            ratio = numpy_s / numpile_s
            print(
                f"| {name} | {hidden} | {numpy_s * 1e3:.3g} | {numpile_s * 1e3:.3g} "
                f"| {ratio:.3g}x |"
            )


if __name__ == "__main__":
    main()
