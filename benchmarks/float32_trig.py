"""float32 `sin`/`cos` in C as NumPy computes them (codegen/c/numpy_trig.py) against libm's
`sinf`/`cosf` (what the C backend called before) and NumPy, in one process, interleaved.

    python -m benchmarks.float32_trig               # 1e6 floats
    python -m benchmarks.float32_trig --size 100000

Two kinds of code: the pointwise kernel of ``np.sin(a) * b + c`` on float32 arrays, and a C
loop of ``out[i] = np.cos(x[i])``. The libm variant is the same compiler with
`numpy_computes_sincos_f32` answering False (other C source, so its own kernels).
"""

from __future__ import annotations

import argparse
import sys
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


def _compiled(fn: Any, args: tuple[Any, ...], *, numpy_way: bool) -> Any:
    import numpile
    import numpile_runtime
    from numpile_inductor.codegen.c import numpy_trig

    original = numpy_trig.numpy_computes_sincos_f32
    numpy_trig.numpy_computes_sincos_f32 = (lambda: True) if numpy_way else (lambda: False)  # type: ignore[assignment]
    try:
        compiled = numpile.compile(fn, options={"tiered": False})
        compiled(*args)
        numpile_runtime.wait_for_queued_builds(timeout=240.0)
    finally:
        numpy_trig.numpy_computes_sincos_f32 = original  # type: ignore[assignment]
    return compiled


def main(argv: list[str] | None = None) -> int:
    """Print NumPy's, the NumPy-way C's and libm C's medians per program."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.float32_trig")
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--budget", type=float, default=2.0)
    options = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    args = tuple(rng.uniform(-10, 10, options.size).astype(np.float32) for _ in range(3))
    print(f"float32 sin/cos, {options.size} floats; load average {load_average()}")
    for fn in (chain, cos_loop):
        fns = {
            "numpy": fn,
            "numpy-way C": _compiled(fn, args, numpy_way=True),
            "libm C": _compiled(fn, args, numpy_way=False),
        }
        want, ours, libm = (f(*args) for f in fns.values())
        # The variants really are different kernels: NumPy's bits, and libm's other bits.
        same = np.array_equal(ours, want), np.array_equal(libm, want)
        print(f"{fn.__name__}: bit for bit with NumPy (numpy-way, libm): {same}")
        timings = measure_interleaved(fns, args, budget_s=options.budget, min_repeats=7)
        cells = []
        for label, timing in timings.items():
            text = f"{timing.median_s * 1e3:.3f} ms" if isinstance(timing, Timing) else "failed"
            cells.append(f"{label} {text}")
        print(f"{fn.__name__}: " + ", ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
