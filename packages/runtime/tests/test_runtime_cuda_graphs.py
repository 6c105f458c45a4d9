"""`CudaGraphRunner`'s policy without a GPU: a stand-in CuPy whose graphs replay by address.

The stand-in keeps device memory in one host array (`HEAP`): an array is an address, a
shape, strides and a dtype; a "kernel" recorded under capture keeps the addresses of its
arrays, never the objects, so a replay reads and writes whatever now lives there, as a
CUDA graph does. Pools reuse a freed block of the same size first, as CuPy's do.
"""

from __future__ import annotations

import contextlib
import ctypes
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import numpile_runtime as rt

HEAP = np.zeros(1 << 16, np.uint8)
_BASE = HEAP.__array_interface__["data"][0]
_STATE: dict[str, Any] = {"bump": 0, "capturing": None, "allocator": None}


class Memory:
    def __init__(self, pool: Pool, ptr: int, size: int) -> None:
        self.pool, self.ptr, self.size = pool, ptr, size

    def __del__(self) -> None:
        self.pool.free.setdefault(self.size, []).append(self.ptr)


class MemoryPointer:
    def __init__(self, mem: Memory, offset: int) -> None:
        self.mem, self.ptr, self.offset = mem, mem.ptr + offset, offset

    def __add__(self, offset: int) -> MemoryPointer:
        return MemoryPointer(self.mem, self.offset + offset)


