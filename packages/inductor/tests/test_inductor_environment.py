"""Bad environments: no C compiler (with NUMPILE_NO_COMPILER=raise; the default fallback is
tested in test_inductor_no_compiler.py), a compiler that rejects the generated code."""

from __future__ import annotations

import logging
import shutil
import stat
from pathlib import Path

import numpy as np
import pytest

import numpile_runtime as rt
from numpile_capture import Graph, compile_function, config, get_op, meta_of
from numpile_inductor import KernelCompileError, inductor


def _graph() -> tuple[Graph, np.ndarray]:
    a = np.linspace(0, 1, 10)
    g = Graph()
    p = g.placeholder("a", meta_of(a))
    g.output = g.call(get_op("add"), g.call(get_op("cos"), p), 1.0)
    return g, a


def test_missing_compiler_raises_one_clear_error(
    fresh_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CC", str(fresh_cache / "no-such-gcc"))
    monkeypatch.setenv("NUMPILE_NO_COMPILER", "raise")
    graph, a = _graph()
    with pytest.raises(rt.CompilerNotFoundError) as info:
        inductor(graph, [a])
    message = str(info.value)
    assert "install" in message and "gcc" in message
    assert "suppress_errors" in message


def test_missing_compiler_with_suppress_errors_runs_eagerly(
    fresh_cache: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("CC", str(fresh_cache / "no-such-gcc"))
    monkeypatch.setenv("NUMPILE_NO_COMPILER", "raise")
    monkeypatch.setattr(config, "suppress_errors", True)

    def f(x: np.ndarray) -> np.ndarray:
        return np.cos(x) + 1.0

    compiled = compile_function(f, backend="inductor")
    a = np.linspace(0, 1, 10)
    with caplog.at_level(logging.WARNING):
        got = compiled(a)
    np.testing.assert_array_equal(got, f(a))
    assert any("C compiler" in r.getMessage() for r in caplog.records if r.levelname == "WARNING")


def test_missing_compiler_without_suppress_errors_fails_the_compile(
    fresh_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CC", str(fresh_cache / "no-such-gcc"))
    monkeypatch.setenv("NUMPILE_NO_COMPILER", "raise")
    monkeypatch.setattr(config, "suppress_errors", False)

    def f(x: np.ndarray) -> np.ndarray:
        return np.cos(x) * 3.0

    with pytest.raises(Exception, match="install gcc"):
        compile_function(f, backend="inductor")(np.ones(3))


def test_compile_error_names_the_kernel_source_and_the_graph(
    fresh_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gcc = shutil.which("gcc") or shutil.which("cc")
    assert gcc is not None
    fake = fresh_cache.parent / "failing-gcc"
    fake.write_text(
        "#!/bin/sh\n"
        f'case "$*" in *--version*|*-dumpversion*|*-dumpmachine*) exec {gcc} "$@";; esac\n'
        'echo "error: simulated compiler failure" >&2\n'
        "exit 1\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("CC", str(fake))
    graph, a = _graph()
    with pytest.raises(KernelCompileError) as info:
        inductor(graph, [a])
    error = info.value
    assert Path(error.source_path).exists()
    assert error.source_path in str(error)
    assert "cos" in error.graph and str(graph).splitlines()[1].strip() in str(error)
    assert "simulated compiler failure" in str(error)
    assert Path(error.source_path + ".graph.txt").read_text().strip() == str(graph).strip()
    assert isinstance(error, rt.BuildError)
