"""The type gap's programs (`numpile_capture.loop_entry`): an inner `while` on array data,
kept with the loop's types, retypes a local only where it runs; eager's type after the loop
follows whether any ran. Shared by the C/eager and the Triton tests.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def float_in_inner_while(x: Any, n: int) -> Any:
    t = 0.0
    for i in range(n):
        k = i
        while x[k] > 0.5:  # a first test on array data: only the run time knows it
            t = t + x[k]  # float64 once it runs
            k += 1
    return t * np.float32(2.0)  # float32 for a Python float `t`, float64 for a NumPy one


def int_in_inner_while(x: Any, n: int) -> Any:
    c = 0
    for i in range(n):
        k = i
        while x[k] > 0:
            c = c + x[k]  # int64 once it runs
            k += 1
    return c * np.int8(2)  # int8 for a Python int `c`, int64 for a NumPy one


def float_in_breaking_for(x: Any, y: Any, n: int) -> Any:
    t = 0.0
    for i in range(n):
        y[i] = y[i] + 1.0  # written in place: once per call, as eager
        for j in range(i, 8):
            if x[j] <= 0.5:
                break  # in the first iteration too: `t` is not assigned
            t = t + x[j]
    return t * np.float32(2.0), y


def float_product_before_inner_while(x: Any, z: Any, y: Any, n: int) -> Any:
    t = 0.1
    for i in range(n):
        y[i] = t * z[i]  # float32 for a Python float `t` and a float32 `z`, float64 after
        k = i
        while x[k] > 0.5:
            t = t + x[k]
            k += 1
    return t, y


def inner_data(kind: str, integer: bool) -> Any:
    """Inputs whose inner loops run never, in some outer iterations, or in all of them."""
    # Inner loops that run never, in some outer iterations, or in all of them.
    x = {"never": np.zeros(8), "sometimes": np.array([0, 0.9, 0, 0, 0, 0, 0, 0])}.get(
        kind, np.full(8, 0.9)
    )
    x[-1] = 0.0
    return (x * 10).astype(np.int64) if integer else x
