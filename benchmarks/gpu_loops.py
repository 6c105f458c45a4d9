"""Kept loops on the GPU: a loop of kernels as a host loop of launches against one CUDA graph.

``python -m benchmarks.gpu_loops`` (or ``python -m benchmarks.gpu --loops``) times each loop
workload in one process: NumPy on the CPU (``numpy_ms``), then on CuPy arrays CuPy eager
(the function called on CuPy arrays: one launch per op per iteration), numpile with the
host loop forced (``options={"loop_graphs": 0}``: one Python call of the body and its
launches per iteration) and numpile by default (a loop of kernels recorded once and replayed
as one CUDA graph, ``numpile_inductor/codegen/triton/loop_graphs.py``; a loop of scalar
work as one device program, ``loop_program.py``), with ``host/graph``, the ratio issue 28
asks to be at least 5 on the 1,000-step stencils. ``path`` says how the default column ran
its loops, from the counters of its timed calls: ``graph`` (replays), ``device-program``,
``host-loop`` (a compiled body per iteration), ``op-by-op`` (a body not compiled: shapes
that follow the loop index, or scalar work one device program does not take), joined by
``+`` where nested loops took several; ``records`` and ``replays`` count the graphs.

The stencils (``jacobi_1d_*``, ``jacobi_2d_*``, ``heat_1d_*``) and ``mandelbrot_4k`` (a
`while` per point over 4096 points: one device program, a program instance per point) are
written here; ``heat_1d_4k_x1000_new_dt`` calls the heat stencil with a new time step every
call (a parameter sweep): its kernels read ``dt`` from a device slot, so one graph replays
every value (a graph per value would never repeat: each call ran the host loop).
``--with-loops`` adds the workloads of ``benchmarks/loops.py`` at device trip counts
(``DEVICE_TRIPS``) that keep the whole run near a minute. A column gets at most ``--budget``
seconds of timed calls
(fewer samples where one call is slow); a column or workload that fails prints why and
the others go on. CuPy eager is not timed on the loops of 0-d bodies (a launch per op per
element).

    python -m benchmarks.gpu_loops --only 'jacobi*'
    python -m benchmarks.gpu_loops --with-loops --skip 'jacobi_*_x1000' --budget 1 --repeat 5
    python -m benchmarks.gpu_loops --with-loops --option max_xblock=512
"""

from __future__ import annotations

import argparse
import fnmatch
import itertools
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np

from .child import load_average
from .gpu import _gpu_reason, _option
from .loop_programs import mandelbrot


def jacobi_1d(A: Any, B: Any, steps: int) -> Any:
    """A three-point stencil, ``steps`` time steps over two buffers (PolyBench's jacobi-1d)."""
    for _ in range(steps):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])
    return A


def heat_1d(u: Any, v: Any, dt: float, steps: int) -> Any:
    """The explicit heat equation, ``steps`` time steps of size ``dt``."""
    for _ in range(steps):
        v[1:-1] = u[1:-1] + dt * (u[:-2] - 2.0 * u[1:-1] + u[2:])
        u[1:-1] = v[1:-1]
    return u


def jacobi_2d(A: Any, B: Any, steps: int) -> Any:
    """A five-point stencil, ``steps`` time steps over two buffers (PolyBench's jacobi-2d)."""
    for _ in range(steps):
        B[1:-1, 1:-1] = 0.2 * (
            A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1]
        )
        A[1:-1, 1:-1] = 0.2 * (
            B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1]
        )
    return A


@attrs.frozen
class GpuLoop:
    """A loop workload on the GPU: its function and its host inputs."""

    name: str
    fn: Callable[..., Any]
    inputs: Callable[[], tuple[Any, ...]]
    eager: bool = True  # False: CuPy eager not timed (a 0-d body: launches per element)
    numpy: bool = True  # False: NumPy on the CPU not timed (seconds a call)
    # The position of a float argument given a new value every call (a parameter sweep);
    # numpile then compiles with `dynamic=True`, as automatic dynamic would after a call.
    new_scalar: int | None = None


def _points(n: int) -> tuple[Any, Any]:
    rng = np.random.default_rng(28)
    return rng.uniform(-2.0, 0.6, n), rng.uniform(-1.2, 1.2, n)


def _grid(*shape: int) -> Callable[[], tuple[Any, ...]]:
    def make() -> tuple[Any, ...]:
        A = np.random.default_rng(28).random(shape)
        return A, A.copy(), 1000

    return make


