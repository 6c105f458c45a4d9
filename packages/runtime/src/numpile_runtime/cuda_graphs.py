"""CUDA-graph replay of a compiled call (`mode="reduce-overhead"`) on the caller's own buffers.

A compiled call launches several kernels; each launch costs microseconds of CPU time.
`CudaGraphRunner` records one call into a CUDA graph (`capture_graph`) *on the caller's
arrays* and replays it, one launch, whenever a later call passes arrays at the same device
addresses with the same shapes, strides and dtypes (the graph's kernels read and write those
addresses, whichever Python objects now own them). Nothing is copied in or out:

- Key: per argument, a CuPy array's (pointer, shape, strides, dtype); a number the kernels
  read from device memory (`in_memory` positions, with the dtype they read) by its type
  alone: before each replay the runner writes the call's numbers into the graph's own slot
  buffer with one stream-ordered copy (`scalar_slots.ScalarSlots`), so a step size or a time
  `t` that changes every call replays one graph; a number passed to the kernels by value
  (`by_value` positions: one that an extern call or a size also reads) with its type and
  exact value (NEP 50: 2, 2.0 and `np.float32(2)` are three keys; -0.0 is not 0.0).
  Anything else (NumPy arrays, numbers the call uploads) runs the plain call.
- Recording: the `in_memory` numbers are handed to the function as 0-d CuPy arrays over
  the graph's slot buffer (its kernels take pointers there), so the capture records loads
  from that buffer, never the values. A pointer key's first call runs plainly (Triton
  compiles, CuPy's pool grows); its second is recorded. Arrays at new addresses (a fresh
  temporary per call) run plainly until they repeat: on the H200, replay through static
  buffers with copies was slower than the plain call on every workload (`docs/status.md`),
  so a key is recorded only where it recurs. At most `max_graphs` graphs are kept (the
  least recently replayed one whose outputs nobody holds is dropped) and at most
  `max_records` recordings are made per runner, so addresses that never settle cost plain
  calls, not captures.
- Outputs: a replay writes the buffers the graph allocated, so the runner hands out those
  buffers themselves, and before the next replay checks that the caller let go of them:
  the reference counts of each output, its base, its `MemoryPointer` and the memory behind
  it are back to what the runner alone holds (views keep `.base`, a held `.data` keeps the
  pointer, any pointer keeps its memory). Where they are not, a second graph for the same
  key, with buffers of its own, serves the call (`buffer_sets`: `y = f(x)` in a loop holds
  the previous `y` during the call, and alternates between two), and past that the call
  runs plainly: `y1 = f(x); y2 = f(x)` always leaves `y1` intact. An output that is not
  memory the graph allocated (an input, a view of one) rules graphs out for that key.
- Pool: every graph of a runner allocates from one memory pool, and keeps every block its
  capture took (scratch too) until it is dropped: no graph is ever given memory another
  one writes, and a dropped graph's blocks serve the next recording.
- Mutation: a function that writes an input writes the recorded address, which is the
  current caller's array whenever the key matches: replay does what the plain call does.
- Streams: replays run on the caller's current stream; when it changes, the new stream
  first waits for the previous replay (the next replay of a graph rewrites its buffers,
  its slot buffer included: the copy of the numbers is queued after that wait).
  Threads: a call that finds another thread inside the runner runs plainly (the
  liveness test and the launch must not interleave).

`release_cuda_graphs()` (called by `numpile.reset()`) drops every runner's graphs and
returns their pools' free blocks to the device. Importing this module needs neither CuPy
nor a GPU.

    >>> runner = CudaGraphRunner(compiled_fn)  # doctest: +SKIP
    >>> runner(x_gpu, y_gpu)  # a plain call; the next records; later calls replay  # doctest: +SKIP
"""

from __future__ import annotations

import logging
import sys
import threading
import weakref
from collections.abc import Callable, Collection, Mapping
from typing import Any

import attrs
import numpy as np

from .cuda_graph_capture import GraphCaptureError, capture_graph
from .cuda_launch import is_device_array
from .scalar_slots import ScalarSlots

