"""The floor of a loop-carried float sum: ``s += x[i] * x[i]`` against one add's latency.

    python -m benchmarks.latency_floor [--size N] [--repeats R]

A float sum carried across iterations adds in the loop's order (Python's semantics: any
other order rounds differently), so each iteration waits for the previous add and the
loop runs at one floating-point add latency per element at best, whatever the compiler.
This times, in one process and as thread CPU time (what a busy sibling core steals is not
counted), best of ``--repeats``, per element:

- ``add chain``: a C loop of dependent adds (``s += x[i]``) built with numpile's own
  compiler and flags: the latency of one add on this machine, the floor;
- ``C by hand``: ``benchmarks.loops.sum_of_squares`` written in C, built the same way;
- ``numpile`` and ``numba`` (when importable) on ``benchmarks.loops.sum_of_squares``;

each over the floor, and whether each result has the bits of the eager loop's. Rows near
1.00x mean the workload runs at the floor: a tie there is the hardware's, not a missed
optimization. numba is a benchmark-only dependency.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .loops import sum_of_squares

# Both loops time themselves (the calling thread's CPU clock), so a ctypes call's cost is
# not in the figure. `sink` keeps each sum alive.
_C_SOURCE = r"""
#include <stdint.h>
#include <time.h>

static double thread_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

__attribute__((noinline)) static double add_chain(const double *x, int64_t n)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) { s += x[i]; }
    return s;
}

__attribute__((noinline)) static double sum_of_squares(const double *x, int64_t n)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) { s += x[i] * x[i]; }
    return s;
}

/* The best time of `repeats` calls of loop `which` (0: add chain, 1: sum of squares), in
   nanoseconds; the last sum goes to *sink. */
double latency_floor_best_ns(int which, const double *x, int64_t n, int64_t repeats,
                             double *sink)
{
    double best = 1e300;
    for (int64_t r = 0; r < repeats; r++) {
        const double start = thread_ns();
        *sink = which == 0 ? add_chain(x, n) : sum_of_squares(x, n);
        const double took = thread_ns() - start;
        if (took < best) { best = took; }
    }
    return best;
}
"""


def _build_reference(folder: Path) -> Any:
    # The C loops as a shared library, built with the compiler and flags of numpile's
    # generated modules (without OpenMP: the loops are serial).
    import numpile_runtime

    toolchain = numpile_runtime.find_toolchain()
    source, library = folder / "latency_floor.c", folder / "latency_floor.so"
    source.write_text(_C_SOURCE)
    command = [toolchain.compiler("c"), *toolchain.flags(openmp=False), "-shared"]
    subprocess.run([*command, str(source), "-o", str(library)], check=True)
    loops = ctypes.CDLL(str(library))
    loops.latency_floor_best_ns.restype = ctypes.c_double
    loops.latency_floor_best_ns.argtypes = [
        ctypes.c_int,
        ctypes.c_void_p,
        ctypes.c_int64,
        ctypes.c_int64,
        ctypes.POINTER(ctypes.c_double),
    ]
    return loops


def _best_python(fns: dict[str, Callable[[Any], Any]], x: Any, repeats: int) -> dict[str, float]:
    # Best thread CPU time per call in nanoseconds, the callables alternating.
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.thread_time_ns()
            fn(x)
            best[name] = min(best[name], float(time.thread_time_ns() - start))
    return best


def _contenders() -> dict[str, Callable[[Any], Any]]:
    import numpile

    fns: dict[str, Callable[[Any], Any]] = {"numpile": numpile.compile(sum_of_squares)}
    try:
        import numba  # benchmark-only
    except ImportError:
        print("numba: not installed (its row is left out)")
    else:
        fns["numba"] = numba.njit(sum_of_squares)
    return fns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000, help="elements (the workload's)")
    parser.add_argument("--repeats", type=int, default=200)
    options = parser.parse_args()
    import numpile_runtime

    x = np.random.default_rng(0).standard_normal(options.size)
    want = sum_of_squares(x)
    fns = _contenders()
    for fn in fns.values():
        fn(x)
    numpile_runtime.wait_for_queued_builds(timeout=240.0)
    print(f"load average {os.getloadavg()}; {options.size} elements, best of {options.repeats}")
    rows: list[tuple[str, float, Any]] = []
    with tempfile.TemporaryDirectory(prefix="numpile-latency-floor-") as folder:
        loops = _build_reference(Path(folder))
        address = x.ctypes.data
        for which, name in enumerate(("add chain", "C by hand")):
            sink = ctypes.c_double()
            best = loops.latency_floor_best_ns(
                which, address, options.size, options.repeats, ctypes.byref(sink)
            )
            rows.append((name, best, sink.value if which else None))
    best_python = _best_python(fns, x, options.repeats)
    rows += [(name, best_python[name], fn(x)) for name, fn in fns.items()]
    floor = rows[0][1] / options.size
    for name, best, got in rows:
        per_element = best / options.size
        bits = "" if got is None else f"  same bits as eager: {float(got) == float(want)}"
        print(f"{name:10s} {best / 1e3:9.2f} us  {per_element:6.3f} ns/element  "
              f"{per_element / floor:5.2f}x the floor{bits}")  # fmt: skip
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
