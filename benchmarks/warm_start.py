"""Warm start: the first call of a compiled workload in a fresh process whose cache is full.

The parent run has compiled every workload into its cache folders (``NUMPILE_CACHE_DIR``,
``TORCHINDUCTOR_CACHE_DIR``); this module starts a new interpreter that inherits them,
builds the same inputs, and times its first call from start to return. It is both the
parent's helper (``measure_warm_start``) and the child's entry point::

    python -m benchmarks.warm_start chain_sin_f32 numpile --quick

    >>> WarmStart(import_s=0.1, first_call_s=0.02, second_call_s=0.01).first_call_s
    0.02
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import attrs

_REPO_ROOT = Path(__file__).resolve().parent.parent


@attrs.frozen
class WarmStart:
    """Seconds in a fresh process: importing the contender, its first call, its second call.

    ``first_call_s`` is the warm-start figure; ``second_call_s`` shows what is left once
    everything is loaded.

        >>> WarmStart(0.5, 0.03, 0.01).second_call_s
        0.01
    """

    import_s: float
    first_call_s: float
    second_call_s: float


def measure_warm_start(
    workload: str,
    contender: str,
    *,
    quick: bool,
    threads: int | None,
    repeats: int = 3,
    timeout_s: float = 600,
) -> WarmStart | str:
    """Run the child ``repeats`` times for ``workload`` and ``contender``; the run with the
    median first call, or why a run failed.

    The children may write Python bytecode caches (``PYTHONDONTWRITEBYTECODE`` is dropped
    from their environment): a user's second process finds them, and without them every
    import compiles from source and the figure measures the sandbox, not numpile. The first
    child writes them; the median of three hides one slow first touch of fresh memory.

    >>> result = measure_warm_start("tiny_call_f64", "numpy", quick=True, threads=None)
    >>> isinstance(result, WarmStart)
    True
    """
    runs: list[WarmStart] = []
    for _ in range(repeats):
        outcome = _run_child(workload, contender, quick=quick, threads=threads, timeout_s=timeout_s)
        if isinstance(outcome, str):
            return outcome
        runs.append(outcome)
    runs.sort(key=lambda run: run.first_call_s)
    return runs[len(runs) // 2]


def _run_child(
    workload: str, contender: str, *, quick: bool, threads: int | None, timeout_s: float
) -> WarmStart | str:
    command = [sys.executable, "-m", "benchmarks.warm_start", workload, contender]
    if quick:
        command.append("--quick")
    if threads is not None:
        command += ["--threads", str(threads)]
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            cwd=_REPO_ROOT,
            env=env,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout_s:.0f} s"
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["no output"]
        return f"child exited {done.returncode}: {tail[0][:200]}"
    lines = done.stdout.strip().splitlines()
    if not lines:
        return "child printed nothing"
    return WarmStart(**json.loads(lines[-1]))


def _child(workload_name: str, contender_name: str, *, quick: bool, threads: int | None) -> None:
    started = time.perf_counter()
    # Imported here, after the process started, because their import is part of what is timed.
    from .contenders import Unavailable, contender_named
    from .workloads import find_workloads

    contender = contender_named(contender_name, threads=threads)
    workload = find_workloads([workload_name])[0]
    fn = contender.prepare(workload)
    if isinstance(fn, Unavailable):
        raise SystemExit(f"{contender_name} unavailable: {fn.reason}")
    import_s = time.perf_counter() - started
    args = workload.make_inputs(quick=quick)
    _prefault(args)
    start = time.perf_counter()
    fn(*args)
    first = time.perf_counter() - start
    start = time.perf_counter()
    fn(*args)
    second = time.perf_counter() - start
    print(json.dumps(attrs.asdict(WarmStart(import_s, first, second))))


def _prefault(args: tuple[object, ...]) -> None:
    # A fresh process's first touch of memory it never used is slow on a VM (3-12 us per
    # 4 KiB page measured here: the host backs the page), and any first call pays it for
    # its outputs, NumPy's included. Touching and freeing four times the inputs' bytes first
    # lets the figure measure the compiler's start-up rather than the hypervisor.
    import numpy as np

    total = sum(int(getattr(arg, "nbytes", 0)) for arg in args)
    scratch = np.ones(max(1, 4 * total // 8))
    del scratch


def main(argv: list[str] | None = None) -> None:
    """The child's command line: ``WORKLOAD CONTENDER [--quick] [--threads N]``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.warm_start")
    parser.add_argument("workload")
    parser.add_argument("contender", help="numpy, numpile, numpile[BACKEND], numexpr or torch")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--threads", type=int, default=None)
    options = parser.parse_args(argv)
    _child(options.workload, options.contender, quick=options.quick, threads=options.threads)


if __name__ == "__main__":
    main()
