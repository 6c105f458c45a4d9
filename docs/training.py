"""Train a small MLP in plain NumPy with gradients from `numpile.value_and_grad`.

The model, the loss and the optimizer are ordinary NumPy code; numpile only
supplies the gradient. `value_and_grad` captures the loss once, builds the
joint forward/backward graph, cuts it with the min-cut partitioner (the
forward keeps few bytes for the backward) and compiles both halves with the
inductor (the `numpile` default); later steps reuse the compiled pair.

    python docs/training.py                      # 300 steps, hidden width 64
    python docs/training.py --steps 1000 --size 256
    python docs/training.py --compiler eager     # run the graphs op by op with NumPy
    python docs/training.py --compile-step       # numpile.compile(value_and_grad): one graph

The data are synthetic: `y = sin(x @ a) + 0.5 * cos(x @ b)` for random
`a`, `b`, fitted by a two-hidden-layer tanh network with Adam.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

import numpile

Params = dict[str, np.ndarray]


def make_data(
    rng: np.random.Generator, *, samples: int, features: int, dtype: Any = np.float32
) -> tuple[np.ndarray, np.ndarray]:
    """Inputs `x` (samples, features) and targets `y` (samples, 1), a smooth nonlinear map."""
    x = rng.standard_normal((samples, features)).astype(dtype)
    a = rng.standard_normal((features, 1)) / np.sqrt(features)
    b = rng.standard_normal((features, 1)) / np.sqrt(features)
    y = np.sin(x @ a) + 0.5 * np.cos(x @ b)
    return x, y.astype(dtype)


def init_params(
    rng: np.random.Generator, *, features: int, size: int, dtype: Any = np.float32
) -> Params:
    """Weights scaled by 1/sqrt(fan-in), biases zero."""

    def dense(fan_in: int, fan_out: int) -> np.ndarray:
        weights: np.ndarray = rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)
        return weights.astype(dtype)

    return {
        "w1": dense(features, size),
        "b1": np.zeros(size, dtype),
        "w2": dense(size, size),
        "b2": np.zeros(size, dtype),
        "w3": dense(size, 1),
        "b3": np.zeros(1, dtype),
    }


def loss_fn(params: Params, x: np.ndarray, y: np.ndarray) -> Any:
    """Mean squared error of a two-hidden-layer tanh MLP: the function numpile differentiates."""
    h = np.tanh(x @ params["w1"] + params["b1"])
    h = np.tanh(h @ params["w2"] + params["b2"])
    prediction = h @ params["w3"] + params["b3"]
    return np.mean((prediction - y) ** 2)


class Adam:
    """Adam in plain NumPy, updating the parameter arrays in place."""

    def __init__(self, params: Params, *, lr: float, b1: float = 0.9, b2: float = 0.999):
        self.lr, self.b1, self.b2, self.step_count = lr, b1, b2, 0
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}

    def update(self, params: Params, grads: Params) -> None:
        self.step_count += 1
        correction1 = 1.0 - self.b1**self.step_count
        correction2 = 1.0 - self.b2**self.step_count
        for key, g in grads.items():
            self.m[key] *= self.b1
            self.m[key] += (1.0 - self.b1) * g
            self.v[key] *= self.b2
            self.v[key] += (1.0 - self.b2) * g * g
            m_hat = self.m[key] / correction1
            v_hat = self.v[key] / correction2
            params[key] -= self.lr * m_hat / (np.sqrt(v_hat) + 1e-8)


def train(
    *,
    steps: int = 300,
    size: int = 64,
    samples: int = 256,
    features: int = 8,
    lr: float = 1e-2,
    seed: int = 0,
    compiler: str | None = None,
    compile_step: bool = False,
    log_every: int = 0,
) -> tuple[list[float], float]:
    """Train from a fixed seed; returns the loss of every step and the seconds per step
    after the first (which holds the capture and compile).

    `compiler` picks how numpile runs the forward and backward graphs
    (`"inductor"`, `"eager"`, ...); None uses numpile's default. `compile_step` wraps
    the transform in `numpile.compile`: forward and backward then run as one graph.
    """
    rng = np.random.default_rng(seed)
    x, y = make_data(rng, samples=samples, features=features)
    params = init_params(rng, features=features, size=size)
    optimizer = Adam(params, lr=lr)
    step = numpile.value_and_grad(loss_fn, compiler=compiler)
    if compile_step:
        step = numpile.compile(step)
    losses: list[float] = []
    started = time.perf_counter()
    for index in range(steps):
        if index == 1:
            started = time.perf_counter()
        loss, grads = step(params, x, y)
        optimizer.update(params, grads)
        losses.append(float(loss))
        if log_every and (index % log_every == 0 or index == steps - 1):
            print(f"step {index:5d}  loss {float(loss):.6f}")
    per_step = (time.perf_counter() - started) / max(steps - 1, 1)
    return losses, per_step


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300, help="optimizer steps (default 300)")
    parser.add_argument("--size", type=int, default=64, help="hidden width (default 64)")
    parser.add_argument("--samples", type=int, default=256, help="training samples (default 256)")
    parser.add_argument("--compiler", default=None, help="inductor (numpile's default), eager...")
    parser.add_argument(
        "--compile-step",
        action="store_true",
        help="wrap value_and_grad in numpile.compile: forward and backward in one graph",
    )
    options = parser.parse_args(argv)
    losses, per_step = train(
        steps=options.steps,
        size=options.size,
        samples=options.samples,
        compiler=options.compiler,
        compile_step=options.compile_step,
        log_every=max(options.steps // 10, 1),
    )
    print(
        f"loss {losses[0]:.4f} -> {losses[-1]:.4f} in {options.steps} steps; "
        f"{per_step * 1e3:.3f} ms per step after the first"
    )
    return 0 if losses[-1] < 0.5 * losses[0] else 1


if __name__ == "__main__":
    sys.exit(main())
