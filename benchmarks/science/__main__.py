"""The scientific benchmark set, run: ``python -m benchmarks.science [--quick] [--only PATTERN]``.

For every kernel of ``benchmarks.science.all_kernels()``, each contender runs in a child
process of its own beside NumPy eager (``benchmarks.child``): ``numpile.compile``,
``numba.njit`` of the same source (where the kernel says ``numba``), ``jax.jit`` of its
``jax_port`` (where one is given; float64 on) and ``torch.compile`` of the same source (CPU;
where torch cannot take the NumPy program the row says ``failed`` with torch's reason). Per
row: the first call (fresh cache folders, so it holds the compile), the warm median, NumPy's
warm median from the same child, their ratio, and a check of the result (and of the inputs a
mutating kernel writes) against NumPy's with the kernel's rtol/atol. A mutating kernel runs on
fresh copies of its inputs every call; the copies' own time, measured in the same rounds, is
taken off both sides.

    python -m benchmarks.science --quick                 # small sizes, 60 s per contender
    python -m benchmarks.science --only 'jacobi*'        # some kernels (shell patterns)
    python -m benchmarks.science --contender numpile     # one contender (repeatable)

The table ends with the geomean over kernels of NumPy time / numpile time, and of numpile
against numba on the kernels numba ran. The JSON goes to ``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import os
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from .. import child as _child
from ..child import AgainstNumpy, agree, emit, load_average, machine_header, missing, timed_pair
from . import all_kernels
from .kernel import ScienceKernel

CONTENDERS = ("numpile", "numba", "jax", "torch")
_RESULTS_DIR = Path(__file__).resolve().parent.parent / "results"


def find_kernels(patterns: Sequence[str] | None) -> list[ScienceKernel]:
    """The kernels whose names match any shell pattern (all of them for None).

    >>> [k.name for k in find_kernels(["jacobi_3d"])]
    ['jacobi_3d']
    """
    kernels = all_kernels()
    if not patterns:
        return kernels
    chosen = [k for k in kernels if any(fnmatch.fnmatchcase(k.name, p) for p in patterns)]
    if not chosen:
        names = ", ".join(k.name for k in kernels)
        raise ValueError(f"no science kernel matches {list(patterns)}; have {names}")
    return chosen


def input_megabytes(args: tuple[Any, ...]) -> float:
    """The size of the largest array among ``args``, in MB (10^6 bytes).

    >>> input_megabytes((np.zeros(250_000), 3.0))
    2.0
    """
    sizes = [a.nbytes for a in args if isinstance(a, np.ndarray)]
    return max(sizes, default=0) / 1e6


# --- one contender in a child process -------------------------------------------------------


def _copies(args: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def _prepare(contender: str, kernel: ScienceKernel, args: tuple[Any, ...]) -> Callable[..., Any]:
    # A callable of the NumPy inputs returning NumPy values. Each contender is a
    # benchmark-only dependency, imported here, in its own child process.
    if contender == "numpile":
        import numpile

        return numpile.compile(kernel.fn)
    if contender == "numba":
        import numba

        return numba.njit(kernel.fn)  # type: ignore[no-any-return]
    if contender == "torch":
        import torch

        return torch.compile(kernel.fn)
    if contender == "jax":
        return _jax_call(kernel, args)
    raise ValueError(f"unknown contender {contender!r}; use one of {CONTENDERS}")


def _jax_call(kernel: ScienceKernel, args: tuple[Any, ...]) -> Callable[..., Any]:
    import functools

    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)  # type: ignore[no-untyped-call]
    assert kernel.jax_port is not None
    jitted = jax.jit(functools.partial(kernel.jax_port, jnp))
    # The inputs move to JAX once, outside the timed calls (as a JAX user keeps them).
    device_args = tuple(jnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args)

    def call(*_: Any) -> Any:
        return jitted(*device_args).block_until_ready()

    return call


def _as_numpy(value: Any) -> Any:
    if value is None or isinstance(value, np.ndarray | np.generic | float | int):
        return value
    if isinstance(value, tuple):
        return tuple(_as_numpy(v) for v in value)
    return np.asarray(value)


def _check(kernel: ScienceKernel, contender: str, prepared: Callable[..., Any], size: int) -> str:
    # Fresh inputs for both sides; a mutating kernel's inputs are compared too.
    want_args = kernel.make_inputs(size)
    got_args = _copies(want_args) if contender != "jax" else want_args
    if kernel.mutates and contender != "jax":
        # Fresh inputs, not copies: a np.random.Generator among them is not an array, so
        # a copy would share its state with NumPy's call (which drew from it first).
        got_args = kernel.make_inputs(size)
    want = kernel.fn(*want_args)
    got = _as_numpy(prepared(*got_args))
    found = agree(want, got, rtol=kernel.rtol, atol=kernel.atol)
    if found.startswith("ok") and kernel.mutates:
        for index, (a, b) in enumerate(zip(want_args, got_args, strict=True)):
            if isinstance(a, np.ndarray):
                written = agree(a, b, rtol=kernel.rtol, atol=kernel.atol)
                if written != "ok":
                    return f"input {index}: {written}"
    return found


def run_child(name: str, contender: str, *, quick: bool) -> None:
    """Time one contender on one kernel beside NumPy; print one JSON line per stage."""
    from ..timer import Timing, measure_interleaved

    kernel = find_kernels([name])[0]
    size = kernel.sizes[0] if quick else kernel.sizes[1]
    args = kernel.make_inputs(size)
    warnings.simplefilter("ignore")
    start = time.perf_counter()
    prepared = _prepare(contender, kernel, args)
    emit({"stage": "prepared", "prepare_s": time.perf_counter() - start})
    fns: dict[str, Callable[..., Any]] = {"numpy": kernel.fn, contender: prepared}
    if kernel.mutates:
        fns = {key: _on_copies(fn) for key, fn in fns.items()}
        fns["copy"] = _copies_only
    timings = measure_interleaved(
        fns,
        args,
        budget_s=0.3 if quick else 2.0,
        min_repeats=3 if quick else 7,
        max_repeats=20 if quick else 60,
    )
    pair = timed_pair(timings, contender)
    if pair is None:
        return
    mine, numpy_timing = pair
    copy_s = 0.0
    copy_timing = timings.get("copy")
    if isinstance(copy_timing, Timing):
        copy_s = copy_timing.median_s
    emit(
        {
            "stage": "base",
            "size": size,
            "megabytes": input_megabytes(args),
            "first_s": mine.first_s,
            "warm_s": max(mine.median_s - copy_s, 1e-9),
            "numpy_s": max(numpy_timing.median_s - copy_s, 1e-9),
            "copy_s": copy_s,
            "check": _check(kernel, contender, prepared, size),
        }
    )


def _on_copies(fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        return fn(*_copies(args))

    return call


def _copies_only(*args: Any) -> Any:
    return _copies(args)


# --- the parent: children, the table, the summary ---------------------------------------------


@attrs.frozen
class ScienceRow(AgainstNumpy):
    """One contender on one kernel: what its child process finished within the limit."""

    kernel: str
    family: str
    contender: str
    status: str
    megabytes: float | None = None
    first_s: float | None = None
    warm_s: float | None = None
    numpy_s: float | None = None
    check: str = ""
    note: str = ""


def _not_run(kernel: ScienceKernel, contender: str) -> str | None:
    if contender == "numba" and not kernel.numba:
        return "numba does not take this source"
    if contender == "jax" and kernel.jax_port is None:
        return "no one-line jax port"
    return missing(contender)


def _run_one(kernel: ScienceKernel, contender: str, *, quick: bool, limit_s: float) -> ScienceRow:
    row = ScienceRow(kernel.name, kernel.family, contender, "ok")
    why = _not_run(kernel, contender)
    if why is not None:
        return attrs.evolve(row, status="n/a", note=why)
    args = ["--child", kernel.name, "--contender", contender] + (["--quick"] if quick else [])
    run = _child.run_child("benchmarks.science", args, limit_s=limit_s)
    if "failed" in run.stages:
        return attrs.evolve(row, status="failed", note=run.stages["failed"]["error"])
    base = run.stages.get("base")
    if base is None:
        status = "timed out" if run.timed_out else "failed"
        return attrs.evolve(row, status=status, note=f"first call {run.stopped or 'no result'}")
    return attrs.evolve(
        row,
        megabytes=base["megabytes"],
        first_s=base["first_s"],
        warm_s=base["warm_s"],
        numpy_s=base["numpy_s"],
        check=base["check"],
        status="ok" if base["check"].startswith("ok") else "wrong",
    )


def geomean(values: Sequence[float]) -> float | None:
    """The geometric mean of positive ``values`` (None when there are none).

    >>> geomean([2.0, 8.0])
    4.0
    """
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def summary(rows: Sequence[ScienceRow]) -> dict[str, Any]:
    """Geomeans over kernels: each contender's NumPy time / its time (rows whose check
    passed), and numpile against numba (numba's warm time / numpile's, from the two ratios)
    on the kernels both ran.

    >>> rows = [ScienceRow("k", "f", "numpile", "ok", warm_s=1.0, numpy_s=4.0),
    ...         ScienceRow("k", "f", "numba", "ok", warm_s=2.0, numpy_s=4.0)]
    >>> summary(rows)["numpile_vs_numba"]
    2.0
    """
    ratios: dict[str, dict[str, float]] = {}
    for row in rows:
        if row.status == "ok" and row.vs_numpy is not None:
            ratios.setdefault(row.contender, {})[row.kernel] = row.vs_numpy
    result: dict[str, Any] = {}
    for contender in CONTENDERS:
        found = ratios.get(contender, {})
        result[f"{contender}_vs_numpy"] = geomean(list(found.values()))
        result[f"{contender}_kernels"] = len(found)
    numpile, numba = ratios.get("numpile", {}), ratios.get("numba", {})
    both = [numpile[k] / numba[k] for k in numpile if k in numba]
    result["numpile_vs_numba"] = geomean(both)
    result["numpile_vs_numba_kernels"] = len(both)
    slower = [k for k, ratio in numpile.items() if ratio < 1.0]
    result["numpile_slower_than_numpy"] = slower
    return result


def _seconds(value: float | None) -> str:
    from ..report import format_seconds

    return "-" if value is None else format_seconds(value)


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def render(rows: Sequence[ScienceRow], *, quick: bool, limit_s: float) -> str:
    """The rows as a text table, one block per kernel, and the geomean summary."""
    from ..report import _table

    ratio = {(r.kernel, r.contender): r.vs_numpy for r in rows if r.status == "ok"}
    table: list[list[str]] = []
    previous = ""
    for row in rows:
        first = row.kernel != previous
        previous = row.kernel
        vs_numba = "-"
        numba = ratio.get((row.kernel, "numba"))
        if row.contender == "numpile" and row.vs_numpy and numba:
            vs_numba = _ratio(row.vs_numpy / numba)
        note = row.note if len(row.note) <= 70 else row.note[:67] + "..."
        table.append(
            [
                row.kernel if first else "",
                f"{row.megabytes:.1f}" if row.megabytes is not None else "",
                row.contender,
                row.status if row.status not in ("ok", "wrong") else _seconds(row.first_s),
                _seconds(row.warm_s),
                _seconds(row.numpy_s),
                _ratio(row.vs_numpy),
                vs_numba,
                row.check or "-",
                note or "-",
            ]
        )
    headers = ["kernel", "MB", "contender", "1st call", "warm", "numpy", "vs numpy"]
    headers += ["vs numba", "check", "note"]
    title = (
        f"== science kernels (quick={quick}; each contender in its own process beside NumPy, "
        f"limit {limit_s:.0f} s) =="
    )
    facts = summary(rows)
    lines = [title, _table(headers, table), "", "geomean over kernels (NumPy time / time):"]
    for contender in CONTENDERS:
        value = facts[f"{contender}_vs_numpy"]
        lines.append(f"  {contender:8s} {_ratio(value):>8s}  ({facts[f'{contender}_kernels']})")
    lines.append(
        f"  numpile vs numba {_ratio(facts['numpile_vs_numba'])} "
        f"({facts['numpile_vs_numba_kernels']} kernels both ran)"
    )
    slower = facts["numpile_slower_than_numpy"]
    lines.append(f"  numpile slower than NumPy on: {', '.join(slower) or 'none'}")
    return "\n".join(lines) + "\n"


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.science",
        description="Scientific kernels under NumPy, numpile, numba, JAX and torch.compile.",
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, short limit")
    parser.add_argument("--only", action="append", metavar="PATTERN", help="shell pattern(s)")
    parser.add_argument(
        "--contender", action="append", choices=CONTENDERS, help="contenders (default: all)"
    )
    parser.add_argument(
        "--limit",
        type=float,
        help="seconds per contender and kernel (default 60 with --quick, else 600)",
    )
    parser.add_argument("--out", type=Path, help="JSON path (default: benchmarks/results/...)")
    parser.add_argument("--child", metavar="NAME", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the science kernels as the command line asks; print the table, write the JSON."""
    options = _parse(argv)
    if options.child:
        run_child(options.child, options.contender[0], quick=options.quick)
        return 0
    patterns = [p for arg in options.only or [] for p in arg.split(",") if p] or None
    try:
        kernels = find_kernels(patterns)
    except ValueError as error:
        print(f"python -m benchmarks.science: {error}", file=sys.stderr)
        return 2
    limit_s = options.limit or (60.0 if options.quick else 600.0)
    contenders = options.contender or list(CONTENDERS)
    header = machine_header(("numpy", "numpile", "numba", "jax", "torch"))
    started = time.perf_counter()
    rows = []
    for kernel in kernels:
        for contender in contenders:
            print(f"{kernel.name}: {contender}", file=sys.stderr, flush=True)
            rows.append(_run_one(kernel, contender, quick=options.quick, limit_s=limit_s))
    print(header, end="")
    print(render(rows, quick=options.quick, limit_s=limit_s), end="")
    print(f"total {time.perf_counter() - started:.0f} s; load average at end {load_average()}")
    path = options.out or _default_path(quick=options.quick)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "schema": 1,
        "quick": options.quick,
        "limit_s": limit_s,
        "rows": [attrs.asdict(row) for row in rows],
        "summary": summary(rows),
    }
    path.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"JSON written to {path}")
    return 0


def _default_path(*, quick: bool) -> Path:
    suffix = "-quick" if quick else ""
    name = f"{time.strftime('%Y-%m-%d')}-{os.uname().nodename}-science{suffix}.json"
    return _RESULTS_DIR / name


if __name__ == "__main__":
    sys.exit(main())