log = logging.getLogger("numpile.runtime.cuda")

_NUMBERS = (bool, int, float, complex, np.generic)

# Every live runner, so that `release_cuda_graphs` reaches graphs nobody else will free.
_RUNNERS: weakref.WeakSet[CudaGraphRunner] = weakref.WeakSet()


def call_key(
    args: tuple[Any, ...],
    by_value: frozenset[int],
    in_memory: Collection[int] = frozenset(),
) -> tuple[Any, ...] | None:
    """The replay key of a call (see the module docstring), or None where it cannot replay.

    >>> call_key((1.5, -0.0), frozenset({0, 1}))
    (<class 'float'>, '0x1.8000000000000p+0', <class 'float'>, '-0x0.0p+0')
    >>> call_key((1.5, -0.0), frozenset({1}), in_memory={0})
    (<class 'float'>, <class 'float'>, '-0x0.0p+0')
    """
    key: list[Any] = []
    for position, arg in enumerate(args):
        if is_device_array(arg):
            key += (arg.data.ptr, arg.shape, arg.strides, arg.dtype)
        elif position in in_memory and isinstance(arg, _NUMBERS):
            key.append(type(arg))
        elif position in by_value and isinstance(arg, _NUMBERS):
            key += (type(arg), _exact(arg))
        else:
            return None
    return tuple(key)


def _exact(value: Any) -> Any:
    # A number as a key that tells -0.0 from 0.0 and matches NaN with NaN.
    if isinstance(value, float | np.floating):
        return float(value).hex()
    if isinstance(value, complex | np.complexfloating):
        return complex(value).real.hex(), complex(value).imag.hex()
    return value


@attrs.define(eq=False)
class _HeldPool:
    # The runner's pool as `capture_graph` sees it: every block a capture takes stays the
    # graph's (scratch included) until the graph is dropped, so no other graph of the pool
    # is ever handed memory this one writes.
    pool: Any
    taken: list[Any] = attrs.field(factory=list)

    def malloc(self, nbytes: int) -> Any:
        pointer = self.pool.malloc(nbytes)
        self.taken.append(pointer)
        return pointer


@attrs.define(eq=False)
class _Recorded:
    # One graph, recorded on one key's addresses, with the blocks it writes, and the slot
    # buffer its kernels read the numbers at `numbers` (positions) from, laid out by
    # `layout` (None: it reads none).
    # NOTE: `expected` is the reference counts of `watched` when only the runner holds them:
    # the outputs are free to overwrite exactly when the counts are back to it.
    graph: Any
    blocks: list[Any]
    rebuild: Callable[[], Any]
    watched: tuple[Any, ...]
    numbers: tuple[int, ...] = ()
    layout: ScalarSlots | None = None
    slots: Any = None
    expected: list[int] = attrs.field(factory=list)
    handed: bool = False
    tick: int = 0

    def settle(self) -> None:
        # Called where no frame but the runner's holds an output.
        self.expected = list(map(sys.getrefcount, self.watched))

    def outputs_free(self) -> bool:
        return not self.handed or list(map(sys.getrefcount, self.watched)) == self.expected


