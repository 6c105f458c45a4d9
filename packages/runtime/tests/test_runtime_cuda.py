"""Triton launching helpers and CUDA-graph replay: what runs without a GPU, and GPU tests.

GPU tests are marked `gpu` and skip unless CuPy sees a CUDA device; the
interpreter test runs a hand-written kernel in a child process with
`TRITON_INTERPRET=1` (Triton reads it at import) and skips without triton.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from typing import Any

import numpy as np
import pytest

import numpile_runtime as rt

_HAS_TRITON = importlib.util.find_spec("triton") is not None
_GPU = rt.cupy_available()
_NO_GPU = "needs CuPy and a CUDA device (this machine has none)"


def test_kernel_arg_presents_numpy_memory_as_a_triton_pointer() -> None:
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    arg = rt.kernel_arg(a)
    assert arg.dtype == "float32"
    assert arg.data_ptr() == a.ctypes.data
    assert arg.size() == (3, 4) and arg.stride() == (16, 4)
    # the interpreter's host-copy protocol is the identity on host memory
    assert arg.untyped_storage().cpu().data_ptr() == a.ctypes.data
    assert arg.new_empty(0, device="cpu") is arg


def test_kernel_arg_of_a_negative_stride_view_points_at_its_first_element() -> None:
    a = np.arange(10, dtype=np.int64)
    view = a[::-1]
    assert rt.kernel_arg(view).data_ptr() == a.ctypes.data + 9 * 8


def test_kernel_arg_rejects_objects_without_device_memory() -> None:
    with pytest.raises(TypeError, match="not an array Triton can read"):
        rt.kernel_arg([1.0, 2.0])


def test_triton_status_explains_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    status = rt.triton_status()
    if not _HAS_TRITON:
        assert status.mode == "unavailable" and "pip install triton" in status.reason
    elif not _GPU:
        assert status.mode == "unavailable" and "TRITON_INTERPRET=1" in status.reason
    else:
        assert status.mode == "gpu"
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert rt.interpreting()
    assert rt.triton_status().mode == ("interpret" if _HAS_TRITON else "unavailable")


def test_load_triton_module_writes_one_file_per_source() -> None:
    first = rt.load_triton_module("VALUE = 41 + 1\n", name_hint="probe")
    again = rt.load_triton_module("VALUE = 41 + 1\n", name_hint="probe")
    other = rt.load_triton_module("VALUE = 7\n", name_hint="probe")
    assert first is again and first.VALUE == 42 and other.VALUE == 7
    assert first.__file__ is not None and os.path.exists(first.__file__)
    assert str(rt.default_cache().root) in first.__file__


def test_a_module_that_fails_to_import_is_not_left_half_loaded() -> None:
    with pytest.raises(ZeroDivisionError):
        rt.load_triton_module("X = 1 / 0\n", name_hint="broken")
    assert not any("broken" in name for name in sys.modules if name.startswith("_numpile_triton"))


_KERNEL = """
import triton
import triton.language as tl


