"""NumPy arrays on the GPU and back, keeping what NumPy code can observe: layout and aliasing.

`DeviceCopy.of(host)` copies the bytes a NumPy array spans to the GPU and
views them with the array's own shape, strides and offset, so a function run
on the copy sees the layout NumPy would (negative or zero strides, Fortran
order, views into a larger buffer). `download` brings a result back: the
input itself where the function returned its input, a view of the caller's
memory where it returned a view of an input, a fresh array otherwise (fresh
results that view one buffer stay views of one host buffer). `write_back`
copies the device bytes back, for functions that write their inputs. Needs
CuPy only when called.

    >>> copy = DeviceCopy.of(np.arange(6.0)[::-2])  # doctest: +SKIP
    >>> download(copy.device, [copy], {}) is copy.host  # doctest: +SKIP
    True
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from .cuda_launch import is_device_array


@attrs.frozen
class DeviceCopy:
    """A NumPy array copied to the GPU with its memory layout (see the module docstring).

    `span` is the host bytes `host` spans (a uint8 view of it), `device_span` their copy,
    and `device` the CuPy array with `host`'s shape and strides over `device_span`.
    """

    host: Any
    span: Any
    device_span: Any
    device: Any

    @classmethod
    def of(cls, host: np.ndarray[Any, Any]) -> DeviceCopy:
        """Copy `host` to the current GPU (one transfer of the bytes it spans)."""
        import cupy  # optional dependency: only GPU runs get here

        if host.size == 0:
            return cls(host, None, None, cupy.asarray(host))
        if not host.dtype.isnative:  # CuPy has native byte order only: a converted copy
            native = cls.of(host.astype(host.dtype.newbyteorder("=")))
            return cls(host, None, None, native.device)
        low, high = byte_extent(host)
        # The element at the lowest address, as bytes; the span starts there.
        pairs = zip(host.shape, host.strides, strict=True)
        first = host[(..., *(slice(n - 1, n) if s < 0 else slice(0, 1) for n, s in pairs))]
        start = first.reshape(-1).view(np.uint8)
        span = np.lib.stride_tricks.as_strided(start, (high - low,), (1,))
        device_span = cupy.asarray(span)
        device = cupy.ndarray(
            host.shape, host.dtype, memptr=device_span.data - low, strides=host.strides
        )
        return cls(host, span, device_span, device)

    def view(self, host: np.ndarray[Any, Any]) -> DeviceCopy:
        """The copy of `host`, a view of this copy's host array, as a view of this copy."""
        import cupy

        offset = int(host.ctypes.data) - int(self.span.ctypes.data)
        memptr = self.device_span.data + offset
        device = cupy.ndarray(host.shape, host.dtype, memptr=memptr, strides=host.strides)
        return DeviceCopy(host, self.span, self.device_span, device)

    def holds(self, value: Any) -> bool:
        """Whether the device array `value` lies in this copy's memory (a view of it)."""
        if self.device_span is None or value.size == 0:
            return False
        start = int(self.device_span.data.ptr)
        return start <= int(value.data.ptr) < start + int(self.device_span.nbytes)

    def host_view(self, value: Any) -> np.ndarray[Any, Any]:
        """The view of the caller's memory that the device view `value` is of the copy."""
        offset = int(value.data.ptr) - int(self.device_span.data.ptr)
        return np.ndarray(
            value.shape, value.dtype, buffer=self.span, offset=offset, strides=value.strides
        )

    def write_back(self) -> None:
        """Copy the device bytes back into the caller's array (after a call that wrote it)."""
        if self.device_span is not None:
            self.device_span.get(out=self.span)
        elif self.host.size:
            self.host[...] = self.device.get()


def byte_extent(array: Any) -> tuple[int, int]:
    """The bytes a non-empty NumPy or CuPy array's elements occupy, as offsets from its first
    element: (lowest, one past the highest).

    >>> byte_extent(np.zeros((2, 3))[:, ::-1])
    (-16, 32)
    """
    pairs = list(zip(array.shape, array.strides, strict=True))
    low = sum((n - 1) * s for n, s in pairs if s < 0)
    high = sum((n - 1) * s for n, s in pairs if s > 0) + array.itemsize
    return low, high


def upload(hosts: list[np.ndarray[Any, Any]]) -> list[DeviceCopy]:
    """A `DeviceCopy` of each array; arrays that view one buffer stay views of one copy.

    >>> upload([])
    []
    """
    roots = [_root(host) for host in hosts]
    shared = {id(root) for root in roots if sum(r is root for r in roots) > 1}
    parents: dict[int, DeviceCopy] = {}
    seen: dict[int, DeviceCopy] = {}  # an array passed twice is one device array
    copies = []
    for host, root in zip(hosts, roots, strict=True):
        copy = seen.get(id(host))
        if copy is None and (id(root) not in shared or host.size == 0 or not root.dtype.isnative):
            copy = DeviceCopy.of(host)
        elif copy is None:
            if id(root) not in parents:
                parents[id(root)] = DeviceCopy.of(root)
            copy = parents[id(root)].view(host)
        seen[id(host)] = copy
        copies.append(copy)
    return copies


def _root(array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def download(value: Any, copies: list[DeviceCopy], fresh: dict[int, Any]) -> Any:
    """`value` on the host: an input, a view of an input's memory, or a fresh array.

    `fresh` (one dict for all the results of a call) maps device buffers already brought
    back, so results that view one fresh buffer come back as views of one host buffer.

    >>> download(3, [], {})
    3
    """
    if not is_device_array(value):
        return value
    for copy in copies:
        if value is copy.device:
            return copy.host
        if copy.holds(value):
            return copy.host_view(value)
    owner = value if value.base is None else value.base
    if not is_device_array(owner) or owner.base is not None:
        return value.get()
    if id(owner) not in fresh:
        fresh[id(owner)] = (owner, owner.get())  # the owner kept: its id stays unique
    host_owner = fresh[id(owner)][1]
    if value is owner:
        return host_owner
    if value.size == 0 or not host_owner.flags.c_contiguous:
        return value.get()
    offset = int(value.data.ptr) - int(owner.data.ptr)
    return np.ndarray(
        value.shape,
        value.dtype,
        buffer=host_owner.reshape(-1).view(np.uint8),
        offset=offset,
        strides=value.strides,
    )
