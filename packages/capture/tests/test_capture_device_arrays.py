"""CuPy arrays as inputs: captured with device "cuda", guarded on their GPU, never copied.

No GPU is needed: `FakeCupyArray` is a stand-in with CuPy's observable behaviour (type
`cupy.ndarray`, NumPy functions dispatched through `__array_ufunc__` and
`__array_function__`, no implicit conversion to NumPy, a TypeError when mixed with NumPy
arrays, `.device.id`). The eager backend runs the captured graph on it as NumPy would
run the function. The real CuPy path is exercised on a GPU by the Triton backend's tests.
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np
import pytest

import numpile_runtime as rt
from numpile_capture import (
    CaptureFallbackWarning,
    compile_function,
    explain,
    mark_dynamic,
    reset,
    run_graph,
)


@attrs.frozen
class FakeDevice:
    id: int


def _unwrap(value: Any) -> Any:
    if isinstance(value, FakeCupyArray):
        return value.data
    if isinstance(value, np.ndarray):
        raise TypeError(f"Unsupported type {type(value)}")  # CuPy's message
    if type(value) in (list, tuple):
        return type(value)(_unwrap(item) for item in value)
    return value


def _wrap(value: Any, device: int) -> Any:
    if isinstance(value, np.ndarray):
        return FakeCupyArray(value, device)
    if type(value) in (list, tuple):
        return type(value)(_wrap(item, device) for item in value)
    return value


class FakeCupyArray:
    """An array "on GPU `device`": NumPy data behind CuPy's interface."""

    def __init__(self, data: np.ndarray[Any, Any], device: int = 0) -> None:
        self.data = data
        self.device = FakeDevice(device)

    shape = property(lambda self: self.data.shape)
    dtype = property(lambda self: self.data.dtype)
    strides = property(lambda self: self.data.strides)
    itemsize = property(lambda self: self.data.itemsize)
    ndim = property(lambda self: self.data.ndim)
    size = property(lambda self: self.data.size)
    T = property(lambda self: FakeCupyArray(self.data.T, self.device.id))

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("Implicit conversion to a NumPy array is not allowed")

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        result = getattr(ufunc, method)(*_unwrap(inputs), **_unwrap(kwargs))
        return _wrap(result, self.device.id)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        return _wrap(func(*_unwrap(args), **_unwrap(kwargs)), self.device.id)

    def __getattr__(self, name: str) -> Any:
        # Methods (sum, reshape, astype, ...) run on the data and return device arrays.
        method = getattr(self.data, name)
        return lambda *args, **kwargs: _wrap(
            method(*_unwrap(args), **_unwrap(kwargs)), self.device.id
        )

    def __getitem__(self, key: Any) -> Any:
        return _wrap(self.data[_unwrap(key)], self.device.id)

    def get(self) -> np.ndarray[Any, Any]:
        return self.data.copy()


FakeCupyArray.__module__ = "cupy"
FakeCupyArray.__name__ = "ndarray"
FakeCupyArray.__qualname__ = "ndarray"


def _binary(op: Callable[[Any, Any], Any], *, reflected: bool = False) -> Any:
    if reflected:
        return lambda self, other: _ufunc_of(op)(other, self)
    return lambda self, other: _ufunc_of(op)(self, other)


def _ufunc_of(op: Callable[[Any, Any], Any]) -> Any:
    return {
        operator.add: np.add,
        operator.sub: np.subtract,
        operator.mul: np.multiply,
        operator.truediv: np.true_divide,
        operator.matmul: np.matmul,
        operator.gt: np.greater,
    }[op]


for _name, _op in [
    ("add", operator.add),
    ("sub", operator.sub),
    ("mul", operator.mul),
    ("truediv", operator.truediv),
    ("matmul", operator.matmul),
]:
    setattr(FakeCupyArray, f"__{_name}__", _binary(_op))
    setattr(FakeCupyArray, f"__r{_name}__", _binary(_op, reflected=True))
FakeCupyArray.__gt__ = _binary(operator.gt)  # type: ignore[assignment,operator]


def on_gpu(data: np.ndarray[Any, Any], device: int = 0) -> FakeCupyArray:
    return FakeCupyArray(data, device)


@pytest.fixture(autouse=True)
def _fresh() -> Any:
    reset()
    yield
    reset()


def softmax_plus(x: Any, y: Any) -> Any:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True) + 2.0 * y.T


def test_device_array_is_captured_with_device_cuda_and_stays_on_the_device() -> None:
    x = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    y = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    compiled = compile_function(softmax_plus, backend="eager", fullgraph=True)

    result = compiled(on_gpu(x), on_gpu(y))

    assert type(result) is FakeCupyArray
    expected = softmax_plus(x, y)
    np.testing.assert_array_equal(result.get(), expected)
    assert result.get().dtype == expected.dtype
    report = explain(softmax_plus)(on_gpu(x), on_gpu(y))
    (graph,) = report.graphs
    assert {node.meta.device for node in graph.nodes} == {"cuda"}
    assert "float32[4, 5]@cuda" in str(graph)
    guards = [str(guard) for guard in report.guards]
    assert any("cupy.ndarray float32[4, 5]" in text and "device=0" in text for text in guards)


