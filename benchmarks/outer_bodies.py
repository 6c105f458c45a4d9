"""Warm call times of the nested-loop programs whose outer body reduces a slice bounded by
its index (`benchmarks/nested_loop_programs.py`): numpile (default options, tiering off,
builds waited for) against NumPy eager, interleaved, medians in milliseconds.

    python -m benchmarks.outer_bodies --size 2000
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import numpy as np

from .child import load_average
from .nested_loop_programs import banded_elimination, nonlinear_forward_substitution
from .timer import Timing, measure_interleaved
from .unseen_loop_programs import PROGRAMS

NAMES = (nonlinear_forward_substitution.__name__, banded_elimination.__name__)


def time_program(name: str, size: int, *, budget_s: float) -> tuple[float, float]:
    """Median seconds of one call, NumPy eager then numpile, on the program's inputs."""
    import numpile
    import numpile_runtime

    entry = PROGRAMS[name]
    args = entry.inputs(np.random.default_rng(0), size)
    compiled = numpile.compile(entry.fn, options={"tiered": False})
    compiled(*(a.copy() if isinstance(a, np.ndarray) else a for a in args))
    numpile_runtime.wait_for_queued_builds(timeout=240.0)
    timings = measure_interleaved(
        {"numpy": entry.fn, "numpile": compiled}, args, budget_s=budget_s, min_repeats=5
    )
    numpy_t, numpile_t = timings["numpy"], timings["numpile"]
    assert isinstance(numpy_t, Timing) and isinstance(numpile_t, Timing)
    return numpy_t.median_s, numpile_t.median_s


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.outer_bodies")
    parser.add_argument("--size", type=int, default=2000)
    parser.add_argument("--budget", type=float, default=2.0, help="seconds of timing each")
    options = parser.parse_args(argv)
    print(f"size {options.size}; load average {load_average()}")
    print("| program | NumPy ms | numpile ms | NumPy / numpile |")
    print("| --- | --- | --- | --- |")
    for name in NAMES:
        numpy_s, numpile_s = time_program(name, options.size, budget_s=options.budget)
        ratio = numpy_s / numpile_s
        print(f"| {name} | {numpy_s * 1e3:.3g} | {numpile_s * 1e3:.3g} | {ratio:.3g}x |")


if __name__ == "__main__":
    main()
