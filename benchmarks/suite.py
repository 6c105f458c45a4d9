"""One run of the suite: machine facts, then every workload under every contender.

``run_suite`` returns a ``SuiteResult`` holding plain data only (the JSON file is its
``attrs.asdict``). Ratios are NumPy's time over the contender's time from this same run, so
a ratio above 1 means faster than NumPy.

    >>> options = SuiteOptions(quick=True, patterns=["tiny_call_f64"], threads=None,
    ...                        torch=False, stream=False, warm_start=False)
    >>> result = run_suite(options)
    >>> result.measurements[0].contender
    'numpy'
"""

from __future__ import annotations

import fnmatch
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

import numpile_runtime

from .autograd import AutogradResult, autograd_selected, run_autograd
from .contenders import (
    Contender,
    NumexprContender,
    NumpileContender,
    NumpyContender,
    TorchContender,
    Unavailable,
)
from .machine import MachineFacts, StreamResult, collect_facts, measure_stream, stream_ceiling
from .timer import Timing, measure_interleaved
from .warm_start import WarmStart, measure_warm_start
from .workloads import (
    STARTUP_WORKLOAD,
    Array,
    Workload,
    find_workloads,
    min_bytes,
    ten_op_chain,
)

# numpile's kernels and torch share one libgomp (whichever loads first; torch's when torch is
# imported first), and libgomp reads its wait policy once, at load. Spinning idle threads
# starve the BLAS calls and kernels that follow on 2 cores (a 0.07 ms epilogue kernel took
# 6-7 ms after `import torch`), so the suite fixes the policy numpile sets for itself before
# either loads (numpile_runtime's OpenMP defaults); a value in the environment wins.
numpile_runtime.apply_openmp_defaults()

# A fresh process per warm start costs about half a second; --quick keeps its 30 s budget.
_QUICK_WARM_STARTS = 3


@attrs.frozen
class SuiteOptions:
    """What to run: sizes, which workloads, threads, and the optional parts.

    >>> SuiteOptions(quick=True, patterns=None, threads=2, torch=False).stream
    True
    """

    quick: bool
    patterns: list[str] | None
    threads: int | None
    torch: bool
    stream: bool = True
    warm_start: bool = True
    numpile_backend: str = "inductor"


@attrs.frozen
class Measurement:
    """One workload under one contender; ``status`` is ``ok``, ``n/a`` or ``error``.

    Times are seconds per call. ``compile_s`` is the first call minus the steady-state call,
    for compiling contenders. ``check`` compares the result with NumPy's (dtype, shape,
    values within a tolerance for the dtype).

        >>> Measurement(workload="w", contender="numexpr", status="n/a", reason="absent").size
        ''
    """

    workload: str
    contender: str
    status: str
    reason: str = ""
    size: str = ""
    bound: str = ""
    first_s: float | None = None
    median_s: float | None = None
    min_s: float | None = None
    repeats: int = 0
    ratio_vs_numpy: float | None = None
    gbps: float | None = None
    percent_of_stream: float | None = None
    gflops: float | None = None
    compile_s: float | None = None
    check: str = ""
    warm_start: WarmStart | None = None
    warm_start_note: str = ""


@attrs.frozen
class SuiteResult:
    """Everything one run measured; ``attrs.asdict`` of it is the JSON file.

    >>> SuiteResult.__name__
    'SuiteResult'
    """

    facts: MachineFacts
    versions: dict[str, str]
    options: SuiteOptions
    stream: list[StreamResult]
    stream_ceiling_gbps: float | None
    measurements: list[Measurement]
    startup_compile_s: dict[str, float | str] = attrs.Factory(dict)
    load_average_end: tuple[float, float, float] = (0.0, 0.0, 0.0)
    autograd: AutogradResult | None = None
    dynamic: DynamicShapes | None = None


