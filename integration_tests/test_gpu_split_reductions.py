"""Split reductions in one kernel and the default mode's reduction tuning, on a real GPU.

Marked `gpu`; skipped unless CuPy sees a CUDA device and triton is installed. The
interpreter tests of the same mechanisms are `packages/inductor/tests/
test_inductor_triton_split.py`; here programs really run at once, so the counter of
finished programs, its reset, CUDA-graph replay and two streams are checked for real.

    pytest -q -m gpu integration_tests/test_gpu_split_reductions.py
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

import numpile
import numpile_runtime as rt

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        rt.triton_status().mode != "gpu", reason=f"no GPU: {rt.triton_status().reason}"
    ),
]

_RNG = np.random.default_rng(34)


def _cupy() -> Any:
    import cupy

    return cupy


def every_kind(x: Any) -> Any:
    return (
        x.sum(),
        np.sign(x).prod(),
        x.max(),
        x.min(),
        x.mean(),
        (x > 2.5).any(),
        (x < 2.5).all(),
    )


def _check(got: Any, want: Any, x: np.ndarray[Any, Any]) -> None:
    for i, (g_, w_) in enumerate(zip(got, want, strict=True)):
        value = np.asarray(g_.get() if hasattr(g_, "get") else g_)
        assert value.dtype == np.asarray(w_).dtype, (i, value.dtype, w_)
        if i in (0, 4) and x.dtype.kind == "f":  # sum, mean: another tree order
            eps = float(np.finfo(x.dtype).eps)
            scale = np.abs(x).astype(np.float64).sum() / (x.size if i == 4 else 1)
            assert abs(float(value) - float(w_)) <= 64 * eps * (scale + 1), (i, value, w_)
        else:
            np.testing.assert_array_equal(value, w_)


@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_one_kernel_split_matches_numpy_around_the_thresholds(dtype: str) -> None:
    # Rows of 4096 elements or more split (max_rblock 2048); 1_000_003: every program, a
    # short last chunk. Untuned: one compile per size is enough time here.
    cupy = _cupy()
    untuned = {"autotune_reductions": False}
    compiled = numpile.compile(every_kind, fullgraph=True, dynamic=False, options=untuned)
    for size in (4095, 4097, 1_000_003):
        if dtype.startswith("int"):
            x = _RNG.integers(-3, 4, size=size).astype(dtype)
        else:
            x = (_RNG.normal(size=size) * 2).astype(dtype)
        _check(compiled(cupy.asarray(x)), every_kind(x), x)


def test_nan_empty_and_rows_split_in_one_kernel() -> None:
    cupy = _cupy()
    x = _RNG.normal(size=(3, 300_000))
    x[1, 299_999] = np.nan
    x[2] = np.nan
    for fn in (lambda a: a.max(axis=1), lambda a: a.min(axis=1), lambda a: a.sum(axis=1)):
        got = numpile.compile(fn, fullgraph=True, dynamic=False)(cupy.asarray(x)).get()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(fn(x)))
        np.testing.assert_allclose(got[0], fn(x)[0], rtol=0, atol=1e-12 * np.abs(x[0]).sum())
    tall = _RNG.normal(size=(200_000, 3))  # chunk-major
    got = numpile.compile(lambda a: a.max(axis=0), fullgraph=True)(cupy.asarray(tall))
    np.testing.assert_array_equal(got.get(), tall.max(axis=0))
    empty = numpile.compile(lambda a: a.sum(), fullgraph=True)(cupy.zeros(0))
    assert float(empty) == 0.0


def test_float_sums_are_the_same_bits_from_run_to_run_and_match_two_kernels() -> None:
    cupy = _cupy()
    x = cupy.asarray(_RNG.normal(size=16_000_000).astype(np.float32))
    one = numpile.compile(lambda a: a.sum(), fullgraph=True)
    two = numpile.compile(lambda a: a.sum(), fullgraph=True, options={"split_in_one_kernel": False})
    results = {float(one(x)) for _ in range(20)}
    assert len(results) == 1
    np.testing.assert_allclose(results.pop(), float(two(x)), rtol=1e-5)


def test_the_counter_resets_under_cuda_graph_replay() -> None:
    cupy = _cupy()
    compiled = numpile.compile(lambda a: a.max(), fullgraph=True, mode="reduce-overhead")
    base = _RNG.normal(size=1_000_000)
    for i in range(6):  # warm-up, record, then replays on new values
        x = base + i
        assert float(compiled(cupy.asarray(x))) == x.max()


def test_two_streams_at_once_each_finish_their_own_launch() -> None:
    cupy = _cupy()
    compiled = numpile.compile(lambda a: a.max(), fullgraph=True)
    xs = [_RNG.normal(size=4_000_000) + i for i in range(2)]
    arrays = [cupy.asarray(x) for x in xs]
    compiled(arrays[0])  # compile and tune outside the streams
    streams = [cupy.cuda.Stream(non_blocking=True) for _ in xs]
    outs: list[Any] = []
    for _ in range(10):
        for stream, array in zip(streams, arrays, strict=True):
            with stream:
                outs.append(compiled(array))
    for stream in streams:
        stream.synchronize()
    for i, out in enumerate(outs):
        assert float(out) == xs[i % 2].max()


def test_partials_kept_per_stream_give_each_stream_its_own_sums() -> None:
    # The partials buffer is kept per kernel and stream (codegen/triton/scratch.py): a sum
    # (whose partials all differ) on two streams at once, then on the default stream again,
    # then at a new shape (a new compile, its own scratch).
    cupy = _cupy()
    compiled = numpile.compile(lambda a: a.sum(), fullgraph=True)
    xs = [_RNG.integers(-1000, 1000, size=4_000_000).astype(np.float64) + i for i in range(2)]
    arrays = [cupy.asarray(x) for x in xs]
    assert float(compiled(arrays[0])) == xs[0].sum()  # integers: exact in any order
    streams = [cupy.cuda.Stream(non_blocking=True) for _ in xs]
    outs: list[Any] = []
    for _ in range(10):
        for stream, array in zip(streams, arrays, strict=True):
            with stream:
                outs.append(compiled(array))
    for stream in streams:
        stream.synchronize()
    assert [float(out) for out in outs] == [x.sum() for x in xs] * 10
    assert float(compiled(arrays[1])) == xs[1].sum()
    short = xs[0][:1_500_000]
    assert float(compiled(cupy.asarray(short))) == short.sum()


def test_a_second_device_launches_on_its_own_stream_and_scratch() -> None:
    cupy = _cupy()
    if cupy.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("one GPU: the second device's launch needs two")
    compiled = numpile.compile(lambda a: a.sum(), fullgraph=True)
    x = _RNG.integers(-1000, 1000, size=3_000_000).astype(np.float64)
    assert float(compiled(cupy.asarray(x))) == x.sum()
    with cupy.cuda.Device(1):
        on_second = cupy.asarray(x)
        assert float(compiled(on_second)) == x.sum()
    assert float(compiled(cupy.asarray(x))) == x.sum()


def test_two_cuda_graphs_replayed_at_once_keep_their_own_counters() -> None:
    cupy = _cupy()
    compiled = numpile.compile(lambda a: a.max(), fullgraph=True, mode="reduce-overhead")
    xs = [_RNG.normal(size=n) for n in (3_000_000, 2_000_000)]  # two shapes: two graphs
    arrays = [cupy.asarray(x) for x in xs]
    for _ in range(3):  # warm-up, record, replay
        for array, x in zip(arrays, xs, strict=True):
            assert float(compiled(array)) == x.max()
    streams = [cupy.cuda.Stream(non_blocking=True) for _ in xs]
    outs: list[Any] = []
    for _ in range(10):
        for stream, array in zip(streams, arrays, strict=True):
            with stream:
                outs.append(compiled(array))
    for stream in streams:
        stream.synchronize()
    for i, out in enumerate(outs):
        assert float(out) == xs[i % 2].max()


_TUNE_TWICE = """
import logging, sys
import cupy, numpy as np
import numpile
records = []
handler = logging.Handler()
handler.emit = lambda record: records.append(record.getMessage())
logger = logging.getLogger("numpile.inductor.triton")
logger.addHandler(handler)
logger.setLevel(logging.INFO)
x = cupy.asarray(np.random.default_rng(0).normal(size=(64, 400_000)))
out = numpile.compile(lambda a: a.sum(axis=1), fullgraph=True)(x)
np.testing.assert_allclose(out.get(), x.get().sum(axis=1), rtol=1e-10)
print(sum(message.startswith("autotune:") for message in records))
"""


def test_reduction_tuning_is_timed_once_then_read_from_disk(tmp_path: Any) -> None:
    env = {**os.environ, "NUMPILE_CACHE_DIR": str(tmp_path / "cache")}
    counts = []
    for _ in range(2):
        result = subprocess.run(
            [sys.executable, "-c", _TUNE_TWICE], env=env, capture_output=True, text=True
        )
        assert result.returncode == 0, result.stderr[-3000:]
        counts.append(int(result.stdout.split()[-1]))
    assert counts[0] >= 1 and counts[1] == 0, counts
