"""The loop workloads of `benchmarks.loops`, numpile and numba in one process, best of N.

    python -m benchmarks.loops_same_process [--repeats N] [--small] [--cpu] [patterns...]

`benchmarks.loops` runs each contender in a child process of its own and reports medians;
on a loaded machine those move by 2x between children. Here numpile, numba and NumPy run
interleaved in one process and each keeps its best time, so the ratio `numba / numpile`
compares the two under the same load. `--small` takes the workloads' quick trip counts and
times 50 calls per sample (the fixed cost of a call). `--cpu` times the calling thread's
CPU time (`time.thread_time`) instead of the wall clock, and prints the medians beside
the best times: what a busy sibling core steals is not counted (a kernel's OpenMP
threads are not either: use it for the one-thread scalar loops). Timing starts once the
builds a first compile queues (the call gate) are done. numba is a benchmark-only
dependency.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from .loops import LoopWorkload, find_loop_workloads


def rnn_rows(H: Any, W: Any, b: Any) -> Any:
    """An RNN-like recurrence: each row ``tanh(W @ previous row + b)``, written in place
    (a matrix-vector product on a shifted row, in a C loop since loopcf27)."""
    for i in range(1, H.shape[0]):
        H[i] = np.tanh(W @ H[i - 1] + b)
    return H


def _rnn_inputs(steps: int, hidden: int = 64) -> tuple[Any, Any, Any]:
    rng = np.random.default_rng(0)
    H = np.zeros((steps + 1, hidden))
    H[0] = rng.standard_normal(hidden)
    return H, rng.standard_normal((hidden, hidden)) / np.sqrt(hidden), rng.standard_normal(hidden)


#: Workloads timed here only (not in `benchmarks.loops`' child-process runs).
SAME_PROCESS_WORKLOADS = (
    LoopWorkload("rnn_rows", rnn_rows, _rnn_inputs, 8, 400, "mixed", "time steps, 64 units"),
)


def _samples(
    fns: dict[str, Callable[..., Any]],
    args: tuple[Any, ...],
    repeats: int,
    inner: int,
    clock: Callable[[], float],
) -> dict[str, list[float]]:
    # Seconds per call, one sample per repeat and contender, the contenders alternating.
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for repeat in range(repeats):
        for name, fn in fns.items():
            if name == "numpy" and repeat > 3:  # NumPy's time is long and only a reference
                continue
            start = clock()
            for _ in range(inner):
                fn(*args)
            samples[name].append((clock() - start) / inner)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("patterns", nargs="*")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--small", action="store_true")
    parser.add_argument("--cpu", action="store_true", help="thread CPU time, and medians")
    options = parser.parse_args()
    import numba  # benchmark-only

    import numpile
    import numpile_runtime

    clock = time.thread_time if options.cpu else time.perf_counter

    print(f"load average {os.getloadavg()}")
    extra = [
        w
        for w in SAME_PROCESS_WORKLOADS
        if not options.patterns or any(fnmatch.fnmatchcase(w.name, p) for p in options.patterns)
    ]
    try:
        chosen = find_loop_workloads(options.patterns or None)
    except ValueError:
        if not extra:
            raise
        chosen = []  # only workloads of this module match
    for workload in [*chosen, *extra]:
        args = workload.inputs(workload.quick_trips if options.small else workload.full_trips)
        fns = {"numpy": workload.fn, "numpile": numpile.compile(workload.fn),
               "numba": numba.njit(workload.fn)}  # fmt: skip
        for fn in fns.values():
            fn(*args)
            fn(*args)
        numpile_runtime.wait_for_queued_builds(timeout=240.0)
        samples = _samples(fns, args, options.repeats, 50 if options.small else 1, clock)
        best = {name: min(times) for name, times in samples.items()}
        median = {name: statistics.median(times) for name, times in samples.items()}
        medians = ""
        if options.cpu:
            medians = (
                f"  medians numpile {median['numpile'] * 1e6:.2f} us"
                f" numba {median['numba'] * 1e6:.2f} us"
                f" numba/numpile {median['numba'] / median['numpile']:.2f}x"
            )
        print(
            f"{workload.name:18s} numpile {best['numpile'] * 1e6:9.2f} us"
            f"  numba {best['numba'] * 1e6:9.2f} us  numpy {best['numpy'] * 1e6:10.1f} us"
            f"  numba/numpile {best['numba'] / best['numpile']:.2f}x"
            f"  numpy/numpile {best['numpy'] / best['numpile']:.0f}x{medians}",
            flush=True,
        )
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
