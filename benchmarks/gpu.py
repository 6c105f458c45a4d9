"""GPU suite: the CPU suite's workloads on CuPy arrays, numpile's Triton kernels vs CuPy eager.

``python -m benchmarks.gpu [--quick] [--only NAME]`` runs on a machine with an NVIDIA GPU,
CuPy and Triton; elsewhere it prints why it cannot ("no GPU: ...") and exits 0.

Per workload (the same NumPy functions and sizes as ``benchmarks/workloads.py``) it reports
the median GPU time of NumPy on the CPU, CuPy eager (the function called on CuPy arrays),
numpile's Triton backend (with and without CUDA-graph replay), the ratio CuPy / numpile, and
for memory-bound rows the achieved bandwidth against the device-to-device copy bandwidth
measured in the same run. numpile's graph is captured once from NumPy inputs of the same
shapes (capture of CuPy arrays lives in the capture layer) and compiled for Triton.

    python -m benchmarks.gpu --quick
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from .workloads import Workload, find_workloads, min_bytes


def _gpu_reason() -> str:
    # Empty when this machine can run the suite.
    import numpile_runtime as rt

    status = rt.triton_status()
    if status.mode == "gpu":
        return ""
    if status.mode == "interpret":
        return "TRITON_INTERPRET=1 is set: kernels would run on the CPU interpreter"
    return status.reason


def _gpu_ms(fn: Callable[[], Any], repeat: int) -> float:
    # Median wall time of `fn` between CUDA events on the current stream, in milliseconds.
    import cupy

    fn()
    cupy.cuda.get_current_stream().synchronize()
    samples = []
    for _ in range(repeat):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        samples.append(cupy.cuda.get_elapsed_time(start, stop))
    return statistics.median(samples)


def _cpu_ms(fn: Callable[[], Any], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples)


def copy_bandwidth_gbs(nbytes: int = 1 << 28) -> float:
    """Device-to-device copy bandwidth (read + write bytes per second), in GB/s.

    >>> copy_bandwidth_gbs() > 100  # doctest: +SKIP
    True
    """
    import cupy

    src = cupy.ones(nbytes // 4, dtype=cupy.float32)
    dst = cupy.empty_like(src)
    ms = _gpu_ms(lambda: cupy.copyto(dst, src), repeat=20)
    return 2 * nbytes / (ms * 1e-3) / 1e9


def _captured_graph(workload: Workload, args: tuple[Any, ...]) -> Any:
    # numpile's capture of the NumPy function on NumPy inputs; the graph goes to Triton.
    import numpile

    graphs: list[Any] = []

    def record(graph: Any, example_inputs: Any) -> Callable[..., Any]:
        graphs.append(graph)
        from numpile_capture import run_graph

        return lambda *inputs: run_graph(graph, inputs)

    numpile.reset()
    numpile.compile(workload.fn, backend=record, fullgraph=True)(*args)
    if len(graphs) != 1:
        raise RuntimeError(f"{workload.name}: expected one graph, captured {len(graphs)}")
    return graphs[0]


def run_workload(workload: Workload, *, quick: bool, bandwidth: float) -> dict[str, Any]:
    """Time one workload on CPU NumPy, CuPy eager and numpile (Triton, and with CUDA graphs).

    >>> run_workload(find_workloads(["chain_sin_f32"])[0], quick=True, bandwidth=1.0)
    ... # doctest: +SKIP
    """
    import cupy

    import numpile_runtime as rt
    from numpile_inductor.triton_backend import compile_triton

    repeat = 5 if quick else 30
    host = workload.make_inputs(quick=quick)
    device = tuple(cupy.asarray(a) for a in host)
    compiled = compile_triton(_captured_graph(workload, host))
    graph_runner = rt.CudaGraphRunner(compiled.fn)
    want = workload.fn(*device)
    got = compiled.fn(*device)
    leaves_want = want if isinstance(want, tuple) else (want,)
    leaves_got = got if isinstance(got, tuple) else (got,)
    for g, w in zip(leaves_got, leaves_want, strict=True):
        cupy.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
    row: dict[str, Any] = {
        "workload": workload.name,
        "kernels": compiled.kernel_count,
        "numpy_cpu_ms": _cpu_ms(lambda: workload.fn(*host), repeat),
        "cupy_ms": _gpu_ms(lambda: workload.fn(*device), repeat),
        "numpile_ms": _gpu_ms(lambda: compiled.fn(*device), repeat),
        "numpile_graphs_ms": _gpu_ms(lambda: graph_runner(*device), repeat),
    }
    row["cupy_over_numpile"] = row["cupy_ms"] / row["numpile_ms"]
    if workload.bound == "memory":
        gbs = min_bytes(host, workload.fn(*host)) / (row["numpile_ms"] * 1e-3) / 1e9
        row["numpile_gbs"] = gbs
        row["of_copy_bw"] = gbs / bandwidth
    return row


def _print(rows: list[dict[str, Any]], bandwidth: float, device: str) -> None:
    print(f"device: {device}; device-to-device copy: {bandwidth:.0f} GB/s")
    head = (
        f"{'workload':<20} {'k':>2} {'numpy cpu':>10} {'cupy':>9} {'numpile':>9} "
        f"{'+graphs':>9} {'cupy/np':>8} {'GB/s':>7} {'of copy':>7}"
    )
    print(head)
    for row in rows:
        gbs = f"{row['numpile_gbs']:7.0f}" if "numpile_gbs" in row else f"{'-':>7}"
        share = f"{row['of_copy_bw']:7.0%}" if "of_copy_bw" in row else f"{'-':>7}"
        print(
            f"{row['workload']:<20} {row['kernels']:>2} {row['numpy_cpu_ms']:9.3f}m "
            f"{row['cupy_ms']:8.3f}m {row['numpile_ms']:8.3f}m {row['numpile_graphs_ms']:8.3f}m "
            f"{row['cupy_over_numpile']:7.2f}x {gbs} {share}"
        )


def main(argv: list[str] | None = None) -> int:
    """Run the GPU suite; prints "no GPU: <why>" and returns 0 where there is none.

    >>> main(["--quick"]) == 0  # doctest: +SKIP
    True
    """
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    parser.add_argument("--only", action="append", metavar="NAME", help="workload pattern")
    options = parser.parse_args(argv)
    reason = _gpu_reason()
    if reason:
        print(f"no GPU: {reason}")
        return 0
    import cupy

    bandwidth = copy_bandwidth_gbs()
    name = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    rows = []
    for workload in find_workloads(options.only):
        if workload.bound == "overhead" and workload.name != "tiny_call_f64":
            continue
        try:
            rows.append(run_workload(workload, quick=options.quick, bandwidth=bandwidth))
        except Exception as error:  # one broken workload must not hide the others
            print(f"{workload.name}: failed: {type(error).__name__}: {error}", file=sys.stderr)
    _print(rows, bandwidth, name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
