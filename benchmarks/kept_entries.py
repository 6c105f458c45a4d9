"""Loops on a Python entry scalar whose type follows what ran: call times, numpile and eager.

    python -m benchmarks.kept_entries [--size N] [--repeats R]

`t = 0.0; for i: if x[i] > 0.5: t = x[i]` gives back the Python float where no branch
assigned `t` and an `np.float64` where one did; the C loop keeps a flag per such local
(codegen/c/loop_body.py's `EntryKept`). `t = 1.1; for i: y[i] = t * z[i]; while ...: t =
t + w[k]` computes on `t` both ways, the run-time flag of whether the inner `while` ran
choosing (codegen/c/loop_flag_typings.py); an int32 `w` adds the same on both types.
`s = 3.0` per row, then an inner loop whose branch may assign it: computed on within the
row (`row_scaled`: `y[i] = s * z[i]`) the C nest keeps a flag per row ("still the Python
scalar") and computes both typings; only stored (`row_stored`) it needs none; added into
a carried sum (`row_weighted`) no flag stands for it and the loops are not kept
(capture's own_entries).
Each row: median warm call time in us of the compiled function and of eager Python, over
`--repeats` calls alternated, on inputs whose branches never run (the entry object comes
back), and whether the result has eager's values and Python types.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

os.environ.setdefault("NUMPILE_TIERED", "0")  # time the compiled code, not the first tier


def picked(x: Any, n: int) -> Any:
    t = 0.0
    for i in range(n):
        if x[i] > 2.0:
            t = x[i]
    return t


def running_max(x: Any, y: Any) -> Any:
    best = 3.0
    at = -1
    for i in range(x.shape[0]):
        if x[i] > best:
            best = x[i]
            at = i
        y[i] = best * 2.0
    return best, at, y


def row_max(x: Any) -> Any:
    best = 3.0
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            if x[i, j] > best:
                best = x[i, j]
    return best


def while_picked(x: Any, n: int) -> Any:
    t = 0.0
    k = 0
    while k < n - 1 and x[k] < 2.0:
        if x[k] > 2.0:
            t = x[k]
        k += 1
    return t, k


def flagged_int32_sum(x: Any, w: Any, z: Any, y: Any, n: int) -> Any:
    t = 1.1
    for i in range(n):
        y[i] = t * z[i]  # float32 on the Python float, float64 once the `while` ran
        k = i
        while x[k] > 0.5:
            t = t + w[k]  # an int32 `w`: float64 on both types
            k += 1
    return t, y


def row_weighted(x: Any, z: Any) -> Any:
    t = 0.0
    for i in range(x.shape[0]):
        s = 3.0  # the row's own Python entry: float32 times `z[i]` where no branch ran
        for j in range(x.shape[1]):
            if x[i, j] > 2.0:
                s = x[i, j]
        t = t + s * z[i]
    return t


def row_stored(x: Any, y: Any) -> Any:
    for i in range(x.shape[0]):
        s = 3.0  # stored into a float array: the same on either type
        for j in range(x.shape[1]):
            if x[i, j] > 2.0:
                s = x[i, j]
        y[i] = s
    return y


def row_scaled(x: Any, z: Any, y: Any) -> Any:
    for i in range(x.shape[0]):
        s = 3.0  # float32 times `z[i]` where no branch ran, float64 where one did
        for j in range(x.shape[1]):
            if x[i, j] > 2.0:
                s = x[i, j]
        y[i] = s * z[i]
    return y


def _cases(size: int) -> dict[str, tuple[Callable[..., Any], Callable[[], tuple[Any, ...]]]]:
    rng = np.random.default_rng(0)
    x = rng.random(size)
    side = max(int(size**0.5), 1)
    return {
        "picked": (picked, lambda: (x, size)),
        "running_max": (running_max, lambda: (x, np.zeros(size))),
        "row_max": (row_max, lambda: (x[: side * side].reshape(side, side),)),
        "while_picked": (while_picked, lambda: (x, size)),
        "row_weighted": (
            row_weighted,
            lambda: (x[: side * side].reshape(side, side), np.full(side, 1.1, np.float32)),
        ),
        "row_scaled": (
            row_scaled,
            lambda: (
                x[: side * side].reshape(side, side),
                np.full(side, 1.1, np.float32),
                np.zeros(side, np.float32),
            ),
        ),
        "row_stored": (
            row_stored,
            lambda: (x[: side * side].reshape(side, side), np.zeros(side, np.float32)),
        ),
        "flagged_int32_sum": (
            flagged_int32_sum,
            lambda: (
                np.zeros(size + 1),
                np.arange(size + 1, dtype=np.int32),
                np.full(size, 1.1, np.float32),
                np.zeros(size, np.float32),
                size,
            ),
        ),
    }


def _same(got: Any, want: Any) -> bool:
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    return all(
        type(a) is type(b) and np.asarray(a).tobytes() == np.asarray(b).tobytes()
        for a, b in zip(got, want, strict=True)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=21)
    options = parser.parse_args()
    import numpile

    print(f"load {os.getloadavg()[0]:.1f}; size {options.size}; median of {options.repeats}")
    print(f"{'program':<20}{'numpile us':>12}{'eager us':>12}{'speedup':>9}  eager's types")
    for name, (fn, arguments) in _cases(options.size).items():
        compiled = numpile.compile(fn)
        same = _same(compiled(*arguments()), fn(*arguments()))
        numpile.wait_for_compiles()
        mine, eager = [], []
        for _ in range(options.repeats):
            for runs, call in ((mine, compiled), (eager, fn)):
                args = arguments()
                start = time.perf_counter()
                call(*args)
                runs.append((time.perf_counter() - start) * 1e6)
        a, b = statistics.median(mine), statistics.median(eager)
        print(f"{name:<20}{a:>12.1f}{b:>12.1f}{b / a:>8.0f}x  {same}")


if __name__ == "__main__":
    main()
