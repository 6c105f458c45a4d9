"""Host time of a plain compiled GPU call, without a GPU: CuPy and Triton's launches stubbed.

A compiled call on CuPy arrays is host-bound when its kernels are short (``tiny_call_f64``,
``sum_all_f64``, ``mlp_f32`` in ``benchmarks.gpu``): its time is the Python from the
api's guard check down to the launch. This measures that Python on any machine. In a child
process (the stand-ins must not leak), ``cupy`` is a stand-in module: arrays are NumPy
memory behind CuPy's interface (``data.ptr``, ``device.id``, shape, strides), streams and
events do nothing, cuBLAS calls return at once; Triton compiles nothing (each kernel's
"binary" is a stand-in whose launch returns at once). What remains is numpile's own host
work per call, plus the stand-ins' small costs (an allocation is ``np.empty`` wrapped in
an object, where CuPy's pool allocation costs a few microseconds more).

    python -m benchmarks.gpu_host                       # tiny_call_f64, sum_all_f64, mlp_f32
    python -m benchmarks.gpu_host --only sum_all_f64 --profile
    python -m benchmarks.gpu_host --lines               # + Python lines and calls per call

Figures are microseconds of this process's CPU time per call (not wall time: a loaded
machine shares its cores, and CPU time varies less with the load), the median of
``--repeat`` batches of ``--calls`` calls, quick input sizes (the kernels do not run: sizes
change nothing but the arguments). ``--lines`` adds counts that the load does not move:
the Python lines and function calls one compiled call runs (``sys.settrace``, the
stand-ins' own lines included).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from .gpu import _option, gpu_inputs

DEFAULT_WORKLOADS = ("tiny_call_f64", "sum_all_f64", "mlp_f32")


class _Pointer:
    # cupy.cuda.MemoryPointer: what a launch reads of an array's memory.
    __slots__ = ("ptr",)

    def __init__(self, ptr: int) -> None:
        self.ptr = ptr


class _Device:
    __slots__ = ("id",)

    def __init__(self, ordinal: int) -> None:
        self.id = ordinal


_DEVICE = _Device(0)


class ndarray:  # noqa: N801  # CuPy's class name: numpile recognizes device arrays by it
    """A stand-in CuPy array: NumPy memory behind the attributes numpile reads."""

    __slots__ = ("_host", "data", "device", "dtype", "itemsize", "ndim", "shape", "size", "strides")

    def __init__(self, host: np.ndarray[Any, Any]) -> None:
        self._host = host
        self.data = _Pointer(int(host.ctypes.data))
        self.device = _DEVICE
        self.shape = host.shape
        self.dtype = host.dtype
        self.strides = host.strides
        self.itemsize = host.itemsize
        self.ndim = host.ndim
        self.size = host.size

    def get(self) -> np.ndarray[Any, Any]:
        return self._host.copy()

    def view(self, dtype: Any) -> ndarray:
        return ndarray(self._host.view(dtype))

    def __getitem__(self, key: Any) -> ndarray:
        return ndarray(np.asarray(self._host[key]))


ndarray.__module__ = "cupy._core.core"


class _Stream:
    def __init__(self, ptr: int) -> None:
        self.ptr = ptr

    def is_capturing(self) -> bool:
        return False

    def synchronize(self) -> None:
        pass


class _Event:
    def record(self, stream: Any = None) -> None:
        pass

    def synchronize(self) -> None:
        pass


_STREAM = _Stream(0xABC)
_TIMED: list[int] = []


def _elapsed_ms(start: Any, stop: Any) -> float:
    # Each timing a little faster than the one before, all over REDUCTION_WORTH_S: tuning
    # picks its last candidate, a configuration other than the heuristic one, as a GPU may.
    _TIMED.append(1)
    return 0.1 - 0.001 * len(_TIMED)


def _empty(shape: Any, dtype: Any = np.float64) -> ndarray:
    return ndarray(np.empty(shape, dtype=dtype))


def _zeros(shape: Any, dtype: Any = np.float64) -> ndarray:
    return ndarray(np.zeros(shape, dtype=dtype))


def _asarray(value: Any, dtype: Any = None) -> ndarray:
    if isinstance(value, ndarray):
        same = dtype is None or value.dtype == dtype
        return value if same else ndarray(value._host.astype(dtype))
    return ndarray(np.asarray(value, dtype=dtype))


def install_stand_ins() -> None:
    """Make `import cupy` give the stand-in and Triton compile nothing (this process only).

    >>> install_stand_ins()  # doctest: +SKIP
    """
    cuda = types.SimpleNamespace(
        runtime=types.SimpleNamespace(
            getDevice=lambda: 0,
            setDevice=lambda device: None,
            getDeviceCount=lambda: 1,
            getDeviceProperties=lambda device: {"name": b"stand-in GPU"},
        ),
        Device=lambda device=0: types.SimpleNamespace(id=0, compute_capability="90"),
        get_current_stream=lambda: _STREAM,
        Event=_Event,
        get_elapsed_time=_elapsed_ms,
        cublas=types.SimpleNamespace(
            setStream=lambda handle, stream: None,
            setPointerMode=lambda handle, mode: None,
            sgemm=lambda *args: None,
            dgemm=lambda *args: None,
        ),
        device=types.SimpleNamespace(get_cublas_handle=lambda: 1),
    )
    cupy = types.ModuleType("cupy")
    cupy.cuda = cuda  # type: ignore[attr-defined]
    cupy.ndarray = ndarray  # type: ignore[attr-defined]
    cupy.empty = _empty  # type: ignore[attr-defined]
    cupy.zeros = _zeros  # type: ignore[attr-defined]
    cupy.asarray = _asarray  # type: ignore[attr-defined]
    cupy_cuda = types.ModuleType("cupy.cuda")
    cupy_cuda.__dict__.update(vars(cuda))
    sys.modules["cupy"] = cupy
    sys.modules["cupy.cuda"] = cupy_cuda

    from triton.backends.nvidia import driver as nvidia
    from triton.runtime import jit

    nvidia.CudaUtils = lambda: "utils"  # Triton's compiled CUDA helpers: none without a GPU

    class Binary:
        function = 1
        packed_metadata = ()

        def launch_metadata(self, *args: Any) -> None:
            return None

        def run(self, *args: Any) -> None:
            pass

    def compile_nothing(
        self: Any, key: Any, signature: Any, device: Any, constexprs: Any, *rest: Any
    ) -> Binary:
        self.device_caches[device][0][key] = binary = Binary()
        return binary

    jit.JITFunction._do_compile = compile_nothing


def _per_call_us(call: Callable[[], Any], calls: int, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.process_time()
        for _ in range(calls):
            call()
        samples.append((time.process_time() - start) / calls * 1e6)
    return statistics.median(samples)


def _python_per_call(call: Callable[[], Any], calls: int) -> tuple[float, float]:
    # Python lines and function calls per call, counted by a trace function.
    counts = {"line": 0, "call": 0}

    def trace(frame: Any, event: str, arg: Any) -> Any:
        if event in counts:
            counts[event] += 1
        return trace

    sys.settrace(trace)
    try:
        for _ in range(calls):
            call()
    finally:
        sys.settrace(None)
    return counts["line"] / calls, counts["call"] / calls


def _child(
    names: list[str],
    calls: int,
    repeat: int,
    options: dict[str, Any],
    *,
    profile: bool,
    lines: bool,
) -> None:
    install_stand_ins()
    import numpile

    from .workloads import find_workloads

    for workload in find_workloads(names):
        device = tuple(ndarray(a) for a in gpu_inputs(workload, quick=True, scale=1))
        numpile.reset()
        compiled = numpile.compile(workload.fn, fullgraph=True, options=options or None)
        compiled(*device)
        compiled(*device)
        us = _per_call_us(lambda fn=compiled, a=device: fn(*a), calls, repeat)
        print(f"{workload.name:<16} {us:8.1f} us per call (host, launches stubbed)")
        if lines:
            call = lambda fn=compiled, a=device: fn(*a)  # noqa: E731
            python_lines, python_calls = _python_per_call(call, 100)
            print(f"{'':<16} {python_lines:8.0f} Python lines, {python_calls:.0f} calls per call")
        if profile:
            import cProfile
            import pstats

            profiler = cProfile.Profile()
            profiler.enable()
            for _ in range(calls):
                compiled(*device)
            profiler.disable()
            pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


def main(argv: list[str] | None = None) -> int:
    """Measure in a child process; prints one line per workload.

    >>> main(["--only", "tiny_call_f64", "--calls", "10"])  # doctest: +SKIP
    0
    """
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu_host", description=__doc__)
    parser.add_argument("--only", action="append", metavar="NAME", help="workload pattern")
    parser.add_argument("--calls", type=int, default=2000, help="calls per batch")
    parser.add_argument("--repeat", type=int, default=7, help="batches (the median is shown)")
    parser.add_argument("--profile", action="store_true", help="cProfile by own time too")
    parser.add_argument("--lines", action="store_true", help="Python lines per call too")
    parser.add_argument(
        "--option", action="append", default=[], metavar="KEY=VALUE", help="a compile option"
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args(sys.argv[1:] if argv is None else argv)
    names = options.only or list(DEFAULT_WORKLOADS)
    if options.child:
        compile_options = dict(_option(text) for text in options.option)
        _child(
            names,
            options.calls,
            options.repeat,
            compile_options,
            profile=options.profile,
            lines=options.lines,
        )
        return 0
    command = [sys.executable, "-m", "benchmarks.gpu_host", "--child"]
    command += [f"--only={name}" for name in names]
    command += [f"--calls={options.calls}", f"--repeat={options.repeat}"]
    command += ["--profile"] if options.profile else []
    command += ["--lines"] if options.lines else []
    command += [f"--option={text}" for text in options.option]
    return subprocess.run(command, check=False).returncode


if __name__ == "__main__":
    raise SystemExit(main())
