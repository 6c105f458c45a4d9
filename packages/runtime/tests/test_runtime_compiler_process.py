"""Compilers start without fork(): a compile beside the user's BLAS calls never hangs."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

# A background thread starts compilers (as tiered compilation's builds do) while the main
# thread multiplies matrices on OpenBLAS's threads. Through fork() this hung 3 runs of 3
# within 3 s on a 2-core machine (OpenBLAS's fork handler joins a pool thread that is still
# working on the main thread's product).
_COMPILES_BESIDE_PRODUCTS = textwrap.dedent(
    """
    import threading, time
    import numpy as np
    from numpile_runtime.builder import run_compiler

    a = np.ones((256, 256), np.float32)
    stop = threading.Event()

    def compiles():
        while not stop.is_set():
            run_compiler(["true"], 30)

    thread = threading.Thread(target=compiles, daemon=True)
    thread.start()
    end = time.monotonic() + 1.5
    while time.monotonic() < end:
        a @ a
    stop.set()
    thread.join(30)
    print("done", thread.is_alive())
    """
)


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="BLAS runs one thread on one core")
def test_compiles_beside_the_users_blas_calls_do_not_hang() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _COMPILES_BESIDE_PRODUCTS],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, "done False\n"), done.stderr[-2000:]
