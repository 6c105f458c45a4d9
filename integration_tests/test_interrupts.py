"""Ctrl-C inside one long compiled kernel raises `KeyboardInterrupt` within a chunk.

A kernel of many iterations runs its outermost loop in chunks and, in the main thread,
runs pending signal handlers between them (codegen/c/interrupts.py in the inductor): a
SIGINT during a kernel that would run for tens of seconds stops it at once, leaves the
inputs as they were, and the compiled function still works afterwards.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable

import numpy as np
import pytest

import numpile

TIMEOUT_S = 240
# Generous for a loaded 2-core machine: the kernel itself would run for tens of seconds.
INTERRUPT_BOUND_S = 2.0

_CHILD = textwrap.dedent(
    """
    import faulthandler, sys, time
    import numpy as np
    import numpile

    faulthandler.enable()  # a crash after the interrupt reports its stack on stderr

    @numpile.compile(dynamic=True)
    def {name}(x, y):
        {body}

    def eager(x, y):
        {body}

    # Compiled once on small inputs (sizes are symbols): the big call runs the same code.
    small = np.linspace(0.0, 1.0, 300), np.linspace(1.0, 2.0, 300)
    np.testing.assert_allclose({name}(*small), eager(*small))
    n = {n}
    x, y = np.linspace(0.0, 1.0, n), np.linspace(1.0, 2.0, n)
    x0, y0 = x.copy(), y.copy()
    print("ready", flush=True)
    start = time.perf_counter()
    try:
        {name}(x, y)
    except KeyboardInterrupt:
        print("interrupted", time.perf_counter() - start, flush=True)
    else:
        print("finished", time.perf_counter() - start, flush=True)
    assert np.array_equal(x, x0) and np.array_equal(y, y0), "an input was written"
    np.testing.assert_allclose({name}(*small), eager(*small))
    print("ok", flush=True)
    """
)

# Each body is one kernel of n * n iterations (n rows of n): about 4e10 operations.
_KERNELS = {
    "row_sums": "return (x[:, None] * y[None, :] + x[:, None]).sum(axis=1)",
    "outer_max": "return np.maximum(x[:, None] - y[None, :], 0.0).max(axis=1)",
    # A reduction over every element: no kept dim, its outermost reduced loop is chunked.
    "full_sum": "return (x[:, None] * y[None, :] + x[:, None]).sum()",
}


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process is POSIX")
@pytest.mark.parametrize("name", list(_KERNELS))
def test_ctrl_c_interrupts_one_long_kernel(name: str, tmp_path: os.PathLike[str]) -> None:
    script = _CHILD.format(name=name, body=_KERNELS[name], n=200_000)
    env = {**os.environ, "NUMPILE_CACHE_DIR": str(tmp_path)}
    child = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line.strip() == "ready", line + child.stderr.read() if child.stderr else ""
        time.sleep(1.0)  # well inside the kernel
        sent = time.perf_counter()
        child.send_signal(signal.SIGINT)
        line = child.stdout.readline()
        seen = time.perf_counter() - sent
        # NOTE: not communicate(): with two pipes it reads the file descriptors and skips
        # what readline() already buffered ("ok" when it came in the same read).
        child.wait(timeout=TIMEOUT_S)
        out = child.stdout.read()
        err = child.stderr.read() if child.stderr else ""
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert line.startswith("interrupted"), line + out + err
    assert seen < INTERRUPT_BOUND_S, f"KeyboardInterrupt came {seen:.2f} s after SIGINT"
    assert out.strip().endswith("ok"), f"exit status {child.returncode}: {out}{err}"


class _AlarmError(Exception):
    pass


def _raise_alarm(signum: int, frame: object) -> None:
    raise _AlarmError


def _flat_loop(a: np.ndarray, n: int) -> float:
    s = 0.0
    for i in range(n):
        s += a[i % 1000] * i
    return s


def _nested_loop(a: np.ndarray, n: int) -> float:
    s = 0.0
    for i in range(n):
        for j in range(a.shape[0]):
            s += a[j] * i
    return s


def _nested_while(a: np.ndarray, n: int) -> float:
    # Polled by the work of its inner `while` (loop_body's POLL_WORK), not per outer step.
    s = 0.0
    for i in range(n):
        k = 0
        while k < 3:
            s += a[k] * i
            k += 1
    return s


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs setitimer")
@pytest.mark.parametrize(
    ("program", "long_n"),
    [(_flat_loop, 4 * 10**9), (_nested_loop, 10**7), (_nested_while, 10**10)],
)
def test_a_signal_interrupts_a_long_loop_that_runs_as_c(
    program: Callable[[np.ndarray, int], float], long_n: int
) -> None:
    # A loop compiled to C holds the GIL; its outermost loop runs pending signal handlers
    # between iterations, so a handler's exception stops it (it would run for seconds).
    compiled = numpile.compile(program)
    a = np.linspace(0.0, 1.0, 1000)
    assert compiled(a, 50) == program(a, 50)
    assert compiled(a, 60) == program(a, 60)  # the trip count is no guard from here on
    before = signal.signal(signal.SIGALRM, _raise_alarm)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        start = time.perf_counter()
        with pytest.raises(_AlarmError):
            compiled(a, long_n)
        took = time.perf_counter() - start
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)
    assert took < 0.3 + INTERRUPT_BOUND_S, f"the handler's exception came after {took:.2f} s"
    assert compiled(a, 70) == program(a, 70)


def _count_handler_runs(call: Callable[[], object]) -> tuple[object, int]:
    # A timer signal every 0.1 ms: its handler runs once per poll of the kernel (Python
    # runs pending handlers when polled, coalescing the signals in between), and once more
    # after the call; a graph of two kernels runs it after each. Four runs or more during the
    # call mean the kernel polled between its chunks.
    runs: list[float] = []
    before = signal.signal(signal.SIGALRM, lambda signum, frame: runs.append(0.0))
    try:
        signal.setitimer(signal.ITIMER_REAL, 1e-4, 1e-4)
        result = call()
        during = len(runs)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)
    return result, during


def _scaled_sum(x: np.ndarray) -> object:
    return (x * 3).sum()


def _scaled_max(x: np.ndarray) -> object:
    return (x * 1.5).max()


def _column_sums(x: np.ndarray) -> object:
    return (x * 1.5).sum(axis=0)


def _column_means(x: np.ndarray) -> object:
    return (x * 1.5).mean(axis=0)


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs setitimer")
@pytest.mark.parametrize(
    ("program", "shape", "dtype", "dynamic"),
    [
        (_scaled_sum, (10_000_003,), np.float64, True),  # pairwise blocks of one row
        (_scaled_sum, (10_000_003,), np.int64, True),  # one plain loop
        (_scaled_max, (10_000_003,), np.float64, True),  # lanes
        (_scaled_sum, (4001, 2503), np.float64, True),  # rows of pairwise sums
        # A 1-d result of a reduction over rows: the rows are chunked, columns in parallel.
        (_column_sums, (4001, 2503), np.float64, False),
        (_column_means, (4001, 2503), np.float64, False),
    ],
)
def test_a_reduction_without_kept_rows_polls_between_chunks_and_keeps_its_bits(
    program: Callable[[np.ndarray], object], shape: tuple[int, ...], dtype: type, dynamic: bool
) -> None:
    compiled = numpile.compile(program, dynamic=dynamic, options={"tiered": False})
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 1000).astype(dtype)
    if dynamic:
        for rows in (300, 301):  # sizes are symbols from the second call on
            np.testing.assert_allclose(compiled(x[:rows]), program(x[:rows]), rtol=1e-12)  # type: ignore[arg-type]
    else:
        compiled(x)
    result, runs = _count_handler_runs(lambda: compiled(x))
    assert runs >= 4, f"the handler ran {runs} times during the call (5 chunks or more)"
    # Chunks run the same operations in the same order as one chunk: the same bits. Only
    # the main thread runs handlers, so another thread's call is one chunk.
    one_chunk: list[object] = []
    thread = threading.Thread(target=lambda: one_chunk.append(compiled(x)))
    thread.start()
    thread.join(TIMEOUT_S)
    assert len(one_chunk) == 1
    np.testing.assert_array_equal(one_chunk[0], result, strict=True)
    np.testing.assert_allclose(result, program(x), rtol=1e-12)  # type: ignore[arg-type]