@attrs.frozen
class DynamicShapes:
    """One graph compiled for symbolic sizes against the same graph compiled for its sizes.

    The graph is ``chain10``'s ten ops on float32 vectors; the dynamic module takes
    ``float32[s0]`` inputs and serves every length. Times are medians of interleaved calls;
    ``dynamic_vs_static`` is static time / dynamic time (1.0: no cost for the symbolic sizes).

        >>> DynamicShapes(1, 2.0, 2.0, 4.0, 0.5, 1.0, (1,), "ok").dynamic_vs_static
        1.0
    """

    elements: int
    static_s: float
    dynamic_s: float
    numpy_s: float
    static_min_s: float
    dynamic_min_s: float
    sizes_checked: tuple[int, ...]
    check: str

    @property
    def dynamic_vs_static(self) -> float:
        return self.static_s / self.dynamic_s


DYNAMIC = "dynamic_kernel"


def dynamic_selected(patterns: list[str] | None) -> bool:
    """Whether ``--only`` patterns select the dynamic-shape comparison (all do when none).

    >>> dynamic_selected(["dynamic_k*"]), dynamic_selected(["chain10"]), dynamic_selected(None)
    (True, False, True)
    """
    if not patterns:
        return True
    return any(fnmatch.fnmatchcase(DYNAMIC, p) or DYNAMIC.startswith(p) for p in patterns)


def _chain10_graph(metas: list[Any]) -> Any:
    # ten_op_chain as a graph: (a*b + c) * (a - b) / (c*c + 1.0) - sqrt(abs(a))
    from numpile_capture import Graph, get_op

    graph = Graph()
    a, b, c = (graph.placeholder(name, meta) for name, meta in zip("abc", metas, strict=True))

    def op(name: str, *args: Any) -> Any:
        return graph.call(get_op(name), *args)

    left = op("multiply", op("add", op("multiply", a, b), c), op("subtract", a, b))
    right = op("add", op("multiply", c, c), 1.0)
    graph.output = op("subtract", op("divide", left, right), op("sqrt", op("absolute", a)))
    return graph


def measure_dynamic(*, quick: bool) -> DynamicShapes | str:
    """Time chain10 compiled for symbolic sizes against static sizes at 1M float32 elements.

    Returns the reason instead when the inductor cannot run here.
    """
    try:
        import sympy

        from numpile_capture import ArrayMeta, meta_of
        from numpile_inductor import compile_graph
    except ImportError as error:
        return f"numpile is not installed ({error})"
    n = 65_536 if quick else 1_000_000
    rng = np.random.default_rng(7)
    args = tuple(rng.standard_normal(n, dtype=np.float32) for _ in range(3))
    s0 = sympy.Symbol("s0", integer=True, positive=True)
    symbolic = ArrayMeta((s0,), np.dtype("float32"), (sympy.Integer(1),))
    try:
        static = compile_graph(_chain10_graph([meta_of(x) for x in args])).fn
        dynamic = compile_graph(_chain10_graph([symbolic] * 3)).fn
    except Exception as error:  # a compiler failure is a result, not a crash
        return f"compile_graph raised {error!r}"
    sizes = (3, 1000, n + 17)
    check = "ok"
    for size in sizes:
        inputs = tuple(rng.standard_normal(size, dtype=np.float32) for _ in range(3))
        if not np.array_equal(dynamic(*inputs), ten_op_chain(*inputs)):
            check = f"differs from NumPy at {size} elements"
    timings = measure_interleaved(
        {"numpy": ten_op_chain, "static": static, "dynamic": dynamic},
        args,
        budget_s=0.2 if quick else 3.0,
        min_repeats=5 if quick else 31,
    )
    median: dict[str, float] = {}
    minimum: dict[str, float] = {}
    for name, timing in timings.items():
        if isinstance(timing, Exception):
            return f"{name} raised {timing!r}"
        median[name], minimum[name] = timing.median_s, timing.min_s
    return DynamicShapes(
        elements=n,
        static_s=median["static"],
        dynamic_s=median["dynamic"],
        numpy_s=median["numpy"],
        static_min_s=minimum["static"],
        dynamic_min_s=minimum["dynamic"],
        sizes_checked=sizes,
        check=check,
    )


def format_ms(seconds: float) -> str:
    """Milliseconds with three decimals, for progress lines.

    >>> format_ms(0.0015)
    '1.500 ms/call'
    """
    return f"{seconds * 1e3:.3f} ms/call"


