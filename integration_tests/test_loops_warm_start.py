"""The warm start of a loop function: what its first call imports (issue 23).

A warm start is a new process whose kernel cache holds the function's graph: its first call
is capture, the guards and a cache hit, and `import sympy` (about 0.3 s) is most of it
wherever capture makes a size or a loop index symbolic. The programs run in a fresh
interpreter twice on one cache folder (the second run is the warm start), one after the
other, those whose capture needs no sympy first; the test reads each program's result,
`sys.modules` after its first call, and the compile stages that call ran.

One cold run for every program: each fresh cache folder also builds what a cache builds
once (the precompiled header, the buffer pool's module), seconds of compiler a folder.
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

def stage_calls():
    rows = numpile.compile_times("csv").splitlines()[1:]
    return {{row.split(",")[0]: int(row.split(",")[1]) for row in rows}}

reports = {{}}
for name, source in json.loads(sys.argv[1]).items():
    namespace = {{"np": np}}
    exec(source, namespace)
    program, inputs = namespace["program"], namespace["inputs"]
    before = stage_calls()
    args = inputs()
    want = program(*inputs())
    got = numpile.compile(program)(*args)
    # The idle builds a first call queues (the buffer pool's module, the precompiled header)
    # count for the program that queued them, and the cold run leaves them in the cache.
    numpile.wait_for_compiles()
    after = stage_calls()
    reports[name] = {{
        # A dot product's last bits follow the CPU's BLAS kernel (OpenBLAS sums a ddot in
        # another order on AVX-512 than on AVX2), and the C loop's inline dot keeps its own
        # order: the documented tolerance of compiled backends, not bit equality.
        "equal": bool(np.allclose(np.asarray(got), np.asarray(want), rtol=1e-12, atol=1e-14)),
        "dtype_equal": np.asarray(got).dtype == np.asarray(want).dtype,
        "sympy": "sympy" in sys.modules,
        "stages": sorted(stage for stage in after if after[stage] > before.get(stage, 0)),
    }}
print(json.dumps(reports))
"""


def _first_calls(programs: dict[str, str], cache: Path) -> dict[str, Any]:
    # A fresh interpreter: this one has imported sympy already through other tests.
    sources = {name: textwrap.dedent(source) for name, source in programs.items()}
    env = {**os.environ, "NUMPILE_CACHE_DIR": str(cache), "NUMPILE_TIERED": "0"}
    done = subprocess.run(
        [sys.executable, "-c", _RUNNER.format(), json.dumps(sources)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    reports: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return reports


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


# Name -> (source, whether its warm start imports sympy). Those that import it come last:
# a program's `sympy` is read in a process where the programs before it ran.
_PROGRAMS = {
    "a loop that never reads its index": (_UNREAD_INDEX, False),
    # The input's size and the index are light sizes during capture (no sympy), and the
    # graph prints as the sympy capture's: the cache entry of the cold run is hit.
    "a loop reading its index": (_READ_INDEX, False),
    "index-dependent slices": (_TRIANGULAR, False),
    # `x.shape[0] // 2` is no affine size: the light capture stops and the sympy capture
    # gives the graph, cold and warm, with eager's result.
    "a trip count sympy must give": (_HALF_TRIP_COUNT, True),
}


def test_warm_starts_import_sympy_only_where_capture_needs_it(tmp_path: Path) -> None:
    programs = {name: source for name, (source, _) in _PROGRAMS.items()}
    cold = _first_calls(programs, tmp_path)
    warm = _first_calls(programs, tmp_path)
    problems = []
    for name, (_, imports_sympy) in _PROGRAMS.items():
        for run, report in (("cold", cold[name]), ("warm", warm[name])):
            if not (report["equal"] and report["dtype_equal"]):
                problems.append(f"{name}: the {run} run differs from eager: {report}")
        # The cold run builds its C module; the warm start builds nothing: the graph came
        # from the cache.
        if "cpp_build" not in cold[name]["stages"]:
            problems.append(f"{name}: the cold run's stages are {cold[name]['stages']}")
        if "cpp_build" in warm[name]["stages"] or "capture" not in warm[name]["stages"]:
            problems.append(f"{name}: the warm start's stages are {warm[name]['stages']}")
        if warm[name]["sympy"] is not imports_sympy:
            problems.append(f"{name}: sympy imported by the warm start: {warm[name]['sympy']}")
    assert problems == []