class Pool:
    def __init__(self) -> None:
        self.free: dict[int, list[int]] = {}
        self.freed_all = 0

    def malloc(self, nbytes: int) -> MemoryPointer:
        size = -(-max(nbytes, 1) // 256) * 256
        reusable = self.free.get(size)
        if reusable:
            ptr = reusable.pop()
        else:
            ptr = _STATE["bump"]
            _STATE["bump"] += size
        return MemoryPointer(Memory(self, ptr, size), 0)

    def free_all_blocks(self) -> None:
        self.free.clear()
        self.freed_all += 1


class ndarray:  # noqa: N801 (CuPy's name: `is_device_array` recognizes it by name)
    def __init__(
        self,
        shape: Any,
        dtype: Any,
        data: MemoryPointer | None = None,
        strides: Any = None,
        base: Any = None,
        *,
        memptr: MemoryPointer | None = None,
    ):
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        self.data = memptr if data is None else data
        self.strides = np.empty(shape, dtype).strides if strides is None else tuple(strides)
        self.base = base

    def host(self) -> np.ndarray[Any, Any]:
        offset = self.data.ptr
        return np.ndarray(self.shape, self.dtype, HEAP, offset, self.strides)

    def __getitem__(self, index: Any) -> ndarray:
        view = self.host()[index]
        offset = view.__array_interface__["data"][0] - _BASE - self.data.mem.ptr
        pointer = MemoryPointer(self.data.mem, offset)
        return ndarray(view.shape, self.dtype, pointer, view.strides, self.base or self)


ndarray.__module__ = "cupy"
DEFAULT_POOL = Pool()


def empty(shape: int | tuple[int, ...], dtype: Any = np.float64) -> ndarray:
    shape = (shape,) if isinstance(shape, int) else shape
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    pointer = (_STATE["allocator"] or DEFAULT_POOL.malloc)(nbytes)
    strides = np.empty(shape, dtype).strides
    return ndarray(shape, dtype, pointer, strides, None)


def array(values: Any, dtype: Any = np.float64) -> ndarray:
    host = np.asarray(values, dtype)
    out = empty(host.shape, dtype)
    out.host()[...] = host
    return out


def _spec(a: ndarray) -> tuple[Any, ...]:
    return (a.shape, a.dtype, a.data.ptr, a.strides)


COPIES: list[bytes] = []  # what each host-to-device copy wrote


def memcpy_async(dst: int, src: int, size: int, kind: int, stream: int) -> None:
    # A copy from pageable host memory: the bytes are taken now, written in stream order
    # (the stand-in runs everything at once). CUDA cannot record one into a graph.
    assert kind == 1 and _STATE["capturing"] is None, "a pageable copy under capture"
    data = ctypes.string_at(src, size)
    COPIES.append(data)
    HEAP[dst : dst + size] = np.frombuffer(data, np.uint8)


def launch(kernel: Callable[..., None], *args: Any) -> None:
    """A kernel launch: recorded (by address) under capture, run at once otherwise."""
    specs = [
        (a.shape, a.dtype, a.data.ptr, a.strides) if isinstance(a, ndarray) else a for a in args
    ]

    def run() -> None:
        kernel(
            *(
                np.ndarray(s[0], s[1], HEAP, s[2], s[3]) if isinstance(s, tuple) else s
                for s in specs
            )
        )

    if _STATE["capturing"] is not None:
        _STATE["capturing"].append(run)
    else:
        run()


class Graph:
    def __init__(self, nodes: list[Callable[[], None]]) -> None:
        self.nodes = nodes
        self.launches = 0

    def launch(self, stream: Any) -> None:
        self.launches += 1
        for node in self.nodes:
            node()


class Stream:
    def __init__(self, non_blocking: bool = False) -> None:
        self.ptr = id(self)

    def record(self) -> object:
        return object()

    def wait_event(self, event: object) -> None:
        pass

    def begin_capture(self) -> None:
        _STATE["capturing"] = []

    def end_capture(self) -> Graph:
        nodes, _STATE["capturing"] = _STATE["capturing"], None
        return Graph(nodes)

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


_MAIN = Stream()


@contextlib.contextmanager
def using_allocator(malloc: Callable[[int], MemoryPointer]) -> Iterator[None]:
    previous, _STATE["allocator"] = _STATE["allocator"], malloc
    try:
        yield
    finally:
        _STATE["allocator"] = previous


@pytest.fixture(autouse=True)
def fake_cupy(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("cupy")
    module.ndarray = ndarray  # type: ignore[attr-defined]
    module.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        get_current_stream=lambda: _MAIN,
        Stream=Stream,
        MemoryPool=Pool,
        using_allocator=using_allocator,
        runtime=types.SimpleNamespace(memcpyAsync=memcpy_async),
    )
    module.empty = empty  # type: ignore[attr-defined]
    COPIES.clear()
    monkeypatch.setitem(sys.modules, "cupy", module)


class Counted:
    """`x + y` (or `x * s`) as a compiled call: counts plain calls and keeps scratch."""

    def __init__(self, scratch: bool = False) -> None:
        self.calls = 0
        self.scratch = scratch

    def __call__(self, x: ndarray, y: Any) -> ndarray:
        self.calls += 1
        out = empty(x.shape, x.dtype)
        tmp = empty(x.shape, x.dtype) if self.scratch else out
        if isinstance(y, ndarray):
            launch(lambda t, a, b: np.add(a, b, out=t), tmp, x, y)
        else:
            launch(lambda t, a: np.multiply(a, y, out=t), tmp, x)
        if tmp is not out:
            launch(lambda o, t: np.copyto(o, t), out, tmp)
        return out


def _values(a: ndarray) -> list[float]:
    return [float(v) for v in a.host()]


def test_matching_pointers_replay_with_no_copy_and_hand_out_the_same_buffer() -> None:
    fn = Counted()
    runner = rt.CudaGraphRunner(fn)
    x, y = array([1.0, 2.0]), array([10.0, 20.0])
    assert _values(runner(x, y)) == [11.0, 22.0] and runner.skip_reason == "warming up"
    first = runner(x, y)  # recorded on x's and y's addresses
    first_id = id(first)
    assert fn.calls == 2 and runner.graph_count == 1 and runner.skip_reason == ""
    del first
    x.host()[...] = [5.0, 6.0]
    again = runner(x, y)
    assert fn.calls == 2 and runner.skip_reason == ""  # replayed
    assert id(again) == first_id  # the graph's own buffer, no copy
    assert _values(again) == [15.0, 26.0]


def test_new_pointers_never_write_the_recorded_callers_arrays() -> None:
    def fn(x: ndarray) -> ndarray:
        launch(lambda a: np.add(a, 1.0, out=a), x)  # writes its input, as `x += 1`
        out = empty(x.shape, x.dtype)
        launch(lambda o, a: np.multiply(a, 2.0, out=o), out, x)
        return out

    runner = rt.CudaGraphRunner(fn)
    a = array([0.0, 0.0])
    runner(a)
    runner(a)  # recorded on a's address (and run once)
    b = array([100.0, 100.0])
    out = runner(b)
    assert _values(a) == [2.0, 2.0]  # two calls on a, none since
    assert _values(b) == [101.0, 101.0] and _values(out) == [202.0, 202.0]
    del out
    runner(a)  # replays: the mutation lands in the current caller's array, as a plain call
    assert runner.skip_reason == "" and _values(a) == [3.0, 3.0]


@pytest.mark.parametrize(
    "hold",
    [
        lambda y: y,
        lambda y: y[1:],  # a view: keeps `.base` and the memory
        lambda y: y.data,  # the pointer alone
        lambda y: y.data.mem,  # the memory alone
        lambda y: [y],  # the array inside a container the caller keeps
    ],
    ids=["array", "view", "data", "mem", "list"],
)
def test_held_outputs_are_never_overwritten(hold: Callable[[ndarray], Any]) -> None:
    fn = Counted()
    runner = rt.CudaGraphRunner(fn)
    x, y = array([1.0, 2.0]), array([1.0, 1.0])
    runner(x, y)
    held = hold(runner(x, y))  # recorded; its output kept in some form
    x.host()[...] = [7.0, 8.0]
    fresh = runner(x, y)
    assert runner.skip_reason == ""  # a second buffer set
    assert _values(fresh) == [8.0, 9.0]
    memory = held if isinstance(held, Memory) else None
    pointer = held if isinstance(held, MemoryPointer) else None
    array_held = held[0] if isinstance(held, list) else held
    if isinstance(array_held, ndarray):
        assert _values(array_held)[-1] == 3.0  # still the first result
    else:
        ptr = (pointer or held).ptr if memory is None else memory.ptr
        assert float(np.ndarray((2,), np.float64, HEAP, ptr)[1]) == 3.0
    third = runner(x, y)  # both sets held: a plain call
    assert runner.skip_reason == "outputs of earlier replays are still held"
    assert fn.calls == 4 and _values(third) == [8.0, 9.0]
    del held, array_held, memory, pointer, fresh, third
    runner(x, y)
    assert runner.skip_reason == "" and fn.calls == 4  # let go of: replays again


def test_a_graphs_scratch_is_its_own_in_the_shared_pool() -> None:
    fn = Counted(scratch=True)
    runner = rt.CudaGraphRunner(fn)
    x1, x2, y = array([1.0, 1.0]), array([2.0, 2.0]), array([0.0, 0.0])
    for _ in range(2):
        runner(x1, y)  # the second records graph A, which keeps its scratch block
    runner(x2, y)
    held = runner(x2, y)  # graph B: its output cannot be A's scratch
    assert runner.graph_count == 2 and _values(held) == [2.0, 2.0]
    x1.host()[...] = [5.0, 5.0]
    assert _values(runner(x1, y)) == [5.0, 5.0] and runner.skip_reason == ""
    assert _values(held) == [2.0, 2.0]


def test_results_kept_across_calls_alternate_between_two_buffer_sets() -> None:
    fn = Counted()
    runner = rt.CudaGraphRunner(fn)
    x, y = array([1.0]), array([1.0])
    out = runner(x, y)
    for step in range(6):
        x.host()[...] = [float(step)]
        out = runner(x, y)  # the previous result is still held during the call
        assert _values(out) == [step + 1.0]
    # a plain call, a recording, a second recording (the first one's output held), replays
    assert runner.graph_count == 2 and fn.calls == 3 and runner.skip_reason == ""
    first, second = runner(x, y), runner(x, y)
    third = runner(x, y)  # both sets held: a plain call
    assert runner.skip_reason == "outputs of earlier replays are still held"
    assert len({id(first), id(second), id(third)}) == 3


def test_numbers_by_value_key_graphs_by_type_and_exact_value() -> None:
    fn = Counted()
    runner = rt.CudaGraphRunner(fn, by_value=frozenset({1}))
    x = array([1.0, -2.0])
    for _ in range(3):
        out = runner(x, 3.0)
    assert (
        runner.skip_reason == ""
        and fn.calls == 3
        and runner.graph_count == 2
        and _values(out) == [3.0, -6.0]
    )
    del out
    out = runner(x, -0.0)  # a new value is a new key: a plain call first
    assert runner.skip_reason == "warming up"
    assert list(np.signbit(out.host())) == [True, False]
    assert rt.call_key((x, 0.0), frozenset({1})) != rt.call_key((x, -0.0), frozenset({1}))
    assert rt.call_key((x, 2), frozenset({1})) != rt.call_key((x, 2.0), frozenset({1}))
    assert rt.call_key((x, np.float32(2)), frozenset({1})) != rt.call_key((x, 2.0), frozenset({1}))
    assert rt.call_key((x, 2.0), frozenset()) is None  # not by value: the call uploads it


def test_graphs_are_bounded_and_released() -> None:
    fn = Counted()
    runner = rt.CudaGraphRunner(fn, max_graphs=2, max_records=3)
    y = array([0.0])
    xs = [array([float(i)]) for i in range(4)]
    for x in xs[:3]:
        runner(x, y)
        runner(x, y)  # records; the output is dropped at once
    assert runner.graph_count == 2 and runner.records == 3  # the oldest one was dropped
    runner(xs[3], y)
    assert _values(runner(xs[3], y)) == [3.0]
    assert "max_records" in runner.skip_reason  # addresses keep changing: no more captures
    pool = runner._pool
    assert rt.release_cuda_graphs() >= 1
    assert runner.graph_count == 0 and pool.freed_all == 1


def test_outputs_that_are_inputs_rule_graphs_out() -> None:
    runner = rt.CudaGraphRunner(lambda x: x[1:])
    x = array([1.0, 2.0, 3.0])
    for _ in range(3):
        out = runner(x)
    assert runner.skip_reason == "an output is not a buffer the graph allocated"
    assert out.base is x


def test_nested_and_named_outputs_come_in_fresh_containers() -> None:
    from collections import namedtuple

    Pair = namedtuple("Pair", "total parts")

    def fn(x: ndarray) -> Any:
        first, second = empty(x.shape), empty(x.shape)
        launch(lambda a, b, c: (np.copyto(a, c), np.multiply(c, 2.0, out=b)), first, second, x)
        return Pair(first, [second, {"x": first}])

    runner = rt.CudaGraphRunner(fn)
    x = array([1.0, 2.0])
    runner(x)
    kept = runner(x)  # recorded
    del kept
    out = runner(x)
    assert runner.replays == 1 and isinstance(out, Pair)
    out.parts.append("changed")  # the caller's own list: the next call's is unchanged
    assert _values(out.parts[0]) == [2.0, 4.0] and out.parts[1]["x"] is out.total
    del out
    again = runner(x)
    assert runner.replays == 2 and len(again.parts) == 2


def test_a_call_from_another_thread_during_a_call_runs_plainly() -> None:
    inner: list[Any] = []

    def fn(x: ndarray) -> ndarray:
        if not inner:
            inner.append(None)
            inner.append(runner(x))  # as another thread would, while this call is inside
        out = empty(x.shape)
        launch(lambda o, a: np.multiply(a, 3.0, out=o), out, x)
        return out

    runner = rt.CudaGraphRunner(fn)
    x = array([1.0])
    runner(x)
    assert _values(inner[1]) == [3.0] and runner.skip_reason == "warming up"
    assert runner.graph_count == 0 and runner._seen == {rt.call_key((x,), frozenset()): 1}


def _scale(x: ndarray, s: Any) -> ndarray:
    # `x * s` as compiled kernels see it: `s` a number by value, or a 0-d array read when
    # the kernel runs (a replay reads whatever the slot holds then).
    out = empty(x.shape, x.dtype)
    if isinstance(s, ndarray):
        launch(lambda o, a, v: np.multiply(a, v[()], out=o, casting="unsafe"), out, x, s)
    else:
        launch(lambda o, a: np.multiply(a, s, out=o, casting="unsafe"), out, x)
    return out


def test_a_number_in_memory_replays_one_graph_whatever_its_value() -> None:
    calls: list[Any] = []

    def fn(x: ndarray, s: Any) -> ndarray:
        calls.append(s)
        return _scale(x, s)

    runner = rt.CudaGraphRunner(fn, in_memory={1: np.dtype("float64")})
    x = array([1.0, -2.0])
    outs = []
    for step in range(6):
        t = 0.5 * step - 1.0  # a time that changes every call
        out = runner(x, t)
        outs.append(_values(out))
        del out
    assert outs == [[t, -2 * t] for t in (-1.0, -0.5, 0.0, 0.5, 1.0, 1.5)]
    assert runner.graph_count == 1 and runner.records == 1 and runner.replays == 4
    # the plain call took the number; the recording a 0-d float64 array (the slot)
    assert calls[0] == -1.0 and isinstance(calls[1], ndarray) and calls[1].dtype == np.float64
    # one copy of the packed numbers per graph launch (the recording's first run, replays)
    assert [np.frombuffer(c, np.float64)[0] for c in COPIES] == [-0.5, 0.0, 0.5, 1.0, 1.5]
    out = runner(x, -0.0)
    assert runner.replays == 5 and list(np.signbit(out.host())) == [True, False]


def test_numbers_in_memory_keep_their_dtypes_and_key_by_type() -> None:
    dtypes = {
        1: np.dtype("float64"),  # a Python float (weak: float32 arrays keep float32)
        2: np.dtype("int64"),
        3: np.dtype("bool"),
        4: np.dtype("float32"),  # a NumPy float32 (strong)
    }
    seen: list[Any] = []

    def fn(x: ndarray, s: Any, k: Any, flag: Any, strong: Any) -> ndarray:
        seen.append((s, k, flag, strong))
        return _scale(x, s)

    runner = rt.CudaGraphRunner(fn, in_memory=dtypes)
    x = array([1.0, 3.0], np.float32)
    calls = [
        (0.1, 2**40 + 1, True, np.float32(0.1)),
        (0.1, 2**40 + 1, True, np.float32(0.1)),
        (2.0**-20, -(2**62), False, np.float32(-2.5)),
    ]
    for numbers in calls:
        out = runner(x, *numbers)
        assert out.dtype == np.float32 and _values(out) == list(np.float32([1.0, 3.0]) * numbers[0])
        del out
    assert runner.replays == 1
    assert tuple(view.dtype for view in seen[1]) == tuple(dtypes.values())
    slot = np.dtype([("s", "<f8"), ("k", "<i8"), ("flag", "?"), ("pad", "V7"), ("w", "<f4")])
    written = np.frombuffer(COPIES[-1][: slot.itemsize], slot)[0]
    assert (written["s"], written["k"], written["flag"], written["w"]) == (
        2.0**-20,
        -(2**62),
        False,
        np.float32(-2.5),
    )
    key = rt.call_key((x, 0.1, 1, True, np.float32(1)), frozenset(), dtypes)
    assert key != rt.call_key((x, np.float64(0.1), 1, True, np.float32(1)), frozenset(), dtypes)
    assert key == rt.call_key((x, 7.0, 3, False, np.float32(2)), frozenset(), dtypes)


def test_a_device_array_where_a_number_may_go_keys_by_its_address() -> None:
    runner = rt.CudaGraphRunner(_scale, in_memory={1: np.dtype("float64")})
    x, s = array([2.0]), array(3.0)
    got = []
    for _ in range(3):
        got.append(_values(runner(x, s)))
    assert runner.replays == 1 and got == [[6.0]] * 3 and COPIES == []
    s.host()[...] = 5.0
    assert _values(runner(x, s)) == [10.0]  # the graph reads s's address, no slot