def rows_of_numpy_scalars(A: Any, steps: int) -> Any:
    """Rows scaled by NumPy scalars of the index: `np.float64(i)` as casts in the kernels."""
    for i in range(steps):
        A[np.int64(i)] = A[i] * np.float64(i) + np.float32(i)
    return A


def gather_of_numpy_scalars(x: Any) -> Any:
    """A 0-d body indexing by `np.int64(i)`: one device program."""
    s = 0.0
    for i in range(x.shape[0]):
        s = s + x[np.int64(i)] * np.float64(i)
    return s


def _heat(size: int) -> Callable[[], tuple[Any, ...]]:
    def make() -> tuple[Any, ...]:
        u = np.random.default_rng(28).random(size)
        return u, u.copy(), 0.1, 1000

    return make


STENCILS: tuple[GpuLoop, ...] = (
    GpuLoop("jacobi_1d_4k_x1000", jacobi_1d, _grid(4096)),
    # A time step the kernels read from a device slot: one graph for every dt.
    GpuLoop("heat_1d_4k_x1000", heat_1d, _heat(4096)),
    GpuLoop("heat_1d_4k_x1000_new_dt", heat_1d, _heat(4096), new_scalar=2),
    GpuLoop("jacobi_1d_1m_x1000", jacobi_1d, _grid(1 << 20), numpy=False),
    GpuLoop("jacobi_2d_256_x1000", jacobi_2d, _grid(256, 256)),
    # NumPy scalars of the index (numpy_scalar): a CUDA graph and a device program.
    GpuLoop(
        "numpy_scalar_rows_x1000",
        rows_of_numpy_scalars,
        lambda: (np.random.default_rng(28).random((1000, 256)), 1000),
    ),
    GpuLoop(
        "numpy_scalar_gather_x20000",
        gather_of_numpy_scalars,
        lambda: (np.random.default_rng(28).random(20_000),),
        eager=False,
    ),
    # A `while` per point inside the `for` over the points: one device program.
    GpuLoop("mandelbrot_4k", mandelbrot, lambda: _points(4096), eager=False),
)


# Trip counts of benchmarks/loops.py's workloads on the device: a call of the slowest
# column (CuPy eager or an op-by-op loop, some 50-150 us of host time an iteration) stays
# near 100 ms, so the run fits a minute with Triton's first compiles on a cold cache.
DEVICE_TRIPS: dict[str, int] = {
    "lu_rows": 24,
    "cholesky_rows": 32,
    "triangular_solves": 128,
    "gauss_seidel": 4,
    "jacobi_2d": 200,
    "crc32": 128,
    "levinson_durbin": 128,
    "floyd_warshall": 24,
    "mandelbrot": 16,
    "particles": 100,
    "sum_of_squares": 20_000,
}

# The counters a loop's path leaves, in the order `path` names them.
_PATHS = (
    ("triton_loop_graph_replays", "graph"),
    ("loop_device_program_runs", "device-program"),
    ("loop_host_runs", "host-loop"),
    ("loop_op_by_op_runs", "op-by-op"),
)


def _loop_workloads() -> list[GpuLoop]:
    from .loops import LOOP_WORKLOADS

    return [
        GpuLoop(
            w.name,
            w.fn,
            lambda w=w: w.inputs(DEVICE_TRIPS.get(w.name, w.quick_trips)),  # type: ignore[misc]
            eager=w.body != "scalar",
        )
        for w in LOOP_WORKLOADS
    ]


def _ms(
    fn: Callable[[], Any],
    repeat: int,
    budget_s: float,
    *,
    device: bool = True,
    warmed: Callable[[], None] | None = None,
) -> float:
    # Milliseconds per call, the median of at most `repeat` calls (fewer where they would
    # take more than `budget_s`), each between CUDA events (`device`) or host clock reads.
    # A device column first makes two untimed calls (a loop graph records on its second),
    # then runs `warmed`; a host column (NumPy) counts its first call.
    import cupy

    def once() -> float:
        if not device:
            start_s = time.perf_counter()
            fn()
            return (time.perf_counter() - start_s) * 1e3
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        return float(cupy.cuda.get_elapsed_time(start, stop))

    first = once()
    samples = [] if device else [first]
    if device:
        once()
    if warmed is not None:
        warmed()
    count = max(1, min(repeat, int(budget_s * 1e3 / max(first, 1e-3))))
    samples += [once() for _ in range(count - len(samples))]
    return statistics.median(samples)


def _host_copy(value: Any) -> Any:
    return value.copy() if isinstance(value, np.ndarray) else value


