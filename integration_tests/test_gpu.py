"""The Triton backend on a real GPU: CuPy arrays, NumPy arrays with device="cuda", CUDA graphs.

Marked `gpu`; skipped unless CuPy sees a CUDA device and triton is installed
(and never under `TRITON_INTERPRET=1`). On a GPU machine:

    pytest -m gpu integration_tests/test_gpu.py

The differential corpus runs on CuPy arrays with `nox -s tests-gpu`, or
`NUMPILE_CORPUS_DEVICE=cupy NUMPILE_CORPUS_BACKENDS=inductor pytest
integration_tests/test_corpus.py`.
"""

from __future__ import annotations

import logging
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

_RNG = np.random.default_rng(5)


def _cupy() -> Any:
    import cupy

    return cupy


def _f32(*shape: int) -> np.ndarray[Any, Any]:
    return _RNG.standard_normal(shape).astype(np.float32)


def sin_mul_add(a: Any, b: Any) -> Any:
    return np.sin(a) * b + 1.0


def softmax(x: Any) -> Any:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_cupy_arrays_in_give_cupy_arrays_out() -> None:
    cupy = _cupy()
    a, b = cupy.asarray(_f32(1000)), cupy.asarray(_f32(1000))
    out = numpile.compile(sin_mul_add, fullgraph=True)(a, b)
    assert isinstance(out, cupy.ndarray) and out.dtype == np.float32
    np.testing.assert_allclose(out.get(), sin_mul_add(a.get(), b.get()), rtol=1e-5, atol=1e-6)


# (64, 100): one persistent kernel; (600, 5000), (520, 20000): one looped kernel (rows
# longer than a tile, enough of them to fill the device; 20000 takes three 8192-element
# tiles, the last one masked); (16, 5000), (4, 70000): part by part, split.
@pytest.mark.parametrize("shape", [(64, 100), (600, 5000), (520, 20000), (16, 5000), (4, 70000)])
def test_row_softmax_persistent_and_looped(shape: tuple[int, int]) -> None:
    cupy = _cupy()
    x = _f32(*shape)
    out = numpile.compile(softmax, fullgraph=True)(cupy.asarray(x))
    np.testing.assert_allclose(out.get(), softmax(x), rtol=1e-5, atol=1e-8)


def test_row_softmax_with_run_time_rows_and_row_lengths() -> None:
    cupy = _cupy()
    compiled = numpile.compile(softmax, fullgraph=True, dynamic=True)
    for shape in [(3, 7), (700, 100), (530, 4100), (2, 3000)]:
        x = _f32(*shape)
        out = compiled(cupy.asarray(x))
        np.testing.assert_allclose(out.get(), softmax(x), rtol=1e-5, atol=1e-8)


def layernorm(x: Any) -> Any:
    centered = x - x.mean(axis=1, keepdims=True)
    return centered / np.sqrt((centered * centered).mean(axis=1, keepdims=True) + 1e-5)


