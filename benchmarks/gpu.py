"""GPU suite: the CPU suite's workloads on CuPy arrays, numpile's Triton kernels vs CuPy eager.

``python -m benchmarks.gpu [--quick] [--only NAME]`` runs on a machine with an NVIDIA GPU,
CuPy and Triton; elsewhere it prints why it cannot ("no GPU: ...") and exits 0.

Per workload (the same NumPy functions as ``benchmarks/workloads.py``; the elementwise and
row workloads with their leading axis ``--scale`` times longer, default 8) it reports
the median time of NumPy on the CPU, CuPy eager (the function called on CuPy arrays),
``numpile.compile(fn)`` called on the same CuPy arrays (Triton kernels; and with
``mode="reduce-overhead"``, CUDA-graph replay, ``+graphs``, and ``np/+g`` the plain call's
time over the replay's: above 1, replay pays), the ratio CuPy / numpile, and for
memory-bound rows the achieved bandwidth against the device-to-device copy bandwidth
measured in the same run. GPU times are per call, in batches of back-to-back calls between
CUDA events (throughput: a call's host cost counts only where it exceeds its kernels' time).
``np host`` takes NumPy arrays in and gives NumPy arrays out (one copy each way per call):
``numpile.compile(fn, device="cuda")``. When a CUDA build of torch is installed, ``torch``
is ``torch.compile`` of the same NumPy function on CUDA tensors (PyTorch's recipe for NumPy
code on the GPU), and ``torch/np`` its time over numpile's (above 1: numpile is faster).

    python -m benchmarks.gpu --quick
    python -m benchmarks.gpu --profile --only mlp_f32   # where the host time of a call goes
    python -m benchmarks.gpu --quick --no-torch --only tiny_call_f64   # plain vs +graphs
    python -m benchmarks.gpu --loops --only 'jacobi*'   # kept loops: host loop vs CUDA graph
    python -m benchmarks.gpu --scalars   # a number that changes every call: plain vs +graphs

``--loops`` runs ``benchmarks/gpu_loops.py`` instead, with the arguments that follow it.
"""

from __future__ import annotations

import argparse
import ast
import logging
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


def _gpu_ms(fn: Callable[[], Any], repeat: int, batch: int = 10) -> float:
    # Milliseconds per call: the median over `repeat` samples, each `batch` back-to-back
    # calls between CUDA events on the current stream. That is the device's throughput:
    # the host's cost of a call shows only where it exceeds the kernels' time.
    import cupy

    fn()
    cupy.cuda.get_current_stream().synchronize()
    samples = []
    for _ in range(repeat):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        for _ in range(batch):
            fn()
        stop.record()
        stop.synchronize()
        samples.append(cupy.cuda.get_elapsed_time(start, stop) / batch)
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


def _kernel_count(workload: Workload, device: tuple[Any, ...]) -> int:
    # The Triton kernels of the graph numpile captures from the CuPy inputs.
    import numpile
    from numpile_inductor.codegen.triton.backend import compile_triton

    numpile.reset()
    report = numpile.explain(workload.fn)(*device)
    if len(report.graphs) != 1:
        raise RuntimeError(f"{workload.name}: expected one graph, captured {len(report.graphs)}")
    return compile_triton(report.graphs[0]).kernel_count


def _torch_cuda(workload: Workload) -> Callable[..., Any] | None:
    # torch.compile of the NumPy function on CUDA tensors (PyTorch's documented way to run
    # NumPy code on the GPU: `.numpy()` on the inputs, `torch.from_numpy` on the results,
    # inside the compiled function), or None without a CUDA build of torch.
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch._dynamo.reset()
    fn = workload.fn

    def on_tensors(*tensors: Any) -> Any:
        result = fn(*(t.numpy() for t in tensors))
        if isinstance(result, tuple):
            return tuple(torch.from_numpy(r) for r in result)
        return torch.from_numpy(result)

    return torch.compile(on_tensors)


# Workloads whose leading axis the GPU suite scales (``--scale``): at the CPU suite's sizes a
# fused elementwise kernel or a row softmax takes tens of microseconds on a large GPU, under
# the host's cost of a call, and the suite would measure launches instead of kernels.
SCALED = (
    "chain_sin_f32",
    "chain_sin_f64",
    "chain10_f32",
    "chain10_f64",
    "softmax_rows_f32",
    "softmax_wide_f32",
    "layernorm_rows_f32",
)


