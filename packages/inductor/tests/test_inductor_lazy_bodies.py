"""A loop body is compiled as a module of its own only where its loop runs as a host loop
(`lazy_body`): a loop of kernels called from C builds one module on a cold compile, a host
loop's body is still built with the graph, and a C loop that hands its iterations back to the
host loop (overlapping arguments) compiles the body then and gives NumPy's result."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import numpile_runtime as rt
from numpile_capture import capture_function
from numpile_inductor import inductor
from numpile_inductor.lazy_body import LazyBody


def _jacobi(A: Any, B: Any) -> Any:
    for _ in range(3):
        B[1:-1, 1:-1] = 0.25 * (A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.25 * (B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])
    return A, B


def _rows_then_scalars(A: Any) -> Any:
    # Array work and a nested loop in one body: no C loop of kernels takes it.
    for _ in range(3):
        A[:] = A * 0.5 + 1.0
        for j in range(2):
            A[j, 0] = A[j, 0] * 2.0
    return A


def _grid() -> tuple[Any, Any]:
    rng = np.random.default_rng(0)
    return rng.standard_normal((9, 9)), np.zeros((9, 9))


def _sync(fn: Callable[..., Any], *args: Any) -> Callable[..., Any]:
    # `fn`'s graph through the inductor backend (bodies, then the graph), compiled now.
    graph = capture_function(fn, tuple(a.copy() for a in args), {}).graph
    compiled = inductor(graph, list(args), options={"tiered": False})
    names = list(inspect.signature(fn).parameters)
    order = [names.index(p.name) for p in graph.placeholders]
    return lambda *call: compiled(*(call[k] for k in order))


def _misses() -> int:
    return rt.counters().get("inductor_graph_cache_miss", 0)


def test_a_loop_of_kernels_builds_one_module(fresh_cache: Path) -> None:
    before = _misses()
    compiled = _sync(_jacobi, *_grid())
    assert _misses() == before + 1  # the graph's module only: its C loop calls the kernels
    ours, theirs = _grid(), _grid()
    got = compiled(*ours)
    want = _jacobi(*theirs)
    for mine, eager in zip((*got, *ours), (*want, *theirs), strict=True):
        np.testing.assert_array_equal(mine, eager)
    assert _misses() == before + 1


def test_a_host_loop_body_is_compiled_with_the_graph(fresh_cache: Path) -> None:
    before = _misses()
    compiled = _sync(_rows_then_scalars, _grid()[0])
    built = _misses() - before
    assert built == 2  # the graph and the body its host loop calls
    ours, theirs = _grid()[0], _grid()[0]
    np.testing.assert_array_equal(compiled(ours), _rows_then_scalars(theirs))
    np.testing.assert_array_equal(ours, theirs)
    assert _misses() == before + built  # nothing compiled during the call


def test_a_c_loop_handing_back_overlapping_arguments_gives_numpys_result(
    fresh_cache: Path,
) -> None:
    compiled = _sync(_jacobi, *_grid())
    ours = _grid()[0]
    theirs = ours.copy()
    compiled(ours, ours)  # B is A: the C loop hands the iterations to the host loop
    _jacobi(theirs, theirs)
    np.testing.assert_array_equal(ours, theirs)
    again = _grid()[0]
    compiled(again, again)
    np.testing.assert_array_equal(again, theirs)


def test_a_body_that_fails_to_compile_on_a_call_runs_op_by_op() -> None:
    def broken() -> Callable[..., Any]:
        raise rt.BuildError("no", source_path="k.c", command=("cc",), stderr="")

    body = LazyBody(broken, fallback=lambda: lambda *args: sum(args))
    assert body(1, 2, 3) == 6
    assert body.compiled


def test_forcing_a_body_raises_its_compile_error() -> None:
    def broken() -> Callable[..., Any]:
        raise rt.BuildError("no", source_path="k.c", command=("cc",), stderr="")

    body = LazyBody(broken, fallback=lambda: lambda *args: 0)
    try:
        body.force()
    except rt.BuildError:
        pass
    else:
        raise AssertionError("force() must raise the compile's error")
    assert not body.compiled


_WARM_START = """
import json
import numpy as np
import numpile_runtime as rt
from numpile_capture import capture_function
from numpile_inductor import inductor


def jacobi(A, B):
    for _ in range(3):
        B[1:-1, 1:-1] = 0.25 * (A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.25 * (B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])
    return A, B


A = np.random.default_rng(0).standard_normal((9, 9))
B = np.zeros((9, 9))
graph = capture_function(jacobi, (A.copy(), B.copy()), {}).graph
compiled = inductor(graph, [A, B], options={"tiered": %s})
names = ["A", "B"]
order = [names.index(p.name) for p in graph.placeholders]
args = (A, B)
got = compiled(*(args[k] for k in order))
print(json.dumps({"result": np.asarray(got[0]).tolist(), "counters": rt.counters()}))
"""


def test_a_second_process_runs_a_loop_of_kernels_from_the_cache(tmp_path: Path) -> None:
    # The cold process builds the graph's module only; a second one, tiered (the default),
    # finds it in the cache: the body nobody compiled is no miss.
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "NUMPILE_CACHE_DIR": str(tmp_path / "cache")}
    runs = []
    for tiered in ("False", "True"):
        done = subprocess.run(
            [sys.executable, "-c", _WARM_START % tiered],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    cold, warm = runs
    assert cold["counters"]["inductor_graph_cache_miss"] == 1
    assert warm["counters"].get("compiler_invocation", 0) == 0
    assert warm["counters"].get("inductor_tiered_graph", 0) == 0  # no build in the background
    assert warm["counters"]["inductor_graph_cache_hit"] >= 1
    A, B = np.random.default_rng(0).standard_normal((9, 9)), np.zeros((9, 9))
    np.testing.assert_array_equal(warm["result"], _jacobi(A, B)[0])
    assert warm["result"] == cold["result"]


def _halve_until_small(x: Any, tol: float) -> Any:
    # Unrolled copies after a run-time break: each a `cond` branch with array work.
    for w in (0.5, 0.25, 0.125):
        x = x * w
        if np.abs(x).max() < tol:
            break
    return x


def test_cond_branches_with_array_work_run_compiled(fresh_cache: Path) -> None:
    x = np.linspace(-3.0, 3.0, 50)
    graph = capture_function(_halve_until_small, (x, 0.3), {}).graph
    before = _misses()
    compiled = inductor(graph, [x], options={"tiered": False})
    for scale in (0.1, 1.0, 3.0, 100.0):  # the break at each copy, and never
        np.testing.assert_array_equal(compiled(x * scale), _halve_until_small(x * scale, 0.3))
    assert _misses() > before + 1  # the graph's module, and the branches' own
