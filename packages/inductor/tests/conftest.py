"""Fixtures the inductor's tests share."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import numpile_runtime as rt

# Tests compare compiled kernels with NumPy: no call may run NumPy op by op while the build
# runs in the background (tiering). Tests of tiering turn it on with the `tiered` option.
os.environ["NUMPILE_TIERED"] = "0"

# pytest runs with --import-mode=importlib, which does not put test folders on sys.path:
# the tests import the modules they share (crc_programs, triton_interpreter,
# vectorization_report) from here.
sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def fresh_cache(tmp_path: Path) -> Iterator[Path]:
    """An empty code cache (and graph cache) under `tmp_path` for the test; the previous
    cache folder afterwards."""
    previous = rt.default_cache().root
    root = tmp_path / "cache"
    rt.set_cache_dir(root)
    yield root
    rt.set_cache_dir(previous)


PythonCalls = Callable[..., tuple[Any, list[str]]]


def _python_calls(fn: Callable[..., Any], *args: Any) -> tuple[Any, list[str]]:
    # fn(*args) and the names of the Python functions it called.
    names: list[str] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            names.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        result = fn(*args)
    finally:
        sys.setprofile(None)
    return result, names


@pytest.fixture
def python_calls() -> PythonCalls:
    """A function that calls fn(*args) and returns its result and the names of the Python
    functions the call ran (a C path runs none)."""
    return _python_calls


@pytest.fixture
def numpy_reruns(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Counts the calls whose graph ran again op by op with NumPy (errstate's replay)."""
    from numpile_inductor import errstate

    runs: list[int] = []
    eager = errstate.run_graph

    def counting(graph: Any, args: Any, quiet: Any = ()) -> Any:
        runs.append(1)
        return eager(graph, args, quiet)

    monkeypatch.setattr(errstate, "run_graph", counting)
    return runs


@pytest.fixture
def numpy_runs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """The body graphs capture's interpreter is asked to run (a loop run with NumPy)."""
    from numpile_capture import control_flow

    runs: list[Any] = []
    original = control_flow.body_runner

    def counting(graph: Any) -> Any:
        runs.append(graph)
        return original(graph)

    monkeypatch.setattr(control_flow, "body_runner", counting)
    yield runs