# Row workloads also timed compiled with dynamic=True.
ROW_WORKLOADS = ("softmax_rows_f32", "softmax_wide_f32", "layernorm_rows_f32")


def gpu_inputs(workload: Workload, *, quick: bool, scale: int) -> tuple[Any, ...]:
    """The workload's inputs, with the leading axis of the scaled ones times `scale`.

    >>> [a.shape for a in gpu_inputs(find_workloads(["chain_sin_f32"])[0], quick=True, scale=2)]
    [(262144,), (262144,), (262144,)]
    """
    import numpy as np

    host = workload.make_inputs(quick=quick)
    if scale == 1 or workload.name not in SCALED:
        return host
    first = host[0].shape
    return tuple(np.concatenate([a] * scale) if a.shape == first else a for a in host)


def run_workload(
    workload: Workload,
    *,
    quick: bool,
    bandwidth: float,
    scale: int = 1,
    options: dict[str, Any] | None = None,
    with_torch: bool = True,
) -> dict[str, Any]:
    """Time one workload on CPU NumPy, CuPy eager, numpile (Triton, CUDA graphs) and torch
    (`with_torch=False`: not torch, whose first compile takes seconds).

    >>> run_workload(find_workloads(["chain_sin_f32"])[0], quick=True, bandwidth=1.0)
    ... # doctest: +SKIP
    """
    import cupy

    import numpile

    repeat = 5 if quick else 30
    options = options or None  # numpile.compile takes a mode or options, not both
    host = gpu_inputs(workload, quick=quick, scale=scale)
    device = tuple(cupy.asarray(a) for a in host)
    kernels = _kernel_count(workload, device)
    numpile.reset()
    compiled = numpile.compile(workload.fn, fullgraph=True, options=options)
    replayed = numpile.compile(workload.fn, fullgraph=True, mode="reduce-overhead")
    from_host = numpile.compile(workload.fn, fullgraph=True, device="cuda", options=options)
    want = workload.fn(*device)
    for got in (compiled(*device), replayed(*device)):
        leaves_want = want if isinstance(want, tuple) else (want,)
        leaves_got = got if isinstance(got, tuple) else (got,)
        for g, w in zip(leaves_got, leaves_want, strict=True):
            cupy.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
    row: dict[str, Any] = {
        "workload": workload.name,
        "kernels": kernels,
        "numpy_cpu_ms": _cpu_ms(lambda: workload.fn(*host), 3 if scale > 1 else repeat),
        "cupy_ms": _gpu_ms(lambda: workload.fn(*device), repeat),
        "numpile_ms": _gpu_ms(lambda: compiled(*device), repeat),
        "numpile_graphs_ms": _gpu_ms(lambda: replayed(*device), repeat),
        "numpile_host_ms": _cpu_ms(lambda: from_host(*host), 3 if scale > 1 else repeat),
    }
    if workload.flops is not None:
        # Compute-bound rows: max-autotune also times the tl.dot template against cuBLAS.
        tuned = numpile.compile(workload.fn, fullgraph=True, mode="max-autotune-no-cudagraphs")
        row["numpile_tuned_ms"] = _gpu_ms(lambda: tuned(*device), repeat)
    if workload.name in ROW_WORKLOADS:
        # A dynamic batch: the row count is a kernel argument (one kernel per row group still).
        dynamic = numpile.compile(workload.fn, fullgraph=True, dynamic=True, options=options)
        row["numpile_dynamic_ms"] = _gpu_ms(lambda: dynamic(*device), repeat)
    torch_fn = _torch_cuda(workload) if with_torch else None
    if torch_fn is not None:
        import torch

        tensors = tuple(torch.from_numpy(a).cuda() for a in host)
        row["torch_ms"] = _gpu_ms(lambda: torch_fn(*tensors), repeat)
    row["cupy_over_numpile"] = row["cupy_ms"] / row["numpile_ms"]
    if workload.bound == "memory":
        gbs = min_bytes(host, workload.fn(*host)) / (row["numpile_ms"] * 1e-3) / 1e9
        row["numpile_gbs"] = gbs
        row["of_copy_bw"] = gbs / bandwidth
    return row


