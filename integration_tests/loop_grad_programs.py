"""Loop programs and a finite-difference check shared by the loop-gradient tests
(`test_loops_grad.py`: `numpile.grad`; `test_grad_compile_loops.py`: transforms in compiled
code)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def scalar_and_array_carries(x: Any, n: int) -> Any:
    s = 0.0
    v = x
    for i in range(n):
        v = np.sqrt(v * v + 1.0) * 0.5
        s = s + v[i % v.shape[0]] * i
    return s + v.sum()


def branch_on_the_index(x: Any, n: int) -> Any:
    h = x * 1.0
    for i in range(n):
        if i % 2 == 0:  # noqa: SIM108 - a condition in the body: a `cond` of VJPs
            h = h * np.cos(h)
        else:
            h = h + 0.5 * h * h
    return h.sum()


def break_late(x: Any, n: int) -> Any:
    h = x * 1.0
    for i in range(n):
        h = h * np.cos(h)
        if i == n - 2:  # a loop that breaks: no loop VJP
            break
    return h.sum()


def pendulum_chain(x: Any, n: int) -> Any:
    # Two carried arrays (angle, velocity), semi-implicit Euler steps.
    p = x
    v = x * 0.0
    for _ in range(n):
        v = v - 0.05 * np.sin(p) - 0.01 * v
        p = p + 0.05 * v
    return (p * p).sum()


def central_differences(f: Callable[[Any], Any], x: Any, eps: float = 1e-6) -> Any:
    """The gradient of `f` at `x` by central differences, one element at a time."""
    grad = np.zeros_like(x)
    for k in range(x.size):
        step = np.zeros_like(x)
        step[k] = eps
        grad[k] = (f(x + step) - f(x - step)) / (2 * eps)
    return grad
