"""Recompile tooling: CompileProfiler, compile_times, and NUMPILE_LOGS end to end."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import numpile
import numpile_runtime as rt


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    numpile.reset()
    yield
    numpile.reset()


def test_profiler_reports_each_recompile_with_the_failed_guard() -> None:
    def scaled(x: Any) -> Any:
        return x * 2.0

    f = numpile.compile(scaled, backend="eager", dynamic=False)
    f(np.zeros(2))  # before the block: not part of the profile
    f(np.zeros(3))
    with numpile.CompileProfiler() as prof:
        f(np.zeros(3))  # a hit
        f(np.zeros(4))
        f(np.zeros(4, np.float32))
    failures = [reason.failures[0] for reason in prof.recompiles]
    assert failures == [
        "L['x'].shape[0]: expected 3, got 4",
        "L['x'].dtype: expected float64, got float32",
    ]
    report = prof.report()
    assert report.splitlines()[0] == (
        "numpile CompileProfiler: 2 compiles, 2 recompiles, 0 graph breaks"
    )
    assert "scaled (" in report and "2 compiles, 2 recompiles" in report
    assert "  recompile 1: L['x'].shape[0]: expected 3, got 4" in report
    assert "  recompile 2: L['x'].dtype: expected float64, got float32" in report
    # Every older entry's failure is listed under the newest one's (float32 fails the dtype
    # check first, before any shape check).
    assert "    older entry 1: L['x'].shape[0]: expected 2, got 4" in report
    assert report.count("    older entry 2: L['x'].dtype: expected float64, got float32") == 1
    # After the block, later recompiles are not added.
    f(np.zeros(5))
    assert len(prof.recompiles) == 2


def test_profiler_hints_at_dynamic_shapes_for_size_recompiles() -> None:
    def shift(x: Any) -> Any:
        return x + 1

    f = numpile.compile(shift, backend="eager", dynamic=False)
    with numpile.CompileProfiler() as prof:
        for n in (2, 3, 4):
            f(np.zeros(n))
    assert len(prof.recompiles) == 2
    assert "hint: sizes change between calls" in prof.report()


def test_profiler_lists_graph_breaks_and_no_recompiles() -> None:
    def noisy(x: Any) -> Any:
        y = x + 1
        print("between graphs")
        return y * 2

    f = numpile.compile(noisy, backend="eager")
    with numpile.CompileProfiler() as prof:
        np.testing.assert_array_equal(f(np.ones(3)), (np.ones(3) + 1) * 2)
    report = prof.report()
    assert "1 graph break" in report
    assert "print" in report
    assert report.endswith("no recompiles.")


def test_profiler_as_an_observation_only_backend() -> None:
    def chain(x: Any, y: Any) -> Any:
        return np.sin(x) * y + 1

    x, y = np.linspace(0, 1, 5), np.arange(5.0)
    with numpile.CompileProfiler() as prof:
        f = numpile.compile(chain, backend=prof)
        out = f(x, y)
    np.testing.assert_array_equal(out, np.sin(x) * y + 1)
    assert out.dtype == np.float64
    assert prof.graph_count == 1 and prof.op_count == 3
    assert "as a backend: 1 graph, 3 ops" in prof.report()


def test_compile_times_lists_the_stages_of_a_compile() -> None:
    def inplace(x: Any) -> Any:
        x += 1
        return x * 2

    rt.reset_compile_times()
    numpile.compile(inplace, backend="aot_eager")(np.zeros(3))
    table = numpile.compile_times()
    rows = [line.split()[0] for line in table.splitlines()[1:]]
    assert rows[:3] == ["capture", "guards", "aot"]
    csv = numpile.compile_times(repr="csv").splitlines()
    assert csv[0] == "stage,calls,total_s,mean_s"
    capture = csv[1].split(",")
    assert capture[0] == "capture" and int(capture[1]) == 1 and float(capture[2]) > 0
    with pytest.raises(ValueError, match="'str' or 'csv'"):
        numpile.compile_times(repr="json")  # type: ignore[arg-type]


def test_compile_times_before_any_compile() -> None:
    rt.reset_compile_times()
    assert numpile.compile_times().endswith("(nothing compiled yet)")
    assert numpile.compile_times(repr="csv") == "stage,calls,total_s,mean_s\n"


def test_numpile_logs_guards_and_recompiles_from_the_environment() -> None:
    script = textwrap.dedent(
        """
        import numpy as np, numpile

        @numpile.compile(backend="eager", dynamic=False)
        def f(x):
            return x + 1

        f(np.zeros(3))
        f(np.zeros(4))
        """
    )
    env = dict(os.environ, NUMPILE_LOGS="guards,recompiles")
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    err = result.stderr
    assert "[numpile.guards] INFO GUARDS of f (1):" in err
    assert "ARRAY_MATCH(L['x'], float64[3] strides=(8))" in err
    assert "[numpile.recompiles] INFO Recompiling function f" in err
    assert "L['x'].shape[0]: expected 3, got 4" in err