@attrs.define(eq=False)
class CudaGraphRunner:
    """Record `fn` into CUDA graphs on the caller's buffers and replay them (module docstring).

    `by_value`: argument positions whose numbers the kernels take by value (a graph per
    value). `in_memory`: argument positions whose numbers the kernels read from device
    memory, with the dtype they read (`fn` takes a 0-d CuPy array of it there, or the
    number: one graph for every value). `buffer_sets`: graphs per key, each with its own
    outputs, so that `y = f(x)` in a loop (the previous `y` still held during the call)
    alternates between two.
    `skip_reason` says why the last call did not replay (empty when it did); `replays` and
    `records` count the calls that replayed and the graphs recorded.

    >>> CudaGraphRunner(lambda x: x).max_graphs
    8
    """

    fn: Callable[..., Any]
    by_value: frozenset[int] = frozenset()
    in_memory: Mapping[int, np.dtype[Any]] = attrs.field(factory=dict)
    max_graphs: int = 8
    max_records: int = 32
    buffer_sets: int = 2
    warmup_calls: int = 1
    skip_reason: str = ""
    records: int = 0
    replays: int = 0
    _graphs: dict[tuple[Any, ...], list[_Recorded]] = attrs.field(factory=dict)
    _seen: dict[tuple[Any, ...], int] = attrs.field(factory=dict)
    _broken: dict[tuple[Any, ...], str] = attrs.field(factory=dict)
    _told: set[str] = attrs.field(factory=set)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, repr=False)
    _pool: Any = None
    _current_stream: Any = attrs.field(default=None, repr=False)  # cupy.cuda.get_current_stream
    _stream: Any = None
    _tick: int = 0
    _layouts: dict[tuple[int, ...], ScalarSlots] = attrs.field(factory=dict, repr=False)

    def __attrs_post_init__(self) -> None:
        _RUNNERS.add(self)

    def __call__(self, *args: Any) -> Any:
        if not self._lock.acquire(blocking=False):
            return self.fn(*args)
        try:
            key = call_key(args, self.by_value, self.in_memory)
            graphs = None if key is None else self._graphs.get(key)
            if graphs is not None:
                for recorded in graphs:
                    if recorded.outputs_free():
                        self._launch(recorded, args)
                        self.replays += 1
                        self.skip_reason = ""
                        return recorded.rebuild()
            return self._without_replay(key, args, graphs)
        finally:
            self._lock.release()

    @property
    def graph_count(self) -> int:
        """How many graphs the runner holds now."""
        return sum(len(graphs) for graphs in self._graphs.values())

    def release(self) -> None:
        """Drop every graph and return the pool's free blocks to the device."""
        self._graphs.clear()
        self._seen.clear()
        self._broken.clear()
        if self._pool is not None:
            self._pool.free_all_blocks()

    def _launch(self, recorded: _Recorded, args: tuple[Any, ...]) -> None:
        stream = self._current_stream()
        last = self._stream
        if last is not None and last.ptr != stream.ptr:
            stream.wait_event(last.record())  # a graph's buffers outlive its last replay
        self._stream = stream
        layout = recorded.layout
        if layout is not None:
            layout.write([args[p] for p in recorded.numbers], recorded.slots, stream)
        recorded.graph.launch(stream)
        recorded.handed = True
        self._tick += 1
        recorded.tick = self._tick

    def _without_replay(
        self, key: tuple[Any, ...] | None, args: tuple[Any, ...], graphs: list[_Recorded] | None
    ) -> Any:
        if key is None:
            return self._plain(
                "an input is neither a CuPy array nor a number passed by value", args
            )
        if key in self._broken:
            return self._plain(self._broken[key], args)
        if graphs is None:
            seen = self._seen.pop(key, 0) + 1
            self._seen[key] = seen
            if len(self._seen) > 8 * self.max_graphs:
                del self._seen[next(iter(self._seen))]
            if seen <= self.warmup_calls:
                return self._plain("warming up", args)
        elif len(graphs) >= self.buffer_sets:
            return self._plain("outputs of earlier replays are still held", args)
        if self.records >= self.max_records:
            return self._plain("recorded max_records graphs already: addresses keep changing", args)
        if self.graph_count >= self.max_graphs and not self._evict():
            return self._plain("every graph's outputs are still held", args)
        recorded = self._record(key, args)
        if recorded is None:
            return self._plain(self._broken[key], args)
        self._graphs.setdefault(key, []).append(recorded)
        recorded.settle()
        self._launch(recorded, args)  # the capture did not run the kernels: run them once now
        self.skip_reason = ""
        return recorded.rebuild()

    def _plain(self, reason: str, args: tuple[Any, ...]) -> Any:
        # A call that does not replay, and why (logged once per reason and runner).
        self.skip_reason = reason
        if reason not in self._told:
            self._told.add(reason)
            log.debug("a call runs without CUDA graphs: %s", reason)
        return self.fn(*args)

    def _evict(self) -> bool:
        # Drop the least recently replayed graph whose outputs nobody holds.
        free = [
            (recorded.tick, key, index)
            for key, graphs in self._graphs.items()
            for index, recorded in enumerate(graphs)
            if recorded.outputs_free()
        ]
        if not free:
            return False
        _, key, index = min(free)
        graphs = self._graphs[key]
        del graphs[index]
        if not graphs:
            del self._graphs[key]
        return True

    def _record(self, key: tuple[Any, ...], args: tuple[Any, ...]) -> _Recorded | None:
        import cupy  # optional dependency: only reached with CuPy inputs

        if self._pool is None:
            self._pool = cupy.cuda.MemoryPool()
            self._current_stream = cupy.cuda.get_current_stream  # no import per replay
        pool = _HeldPool(self._pool)
        self.records += 1
        # (a device array where a number may go is keyed by its address: no slot)
        numbers = tuple(p for p in self.in_memory if isinstance(args[p], _NUMBERS))
        layout = slots = None
        if numbers:
            layout = self._layouts.get(numbers)
            if layout is None:
                layout = ScalarSlots([self.in_memory[p] for p in numbers])
                self._layouts[numbers] = layout
            with cupy.cuda.using_allocator(self._pool.malloc):  # outside any graph's blocks
                slots = layout.allocate(cupy)
            given = list(args)
            for position, view in zip(numbers, layout.views(slots), strict=True):
                given[position] = view
            args = tuple(given)
        try:
            captured = capture_graph(self.fn, args, pool)
        except GraphCaptureError as error:
            self._refuse(key, str(error))
            return None
        leaves: list[Any] = []
        rebuild = _rebuilder(captured.result, leaves)
        starts = {int(pointer.mem.ptr) for pointer in pool.taken}
        arrays = [leaf for leaf in leaves if is_device_array(leaf)]
        if any(not is_device_array(v) and not _immutable(v) for v in leaves) or any(
            int(a.data.mem.ptr) not in starts for a in arrays
        ):
            self._refuse(key, "an output is not a buffer the graph allocated")
            return None
        watched: dict[int, Any] = {}
        for array in arrays:
            for obj in (array, array.base, array.data, array.data.mem):
                if obj is not None:
                    watched.setdefault(id(obj), obj)
        log.debug("recorded a CUDA graph for key %s", key)
        watching = tuple(watched.values())
        return _Recorded(captured.graph, pool.taken, rebuild, watching, numbers, layout, slots)

    def _refuse(self, key: tuple[Any, ...], reason: str) -> None:
        log.info("%s; these arguments run without graphs", reason)
        self._broken[key] = reason


