"""The background build worker: values and errors, cancelling, forks, interpreter exit."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from numpile_inductor import background_build as bb


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    """Holds the worker busy until set: builds submitted meanwhile stay queued."""
    released = threading.Event()
    started = threading.Event()

    def hold() -> None:
        started.set()
        released.wait(30)

    holder = bb.submit(hold)
    assert started.wait(30)
    yield released
    released.set()
    assert holder.wait(30)


def test_a_ticket_holds_the_value_or_the_error_of_its_work() -> None:
    ok = bb.submit(lambda: "built")
    failed = bb.submit(lambda: 1 // 0)
    assert ok.wait(30) and failed.wait(30)
    assert ok.value == "built" and ok.error is None and not ok.cancelled
    assert isinstance(failed.error, ZeroDivisionError) and failed.value is None


def test_cancel_pending_drops_queued_builds_and_starts_a_new_generation(
    gate: threading.Event,
) -> None:
    ran: list[int] = []
    queued = [bb.submit(lambda i=i: ran.append(i)) for i in range(3)]
    before = bb.generation()
    assert bb.cancel_pending() == 3
    assert bb.generation() == before + 1
    assert all(t.done() and t.cancelled for t in queued)
    gate.set()
    after = bb.submit(lambda: ran.append(99))
    assert after.wait(30)
    assert ran == [99]  # the cancelled ones never ran; the worker goes on


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_sees_pending_tickets_orphaned_and_builds_its_own(
    gate: threading.Event,
) -> None:
    pending = bb.submit(lambda: "parent")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: no worker thread came through the fork
        status = 1
        try:
            own = bb.submit(lambda: "child")
            if pending.orphaned() and own.wait(30) and own.value == "child":
                status = 0
        finally:
            os.write(write, bytes([status]))
            os._exit(0)
    os.close(write)
    answer = os.read(read, 1)
    os.close(read)
    os.waitpid(pid, 0)
    assert answer == b"\x00"
    assert not pending.orphaned()  # still the parent's worker's
    gate.set()
    assert pending.wait(30) and pending.value == "parent"


_EXIT_SCRIPT = """
import time
import numpy as np
from numpile_capture import capture_function
from numpile_inductor import inductor

def f(x):
    return np.tanh(np.sin(x) * 2.0 + {salt}) * x

x = np.linspace(0, 1, 64)
fn = inductor(capture_function(f, (x,), {{}}).graph, [x], options={{"tiered": True}})
np.testing.assert_array_equal(fn(x), f(x))
print(fn.tier, flush=True)
"""


def test_exit_with_a_build_in_flight_neither_hangs_nor_leaves_temporary_files(
    tmp_path: Path,
) -> None:
    # A new graph (salted by the time) in a fresh cache: the process exits right after its
    # first call, while the compiler probe or the C build runs on the worker.
    script = _EXIT_SCRIPT.format(salt=f"{time.time_ns() % 1000003}.0")
    env = {**os.environ, "NUMPILE_CACHE_DIR": str(tmp_path), "NUMPILE_TIERED": "1"}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["numpy"]
    assert time.monotonic() - started < 60 + bb.EXIT_WAIT_S
    leftovers = [p.name for p in tmp_path.rglob(".*") if p.is_file() and ".so" in p.name]
    assert leftovers == []
