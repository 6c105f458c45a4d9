"""Loops whose body breaks the graph: compiled against the same function in plain Python.

    python -m benchmarks.breaking_loops [--trips 3000] [--repeats 7]

A loop whose body graph-breaks (a library call, `float()` of an array, a `print`) is not
kept as a loop; numpile runs it whole in Python when its body does little array work
(`numpile_capture.body_work`), else its body's compiled pieces once per iteration. A
compiled function must not be much slower than the Python it replaces: the report gives
the best of `--repeats` calls of each (after three warm-up calls, `tiered` off) and their
ratio, in one process.

    >>> data_float(np.arange(3.0))  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from .child import load_average, machine_header


def json_roundtrip(x: Any) -> Any:
    """A library call per iteration (the value leaves through `float`, comes back)."""
    s = 0.0
    for i in range(x.shape[0]):
        y = np.sin(x[i]) * 2.0
        s = s + json.loads(json.dumps(float(y)))
    return s


def data_float(x: Any) -> Any:
    """`float()` of an array element per iteration (data-dependent: a graph break)."""
    s = 0
    for i in range(x.shape[0]):
        s = s + float(x[i] * x[i])
    return s


def prefix_sums_printing(x: Any) -> Any:
    """An index-dependent slice summed per iteration, beside a `print` that never runs."""
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        out[i] = x[: i + 1].sum()
        if i % 1000 == 1001:
            print(i)
    return out


WORKLOADS: tuple[Callable[[Any], Any], ...] = (json_roundtrip, data_float, prefix_sums_printing)


def _best(fn: Callable[[Any], Any], x: Any, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(x)
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv: list[str] | None = None) -> None:
    """Print one row per workload: plain Python, compiled, and their ratio."""
    import warnings

    import numpile

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trips", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=7)
    options = parser.parse_args(argv)
    warnings.simplefilter("ignore", numpile.NumpilePerformanceWarning)
    print(machine_header(["numpy", "numpile"]))
    x = np.random.default_rng(0).standard_normal(options.trips)
    print(f"{'workload':22s} {'python':>10s} {'numpile':>10s} {'ratio':>7s}")
    for fn in WORKLOADS:
        compiled = numpile.compile(fn, options={"tiered": False})
        for _ in range(3):
            compiled(x)
        python = _best(fn, x, options.repeats)
        mine = _best(compiled, x, options.repeats)
        print(f"{fn.__name__:22s} {python * 1e3:8.2f}ms {mine * 1e3:8.2f}ms {mine / python:6.2f}x")
    print(f"load average at end {load_average()}")


if __name__ == "__main__":
    main()
