"""Extern calls on device arrays (codegen/triton/externs.py), with a stand-in for CuPy.

A stand-in device array holds a NumPy array, raises CuPy's wording of an out-of-bounds
index ("Index 4 is ...", where NumPy says "index 4 is ...") and counts its copies to the
host. The real GPU runs the same loop in integration_tests/test_gpu_loops.py.
"""

from __future__ import annotations

import logging
import sys
import types
from typing import Any

import numpy as np
import pytest

import numpile_runtime as rt
from numpile_capture import ScalarSlot, get_op
from numpile_inductor.codegen.triton.externs import device_extern, numpy_error, to_host
from numpile_inductor.loop_ir import BufferRef, ExternCall


class FakeDeviceArray:
    # A CuPy array: NumPy memory, CuPy's IndexError wording, copies to the host counted.
    host_copies = 0

    def __init__(self, host: np.ndarray[Any, Any]) -> None:
        self.host = host
        self.shape, self.dtype = host.shape, host.dtype

    def __getitem__(self, index: Any) -> FakeDeviceArray:
        return FakeDeviceArray(self._checked(lambda: self.host[index]))

    def __setitem__(self, index: Any, value: Any) -> None:
        source = value.host if isinstance(value, FakeDeviceArray) else value
        self._checked(lambda: self.host.__setitem__(index, source))

    def get(self) -> np.ndarray[Any, Any]:
        FakeDeviceArray.host_copies += 1
        return self.host.copy()

    @staticmethod
    def _checked(action: Any) -> Any:
        try:
            return action()
        except IndexError as error:
            message = str(error)
            raise IndexError(message[:1].upper() + message[1:]) from None


# Whether the stand-in CuPy's current stream is being captured into a CUDA graph.
_CAPTURING = [False]


@pytest.fixture(autouse=True)
def stand_ins(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = types.SimpleNamespace(is_capturing=lambda: _CAPTURING[0])
    cuda = types.SimpleNamespace(get_current_stream=lambda: stream)
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(cuda=cuda))
    monkeypatch.setattr(rt, "is_device_array", lambda value: isinstance(value, FakeDeviceArray))
    _CAPTURING[0] = False
    FakeDeviceArray.host_copies = 0


def _step(op_name: str, arity: int, *, barrier: bool = False) -> ExternCall:
    # `op_name` with the index template (scalars[0], :), its inputs all buffers.
    index = (ScalarSlot(0), slice(None))
    args = tuple(BufferRef(f"b{k}") for k in range(arity))
    impl = get_op(op_name).impl
    return ExternCall("out", op_name, impl, args, (("index", index),), barrier, "v1")


def test_an_index_out_of_bounds_raises_numpys_error_without_a_host_copy(
    caplog: pytest.LogCaptureFixture,
) -> None:
    x = np.arange(8.0).reshape(4, 2)
    with pytest.raises(IndexError) as eager:
        x[(4, slice(None))]
    load = device_extern(_step("getitem_at", 2))
    with caplog.at_level(logging.INFO, logger="numpile.perf_hints"):
        with pytest.raises(IndexError) as got:
            load(FakeDeviceArray(x), 4)
        row = load(FakeDeviceArray(x), 3)
    assert str(got.value) == str(eager.value)
    np.testing.assert_array_equal(row.host, x[3])
    assert FakeDeviceArray.host_copies == 0  # nothing read back: safe inside a capture
    assert not caplog.records  # no "runs in NumPy on the host" hint


def test_a_store_out_of_bounds_raises_numpys_error_and_writes_nothing() -> None:
    x, value = np.zeros((4, 2)), np.ones(2)
    with pytest.raises(IndexError) as eager:
        x[(-5, slice(None))] = value
    store = device_extern(_step("setitem_at", 3, barrier=True))
    device = FakeDeviceArray(x.copy())
    with pytest.raises(IndexError) as got:
        store(device, FakeDeviceArray(value), -5)
    assert str(got.value) == str(eager.value)
    np.testing.assert_array_equal(device.host, x)
    store(device, FakeDeviceArray(value), -4)
    np.testing.assert_array_equal(device.host[0], value)


def test_numpy_error_reads_shapes_only_and_is_none_where_numpy_accepts() -> None:
    device = FakeDeviceArray(np.zeros((3, 5), dtype=np.float32))
    error = numpy_error(lambda a, i, j: a[i, j], (device, 1, 7))
    assert isinstance(error, IndexError)
    assert str(error) == "index 7 is out of bounds for axis 1 with size 5"
    assert numpy_error(lambda a, i: a[i], (device, -3)) is None
    assert FakeDeviceArray.host_copies == 0


def test_a_copy_to_the_host_inside_a_capture_raises() -> None:
    device = FakeDeviceArray(np.arange(3.0))
    _CAPTURING[0] = True
    with pytest.raises(RuntimeError, match="copied to the host inside a CUDA graph capture"):
        to_host((device, 2))
    _CAPTURING[0] = False
    np.testing.assert_array_equal(to_host((device, 2))[0], np.arange(3.0))
