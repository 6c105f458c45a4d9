"""Code generation: one folder per backend over one backend-neutral vocabulary.

- `codegen.c`: C/OpenMP kernels and the CPython extension wrapper (CPUs).
- `codegen.triton`: Triton kernels and the Python runner (GPUs, or Triton's interpreter).

Both backends take the same scheduled loop IR (`numpile_inductor.scheduler`); neither
imports the other. What they share (the scalar-op vocabulary, dtype categories, the op-table
registry, the code buffer and the kernel context) is `codegen.common`, re-exported here;
NumPy's scalar-constructor rules both print are `codegen.numpy_scalar_rules`.
"""

from __future__ import annotations

from .common import KERNEL_DTYPES as KERNEL_DTYPES
from .common import OP_TABLES as OP_TABLES
from .common import SCALAR_OPS as SCALAR_OPS
from .common import CodeBuffer as CodeBuffer
from .common import KernelContext as KernelContext
from .common import OpTable as OpTable
from .common import category as category
from .common import kernel_dtype as kernel_dtype
from .common import register_op_table as register_op_table
from .common import supports as supports

__all__ = [
    "KERNEL_DTYPES",
    "OP_TABLES",
    "SCALAR_OPS",
    "CodeBuffer",
    "KernelContext",
    "OpTable",
    "category",
    "kernel_dtype",
    "register_op_table",
    "supports",
]
