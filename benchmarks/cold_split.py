"""Where a cold first call goes, per workload: the split of issue 23's "under 1 s cold" target.

Each run is a fresh interpreter with an empty ``NUMPILE_CACHE_DIR`` (``benchmarks.first_call``'s
child), once with compiled code from the first call (``tiered: False``, as
``NUMPILE_TIERED=0``) and once with the default, tiered compilation, the two modes
alternating per repeat so that both see the same minutes of load. Per workload and mode, the
medians over ``--repeats`` processes of:

- ``import``: ``import numpy, numpile`` and ``numpile.compile`` in the fresh process;
- ``1st``: the first call's wall time, what the user waits for. Tiered, a loop function's
  first call captures, queues the C build and runs the function's own Python;
- ``served``: from the first call until compiled code serves (the end of the last graph
  build; sync, the first call itself). Tiered, calls before it run the function's Python;
  the child waits right after its first call, so nothing of its own runs beside the build;
- ``capture``, ``guards``: bytecode to graph, the guard function;
- ``lower``: functionalization and the inductor's lowering and scheduling;
- ``codegen``: the C source of the module;
- ``probe``: the compiler probe of a fresh cache folder (on the build queue's thread,
  beside capture: it is part of ``served`` only where something waits for it);
- ``cc wall``, ``cc CPU``: the C compiler's build wall time (every unit and the link) and the
  CPU time of every compiler process that ended by then (the probe's, the units', the link's;
  tiered, also the build queue's idle work, a precompiled header, that ended before the
  process went idle), which load inflates less than wall time;
- ``load``: loading the built module;
- ``run``: the compiled call itself (the median warm call);
- ``other``: ``served`` less the stages on its path (capture, guards, lower, codegen, the
  build with its load, and sync the run): untimed Python (first-use imports of the
  compiler's modules, the dispatcher) and waits;
- ``main CPU``: the CPU time of the thread that made the first call, during it.

The load average is printed per workload (the machine is shared: read wall times with it)::

    python -m benchmarks.cold_split                      # the 11 loop workloads, 3 repeats
    python -m benchmarks.cold_split --only lu_rows --repeats 5
    python -m benchmarks.cold_split --set small

    >>> [c.title for c in COLUMNS][:3]
    ['import', '1st', 'served']
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from collections.abc import Callable
from typing import Any

import attrs

from .first_call import SETS, find_workloads, run_fresh

MODES = ("sync", "tiered")


def _stage(name: str) -> Callable[[dict[str, Any]], float]:
    return lambda run: float(run["built_stages"].get(name, 0.0))


def _lower(run: dict[str, Any]) -> float:
    return _stage("aot")(run) + _stage("inductor_lowering")(run)


def _on_path(stage: str) -> Callable[[dict[str, Any]], float]:
    # The wall time of `stage`'s blocks outside the build queue's idle work (a precompiled
    # header, the call gate, the buffer pool: no call waits for them), overlapping blocks
    # (modules built side by side) counted once.
    def read(run: dict[str, Any]) -> float:
        spans = sorted(
            (start, end)
            for name, thread, start, end in run["timeline"]
            if name == stage and thread != "numpile-build-queue"
        )
        total, reached = 0.0, float("-inf")
        for start, end in spans:
            if end > reached:
                total += end - max(start, reached)
                reached = end
        return total

    return read


def _compilers_cpu(run: dict[str, Any]) -> float:
    return float(run["first_compilers_cpu_s" if run["sync"] else "built_compilers_cpu_s"])


def _other(run: dict[str, Any]) -> float:
    on_path = ("capture", "guards", "aot", "inductor_lowering", "inductor_codegen")
    timed = sum(_stage(name)(run) for name in on_path) + _on_path("inductor_build")(run)
    if run["sync"]:
        timed += run["warm_s"]
    return float(run["served_s"]) - timed


@attrs.frozen
class Column:
    """One column of the split: its title and how it reads a child's report."""

    title: str
    read: Callable[[dict[str, Any]], float]


