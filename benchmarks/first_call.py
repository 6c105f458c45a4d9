"""First calls, warm starts and warm calls in fresh processes: the one runner for both.

Each workload runs in a fresh interpreter, so the import and every first-use cost are in
the figure, as a user's first call pays them. A cold run gets an empty
``NUMPILE_CACHE_DIR``; the warm start after it reuses that folder (a new process, the
on-disk cache filled). Per workload the report gives the import, the cold first call and
its CPU time (the process's and that of the compilers it waited for), the cold second
call, the warm call (the median of calls once every background build ended), and the warm
start: the first call of a new process with the cache filled, alone and with
the import before it, and the CPU time of the warm start (its import and first call: on a
loaded machine the wall time is mostly waiting for a core). ``--stages`` adds the
compile stages ``numpile_runtime.compile_times()`` recorded during the first call
(capture, guards, lowering, codegen, the C build, module loads), how many first calls
imported sympy (about 0.3 s of CPU, counted inside the stage that first needs it) and the
runtime's event counters of the first call (``numpile_runtime.counters()``: compiler
processes, whether the module's build used the precompiled header, ``pch_use``).
``--timeline`` prints the cold first call of median time as a timeline: each timed stage
with its thread, start and end (``numpile_runtime.stage_spans()``: what the main thread
waited for, what the build queue ran beside it) and the main thread's CPU time::

    python -m benchmarks.first_call                  # the small kernels, default (tiered)
    python -m benchmarks.first_call --set loops      # issue 23's loop workloads
    python -m benchmarks.first_call --set science    # issue 24's science set
    python -m benchmarks.first_call --sync           # compiled code from the first call
    python -m benchmarks.first_call --set loops --only 'lu*' --repeats 5
    python -m benchmarks.first_call --set loops --sync --only lu_rows --timeline
    python -m benchmarks.first_call --set suite --only chain_sin_f32 --contender numexpr

Sets: ``small`` (seven small kernels), ``loops`` (``benchmarks.loops`` at its full trip
counts, ``--quick`` for the quick ones), ``science`` (``benchmarks.science`` at its full
sizes, ``--quick`` for the quick ones), ``nested`` (``benchmarks.nested_loop_programs``,
loops nested in bodies that run with NumPy, at n=100, ``--quick`` at n=30) and ``suite``
(``benchmarks.workloads``, the workloads of ``python -m benchmarks``, run by any
contender: ``--contender numpy``, ``numpile[eager]``, ``numexpr``, ``torch``). A figure is
the median over ``--repeats`` fresh processes. ``benchmarks.warm_start`` (the suite's
warm-start column) runs its children through this module (`run_fresh`, ``--child
suite:NAME``).

    >>> sorted(KERNELS)[:2]
    ['chain10', 'layernorm']
    >>> find_workloads("loops", ["crc*"], quick=True)[0].name
    'crc32'
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

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


@attrs.frozen
class FirstCallWorkload:
    """A function and its inputs, as the child process builds them.

    ``mutates`` marks a function that writes into its inputs: every call gets fresh ones.
    ``suite`` is the ``benchmarks.workloads`` workload it stands for (set ``suite``): a
    contender prepares that, and its result is not checked here (the suite checks it).
    """

    name: str
    fn: Callable[..., Any]
    inputs: Callable[[], tuple[Any, ...]]
    rtol: float = 1e-12
    atol: float = 1e-12
    mutates: bool = False
    suite: Any = None


SETS = ("small", "loops", "science", "nested", "suite")


def _small_workloads() -> list[FirstCallWorkload]:
    return [
        FirstCallWorkload(name, fn, lambda name=name: _inputs(name))  # type: ignore[misc]
        for name, fn in KERNELS.items()
    ]


def _loop_workloads(*, quick: bool) -> list[FirstCallWorkload]:
    from .loops import LOOP_WORKLOADS

    return [
        FirstCallWorkload(
            w.name,
            w.fn,
            lambda w=w: w.inputs(w.quick_trips if quick else w.full_trips),  # type: ignore[misc]
            rtol=1e-9,
            atol=1e-9,
        )
        for w in LOOP_WORKLOADS
    ]


def _science_workloads(*, quick: bool) -> list[FirstCallWorkload]:
    from .science import all_kernels

    return [
        FirstCallWorkload(
            k.name,
            k.fn,
            lambda k=k: k.make_inputs(k.sizes[0] if quick else k.sizes[1]),  # type: ignore[misc]
            rtol=k.rtol,
            atol=k.atol,
            mutates=k.mutates,
        )
        for k in all_kernels()
    ]


def _nested_workloads(*, quick: bool) -> list[FirstCallWorkload]:
    from . import nested_loop_programs
    from .unseen_loop_programs import PROGRAMS

    size = 30 if quick else 100
    return [
        FirstCallWorkload(
            name,
            entry.fn,
            lambda entry=entry: entry.inputs(_rng(), size),  # type: ignore[misc]
            rtol=1e-9,
            atol=1e-9,
            mutates=True,
        )
        for name, entry in PROGRAMS.items()
        if entry.fn.__module__ == nested_loop_programs.__name__
    ]


def _rng() -> Any:
    import numpy as np

    return np.random.default_rng(0)


def _suite_workloads(*, quick: bool) -> list[FirstCallWorkload]:
    from .workloads import WORKLOADS

    return [
        FirstCallWorkload(
            w.name,
            w.fn,
            lambda w=w: w.make_inputs(quick=quick),  # type: ignore[misc]
            suite=w,
        )
        for w in WORKLOADS
    ]


def find_workloads(
    workload_set: str, patterns: Sequence[str], *, quick: bool
) -> list[FirstCallWorkload]:
    """The workloads of one set whose names match any shell pattern (all for none)."""
    import fnmatch

    if workload_set == "suite":
        workloads = _suite_workloads(quick=quick)
    elif workload_set == "small":
        workloads = _small_workloads()
    elif workload_set == "loops":
        workloads = _loop_workloads(quick=quick)
    elif workload_set == "science":
        workloads = _science_workloads(quick=quick)
    elif workload_set == "nested":
        workloads = _nested_workloads(quick=quick)
    else:
        raise ValueError(f"unknown set {workload_set!r}; use one of {SETS}")
    if not patterns:
        return workloads
    return [w for w in workloads if any(fnmatch.fnmatchcase(w.name, p) for p in patterns)]


def _fresh(workload: FirstCallWorkload, args: tuple[Any, ...]) -> tuple[Any, ...]:
    if not workload.mutates:
        return args
    import copy

    return copy.deepcopy(args)


def _child(
    workload_set: str,
    name: str,
    *,
    contender: str,
    sync: bool,
    quick: bool,
    threads: int | None,
    served: bool = False,
) -> None:
    started = time.perf_counter()
    started_cpu = _cpu_s()
    # Imported here, after the process started, because their import is part of what is timed.
    import numpy as np

    if workload_set == "suite":
        from .contenders import Unavailable, contender_named

        chosen = contender_named(contender, threads=threads)
    elif contender != "numpile":
        raise SystemExit(f"--contender {contender} needs --set suite")
    else:
        import numpile
    import_s = time.perf_counter() - started
    import_cpu_s = _cpu_s() - started_cpu
    workload = next(w for w in find_workloads(workload_set, [name], quick=quick) if w.name == name)
    args = workload.inputs()
    checked = workload_set != "suite"
    if checked:
        want_args = _fresh(workload, args)
        want = workload.fn(*want_args)
    else:
        _prefault(args)
    # Compiled right before the first call: a backend that starts work when a function is
    # compiled (the inductor's compiler probe and precompiled header) gets no head start
    # from the eager run above; a program that does anything between the two gets one.
    start = time.perf_counter()
    if workload_set == "suite":
        prepared = chosen.prepare(workload.suite)
        if isinstance(prepared, Unavailable):
            raise SystemExit(f"{contender} unavailable: {prepared.reason}")
        fn = prepared
    else:
        fn = numpile.compile(workload.fn, options={"tiered": not sync})
    import_s += time.perf_counter() - start
    rt = sys.modules.get("numpile_runtime")
    if rt is not None:
        rt.reset_compile_times()
        rt.reset_counters()
        rt.record_stage_spans()
    first_args = call_args = _fresh(workload, args)
    sympy_before = "sympy" in sys.modules
    start_cpu = _cpu_s()
    start_compilers_cpu = _cpu_s(children=True)
    start_thread_cpu = time.thread_time()
    start = time.perf_counter()
    result = fn(*call_args)
    first = time.perf_counter() - start
    first_main_cpu_s = time.thread_time() - start_thread_cpu
    first_cpu_s = _cpu_s() - start_cpu
    first_compilers_cpu_s = _cpu_s(children=True) - start_compilers_cpu
    imports_sympy = not sympy_before and "sympy" in sys.modules
    stages = rt.compile_times() if rt is not None else {}
    events = rt.counters() if rt is not None else {}
    first_start = start
    if served and "numpile_inductor" in sys.modules:
        # Nothing runs beside the background builds until they end (`served_s`).
        from numpile_inductor import wait_for_background_builds

        wait_for_background_builds()
    call_args = _fresh(workload, args)
    start = time.perf_counter()
    fn(*call_args)
    second = time.perf_counter() - start
    # The warm call: once every background build ended, the compiled code's median time.
    if "numpile_inductor" in sys.modules:
        from numpile_inductor import wait_for_background_builds

        wait_for_background_builds()
    # Every compile's stages and compilers, the background builds' included (tiered: the
    # first call ran the function eagerly while they ran; see `served_s`).
    built_stages = rt.compile_times() if rt is not None else {}
    built_compilers_cpu_s = _cpu_s(children=True) - start_compilers_cpu
    timeline = []
    if rt is not None:
        rt.record_stage_spans(False)
        timeline = [
            [span.stage, span.thread, span.start - first_start, span.end - first_start]
            for span in sorted(rt.stage_spans(), key=lambda span: span.start)
        ]
    warm: list[float] = []
    deadline = time.perf_counter() + 1.0
    while len(warm) < 3 or (len(warm) < 30 and time.perf_counter() < deadline):
        call_args = _fresh(workload, args)
        start = time.perf_counter()
        fn(*call_args)
        warm.append(time.perf_counter() - start)
    # The first call's result and its in-place writes, against eager's.
    if checked:
        pairs = zip(_flat((result, first_args)), _flat((want, want_args)), strict=True)
        for got, expected in pairs:
            if isinstance(expected, np.ndarray | np.generic | int | float | complex):
                np.testing.assert_allclose(
                    got, np.asarray(expected), rtol=workload.rtol, atol=workload.atol
                )
    report = {
        "import_s": import_s,
        "import_cpu_s": import_cpu_s,
        "first_s": first,
        "first_cpu_s": first_cpu_s,
        "first_main_cpu_s": first_main_cpu_s,
        "first_compilers_cpu_s": first_compilers_cpu_s,
        "timeline": timeline,
        "served_s": _served_s(first, timeline),
        "built_stages": built_stages,
        "built_compilers_cpu_s": built_compilers_cpu_s,
        "second_s": second,
        "warm_s": statistics.median(warm),
        "stages": stages,
        "events": events,
        "imports_sympy": imports_sympy,
    }
    print(json.dumps(report))


def _served_s(first_s: float, timeline: list[list[Any]]) -> float:
    # Seconds from the first call until compiled code serves: the first call's end, or the
    # end of the last graph build that ran beside or after it (tiered compilation's
    # background builds; the build queue's idle work, a precompiled header or the call
    # gate, serves no call and is not counted).
    ends = [end for stage, thread, _, end in timeline if stage == "inductor_build"]
    return float(max([first_s, *ends]))


def _cpu_s(*, children: bool = False) -> float:
    # CPU seconds of the whole process, every thread (or, with `children`, of its child
    # processes that ended: the compilers): on a loaded machine the wall time is mostly
    # waiting for a core, the CPU time is the work.
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _prefault(args: tuple[object, ...]) -> None:
    # A fresh process's first touch of memory it never used is slow on a VM (3-12 us per
    # 4 KiB page measured here: the host backs the page), and any first call pays it for
    # its outputs, NumPy's included. Touching and freeing four times the inputs' bytes first
    # lets the figure measure the contender's start-up rather than the hypervisor (the
    # suite's warm-start column does; the sets of this module keep the page touches).
    import numpy as np

    total = sum(int(getattr(arg, "nbytes", 0)) for arg in args)
    scratch = np.ones(max(1, 4 * total // 8))
    del scratch


def _flat(value: Any) -> list[Any]:
    if isinstance(value, tuple | list):
        return [item for part in value for item in _flat(part)]
    return [value]


def run_fresh(
    child: Sequence[str], *, env: dict[str, str] | None = None, limit_s: float
) -> dict[str, Any] | str:
    """Run ``python -m benchmarks.first_call --child ...`` in a fresh interpreter; its JSON
    report, or why it gave none (a timeout, an exit status).

    The child may write Python bytecode caches (``PYTHONDONTWRITEBYTECODE`` is dropped from
    its environment): a user's second process finds them, and without them every import
    compiles from source and the figure measures the sandbox, not the contender.

    >>> run_fresh(["suite:tiny_call_f64", "--contender", "numpy", "--quick"], limit_s=300)[
    ...     "first_s"
    ... ] > 0
    True
    """
    command = [sys.executable, "-m", "benchmarks.first_call", "--child", *child]
    environment = {**os.environ, **(env or {})}
    environment.pop("PYTHONDONTWRITEBYTECODE", None)
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            cwd=_REPO_ROOT,
            env=environment,
            check=False,
            timeout=limit_s,
        )
    except subprocess.TimeoutExpired:
        return f"timed out after {limit_s:.0f} s"
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["no output"]
        return f"child exited {done.returncode}: {tail[0][:200]}\n{done.stderr[-2000:]}"
    lines = done.stdout.strip().splitlines()
    if not lines:
        return "child printed nothing"
    report: dict[str, Any] = json.loads(lines[-1])
    return report


def _run(
    workload_set: str,
    name: str,
    cache_dir: str,
    *,
    contender: str,
    sync: bool,
    quick: bool,
    threads: int | None,
    limit_s: float,
) -> dict[str, Any] | None:
    child = [f"{workload_set}:{name}", "--contender", contender]
    if threads is not None:
        child += ["--threads", str(threads)]
    if sync:
        child.append("--sync")
    if quick:
        child.append("--quick")
    report = run_fresh(child, env={"NUMPILE_CACHE_DIR": cache_dir}, limit_s=limit_s)
    if isinstance(report, str):
        if report.startswith("timed out"):
            return None
        raise SystemExit(f"{name}: child failed: {report}")
    return report


def _median(runs: list[dict[str, Any]], key: str) -> float:
    return float(statistics.median(run[key] for run in runs))


def _stage_medians(runs: list[dict[str, Any]]) -> dict[str, float]:
    names = dict.fromkeys(stage for run in runs for stage in run["stages"])
    return {n: statistics.median(run["stages"].get(n, 0.0) for run in runs) for n in names}


def _event_medians(runs: list[dict[str, Any]]) -> dict[str, float]:
    names = dict.fromkeys(event for run in runs for event in run.get("events", {}))
    return {n: statistics.median(run["events"].get(n, 0) for run in runs) for n in names}


def _sympy_note(runs: list[dict[str, Any]]) -> str:
    # `import sympy` is most of a warm start that needs it (about 0.3 s): say how many first
    # calls paid it, so a stage's figure can be read with or without it.
    paid = sum(bool(run.get("imports_sympy")) for run in runs)
    return f"; sympy imported by {paid} of {len(runs)} first calls"


def _print_timeline(runs: list[dict[str, Any]]) -> None:
    # The cold run of median first-call time: its main thread's CPU time, and each timed
    # stage with its thread, in ms from the call (stages nest: cpp_build is inside
    # inductor_build; the build queue's run beside the main thread's).
    ordered = sorted(runs, key=lambda run: run["first_s"])
    run = ordered[len(ordered) // 2]
    print(
        f"   cold timeline (the median run, {run['first_s'] * 1e3:.0f} ms, main thread's CPU"
        f" {run['first_main_cpu_s'] * 1e3:.0f} ms; ms from the call):"
    )
    for stage, thread, start, end in run["timeline"]:
        print(f"     {start * 1e3:7.0f} {end * 1e3:7.0f}  {stage:22} {thread}")


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:8.1f}ms" if seconds < 10.0 else f"{seconds:8.1f}s "


def main(argv: list[str] | None = None) -> None:
    """Run each workload cold then warm in fresh processes; print one line per workload."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.first_call")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    # The child waits for the background builds right after its first call (cold_split).
    parser.add_argument("--served", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--set", dest="workload_set", choices=SETS, default="small")
    parser.add_argument("--sync", action="store_true", help="options={'tiered': False}")
    parser.add_argument("--quick", action="store_true", help="the sets' quick sizes")
    parser.add_argument("--only", action="append", default=[], help="shell pattern")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--limit", type=float, default=300.0, help="seconds per process")
    parser.add_argument("--stages", action="store_true", help="print the compile stages")
    parser.add_argument(
        "--timeline", action="store_true", help="print the median cold first call's stages"
    )
    parser.add_argument(
        "--contender", default="numpile", help="with --set suite: numpy, numpile[BACKEND], ..."
    )
    parser.add_argument("--threads", type=int, default=None, help="the contender's threads")
    options = parser.parse_args(argv)
    if options.child:
        workload_set, name = options.child.split(":", 1)
        _child(
            workload_set,
            name,
            contender=options.contender,
            sync=options.sync,
            quick=options.quick,
            threads=options.threads,
            served=options.served,
        )
        return
    workloads = find_workloads(options.workload_set, options.only, quick=options.quick)
    colds: list[float] = []
    cold_cpus: list[float] = []
    warm_firsts: list[float] = []
    warm_cpus: list[float] = []
    import_cpus: list[float] = []
    starts: list[float] = []
    mode = "sync" if options.sync else "default"
    print(
        f"set {options.workload_set}; contender {options.contender}; mode {mode};"
        f" load {os.getloadavg()[0]:.2f};"
        f" median of {options.repeats} processes"
    )
    print(
        f"{'workload':22} {'import':>10} {'cold 1st':>10} {'cold CPU':>10} {'cold 2nd':>10}"
        f" {'warm call':>10} {'warm 1st':>10} {'+import':>10}"
    )
    for workload in workloads:
        cold_runs: list[dict[str, Any]] = []
        warm_runs: list[dict[str, Any]] = []
        for _ in range(options.repeats):
            with tempfile.TemporaryDirectory(prefix="numpile-first-call-") as cache_dir:
                run = functools.partial(
                    _run,
                    options.workload_set,
                    workload.name,
                    cache_dir,
                    contender=options.contender,
                    quick=options.quick,
                    threads=options.threads,
                    limit_s=options.limit,
                )
                cold = run(sync=options.sync)
                if cold is None:
                    break
                cold_runs.append(cold)
                warm = run(sync=options.sync)
                if warm is not None:
                    warm_runs.append(warm)
        if not cold_runs or not warm_runs:
            print(f"{workload.name:22} timed out after {options.limit:.0f} s")
            continue
        warm_cpus.append(_median(warm_runs, "first_cpu_s"))
        import_cpus.append(_median(warm_runs, "import_cpu_s"))
        colds.append(_median(cold_runs, "first_s"))
        warm_firsts.append(_median(warm_runs, "first_s"))
        start_s = statistics.median(run["import_s"] + run["first_s"] for run in warm_runs)
        starts.append(start_s)
        cold_cpus.append(
            statistics.median(r["first_cpu_s"] + r["first_compilers_cpu_s"] for r in cold_runs)
        )
        print(
            f"{workload.name:22} {_ms(_median(cold_runs, 'import_s'))} {_ms(colds[-1])}"
            f" {_ms(cold_cpus[-1])} {_ms(_median(cold_runs, 'second_s'))}"
            f" {_ms(_median(cold_runs, 'warm_s'))} {_ms(warm_firsts[-1])} {_ms(start_s)}"
        )
        if options.stages:
            stages = _stage_medians(cold_runs)
            listed = ", ".join(f"{k} {v * 1e3:.0f}" for k, v in stages.items())
            print(f"   cold stages: {listed}{_sympy_note(cold_runs)}")
            stages = _stage_medians(warm_runs)
            listed = ", ".join(f"{k} {v * 1e3:.0f}" for k, v in stages.items())
            print(f"   warm stages: {listed}{_sympy_note(warm_runs)}")
            events = _event_medians(cold_runs)
            print("   cold events: " + ", ".join(f"{k} {v:g}" for k, v in events.items()))
        if options.timeline:
            _print_timeline(cold_runs)
    if colds:
        print(
            f"median over {len(colds)} workloads: cold first call"
            f" {statistics.median(colds) * 1e3:.1f} ms"
            f" (CPU {statistics.median(cold_cpus) * 1e3:.1f} ms); warm start: first call"
            f" {statistics.median(warm_firsts) * 1e3:.1f} ms, with the import"
            f" {statistics.median(starts) * 1e3:.1f} ms; load"
            f" {os.getloadavg()[0]:.2f}"
        )
        print(
            f"CPU time of the warm start: import {statistics.median(import_cpus) * 1e3:.1f} ms,"
            f" first call {statistics.median(warm_cpus) * 1e3:.1f} ms"
        )


if __name__ == "__main__":
    main()
