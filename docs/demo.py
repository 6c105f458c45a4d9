"""numpile demo: compile a few realistic NumPy functions and show what happened.

For each function: the captured graph, the guards that protect it, and the
compiled result beside NumPy's (max abs difference, dtype, shape). Run with
`nox -s demo` or `python docs/demo.py`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

import numpile


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layernorm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def pairwise_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    diff = a[:, None, :] - b[None, :, :]
    return np.sqrt((diff * diff).sum(axis=-1))


def gelu_mlp(x: np.ndarray, w1: np.ndarray, b1: np.ndarray, w2: np.ndarray) -> np.ndarray:
    h = x @ w1 + b1
    h = 0.5 * h * (1.0 + np.tanh(0.7978845608 * (h + 0.044715 * h**3)))
    return h @ w2


def _inputs(rng: np.random.Generator) -> dict[str, tuple[Callable[..., Any], tuple[Any, ...]]]:
    x = rng.standard_normal((512, 256)).astype(np.float32)
    return {
        "softmax": (softmax, (x,)),
        "layernorm": (
            layernorm,
            (x, rng.standard_normal(256).astype(np.float32), np.zeros(256, np.float32)),
        ),
        "pairwise_distances": (
            pairwise_distances,
            (rng.standard_normal((64, 3)), rng.standard_normal((48, 3))),
        ),
        "gelu_mlp": (
            gelu_mlp,
            (
                x[:64],
                rng.standard_normal((256, 128)).astype(np.float32),
                rng.standard_normal(128).astype(np.float32),
                rng.standard_normal((128, 10)).astype(np.float32),
            ),
        ),
    }


def _best_of(fn: Callable[..., Any], args: tuple[Any, ...], repeat: int = 20) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    rng = np.random.default_rng(0)
    # The backend compile picks when given none: the best installed (the inductor).
    backend = numpile.compile(_best_of).backend
    print(f"numpile {numpile.__version__}, backend {backend!r}, NumPy {np.__version__}\n")
    for name, (fn, args) in _inputs(rng).items():
        print("=" * 78)
        print(f"{name}")
        print("=" * 78)
        print(numpile.explain(fn)(*args))
        compiled = numpile.compile(fn)
        start = time.perf_counter()
        got = compiled(*args)
        first_call = time.perf_counter() - start
        expected = fn(*args)
        diff = float(np.max(np.abs(got.astype(np.float64) - expected.astype(np.float64))))
        print(f"\nNumPy:   {expected.dtype}{list(expected.shape)}  {expected.ravel()[:4]}")
        print(f"numpile: {got.dtype}{list(got.shape)}  {got.ravel()[:4]}")
        print(f"max |numpile - NumPy| = {diff:.3g}")
        assert got.dtype == expected.dtype and got.shape == expected.shape
        # Vector tanh/exp differ from NumPy's by an ulp or so; after a matmul that error is
        # relative to the output's scale, not to each element (some cancel to near zero).
        scale = float(np.max(np.abs(expected)))
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5 * scale)
        numpy_time = _best_of(fn, args)
        numpile_time = _best_of(compiled, args)
        print(
            f"first call (capture + compile) {first_call * 1e3:.1f} ms; "
            f"steady state: NumPy {numpy_time * 1e6:.0f} us, numpile {numpile_time * 1e6:.0f} us "
            f"({numpy_time / numpile_time:.2f}x)\n"
        )


if __name__ == "__main__":
    main()
