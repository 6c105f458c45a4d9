"""Recording a Python function's kernel launches into one CUDA graph, on CuPy.

`capture_graph` is the one place numpile records CUDA graphs: the call graphs of
`mode="reduce-overhead"` (`cuda_graphs.CudaGraphRunner`) and any caller that wants
many launches replayed as one. It captures on a side stream (the legacy default stream
cannot be captured) ordered after the caller's stream, with every buffer the function
allocates taken from a memory pool kept with the graph: each replay writes those buffers,
so nothing else may be handed them. The capture does not run the kernels; the caller
launches the graph once to get the first results. Importing this module needs neither
CuPy nor a GPU.

    >>> captured = capture_graph(fn, (x_gpu,))  # doctest: +SKIP
    >>> captured.launch(cupy.cuda.get_current_stream())  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs


class GraphCaptureError(RuntimeError):
    """The function could not be captured (it synchronized, copied to the host, ...)."""


@attrs.define
class CapturedGraph:
    """A recorded CUDA graph, the pool its buffers live in, and the captured call's result."""

    graph: Any
    pool: Any
    result: Any

    def launch(self, stream: Any) -> None:
        """Replay the graph on `stream` (asynchronously, like a plain launch)."""
        self.graph.launch(stream)


def capture_graph(
    fn: Callable[..., Any], args: tuple[Any, ...], pool: Any | None = None
) -> CapturedGraph:
    """Record `fn(*args)` into a CUDA graph on a side stream, allocating from `pool`.

    `pool` (a `cupy.cuda.MemoryPool`) may be shared between graphs that never replay at
    the same time; by default each graph gets its own. Raises `GraphCaptureError` with the
    reason when the capture fails.
    """
    import cupy  # optional dependency: only reached with CuPy inputs

    caller = cupy.cuda.get_current_stream()
    stream = cupy.cuda.Stream(non_blocking=True)
    stream.wait_event(caller.record())
    pool = cupy.cuda.MemoryPool() if pool is None else pool
    try:
        with cupy.cuda.using_allocator(pool.malloc), stream:
            stream.begin_capture()
            try:
                result = fn(*args)
            finally:
                graph = stream.end_capture()
    except Exception as error:
        raise GraphCaptureError(
            f"CUDA graph capture failed: {type(error).__name__}: {error}"
        ) from error
    caller.wait_event(stream.record())
    return CapturedGraph(graph, pool, result)