def _progress(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def _describe_inputs(args: tuple[Array, ...]) -> str:
    shapes = ["x".join(str(d) for d in a.shape) or "0-d" for a in args]
    body = f"{len(shapes)} x [{shapes[0]}]"
    if len(set(shapes)) > 1:
        body = " ".join(f"[{shape}]" for shape in shapes)
    dtypes = list(dict.fromkeys(str(a.dtype) for a in args))
    return f"{'/'.join(dtypes)} {body}"


def _tolerance(dtype: np.dtype[Any]) -> tuple[float, float]:
    if dtype.itemsize <= 4:
        return 2e-4, 1e-5
    return 1e-9, 1e-12


def compare_results(got: Any, want: Any) -> str:
    """``"ok"`` when ``got`` matches NumPy's ``want`` in type, dtype, shape and values.

    >>> compare_results(np.float32([1, 2]), np.float32([1, 2]))
    'ok'
    >>> compare_results(np.float64([1, 2]), np.float32([1, 2]))
    'dtype float64 != float32'
    """
    if not isinstance(got, np.ndarray):
        return f"type {type(got).__name__} != ndarray"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} != {want.dtype}"
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}"
    rtol, atol = _tolerance(want.dtype)
    if np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
        return "ok"
    scale = np.maximum(np.abs(want), atol)
    worst = float(np.nanmax(np.abs(got.astype(np.float64) - want) / scale))
    return f"values differ (max rel err {worst:.1e})"


def _check(fn: Callable[..., Any], args: tuple[Array, ...], reference: Array) -> str:
    try:
        return compare_results(fn(*args), reference)
    except Exception as error:  # reported in the check column
        return f"raised {type(error).__name__}"


def _measure_workload(
    workload: Workload,
    contenders: list[Contender],
    *,
    quick: bool,
    ceiling: float | None,
) -> list[Measurement]:
    args = workload.make_inputs(quick=quick)
    reference = workload.fn(*args)
    size = _describe_inputs(args)
    moved = min_bytes(args, reference)
    prepared = {c.name: c.prepare(workload) for c in contenders}
    compilers = {c.name for c in contenders if c.compiles}
    runnable = {name: fn for name, fn in prepared.items() if not isinstance(fn, Unavailable)}
    timings = measure_interleaved(
        runnable,
        args,
        budget_s=0.05 if quick else 1.0,
        min_repeats=3 if quick else 7,
        max_repeats=20 if quick else 100,
    )
    numpy_timing = timings.get("numpy")
    numpy_median = numpy_timing.median_s if isinstance(numpy_timing, Timing) else None
    flops = workload.flops(args) if workload.flops is not None else None
    rows: list[Measurement] = []
    for name, fn in prepared.items():
        if isinstance(fn, Unavailable):
            rows.append(Measurement(workload.name, name, "n/a", reason=fn.reason, size=size))
            continue
        timing = timings[name]
        if isinstance(timing, Exception):
            reason = f"{type(timing).__name__}: {timing}"[:300]
            _progress(f"{workload.name}: {name} failed: {reason}")
            rows.append(Measurement(workload.name, name, "error", reason=reason, size=size))
            continue
        gbps = moved / timing.median_s / 1e9 if workload.bound == "memory" else None
        rows.append(
            Measurement(
                workload=workload.name,
                contender=name,
                status="ok",
                size=size,
                bound=workload.bound,
                first_s=timing.first_s,
                median_s=timing.median_s,
                min_s=timing.min_s,
                repeats=timing.repeats,
                ratio_vs_numpy=numpy_median / timing.median_s if numpy_median else None,
                gbps=gbps,
                percent_of_stream=100 * gbps / ceiling if gbps and ceiling else None,
                gflops=flops / timing.median_s / 1e9 if flops else None,
                compile_s=timing.first_call_excess_s if name in compilers else None,
                check="ref" if name == "numpy" else _check(fn, args, reference),
            )
        )
        _progress(f"{workload.name}: {name} {format_ms(timing.median_s)}")
    return rows


