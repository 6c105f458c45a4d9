"""Command line: ``python -m benchmarks [--quick] [--only NAME] [--threads N] [--torch]``.

Thread counts and cache folders are environment variables that NumPy's BLAS, numexpr,
OpenMP, numpile and torch read once at import, so they are set here before anything heavy
is imported; the suite modules are imported afterwards on purpose.

    python -m benchmarks --quick              # smoke run, small sizes, < 30 s
    python -m benchmarks --only 'chain*'      # some workloads (shell patterns, repeatable)
    python -m benchmarks --threads 1 --torch  # pin every library to one thread, add torch
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

# Every library's own thread knob; OMP_NUM_THREADS also reaches numpile's OpenMP kernels.
_THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="numpile benchmarks: NumPy functions under NumPy, numpile, numexpr and "
        "torch.compile, with ratios against NumPy measured in the same run.",
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats (smoke)")
    parser.add_argument(
        "--only",
        action="append",
        metavar="NAME",
        help="run workloads matching NAME (shell pattern, comma-separated, repeatable)",
    )
    parser.add_argument(
        "--threads", type=int, metavar="N", help="pin every library to N threads (default: all)"
    )
    torch = parser.add_mutually_exclusive_group()
    torch.add_argument(
        "--torch",
        dest="torch",
        action="store_true",
        default=None,
        help="include torch.compile (default: when torch is importable, except with --quick)",
    )
    torch.add_argument("--no-torch", dest="torch", action="store_false")
    parser.add_argument(
        "--numpile-backend",
        default="inductor",
        metavar="NAME",
        help="numpile backend to measure (default: inductor; eager shows capture overhead)",
    )
    parser.add_argument("--no-stream", action="store_true", help="skip the STREAM triad")
    parser.add_argument("--no-warm-start", action="store_true", help="skip warm-start processes")
    parser.add_argument("--out", type=Path, help="JSON path (default: benchmarks/results/...)")
    parser.add_argument("--list", action="store_true", help="list the workloads and exit")
    options = parser.parse_args(argv)
    if options.threads is not None and options.threads < 1:
        parser.error("--threads must be at least 1")
    return options


def _torch_wanted(flag: bool | None, *, quick: bool) -> bool:
    if flag is not None:
        return flag
    if quick:
        return False
    import importlib.util

    return importlib.util.find_spec("torch") is not None


def main(argv: list[str] | None = None) -> int:
    """Run the suite as the command line asks; print the report and write the JSON file."""
    options = _parse(argv)
    if options.threads is not None:
        for name in _THREAD_VARIABLES:
            os.environ[name] = str(options.threads)
    cache_root = Path(tempfile.mkdtemp(prefix="numpile-bench-cache-"))
    # Fresh caches make every first call a cold compile; warm-start children inherit them.
    os.environ["NUMPILE_CACHE_DIR"] = str(cache_root / "numpile")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(cache_root / "torchinductor")
    try:
        # Imported only now: NumPy and the contenders must see the variables set above.
        from .report import default_path, render, write_json
        from .suite import SuiteOptions, run_suite
        from .workloads import WORKLOADS, find_workloads

        if options.list:
            for workload in WORKLOADS:
                print(f"{workload.name:22} {workload.bound:9} {workload.fn.__doc__}")
            return 0
        patterns = [p for arg in options.only or [] for p in arg.split(",") if p] or None
        # benchmarks/guards.py (guard checks, dispatch overhead) runs first when selected.
        from .guards import run_selected as run_guards

        patterns = run_guards(patterns, quick=options.quick)
        # benchmarks/dynamic.py (compiles over 100 random batch sizes) runs next when selected.
        from .dynamic import run_selected as run_dynamic

        patterns = run_dynamic(patterns, quick=options.quick)
        # benchmarks/scalars.py (an optimizer loop with changing Python scalars) runs next.
        from .scalars import run_selected as run_scalars

        patterns = run_scalars(patterns, quick=options.quick)
        if patterns == []:
            return 0
        try:
            find_workloads(patterns)
        except ValueError as error:
            print(f"python -m benchmarks: {error}", file=sys.stderr)
            return 2
        suite_options = SuiteOptions(
            quick=options.quick,
            patterns=patterns,
            threads=options.threads,
            torch=_torch_wanted(options.torch, quick=options.quick),
            stream=not options.no_stream,
            warm_start=not options.no_warm_start,
            numpile_backend=options.numpile_backend,
        )
        result = run_suite(suite_options)
        print(render(result), end="")
        path = write_json(result, options.out or default_path(result))
        print(f"\nJSON written to {path}")
        return 0
    finally:
        shutil.rmtree(cache_root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
