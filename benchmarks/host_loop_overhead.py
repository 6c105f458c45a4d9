"""numpile's own host time per iteration of a Triton host loop, without a GPU.

A kept loop whose body launches kernels runs, on a GPU, as a host loop of launches on its
first call per key, on host arrays, where a capture fails, and for bodies whose keys change
every call (`benchmarks/gpu_loops.py` times it on a device as ``host_loop_ms``). This runs
the same host loop under Triton's interpreter (``TRITON_INTERPRET=1``, NumPy arrays) with
every Triton launch stubbed out, so what it times is numpile's Python per iteration: the
body's runner, its size bindings and shapes, the launch arguments, the extern stores. What
a GPU adds (CuPy's own calls, the launches themselves) is not in it.

    python -m benchmarks.host_loop_overhead            # the 1-D and 2-D Jacobi bodies
    python -m benchmarks.host_loop_overhead --steps 2000 --repeat 9

Measured figures go to ``docs/performance_notes.md`` (a Triton host loop's own time).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from .child import load_average


def main(argv: Sequence[str] | None = None) -> int:
    """Print microseconds per iteration, median of ``--repeat`` calls, per Jacobi body.

    >>> main(["--steps", "10", "--repeat", "1"]) == 0  # doctest: +SKIP
    True
    """
    parser = argparse.ArgumentParser(prog="python -m benchmarks.host_loop_overhead")
    parser.add_argument("--steps", type=int, default=1000, help="iterations per call")
    parser.add_argument("--repeat", type=int, default=7, help="timed calls per body")
    options = parser.parse_args(argv)
    os.environ["TRITON_INTERPRET"] = "1"  # before numpile reads it
    import numpile
    import numpile_runtime as rt

    from .gpu_loops import jacobi_1d, jacobi_2d

    if rt.triton_status().mode != "interpret":
        print(f"no Triton interpreter: {rt.triton_status().reason}")
        return 0
    bodies: dict[str, tuple[Any, tuple[int, ...]]] = {
        "jacobi_1d_4k": (jacobi_1d, (4096,)),
        "jacobi_2d_64": (jacobi_2d, (64, 64)),
    }
    real_launch = rt.TritonLauncher.__call__
    print(f"# load average {load_average()}, median of {options.repeat} calls (us/iteration)")
    for name, (fn, shape) in bodies.items():
        compiled: Any = numpile.compile(fn, backend="triton", dynamic=True)
        A = np.random.default_rng(0).random(shape)
        B = A.copy()
        compiled(A, B, 3)  # compiles, and Triton's interpreter meets every kernel once
        rt.TritonLauncher.__call__ = lambda self, *args, **kwargs: None  # type: ignore[method-assign]
        try:
            samples = []
            for _ in range(options.repeat):
                start = time.perf_counter()
                compiled(A, B, options.steps)
                samples.append((time.perf_counter() - start) / options.steps * 1e6)
        finally:
            rt.TritonLauncher.__call__ = real_launch  # type: ignore[method-assign]
        print(f"workload={name} us_per_iteration={statistics.median(samples):.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
