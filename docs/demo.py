"""numpile demo: compile a few realistic NumPy functions and show what happened.

For each function: the captured graph and the guards that protect it, the first call
(capture; the call runs with NumPy while the C module builds in the background), the wait
for that build (`numpile.wait_for_compiles()`), the compiled result beside NumPy's, and
steady-state times of the compiled code against NumPy's. Then a Python loop compiled as a
loop: its first call at one trip count and at ten times as many (no recompile), and its
speed against NumPy.

The first waits of a fresh cache also include builds made once per cache (the precompiled
header every module includes, the buffer pool, the call gate; the last two run at a low
priority): a second run finds them, and the graphs' modules, in the cache.

Run with `nox -s demo` or `python docs/demo.py`. `NUMPILE_DEMO_QUICK=1` (the test's
setting) times fewer repeats; everything else runs the same way.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import numpile

# Timing repeats: best of REPEAT, the two functions called in turn (the same machine load).
REPEAT = 3 if os.environ.get("NUMPILE_DEMO_QUICK") == "1" else 30


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


def gauss_seidel(A: np.ndarray, b: np.ndarray, sweeps: int) -> np.ndarray:
    """`sweeps` Gauss-Seidel sweeps, row by row: a Python loop numpile compiles as a loop."""
    n = b.shape[0]
    x = np.zeros_like(b)
    for _ in range(sweeps):
        for i in range(n):
            x[i] = (b[i] - A[i, :i] @ x[:i] - A[i, i + 1 :] @ x[i + 1 :]) / A[i, i]
    return x


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


def _best_times(fns: dict[str, Callable[..., Any]], args: tuple[Any, ...]) -> dict[str, float]:
    # Each function once per round, in turn: a burst of load slows both alike.
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(REPEAT):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn(*args)
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def _duration(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds >= 1 else f"{seconds * 1e3:.1f} ms"


def _timed(fn: Callable[..., Any], *args: Any) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def _check(got: Any, expected: Any) -> None:
    print(f"NumPy:   {expected.dtype}{list(expected.shape)}  {expected.ravel()[:4]}")
    print(f"numpile: {got.dtype}{list(got.shape)}  {got.ravel()[:4]}")
    diff = float(np.max(np.abs(got.astype(np.float64) - expected.astype(np.float64))))
    print(f"max |numpile - NumPy| = {diff:.3g}")
    assert got.dtype == expected.dtype and got.shape == expected.shape
    # Vector tanh/exp differ from NumPy's by an ulp or so; after a matmul that error is
    # relative to the output's scale, not to each element (some cancel to near zero).
    scale = float(np.max(np.abs(expected)))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5 * scale)


def _speed(fn: Callable[..., Any], compiled: Callable[..., Any], args: tuple[Any, ...]) -> str:
    best = _best_times({"numpy": fn, "numpile": compiled}, args)
    return (
        f"steady state (best of {REPEAT}): NumPy {best['numpy'] * 1e6:.0f} us, "
        f"numpile {best['numpile'] * 1e6:.0f} us ({best['numpy'] / best['numpile']:.1f}x)"
    )


def _title(text: str) -> None:
    print("=" * 78)
    print(text)
    print("=" * 78)


def show_function(name: str, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
    """One function: graph and guards, first call, background build, result, speed."""
    _title(name)
    print(numpile.explain(fn)(*args))
    compiled = numpile.compile(fn)
    first = _timed(compiled, *args)
    # The first call captured the graph and ran it with NumPy; the C module builds in the
    # background. Wait for it: the calls below run the compiled code.
    build = _timed(numpile.wait_for_compiles)
    print()
    _check(compiled(*args), fn(*args))
    print(f"first call {_duration(first)}, then {_duration(build)} waiting for background builds")
    print(_speed(fn, compiled, args) + "\n")


def show_loop() -> None:
    """A Python loop compiled as a loop: one compile for every trip count."""
    _title("gauss_seidel: a Python loop compiled as a loop")
    rng = np.random.default_rng(1)
    n = 32
    A = rng.standard_normal((n, n))
    A[np.diag_indices(n)] = np.abs(A).sum(axis=1) + 1.0  # diagonally dominant: converges
    b = rng.standard_normal(n)
    compiled = numpile.compile(gauss_seidel)
    for sweeps in (10, 100):
        args = (A, b, sweeps)
        with numpile.CompileProfiler() as profile:
            first = _timed(compiled, *args)
            build = _timed(numpile.wait_for_compiles)
        _check(compiled(*args), gauss_seidel(*args))
        print(
            f"{sweeps} sweeps of {n} rows: first call {_duration(first)}, then "
            f"{_duration(build)} waiting for builds; {len(profile.captures)} capture(s), "
            f"{len(profile.recompiles)} recompile(s)"
        )
        print(_speed(gauss_seidel, compiled, args) + "\n")


def main() -> None:
    start = time.perf_counter()
    # The backend compile picks when given none: the best installed (the inductor).
    backend = numpile.compile(_best_times).backend
    print(f"numpile {numpile.__version__}, backend {backend!r}, NumPy {np.__version__}\n")
    for name, (fn, args) in _inputs(np.random.default_rng(0)).items():
        show_function(name, fn, args)
    show_loop()
    print(f"demo done in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