@pytest.mark.parametrize("fn", [softmax, layernorm])
def test_rows_of_a_run_time_length_launch_persistent_or_looped_per_call(fn: Any) -> None:
    # One kernel over [s0] x [s1]: persistent launches up to 2048 (512 and 1000 share a bit
    # length, not a tile), looped ones above; each tuned on its first call (default mode);
    # rows of -inf and with a NaN give NumPy's NaNs.
    cupy = _cupy()
    compiled = numpile.compile(fn, fullgraph=True, dynamic=True)
    for length in (7, 512, 1000, 5000):
        x = _f32(300, length)
        x[1] = -np.inf
        x[2, length // 2] = np.nan
        with np.errstate(all="ignore"):
            want = fn(x)
        out = compiled(cupy.asarray(x))
        np.testing.assert_allclose(out.get(), want, rtol=1e-4, atol=1e-6)


def scaled_and_summed(a: Any) -> Any:
    return a * 2.0 + 1.0, a.sum(axis=1), a.sum(axis=2, keepdims=True)


@pytest.mark.parametrize("layout", ["fortran", "transposed"])
def test_outputs_on_the_gpu_have_numpys_layout(layout: str) -> None:
    # Kernel outputs are allocated with their node's strides (order='K', as NumPy lays them
    # out for the same layout of input): Fortran in, Fortran out.
    cupy = _cupy()
    block = _RNG.standard_normal((48, 40, 56))
    device = cupy.asarray(block)
    if layout == "fortran":
        host, device = np.asfortranarray(block), cupy.asfortranarray(device)
    else:
        host, device = block.transpose(1, 2, 0), device.transpose(1, 2, 0)
    compiled = numpile.compile(scaled_and_summed, fullgraph=True)
    got = compiled(device)
    for g, w in zip(got, scaled_and_summed(host), strict=True):
        assert isinstance(g, cupy.ndarray) and g.strides == w.strides, (g.strides, w.strides)
        np.testing.assert_allclose(cupy.asnumpy(g), w, rtol=1e-12)


def test_kernels_run_on_cupys_current_stream() -> None:
    cupy = _cupy()
    a, b = cupy.asarray(_f32(1 << 22)), cupy.asarray(_f32(1 << 22))
    compiled = numpile.compile(sin_mul_add, fullgraph=True)
    compiled(a, b)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        b2 = b * 2.0  # queued on `stream` only: a kernel on another stream could race it
        out = compiled(a, b2)
    stream.synchronize()
    np.testing.assert_allclose(out.get(), sin_mul_add(a.get(), b2.get()), rtol=1e-5, atol=1e-6)


_WITHOUT_TORCH = """
import sys
class NoTorch:  # `import torch` raises ImportError, as where PyTorch is not installed
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == "torch":
            raise ImportError("No module named 'torch'")
        return None
sys.meta_path.insert(0, NoTorch())
import cupy, numpy as np, numpile
def f(a, b):
    return np.sin(a) * b + 1.0
a = cupy.linspace(0, 1, 1000, dtype=cupy.float32)
stream = cupy.cuda.Stream(non_blocking=True)
with stream:
    out = numpile.compile(f, fullgraph=True)(a, a)
stream.synchronize()
expected = f(a.get(), a.get())
assert np.allclose(out.get(), expected, rtol=1e-5, atol=1e-6), out
assert "torch" not in sys.modules
print("ok")
"""


def test_kernels_launch_without_pytorch_installed() -> None:
    # Triton 3.6's CUDA driver imports torch; numpile's CupyDriver asks CuPy instead.
    result = subprocess.run(
        [sys.executable, "-c", _WITHOUT_TORCH],
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().endswith("ok")


def test_direct_launches_follow_alignment_and_values_call_after_call() -> None:
    # After a kernel's first launch through Triton's `run`, launches with the same
    # specialization key call the compiled launcher directly (TritonLauncher); a view one
    # element in (another alignment) and another length must each get their own binary.
    cupy = _cupy()
    compiled = numpile.compile(sin_mul_add, dynamic=False)
    base_a, base_b = cupy.asarray(_f32(4097)), cupy.asarray(_f32(4097))
    cases = [(0, 4096), (0, 4096), (1, 4097), (1, 4097), (0, 4096), (0, 4000), (0, 4000)]
    for start, stop in cases:
        a, b = base_a[start:stop], base_b[start:stop] * 2.0
        want = sin_mul_add(a.get(), b.get())
        np.testing.assert_allclose(compiled(a, b).get(), want, rtol=1e-5, atol=1e-6)


def test_numpy_inputs_with_device_cuda_give_numpy_results_and_keep_aliasing() -> None:
    def fn(x: Any) -> Any:
        return x, x.T[::-1], x.sum(), x * 2

    x = np.arange(12.0).reshape(3, 4)
    same, view, total, doubled = numpile.compile(fn, fullgraph=True, device="cuda")(x)
    assert same is x
    assert np.shares_memory(view, x) and view.strides == x.T[::-1].strides
    assert type(total) is np.float64 and total == 66.0
    assert type(doubled) is np.ndarray and np.array_equal(doubled, x * 2)


def test_numpy_inputs_written_in_place_on_the_gpu_are_written_back() -> None:
    def fn(x: Any, y: Any) -> Any:
        x += 1
        y[1:] = 0
        return x.sum()

    x, y = np.arange(6.0), np.arange(6.0)[::-1]
    total = numpile.compile(fn, fullgraph=True, device="cuda")(x, y)
    assert np.array_equal(x, np.arange(6.0) + 1) and total == 21.0
    assert np.array_equal(y, [5.0, 0, 0, 0, 0, 0])


def test_in_place_update_of_an_overlapping_cupy_input_reads_the_old_values() -> None:
    cupy = _cupy()

    def fn(a: Any, b: Any) -> Any:
        a += b
        return b.copy()

    host = np.arange(1.0, 18.0)
    want = fn(host[:-1], host[1:])
    device = cupy.arange(1.0, 18.0)
    got = numpile.compile(fn, fullgraph=True)(device[:-1], device[1:])
    np.testing.assert_array_equal(got.get(), want)
    np.testing.assert_array_equal(device.get(), host)


def test_plain_calls_on_cupy_arrays_run_through_the_call_gate_and_miss_like_eager() -> None:
    # A remembered entry over CuPy arrays is checked in C (`gate_plan`'s attribute reads);
    # another dtype, a strided view, a NumPy array or another length must miss it.
    rt.find_toolchain()
    gates = rt.gate_module()
    if gates is None:
        pytest.skip("no call gate here (no C compiler, or NUMPILE_CALL_GATE=0)")
    cupy = _cupy()
    compiled = numpile.compile(sin_mul_add, fullgraph=True)
    a, b = cupy.asarray(_f32(1000)), cupy.asarray(_f32(1000))
    calls = [(a, b), (a[::2], b[::2]), (a.astype(np.float64), b), (a.get(), b.get())]
    calls += [(a[:700], b[:700]), (a[:600], b[:600]), (a, b)]
    for x, y in calls:
        want = sin_mul_add(cupy.asnumpy(x), cupy.asnumpy(y))
        for _ in range(3):  # a compile, a lookup that arms the gate, a call through it
            hits = gates.total_hits()
            got = compiled(x, y)
            assert type(got) is type(x) and got.dtype == want.dtype
            np.testing.assert_allclose(cupy.asnumpy(got), want, rtol=1e-5, atol=1e-6)
        assert gates.total_hits() == hits + 1


def test_numpy_and_cupy_arrays_together_raise() -> None:
    cupy = _cupy()
    with pytest.raises(ValueError, match="NumPy and CuPy arrays together"):
        numpile.compile(sin_mul_add, fullgraph=True)(cupy.ones(3), np.ones(3))


def test_extern_cupy_lacks_runs_in_numpy_with_a_hint(caplog: pytest.LogCaptureFixture) -> None:
    cupy = _cupy()

    def fn(x: Any) -> Any:
        return np.sort(x * 2, stable=True), np.count_nonzero(x > 0, axis=0, keepdims=True)

    x = _f32(50, 3)
    with caplog.at_level(logging.INFO, logger="numpile.perf_hints"):
        got = numpile.compile(fn, fullgraph=True)(cupy.asarray(x))
    want = fn(x)
    for g, w in zip(got, want, strict=True):
        assert isinstance(g, cupy.ndarray) and g.dtype == w.dtype
        np.testing.assert_array_equal(g.get(), w)
    assert any("runs in NumPy on the host" in r.getMessage() for r in caplog.records)


def test_integer_index_out_of_bounds_raises_numpys_error() -> None:
    cupy = _cupy()

    def fn(x: Any, i: Any) -> Any:
        return x[i] * 2

    x, i = cupy.arange(5.0), cupy.asarray([1, 7])
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 0 with size 5"):
        numpile.compile(fn, fullgraph=True)(x, i)


def test_negation_keeps_the_sign_of_zero() -> None:
    cupy = _cupy()
    out = numpile.compile(lambda x: -x, fullgraph=True)(cupy.asarray([0.0, -0.0, 1.0]))
    assert list(np.signbit(out.get())) == [True, False, True]


def test_reduce_overhead_replays_on_new_values_and_returns_fresh_outputs() -> None:
    cupy = _cupy()
    compiled = numpile.compile(sin_mul_add, fullgraph=True, mode="reduce-overhead")
    a, b = cupy.asarray(_f32(1000)), cupy.asarray(_f32(1000))
    outs = [compiled(a + i, b) for i in range(4)]
    for i, out in enumerate(outs):  # later replays must not overwrite earlier results
        want = sin_mul_add(a.get() + i, b.get())
        np.testing.assert_allclose(out.get(), want, rtol=1e-5, atol=1e-6)


def test_cuda_graph_runner_replays_and_records_per_signature() -> None:
    cupy = _cupy()
    calls: list[int] = []

    def fn(x: Any) -> Any:
        calls.append(1)
        return cupy.sin(x) + 1

    runner = rt.CudaGraphRunner(fn)
    x = cupy.arange(10, dtype=cupy.float32)
    runner(x)  # warm-up
    runner(x)  # records (one Python call during capture)
    assert runner.skip_reason == ""
    count = len(calls)
    x *= 3
    out = runner(x)
    assert len(calls) == count  # replayed: fn not called
    cupy.testing.assert_allclose(out, cupy.sin(x) + 1, rtol=1e-6)
    runner(cupy.arange(20, dtype=cupy.float32))
    assert runner.skip_reason == "warming up"  # a new shape is a new key


def _count_launches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    # One item per graph launch of any CudaGraphRunner (a recording's first run, replays).
    launches: list[int] = []
    launch = rt.CudaGraphRunner._launch

    def counted(self: Any, recorded: Any, args: Any) -> None:
        launches.append(1)
        launch(self, recorded, args)

    monkeypatch.setattr(rt.CudaGraphRunner, "_launch", counted)
    return launches


def test_reduce_overhead_of_a_mutating_function_matches_numpy_on_every_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cupy = _cupy()

    def bump(x: Any, y: Any) -> Any:
        x += y
        return x * 2.0

    compiled = numpile.compile(bump, fullgraph=True, mode="reduce-overhead")
    host_x, host_y = _f32(64), _f32(64)
    x, y = cupy.asarray(host_x), cupy.asarray(host_y)
    launches = _count_launches(monkeypatch)
    for _ in range(4):  # a plain call, a recording, replays
        got = compiled(x, y)
        want = bump(host_x, host_y)
        np.testing.assert_allclose(x.get(), host_x, rtol=1e-6)
        np.testing.assert_allclose(got.get(), want, rtol=1e-6)
        del got
    assert len(launches) == 3  # nothing the guards or the dispatch keep blocks the replays
    other = cupy.asarray(host_y)  # new pointers: never written by the graphs of x
    compiled(other, y)
    np.testing.assert_allclose(x.get(), host_x, rtol=1e-6)
    runner = rt.CudaGraphRunner(lambda a: a * 2)
    runner(np.zeros(8))
    assert "neither a CuPy array" in runner.skip_reason


def test_reduce_overhead_with_scalar_inputs_keeps_numpys_dtypes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cupy = _cupy()

    def scale(x: Any, s: Any) -> Any:
        return x * s + 1

    compiled = numpile.compile(scale, fullgraph=True, mode="reduce-overhead", dynamic=True)
    host = _f32(32)
    x = cupy.asarray(host)
    launches = _count_launches(monkeypatch)
    for s in (2.0, 2.0, 2.0, 0.5, 0.5, 0.5, 3, np.float64(1.5), np.float32(1.5)):
        got = compiled(x, s)
        want = scale(host, s)
        assert got.dtype == want.dtype, (s, got.dtype, want.dtype)
        # float32: the GPU contracts x * s + 1 into a fused multiply-add (one rounding)
        np.testing.assert_allclose(got.get(), want, rtol=1e-6, atol=1e-6)
        del got
    # 2.0: a plain call, a recording, a replay; 0.5: replays of the same graph (the number
    # is read from device memory); 3, np.float64 and np.float32 compile graphs of their own
    assert len(launches) == 5


def test_reduce_overhead_replays_one_graph_for_a_number_that_changes_every_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cupy = _cupy()

    def step(x: Any, v: Any, t: Any) -> Any:
        return x + t * v, x > t

    compiled = numpile.compile(step, fullgraph=True, mode="reduce-overhead", dynamic=True)
    host_x, host_v = _f32(64), _f32(64)
    x, v = cupy.asarray(host_x), cupy.asarray(host_v)
    launches = _count_launches(monkeypatch)
    for i in range(8):
        t = 0.125 * i - 0.5  # a weak Python float: float32 results
        got, mask = compiled(x, v, t)
        want, want_mask = step(host_x, host_v, t)
        assert got.dtype == want.dtype and mask.dtype == want_mask.dtype, t
        np.testing.assert_allclose(got.get(), want, rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(mask.get(), want_mask)
        del got, mask
    assert len(launches) == 7  # a plain call, a recording, then replays of that one graph


def test_reduce_overhead_replays_one_graph_for_a_numpy_scalar_that_changes_every_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Issue 23/28: a NumPy scalar input is guarded by type, not value, and read by value as a
    # scalar of its dtype, so it goes through a device slot as a Python float does.
    cupy = _cupy()

    def step(x: Any, v: Any, t: Any) -> Any:
        return x + t * v, x > t

    compiled = numpile.compile(step, fullgraph=True, mode="reduce-overhead")
    host_x, host_v = _f32(64), _f32(64)
    x, v = cupy.asarray(host_x), cupy.asarray(host_v)
    launches = _count_launches(monkeypatch)
    for i in range(9):
        t = np.float64(0.125 * i - 0.5)  # a strong NumPy scalar: float64 results
        got, mask = compiled(x, v, t)
        want, want_mask = step(host_x, host_v, t)
        assert got.dtype == want.dtype == np.float64 and mask.dtype == want_mask.dtype, t
        np.testing.assert_allclose(got.get(), want, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(mask.get(), want_mask)
        del got, mask
    # The first value compiles specialized (a plain call), the second recompiles with `t` an
    # input (a plain call, then a recording), the other six replay that graph.
    assert len(launches) == 7


def test_max_autotune_stores_its_choice_on_disk(tmp_path: Any, monkeypatch: Any) -> None:
    cupy = _cupy()
    rt.set_cache_dir(tmp_path)  # an empty cache: nothing tuned yet
    stored: list[str] = []
    real_put = rt.CodeCache.put_bytes

    def put_bytes(self: Any, key: str, data: bytes) -> None:
        stored.append(key)
        real_put(self, key, data)

    monkeypatch.setattr(rt.CodeCache, "put_bytes", put_bytes)
    a, b = cupy.asarray(_f32(1 << 20)), cupy.asarray(_f32(1 << 20))
    compiled = numpile.compile(sin_mul_add, fullgraph=True, mode="max-autotune-no-cudagraphs")
    got = compiled(a, b).get()
    np.testing.assert_allclose(got, sin_mul_add(a.get(), b.get()), rtol=1e-5, atol=1e-6)
    rt.set_cache_dir(None)
    assert any(key.startswith("triton-tune") for key in stored), stored


def test_full_and_few_row_reductions_split_across_the_device() -> None:
    cupy = _cupy()
    x = _RNG.standard_normal((3, 1 << 20))
    x[1, 12345] = np.nan

    def reduce(a: Any) -> Any:
        return a.sum(), a.max(axis=1), (a > 4).any(axis=1)

    got = numpile.compile(reduce, fullgraph=True)(cupy.asarray(x))
    want = reduce(x)
    np.testing.assert_allclose(float(got[0]), want[0], rtol=1e-9)
    np.testing.assert_array_equal(got[1].get(), want[1])  # NaN row stays NaN
    np.testing.assert_array_equal(got[2].get(), want[2])


def test_scalar_inputs_keep_float64_precision_and_int64_range() -> None:
    cupy = _cupy()

    def step(w: Any, g: Any, lr: Any, t: Any) -> Any:
        return w - lr * np.sqrt(1 - 0.999**t) * g, w * 0 + t

    compiled = numpile.compile(step, fullgraph=True, dynamic=True)
    w, g = cupy.asarray(_RNG.standard_normal(1000)), cupy.asarray(_RNG.standard_normal(1000))
    for lr, t in ((0.1 + 2**-40, 1), (1e-3, 16), (3.0, 2**40 + 1)):
        got = compiled(w, g, lr, t)
        want = step(w.get(), g.get(), lr, t)
        # float32 scalars would be off by about 1e-9 here; float64 ones within an ulp or
        # two (the GPU contracts `w - c * g` into one fused multiply-add).
        np.testing.assert_allclose(got[0].get(), want[0], rtol=1e-14, atol=1e-14)
        np.testing.assert_array_equal(got[1].get(), want[1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_matmul_template_tile_shape_matches_cupy(dtype: Any, monkeypatch: Any) -> None:
    import numpile_inductor.codegen.triton.runner as runner
    from numpile_inductor.codegen.triton.matmul import TILES

    cupy = _cupy()

    def layer(x: Any, w: Any, b: Any) -> Any:
        return np.maximum(x @ w + b, 0.0)

    shapes = ((200, 300), (300, 150), (150,))
    x, w, b = (cupy.asarray(_RNG.standard_normal(s).astype(dtype)) for s in shapes)
    want = layer(x, w, b)
    bound = 2 * 300 * float(np.finfo(dtype).eps) * (cupy.abs(x) @ cupy.abs(w))
    tiles = TILES[np.dtype(dtype).name]
    for tile in range(len(tiles)):
        monkeypatch.setattr(runner, "pick_backend", lambda *args, tile=tile: 1 + tile)
        numpile.reset()
        compiled = numpile.compile(layer, fullgraph=True, mode="max-autotune-no-cudagraphs")
        got = compiled(x, w, b)
        assert bool(cupy.all(cupy.abs(got - want) <= bound + 1e-30)), tiles[tile]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matmul_template_with_fused_epilogue_matches_cupy(dtype: Any) -> None:
    cupy = _cupy()

    def layer(x: Any, w: Any, b: Any) -> Any:
        return np.maximum(x @ w + b, 0.0)

    x, w, b = (
        cupy.asarray(_RNG.standard_normal(s).astype(dtype)) for s in ((77, 300), (300, 130), (130,))
    )
    want = layer(x, w, b)
    for options in ({"gemm_backends": "triton"}, {"gemm_backends": "extern,triton"}):
        numpile.reset()
        got = numpile.compile(layer, fullgraph=True, options=options)(x, w, b)
        bound = 2 * 300 * float(np.finfo(dtype).eps) * (cupy.abs(x) @ cupy.abs(w))
        assert bool(cupy.all(cupy.abs(got - want) <= bound + 1e-30))


def test_grad_through_a_loop_on_the_gpu_is_one_graph_for_every_trip_count() -> None:
    # The loop VJP's stacks take their length at run time on the device too: a stacking
    # loop and a reverse loop of launches, one graph for trip counts 0 to 40.
    from numpile_capture.capture_events import recording_captures

    def pendulums(x: Any, n: int) -> Any:
        p, v = x, x * 0.0
        for _ in range(n):
            v = v - 0.05 * np.sin(p)
            p = p + 0.05 * v
        return (p * p).sum()

    compiled = numpile.compile(numpile.grad(pendulums), device="cuda")
    x = np.linspace(-1.0, 1.0, 64)
    with recording_captures() as events:
        for n in (0, 1, 7, 40):
            want = numpile.grad(pendulums, compiler="eager")(x, n)
            got = compiled(x, n)
            assert type(got) is np.ndarray and got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    assert sum(1 for event in events if event.graph is not None) == 1
