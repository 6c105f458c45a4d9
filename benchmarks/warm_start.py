"""Warm start: the first call of a compiled workload in a fresh process whose cache is full.

The parent run has compiled every workload into its cache folders (``NUMPILE_CACHE_DIR``,
``TORCHINDUCTOR_CACHE_DIR``); a new interpreter inherits them, builds the same inputs, and
times its first call from start to return. The process is run by ``benchmarks.first_call``
(its ``suite`` set, ``run_fresh``), the one runner of fresh-process timings; this module is
the suite's helper (``measure_warm_start``) and keeps the child's command line::

    python -m benchmarks.warm_start chain_sin_f32 numpile --quick

    >>> WarmStart(import_s=0.1, first_call_s=0.02, second_call_s=0.01).first_call_s
    0.02
"""

from __future__ import annotations

import argparse
import json

import attrs

from .first_call import main as first_call_main
from .first_call import run_fresh


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

    The first child writes the bytecode caches (see ``run_fresh``); the median of three
    hides one slow first touch of fresh memory.

    >>> result = measure_warm_start("tiny_call_f64", "numpy", quick=True, threads=None)
    >>> isinstance(result, WarmStart)
    True
    """
    runs: list[WarmStart] = []
    for _ in range(repeats):
        report = run_fresh(_child_args(workload, contender, quick, threads), limit_s=timeout_s)
        if isinstance(report, str):
            return report.splitlines()[0]
        runs.append(WarmStart(report["import_s"], report["first_s"], report["second_s"]))
    runs.sort(key=lambda run: run.first_call_s)
    return runs[len(runs) // 2]


def _child_args(workload: str, contender: str, quick: bool, threads: int | None) -> list[str]:
    args = [f"suite:{workload}", "--contender", contender]
    if quick:
        args.append("--quick")
    if threads is not None:
        args += ["--threads", str(threads)]
    return args


def main(argv: list[str] | None = None) -> None:
    """The child's command line: ``WORKLOAD CONTENDER [--quick] [--threads N]``; prints the
    ``WarmStart`` of one fresh process as JSON (this process is that fresh process)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.warm_start")
    parser.add_argument("workload")
    parser.add_argument("contender", help="numpy, numpile, numpile[BACKEND], numexpr or torch")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--threads", type=int, default=None)
    options = parser.parse_args(argv)
    args = _child_args(options.workload, options.contender, options.quick, options.threads)
    import contextlib
    import io

    report = io.StringIO()
    with contextlib.redirect_stdout(report):
        first_call_main(["--child", *args])
    run = json.loads(report.getvalue().strip().splitlines()[-1])
    print(json.dumps(attrs.asdict(WarmStart(run["import_s"], run["first_s"], run["second_s"]))))


if __name__ == "__main__":
    main()
