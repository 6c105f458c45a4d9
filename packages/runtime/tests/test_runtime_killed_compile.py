"""A compile whose Python process is killed: the compiler dies too, the next writer cleans up."""

from __future__ import annotations

import os
import pathlib
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest

SOURCE = "int seven(void) { return 7; }"
TIMEOUT_S = 120


def _alive(pid: int) -> bool:
    # A zombie (dead, not yet reaped by whoever adopted it) counts as dead.
    try:
        status = pathlib.Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_killed_compile_leaves_no_compiler_and_no_temporary_files(
    tmp_path: pathlib.Path,
) -> None:
    gcc = shutil.which("gcc") or shutil.which("cc")
    assert gcc is not None
    pidfile = tmp_path / "compiler.pid"
    # A compiler that, when asked to build into the cache while HANG is set, writes part of
    # its output and its pid, then hangs (as a long compile would); otherwise it is gcc.
    fake = tmp_path / "slowcc"
    fake.write_text(
        textwrap.dedent(
            f"""\
            #!/bin/sh
            if [ -n "$HANG" ]; then
                for arg in "$@"; do
                    case "$prev" in -o) case "$arg" in *cpp/*) out="$arg";; esac;; esac
                    prev="$arg"
                done
                if [ -n "$out" ]; then
                    echo partial > "$out"
                    echo $$ > {pidfile}
                    exec sleep 300
                fi
            fi
            exec {gcc} "$@"
            """
        )
    )
    fake.chmod(0o755)
    cache = tmp_path / "cache"
    env = {**os.environ, "CC": str(fake), "NUMPILE_CACHE_DIR": str(cache), "HANG": "1"}
    script = f"import numpile_runtime; numpile_runtime.compile_library({SOURCE!r})"
    victim = subprocess.Popen([sys.executable, "-c", script], env=env)
    deadline = time.monotonic() + TIMEOUT_S
    while not pidfile.exists() or not pidfile.read_text().strip():
        assert time.monotonic() < deadline, "the compile never started"
        assert victim.poll() is None, "the compile ended before it was killed"
        time.sleep(0.05)
    compiler = int(pidfile.read_text())
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    deadline = time.monotonic() + 10
    while _alive(compiler) and time.monotonic() < deadline:
        time.sleep(0.05)
    orphaned = _alive(compiler)
    if orphaned:
        os.kill(compiler, signal.SIGKILL)
    assert not orphaned, "the compiler outlived the killed process"
    left = list(cache.rglob(".*.so"))
    assert left, "the killed compile left no temporary output (the test did not hang it)"
    # The next writer of that key (same compiler, same source) removes them.
    env.pop("HANG")
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, timeout=TIMEOUT_S, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert list(cache.rglob(".*.so")) == []
    assert len(list(cache.rglob("*.so"))) == 1
