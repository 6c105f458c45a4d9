"""Loops that stay loops (issue 23): loop workloads written the plain-NumPy way, each timed
under NumPy eager, ``numpile.compile``, ``numba.njit`` and ``torch.compile`` of the same
function object.

    python -m benchmarks.loops --quick            # small trip counts, 15 s per contender
    python -m benchmarks.loops --only 'lu*'       # some workloads (shell patterns)
    python -m benchmarks.loops --limit 120        # seconds each contender may take

Each contender runs in a child process of its own (``--child``) together with NumPy, so a
contender that compiles for minutes is stopped at ``--limit`` seconds and reported as
``timed out`` with whatever it finished (numpile unrolls loops during capture until issue
23 lands, so its compile grows with the trip count), and numba's, torch's and numpile's
threading runtimes never share a process. Ratios are taken against NumPy in the same child,
from interleaved samples (``benchmarks.timer``).

Per workload and contender the report gives: the first call (compile and run, fresh cache
folders), the warm call (median), NumPy time / warm time, ``vs numba`` (numba's warm time /
numpile's, from the two ratios), the first call at 10x the trip count made after the warm
calls, the numpile compiles of the first calls and of the 10x call (0 at 10x: the same
cache entry served it), and a check of the result against NumPy's. ``numba`` and
``torch`` are benchmark-only dependencies, imported lazily: a missing one is reported as
``n/a`` with the reason.

Targets (issue 23): every numpile first call under 1 s, 0 compiles at 10x the trip count,
warm time at least numba's, and at least 10x NumPy on the workloads with a scalar body.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import attrs
import numpy as np
import numpy.typing as npt

from . import child as _child
from .child import AgainstNumpy, agree, emit, load_average, machine_header, missing, timed_pair
from .loop_programs import mandelbrot

Array = npt.NDArray[Any]
Body = Literal["scalar", "mixed", "array"]

CONTENDERS = ("numpile", "numba", "torch")
_SEED = 20261126
_RESULTS_DIR = Path(__file__).resolve().parent / "results"


# --- the workloads: plain NumPy, inputs never mutated (every call does the same work) -------


def lu_rows(A: Array) -> Array:
    """Doolittle LU without pivoting, row by row: ``A[i, :j] @ A[:j, j]`` inner products."""
    A = A.copy()
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            A[i, j] = (A[i, j] - A[i, :j] @ A[:j, j]) / A[j, j]
        for j in range(i, n):
            A[i, j] = A[i, j] - A[i, :i] @ A[:i, j]
    return A


def cholesky_rows(A: Array) -> Array:
    """Cholesky, row by row, into the lower triangle."""
    L = np.zeros_like(A)
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            L[i, j] = (A[i, j] - L[i, :j] @ L[j, :j]) / L[j, j]
        L[i, i] = np.sqrt(A[i, i] - L[i, :i] @ L[i, :i])
    return L


def triangular_solves(L: Array, U: Array, b: Array) -> Array:
    """Forward substitution with ``L``, then back substitution with ``U``."""
    n = b.shape[0]
    y = np.zeros_like(b)
    for i in range(n):
        y[i] = (b[i] - L[i, :i] @ y[:i]) / L[i, i]
    x = np.zeros_like(b)
    for i in range(n - 1, -1, -1):
        x[i] = (y[i] - U[i, i + 1 :] @ x[i + 1 :]) / U[i, i]
    return x


def gauss_seidel(A: Array, b: Array, sweeps: int) -> Array:
    """``sweeps`` Gauss-Seidel sweeps over a diagonally dominant system."""
    n = b.shape[0]
    x = np.zeros_like(b)
    for _ in range(sweeps):
        for i in range(n):
            x[i] = (b[i] - A[i, :i] @ x[:i] - A[i, i + 1 :] @ x[i + 1 :]) / A[i, i]
    return x


def jacobi_2d(A: Array, tsteps: int) -> Array:
    """A time-stepped five-point stencil on a 2-D grid (two buffers, as PolyBench's)."""
    A = A.copy()
    B = A.copy()
    for _ in range(tsteps):
        B[1:-1, 1:-1] = 0.2 * (
            A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1]
        )
        A[1:-1, 1:-1] = 0.2 * (
            B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1]
        )
    return A