def _add_warm_starts(rows: list[Measurement], options: SuiteOptions) -> list[Measurement]:
    done: list[Measurement] = []
    started: dict[str, int] = {}
    for row in rows:
        if row.status != "ok" or row.compile_s is None:
            done.append(row)
            continue
        if options.quick and started.get(row.contender, 0) >= _QUICK_WARM_STARTS:
            done.append(attrs.evolve(row, warm_start_note="skipped (--quick)"))
            continue
        started[row.contender] = started.get(row.contender, 0) + 1
        _progress(f"{row.workload}: {row.contender} warm start in a fresh process")
        outcome = measure_warm_start(
            row.workload, row.contender, quick=options.quick, threads=options.threads
        )
        if isinstance(outcome, str):
            done.append(attrs.evolve(row, warm_start_note=outcome))
        else:
            done.append(attrs.evolve(row, warm_start=outcome))
    return done


def _time_startup(contender: Contender) -> float | str:
    # The first compile in a process pays one-time imports and initialization; measured on a
    # one-op graph so that the workloads' cold compiles are per graph.
    fn = contender.prepare(STARTUP_WORKLOAD)
    if isinstance(fn, Unavailable):
        return fn.reason
    args = STARTUP_WORKLOAD.make_inputs(quick=True)
    start = time.perf_counter()
    try:
        fn(*args)
    except Exception as error:  # reported, the workloads still run
        return f"{type(error).__name__}: {error}"[:300]
    return time.perf_counter() - start


def _stream(options: SuiteOptions, *, threads: int, usable: int, when: str) -> list[StreamResult]:
    if not options.stream:
        return []
    _progress(f"STREAM triad ({when})")
    return measure_stream(
        thread_counts=sorted({1, 2, threads, usable}),
        elements=4_000_000 if options.quick else 20_000_000,
        reps=6 if options.quick else 11,
        when=when,
    )


def _rescale(row: Measurement, ceiling: float) -> Measurement:
    if row.gbps is None:
        return row
    return attrs.evolve(row, percent_of_stream=100 * row.gbps / ceiling)


def _effective_threads(requested: int | None) -> int:
    if requested is not None:
        return requested
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def run_suite(options: SuiteOptions) -> SuiteResult:
    """Measure the machine, then every selected workload under every contender.

    The caller sets thread and cache environment variables before NumPy is imported (the
    command line does); this function only reads them.
    """
    workloads = find_workloads(options.patterns)
    threads = _effective_threads(options.threads)
    facts = collect_facts(threads=threads)
    # Without workloads (``--only autograd``) STREAM and start-up compiles have nothing to serve.
    if not workloads:
        options = attrs.evolve(options, stream=False)
    stream = _stream(options, threads=threads, usable=facts.usable_cores, when="start")
    ceiling = stream_ceiling(stream, threads=threads)
    contenders: list[Contender] = [
        NumpyContender(),
        NumpileContender(backend=options.numpile_backend),
        NumexprContender(threads=options.threads),
        TorchContender(enabled=options.torch, threads=options.threads),
    ]
    startup: dict[str, float | str] = {}
    for contender in contenders if workloads else []:
        if contender.compiles:
            _progress(f"{contender.name}: first compile in this process")
            startup[contender.name] = _time_startup(contender)
    measurements: list[Measurement] = []
    for workload in workloads:
        _progress(f"{workload.name}")
        measurements += _measure_workload(
            workload, contenders, quick=options.quick, ceiling=ceiling
        )
    if options.warm_start:
        measurements = _add_warm_starts(measurements, options)
    dynamic = None
    if dynamic_selected(options.patterns):
        _progress(DYNAMIC)
        outcome = measure_dynamic(quick=options.quick)
        if isinstance(outcome, str):
            _progress(f"{DYNAMIC}: n/a ({outcome})")
        else:
            dynamic = outcome
    autograd = None
    if autograd_selected(options.patterns):
        autograd = run_autograd(quick=options.quick)
    if options.stream and not options.quick:
        stream += _stream(options, threads=threads, usable=facts.usable_cores, when="end")
        best = stream_ceiling(stream, threads=threads)
        if best is not None and best != ceiling:
            measurements = [_rescale(m, best) for m in measurements]
            ceiling = best
    return SuiteResult(
        facts=facts,
        versions={c.name: c.version() for c in contenders},
        options=options,
        stream=stream,
        stream_ceiling_gbps=ceiling,
        measurements=measurements,
        startup_compile_s=startup,
        load_average_end=os.getloadavg(),
        autograd=autograd,
        dynamic=dynamic,
    )
