"""Kept loops on the GPU: a loop of kernels as a host loop of launches against one CUDA graph.

``python -m benchmarks.gpu_loops`` (or ``python -m benchmarks.gpu --loops``) times, on CuPy
arrays, each loop workload three ways in one process: CuPy eager (the function called on
CuPy arrays: one launch per op per iteration), numpile with the host loop forced
(``options={"loop_graphs": 0}``: one Python call of the body and its launches per
iteration) and numpile by default (the whole loop recorded once and replayed as one CUDA
graph, ``numpile_inductor/codegen/triton/loop_graphs.py``), with ``host/graph``, the
ratio issue 28 asks to be at least 5 on the 1,000-step stencils. ``records`` and
``replays`` count the graphs the default column recorded and replayed: no replays means
it ran the host loop (the ``numpile.perf_hints`` log says why).

The stencils (``jacobi_1d_*``, ``jacobi_2d_*``) are written here; ``--with-loops`` adds
the workloads of ``benchmarks/loops.py`` that run on CuPy arrays, at their full trip
counts (each timing sample is one call; several seconds per workload of Triton compiles
on a cold cache; CuPy eager is not timed on the loops of 0-d bodies, which numpile runs as
one device program).

    python -m benchmarks.gpu_loops --only 'jacobi*'
    python -m benchmarks.gpu_loops --with-loops --option max_xblock=512
"""

from __future__ import annotations

import argparse
import fnmatch
import statistics
import sys
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np

from .child import load_average
from .gpu import _gpu_reason, _option


def jacobi_1d(A: Any, B: Any, steps: int) -> Any:
    """A three-point stencil, ``steps`` time steps over two buffers (PolyBench's jacobi-1d)."""
    for _ in range(steps):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])
    return A


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


def _grid(*shape: int) -> Callable[[], tuple[Any, ...]]:
    def make() -> tuple[Any, ...]:
        A = np.random.default_rng(28).random(shape)
        return A, A.copy(), 1000

    return make


STENCILS: tuple[GpuLoop, ...] = (
    GpuLoop("jacobi_1d_4k_x1000", jacobi_1d, _grid(4096)),
    GpuLoop("jacobi_1d_1m_x1000", jacobi_1d, _grid(1 << 20)),
    GpuLoop("jacobi_2d_256_x1000", jacobi_2d, _grid(256, 256)),
)


def _loop_workloads() -> list[GpuLoop]:
    from .loops import LOOP_WORKLOADS

    return [
        GpuLoop(
            w.name,
            w.fn,
            lambda w=w: w.inputs(w.full_trips),  # type: ignore[misc]
            eager=w.body != "scalar",
        )
        for w in LOOP_WORKLOADS
    ]


def _ms(fn: Callable[[], Any], repeat: int) -> float:
    # Milliseconds per call, median of `repeat` calls each between CUDA events, after two
    # calls (a loop graph records on its second call).
    import cupy

    fn()
    fn()
    samples: list[float] = []
    for _ in range(repeat):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        samples.append(float(cupy.cuda.get_elapsed_time(start, stop)))
    return statistics.median(samples)


def run_loop(loop: GpuLoop, *, repeat: int, options: dict[str, Any]) -> dict[str, Any]:
    """Time CuPy eager, numpile's host loop and numpile's loop graph on one workload.

    >>> run_loop(STENCILS[0], repeat=5, options={})  # doctest: +SKIP
    """
    import cupy

    import numpile
    import numpile_runtime as rt

    host = loop.inputs()
    device = tuple(cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in host)
    numpile.reset()
    on_host = numpile.compile(loop.fn, options={**options, "loop_graphs": 0})
    graphs = numpile.compile(loop.fn, options=options or None)
    want = loop.fn(*(a.copy() if isinstance(a, np.ndarray) else a for a in host))
    got = graphs(*(a.copy() if rt.is_device_array(a) else a for a in device))
    got = graphs(*(a.copy() if rt.is_device_array(a) else a for a in device))
    for g, w in zip(_leaves(got), _leaves(want), strict=True):
        np.testing.assert_allclose(cupy.asnumpy(g), w, rtol=1e-6, atol=1e-9)
    row: dict[str, Any] = {"workload": loop.name}
    if loop.eager:
        row["cupy_ms"] = _ms(lambda: loop.fn(*device), max(1, repeat // 3))
    row["host_loop_ms"] = _ms(lambda: on_host(*device), repeat)
    rt.reset_counters()
    row["graph_ms"] = _ms(lambda: graphs(*device), repeat)
    row["records"] = rt.counters().get("triton_loop_graph_records", 0)
    row["replays"] = rt.counters().get("triton_loop_graph_replays", 0)
    row["host/graph"] = row["host_loop_ms"] / row["graph_ms"]
    if loop.eager:
        row["cupy/graph"] = row["cupy_ms"] / row["graph_ms"]
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
    parser.add_argument("--with-loops", action="store_true", help="add benchmarks/loops.py's")
    parser.add_argument("--repeat", type=int, default=9, help="timed calls per column")
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
    import cupy

    device = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"# {device}, load average {load_average()}, median of {options.repeat} calls (ms)")
    for loop in loops:
        try:
            row = run_loop(loop, repeat=options.repeat, options=compile_options)
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
