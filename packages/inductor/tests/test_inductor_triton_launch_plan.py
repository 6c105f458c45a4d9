"""A plain compiled GPU call's host path: launch plans, kept launches, direct launches.

The GPU half runs in a child process with `benchmarks.gpu_host`'s stand-ins (CuPy arrays
over NumPy memory, Triton compiling nothing, launches that return at once), so it needs
triton but no GPU; the interpreter half checks that a kept launch follows run-time sizes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import triton_interpreter  # noqa: F401 - first: it chooses Triton's interpreter

from numpile_capture import ArrayMeta, Graph, get_op
from numpile_inductor.codegen.triton.backend import compile_triton
from numpile_inductor.codegen.triton.launch_plan import LaunchPlan

_ROOT = Path(__file__).resolve().parents[3]

# Python calls in numpile's own files per plain call of a one-kernel reduction on (stand-in)
# CuPy arrays, dispatcher to outputs: 27 before launch plans (Python 3.11), 14 with them.
_MOST_CALLS = 20

_CHILD = """
import sys

from benchmarks.gpu_host import install_stand_ins, ndarray

install_stand_ins()
import numpy as np
from triton import knobs
from triton.runtime import jit

import numpile

runs = []
real_run = jit.JITFunction.run


def counted_run(self, *args, **kwargs):
    runs.append(self)
    return real_run(self, *args, **kwargs)


jit.JITFunction.run = counted_run


def row_sums(x):
    return x.sum(axis=1)


compiled = numpile.compile(row_sums, fullgraph=True)
x = ndarray(np.ones((8, 64)))
compiled(x)  # compiles, tunes the reduction (launches through Triton's run)
warm = len(runs)
first = compiled(x)
second = compiled(x)
# Each call's output is its own allocation, never the last call's.
assert type(first) is ndarray and first.shape == (8,), first
assert first is not second and first.data.ptr != second.data.ptr
assert len(runs) == warm, runs  # direct launches, not through run

# A profiler's launch hook sees every launch: hooked launches go through run.
hook = lambda *args: None
knobs.runtime.launch_enter_hook.add(hook)
compiled(x)
compiled(x)
assert len(runs) == warm + 2, runs
knobs.runtime.launch_enter_hook.remove(hook)
compiled(x)
assert len(runs) == warm + 2, runs

root = sys.argv[1]
calls = [0]


def count(frame, event, arg):
    if event == "call" and frame.f_code.co_filename.startswith(root):
        calls[0] += 1


sys.setprofile(count)
for _ in range(10):
    compiled(x)
sys.setprofile(None)
print("calls", calls[0] / 10)
"""


def test_plain_gpu_calls_launch_directly_unless_hooked_and_allocate_per_call(
    tmp_path: Any,
) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["NUMPILE_CACHE_DIR"] = str(tmp_path)
    result = subprocess.run(
        [sys.executable, "-c", _CHILD, str(_ROOT / "packages")],
        env=env,
        cwd=_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    calls = float(result.stdout.split()[-1])
    assert calls <= _MOST_CALLS, f"{calls} Python calls per plain call (at most {_MOST_CALLS})"


def _row_sums_graph(rows: Any) -> Graph:
    graph = Graph()
    x = graph.placeholder("x", ArrayMeta((rows, 40), np.dtype(np.float64), None))
    graph.output = graph.call(get_op("sum"), x, axis=(1,))
    return graph


def test_a_kept_launch_follows_run_time_sizes() -> None:
    # The grid kept from one launch is made again when the element count changes.
    import sympy

    graph = _row_sums_graph(sympy.Symbol("s0", integer=True, positive=True))
    compiled = compile_triton(graph)
    plans = compiled.fn.plans  # type: ignore[attr-defined]
    assert all(isinstance(plan, LaunchPlan) and plan.numels is None for plan in plans.values())
    rng = np.random.default_rng(3)
    for rows in (3, 130, 2, 130):
        x = rng.standard_normal((rows, 40))
        got = compiled.fn(x)
        np.testing.assert_allclose(got, x.sum(axis=1), rtol=1e-12)
        (ready,) = compiled.fn.ready.values()  # type: ignore[attr-defined]
        assert ready.xnumel == rows and ready.grid == -(-rows // ready.kernel.xblock)