COLUMNS = (
    Column("import", lambda run: float(run["import_s"])),
    Column("1st", lambda run: float(run["first_s"])),
    Column("served", lambda run: float(run["served_s"])),
    Column("capture", _stage("capture")),
    Column("guards", _stage("guards")),
    Column("lower", _lower),
    Column("codegen", _stage("inductor_codegen")),
    Column("probe", _stage("toolchain_probe")),
    Column("cc wall", _on_path("cpp_build")),
    Column("cc CPU", _compilers_cpu),
    Column("load", _on_path("module_load")),
    Column("run", lambda run: float(run["warm_s"])),
    Column("other", _other),
    Column("main CPU", lambda run: float(run["first_main_cpu_s"])),
)


def cold_run(
    workload_set: str, name: str, *, mode: str, quick: bool, limit_s: float
) -> dict[str, Any] | str:
    """One cold first call of `name` in a fresh process and cache folder: the child's report
    with ``sync`` and ``loadavg`` (at its start) added, or why there is none."""
    child = [f"{workload_set}:{name}", "--contender", "numpile", "--served"]
    if mode == "sync":
        child.append("--sync")
    if quick:
        child.append("--quick")
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="numpile-cold-split-") as cache_dir:
        report = run_fresh(child, env={"NUMPILE_CACHE_DIR": cache_dir}, limit_s=limit_s)
    if isinstance(report, str):
        return report
    return {**report, "sync": mode == "sync", "loadavg": load}


def _cell(seconds: float) -> str:
    return f"{seconds * 1e3:8.0f}" if abs(seconds) < 100.0 else f"{seconds:7.0f}s"


def _print_header() -> None:
    titles = "".join(f"{column.title:>9}" for column in COLUMNS)
    print(f"{'workload':18} {'mode':6}{titles} {'loadavg':>8}")


def _print_row(name: str, mode: str, runs: list[dict[str, Any]]) -> None:
    cells = "".join(
        f" {_cell(statistics.median(column.read(run) for run in runs))}" for column in COLUMNS
    )
    load = statistics.median(run["loadavg"] for run in runs)
    print(f"{name:18} {mode:6}{cells} {load:8.1f}")


def main(argv: list[str] | None = None) -> None:
    """Print the split of each workload's cold first call, sync and tiered, in ms."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cold_split")
    parser.add_argument("--set", dest="workload_set", choices=SETS[:-1], default="loops")
    parser.add_argument("--only", action="append", default=[], help="shell pattern")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--mode", action="append", choices=MODES, default=[])
    parser.add_argument("--quick", action="store_true", help="the sets' quick sizes")
    parser.add_argument("--limit", type=float, default=300.0, help="seconds per process")
    options = parser.parse_args(argv)
    modes = options.mode or list(MODES)
    workloads = find_workloads(options.workload_set, options.only, quick=options.quick)
    print(
        f"set {options.workload_set}; cold first calls (a fresh process and cache folder"
        f" each), median of {options.repeats}; ms; load {os.getloadavg()[0]:.1f}"
    )
    _print_header()
    totals: dict[str, list[float]] = {mode: [] for mode in modes}
    for workload in workloads:
        runs: dict[str, list[dict[str, Any]]] = {mode: [] for mode in modes}
        for repeat in range(options.repeats):
            # Alternated, so both modes see the same minutes of load.
            for mode in modes if repeat % 2 == 0 else modes[::-1]:
                report = cold_run(
                    options.workload_set,
                    workload.name,
                    mode=mode,
                    quick=options.quick,
                    limit_s=options.limit,
                )
                if isinstance(report, str):
                    print(f"{workload.name:18} {mode:6} {report.splitlines()[0]}")
                    continue
                runs[mode].append(report)
        for mode in modes:
            if runs[mode]:
                _print_row(workload.name, mode, runs[mode])
                totals[mode].append(statistics.median(run["served_s"] for run in runs[mode]))
    for mode, served in totals.items():
        if served:
            over = sum(s >= 1.0 for s in served)
            print(
                f"{mode}: median served {statistics.median(served) * 1e3:.0f} ms over"
                f" {len(served)} workloads, {over} at 1 s or more; load"
                f" {os.getloadavg()[0]:.1f}"
            )


if __name__ == "__main__":
    main()
