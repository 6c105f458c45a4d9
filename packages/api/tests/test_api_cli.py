"""The command line: `python -m numpile info | cache info|clear|path | explain FILE:FUNCTION`."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import numpile_runtime as rt
from numpile.cli import main


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[rt.CodeCache]:
    previous = rt.default_cache()
    yield rt.set_cache_dir(tmp_path / "cache")
    rt.set_cache_dir(previous.root)


def test_cache_path_info_and_clear(cache: rt.CodeCache, capsys: pytest.CaptureFixture[str]):
    assert main(["cache", "path"]) == 0
    assert capsys.readouterr().out.strip() == str(cache.root)
    cache.put_bytes("graph-1", b"x" * 4096)
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert "1 entries" in out and "blobs" in out and "cap" in out
    assert main(["cache", "clear"]) == 0
    assert "removed" in capsys.readouterr().out
    assert cache.get_bytes("graph-1") is None
    assert cache.info().entry_count == 0


def test_info_reports_versions_compiler_openmp_simd_cache_and_gpu(
    cache: rt.CodeCache, capsys: pytest.CaptureFixture[str]
):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    for expected in ("numpile_runtime", "numpy", "compiler", "OpenMP", "SIMD", "code cache"):
        assert expected in out
    assert str(cache.root) in out
    assert "triton" in out and "cupy device" in out


def test_explain_runs_a_files_function_on_example_arguments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    model = tmp_path / "model_for_cli.py"
    model.write_text(
        textwrap.dedent(
            """
            import numpy as np

            def step(x, n):
                y = np.sin(x) * n
                print("halfway")
                return y + 1
            """
        )
    )
    assert main(["explain", f"{model}:step", "np.ones(4)", "3"]) == 0
    out = capsys.readouterr().out
    assert "Graph count: 2" in out
    assert "calling print" in out and f"{model}:6" in out


def test_explain_says_what_is_wrong_with_its_target(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    assert main(["explain", "no-colon"]) == 2
    assert "FILE:FUNCTION" in capsys.readouterr().err
    assert main(["explain", f"{tmp_path}/missing.py:f"]) == 2
    assert "no such file" in capsys.readouterr().err
    (tmp_path / "empty_module.py").write_text("")
    assert main(["explain", f"{tmp_path}/empty_module.py:f"]) == 2
    assert "has no function 'f'" in capsys.readouterr().err


def test_python_dash_m_numpile_runs(tmp_path: Path):
    env = {**os.environ, "NUMPILE_CACHE_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "numpile", "cache", "path"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=120,
    )
    assert done.stdout.strip() == str(tmp_path)
    usage = subprocess.run(
        [sys.executable, "-m", "numpile"], capture_output=True, text=True, env=env, timeout=120
    )
    assert usage.returncode == 2 and "cache" in usage.stdout
