"""First call of small kernels: where the time goes, cold (empty cache) and warm (filled cache).

Each kernel runs in a fresh interpreter, so the import and every first-use cost are in the
figure, as a user's first call pays them. A cold run gets an empty ``NUMPILE_CACHE_DIR``;
the warm run after it reuses that folder (a new process, the on-disk cache filled). The
child reports the import, the first call, the second call, and the compile stages that
``numpile_runtime.compile_times()`` recorded during the first call (capture, guards,
lowering, codegen, the C build, module loads)::

    python -m benchmarks.first_call                  # every kernel, default (tiered) mode
    python -m benchmarks.first_call --sync           # compiled code from the first call
    python -m benchmarks.first_call --only softmax --repeats 5

A kernel's figure is the median over ``--repeats`` fresh processes.

    >>> sorted(KERNELS)[:2]
    ['chain10', 'layernorm']
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

_REPO_ROOT = Path(__file__).resolve().parent.parent


def _chain10(x: Any) -> Any:
    import numpy as np

    return np.tanh(np.sin(x) * 2.0 + np.cos(x) * x - 1.0) / (1.0 + x * x) + np.exp(-x)


def _reduce(x: Any) -> Any:
    return (x * x).sum(axis=1) + x.max(axis=1)


def _softmax(x: Any) -> Any:
    import numpy as np

    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _layernorm(x: Any) -> Any:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / (var + 1e-5) ** 0.5


def _stencil(u: Any) -> Any:
    out = u.copy()
    out[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    return out


def _matmul_chain(a: Any, b: Any, bias: Any) -> Any:
    import numpy as np

    return np.maximum(a @ b + bias, 0.0) @ b.T


def _where_clip(x: Any) -> Any:
    import numpy as np

    return np.where(x > 0.5, np.sqrt(np.abs(x)), -(x * x)).cumsum()


def _inputs(name: str) -> tuple[Any, ...]:
    import numpy as np

    rng = np.random.default_rng(0)
    if name == "matmul_chain":
        return (rng.random((64, 32)), rng.random((32, 32)), rng.random(32))
    if name == "stencil":
        return (rng.random((128, 128)),)
    if name in ("reduce", "softmax", "layernorm"):
        return (rng.random((256, 64)),)
    return (rng.random(4096),)


# NOTE: the kernel set of issue 24 item 4: a ufunc chain, a reduction, a softmax, a
# layernorm, a stencil of slices, a small matmul chain, a select with a scan.
KERNELS: dict[str, Callable[..., Any]] = {
    "chain10": _chain10,
    "reduce": _reduce,
    "softmax": _softmax,
    "layernorm": _layernorm,
    "stencil": _stencil,
    "matmul_chain": _matmul_chain,
    "where_cumsum": _where_clip,
}


def _child(name: str, *, sync: bool) -> None:
    started = time.perf_counter()
    import numpy as np

    import numpile
    import numpile_runtime as rt

    import_s = time.perf_counter() - started
    args = _inputs(name)
    options = {"tiered": not sync}
    fn = numpile.compile(KERNELS[name], options=options)
    rt.reset_compile_times()
    start = time.perf_counter()
    result = fn(*args)
    first = time.perf_counter() - start
    stages = rt.compile_times()
    start = time.perf_counter()
    fn(*args)
    second = time.perf_counter() - start
    np.testing.assert_allclose(result, KERNELS[name](*args), rtol=1e-12, atol=1e-12)
    report = {"import_s": import_s, "first_s": first, "second_s": second, "stages": stages}
    print(json.dumps(report))


def _run(name: str, cache_dir: str, *, sync: bool) -> dict[str, Any]:
    command = [sys.executable, "-m", "benchmarks.first_call", "--child", name]
    if sync:
        command.append("--sync")
    env = {**os.environ, "NUMPILE_CACHE_DIR": cache_dir}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    done = subprocess.run(
        command, capture_output=True, text=True, cwd=_REPO_ROOT, env=env, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"{name}: child failed:\n{done.stderr[-2000:]}")
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def _median(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.median(run[key] for run in runs)


def _stage_medians(runs: list[dict[str, Any]]) -> dict[str, float]:
    names = dict.fromkeys(stage for run in runs for stage in run["stages"])
    return {n: statistics.median(run["stages"].get(n, 0.0) for run in runs) for n in names}


def main(argv: list[str] | None = None) -> None:
    """Run every kernel cold then warm in fresh processes; print one line per kernel."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.first_call")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--sync", action="store_true", help="options={'tiered': False}")
    parser.add_argument("--only", action="append", default=[])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--stages", action="store_true", help="print the compile stages")
    options = parser.parse_args(argv)
    if options.child:
        _child(options.child, sync=options.sync)
        return
    names = [n for n in KERNELS if not options.only or any(n.startswith(o) for o in options.only)]
    colds: list[float] = []
    warms: list[float] = []
    mode = "sync" if options.sync else "default"
    print(f"mode {mode}; load {os.getloadavg()[0]:.2f}; median of {options.repeats} processes")
    print(f"{'kernel':14} {'import':>8} {'cold 1st':>9} {'cold 2nd':>9} {'warm 1st':>9}")
    for name in names:
        cold_runs: list[dict[str, Any]] = []
        warm_runs: list[dict[str, Any]] = []
        for _ in range(options.repeats):
            with tempfile.TemporaryDirectory(prefix="numpile-first-call-") as cache_dir:
                cold_runs.append(_run(name, cache_dir, sync=options.sync))
                if options.sync:
                    warm_runs.append(_run(name, cache_dir, sync=True))
                else:
                    # The background build of the cold run may still be writing the cache.
                    _run(name, cache_dir, sync=True)
                    warm_runs.append(_run(name, cache_dir, sync=False))
        cold = _median(cold_runs, "first_s")
        warm = _median(warm_runs, "first_s")
        colds.append(cold)
        warms.append(warm)
        print(
            f"{name:14} {_median(cold_runs, 'import_s') * 1e3:7.0f}ms {cold * 1e3:8.1f}ms"
            f" {_median(cold_runs, 'second_s') * 1e3:8.2f}ms {warm * 1e3:8.1f}ms"
        )
        if options.stages:
            stages = _stage_medians(cold_runs)
            print("   cold stages: " + ", ".join(f"{k} {v * 1e3:.0f}" for k, v in stages.items()))
            stages = _stage_medians(warm_runs)
            print("   warm stages: " + ", ".join(f"{k} {v * 1e3:.0f}" for k, v in stages.items()))
    print(
        f"median first call: cold {statistics.median(colds) * 1e3:.1f} ms,"
        f" warm {statistics.median(warms) * 1e3:.1f} ms"
    )


if __name__ == "__main__":
    main()
