"""Numbers of a call in device memory: packed on the host, written with one copy.

Under `mode="reduce-overhead"` the Triton kernels of a compiled function read each number
the call passes (a step size, a time `t`, a learning rate) from device memory instead of
taking it by value, so that a CUDA graph recorded with one value replays with the next
(`cuda_graphs.CudaGraphRunner`). `ScalarSlots` holds the layout: each number in an 8-byte
slot of one buffer, in the dtype its kernels read (the dtype the by-value argument has: NEP
50's rules are settled at compile time, so `float32` arrays times a Python float still read
a float64 slot and round as NumPy does). A call packs its values into a host buffer with one
`struct.pack_into` and writes them with one stream-ordered host-to-device copy.

NOTE: the host buffer is pageable memory, on purpose. `cudaMemcpyAsync` from pageable memory
returns once the driver has staged the bytes, so the next call may pack new values at once,
while the copy stays ordered on the stream after the kernels of earlier calls that read the
device buffer. A pinned host buffer would be read when the copy runs on the device: packing
the next call's values while an earlier replay's copy still waits on the stream would change
that replay's numbers.

Under Triton's interpreter the "device" buffer is a NumPy array and `write` packs into it
directly. Importing this module needs neither CuPy nor a GPU.

    >>> slots = ScalarSlots((np.dtype("float64"), np.dtype("bool")))
    >>> device = slots.allocate(np)
    >>> slots.write((0.5, True), device, None)
    >>> [view[()] for view in slots.views(device)]
    [np.float64(0.5), np.True_]
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import numpy as np

# The `struct` code of each dtype a slot may hold (little-endian, as CUDA devices are).
_CODES = {
    "b": "?",
    "i1": "b",
    "u1": "B",
    "i2": "h",
    "u2": "H",
    "i4": "i",
    "u4": "I",
    "i8": "q",
    "u8": "Q",
    "f4": "f",
    "f8": "d",
}
SLOT_BYTES = 8  # every slot starts 8-aligned: a kernel's load of any dtype is aligned
_HOST_TO_DEVICE = 1  # cudaMemcpyHostToDevice


def slot_dtype(dtype: np.dtype[Any]) -> bool:
    """Whether a number of `dtype` may live in a slot (booleans, integers and real floats
    of up to 8 bytes).

    >>> slot_dtype(np.dtype("float32")), slot_dtype(np.dtype("complex128"))
    (True, False)
    """
    return _code(dtype) is not None


def _code(dtype: np.dtype[Any]) -> str | None:
    key = "b" if dtype.kind == "b" else f"{dtype.kind}{dtype.itemsize}"
    return _CODES.get(key)


class ScalarSlots:
    """The packed layout of a call's numbers, and its pageable host buffer (module docstring).

    >>> ScalarSlots((np.dtype("float32"), np.dtype("int64"))).offsets
    (0, 8)
    """

    def __init__(self, dtypes: Sequence[np.dtype[Any]]) -> None:
        codes = []
        for dtype in dtypes:
            code = _code(dtype)
            if code is None:
                raise ValueError(
                    f"a {dtype} number cannot live in a device slot; pass it by value "
                    "(slot_dtype says which dtypes can)"
                )
            codes.append(f"{code}{SLOT_BYTES - dtype.itemsize}x")
        self.dtypes = tuple(dtypes)
        self.offsets = tuple(SLOT_BYTES * i for i in range(len(self.dtypes)))
        self.nbytes = max(1, SLOT_BYTES * len(self.dtypes))
        self._layout = struct.Struct("<" + "".join(codes))
        self.host = np.zeros(self.nbytes, np.uint8)
        self._host_ptr = int(self.host.ctypes.data)
        self._host_view = self.host.data
        self._memcpy: Any = None  # cupy.cuda.runtime.memcpyAsync, looked up once

    def allocate(self, xp: Any) -> Any:
        """A buffer for the slots in `xp`'s memory (CuPy: the current allocator's)."""
        return xp.empty(self.nbytes, dtype=np.uint8)

    def views(self, device: Any) -> tuple[Any, ...]:
        """Each slot of `device` as a 0-d array of its dtype: what a kernel's pointer is."""
        if isinstance(device, np.ndarray):
            return tuple(
                np.ndarray((), dtype, buffer=device, offset=offset)
                for dtype, offset in zip(self.dtypes, self.offsets, strict=True)
            )
        import cupy  # optional dependency: only reached with a device buffer

        return tuple(
            cupy.ndarray((), dtype, memptr=device.data + offset)
            for dtype, offset in zip(self.dtypes, self.offsets, strict=True)
        )

    def write(self, values: Sequence[Any], device: Any, stream: Any) -> None:
        """Pack `values` and write them to `device`, ordered on `stream` (a CuPy stream).

        Raises `struct.error` (or `OverflowError`) for a value the slot's dtype cannot hold.
        """
        if isinstance(device, np.ndarray):
            self._layout.pack_into(device.data, 0, *values)
            return
        self._layout.pack_into(self._host_view, 0, *values)
        if self._memcpy is None:
            import cupy  # optional dependency: only reached with a device buffer

            self._memcpy = cupy.cuda.runtime.memcpyAsync
        self._memcpy(device.data.ptr, self._host_ptr, self.nbytes, _HOST_TO_DEVICE, stream.ptr)