def crc32(data: Array) -> Any:
    """CRC-32 (zlib's polynomial) over bytes held in a uint32 array, bit by bit, branch-free."""
    # The inductor's tests have their own copy (tests/crc_programs.py): benchmarks import no
    # tests, and tests import no benchmarks.
    crc = np.uint32(0xFFFFFFFF)
    poly = np.uint32(0xEDB88320)
    one = np.uint32(1)
    for i in range(data.shape[0]):
        crc = crc ^ data[i]
        for _ in range(8):
            crc = (crc >> one) ^ ((crc & one) * poly)
    return crc ^ np.uint32(0xFFFFFFFF)


def levinson_durbin(r: Array) -> Array:
    """The Levinson-Durbin recursion (PolyBench's durbin): a Toeplitz solve."""
    n = r.shape[0]
    y = np.zeros_like(r)
    y[0] = -r[0]
    beta = 1.0
    alpha = -r[0]
    for k in range(1, n):
        beta = (1.0 - alpha * alpha) * beta
        alpha = -(r[k] + r[k - 1 :: -1] @ y[:k]) / beta
        y[:k] = y[:k] + alpha * y[k - 1 :: -1]
        y[k] = alpha
    return y


def floyd_warshall(D: Array) -> Array:
    """All-pairs shortest paths, one row update per (k, i)."""
    D = D.copy()
    n = D.shape[0]
    for k in range(n):
        for i in range(n):
            D[i, :] = np.minimum(D[i, :], D[i, k] + D[k, :])
    return D


def particles(pos: Array, vel: Array, steps: int) -> tuple[Array, Array]:
    """All-pairs softened gravity, ``steps`` explicit time steps (array-sized body)."""
    n = pos.shape[0]
    pos = pos.copy()
    vel = vel.copy()
    for _ in range(steps):
        d = pos.reshape(n, 1, 2) - pos.reshape(1, n, 2)
        r2 = (d * d).sum(axis=2) + 0.01
        acc = -(d * (r2**-1.5).reshape(n, n, 1)).sum(axis=1)
        vel = vel + acc * 0.001
        pos = pos + vel * 0.001
    return pos, vel


def sum_of_squares(x: Array) -> Any:
    """An element-wise reduction loop: ``s += x[i] * x[i]`` (issue 23's first example)."""
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    return s


# --- inputs, by trip count ----------------------------------------------------------------


def _rng() -> np.random.Generator:
    return np.random.default_rng(_SEED)


def _dominant(n: int) -> Array:
    A = _rng().standard_normal((n, n))
    A[np.diag_indices(n)] = np.abs(A).sum(axis=1) + 1.0
    return A


def _spd(n: int) -> Array:
    M = _rng().standard_normal((n, n))
    return M @ M.T + n * np.eye(n)


def _triangles(n: int) -> tuple[Array, Array, Array]:
    A = _dominant(n)
    return np.tril(A), np.triu(A), _rng().standard_normal(n)


def _distances(n: int) -> Array:
    D = _rng().uniform(1.0, 10.0, (n, n))
    D[np.diag_indices(n)] = 0.0
    return D


def _points(n: int) -> tuple[Array, Array]:
    rng = _rng()
    return rng.uniform(-2.0, 0.6, n), rng.uniform(-1.2, 1.2, n)


@attrs.frozen
class LoopWorkload:
    """A loop workload: its function, its inputs for a trip count, and its trip counts.

    ``trips`` is what grows the loop (matrix order, sweeps, time steps, bytes, points);
    ``body`` is ``scalar`` where the loop body is 0-d work (issue 23's 10x-NumPy target).

        >>> find_loop_workloads(["crc*"])[0].fn(*find_loop_workloads(["crc*"])[0].inputs(2))
        np.uint32(3914167515)
    """

    name: str
    fn: Callable[..., Any]
    inputs: Callable[[int], tuple[Any, ...]]
    quick_trips: int
    full_trips: int
    body: Body
    trip_meaning: str


