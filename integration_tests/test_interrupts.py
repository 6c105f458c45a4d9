"""Ctrl-C inside one long compiled kernel raises `KeyboardInterrupt` within a chunk.

A kernel of many iterations runs its outermost loop in chunks and, in the main thread,
runs pending signal handlers between them (codegen/c/interrupts.py in the inductor): a
SIGINT during a kernel that would run for minutes stops it at once, leaves the inputs as
they were, and the compiled function still works afterwards.
"""

from __future__ import annotations

import pathlib
import queue
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
# Generous for a loaded 2-core machine: the kernel itself would run for minutes.
INTERRUPT_BOUND_S = 2.0
# How long the parent waits for the kernel to poll once called, and for any reply after its
# SIGINT, before it fails the test (and kills the child instead of waiting minutes for the
# kernel to end).
REPLY_BOUND_S = 30.0

# Each body is one kernel of n * n iterations (n rows of n).
_KERNELS = {
    "row_sums": "return (x[:, None] * y[None, :] + x[:, None]).sum(axis=1)",
    "outer_max": "return np.maximum(x[:, None] - y[None, :], 0.0).max(axis=1)",
    # A reduction over every element: no kept dim, its outermost reduced loop is chunked.
    "full_sum": "return (x[:, None] * y[None, :] + x[:, None]).sum()",
}

# NOTE: n * n = 4e12 iterations: minutes on any machine, so the kernel is still running when
# the SIGINT lands however loaded the machine is (at n = 2e5 one ran for 11 s on 2 idle cores).
_CHILD_MAIN = textwrap.dedent(
    """
    import faulthandler, signal, time
    import numpy as np
    import numpile

    faulthandler.enable()  # a crash after the interrupt reports its stack on stderr
    # Ctrl-C raises KeyboardInterrupt, as in a terminal: a test run started in the background
    # (`cmd &` in a script, nohup) passes SIGINT down ignored, and Python then installs no
    # handler for it (the kernel ran to its end: the test's old failure under CI).
    signal.signal(signal.SIGINT, signal.default_int_handler)


    def interrupt_once(name, compiled, eager):
        # Compiled once on small inputs (sizes are symbols): the big call runs the same code,
        # and the stance makes it fail instead of compiling if it did not.
        small = np.linspace(0.0, 1.0, 300), np.linspace(1.0, 2.0, 300)
        np.testing.assert_allclose(compiled(*small), eager(*small))
        n = 2_000_000
        x, y = np.linspace(0.0, 1.0, n), np.linspace(1.0, 2.0, n)
        x0, y0 = x.copy(), y.copy()
        # A timer's handler runs at each poll of the kernel between its chunks. Three runs in a
        # row from one C call (the same frame at the same instruction) show the kernel running
        # and polling: only then does the parent send SIGINT.
        last, repeats = None, 0

        def on_timer(signum, frame):
            nonlocal last, repeats
            here = (frame, frame.f_lasti)
            repeats = repeats + 1 if here == last else 1
            last = here
            if repeats == 3:
                signal.setitimer(signal.ITIMER_REAL, 0)
                print("polling", name, flush=True)

        signal.signal(signal.SIGALRM, on_timer)
        print("calling", name, flush=True)
        signal.setitimer(signal.ITIMER_REAL, 0.005, 0.005)
        start = time.perf_counter()
        try:
            with numpile.set_stance("fail_on_recompile"):
                compiled(x, y)
        except KeyboardInterrupt:
            print("interrupted", name, time.perf_counter() - start, flush=True)
        else:
            print("finished", name, time.perf_counter() - start, flush=True)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        assert np.array_equal(x, x0) and np.array_equal(y, y0), f"{name} wrote an input"
        np.testing.assert_allclose(compiled(*small), eager(*small))
        print("ok", name, flush=True)
    """
)


def _child_script(kernels: dict[str, str]) -> str:
    # One process interrupts every kernel in turn: one import of numpile, and each kernel
    # also checks that the process still takes a Ctrl-C after the ones before.
    parts = [_CHILD_MAIN]
    for name, body in kernels.items():
        parts.append(
            f"\n@numpile.compile(dynamic=True)\ndef {name}(x, y):\n    {body}\n"
            f"\ndef eager_{name}(x, y):\n    {body}\n"
            f"\ninterrupt_once({name!r}, {name}, eager_{name})\n"
        )
    return "".join(parts)


class _ChildLines:
    """The child's stdout, line by line, each read waiting at most a given time."""

    def __init__(self, child: subprocess.Popen[str], stderr: pathlib.Path) -> None:
        self._child = child
        self._stderr = stderr
        self._lines: queue.Queue[str] = queue.Queue()
        self._seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self._child.stdout is not None
        for line in self._child.stdout:
            self._lines.put(line)
        self._lines.put("")  # end of output

    def next(self, timeout: float, awaited: str) -> str:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            pytest.fail(f"no {awaited} from the child in {timeout:.0f} s\n{self.transcript()}")
        self._seen.append(line)
        return line

    def transcript(self) -> str:
        err = self._stderr.read_text() if self._stderr.exists() else ""
        return f"exit status {self._child.poll()}\nstdout:\n{''.join(self._seen)}stderr:\n{err}"


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process is POSIX")
def test_ctrl_c_interrupts_one_long_kernel(tmp_path: pathlib.Path) -> None:
    stderr = tmp_path / "stderr.txt"
    with stderr.open("w") as err:
        # The kernel cache is the session's (NUMPILE_CACHE_DIR under nox): a rerun, or the
        # second Python of CI, loads these kernels instead of building them again.
        child = subprocess.Popen(
            [sys.executable, "-c", _child_script(_KERNELS)],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
    try:
        lines = _ChildLines(child, stderr)
        for name in _KERNELS:
            line = lines.next(TIMEOUT_S, f"call of {name} (after its compile)")
            assert line.split() == ["calling", name], lines.transcript()
            line = lines.next(REPLY_BOUND_S, f"poll of {name}'s kernel")
            assert line.split() == ["polling", name], lines.transcript()
            sent = time.perf_counter()
            child.send_signal(signal.SIGINT)
            line = lines.next(REPLY_BOUND_S, f"reply to the SIGINT during {name}")
            seen = time.perf_counter() - sent
            assert line.split()[:2] == ["interrupted", name], lines.transcript()
            assert seen < INTERRUPT_BOUND_S, f"{name}: KeyboardInterrupt {seen:.2f} s after SIGINT"
            line = lines.next(TIMEOUT_S, f"check of {name} after the interrupt")
            assert line.split() == ["ok", name], lines.transcript()
        assert lines.next(TIMEOUT_S, "end of output") == "", lines.transcript()
        assert child.wait(timeout=TIMEOUT_S) == 0, lines.transcript()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


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
