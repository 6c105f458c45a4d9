"""Code generation: one folder per backend over one backend-neutral vocabulary.

- `codegen.c`: C/OpenMP kernels and the CPython extension wrapper (CPUs).
- `codegen.triton`: Triton kernels and the Python runner (GPUs, or Triton's interpreter).

Both backends take the same scheduled loop IR (`numpile_inductor.scheduler`); neither
imports the other.
"""

from __future__ import annotations

__all__: list[str] = []