def _immutable(value: Any) -> bool:
    return value is None or isinstance(value, _NUMBERS | str | bytes)


def _rebuilder(tree: Any, leaves: list[Any]) -> Callable[[], Any]:
    # A function giving `tree` with fresh containers around the same leaves (a caller may
    # keep or change a list it got), appending the leaves to `leaves`.
    if isinstance(tree, tuple | list):
        parts = [_rebuilder(item, leaves) for item in tree]
        kind = type(tree)
        make = getattr(kind, "_make", kind)  # a named tuple takes its fields one by one
        if not any(isinstance(item, tuple | list | dict) for item in tree):
            items = list(tree)
            return lambda: make(items)
        return lambda: make(part() for part in parts)
    if isinstance(tree, dict):
        keys = list(tree)
        values = [_rebuilder(tree[k], leaves) for k in keys]
        return lambda: {k: v() for k, v in zip(keys, values, strict=True)}
    leaves.append(tree)
    return lambda: tree


def release_cuda_graphs() -> int:
    """Drop the graphs of every `CudaGraphRunner` and free their pools; how many runners.

    `numpile.reset()` calls it. Outputs a caller still holds stay valid (their memory is
    freed when they die).

    >>> release_cuda_graphs() >= 0
    True
    """
    runners = list(_RUNNERS)
    for runner in runners:
        runner.release()
    return len(runners)
