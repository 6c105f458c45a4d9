"""The C backend: fused kernels as C/OpenMP loops inside one CPython extension per graph.

`ops` spells scalar operations in C, `loop` and `reduction` write loop nests,
`kernel` one `static void` function per fused kernel, `wrapper` the extension module,
`buffer_pool` the NEP 49 allocator, `autotune` the `max_autotune` timing.
"""

from __future__ import annotations

__all__: list[str] = []
