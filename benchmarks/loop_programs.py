"""Loop programs in plain NumPy (no numpile): the scalar-body loops that compile to C.

The loop benchmarks (`benchmarks.loops_c`, `benchmarks.loops`), the integration tests of
`numpile.compile` on loops and the inductor's own loop tests run these same functions, so a
program measured is a program tested. Each writes its loops over element indexing only.

    >>> import numpy as np
    >>> float(sum_of_squares(np.arange(4.0)))
    14.0
    >>> int(crc_bits(np.frombuffer(b"123456789", dtype=np.uint8).astype(np.int64)))
    3421780262
"""

from __future__ import annotations

from typing import Any

import numpy as np


def sum_of_squares(x: Any) -> Any:
    """The sum of `x[i] * x[i]`, carried in a Python float."""
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    return s


def gauss_seidel(a: Any) -> Any:
    """One Gauss-Seidel sweep of the interior of `a`, in place (each cell reads updated ones)."""
    n = a.shape[0]
    for i in range(1, n - 1):
        for j in range(1, n - 1):
            a[i, j] = 0.25 * (a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1])
    return a


def forward_substitution(lower: Any, b: Any) -> Any:
    """The solution of `lower @ x == b` for a lower-triangular `lower`."""
    n = lower.shape[0]
    x = np.zeros(n)
    for i in range(n):
        s = b[i]
        for j in range(i):
            s -= lower[i, j] * x[j]
        x[i] = s / lower[i, i]
    return x


def backward_substitution(upper: Any) -> Any:
    """The solution of `upper @ x == ones` for an upper-triangular `upper`."""
    n = upper.shape[0]
    x = np.ones(n)
    for i in range(n - 1, -1, -1):
        s = x[i]
        for j in range(i + 1, n):
            s -= upper[i, j] * x[j]
        x[i] = s / upper[i, i]
    return x


def crc_bits(data: Any) -> Any:
    """The CRC-32 of the bytes in `data`, one bit at a time (Python ints meet int64)."""
    crc = 0xFFFFFFFF
    for i in range(data.shape[0]):
        crc = crc ^ data[i]
        for _ in range(8):
            crc = (crc >> 1) ^ (0xEDB88320 * (crc & 1))
    return crc ^ 0xFFFFFFFF


def mandelbrot(cr: Any, ci: Any) -> Any:
    """Escape-time iteration per point, at most 64 steps, stopping at ``|z| > 2``: a `while`
    on two run-time tests inside a `for` over the points."""
    counts = np.zeros(cr.shape[0], dtype=np.int64)
    for p in range(cr.shape[0]):
        zr = 0.0
        zi = 0.0
        k = 0
        while k < 64 and zr * zr + zi * zi <= 4.0:
            zr, zi = zr * zr - zi * zi + cr[p], 2.0 * zr * zi + ci[p]
            k += 1
        counts[p] = k
    return counts
