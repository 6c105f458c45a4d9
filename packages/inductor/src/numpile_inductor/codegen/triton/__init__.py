"""The Triton backend: fused kernels as `@triton.jit` functions run from a Python runner.

`ops` spells scalar operations in Triton, `kernel` pointwise and reduction kernels,
`rows` row groups as one kernel, `split` split reductions, `matmul` the `tl.dot`
template, `autotune` launch-configuration timing, `externs` extern calls on the device,
`interpret` libdevice for Triton's CPU interpreter, `backend` the pipeline's last stage.
"""

from __future__ import annotations

__all__: list[str] = []
