"""A kept loop of kernels replayed as one CUDA graph: the whole loop in one launch.

A `for_loop` whose body launches kernels runs on the Triton backend as a host loop of
launches (`numpile_inductor.loops.host_loop`): per iteration, one Python call of the body's
runner and one launch per kernel, some 15-30 us of host time, so a 1,000-step stencil
costs 1,000 host round trips. `LoopGraphs` records the host loop itself, every
iteration's launches with its index baked into their arguments, into one CUDA graph
(`numpile_runtime.capture_graph`) and serves later calls of the same loop by launching
that graph: one launch whatever the trip count, each kernel node a microsecond or two of
device time. The first call with a key runs the host loop (Triton compiles each
specialization it meets outside any capture), the second records and launches, later ones
replay.

A graph replays only on calls that give it what its launches baked in, its key: the range
(start, stop, step), every array argument's device pointer, shape, strides and dtype, and
every scalar argument's type and, except for the slot scalars, its value. A call with new
buffers, a new trip count or a new value of a scalar kept by value records a graph of its
own (at most `max_graphs` per loop), never replays another's. Arrays the body allocates
live in the graph's memory pool; the final carried values found there are returned as
copies (a later replay overwrites the pool), those that are the call's own arguments as
those arguments.

Slot scalars (`slots`): the loop-invariant numbers (a time step `dt`, a coefficient; a
Python number or a NumPy scalar) that only the body's kernels read. The body is compiled
to read them through pointers (`TritonOptions.scalars_in_memory`; the index, the carried
values and numbers its host code reads by value), and the loop hands it 0-d views of a
slot buffer (`numpile_runtime.ScalarSlots`) in their place: each graph records loads from
a buffer of its own, and a replay first writes the call's numbers there with one
stream-ordered host-to-device copy. One graph serves every
value, in the dtype the body was compiled for (NEP 50 is settled at compile time: a
float32 array times a Python float reads a float64 slot and rounds as NumPy does); a value
of another type is another key. A host loop of a call with a key gets the same views over
a buffer written once per call (written by kernels when an outer capture records it), so
that its iterations copy nothing. Carried scalars stay keys by value, taken by value by
the body: each iteration has its own (`t = t + dt` on Python floats is an extern call on
the host), and a carried value must keep the type the body was compiled for. The trip
count stays in the key: a graph of a variable trip count would need CUDA's conditional
nodes (a device-side while node, CUDA 12.4+), the index read from device memory, and
every host-side use of the index (bounds checks, views) on the device.

The host loop stays the fallback, with the reason on the `numpile.perf_hints` log once per
loop and reason: an argument is a host array (NumPy inputs, the interpreter), the capture
failed (an operation that synchronizes, a host copy, an error raised by the body: an
index out of bounds raises in the capture, before any kernel ran, and the host loop then
raises it as eager does, after the earlier iterations' writes), the trip count is above
`max_iterations`, the loop has too many graphs, or a carried value is a view of an
argument. A call made while the caller's stream is being captured (a loop inside a
`mode="reduce-overhead"` graph) runs the host loop into that capture. Loops with `break`
are not taken: their stop flag is read on the host after each iteration.

    >>> runner = loop_graphs(node, body, host, "model.py:12", options, {1: np.dtype("f8")})
    ... # doctest: +SKIP
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

import numpile_runtime as rt
from numpile_capture import Graph, Node

from ...config import TritonOptions
from ...loops import LoopRunner

perf_log = logging.getLogger("numpile.perf_hints")

__all__ = ["LoopGraphs", "loop_graphs"]

# The keys whose first call ran the host loop, remembered per loop up to this many: a
# caller cycling through more keys than that keeps warming up and never records.
_WARM_KEYS = 64

_NUMBERS = (bool, int, float, complex, np.generic)


def loop_graphs(
    node: Node,
    body: Graph,
    host: LoopRunner,
    where: str,
    options: TritonOptions,
    slots: Mapping[int, np.dtype[Any]] | None = None,
) -> LoopRunner:
    """The runner of a loop of kernels: `LoopGraphs` over `host`, or `host` itself where the
    loop cannot replay (graphs switched off by `options.loop_graphs == 0`, or a `break`).

    `slots`: the loop arguments (positions in its values) whose numbers the body's kernels
    alone read from memory, with the dtype they read (module docstring).

    >>> off = TritonOptions(loop_graphs=0)
    >>> loop_graphs(node, body, host, "model.py:12", off) is host  # doctest: +SKIP
    True
    """
    del body  # the host loop holds it
    if options.loop_graphs <= 0 or node.kwargs.get("breaks", False):
        return host
    return LoopGraphs(
        host,
        where,
        max_graphs=options.loop_graphs,
        max_iterations=options.loop_graph_iterations,
        slots=dict(slots or {}),
    )


@attrs.define
class _Recorded:
    # A recorded loop: the graph, and per final carried value where a replay finds it.
    captured: rt.CapturedGraph
    # ("argument", position, None): the call's own argument at `position`;
    # ("pool", -1, array): an array in the graph's pool, copied out;
    # ("value", -1, value): a value computed on the host from the key alone.
    outputs: tuple[tuple[str, int, Any], ...]
    # The slot scalars' positions, their layout and the graph's own slot buffer (None
    # where the call had none).
    numbers: tuple[int, ...] = ()
    layout: rt.ScalarSlots | None = None
    buffer: Any = None


@attrs.define
class LoopGraphs:
    """Runs a loop of kernels as one CUDA graph per key (see the module docstring).

    `skip_reason` says why the last call ran the host loop (empty when it replayed).
    `slots`: argument positions whose numbers the body's kernels alone read from memory,
    with the dtype they read: keyed by type, written to the graph's slot buffer per replay.

    >>> LoopGraphs(lambda indices, values, carried: values[:carried], "f.py:3").max_graphs
    8
    """

    host: LoopRunner
    where: str
    max_graphs: int = 8
    max_iterations: int = 20_000
    slots: Mapping[int, np.dtype[Any]] = attrs.field(factory=dict)
    skip_reason: str = ""
    _graphs: dict[Hashable, _Recorded] = attrs.field(factory=dict)
    _warm: dict[Hashable, None] = attrs.field(factory=dict)
    _broken: dict[Hashable, str] = attrs.field(factory=dict)
    _reported: set[str] = attrs.field(factory=set)
    # A layout per tuple of slot positions holding numbers, and per (positions, stream) the
    # buffer a host loop's views point into; the stream of the latest replay.
    _layouts: dict[tuple[int, ...], rt.ScalarSlots] = attrs.field(factory=dict)
    _staging: dict[tuple[tuple[int, ...], int], Any] = attrs.field(factory=dict)
    _stream: Any = None

    def __call__(self, indices: range, values: tuple[Any, ...], carried: int) -> tuple[Any, ...]:
        if not indices:
            return self.host(indices, values, carried)
        numbers = tuple(p for p in self.slots if p >= carried and isinstance(values[p], _NUMBERS))
        key, reason = _key(indices, values, carried, numbers)
        if key is None:
            return self._on_host(reason, indices, values, carried)
        recorded = self._graphs.get(key)
        if recorded is not None:
            return self._replay(recorded, values)
        if key in self._broken:
            return self._on_host(self._broken[key], indices, self._staged(values, numbers), carried)
        if len(indices) > self.max_iterations:
            reason = f"{len(indices)} iterations, above the {self.max_iterations} one graph holds"
            return self._on_host(reason, indices, self._staged(values, numbers), carried)
        if _is_capturing():
            # Inside a graph being recorded (reduce-overhead): the launches go into it.
            self.skip_reason = "the caller's stream is being captured"
            return self.host(indices, self._staged(values, numbers), carried)
        if key not in self._warm:
            if len(self._warm) >= _WARM_KEYS:
                self._warm.clear()
            self._warm[key] = None
            self.skip_reason = "warming up"
            return self.host(indices, self._staged(values, numbers), carried)
        if len(self._graphs) >= self.max_graphs:
            reason = (
                f"more than {self.max_graphs} graphs (keys: trip count, buffers, scalars "
                "kept by value)"
            )
            return self._on_host(reason, indices, self._staged(values, numbers), carried)
        recorded = self._record(key, indices, values, carried, numbers)
        if recorded is None:
            staged = self._staged(values, numbers)
            return self._on_host(self._broken[key], indices, staged, carried)
        return self._replay(recorded, values)

    def _record(
        self,
        key: Hashable,
        indices: range,
        values: tuple[Any, ...],
        carried: int,
        numbers: tuple[int, ...],
    ) -> _Recorded | None:
        # The graph's slot buffer, outside the capture: the capture records loads from it,
        # and each replay writes the call's numbers there first.
        layout = buffer = None
        given = values
        if numbers:
            layout = self._layout(numbers)
            buffer = layout.allocate(_device_module())
            given = _with_views(values, numbers, layout.views(buffer))

        def whole_loop() -> tuple[Any, ...]:
            return self.host(indices, given, carried)

        try:
            captured = rt.capture_graph(whole_loop, ())
        except rt.GraphCaptureError as error:
            self._broken[key] = str(error)
            return None
        outputs = _outputs(captured.result, given)
        if outputs is None:
            self._broken[key] = "a carried value is a view of an argument"
            return None
        recorded = _Recorded(captured, outputs, numbers, layout, buffer)
        self._graphs[key] = recorded
        rt.count("triton_loop_graph_records")
        return recorded

    def _replay(self, recorded: _Recorded, values: tuple[Any, ...]) -> tuple[Any, ...]:
        stream = self._follow(_current_stream())
        if recorded.layout is not None:
            numbers = [values[p] for p in recorded.numbers]
            recorded.layout.write(numbers, recorded.buffer, stream)
        recorded.captured.launch(stream)
        rt.count("triton_loop_graph_replays")
        self.skip_reason = ""
        results = []
        for kind, position, value in recorded.outputs:
            if kind == "argument":
                results.append(values[position])
            elif kind == "pool":
                results.append(value.copy())  # on the caller's stream, after the replay
            else:
                results.append(value)
        return tuple(results)

    def _follow(self, stream: Any) -> Any:
        # A replay on another stream than the last one waits for it first: the copy of the
        # numbers rewrites the slot buffer the last replay's kernels read.
        last = self._stream
        if last is not None and last.ptr != stream.ptr:
            stream.wait_event(last.record())
        self._stream = stream
        return stream

    def _layout(self, numbers: tuple[int, ...]) -> rt.ScalarSlots:
        layout = self._layouts.get(numbers)
        if layout is None:
            layout = self._layouts[numbers] = rt.ScalarSlots([self.slots[p] for p in numbers])
        return layout

    def _staged(self, values: tuple[Any, ...], numbers: tuple[int, ...]) -> tuple[Any, ...]:
        # `values` for a host loop: the slot numbers as views of a buffer written once per
        # call (by a copy ordered after the kernels that read the last call's; by kernels
        # into the capture when an outer graph records this call), not once per iteration.
        if not numbers:
            return values
        layout = self._layout(numbers)
        stream = _current_stream()
        numbers_given = [values[p] for p in numbers]
        if _is_capturing():
            buffer = layout.allocate(_device_module())
            for view, value in zip(layout.views(buffer), numbers_given, strict=True):
                view.fill(value)
        else:
            buffer = self._staging.get((numbers, stream.ptr))
            if buffer is None:
                buffer = layout.allocate(_device_module())
                self._staging[(numbers, stream.ptr)] = buffer
            layout.write(numbers_given, buffer, stream)
        return _with_views(values, numbers, layout.views(buffer))

    def _on_host(
        self, reason: str, indices: range, values: tuple[Any, ...], carried: int
    ) -> tuple[Any, ...]:
        self.skip_reason = reason
        if reason not in self._reported:
            self._reported.add(reason)
            perf_log.info(
                "the loop at %s runs as a host loop of launches, not as a CUDA graph: %s",
                self.where,
                reason,
            )
        return self.host(indices, values, carried)


def _key(
    indices: range, values: tuple[Any, ...], carried: int, numbers: Sequence[int]
) -> tuple[Hashable | None, str]:
    # What the recorded launches bake in, or None and why no graph may be recorded; the
    # slot scalars at `numbers` by their type alone.
    parts: list[Hashable] = [indices.start, indices.stop, indices.step, carried]
    for position, value in enumerate(values):
        if position in numbers:
            parts.append((type(value), "slot"))
        elif rt.is_device_array(value):
            parts.append(
                (
                    int(value.data.ptr),
                    tuple(value.shape),
                    tuple(value.strides),
                    value.dtype.str,
                    int(value.device.id),
                )
            )
        elif isinstance(value, np.ndarray):
            return None, f"argument {position} of the loop is a NumPy array on the host"
        elif value is None or isinstance(value, _NUMBERS):
            # The bits, not the value: NaN keys equal themselves, 0.0 and -0.0 differ.
            bits = value.tobytes() if isinstance(value, np.generic) else repr(value)
            parts.append((type(value), bits))
        else:
            return None, f"argument {position} of the loop is a {type(value).__name__}"
    if not any(rt.is_device_array(value) for value in values):
        return None, "no argument of the loop is a CuPy array"
    return tuple(parts), ""


def _with_views(
    values: tuple[Any, ...], numbers: tuple[int, ...], views: tuple[Any, ...]
) -> tuple[Any, ...]:
    given = list(values)
    for position, view in zip(numbers, views, strict=True):
        given[position] = view
    return tuple(given)


def _outputs(
    result: tuple[Any, ...], values: tuple[Any, ...]
) -> tuple[tuple[str, int, Any], ...] | None:
    # Where each final carried value of the recorded loop is found on a replay; None when
    # one is a view of an argument (its memory is neither the argument nor the pool's).
    arrays = [(position, v) for position, v in enumerate(values) if rt.is_device_array(v)]
    outputs: list[tuple[str, int, Any]] = []
    for value in result:
        same = next((position for position, v in enumerate(values) if v is value), None)
        if same is not None:
            outputs.append(("argument", same, None))
        elif rt.is_device_array(value):
            if any(_overlap(value, array) for _, array in arrays):
                return None
            outputs.append(("pool", -1, value))
        else:
            outputs.append(("value", -1, value))
    return tuple(outputs)


def _overlap(a: Any, b: Any) -> bool:
    if a.size == 0 or b.size == 0:
        return False
    a_low, a_high = rt.byte_extent(a)
    b_low, b_high = rt.byte_extent(b)
    a_start, b_start = int(a.data.ptr), int(b.data.ptr)
    return a_start + a_low < b_start + b_high and b_start + b_low < a_start + a_high


def _current_stream() -> Any:
    import cupy  # only reached with CuPy arrays

    return cupy.cuda.get_current_stream()


def _is_capturing() -> bool:
    import cupy  # only reached with CuPy arrays

    return bool(cupy.cuda.get_current_stream().is_capturing())


def _device_module() -> Any:
    import cupy  # only reached with CuPy arrays

    return cupy
