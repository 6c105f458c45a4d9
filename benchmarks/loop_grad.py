"""Gradients through loops: `numpile.grad` of time-stepped programs at 10 to 100,000 steps.

    python -m benchmarks.loop_grad [--steps 10,1000,100000] [--repeats 7]
        [--contenders numpy,forward,eager_grad,grad,compile_grad] [workload patterns...]

Each case runs in a child process of its own with fresh cache folders (`benchmarks.child`),
so the first call includes capture and every C build (`NUMPILE_TIERED=0`). Contenders, per
workload and trip count:

- `numpy`: the forward alone, plain NumPy (the reference a user starts from);
- `forward`: the forward alone, `numpile.compile(f)`;
- `eager_grad`: `numpile.grad(f, compiler="eager")`, its graphs run op by op with NumPy;
- `grad`: `numpile.grad(f)`, forward and backward graphs compiled by the inductor (a kept
  loop's VJP is a stacking loop and a reverse loop, each a C loop);
- `compile_grad`: `numpile.compile(numpile.grad(f))`, traced into the caller's graph, where
  the loop stays a loop with the same VJP as `grad`'s (one graph: the stacking loop, which
  also gives the forward's results, and the reverse loop).

Warm time is the median of `--repeats` calls after the first and two warm-up calls; `new
trip count` is the first call after those at one step more (a compile again where the trip
count is pinned, a warm call where it is not). Every gradient is compared with
`eager_grad`'s (the `check` column). Workloads: a 50-element tanh
recurrence (one carried array; its gradient decays to subnormal numbers after a few hundred
steps, which then dominate both NumPy's and C's time) and a chain of 50 pendulums (two
carried arrays, semi-implicit Euler steps, no damping).

    >>> tanh_recurrence(np.zeros(3), 0)  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import fnmatch
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from .child import agree, emit, load_average, machine_header, run_child

CONTENDERS = ("numpy", "forward", "eager_grad", "grad", "compile_grad")


def tanh_recurrence(x: Any, n: int) -> Any:
    """`h = tanh(0.7 h + 0.1)` for `n` steps from `x`; the sum of the last `h`."""
    h = x
    for _ in range(n):
        h = np.tanh(h * 0.7 + 0.1)
    return h.sum()


def pendulum_chain(x: Any, n: int) -> Any:
    """Pendulums (angle `p`, velocity `v`), `n` semi-implicit Euler steps from `x`; no
    damping, so the values and the gradient stay normal numbers at any trip count."""
    p = x
    v = x * 0.0
    for _ in range(n):
        v = v - 0.01 * np.sin(p)
        p = p + 0.01 * v
    return (p * p).sum()


WORKLOADS: dict[str, Callable[[Any, int], Any]] = {
    "tanh_recurrence": tanh_recurrence,
    "pendulum_chain": pendulum_chain,
}


def _contender(name: str, fn: Callable[[Any, int], Any]) -> Callable[[Any, int], Any]:
    import numpile

    if name == "numpy":
        return fn
    if name == "forward":
        return numpile.compile(fn)
    if name == "eager_grad":
        return numpile.grad(fn, compiler="eager")
    if name == "grad":
        return numpile.grad(fn)
    return numpile.compile(numpile.grad(fn))


def child(workload: str, steps: int, contender: str, repeats: int) -> None:
    """Time one case in this process; print its stages as JSON lines."""
    import numpile

    fn = WORKLOADS[workload]
    x = np.random.default_rng(0).uniform(-1, 1, 50)
    run = _contender(contender, fn)
    start = time.perf_counter()
    got = run(x, steps)
    emit({"stage": "first", "seconds": time.perf_counter() - start})
    for _ in range(2):  # warm-up calls, as the suite makes (a build may finish behind them)
        run(x, steps)
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        run(x, steps)
        samples.append(time.perf_counter() - start)
    emit({"stage": "warm", "seconds": statistics.median(samples)})
    start = time.perf_counter()
    run(x, steps + 1)
    emit({"stage": "new_trips", "seconds": time.perf_counter() - start})
    if contender in ("grad", "compile_grad"):
        want = numpile.grad(fn, compiler="eager")(x, steps)
        emit({"stage": "check", "result": agree(want, got, rtol=1e-9, atol=1e-300)})


def _cell(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1e3:.3g} ms" if seconds < 1 else f"{seconds:.2f} s"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.loop_grad")
    parser.add_argument("patterns", nargs="*", help="workload names (fnmatch patterns)")
    parser.add_argument("--steps", default="10,1000,100000")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--contenders", default=",".join(CONTENDERS))
    parser.add_argument("--limit-s", type=float, default=600.0)
    parser.add_argument("--child", nargs=3, metavar=("WORKLOAD", "STEPS", "CONTENDER"))
    options = parser.parse_args(argv)
    unknown = set(options.contenders.split(",")) - set(CONTENDERS)
    if unknown:
        parser.error(f"unknown contenders {sorted(unknown)}; choose from {', '.join(CONTENDERS)}")
    if options.child:
        workload, steps, contender = options.child
        child(workload, int(steps), contender, options.repeats)
        return
    sys.stdout.write(machine_header(["numpy", "numpile"]))
    header = ["workload", "steps", "contender", "first call", "warm (median)", "new trip count"]
    header.append("check")
    print(" | ".join(header))
    for workload in WORKLOADS:
        if options.patterns and not any(fnmatch.fnmatch(workload, p) for p in options.patterns):
            continue
        for steps in (int(s) for s in options.steps.split(",")):
            for contender in options.contenders.split(","):
                args = ["--child", workload, str(steps), contender]
                args += ["--repeats", str(options.repeats)]
                done = run_child("benchmarks.loop_grad", args, limit_s=options.limit_s)
                first = done.stages.get("first", {}).get("seconds")
                warm = done.stages.get("warm", {}).get("seconds")
                again = done.stages.get("new_trips", {}).get("seconds")
                check = done.stages.get("check", {}).get("result", "") or done.stopped
                row = [workload, str(steps), contender, _cell(first), _cell(warm), _cell(again)]
                row.append(check)
                print(" | ".join(row), flush=True)
    print(f"load average at the end: {load_average()}")


if __name__ == "__main__":
    main()
