"""Loop nests of scalar work with 1-d views whose bounds follow the index, shared by the
Triton loop tests (`test_loops_triton.py`, interpreted; `test_gpu_loops.py`, on a GPU):
`NESTS` maps a name to the function and its inputs at a size `n`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def lu_rows(A: Any) -> Any:
    A = A.copy()
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            A[i, j] = (A[i, j] - A[i, :j] @ A[:j, j]) / A[j, j]
        for j in range(i, n):
            A[i, j] = A[i, j] - A[i, :i] @ A[:i, j]
    return A


def cholesky_rows(A: Any) -> Any:
    L = np.zeros_like(A)
    for i in range(A.shape[0]):
        for j in range(i):
            L[i, j] = (A[i, j] - L[i, :j] @ L[j, :j]) / L[j, j]
        L[i, i] = np.sqrt(A[i, i] - L[i, :i] @ L[i, :i])
    return L


def triangular_solves(L: Any, U: Any, b: Any) -> Any:
    n = b.shape[0]
    y = np.zeros_like(b)
    for i in range(n):
        y[i] = (b[i] - L[i, :i] @ y[:i]) / L[i, i]
    x = np.zeros_like(b)
    for i in range(n - 1, -1, -1):
        x[i] = (y[i] - U[i, i + 1 :] @ x[i + 1 :]) / U[i, i]
    return x


def gauss_seidel(A: Any, b: Any, sweeps: int) -> Any:
    x = np.zeros_like(b)
    for _ in range(sweeps):
        for i in range(b.shape[0]):
            x[i] = (b[i] - A[i, :i] @ x[:i] - A[i, i + 1 :] @ x[i + 1 :]) / A[i, i]
    return x


def levinson_durbin(r: Any) -> Any:
    y = np.zeros_like(r)
    y[0] = -r[0]
    beta = 1.0
    alpha = -r[0]
    for k in range(1, r.shape[0]):
        beta = (1.0 - alpha * alpha) * beta
        alpha = -(r[k] + r[k - 1 :: -1] @ y[:k]) / beta
        y[:k] = y[:k] + alpha * y[k - 1 :: -1]  # reads what it overwrites: NumPy's temporary
        y[k] = alpha
    return y


def crc32(data: Any) -> Any:
    crc = np.uint32(0xFFFFFFFF)
    for i in range(data.shape[0]):
        crc = crc ^ data[i]
        for _ in range(8):
            crc = (crc >> np.uint32(1)) ^ ((crc & np.uint32(1)) * np.uint32(0xEDB88320))
    return crc ^ np.uint32(0xFFFFFFFF)


def floyd_warshall(D: Any) -> Any:
    D = D.copy()
    for k in range(D.shape[0]):
        for i in range(D.shape[0]):
            D[i, :] = np.minimum(D[i, :], D[i, k] + D[k, :])
    return D


def _dominant(n: int) -> Any:
    A = np.random.default_rng(n).standard_normal((n, n))
    A[np.diag_indices(n)] = np.abs(A).sum(axis=1) + 1.0
    return A


NESTS: dict[str, tuple[Callable[..., Any], Callable[[int], tuple[Any, ...]]]] = {
    "lu_rows": (lu_rows, lambda n: (_dominant(n),)),
    "cholesky_rows": (cholesky_rows, lambda n: (_dominant(n) @ _dominant(n).T,)),
    "triangular_solves": (
        triangular_solves,
        lambda n: (np.tril(_dominant(n)), np.triu(_dominant(n)), np.linspace(-1.0, 1.0, n)),
    ),
    "gauss_seidel": (gauss_seidel, lambda n: (_dominant(4), np.arange(4.0) - 1.5, n)),
    "levinson_durbin": (levinson_durbin, lambda n: (np.linspace(0.1, -0.1, n) / (n + 1),)),
    "crc32": (crc32, lambda n: (np.arange(n, dtype=np.uint32) * 37 % 256,)),
    "floyd_warshall": (floyd_warshall, lambda n: (np.random.default_rng(n).random((n, n)),)),
}
