"""The C backend: fused kernels as C/OpenMP loops inside one CPython extension per graph.

`ops` spells scalar operations in C, `loop` and `reduction` write loop nests,
`kernel` one `static void` function per fused kernel, `wrapper` the extension module,
`buffer_pool` the NEP 49 allocator, `autotune` the `max_autotune` timing. Scalar C
for loop bodies (issue 23) goes in `loop_body.py`, beside `loop`.

The façade re-exports only what a warm start needs (no sympy): the code generator
(`kernel`, `wrapper`) loads on the first compile that misses the graph cache
(`numpile_inductor.backend`).
"""

from __future__ import annotations

from .autotune import AutotuneChoice as AutotuneChoice
from .buffer_pool import buffer_pool_bytes as buffer_pool_bytes
from .buffer_pool import trim_buffer_pool as trim_buffer_pool

__all__ = ["AutotuneChoice", "buffer_pool_bytes", "trim_buffer_pool"]
