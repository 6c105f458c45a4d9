"""Which inputs of a mutating call may share memory: NumPy arrays and CuPy arrays (by address).

A stand-in with CuPy's type name and memory interface (`data.ptr`, byte strides) checks the
address-range test without a GPU; the GPU tests run it on CuPy.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from numpile_inductor.launcher import _overlaps


class ndarray:  # noqa: N801  (CuPy's class name: `is_device_array` recognizes it by name)
    __module__ = "cupy._core.core"

    def __init__(self, ptr: int, shape: tuple[int, ...], strides: tuple[int, ...]) -> None:
        self.data = SimpleNamespace(ptr=ptr)
        self.shape, self.strides, self.itemsize = shape, strides, 8
        self.size = int(np.prod(shape))


def test_numpy_views_of_one_buffer_overlap_and_disjoint_slices_do_not() -> None:
    base = np.zeros(10)
    assert _overlaps((base[:6], base[4:]), (0,))
    assert not _overlaps((base[:5], base[5:]), (0,))


def test_device_arrays_overlap_by_address_range() -> None:
    a = ndarray(1000, (5,), (8,))  # bytes [1000, 1040)
    cases: list[tuple[Any, bool]] = [
        (ndarray(1032, (5,), (8,)), True),  # starts inside a
        (ndarray(1040, (5,), (8,)), False),  # starts where a ends
        (ndarray(1064, (5,), (-8,)), True),  # reversed: bytes [1032, 1072)
        (ndarray(1072, (5,), (-8,)), False),  # reversed: bytes [1040, 1080)
        (ndarray(1000, (0,), (8,)), False),  # empty
    ]
    for other, overlapping in cases:
        assert _overlaps((a, other), (0,)) is overlapping
    assert not _overlaps((a, np.zeros(3)), (0,))  # host and device memory never overlap