def run_loop(
    loop: GpuLoop, *, repeat: int, options: dict[str, Any], budget_s: float = 3.0
) -> dict[str, Any]:
    """Time NumPy, CuPy eager, numpile's host loop and numpile's default on one workload.

    A column that fails holds ``failed:<error type>``, its message printed as a comment.

    >>> run_loop(STENCILS[0], repeat=5, options={})  # doctest: +SKIP
    """
    import cupy

    import numpile
    import numpile_runtime as rt

    host = loop.inputs()
    device = tuple(cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in host)
    numpile.reset()
    dynamic = True if loop.new_scalar is not None else None
    on_host = numpile.compile(loop.fn, options={**options, "loop_graphs": 0}, dynamic=dynamic)
    graphs = numpile.compile(loop.fn, options=options or None, dynamic=dynamic)
    calls = itertools.count(1)

    def given(args: tuple[Any, ...]) -> tuple[Any, ...]:
        # The arguments of one timed call: a new value at `new_scalar` every call.
        if loop.new_scalar is None:
            return args
        changed = list(args)
        changed[loop.new_scalar] = args[loop.new_scalar] * (1.0 + next(calls) % 1000 * 1e-4)
        return tuple(changed)

    want = loop.fn(*(_host_copy(a) for a in host))
    got = graphs(*(a.copy() if rt.is_device_array(a) else a for a in device))
    for g, w in zip(_leaves(got), _leaves(want), strict=True):
        np.testing.assert_allclose(cupy.asnumpy(g), w, rtol=1e-6, atol=1e-9)
    row: dict[str, Any] = {"workload": loop.name}

    def column(name: str, fn: Callable[[], Any], **how: Any) -> None:
        try:
            row[name] = _ms(fn, repeat, budget_s, **how)
        except Exception as error:  # one broken column must not hide the others
            row[name] = f"failed:{type(error).__name__}"
            print(f"# {loop.name} {name}: {type(error).__name__}: {error}", flush=True)

    if loop.numpy:
        column("numpy_ms", lambda: loop.fn(*given(tuple(map(_host_copy, host)))), device=False)
    if loop.eager:
        column("cupy_ms", lambda: loop.fn(*given(device)))
    column("host_loop_ms", lambda: on_host(*given(device)))
    column("graph_ms", lambda: graphs(*given(device)), warmed=rt.reset_counters)
    paths = rt.counters()  # of the default column's timed calls
    row["path"] = "+".join(path for event, path in _PATHS if paths.get(event)) or "none"
    row["records"] = paths.get("triton_loop_graph_records", 0)
    row["replays"] = paths.get("triton_loop_graph_replays", 0)
    graph_ms = row.get("graph_ms")
    for name in ("host_loop_ms", "cupy_ms", "numpy_ms"):
        if isinstance(row.get(name), float) and isinstance(graph_ms, float):
            row[f"{name.partition('_')[0]}/graph"] = row[name] / graph_ms
    return row


def _leaves(value: Any) -> tuple[Any, ...]:
    return value if isinstance(value, tuple) else (value,)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the loop rows; prints "no GPU: <why>" and returns 0 where there is none.

    >>> main(["--only", "jacobi_1d_4k*"]) == 0  # doctest: +SKIP
    True
    """
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu_loops", description=__doc__)
    parser.add_argument("--only", action="append", metavar="NAME", help="workload pattern")
    parser.add_argument("--skip", action="append", default=[], metavar="NAME", help="pattern")
    parser.add_argument("--with-loops", action="store_true", help="add benchmarks/loops.py's")
    parser.add_argument("--repeat", type=int, default=9, help="timed calls per column")
    parser.add_argument(
        "--budget", type=float, default=2.0, help="seconds of timed calls per column"
    )
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE")
    options = parser.parse_args(argv)
    reason = _gpu_reason()
    if reason:
        print(f"no GPU: {reason}")
        return 0
    compile_options = dict(_option(text) for text in options.option)
    loops = [*STENCILS, *(_loop_workloads() if options.with_loops else [])]
    if options.only:
        loops = [w for w in loops if any(fnmatch.fnmatch(w.name, p) for p in options.only)]
    loops = [w for w in loops if not any(fnmatch.fnmatch(w.name, p) for p in options.skip)]
    import cupy

    device = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(
        f"# {device}, load average {load_average()}, median of at most {options.repeat} calls"
        f" or {options.budget} s a column (ms)"
    )
    for loop in loops:
        try:
            row = run_loop(
                loop, repeat=options.repeat, options=compile_options, budget_s=options.budget
            )
        except Exception as error:  # one broken workload must not hide the others
            print(f"{loop.name}: failed: {type(error).__name__}: {error}", flush=True)
            continue
        print(
            " ".join(
                f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()
            ),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
