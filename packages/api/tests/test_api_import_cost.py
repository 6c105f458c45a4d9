"""What a warm start (a new process whose disk cache holds the graph) must not import or read.

- sympy (0.3-6 s on a loaded machine; only what is not affine in sizes and loop indices
  needs it, and the cold compile of this program's graphs, static and with affine loop
  indices, lowers without it too) and optree (about 70 ms; only the transforms' pytrees
  need it);
- importlib.metadata (about 20 ms of CPU): `__version__` is resolved when asked, and backend
  entry points are read only for a name no numpile package registers;
- numpile_autograd_aot (about 16 ms of CPU): `numpile.grad` and the other transforms import
  it on first use, and a cached graph with in-place updates runs its scatter ops (capture's)
  without it;
- the unicode_escape codec (the guards' comments escape with `ascii`);
- the packages' Python sources: their fingerprint is read from the cache while their sizes
  and modification times are unchanged.

Counted with `sys.modules` and an audit hook in a subprocess; no timing is asserted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

_PROGRAM = """
import json, sys
opened = []

def hook(event, args):
    # Sources numpile reads itself; an import compiling a module (no bytecode cache) is not.
    if event != "open" or not str(args[0]).endswith(".py"):
        return
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return
        frame = frame.f_back
    opened.append(str(args[0]))

sys.addaudithook(hook)
import numpy as np, numpile
after_import = set(sys.modules)
f = numpile.compile(lambda x: x * 2.0 + 1.0)
x = np.arange(5.0)
assert (f(x) == x * 2.0 + 1.0).all()

def steps(u, n):
    # A time-step loop kept as a loop whose index nothing reads: no index symbol.
    for _ in range(n):
        u = 0.5 * (u + 1.0)
    return u

assert numpile.compile(steps)(x, 3).tolist() == steps(x, 3).tolist()

def recurrence(a):
    # A loop whose body indexes with affine expressions of its index (`i - 1`, `n - i - 1`).
    n = a.shape[0]
    out = a.copy()
    for i in range(1, n):
        out[i] = 0.5 * out[i - 1] + a[n - i - 1]
    return out

a = np.linspace(0.0, 1.0, 6)
assert np.allclose(numpile.compile(recurrence)(a), recurrence(a))  # numpy.testing: metadata
# The queued builds (the compiler probe, the precompiled header) finish before the modules
# are listed: a cold run that exited first would leave the warm run their cache writes.
import numpile_runtime
assert numpile_runtime.wait_for_queued_builds(timeout=240)
print(json.dumps({
    "import": sorted(after_import), "first call": sorted(set(sys.modules)),
    "sources": sorted({p for p in opened if "numpile" in p}),
}))
"""

# NOTE: what the warm path must leave out, and what the cold path brings in for comparison.
_NEVER_WARM = (
    "sympy",
    "optree",
    "importlib.metadata",
    "numpile_autograd_aot",
    "encodings.unicode_escape",
)


def _run(cache: Path, program: str = _PROGRAM) -> dict[str, list[str]]:
    env = {**os.environ, "NUMPILE_CACHE_DIR": str(cache), "NUMPILE_TIERED": "0"}
    run = subprocess.run(
        [sys.executable, "-c", program], env=env, check=True, timeout=300, capture_output=True
    )
    report: dict[str, list[str]] = json.loads(run.stdout.decode().strip().splitlines()[-1])
    return report


@pytest.fixture(scope="module")
def cold_and_warm(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, list[str]], ...]:
    cache = tmp_path_factory.mktemp("cache")
    return _run(cache), _run(cache)


def test_a_warm_start_imports_none_of_the_cold_path_s_modules(
    cold_and_warm: tuple[dict[str, list[str]], ...],
) -> None:
    cold, warm = cold_and_warm
    assert "optree" not in cold["first call"]
    assert [name for name in _NEVER_WARM if name in warm["first call"]] == []
    # `import numpile` alone leaves them out too, cache or no cache.
    assert [name for name in _NEVER_WARM if name in cold["import"]] == []


def test_a_cold_compile_of_static_and_affine_loop_graphs_imports_no_sympy(
    cold_and_warm: tuple[dict[str, list[str]], ...],
) -> None:
    # Capture, lowering and C generation of `x * 2.0 + 1.0`, of the time-step loop and of
    # the recurrence (affine indices of its loop index) all work on ints and `AffineSize`.
    cold, _ = cold_and_warm
    assert "sympy" not in cold["first call"]


def test_a_warm_start_reads_no_numpile_source(
    cold_and_warm: tuple[dict[str, list[str]], ...],
) -> None:
    _, warm = cold_and_warm
    assert warm["sources"] == []


def test_versions_and_transforms_still_resolve_on_first_use(tmp_path: Path) -> None:
    program = (
        "import json, sys, numpy as np, numpile, numpile_inductor\n"
        "before = 'importlib.metadata' in sys.modules\n"
        "v = (numpile.__version__, numpile_inductor.__version__)\n"
        "g = numpile.grad(lambda x: (x * x).sum())(np.arange(3.0))\n"
        "print(json.dumps({'import': [str(before)], 'first call': list(v),\n"
        "                  'sources': [str(float(g.sum()))]}))\n"
    )
    report = _run(tmp_path, program)
    assert report["import"] == ["False"]
    assert report["first call"][0] == report["first call"][1] != "0+unknown"
    assert report["sources"] == ["6.0"]


def test_a_warm_start_of_a_graph_with_in_place_updates_runs_without_autograd_or_sympy(
    tmp_path: Path,
) -> None:
    # The functionalization's scatter ops (view_scatter_, index_scatter) are canonical ops of
    # capture: the cached graph runs them without importing numpile_autograd_aot, whose
    # import the cold compile needed (it functionalizes the graph).
    program = (
        "import json, sys, numpy as np, numpile\n"
        "def f(u, i):\n"
        "    out = u.copy()\n"
        "    out[1:-1] = 0.5 * (u[:-2] + u[2:])\n"
        "    out[i] = -1.0\n"
        "    out[0] = 3.0\n"
        "    u[::3] *= 2.0\n"
        "    return out\n"
        "u, i = np.arange(8.0) ** 2, np.array([0, 5])\n"
        "mine, eager = u.copy(), u.copy()\n"
        "got = numpile.compile(f)(mine, i)\n"
        "want = f(eager, i)\n"
        "np.testing.assert_array_equal(got, want)\n"
        "np.testing.assert_array_equal(mine, eager)\n"
        "print(json.dumps({'import': [], 'first call': sorted(set(sys.modules)),\n"
        "                  'sources': []}))\n"
    )
    cold = _run(tmp_path, program)
    warm = _run(tmp_path, program)
    assert "numpile_autograd_aot" in cold["first call"]
    assert "numpile_autograd_aot" not in warm["first call"]
    # An integer index into a static size is checked without sympy.
    assert "sympy" not in warm["first call"]
