"""Host cost of one Triton launch: Triton's `JITFunction.run` against `TritonLauncher`.

Runs without a GPU: in a child process without PyTorch, CuPy and Triton's compiled CUDA
helpers are stand-ins, and the "compiled kernel" is a stand-in binary whose launch costs
nothing, so the figures are the Python work around a launch (argument binding,
specialization, the key, the call) for a kernel of 5 pointers and 6 integers, with
CuPy-like arrays. Needs triton installed (any version with `triton.knobs`, 3.4+):

    python -m benchmarks.launch_overhead

Prediction written before the first measurement: Triton's `run` about 10 us, a direct
launch 1-2 us. Measured (2026-11-25, development machine, best of 5 x 20,000): Triton 3.6
`run` 9.9-10.1 us, `TritonLauncher` 4.1-4.7 us (2.1-2.5x less); Triton 3.9 10.8 vs 4.7 us.
A first version took 13.3 us: it made launch metadata for Triton 3.6's empty hook chains.
"""

from __future__ import annotations

import subprocess
import sys

_CHILD = r'''
import sys, time, types

class NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == "torch":
            raise ImportError("No module named 'torch'")
sys.meta_path.insert(0, NoTorch())
cupy = types.ModuleType("cupy")
cupy.cuda = types.SimpleNamespace(
    runtime=types.SimpleNamespace(getDevice=lambda: 0, setDevice=lambda d: None),
    Device=lambda d: types.SimpleNamespace(compute_capability="90"),
    get_current_stream=lambda: types.SimpleNamespace(ptr=0xABC),
)
sys.modules["cupy"] = cupy
from triton.backends.nvidia import driver as nvidia
nvidia.CudaUtils = lambda: "utils"
import numpy as np
import numpile_runtime as rt
rt.use_cupy_driver()
SOURCE = """
import triton
import triton.language as tl


@triton.jit
def k(p_a, p_a_s0, p_b, p_b_s0, p_c, p_c_s0, p_d, p_d_s0, p_o, p_o_s0, xnumel,
      XBLOCK: tl.constexpr, INDEX64: tl.constexpr):
    pass
"""
fn = rt.load_triton_module(SOURCE, name_hint="launch_overhead").k


class Binary:
    function = 1
    packed_metadata = ()

    def launch_metadata(self, *args):
        return None

    def run(self, *args):
        pass


def stand_in(key, signature, device, constexprs, options, attrs, warmup):
    fn.device_caches[device][0][key] = binary = Binary()
    return binary


fn._do_compile = stand_in


class ndarray:  # what data_ptr reads of a CuPy array
    def __init__(self, ptr):
        self.data = types.SimpleNamespace(ptr=ptr)
        self.dtype = np.dtype("float64")


ndarray.__module__ = "cupy._core.core"
args = []
for i in range(5):
    args += [ndarray(4096 * (i + 1)), 1]
args.append(1)
kinds = ["ptr", "int"] * 5 + ["int"]
blocks = {"XBLOCK": 1, "INDEX64": False}
launcher = rt.TritonLauncher(fn, kinds)
launcher(args, 1, blocks, 4, 0xABC)
wrapped = [rt.KernelArg(a) if k == "ptr" else a for a, k in zip(args, kinds)]
calls = {
    "JITFunction.run": lambda: fn.run(*wrapped, grid=(1,), warmup=False, **blocks, num_warps=4),
    "TritonLauncher": lambda: launcher(args, 1, blocks, 4, 0xABC),
}
for name, call in calls.items():
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(20000):
            call()
        best = min(best, (time.perf_counter() - start) / 20000)
    print(f"{name:<16} {best * 1e6:6.2f} us per launch (5 pointers, 6 ints)")
assert launcher.launches_direct and len(launcher.compiled) == 1
'''


def main() -> int:
    """Run the measurement in a child process (its stand-ins must not leak into this one)."""
    result = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True)
    sys.stdout.write(result.stdout)
    if result.returncode != 0:
        sys.stderr.write(result.stderr[-3000:])
    return result.returncode


if __name__ == "__main__":
    raise SystemExit(main())