def test_host_array_or_another_gpu_recompiles() -> None:
    x = np.arange(6.0).reshape(2, 3)
    graphs: list[Any] = []

    def counting(graph: Any, example_inputs: Any) -> Any:
        graphs.append(graph)
        return lambda *args: run_graph(graph, list(args))

    compiled = compile_function(lambda a: np.sin(a) * 2.0, backend=counting)

    np.testing.assert_array_equal(compiled(on_gpu(x)).get(), np.sin(x) * 2.0)
    np.testing.assert_array_equal(compiled(on_gpu(x + 1)).get(), np.sin(x + 1) * 2.0)
    assert len(graphs) == 1
    np.testing.assert_array_equal(compiled(x), np.sin(x) * 2.0)  # NumPy: a host graph
    assert len(graphs) == 2
    assert graphs[1].placeholders[0].meta.device == "cpu"
    on_second = compiled(on_gpu(x, device=1))
    assert on_second.device.id == 1
    assert len(graphs) == 3


def test_mixing_host_and_device_arrays_raises_the_eager_error() -> None:
    def mixed(x: Any, y: Any) -> Any:
        return np.sin(x) + y

    x = on_gpu(np.ones(3))
    with pytest.raises(TypeError, match="Unsupported type") as eager:
        mixed(x, np.ones(3))
    compiled = compile_function(mixed, backend="eager")
    with warnings.catch_warnings():
        warnings.simplefilter("error", CaptureFallbackWarning)
        with pytest.raises(TypeError, match="Unsupported type") as raised:
            compiled(x, np.ones(3))
    assert str(raised.value) == str(eager.value)


def test_mark_dynamic_takes_device_arrays() -> None:
    x = on_gpu(np.ones((3, 4)))
    mark_dynamic(x, 0)
    report = explain(lambda a: a * 2.0)(x)
    (graph,) = report.graphs
    placeholder = graph.placeholders[0]
    assert placeholder.meta.device == "cuda"
    assert not isinstance(placeholder.meta.shape[0], int)


def test_hits_on_device_arrays_run_through_the_call_gate_and_misses_recompile() -> None:
    # The gate checks a device array through its attributes (`gate_plan`); each call below
    # that the remembered entry does not fit (a view, a dtype, a GPU, NumPy) must miss it.
    rt.find_toolchain()
    gates = rt.gate_module()
    if gates is None:
        pytest.skip("no call gate here (no C compiler, or NUMPILE_CALL_GATE=0)")
    graphs: list[Any] = []

    def counting(graph: Any, example_inputs: Any) -> Any:
        graphs.append(graph)
        return lambda *args: run_graph(graph, list(args))

    compiled = compile_function(lambda a: np.sin(a) * 2.0, backend=counting, dynamic=False)
    x = np.arange(12.0).reshape(3, 4)
    calls = [on_gpu(x), on_gpu(x[:, ::2]), on_gpu(x.astype(np.float32)), on_gpu(x, device=1)]
    calls += [x, on_gpu(x + 1)]
    for count, a in enumerate(calls):
        want = np.sin(a.get() if isinstance(a, FakeCupyArray) else a) * 2.0
        for _ in range(3):  # a compile (a lookup), a lookup that arms the gate, the gate
            hits = gates.total_hits()
            got = compiled(a)
            assert type(got) is type(a)
            np.testing.assert_array_equal(got.get() if type(got) is FakeCupyArray else got, want)
        assert gates.total_hits() == hits + 1
        assert len(graphs) == min(count + 1, 5)
        if type(a) is FakeCupyArray:
            assert got.device.id == a.device.id


def decaying_sum(x: Any) -> Any:
    # `s` starts as a NumPy scalar on the host; `s * 0.5 + x[i]` on CuPy data is a CuPy 0-d
    # array (as eager CuPy gives), so the loop carries it on the device after one iteration.
    s = np.float64(1.0)
    for i in range(x.shape[0]):
        s = s * 0.5 + x[i]
    return s


@pytest.mark.parametrize("n", [0, 1, 5])
def test_a_host_scalar_that_becomes_a_device_value_is_carried_on_the_device(n: int) -> None:
    x = np.random.default_rng(n).standard_normal(n)
    compiled = compile_function(decaying_sum, backend="eager", fullgraph=True)
    assert np.asarray(compiled(on_gpu(x))) == decaying_sum(x)
    report = explain(decaying_sum)(on_gpu(x))
    assert report.graph_break_count == 0
    nodes = [node for graph in report.graphs for node in graph.nodes]
    loops = [node for node in nodes if node.op is not None and node.op.name == "for_loop"]
    if n >= 2:  # smaller trip counts are unrolled while the size is static
        (loop,) = loops
        body = dict(loop.params)["body"]
        assert body.placeholders[1].meta.device == "cuda"
        assert dict(loop.params)["first"].placeholders[1].meta.device == "cpu"
