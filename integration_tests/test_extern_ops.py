"""Extern ops and data-dependent sizes across the stack (issue 24): a library call stays one
node of one graph, kernels around it fuse, a generator is a graph input whose draws match
eager bit for bit, and code after a data-dependent size compiles once for all its values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import numpile


def _graphs(fn: Any, *args: Any) -> int:
    profiler = numpile.CompileProfiler()
    compiled = numpile.compile(fn, backend=profiler)
    for call in args:
        compiled(*call)
    return profiler.graph_count


def _spectral(x: Any) -> Any:
    return np.fft.irfft(np.fft.rfft(np.sin(x)) * 0.5, n=x.shape[0]) * 2.0 + x


def test_fft_stays_in_one_graph() -> None:
    report = numpile.explain(_spectral)(np.ones(8))
    assert report.graph_count == 1
    assert report.graph_break_count == 0


def test_generator_is_a_graph_input_serving_every_generator() -> None:
    def draw(x: Any, gen: Any) -> Any:
        noise = gen.normal(size=(4,))
        gen.random(2)  # unused: still advances the generator
        return x + noise * gen.uniform(0.0, 1.0, size=(4,))

    compiled = numpile.compile(draw, fullgraph=True)
    for seed in (0, 1, 2):
        eager_gen, compiled_gen = np.random.default_rng(seed), np.random.default_rng(seed)
        x = np.arange(4.0)
        np.testing.assert_array_equal(compiled(x, compiled_gen), draw(x, eager_gen))
        assert compiled_gen.bit_generator.state == eager_gen.bit_generator.state
    calls = [(np.arange(4.0), np.random.default_rng(seed)) for seed in range(3)]
    assert _graphs(draw, *calls) == 1


def test_data_dependent_sizes_compile_once() -> None:
    def positive_part(x: Any) -> Any:
        (index,) = np.nonzero(x > 0)
        return np.sqrt(x[index]) * 2.0 + index

    rng = np.random.default_rng(0)
    calls = [(rng.standard_normal(12),) for _ in range(4)]
    assert len({int((c[0] > 0).sum()) for c in calls}) > 1
    assert _graphs(positive_part, *calls) == 1
    compiled = numpile.compile(positive_part, fullgraph=True)
    for (x,) in calls:
        np.testing.assert_allclose(compiled(x), positive_part(x))


def test_refused_functions_break_the_graph_with_their_reason() -> None:
    report = numpile.explain(lambda a: np.linalg.eig(a)[0] + 1)(np.eye(3))
    assert report.graph_break_count >= 1
    assert "dtype depends on the values" in str(report.break_reasons[0])


def _group_mean(labels: Any, values: Any) -> Any:
    return np.bincount(labels, weights=values) / np.maximum(np.bincount(labels), 1)


def _masked_sum(x: Any, y: Any) -> Any:
    return x[x > 0] + y[y > 0] * 2.0


def test_two_data_dependent_sizes_combined_compile_once() -> None:
    # Two bincounts' lengths (two masks' counts) are two unbacked symbols: one graph with a
    # run-time check between them, compiled once for every count (no graph break).
    rng = np.random.default_rng(5)
    calls = [(rng.integers(0, k, 9), rng.standard_normal(9)) for k in (3, 6, 9, 1)]
    assert _graphs(_group_mean, *calls) == 1
    compiled = numpile.compile(_group_mean, fullgraph=True, options={"tiered": False})
    for labels, values in calls:
        np.testing.assert_array_equal(compiled(labels, values), _group_mean(labels, values))


def test_two_masks_broadcast_as_numpy_does_at_run_time() -> None:
    # Equal counts, a count of 1 (broadcasts), 1 against 0, 0 and 0: NumPy's results; other
    # counts: NumPy's ValueError with NumPy's message, raised from the user's line.
    compiled = numpile.compile(_masked_sum, fullgraph=True, options={"tiered": False})
    cases = [
        ([1.0, -1, 2, 3], [1.0, 2, -3, 4]),
        ([1.0, -1, -2, -3], [1.0, 2, -3, 4]),
        ([-1.0, -1, -2, 3], [-1.0, -2, -3, -4]),
        ([-1.0, -1, -2, -3], [-1.0, -2, -3, -4]),
        ([1.0, 2, 3, 4], [1.0, 2, 3, 4]),
    ]
    for x, y in cases:
        args = (np.array(x), np.array(y))
        np.testing.assert_array_equal(compiled(*args), _masked_sum(*args))
    args = (np.array([1.0, 2, -2, 3]), np.array([1.0, 2, -3, -4]))
    with pytest.raises(ValueError) as eager:
        _masked_sum(*args)
    with pytest.raises(ValueError) as raised:
        compiled(*args)
    assert str(raised.value) == str(eager.value)
    lines = [entry.lineno + 1 for entry in raised.traceback if entry.path == Path(__file__)]
    assert _masked_sum.__code__.co_firstlineno + 1 in lines
    assert _graphs(_masked_sum, *[(np.array(x), np.array(y)) for x, y in cases]) == 1


def _spectral_loss(a: Any) -> Any:
    w, v = np.linalg.eigh(a)
    u, s, _ = np.linalg.svd(a, full_matrices=False)
    q, r = np.linalg.qr(a)
    spectrum = np.fft.irfft(a[0], n=3) + np.convolve(a[1], a[2], mode="same")
    return (
        (w * np.arange(3.0)).sum()
        + (v[:, 0] ** 3).sum()
        + (s**2).sum()
        + np.abs(u[0]).sum()
        + (q * r).sum()
        + (spectrum**2).sum()
    )


def test_grad_through_decompositions_matches_central_differences() -> None:
    # numpile.grad through tuple-valued decompositions (every item used), a c2r FFT and a
    # convolution: one compiled joint graph, checked against central differences.
    rng = np.random.default_rng(0)
    m = rng.normal(size=(3, 3))
    a = m @ m.T + np.diag([1.0, 2.0, 3.0])
    grad = numpile.grad(_spectral_loss)(a)
    expected = np.zeros_like(a)
    step = 1e-6
    for flat in range(a.size):
        delta = np.zeros_like(a)
        delta.flat[flat] = step
        expected.flat[flat] = (_spectral_loss(a + delta) - _spectral_loss(a - delta)) / (2 * step)
    np.testing.assert_allclose(grad, expected, rtol=1e-5, atol=1e-6)


def _masked_update(x: Any, y: Any) -> Any:
    z = x.copy()
    z[z > 0] += y[y > 0]
    return z


def test_an_in_place_op_on_two_masks_keeps_numpys_results() -> None:
    # An in-place op keeps its operands (no run-time check node in front of it): NumPy's
    # values, and NumPy's error where the counts differ.
    compiled = numpile.compile(_masked_update, options={"tiered": False})
    for y in ([1.0, 2, -3, 4], [1.0, -2, -3, -4]):
        args = (np.array([1.0, -1, 2, 3]), np.array(y))
        np.testing.assert_array_equal(compiled(*args), _masked_update(*args))
    args = (np.array([1.0, -1, 2, 3]), np.array([1.0, 2, -3, -4]))
    with pytest.raises(ValueError, match="could not be broadcast"):
        compiled(*args)


def _noisy(x: Any, gen: Any) -> Any:
    scale = gen.uniform(0.5, 1.0, size=x.shape[0])
    noise = gen.normal(size=x.shape)
    picks = gen.integers(0, 3, size=(x.shape[0] * 2 + 1,))
    return x * scale[:, None] + noise, picks + gen.random(x.shape[1]).sum()


@pytest.mark.parametrize("backend", ["inductor", "eager"])
def test_a_draw_sized_by_an_input_shape_compiles_once_for_every_size(backend: str) -> None:
    # size=x.shape (and sizes computed from it) stays symbolic: after the first (static)
    # graph, one dynamic graph serves every size; draws and generator states as eager's.
    numpile.reset()
    shapes = [(3, 2), (5, 2), (8, 2), (13, 2)]
    assert _graphs(_noisy, *[(np.ones(shape), np.random.default_rng(0)) for shape in shapes]) == 2
    compiled = numpile.compile(_noisy, backend=backend, fullgraph=True)
    for seed, shape in enumerate([*shapes, (4, 3), (1, 5), (0, 2)]):
        x = np.arange(float(np.prod(shape))).reshape(shape)
        eager_gen, compiled_gen = np.random.default_rng(seed), np.random.default_rng(seed)
        want, got = _noisy(x, eager_gen), compiled(x, compiled_gen)
        for w, g in zip(want, got, strict=True):
            np.testing.assert_array_equal(g, w)
            assert g.dtype == w.dtype and g.shape == w.shape
        assert compiled_gen.bit_generator.state == eager_gen.bit_generator.state
