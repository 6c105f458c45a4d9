"""The Triton backend: fused kernels as `@triton.jit` functions run from a Python runner.

`ops` spells scalar operations in Triton, `kernel` pointwise and reduction kernels,
`rows` row groups as one kernel, `split` split reductions, `matmul` the `tl.dot`
template, `autotune` launch-configuration timing, `externs` extern calls on the device,
`interpret` libdevice for Triton's CPU interpreter, `backend` the pipeline's last stage,
`runner` the Python that runs a compiled module's steps per call.
"""

from __future__ import annotations

from .backend import TritonCompiled as TritonCompiled
from .backend import TritonModule as TritonModule
from .backend import compile_triton as compile_triton
from .backend import generate_triton as generate_triton
from .backend import triton_backend as triton_backend
from .kernel import TritonKernel as TritonKernel
from .kernel import TritonUnsupported as TritonUnsupported

__all__ = [
    "TritonCompiled",
    "TritonKernel",
    "TritonModule",
    "TritonUnsupported",
    "compile_triton",
    "generate_triton",
    "triton_backend",
]
