"""Reductions of Fortran-order and C-order arrays: numpile against NumPy, side by side.

    python -m benchmarks.layout_reductions [--size N] [--budget S]

Four reductions of an ``N x N`` float64 array (default 2000), each on a Fortran-order and
a C-order copy: ``a.sum(axis=0)``, ``a.sum(axis=1)``, ``(a * 2).sum(axis=1)``,
``a.max(axis=0)``; and two of a cube of as many elements (``b.sum(axis=2)``,
``b.sum(axis=1)``), where a Fortran-order input's kept axes were looped in C order. Each
row gives the median milliseconds of numpile (warm, after ``wait_for_compiles``) and of
NumPy, sampled in interleaved rounds (``timer.py``), their ratio, whether numpile's result
has NumPy's bits and strides, and the load average at the start. A reduction NumPy adds
column by column (a Fortran-order row sum) is a column accumulation in numpile too, in
NumPy's order (the same bits); a pairwise sum over a run that is not 128 times a power of
two is not ("same" False, before and after).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

import numpy as np

import numpile

from .timer import Timing, measure_interleaved

Array = np.ndarray[Any, Any]


def column_sums(a: Array) -> Array:
    return a.sum(axis=0)


def row_sums(a: Array) -> Array:
    return a.sum(axis=1)


def scaled_row_sums(a: Array) -> Array:
    return (a * 2).sum(axis=1)


def column_maxima(a: Array) -> Array:
    return a.max(axis=0)


def last_axis_sums(b: Array) -> Array:
    return b.sum(axis=2)


def middle_axis_sums(b: Array) -> Array:
    return b.sum(axis=1)


WORKLOADS: dict[str, tuple[Callable[[Array], Array], int]] = {
    "a.sum(axis=0)": (column_sums, 2),
    "a.sum(axis=1)": (row_sums, 2),
    "(a * 2).sum(axis=1)": (scaled_row_sums, 2),
    "a.max(axis=0)": (column_maxima, 2),
    "b.sum(axis=2)": (last_axis_sums, 3),
    "b.sum(axis=1)": (middle_axis_sums, 3),
}


def _same(got: Array, want: Array) -> bool:
    bits = np.ascontiguousarray(got).view(np.uint8)
    return bool(np.array_equal(bits, np.ascontiguousarray(want).view(np.uint8))) and (
        got.strides == want.strides
    )


def main() -> None:
    """Print one row per workload and layout."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=2000)
    parser.add_argument("--budget", type=float, default=2.0, help="seconds per row")
    options = parser.parse_args()
    rng = np.random.default_rng(0)
    side = round(options.size ** (2 / 3))
    blocks = {
        2: rng.standard_normal((options.size, options.size)),
        3: rng.standard_normal((side, side, side)),
    }
    print(f"load {os.getloadavg()[0]:.1f}, {options.size}x{options.size} float64")
    print(f"{'workload':22} {'layout':8} {'numpile ms':>10} {'numpy ms':>9} {'ratio':>6}  same")
    for name, (function, ndim) in WORKLOADS.items():
        block = blocks[ndim]
        for layout, a in (("fortran", np.asfortranarray(block)), ("C", block.copy())):
            compiled = numpile.compile(function)
            compiled(a)
            numpile.wait_for_compiles()
            same = _same(compiled(a), function(a))
            timings = measure_interleaved(
                {"numpile": compiled, "numpy": function},
                (a,),
                budget_s=options.budget,
                min_repeats=5,
            )
            ours, theirs = timings["numpile"], timings["numpy"]
            assert isinstance(ours, Timing) and isinstance(theirs, Timing)
            ratio = theirs.median_s / ours.median_s
            print(
                f"{name:22} {layout:8} {ours.median_s * 1e3:10.2f} "
                f"{theirs.median_s * 1e3:9.2f} {ratio:5.2f}x  {same}"
            )


if __name__ == "__main__":
    main()
