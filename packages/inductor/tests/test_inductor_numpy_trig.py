"""float32 `sin` and `cos` in C give NumPy's values bit for bit (codegen/c/numpy_trig.py):
NumPy's SIMD loop is not libm's sinf/cosf, and a loop that iterates `x = np.cos(x)` until it
stops moving ran 200 steps in C where eager stops after 39."""

from __future__ import annotations

from typing import Any

import numpy as np

from numpile_capture import capture_function
from numpile_inductor import compile_graph


def _both(x: Any) -> tuple[Any, Any]:
    return np.sin(x), np.cos(x)


def _fixed_point(x0: Any) -> tuple[Any, Any]:
    out = x0.copy()
    steps = np.zeros(x0.shape[0], dtype=np.int16)
    for i in range(x0.shape[0]):
        x = out[i]
        for _ in range(200):
            nx = np.cos(x)
            if nx == x:
                break
            x = nx
            steps[i] += 1
        out[i] = x
    return out, steps


def _compiled(fn: Any, *args: Any) -> Any:
    captured = capture_function(fn, args, {})
    return compile_graph(captured.graph).fn(*args)


def _floats() -> Any:
    rng = np.random.default_rng(3)
    bits = rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 71476.0625, 71476.07, 117435.992, 1e-40]
    near = np.linspace(0.7390, 0.7392, 4001)
    mixed = [bits, np.array(special), near, rng.uniform(-10.0, 10.0, 100_000)]
    return np.concatenate([np.asarray(part, dtype=np.float32) for part in mixed])


def test_float32_sin_and_cos_are_numpys_bit_for_bit() -> None:
    x = _floats()
    with np.errstate(invalid="ignore"):
        want = _both(x)
        got = _compiled(_both, x)
    for w, g in zip(want, got, strict=True):
        assert g.dtype == np.float32
        np.testing.assert_array_equal(
            g.view(np.uint32)[~np.isnan(w)], w.view(np.uint32)[~np.isnan(w)]
        )
        assert np.array_equal(np.isnan(g), np.isnan(w))


def test_a_cosine_fixed_point_stops_where_eager_stops() -> None:
    x0 = np.array([0.5, -1.2, 1.9, 0.0], dtype=np.float32)
    want = _fixed_point(x0.copy())
    got = _compiled(_fixed_point, x0.copy())
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
