"""Compiled kernels and other threads: long kernels run without the GIL.

A kernel touches no Python object, so a compiled call of a long kernel lets other threads
run Python meanwhile (as NumPy's own ufunc loops do).
"""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any

import numpy as np

import numpile

TIMEOUT_S = 120


def _longest_pause_of_a_python_thread(call: Any) -> tuple[float, float]:
    # A thread that runs Python in a loop; the longest gap between two of its iterations
    # while `call()` runs is how long it could not get the GIL.
    stop = threading.Event()
    stamps: list[float] = []

    def spin() -> None:
        while not stop.is_set():
            stamps.append(time.perf_counter())

    thread = threading.Thread(target=spin)
    thread.start()
    time.sleep(0.05)
    start = time.perf_counter()
    call()
    end = time.perf_counter()
    stop.set()
    thread.join(TIMEOUT_S)
    during = [stamp for stamp in stamps if start <= stamp <= end]
    points = [start, *during, end]
    return max(b - a for a, b in itertools.pairwise(points)), end - start


def test_a_long_kernel_lets_other_threads_run() -> None:
    # One OpenMP thread: the kernel and the other thread can each have a core.
    @numpile.compile(options={"cpp.threads": 1})
    def heavy(x: Any) -> Any:
        # Arithmetic only: one C kernel (transcendental functions may call NumPy, which
        # releases the GIL on its own).
        y = ((x * 1.5 + 2.0) * x - 0.5) / (x + 3.0)
        return ((y * y + x) / (y + 1.0) - x * 0.25) / (x * x + 1.0)

    x = np.linspace(0.0, 1.0, 16_000_000)
    y = ((x * 1.5 + 2.0) * x - 0.5) / (x + 3.0)
    np.testing.assert_allclose(heavy(x), ((y * y + x) / (y + 1.0) - x * 0.25) / (x * x + 1.0))
    best = None
    for _ in range(5):
        pause, took = _longest_pause_of_a_python_thread(lambda: heavy(x))
        # Held GIL: the other thread pauses for the whole kernel (pause == took).
        if pause < 0.45 * took:
            best = (pause, took)
            break
    assert best is not None, f"the other thread paused {pause:.3f} s of a {took:.3f} s call"
