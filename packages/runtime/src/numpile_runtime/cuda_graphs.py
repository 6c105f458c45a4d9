"""CUDA-graph capture and replay of a compiled call (`mode="reduce-overhead"`), on CuPy.

A compiled call launches several kernels; each launch costs microseconds of
CPU time. `CudaGraphRunner` records one call into a CUDA graph (CuPy's
stream capture) on *static* input and output buffers, then serves later
calls by copying the inputs into the static buffers and replaying the graph:
one launch. Contiguous inputs (and outputs) are copied with one
`cudaMemcpyAsync` each, a driver call instead of a copy kernel's launch. It is
skipped, and the call runs normally, when replay could be wrong:

- an input is not a CuPy array (NumPy arrays, Python or NumPy scalars: the
  call uploads them, and a captured upload would replay stale host memory),
- the shapes, dtypes or strides differ from the recorded call (a new graph
  is recorded per signature, up to `max_graphs`),
- the function mutates an input in place and `allow_mutation` is False
  (replay writes the static copy, not the caller's array),
- capture itself fails (an operation that synchronizes, allocates outside the
  pool, or calls the host): the reason is kept in `skip_reason`.

Replays run on the caller's current stream, without synchronizing, like the
kernels of a plain call. Buffers allocated during capture come from a memory
pool private to the graph (kept alive with it), since every replay writes
them. Outputs are the static output buffers: as in `torch.compile`'s cudagraph
trees, a later replay overwrites them, so the runner returns copies unless
`copy_outputs=False`. Importing this module needs neither CuPy nor a GPU.

    >>> runner = CudaGraphRunner(compiled_fn)  # doctest: +SKIP
    >>> runner(x_gpu, y_gpu)  # first call records, later calls replay  # doctest: +SKIP
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import attrs

from .cuda_graph_capture import GraphCaptureError, capture_graph
from .cuda_launch import is_device_array

log = logging.getLogger("numpile.runtime.cuda")


def _signature(args: tuple[Any, ...]) -> tuple[Any, ...] | None:
    # The replay key of a call, or None when some input rules out replay: a value that is
    # not a CuPy array is uploaded by the call itself, and a captured upload would replay
    # stale host memory.
    key: list[Any] = []
    for arg in args:
        if not is_device_array(arg):
            return None
        key.append((tuple(arg.shape), arg.dtype.str, tuple(arg.strides), int(arg.device.id)))
    return tuple(key)


@attrs.define
class _Recorded:
    graph: Any
    pool: Any  # the private memory pool the graph's buffers live in, kept with it
    static_inputs: list[Any]
    outputs: Any
    flat: list[bool]  # per input: C-contiguous (copied as bytes), fixed by the signature


@attrs.define
class CudaGraphRunner:
    """Record `fn` into a CUDA graph per input signature and replay it (see module docstring).

    `skip_reason` says why the last call did not replay (empty when it did).

    >>> CudaGraphRunner(lambda x: x).max_graphs
    8
    """

    fn: Callable[..., Any]
    max_graphs: int = 8
    copy_outputs: bool = True
    allow_mutation: bool = False
    warmup_calls: int = 1
    skip_reason: str = ""
    _graphs: dict[tuple[Any, ...], _Recorded] = attrs.field(factory=dict)
    _seen: dict[tuple[Any, ...], int] = attrs.field(factory=dict)
    _broken: dict[tuple[Any, ...], str] = attrs.field(factory=dict)

    def __call__(self, *args: Any) -> Any:
        key = _signature(args)
        if key is None:
            self.skip_reason = "an input is not a CuPy array (the call would upload it)"
            return self.fn(*args)
        if key in self._broken:
            self.skip_reason = self._broken[key]
            return self.fn(*args)
        recorded = self._graphs.get(key)
        if recorded is None:
            # Warm up first: Triton compiles and CuPy's pool grows outside the capture.
            count = self._seen.get(key, 0)
            if count < self.warmup_calls or len(self._graphs) >= self.max_graphs:
                self._seen[key] = count + 1
                self.skip_reason = "warming up" if count < self.warmup_calls else "too many graphs"
                return self.fn(*args)
            recorded = self._record(key, args)
            if recorded is None:
                return self.fn(*args)
        self.skip_reason = ""
        return self._replay(recorded, args)

    def _record(self, key: tuple[Any, ...], args: tuple[Any, ...]) -> _Recorded | None:
        import cupy  # optional dependency: only reached with CuPy inputs

        caller = cupy.cuda.get_current_stream()
        static = [arg.copy() for arg in args]
        snapshot = [arg.copy() for arg in static]
        try:
            captured = capture_graph(self.fn, tuple(static))
        except GraphCaptureError as error:
            reason = str(error)
            log.info("%s; this signature runs without graphs", reason)
            self._broken[key] = reason
            self.skip_reason = reason
            return None
        captured.launch(caller)  # the capture did not run the kernels: run them once now
        mutated = any(
            not bool(cupy.array_equal(before, after, equal_nan=True))
            for before, after in zip(snapshot, static, strict=True)
        )
        if mutated and not self.allow_mutation:
            reason = "the function mutates an input: replay would write the static copy"
            self._broken[key] = reason
            self.skip_reason = reason
            return None
        flat = [bool(arg.flags.c_contiguous) for arg in static]
        recorded = _Recorded(captured.graph, captured.pool, static, captured.result, flat)
        self._graphs[key] = recorded
        log.debug("recorded a CUDA graph for signature %s", key)
        return recorded

    def _replay(self, recorded: _Recorded, args: tuple[Any, ...]) -> Any:
        # On the caller's stream, asynchronously, like the kernels of a plain call.
        import cupy

        stream = cupy.cuda.get_current_stream()
        for static, arg, flat in zip(recorded.static_inputs, args, recorded.flat, strict=True):
            if flat and arg.flags.c_contiguous:
                static.data.copy_from_device_async(arg.data, arg.nbytes, stream)
            else:
                cupy.copyto(static, arg)
        recorded.graph.launch(stream)
        if not self.copy_outputs:
            return recorded.outputs
        return _copy_tree(recorded.outputs, stream)


def _copy_tree(value: Any, stream: Any) -> Any:
    # Fresh copies of the static outputs (a later replay overwrites them), on `stream`.
    if is_device_array(value):
        if not value.flags.c_contiguous:
            return value.copy()
        import cupy

        fresh = cupy.empty(value.shape, value.dtype)
        fresh.data.copy_from_device_async(value.data, value.nbytes, stream)
        return fresh
    if isinstance(value, tuple):
        return tuple(_copy_tree(v, stream) for v in value)
    if isinstance(value, list):
        return [_copy_tree(v, stream) for v in value]
    if isinstance(value, dict):
        return {k: _copy_tree(v, stream) for k, v in value.items()}
    return value
