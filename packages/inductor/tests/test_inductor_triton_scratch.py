"""Split kernels' scratch (`codegen/triton/scratch.py`): one set per kernel and stream.

A stream runs its launches in order, so a kernel's partials and counter are reused by every
launch on one stream; launches on another stream, or recorded into a CUDA graph, must never
share them. NumPy stands in for CuPy (the arrays' memory is all that matters here).
"""

from __future__ import annotations

import numpy as np

from numpile_inductor.codegen.triton.scratch import KernelScratch

_SHAPES = (((6,), np.dtype("float64")), ((6,), np.dtype("int64")))


def test_one_stream_reuses_its_scratch_and_another_stream_gets_its_own() -> None:
    scratch = KernelScratch()
    first = scratch.take(np, "k_split", _SHAPES, 0xA, 0)
    again = scratch.take(np, "k_split", _SHAPES, 0xA, 0)
    other = scratch.take(np, "k_split", _SHAPES, 0xB, 0)
    assert all(a is b for a, b in zip(first, again, strict=True))
    assert not any(np.shares_memory(a, b) for a in first for b in other)
    *partials, counter = first
    assert [(p.shape, p.dtype) for p in partials] == [(s, d) for s, d in _SHAPES]
    assert counter.dtype == np.int32 and counter.tolist() == [0]


def test_the_same_stream_handle_on_another_device_gets_its_own_scratch() -> None:
    # CuPy's default stream is the handle 0 on every device.
    scratch = KernelScratch()
    first = scratch.take(np, "k_split", _SHAPES, 0, 0)
    second = scratch.take(np, "k_split", _SHAPES, 0, 1)
    assert not any(np.shares_memory(a, b) for a in first for b in second)


def test_kernels_never_share_scratch() -> None:
    scratch = KernelScratch()
    a = scratch.take(np, "k0_split", _SHAPES, 0xA, 0)
    b = scratch.take(np, "k1_split", _SHAPES, 0xA, 0)
    assert not any(np.shares_memory(x, y) for x in a for y in b)
    assert set(scratch.held()) == {("k0_split", 0xA, 0), ("k1_split", 0xA, 0)}


def test_each_capture_gets_fresh_scratch_kept_alive() -> None:
    scratch = KernelScratch()
    eager = scratch.take(np, "k_split", _SHAPES, 0xA, 0)
    recorded = [scratch.take(np, "k_split", _SHAPES, 0xA, 0, capturing=True) for _ in range(2)]
    arrays = [eager, *recorded]
    for i, left in enumerate(arrays):
        for right in arrays[i + 1 :]:
            assert not any(np.shares_memory(x, y) for x in left for y in right)
    assert scratch.recorded() == 2
    assert list(scratch.held()) == [("k_split", 0xA, 0)]  # the eager set only
