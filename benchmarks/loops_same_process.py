"""The loop workloads of `benchmarks.loops`, numpile and numba in one process, best of N.

    python -m benchmarks.loops_same_process [--repeats N] [--small] [workload patterns...]

`benchmarks.loops` runs each contender in a child process of its own and reports medians;
on a loaded machine those move by 2x between children. Here numpile, numba and NumPy run
interleaved in one process and each keeps its best time, so the ratio `numba / numpile`
compares the two under the same load. `--small` takes the workloads' quick trip counts and
times 50 calls per sample (the fixed cost of a call). numba is a benchmark-only dependency.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

from .loops import find_loop_workloads


def _best(
    fns: dict[str, Callable[..., Any]], args: tuple[Any, ...], repeats: int, inner: int
) -> dict[str, float]:
    best = dict.fromkeys(fns, float("inf"))
    for repeat in range(repeats):
        for name, fn in fns.items():
            if name == "numpy" and repeat > 3:  # NumPy's time is long and only a reference
                continue
            start = time.perf_counter()
            for _ in range(inner):
                fn(*args)
            best[name] = min(best[name], (time.perf_counter() - start) / inner)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("patterns", nargs="*")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--small", action="store_true")
    options = parser.parse_args()
    import numba  # benchmark-only

    import numpile

    print(f"load average {os.getloadavg()}")
    for workload in find_loop_workloads(options.patterns or None):
        args = workload.inputs(workload.quick_trips if options.small else workload.full_trips)
        fns = {"numpy": workload.fn, "numpile": numpile.compile(workload.fn),
               "numba": numba.njit(workload.fn)}  # fmt: skip
        for fn in fns.values():
            fn(*args)
            fn(*args)
        best = _best(fns, args, options.repeats, 50 if options.small else 1)
        print(
            f"{workload.name:18s} numpile {best['numpile'] * 1e6:9.2f} us"
            f"  numba {best['numba'] * 1e6:9.2f} us  numpy {best['numpy'] * 1e6:10.1f} us"
            f"  numba/numpile {best['numba'] / best['numpile']:.2f}x"
            f"  numpy/numpile {best['numpy'] / best['numpile']:.0f}x",
            flush=True,
        )
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
