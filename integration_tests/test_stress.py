"""The stress test: 8 threads and 4 processes compile and call 200 functions at once.

Every result is compared with eager (`stress.py`). All of them share one fresh code cache, so
processes race to build the same kernels while threads race to compile the same functions.
The default run is short, for CI; `NUMPILE_STRESS_SECONDS=600` runs it for ten minutes. It runs
twice: with the default bound on loaded kernel libraries, and with a bound of 1, so that
every load unloads the library of another graph in use, which loads again on its next call
while threads call it.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from collections.abc import Iterator

import pytest

import numpile
import numpile_runtime as rt

HERE = pathlib.Path(__file__).parent
SECONDS = float(os.environ.get("NUMPILE_STRESS_SECONDS", "5"))
PROCESSES = 4
THREADS = 8


@pytest.fixture
def shared_cache(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("NUMPILE_CACHE_DIR", str(folder))
    numpile.reset()
    yield str(folder)
    numpile.reset()


@pytest.fixture(params=[None, 1], ids=["default_bound", "library_bound_1"])
def library_bound(request: pytest.FixtureRequest) -> Iterator[int | None]:
    bound: int | None = request.param
    previous = rt.set_max_loaded_modules(bound) if bound is not None else None
    yield bound
    if previous is not None:
        rt.set_max_loaded_modules(previous)


def test_threads_and_processes_compile_and_call_together(
    shared_cache: str, library_bound: int | None
) -> None:
    from stress import run_stress  # the helper module beside this file (see conftest)

    env = {**os.environ, "NUMPILE_CACHE_DIR": shared_cache}
    if library_bound is not None:
        env["NUMPILE_MAX_LOADED_MODULES"] = str(library_bound)
    workers = [
        subprocess.Popen(
            [sys.executable, str(HERE / "stress.py"), str(SECONDS), "2", str(seed)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for seed in range(1, PROCESSES + 1)
    ]
    try:
        summary = run_stress(SECONDS, threads=THREADS, seed=0)
        outputs = [worker.communicate(timeout=SECONDS + 600) for worker in workers]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
    assert summary["failures"] == []
    assert summary["calls"] >= THREADS
    calls = [summary["calls"]]
    reloads = [summary["reloads"]]
    for worker, (stdout, stderr) in zip(workers, outputs, strict=True):
        assert worker.returncode == 0, stderr
        result = json.loads(stdout.strip().splitlines()[-1])
        assert result["failures"] == []
        assert result["calls"] >= 2
        calls.append(result["calls"])
        reloads.append(result["reloads"])
    # Shown with -s: the calls checked against eager, in this process and in each worker, and
    # the graphs loaded again after the library bound unloaded them.
    print(
        f"stress: {SECONDS:g} s, bound {library_bound}, calls checked per process {calls}, "
        f"graphs loaded again {reloads}, no failure"
    )