@triton.jit
def axpy(x, y, out, n, alpha, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    value = tl.load(x + offsets, mask=mask) * tl.load(alpha) + tl.load(y + offsets, mask=mask)
    tl.store(out + offsets, value, mask=mask)
"""

_CHILD = """
import numpy as np
import numpile_runtime as rt
module = rt.load_triton_module({kernel!r}, name_hint="axpy")
x = np.arange(100, dtype=np.float64)[::-1].copy()
y = np.linspace(0, 1, 100)
out = np.full(100, np.nan)
alpha = np.array([0.25])
args = [rt.kernel_arg(a) for a in (x, y, out)] + [100, rt.kernel_arg(alpha)]
module.axpy[(4,)](*args, BLOCK=32)
assert np.array_equal(out, x * 0.25 + y), out
print("ok")
"""


@pytest.mark.skipif(not _HAS_TRITON, reason="triton is not installed (pip install triton)")
def test_interpreted_kernel_reads_and_writes_numpy_memory(tmp_path: Any) -> None:
    env = {**os.environ, "TRITON_INTERPRET": "1", "NUMPILE_CACHE_DIR": str(tmp_path)}
    code = _CHILD.format(kernel=textwrap.dedent(_KERNEL))
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().endswith("ok")


# A child process without PyTorch (importing it fails) and without a GPU: CuPy and Triton's
# compiled CUDA helpers are stand-ins that record what the driver asks of them.
_DRIVER_CHILD = """
import sys, types
class NoTorch:  # `import torch` raises ImportError, as where PyTorch is not installed
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == "torch":
            raise ImportError("No module named 'torch'")
        return None
sys.meta_path.insert(0, NoTorch())
cupy = types.ModuleType("cupy")
cupy.cuda = types.SimpleNamespace(
    runtime=types.SimpleNamespace(getDevice=lambda: 3, setDevice=lambda d: calls.append(d)),
    Device=lambda d: types.SimpleNamespace(compute_capability={"3": "90"}[str(d)]),
    get_current_stream=lambda: types.SimpleNamespace(ptr=0xABC),
)
calls = []
sys.modules["cupy"] = cupy
from triton.backends.nvidia import driver as nvidia
nvidia.CudaUtils = lambda: "utils"
from triton.runtime import driver
import numpile_runtime as rt
rt.use_cupy_driver()
rt.use_cupy_driver()  # once per process
active = driver.active
assert type(active).__name__ == "CupyDriver" and active.utils == "utils"
assert active.launcher_cls is nvidia.CudaLauncher
assert active.get_current_device() == 3
assert active.get_current_stream(3) == 0xABC
target = active.get_current_target()
assert (target.backend, target.arch, target.warp_size) == ("cuda", 90, 32), target
active.set_current_device(1)
assert calls == [1]
assert "torch" not in sys.modules
print("ok")
"""


# Triton's real `JITFunction.run`, with compilation replaced by a stand-in binary that
# records its launches: a direct launch must pass what `run` itself passed.
_DIRECT_KERNEL = """
import triton
import triton.language as tl


@triton.jit(do_not_specialize=["p_lr"])
def scale(p_a, p_a_s0, p_lr: "float64", xnumel, XBLOCK: tl.constexpr, INDEX64: tl.constexpr):
    pass
"""

_DIRECT_CHILD = (
    _DRIVER_CHILD.replace('print("ok")', "")
    + """
import numpy as np
fn = rt.load_triton_module(KERNEL_SOURCE, name_hint="direct").scale
launches = []


class Binary:
    function = "cufunction"
    packed_metadata = ("meta",)

    def launch_metadata(self, grid, stream, *args):
        return None

    def run(self, *args):
        launches.append(args)


def compile_stand_in(key, signature, device, constexprs, options, attrs, warmup):
    fn.device_caches[device][0][key] = binary = Binary()
    return binary


fn._do_compile = compile_stand_in
launcher = rt.TritonLauncher(fn, ("ptr", "int", "scalar", "int"))
assert launcher.launches_direct
a = np.zeros(64, np.float32)
for lr in (0.5, 0.25):
    launcher([a, 1, lr, 64], 2, {"INDEX64": False, "XBLOCK": 32}, 4, 0xABC)
through_run, direct = launches
assert direct[:6] == through_run[:6], (through_run, direct)
# launch metadata and hooks: Triton's, or None where Triton passes empty hook chains
empty = [not getattr(hook, "calls", True) for hook in through_run[7:9]]
assert direct[6:9] == ((None, None, None) if all(empty) else through_run[6:9]), direct
assert through_run[9].data_ptr() == direct[9] == a.ctypes.data
assert through_run[10:] == (1, 0.5, 64, 32, False), through_run
assert direct[10:] == (1, 0.25, 64, 32, False), direct
print("ok")
"""
)


@pytest.mark.skipif(not _HAS_TRITON, reason="triton is not installed (pip install triton)")
def test_direct_launches_pass_what_tritons_run_passes(tmp_path: Any) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["NUMPILE_CACHE_DIR"] = str(tmp_path)
    code = _DIRECT_CHILD.replace("KERNEL_SOURCE", repr(textwrap.dedent(_DIRECT_KERNEL)))
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().endswith("ok")


@pytest.mark.skipif(not _HAS_TRITON, reason="triton is not installed (pip install triton)")
def test_cupy_driver_asks_cupy_for_device_stream_and_capability_never_torch() -> None:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    result = subprocess.run(
        [sys.executable, "-c", _DRIVER_CHILD], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().endswith("ok")


def test_cuda_graph_runner_runs_plain_calls_for_non_cupy_inputs() -> None:
    calls: list[int] = []

    def fn(x: np.ndarray) -> np.ndarray:
        calls.append(1)
        return x * 2

    runner = rt.CudaGraphRunner(fn)
    out = runner(np.ones(3))
    assert np.array_equal(out, np.full(3, 2.0)) and len(calls) == 1
    assert "neither a CuPy array" in runner.skip_reason


# GPU tests of `CudaGraphRunner` on real CuPy (the policy is tested without a GPU in
# test_runtime_cuda_graphs.py, on a stand-in CuPy).


@pytest.mark.gpu
@pytest.mark.skipif(not _GPU, reason=_NO_GPU)
def test_cuda_graph_replays_on_the_callers_buffers_and_hands_out_its_own() -> None:
    import cupy

    def fn(x: Any, y: Any) -> Any:
        return cupy.sin(x) * y + 1.0

    runner = rt.CudaGraphRunner(fn)
    x, y = cupy.arange(1000, dtype=cupy.float32), cupy.ones(1000, dtype=cupy.float32)
    runner(x, y)
    assert runner.skip_reason == "warming up"
    first = runner(x, y)  # recorded on x's and y's addresses
    cupy.testing.assert_allclose(first, fn(x, y))
    first_id = id(first)
    del first
    x += 1
    y *= 3
    again = runner(x, y)
    assert runner.skip_reason == "" and id(again) == first_id  # no copy in or out
    cupy.testing.assert_allclose(again, fn(x, y))


@pytest.mark.gpu
@pytest.mark.skipif(not _GPU, reason=_NO_GPU)
def test_cuda_graph_of_a_mutating_function_writes_only_the_current_callers_array() -> None:
    import cupy

    def fn(x: Any) -> Any:
        x += 1
        return x * 2

    runner = rt.CudaGraphRunner(fn)
    a = cupy.zeros(8)
    runner(a)
    runner(a)  # recorded on a's address, run once
    b = cupy.full(8, 100.0)
    out = runner(b)  # new pointers: a plain call
    assert float(a[0]) == 2.0 and float(b[0]) == 101.0 and float(out[0]) == 202.0
    del out
    out = runner(a)  # replays, writing a as the plain call would
    assert runner.skip_reason == ""
    assert float(a[0]) == 3.0 and float(out[0]) == 6.0 and float(b[0]) == 101.0


@pytest.mark.gpu
@pytest.mark.skipif(not _GPU, reason=_NO_GPU)
def test_cuda_graph_outputs_views_and_pointers_held_by_the_caller_stay_intact() -> None:
    import cupy

    def fn(x: Any) -> Any:
        return x * 2.0, x + 1.0

    runner = rt.CudaGraphRunner(fn)
    x = cupy.arange(6.0)
    runner(x)
    doubled, _ = runner(x)  # recorded
    view = doubled[2:]
    pointer = doubled.data
    del doubled
    x += 10
    second = runner(x)  # the view and the pointer hold the first buffers: a second set
    third = runner(x)  # both sets held: a plain call
    assert runner.skip_reason == "outputs of earlier replays are still held"
    held = cupy.ndarray((6,), cupy.float64, memptr=pointer)
    cupy.testing.assert_allclose(view, cupy.arange(2.0, 6.0) * 2)
    cupy.testing.assert_allclose(held, cupy.arange(6.0) * 2)
    for result in (second, third):
        cupy.testing.assert_allclose(result[0], (cupy.arange(6.0) + 10) * 2)
    del view, pointer, held, second, third
    runner(x)
    assert runner.skip_reason == ""


@pytest.mark.gpu
@pytest.mark.skipif(not _GPU, reason=_NO_GPU)
def test_cuda_graph_numbers_by_value_replay_per_value_with_the_plain_calls_dtype() -> None:
    import cupy

    def fn(x: Any, s: Any) -> Any:
        return x * s

    runner = rt.CudaGraphRunner(fn, by_value=frozenset({1}))
    x = cupy.arange(4, dtype=cupy.float32)
    for s in (2.0, 2.0, 2.0, 3.0, 3.0, 3.0, np.float64(2.0), 2):
        got = runner(x, s)
        want = fn(x, s)
        assert got.dtype == want.dtype, (s, got.dtype, want.dtype)
        cupy.testing.assert_allclose(got, want)
        del got
    runner(x, 2.0)
    assert runner.skip_reason == ""


@pytest.mark.gpu
@pytest.mark.skipif(not _GPU, reason=_NO_GPU)
def test_cuda_graph_numbers_in_memory_replay_one_graph_for_every_value() -> None:
    import cupy

    def fn(x: Any, s: Any, flag: Any) -> Any:
        # as a pointer-scalar kernel reads them: 0-d arrays of the slot dtypes when recorded
        return cupy.where(flag, x * s, -x) if isinstance(s, cupy.ndarray) else fn_eager(x, s, flag)

    def fn_eager(x: Any, s: float, flag: bool) -> Any:
        return x * np.float64(s) if flag else -x.astype(np.float64)

    runner = rt.CudaGraphRunner(fn, in_memory={1: np.dtype("float64"), 2: np.dtype("bool")})
    x = cupy.arange(4, dtype=cupy.float32)
    stream = cupy.cuda.Stream(non_blocking=True)
    for i, (s, flag) in enumerate([(2.0, True), (2.0, True), (0.5, True), (-3.0, False)] * 3):
        with stream if i % 2 else cupy.cuda.Stream.null:  # the copy follows the stream change
            got = runner(x, s, flag)
            cupy.testing.assert_allclose(got, fn_eager(x, s, flag))
        del got
    assert runner.records == 1 and runner.replays == 10


@pytest.mark.gpu
@pytest.mark.skipif(not _GPU, reason=_NO_GPU)
def test_release_cuda_graphs_frees_the_runners_pool() -> None:
    import cupy

    runner = rt.CudaGraphRunner(lambda x: cupy.exp(x) + 1)
    x = cupy.ones(1 << 20)
    runner(x)
    runner(x)
    pool = runner._pool
    assert pool.used_bytes() > 0
    rt.release_cuda_graphs()
    assert runner.graph_count == 0
    assert pool.used_bytes() == 0 and pool.total_bytes() == 0
