"""float32 `sin`/`cos` in C as NumPy computes them (codegen/c/numpy_trig.py) against libm's
`sinf`/`cosf` (what the C backend called before), and NumPy.

    OMP_NUM_THREADS=1 python -m benchmarks.float32_trig                 # 1e6 floats
    OMP_NUM_THREADS=1 python -m benchmarks.float32_trig --size 100000 --rounds 5

Two programs: the pointwise kernel of ``np.sin(a) * b + c`` on float32 arrays, and a C loop
of ``out[i] = np.cos(x[i])``. Each round runs one child process per variant, alternating
(libm: `numpy_computes_sincos_f32` answers False), each variant with its own code cache
(a graph cache hit would hand one variant the other's kernels); a child times NumPy and
the compiled function interleaved and prints the medians. The table gives the medians over
rounds and whether each variant's values are NumPy's bit for bit.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from typing import Any

import numpy as np

from .child import load_average
from .timer import Timing, measure_interleaved


def chain(a: Any, b: Any, c: Any) -> Any:
    """``np.sin(a) * b + c``: one fused kernel."""
    return np.sin(a) * b + c


def cos_loop(x: Any, b: Any, c: Any) -> Any:
    """A C loop of float32 cosines, element by element."""
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = np.cos(x[i])
    return out


def _child(variant: str, size: int, budget: float) -> None:
    import numpile
    import numpile_runtime
    from numpile_inductor.codegen.c import numpy_trig

    if variant == "libm":
        numpy_trig.numpy_computes_sincos_f32 = lambda: False  # type: ignore[assignment]
    rng = np.random.default_rng(0)
    args = tuple(rng.uniform(-10, 10, size).astype(np.float32) for _ in range(3))
    found: dict[str, Any] = {}
    for fn in (chain, cos_loop):
        compiled = numpile.compile(fn, options={"tiered": False})
        exact = bool(np.array_equal(compiled(*args), fn(*args)))
        numpile_runtime.wait_for_queued_builds(timeout=240.0)
        timings = measure_interleaved(
            {"numpy": fn, "numpile": compiled}, args, budget_s=budget, min_repeats=5
        )
        medians = {k: t.median_s for k, t in timings.items() if isinstance(t, Timing)}
        found[fn.__name__] = {"exact": exact, **medians}
    print(json.dumps(found))


def main(argv: list[str] | None = None) -> int:
    """Alternate the two variants' child processes and print the medians."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.float32_trig")
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--budget", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", choices=("numpy", "libm"), help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.child:
        _child(options.child, options.size, options.budget)
        return 0
    runs: dict[str, list[dict[str, Any]]] = {"numpy": [], "libm": []}
    with tempfile.TemporaryDirectory() as caches:
        for _ in range(options.rounds):
            for variant in runs:
                env = dict(os.environ, NUMPILE_CACHE_DIR=os.path.join(caches, variant))
                command = [sys.executable, "-m", "benchmarks.float32_trig", "--child", variant]
                command += ["--size", str(options.size), "--budget", str(options.budget)]
                done = subprocess.run(command, env=env, capture_output=True, text=True)
                runs[variant].append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(f"float32 sin/cos, {options.size} floats; load average {load_average()}")
    for program in ("chain", "cos_loop"):
        cells = []
        for variant, found in runs.items():
            numpy_ms = statistics.median(r[program]["numpy"] for r in found) * 1e3
            ours_ms = statistics.median(r[program]["numpile"] for r in found) * 1e3
            exact = all(r[program]["exact"] for r in found)
            cells.append(f"{variant}-way C {ours_ms:.3f} ms (NumPy {numpy_ms:.3f}, exact {exact})")
        print(f"{program}: " + "; ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
