"""The report: readable tables on stdout and a JSON file with every figure.

Tables: machine facts and STREAM; one block per workload with a line per contender; a
ratio summary (NumPy time / contender time, > 1 is faster); compile costs (cold compile,
warm start), the per-call overhead on tiny arrays, and the autograd section (bytes saved
between forward and backward, the training step) when it ran.

    >>> format_seconds(0.0123)
    '12.30 ms'
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import attrs

from .autograd import render_autograd
from .suite import Measurement, SuiteResult

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def format_seconds(seconds: float | None) -> str:
    """A time with a unit that keeps 3-4 significant digits (``n/a`` for None).

    >>> format_seconds(2.5e-6)
    '2.50 us'
    """
    if seconds is None:
        return "n/a"
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    if seconds >= 1e-6:
        return f"{seconds * 1e6:.2f} us"
    return f"{seconds * 1e9:.0f} ns"


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


def _note(text: str) -> str:
    # Table cells stay short; the JSON keeps the whole text.
    if not text:
        return "-"
    return text if len(text) <= 60 else text[:57] + "..."


def _rate(row: Measurement) -> str:
    if row.gbps is not None:
        return f"{row.gbps:.1f} GB/s"
    if row.gflops is not None:
        return f"{row.gflops:.1f} GFLOP/s"
    return "-"


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    return "\n".join(lines)


def _machine_section(result: SuiteResult) -> str:
    facts = result.facts
    load = ", ".join(f"{x:.2f}" for x in facts.load_average)
    versions = ", ".join(f"{name} {version}" for name, version in result.versions.items())
    lines = [
        "== machine ==",
        f"host {facts.host}; CPU {facts.cpu_model}; {facts.logical_cores} logical cores "
        f"({facts.usable_cores} usable); L3 {facts.l3_cache}",
        f"run with {facts.threads} thread(s); load average at start {load}",
        f"Python {facts.python}; {versions}; {facts.compiler}",
        f"started {facts.started_at}; quick={result.options.quick}",
    ]
    if result.stream:
        rows = [
            [
                s.when,
                s.method,
                str(s.threads),
                f"{s.elements:,}",
                f"{s.best_gbps:.1f}",
                f"{s.median_gbps:.1f}",
            ]
            for s in result.stream
        ]
        lines += ["", "STREAM triad a = b + s*c (float64, 24 bytes per element counted):"]
        lines.append(
            _table(["when", "method", "threads", "elements", "best GB/s", "median GB/s"], rows)
        )
    return "\n".join(lines)


def _workload_section(result: SuiteResult) -> str:
    ceiling = result.stream_ceiling_gbps
    title = "== workloads (time per call = median after warm-up"
    title += f"; %STREAM of {ceiling:.1f} GB/s) ==" if ceiling else ") =="
    headers = [
        "workload",
        "inputs",
        "contender",
        "time/call",
        "vs numpy",
        "rate",
        "%STREAM",
        "compile",
        "check",
    ]
    rows: list[list[str]] = []
    previous = ""
    for row in result.measurements:
        first = row.workload != previous
        previous = row.workload
        name = row.workload if first else ""
        size = row.size if first else ""
        if row.status != "ok":
            rows.append([name, size, row.contender, row.status, "", "", "", "", _note(row.reason)])
            continue
        percent = f"{row.percent_of_stream:.0f}%" if row.percent_of_stream else "-"
        compile_s = format_seconds(row.compile_s) if row.compile_s is not None else "-"
        rows.append(
            [
                name,
                size,
                row.contender,
                format_seconds(row.median_s),
                _ratio(row.ratio_vs_numpy),
                _rate(row),
                percent,
                compile_s,
                row.check,
            ]
        )
    return title + "\n" + _table(headers, rows)


def _summary_section(result: SuiteResult) -> str:
    names = list(dict.fromkeys(m.workload for m in result.measurements))
    by_key = {(m.workload, m.contender): m for m in result.measurements}
    contenders = dict.fromkeys(m.contender for m in result.measurements)
    others = [c for c in contenders if c != "numpy"]
    rows = []
    for name in names:
        cells = [name, format_seconds(getattr(by_key.get((name, "numpy")), "median_s", None))]
        for contender in others:
            found = by_key.get((name, contender))
            cells.append(_ratio(found.ratio_vs_numpy if found else None))
        rows.append(cells)
    title = "== speed-up vs NumPy (NumPy time / contender time; > 1 is faster) =="
    return title + "\n" + _table(["workload", "numpy", *others], rows)


def _compile_section(result: SuiteResult) -> str:
    rows = []
    for row in result.measurements:
        if row.status != "ok" or row.compile_s is None:
            continue
        warm = row.warm_start
        rows.append(
            [
                row.workload,
                row.contender,
                format_seconds(row.compile_s),
                format_seconds(warm.first_call_s) if warm else _note(row.warm_start_note),
                format_seconds(warm.second_call_s) if warm else "-",
                format_seconds(warm.import_s) if warm else "-",
                format_seconds(row.median_s),
            ]
        )
    title = "== compile cost (cold: first call - steady call, fresh cache; warm: new process) =="
    for name, startup in result.startup_compile_s.items():
        shown = format_seconds(startup) if isinstance(startup, float) else f"n/a ({startup})"
        title += f"\n{name}: first compile in the process (one-time start-up, 1-op graph): {shown}"
    if not rows:
        return title + "\nn/a: no compiling contender ran (numpile inductor absent, torch off)"
    headers = [
        "workload",
        "contender",
        "cold compile",
        "warm 1st call",
        "warm 2nd call",
        "warm import",
        "steady call",
    ]
    return title + "\n" + _table(headers, rows)


def _overhead_section(result: SuiteResult) -> str:
    tiny = [
        m for m in result.measurements if m.bound == "overhead" or m.workload.startswith("tiny")
    ]
    numpy_row = next((m for m in tiny if m.contender == "numpy" and m.status == "ok"), None)
    if numpy_row is None or numpy_row.median_s is None:
        return ""
    rows = []
    for row in tiny:
        if row.status != "ok" or row.median_s is None:
            rows.append([row.workload, row.contender, "n/a", "", _note(row.reason)])
            continue
        extra = row.median_s - numpy_row.median_s
        rows.append(
            [
                row.workload,
                row.contender,
                format_seconds(row.median_s),
                f"{extra * 1e6:+.2f} us",
                _ratio(row.ratio_vs_numpy),
            ]
        )
    title = "== per-call overhead (1-element arrays, 4 inputs; compiled call vs direct NumPy) =="
    headers = ["workload", "contender", "time/call", "vs numpy", "ratio / note"]
    return title + "\n" + _table(headers, rows)


def _dynamic_section(result: SuiteResult) -> str:
    # One graph compiled for symbolic sizes against the same graph for its static sizes.
    row = result.dynamic
    if row is None:
        return ""
    title = (
        f"== dynamic shapes: chain10 on float32[s0] vs float32[{row.elements:,}] "
        "(one module serves every length) =="
    )
    headers = ["compiled for", "time/call (median)", "min", "vs numpy", "vs static", "check"]
    rows = [
        [
            "static sizes",
            format_seconds(row.static_s),
            format_seconds(row.static_min_s),
            _ratio(row.numpy_s / row.static_s),
            "1.00x",
            "ref",
        ],
        [
            "symbolic s0",
            format_seconds(row.dynamic_s),
            format_seconds(row.dynamic_min_s),
            _ratio(row.numpy_s / row.dynamic_s),
            _ratio(row.dynamic_vs_static),
            f"{row.check} (sizes {', '.join(str(n) for n in row.sizes_checked)})",
        ],
    ]
    return title + "\n" + _table(headers, rows)


def _autograd_section(result: SuiteResult) -> str:
    # Saved bytes per partitioner and the training step, as benchmarks/autograd.py measured.
    if result.autograd is None:
        return ""
    return render_autograd(result.autograd).rstrip("\n")


def render(result: SuiteResult) -> str:
    """The whole report as text: machine, workloads, speed-ups, compile cost, overhead, autograd.

    >>> print(render(run_suite(options)))  # doctest: +SKIP
    == machine ==
    host vm; CPU AMD EPYC; 2 logical cores (2 usable); L3 32768K
    ...
    """
    sections = [_machine_section(result)]
    if result.measurements:  # `--only autograd` runs no workload
        sections += [
            _workload_section(result),
            _summary_section(result),
            _compile_section(result),
            _overhead_section(result),
        ]
    sections.append(_dynamic_section(result))
    sections.append(_autograd_section(result))
    end = ", ".join(f"{x:.2f}" for x in result.load_average_end)
    sections.append(f"load average at end {end} (other work on the machine skews timings)")
    return "\n\n".join(s for s in sections if s) + "\n"


def default_path(result: SuiteResult) -> Path:
    """``benchmarks/results/<date>-<host>[-quick].json`` for this run.

    >>> default_path.__name__
    'default_path'
    """
    date = time.strftime("%Y-%m-%d")
    suffix = "-quick" if result.options.quick else ""
    return RESULTS_DIR / f"{date}-{result.facts.host}{suffix}.json"


def write_json(result: SuiteResult, path: Path) -> Path:
    """Write every figure of ``result`` to ``path`` (folders created); returns the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"schema": 1, **attrs.asdict(result)}
    path.write_text(json.dumps(payload, indent=2, sort_keys=False) + "\n")
    return path
