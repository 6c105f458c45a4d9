"""A contender in a child process of its own: started with fresh cache folders, stopped at a
time limit, reporting stages as JSON lines on stdout; and the checks both sides share.

``python -m benchmarks.loops`` and ``python -m benchmarks.science`` time each contender in a
child beside NumPy, so a compile that runs for minutes is stopped and reported, and numba's,
torch's, JAX's and numpile's threading runtimes never share a process.

    >>> agree(np.ones(3), np.ones(3) + 1e-12)
    'ok'
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
"""The repository root: children run there, so ``-m benchmarks...`` imports this tree."""


@attrs.frozen
class ChildRun:
    """What a child printed before it ended: its stages by name, and why it stopped.

    ``stopped`` is "" after a clean exit, else the limit or the exit status with the last
    line of stderr.
    """

    stages: dict[str, dict[str, Any]]
    timed_out: bool
    stopped: str


class AgainstNumpy:
    """What a benchmark row with ``warm_s`` and ``numpy_s`` fields (seconds, or None where
    not measured) derives from them: its speed-up over NumPy."""

    warm_s: float | None
    numpy_s: float | None

    @property
    def vs_numpy(self) -> float | None:
        """NumPy's warm time / this contender's (> 1 is faster)."""
        if self.warm_s is None or self.numpy_s is None or self.warm_s <= 0:
            return None
        return self.numpy_s / self.warm_s


def timed_pair(timings: dict[str, Any], contender: str) -> tuple[Any, Any] | None:
    """The contender's and NumPy's ``Timing`` from ``measure_interleaved``'s result; None
    (after emitting a ``failed`` stage with the error) where either raised."""
    from .timer import Timing

    mine, numpy_timing = timings[contender], timings["numpy"]
    if isinstance(mine, Timing) and isinstance(numpy_timing, Timing):
        return mine, numpy_timing
    failed = mine if isinstance(mine, Exception) else numpy_timing
    emit({"stage": "failed", "error": f"{type(failed).__name__}: {failed}"[:300]})
    return None


def emit(record: dict[str, Any]) -> None:
    """Print one stage of a child as a JSON line (the parent reads every line with ``{``)."""
    print(json.dumps(record), flush=True)


def child_env(cache_root: Path) -> dict[str, str]:
    """The environment of a child: numpile's and torch's caches in ``cache_root`` (fresh
    folders, so the first call compiles), OpenMP threads that sleep when idle.

    >>> child_env(Path("/tmp/c"))["NUMPILE_CACHE_DIR"]
    '/tmp/c/numpile'
    """
    env = dict(os.environ)
    env["NUMPILE_CACHE_DIR"] = str(cache_root / "numpile")
    env["TORCHINDUCTOR_CACHE_DIR"] = str(cache_root / "torchinductor")
    env["JAX_COMPILATION_CACHE_DIR"] = str(cache_root / "jax")
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    return env


def run_child(module: str, args: Sequence[str], *, limit_s: float) -> ChildRun:
    """Run ``python -m module *args`` in the repository root with fresh cache folders, for at
    most ``limit_s`` seconds, and collect the stages it printed.

    >>> run_child("json.tool", ["--help"], limit_s=30).timed_out
    False
    """
    command = [sys.executable, "-m", module, *args]
    cache_root = Path(tempfile.mkdtemp(prefix="numpile-bench-cache-"))
    timed_out = False
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            timeout=limit_s,
            cwd=ROOT,
            env=child_env(cache_root),
            check=False,
        )
        out, err, code = done.stdout, done.stderr, done.returncode
    except subprocess.TimeoutExpired as expired:
        out, err, code, timed_out = expired.stdout or b"", expired.stderr or b"", None, True
    finally:
        shutil.rmtree(cache_root, ignore_errors=True)
    stages: dict[str, dict[str, Any]] = {}
    for line in out.decode(errors="replace").splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            stages[record["stage"]] = record
    if timed_out:
        stopped = f"not done in {limit_s:.0f} s"
    elif code == 0:
        stopped = ""
    else:
        tail = err.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
        stopped = f"exit {code}: {tail[0][:200]}"
    return ChildRun(stages, timed_out, stopped)


def missing(module: str) -> str | None:
    """Why ``module`` cannot run here (``None`` when it is importable).

    >>> missing("json") is None, missing("no_such_module_here")
    (True, 'no_such_module_here is not installed')
    """
    if importlib.util.find_spec(module) is None:
        return f"{module} is not installed"
    return None


def agree(want: Any, got: Any, *, rtol: float = 1e-9, atol: float = 1e-12) -> str:
    """``ok`` when ``got`` matches NumPy's ``want`` (type, dtype, shape, values), else why.

    >>> agree(np.float64(1.0), 1.0), agree(np.ones(2), np.ones(2)), agree((1,), 2)
    ('ok (a Python float)', 'ok', 'structure tuple vs int')
    """
    if isinstance(want, tuple):
        if not isinstance(got, tuple) or len(got) != len(want):
            return f"structure {type(want).__name__} vs {type(got).__name__}"
        for a, b in zip(want, got, strict=True):
            found = agree(a, b, rtol=rtol, atol=atol)
            if found != "ok":
                return found
        return "ok"
    if type(want) is not type(got):
        if isinstance(want, np.generic) and isinstance(got, bool | int | float | complex):
            # numba hands back Python scalars where NumPy gives NumPy scalars: same values
            # are reported as such, and the type apart.
            same = np.allclose(np.asarray(want), np.asarray(got), rtol=rtol, atol=atol)
            return f"ok (a Python {type(got).__name__})" if same else "values differ"
        return f"type {type(want).__name__} vs {type(got).__name__}"
    a, b = np.asarray(want), np.asarray(got)
    if a.dtype != b.dtype or a.shape != b.shape:
        return f"{a.dtype}{a.shape} vs {b.dtype}{b.shape}"
    if a.dtype.kind in "fc":
        close = np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
    else:
        close = np.array_equal(a, b)
    return "ok" if close else "values differ"


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, as ``uptime`` prints them."""
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def machine_header(distributions: Sequence[str]) -> str:
    """Two lines naming the host, its CPU, its load and the versions of ``distributions``."""
    from .machine import _cpu_model

    versions = []
    for distribution in distributions:
        try:
            versions.append(f"{distribution} {importlib.metadata.version(distribution)}")
        except importlib.metadata.PackageNotFoundError:
            versions.append(f"{distribution} absent")
    return (
        f"host {platform.node()}; CPU {_cpu_model()}; {os.cpu_count()} logical cores; "
        f"load average {load_average()}\nPython {platform.python_version()}; "
        f"{', '.join(versions)}\n"
    )