LOOP_WORKLOADS: tuple[LoopWorkload, ...] = (
    LoopWorkload("lu_rows", lu_rows, lambda n: (_dominant(n),), 6, 80, "mixed", "order"),
    LoopWorkload("cholesky_rows", cholesky_rows, lambda n: (_spd(n),), 6, 120, "mixed", "order"),
    LoopWorkload("triangular_solves", triangular_solves, _triangles, 8, 300, "mixed", "order"),
    LoopWorkload(
        "gauss_seidel",
        gauss_seidel,
        lambda t: (_dominant(24), _rng().standard_normal(24), t),
        1,
        10,
        "mixed",
        "sweeps of 24 rows",
    ),
    LoopWorkload(
        "jacobi_2d",
        jacobi_2d,
        lambda t: (_rng().standard_normal((64, 64)), t),
        2,
        40,
        "array",
        "time steps on 64x64",
    ),
    LoopWorkload(
        "crc32",
        crc32,
        lambda n: (_rng().integers(0, 256, n).astype(np.uint32),),
        2,
        4096,
        "scalar",
        "bytes",
    ),
    LoopWorkload(
        "levinson_durbin",
        levinson_durbin,
        lambda n: (_rng().uniform(-0.2, 0.2, n) / n,),
        8,
        400,
        "mixed",
        "order",
    ),
    LoopWorkload(
        "floyd_warshall", floyd_warshall, lambda n: (_distances(n),), 5, 120, "array", "nodes"
    ),
    LoopWorkload("mandelbrot", mandelbrot, _points, 2, 2000, "scalar", "points"),
    LoopWorkload(
        "particles",
        particles,
        lambda t: (_rng().standard_normal((32, 2)), _rng().standard_normal((32, 2)) * 0.1, t),
        2,
        50,
        "array",
        "time steps, 32 particles",
    ),
    LoopWorkload(
        "sum_of_squares",
        sum_of_squares,
        lambda n: (_rng().standard_normal(n),),
        16,
        100_000,
        "scalar",
        "elements",
    ),
)


def find_loop_workloads(patterns: Sequence[str] | None) -> list[LoopWorkload]:
    """The workloads whose names match any shell pattern (all of them for None).

    >>> [w.name for w in find_loop_workloads(["lu*", "crc32"])]
    ['lu_rows', 'crc32']
    """
    if not patterns:
        return list(LOOP_WORKLOADS)
    chosen = [w for w in LOOP_WORKLOADS if any(fnmatch.fnmatchcase(w.name, p) for p in patterns)]
    if not chosen:
        names = ", ".join(w.name for w in LOOP_WORKLOADS)
        raise ValueError(f"no loop workload matches {list(patterns)}; have {names}")
    return chosen


# --- one contender in a child process -------------------------------------------------------