def profile_host(workload: Workload, *, calls: int = 2000, top: int = 25) -> None:
    """Where a compiled call's host time goes: the wall time per call (device work queued,
    not awaited) against CuPy eager's, numpile launching every kernel through Triton's
    `run` (`direct_launch=False`) and `mode="reduce-overhead"` (replays; the CUDA graph
    log's lines say what was recorded and why a call did not replay), then cProfile's
    functions by own time for the plain and the replayed call.

    >>> profile_host(find_workloads(["tiny_call_f64"])[0])  # doctest: +SKIP
    """
    import cProfile
    import pstats

    import cupy

    import numpile

    device = tuple(cupy.asarray(a) for a in gpu_inputs(workload, quick=True, scale=1))
    numpile.reset()
    compiled = numpile.compile(workload.fn, fullgraph=True)
    through_run = numpile.compile(workload.fn, fullgraph=True, options={"direct_launch": False})
    replayed = numpile.compile(workload.fn, fullgraph=True, mode="reduce-overhead")
    contenders: dict[str, Callable[..., Any]] = {
        "numpile": compiled,
        "numpile, launches through Triton's run": through_run,
        "numpile reduce-overhead (CUDA graph replay)": replayed,
        "cupy": workload.fn,
    }
    graph_log = logging.getLogger("numpile.runtime.cuda")  # why a replay did not happen
    graph_log.addHandler(logging.StreamHandler(sys.stdout))
    graph_log.setLevel(logging.DEBUG)
    for name, fn in contenders.items():
        fn(*device)
        cupy.cuda.get_current_stream().synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            fn(*device)
        host_us = (time.perf_counter() - start) / calls * 1e6
        cupy.cuda.get_current_stream().synchronize()
        print(f"{workload.name}: {name} host time per call {host_us:.1f} us (quick sizes)")
    for name, fn in (("numpile", compiled), ("numpile reduce-overhead", replayed)):
        print(f"{workload.name}: {name}, functions by own time")
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(calls):
            fn(*device)
        profiler.disable()
        cupy.cuda.get_current_stream().synchronize()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(top)


def scalar_step_row(*, repeat: int = 30, kind: type = float) -> dict[str, float]:
    """`x + t * v` on 1-element float64 arrays with a `t` of type `kind` (a Python float, or a
    NumPy scalar such as `np.float64`) that changes every call (a time step): the plain call
    against `mode="reduce-overhead"`, whose kernels read `t` from device memory so that one
    graph replays every value (ms per call).

    >>> scalar_step_row()  # doctest: +SKIP
    {'plain_ms': 0.04, 'graphs_ms': 0.016}
    """
    import cupy
    import numpy as np

    import numpile

    def step(x: Any, v: Any, t: float) -> Any:
        return x + t * v

    x, v = cupy.ones(1), cupy.full(1, 2.0)
    numpile.reset()
    row = {}
    for name, mode in (("plain_ms", "default"), ("graphs_ms", "reduce-overhead")):
        compiled = numpile.compile(step, fullgraph=True, dynamic=True, mode=mode)
        clock = [0.0]

        def call(fn: Callable[..., Any] = compiled, clock: list[float] = clock) -> Any:
            clock[0] += 0.001
            return fn(x, v, kind(clock[0]))

        row[name] = _gpu_ms(call, repeat)
        got = float(call().get()[0])
        assert np.isclose(got, 1.0 + 2.0 * clock[0]), (name, got, clock[0])
    return row


