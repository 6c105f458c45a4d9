"""The warm start of a loop function: what its first call imports (issue 23).

A warm start is a new process whose kernel cache holds the function's graph: its first call
is capture, the guards and a cache hit, and `import sympy` (about 0.3 s) is most of it
wherever capture makes a size or a loop index symbolic. Each test runs a program in a
fresh interpreter twice on one cache folder (the second run is the warm start) and reads
the result, `sys.modules` and the compile stages of the warm start's first call.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

_RUNNER = """
import json, sys
import numpy as np
import numpile

{program}

args = inputs()
want = program(*inputs())
got = numpile.compile(program)(*args)
print(json.dumps({{
    "equal": bool(np.array_equal(np.asarray(got), np.asarray(want))),
    "dtype_equal": np.asarray(got).dtype == np.asarray(want).dtype,
    "sympy": "sympy" in sys.modules,
    "stages": sorted(numpile.compile_times()),
}}))
"""


def _first_call(program: str, cache: Path) -> dict[str, Any]:
    # A fresh interpreter: this one has imported sympy already through other tests.
    script = _RUNNER.format(program=textwrap.dedent(program))
    env = {**os.environ, "NUMPILE_CACHE_DIR": str(cache), "NUMPILE_TIERED": "0"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def _warm_start(program: str, cache: Path) -> dict[str, Any]:
    cold = _first_call(program, cache)
    assert cold["equal"] and cold["dtype_equal"]
    warm = _first_call(program, cache)
    assert warm["equal"] and warm["dtype_equal"]
    # A warm start builds nothing: the graph came from the cache.
    assert "cpp_build" not in warm["stages"], warm["stages"]
    return warm


_UNREAD_INDEX = """
def inputs():
    return np.linspace(0.0, 1.0, 64), 5

def program(x, steps):
    x = x.copy()
    for _ in range(steps):
        x[1:-1] = 0.5 * (x[:-2] + x[2:])
    return x
"""

_READ_INDEX = """
def inputs():
    return (np.arange(40, dtype=np.float64) - 7.5,)

def program(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    return s
"""


def test_a_warm_start_of_a_loop_that_never_reads_its_index_imports_no_sympy(
    tmp_path: Path,
) -> None:
    warm = _warm_start(_UNREAD_INDEX, tmp_path)
    assert warm["sympy"] is False


def test_a_warm_start_of_a_loop_reading_its_index_imports_no_sympy(tmp_path: Path) -> None:
    # The input's size and the index are light sizes during capture (no sympy), and the
    # graph prints as the sympy capture's: the cache entry of the cold run is hit.
    warm = _warm_start(_READ_INDEX, tmp_path)
    assert warm["sympy"] is False


_TRIANGULAR = """
def inputs():
    rng = np.random.default_rng(0)
    L = np.tril(rng.standard_normal((9, 9))) + 4.0 * np.eye(9)
    return L, rng.standard_normal(9)

def program(L, b):
    n = b.shape[0]
    y = np.zeros_like(b)
    for i in range(n):
        y[i] = (b[i] - L[i, :i] @ y[:i]) / L[i, i]
    for i in range(n - 1, -1, -1):
        y[i] = y[i] - L[i + 1 :, i] @ y[i + 1 :] * 0.0
    return y
"""

_HALF_TRIP_COUNT = """
def inputs():
    return (np.arange(11, dtype=np.float64),)

def program(x):
    s = 0.0
    for i in range(x.shape[0] // 2):
        s += x[2 * i] * x[2 * i + 1]
    return s
"""


def test_a_warm_start_of_index_dependent_slices_imports_no_sympy(tmp_path: Path) -> None:
    warm = _warm_start(_TRIANGULAR, tmp_path)
    assert warm["sympy"] is False


def test_a_capture_that_needs_sympy_captures_again_with_it(tmp_path: Path) -> None:
    # `x.shape[0] // 2` is no affine size: the light capture stops and the sympy capture
    # gives the graph, cold and warm, with eager's result.
    warm = _warm_start(_HALF_TRIP_COUNT, tmp_path)
    assert warm["sympy"] is True