def _prepare(contender: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    # Imported here: each is a benchmark-only dependency, loaded in its own child process.
    if contender == "numpile":
        import numpile

        return numpile.compile(fn)
    if contender == "numba":
        import numba

        return numba.njit(fn)  # type: ignore[no-any-return]
    if contender == "torch":
        import torch

        return torch.compile(fn)
    raise ValueError(f"unknown contender {contender!r}; use one of {CONTENDERS}")


def _missing(contender: str) -> str | None:
    return missing("numpile" if contender == "numpile" else contender)


class _Compiles:
    # numpile's compiles, counted as benchmarks/dynamic.py counts them: captures with a graph
    # that did not run eagerly; captures that ran eagerly are counted apart.
    def __init__(self, contender: str) -> None:
        self.active = contender == "numpile"

    def __enter__(self) -> _Compiles:
        self.compiles = 0
        self.eager = 0
        if self.active:
            from numpile_capture.capture_events import recording_captures

            self._recording = recording_captures()
            self._events = self._recording.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.active:
            self._recording.__exit__(None, None, None)
            self.compiles = sum(1 for e in self._events if e.graph is not None and not e.eager)
            self.eager = sum(1 for e in self._events if e.eager)


def run_child(name: str, contender: str, trips: int, *, quick: bool) -> None:
    """Time one contender on one workload beside NumPy; print one JSON line per stage."""
    from .timer import measure_interleaved

    workload = find_loop_workloads([name])[0]
    fn = workload.fn
    args = workload.inputs(trips)
    start = time.perf_counter()
    prepared = _prepare(contender, fn)
    emit({"stage": "prepared", "prepare_s": time.perf_counter() - start})
    warnings.simplefilter("ignore")
    with _Compiles(contender) as counted:
        timings = measure_interleaved(
            {"numpy": fn, contender: prepared},
            args,
            budget_s=0.3 if quick else 1.5,
            min_repeats=3 if quick else 7,
            max_repeats=20 if quick else 100,
        )
    pair = timed_pair(timings, contender)
    if pair is None:
        return
    mine, numpy_timing = pair
    check = agree(fn(*args), prepared(*args))
    emit(
        {
            "stage": "base",
            "first_s": mine.first_s,
            "warm_s": mine.median_s,
            "numpy_s": numpy_timing.median_s,
            "compiles": counted.compiles,
            "eager_captures": counted.eager,
            "check": check,
        }
    )
    bigger = workload.inputs(trips * 10)
    with _Compiles(contender) as counted:
        start = time.perf_counter()
        got = prepared(*bigger)
        first_10x = time.perf_counter() - start
    start = time.perf_counter()
    want = fn(*bigger)
    numpy_10x = time.perf_counter() - start
    emit(
        {
            "stage": "10x",
            "first_s": first_10x,
            "numpy_s": numpy_10x,
            "compiles": counted.compiles,
            "eager_captures": counted.eager,
            "check": agree(want, got),
        }
    )


# --- the parent: children, limits, the table ----------------------------------------------


@attrs.frozen
class LoopRow(AgainstNumpy):
    """One contender on one workload: what its child process finished within the limit."""

    workload: str
    trips: int
    contender: str
    status: str
    first_s: float | None = None
    warm_s: float | None = None
    numpy_s: float | None = None
    compiles: int | None = None
    first_10x_s: float | None = None
    compiles_10x: int | None = None
    check: str = ""
    note: str = ""


def _run_one(
    workload: LoopWorkload, contender: str, trips: int, *, quick: bool, limit_s: float
) -> LoopRow:
    why = _missing(contender)
    if why is not None:
        return LoopRow(workload.name, trips, contender, "n/a", note=why)
    args = ["--child", workload.name, "--contender", contender, "--trips", str(trips)]
    child = _child.run_child(
        "benchmarks.loops", args + (["--quick"] if quick else []), limit_s=limit_s
    )
    row = LoopRow(workload.name, trips, contender, "ok")
    return _row(row, child.stages, child.timed_out, child.stopped or "exit 0")


def _row(row: LoopRow, stages: dict[str, dict[str, Any]], timed_out: bool, stopped: str) -> LoopRow:
    # `row` names the run; the stages its child printed fill it in. `stopped` says why the
    # child ended early (the limit, or its exit status and last line of stderr).
    base, bigger = stages.get("base"), stages.get("10x")
    if "failed" in stages:
        return attrs.evolve(row, status="failed", note=stages["failed"]["error"])
    if base is None:
        status = "timed out" if timed_out else "failed"
        return attrs.evolve(row, status=status, note=f"first call {stopped}")
    notes = []
    if base.get("eager_captures"):
        notes.append(f"{base['eager_captures']} capture(s) ran eagerly")
    if bigger is None:
        notes.append(f"10x trip count {stopped}")
    elif not bigger["check"].startswith("ok"):
        notes.append(f"10x check: {bigger['check']}")
    numpile = row.contender == "numpile"
    return attrs.evolve(
        row,
        first_s=base["first_s"],
        warm_s=base["warm_s"],
        numpy_s=base["numpy_s"],
        compiles=base["compiles"] if numpile else None,
        first_10x_s=None if bigger is None else bigger["first_s"],
        compiles_10x=bigger["compiles"] if bigger and numpile else None,
        check=base["check"],
        note="; ".join(notes),
    )


def _seconds(value: float | None) -> str:
    from .report import format_seconds

    return "-" if value is None else format_seconds(value)


def render_loops(rows: list[LoopRow], *, quick: bool, limit_s: float) -> str:
    """The rows as a text table, one block per workload, and the targets' summary."""
    from .report import _table

    ratio = {(r.workload, r.contender): r.vs_numpy for r in rows}
    table: list[list[str]] = []
    previous = ""
    for row in rows:
        first = row.workload != previous
        previous = row.workload
        numpy_s = _seconds(row.numpy_s)
        vs_numba = "-"
        numba = ratio.get((row.workload, "numba"))
        if row.contender == "numpile" and row.vs_numpy and numba:
            vs_numba = f"{row.vs_numpy / numba:.2f}x"
        table.append(
            [
                row.workload if first else "",
                str(row.trips) if first else "",
                row.contender,
                row.status if row.status != "ok" else _seconds(row.first_s),
                _seconds(row.warm_s),
                numpy_s,
                "-" if row.vs_numpy is None else f"{row.vs_numpy:.2f}x",
                vs_numba,
                _seconds(row.first_10x_s),
                "-" if row.compiles is None else f"{row.compiles} / {_count(row.compiles_10x)}",
                row.check or "-",
                row.note or "-",
            ]
        )
    headers = [
        "workload",
        "trips",
        "contender",
        "1st call",
        "warm",
        "numpy",
        "vs numpy",
        "vs numba",
        "1st at 10x",
        "compiles (1st / 10x)",
        "check",
        "note",
    ]
    title = (
        f"== loop workloads (quick={quick}; each contender in its own process beside NumPy, "
        f"limit {limit_s:.0f} s) =="
    )
    return title + "\n" + _table(headers, table) + "\n"


def _count(value: int | None) -> str:
    return "-" if value is None else str(value)


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.loops",
        description="Loop workloads under NumPy, numpile, numba.njit and torch.compile.",
    )
    parser.add_argument("--quick", action="store_true", help="small trip counts, short limit")
    parser.add_argument("--only", action="append", metavar="NAME", help="shell pattern(s)")
    parser.add_argument(
        "--contender",
        action="append",
        choices=CONTENDERS,
        help="contenders (default: all; numpile and numba with --quick)",
    )
    parser.add_argument(
        "--limit",
        type=float,
        help="seconds per contender and workload (default 15 with --quick, else 600)",
    )
    parser.add_argument("--out", type=Path, help="JSON path (default: benchmarks/results/...)")
    parser.add_argument("--child", metavar="NAME", help=argparse.SUPPRESS)
    parser.add_argument("--trips", type=int, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the loop workloads as the command line asks; print the table, write the JSON."""
    options = _parse(argv)
    if options.child:
        run_child(options.child, options.contender[0], options.trips, quick=options.quick)
        return 0
    patterns = [p for arg in options.only or [] for p in arg.split(",") if p] or None
    try:
        workloads = find_loop_workloads(patterns)
    except ValueError as error:
        print(f"python -m benchmarks.loops: {error}", file=sys.stderr)
        return 2
    limit_s = options.limit or (15.0 if options.quick else 600.0)
    # As in `python -m benchmarks`: torch.compile only when asked for with --quick.
    default = [c for c in CONTENDERS if c != "torch"] if options.quick else list(CONTENDERS)
    contenders = options.contender or default
    if "torch" not in contenders:
        print("skipping torch: not requested (add --contender torch)", flush=True)
    header = _header()
    for contender in contenders:
        missing = _missing(contender)
        if missing is not None:
            print(f"skipping {contender}: {missing}", flush=True)
    started = time.perf_counter()
    rows = []
    for workload in workloads:
        trips = workload.quick_trips if options.quick else workload.full_trips
        for contender in contenders:
            print(
                f"{workload.name} ({trips} {workload.trip_meaning}): {contender}", file=sys.stderr
            )
            rows.append(_run_one(workload, contender, trips, quick=options.quick, limit_s=limit_s))
    print(header, end="")
    print(render_loops(rows, quick=options.quick, limit_s=limit_s), end="")
    print(f"total {time.perf_counter() - started:.0f} s; load average at end {_load()}")
    path = options.out or _default_path(quick=options.quick)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "schema": 1,
        "quick": options.quick,
        "limit_s": limit_s,
        "rows": [attrs.asdict(row) for row in rows],
    }
    path.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"JSON written to {path}")
    return 0


def _load() -> str:
    return load_average()


def _header() -> str:
    return machine_header(("numpy", "numpile", "numba", "torch"))


def _default_path(*, quick: bool) -> Path:
    suffix = "-quick" if quick else ""
    return _RESULTS_DIR / f"{time.strftime('%Y-%m-%d')}-{os.uname().nodename}-loops{suffix}.json"


if __name__ == "__main__":
    sys.exit(main())
