"""Loops whose body breaks the graph: compiled against the same function in plain Python.

    python -m benchmarks.breaking_loops [--trips 3000] [--repeats 25]

A loop whose body graph-breaks (a library call, `float()` of an array, a `print`) is not
kept as a loop; numpile runs it whole in Python when compiling its body saves little
(`numpile_capture.body_work`: cheap arithmetic, as in `updates_printing`), else its
body's compiled pieces once per iteration (`waves_printing`). A compiled function must not
be much slower than the Python it replaces: the report gives the median of `--repeats`
calls of each and their ratio, in one process, `tiered` off.

The samples are taken in rounds, one call of each per round in alternating order, after
the builds a first compile queues in the background (the call gate, the buffer pool: a C
compiler on the other core) have finished. Timed one phase after the other, a
disturbance lasting a whole phase (such a build, seen running through the timings in
a fresh cache folder; another process's burst) lands on one side only, and the best of 25
calls cannot remove it: ratios of 0.5x-1.5x for the same code at load 7. The CPU time of
each call (`time.thread_time`), which a busy machine disturbs less than the wall clock, is
reported beside it (docs/performance_notes.md, loops whose body breaks).

    >>> data_float(np.arange(3.0))  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from .child import load_average, machine_header

# NOTE: where `updates_printing` prints: the cost of a `print` without a terminal's.
_DEVNULL = open(os.devnull, "w")  # noqa: SIM115 - the process's lifetime


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


def updates_printing(x: Any) -> Any:
    """Two updates of 4x `x`'s elements with a `print` between them, 100 times: the body runs
    as compiled pieces with the `print` in Python between them."""
    a = np.concatenate((x, x, x, x))
    b = a[::-1].copy()
    for i in range(100):
        a += b * 0.5
        print(i, file=_DEVNULL)
        b -= a * 0.25
    return a, b


def waves_printing(x: Any) -> Any:
    """`updates_printing` with a sine and a cosine in the updates, on `x`'s elements: the
    transcendental work compiled pieces save pays for their calls, so the body runs as
    pieces and beats plain Python."""
    a = x.copy()
    b = x[::-1].copy()
    for i in range(100):
        a += np.sin(b) * 0.5
        print(i, file=_DEVNULL)
        b -= np.cos(a) * 0.25
    return a, b


def while_data_float(x: Any) -> Any:
    """`data_float` as a `while` loop, with a `print` that never runs: the loop runs whole in
    Python from its test (it ran as compiled pieces, with guards on the test, per iteration)."""
    i = 0
    s = 0.0
    while i < x.shape[0]:
        s = s + float(x[i] * x[i])
        if s < 0.0:
            print(i)
        i += 1
    return s


WORKLOADS: tuple[Callable[[Any], Any], ...] = (
    json_roundtrip,
    data_float,
    prefix_sums_printing,
    updates_printing,
    waves_printing,
    while_data_float,
)


def _interleaved(
    fns: dict[str, Callable[[Any], Any]], x: Any, repeats: int
) -> dict[str, tuple[float, float]]:
    # Each name's median wall-clock and CPU time over `repeats` rounds of one call of each,
    # the order alternating per round.
    names = list(fns)
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    for round_index in range(repeats):
        for name in names if round_index % 2 == 0 else names[::-1]:
            wall, cpu = time.perf_counter(), time.thread_time()
            fns[name](x)
            samples[name].append((time.perf_counter() - wall, time.thread_time() - cpu))
    return {
        name: (_median([w for w, _ in taken]), _median([c for _, c in taken]))
        for name, taken in samples.items()
    }


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def main(argv: list[str] | None = None) -> None:
    """Print one row per workload: plain Python, compiled, and their ratio."""
    import warnings

    import numpile
    import numpile_runtime

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trips", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=25)
    parser.add_argument("--only", action="append", help="a workload's name (repeatable)")
    options = parser.parse_args(argv)
    warnings.simplefilter("ignore", numpile.NumpilePerformanceWarning)
    print(machine_header(["numpy", "numpile"]))
    x = np.random.default_rng(0).standard_normal(options.trips)
    print(f"{'workload':22s} {'python':>10s} {'numpile':>10s} {'ratio':>7s} {'cpu ratio':>10s}")
    for fn in WORKLOADS:
        if options.only and fn.__name__ not in options.only:
            continue
        compiled = numpile.compile(fn, options={"tiered": False})
        compiled(x)
        numpile_runtime.wait_for_queued_builds(timeout=240.0)
        timings = _interleaved({"python": fn, "numpile": compiled}, x, options.repeats)
        (python, python_cpu), (mine, mine_cpu) = timings["python"], timings["numpile"]
        print(
            f"{fn.__name__:22s} {python * 1e3:8.2f}ms {mine * 1e3:8.2f}ms "
            f"{mine / python:6.2f}x {mine_cpu / python_cpu:9.2f}x"
        )
    print(f"load average at end {load_average()}")


if __name__ == "__main__":
    main()
