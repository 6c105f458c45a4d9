"""A compiler past its time limit dies with every process it started."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from numpile_runtime.builder import run_compiler


def _alive(pid: int) -> bool:
    # A killed process whose parent is gone may linger as a zombie until init reaps it.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except FileNotFoundError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_a_timed_out_compiler_leaves_no_child_running(tmp_path: Path) -> None:
    # A driver that starts its compiler proper as a child and waits for it, as cc does cc1.
    pid_file = tmp_path / "child.pid"
    script = f"sleep 60 >/dev/null 2>&1 & echo $! > {pid_file}; wait"
    with pytest.raises(subprocess.TimeoutExpired):
        run_compiler(["sh", "-c", script], 1.0)
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def test_a_finished_compiler_gives_its_output() -> None:
    done = run_compiler(["sh", "-c", "echo out; echo err >&2; exit 3"], 10.0)
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")
