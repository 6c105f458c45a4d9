"""The concurrency stress run: threads compiling and calling many functions, checked against eager.

`run_stress(seconds, threads=8, seed=0)` makes 200 distinct functions (ten program templates,
twenty constants each: 200 code objects), then runs `threads` threads that each, until the
deadline, pick a random function and a random shape, call the compiled function and compare its
result with the eager one. It returns a summary; `failures` lists every mismatch, exception,
thread that did not finish and warning numpile logged, and `reloads` the graphs loaded again
after the bound on loaded libraries (`NUMPILE_MAX_LOADED_MODULES`) unloaded them.
`test_stress.py` runs it in the test process and in 4 processes at once (`python stress.py
SECONDS THREADS SEED` prints the summary as JSON), all sharing one fresh code cache.

    >>> run_stress(0.0, threads=1)["failures"]  # doctest: +SKIP
    []
"""

from __future__ import annotations

import json
import logging
import random
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np

import numpile
import numpile_runtime

# NOTE: ten small programs over one float64 array `x` and a constant `C`: elementwise,
# reductions, broadcasting, a graph break, a Python loop; each becomes twenty functions.
TEMPLATES: tuple[str, ...] = (
    "return np.sin(x) * C + x",
    "return (x * C - 1.0).sum(axis=-1)",
    "return np.maximum(x, C) / (1.0 + x * x)",
    "y = x * C\n    s = float(y.sum())\n    return y - s",
    "return x.mean() + x.max() * C",
    "return np.where(x > C, x, -x) * 2.0",
    "acc = x * 0.0\n    for i in range(3):\n        acc = acc + x * (i + C)\n    return acc",
    "return np.abs(x - C).max(axis=0) + x.shape[0]",
    "return (x[..., None] * C + x[..., None]).reshape(-1)",
    "return np.exp(-x * x * C) - np.cos(x)",
)
FUNCTIONS = 200
HOT = 10
SHAPES: tuple[tuple[int, ...], ...] = ((1,), (3,), (8,), (17,), (64,), (100,), (4, 5), (16, 3))


def make_functions(count: int = FUNCTIONS) -> list[Callable[..., Any]]:
    """`count` distinct plain functions (each its own code object), round robin over TEMPLATES.

    >>> len(make_functions(20))
    20
    """
    functions = []
    for index in range(count):
        template = TEMPLATES[index % len(TEMPLATES)]
        constant = 0.25 + index / count
        source = f"def f{index}(x):\n    C = {constant!r}\n    {template}\n"
        namespace: dict[str, Any] = {"np": np}
        exec(compile(source, f"<stress function {index}>", "exec"), namespace)
        functions.append(namespace[f"f{index}"])
    return functions


def _same(got: Any, want: Any) -> bool:
    got_array = np.asarray(got)
    want_array = np.asarray(want)
    if got_array.shape != want_array.shape or got_array.dtype != want_array.dtype:
        return False
    return bool(np.allclose(got_array, want_array, rtol=1e-9, atol=1e-12, equal_nan=True))


class _Warnings(logging.Handler):
    # numpile's warnings during the run: a capture that raised and fell back to eager gives
    # right results, but it is a failure of the stress run all the same.
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(f"{record.name}: {record.getMessage()}")


def run_stress(seconds: float, *, threads: int = 8, seed: int = 0) -> dict[str, Any]:
    """Call random compiled functions on random shapes from `threads` threads for `seconds`.

    >>> run_stress(0.0, threads=1, seed=1)["calls"] >= 1  # doctest: +SKIP
    True
    """
    functions = make_functions()
    compiled = [numpile.compile(fn) for fn in functions]
    deadline = time.monotonic() + seconds
    failures: list[str] = []
    calls = [0] * threads

    def work(worker: int) -> None:
        rng = random.Random(seed * 1000 + worker)
        data = np.random.default_rng(seed * 1000 + worker)
        while True:
            # Half the calls go to ten hot functions, so cache hits run beside compiles.
            index = rng.randrange(HOT if rng.random() < 0.5 else len(functions))
            x = data.standard_normal(rng.choice(SHAPES))
            try:
                got = compiled[index](x.copy())
                want = functions[index](x.copy())
                if not _same(got, want):
                    failures.append(f"f{index}{x.shape}: got {got!r}, eager {want!r}")
            except Exception:
                failures.append(f"f{index}{x.shape}: {traceback.format_exc()}")
            calls[worker] += 1
            if time.monotonic() >= deadline:
                return

    warnings = _Warnings()
    logging.getLogger("numpile").addHandler(warnings)
    pool = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        # A generous bound past the deadline: compiles in flight finish, a hang does not.
        thread.join(timeout=seconds + 600)
        if thread.is_alive():
            failures.append(f"thread {thread.name} still running 600 s after the deadline")
    logging.getLogger("numpile").removeHandler(warnings)
    failures += warnings.messages
    # Graphs whose library was unloaded by the bound on loaded libraries, then loaded again.
    reloads = numpile_runtime.counters().get("inductor_module_reload", 0)
    return {
        "calls": sum(calls),
        "failures": failures,
        "threads": threads,
        "seed": seed,
        "reloads": reloads,
    }


if __name__ == "__main__":
    seconds, threads, seed = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    print(json.dumps(run_stress(seconds, threads=threads, seed=seed)))
