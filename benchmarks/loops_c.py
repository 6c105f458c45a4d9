"""Loops compiled to C (issue 23): scalar-body loops against NumPy eager and `numba.njit`.

Three plain-NumPy loop workloads, each run the same way under every contender: the
plain Python loop (NumPy eager), `numba.njit` of the same function (when numba is
installed) and `numpile.compile`. Reported: the first call of each compiled function (for
numpile, with an empty code cache in a process whose sympy, toolchain and buffer pool are
already loaded, so the figure is capture + code generation + the C build of this graph)
and the best warm call.

    python -m benchmarks.loops_c [--repeats N] [--only NAME]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from .loop_programs import forward_substitution, gauss_seidel, sum_of_squares


def _inputs(name: str) -> tuple[Any, ...]:
    rng = np.random.default_rng(0)
    if name == "sum_of_squares_1e6":
        return (rng.random(1_000_000),)
    if name == "gauss_seidel_200":
        return (rng.random((200, 200)),)
    return (np.tril(rng.random((500, 500))) + 500 * np.eye(500), rng.random(500))


WORKLOADS: dict[str, Callable[..., Any]] = {
    "sum_of_squares_1e6": sum_of_squares,
    "gauss_seidel_200": gauss_seidel,
    "forward_substitution_500": forward_substitution,
}


def _best(fn: Callable[..., Any], args: tuple[Any, ...], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        copies = [a.copy() for a in args]
        start = time.perf_counter()
        fn(*copies)
        times.append(time.perf_counter() - start)
    return min(times)


def _first(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[float, Any]:
    copies = [a.copy() for a in args]
    start = time.perf_counter()
    result = fn(*copies)
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--only", action="append", default=[])
    options = parser.parse_args()
    # A fresh code cache: first calls compile and build (nothing from an earlier run).
    os.environ["NUMPILE_CACHE_DIR"] = tempfile.mkdtemp(prefix="numpile-loops-")
    import numpile

    try:
        import numba
    except ImportError:
        numba = None
    # Load what every first compile of a process pays once (sympy, the toolchain probe,
    # the buffer pool's module), so the first calls below time this graph's compile.
    numpile.compile(lambda x: np.sin(x) + 1.0)(np.ones(3))
    print("workload | numpile first s | numpile warm ms | numba first s | numba warm ms | "
          "eager ms | numba / numpile | eager / numpile")  # fmt: skip
    for name, fn in WORKLOADS.items():
        if options.only and name not in options.only:
            continue
        args = _inputs(name)
        compiled = numpile.compile(fn)
        first, got = _first(compiled, args)
        want = fn(*[a.copy() for a in args])
        np.testing.assert_allclose(got, want, rtol=1e-12)
        warm = _best(compiled, args, options.repeats)
        eager = _best(fn, args, max(2, options.repeats // 10))
        cells = [name, f"{first:.3f}", f"{warm * 1e3:.3f}"]
        if numba is not None:
            jitted = numba.njit(fn)
            numba_first, _ = _first(jitted, args)
            numba_warm = _best(jitted, args, options.repeats)
            cells += [f"{numba_first:.3f}", f"{numba_warm * 1e3:.3f}"]
        else:
            numba_warm = float("nan")
            cells += ["-", "-"]
        cells += [f"{eager * 1e3:.1f}", f"{numba_warm / warm:.2f}x", f"{eager / warm:.0f}x"]
        print(" | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