def _print(rows: list[dict[str, Any]], bandwidth: float, device: str) -> None:
    print(f"device: {device}; device-to-device copy: {bandwidth:.0f} GB/s")
    print("times in ms; 'host' columns take NumPy arrays and return NumPy arrays")
    head = (
        f"{'workload':<20} {'k':>2} {'numpy cpu':>10} {'cupy':>9} {'numpile':>9} "
        f"{'+graphs':>9} {'np/+g':>6} {'cupy/np':>8} {'GB/s':>7} {'of copy':>7} "
        f"{'np host':>9} {'torch':>9} {'torch/np':>8}"
    )
    print(head)
    for row in rows:
        gbs = f"{row['numpile_gbs']:7.0f}" if "numpile_gbs" in row else f"{'-':>7}"
        share = f"{row['of_copy_bw']:7.0%}" if "of_copy_bw" in row else f"{'-':>7}"
        torch_ms = f"{row['torch_ms']:9.3f}" if "torch_ms" in row else f"{'-':>9}"
        torch_ratio = (
            f"{row['torch_ms'] / row['numpile_ms']:7.2f}x" if "torch_ms" in row else f"{'-':>8}"
        )
        print(
            f"{row['workload']:<20} {row['kernels']:>2} {row['numpy_cpu_ms']:10.3f} "
            f"{row['cupy_ms']:9.3f} {row['numpile_ms']:9.3f} {row['numpile_graphs_ms']:9.3f} "
            f"{row['numpile_ms'] / row['numpile_graphs_ms']:5.2f}x "
            f"{row['cupy_over_numpile']:7.2f}x {gbs} {share} {row['numpile_host_ms']:9.3f} "
            f"{torch_ms} {torch_ratio}"
        )
    for row in rows:
        if "numpile_dynamic_ms" in row:
            print(
                f"{row['workload']}: dynamic=True (run-time row count) "
                f"{row['numpile_dynamic_ms']:.3f} ms"
            )
        if "numpile_tuned_ms" in row:
            print(
                f"{row['workload']}: mode='max-autotune-no-cudagraphs' "
                f"{row['numpile_tuned_ms']:.3f} ms (tl.dot template or cuBLAS, the faster)"
            )


def _option(text: str) -> tuple[str, Any]:
    """`KEY=VALUE` as a compile option, the value a Python literal where it is one.

    >>> _option("split_programs=1024"), _option("direct_launch=False")
    (('split_programs', 1024), ('direct_launch', False))
    """
    key, _, value = text.partition("=")
    try:
        return key, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return key, value


def main(argv: list[str] | None = None) -> int:
    """Run the GPU suite; prints "no GPU: <why>" and returns 0 where there is none.

    >>> main(["--quick"]) == 0  # doctest: +SKIP
    True
    """
    arguments = sys.argv[1:] if argv is None else list(argv)
    if "--loops" in arguments:
        from .gpu_loops import main as loops_main

        return loops_main([a for a in arguments if a != "--loops"])
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    parser.add_argument("--only", action="append", metavar="NAME", help="workload pattern")
    parser.add_argument(
        "--scale",
        type=int,
        default=8,
        help="leading-axis factor of the elementwise and row "
        "workloads (default 8; 1 gives the CPU suite's sizes)",
    )
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a numpile.compile option for every compiled call (A/B runs: "
        "--option split_programs=1024)",
    )
    parser.add_argument(
        "--no-torch",
        action="store_true",
        help="leave torch.compile out (its compile takes most of a short A/B run)",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="instead of timing: profile the host side of each selected workload's "
        "compiled call (cProfile, quick sizes)",
    )
    parser.add_argument("--loops", action="store_true", help="the kept-loop rows (gpu_loops.py)")
    parser.add_argument(
        "--scalars",
        action="store_true",
        help="instead of the workloads: a number that changes every call, plain vs +graphs",
    )
    options = parser.parse_args(arguments)
    compile_options = dict(_option(text) for text in options.option)
    reason = _gpu_reason()
    if reason:
        print(f"no GPU: {reason}")
        return 0
    if options.profile:
        for workload in find_workloads(options.only or ["tiny_call_f64"]):
            profile_host(workload)
        return 0
    if options.scalars:
        import numpy as np

        for label, kind in (("a float", float), ("an np.float64", np.float64)):
            row = scalar_step_row(repeat=5 if options.quick else 30, kind=kind)
            print(
                f"scalar_step_f64 (t {label} that changes every call): "
                f"plain {row['plain_ms']:.4f} ms, +graphs {row['graphs_ms']:.4f} ms, "
                f"np/+g {row['plain_ms'] / row['graphs_ms']:.2f}x"
            )
        return 0
    import cupy

    bandwidth = copy_bandwidth_gbs()
    name = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    rows = []
    for workload in find_workloads(options.only):
        if workload.bound == "overhead" and workload.name != "tiny_call_f64":
            continue
        try:
            row = run_workload(
                workload,
                quick=options.quick,
                bandwidth=bandwidth,
                scale=options.scale,
                options=compile_options,
                with_torch=not options.no_torch,
            )
        except Exception as error:  # one broken workload must not hide the others
            print(f"{workload.name}: failed: {type(error).__name__}: {error}", file=sys.stderr)
            continue
        rows.append(row)
        # Progress, so that a run stopped part way still leaves its figures.
        print(
            " ".join(
                f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()
            ),
            flush=True,
        )
    _print(rows, bandwidth, name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
