"""Compile progress: one line on stderr past the delay, on terminals or when forced by
NUMPILE_LOGS; nothing for short compiles, pipes, or when forced off."""

from __future__ import annotations

import io
import time
from collections.abc import Iterator

import pytest

import numpile_runtime as rt
from numpile_runtime import progress as progress_module
from numpile_runtime.progress import build_done, builds_started, compile_progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def short_delay(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(progress_module, "DELAY_S", 0.05)
    monkeypatch.setattr(progress_module, "_TICK_S", 0.02)
    yield
    rt.set_logs("")


def _slow_compile() -> None:
    with compile_progress("step (model.py:12)"):
        with compile_progress("inner (part of the same compile)"), rt.timed("lowering"):
            pass
        builds_started(2)
        build_done()
        time.sleep(0.3)


def test_a_slow_compile_on_a_terminal_shows_one_progress_line(monkeypatch: pytest.MonkeyPatch):
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    _slow_compile()
    text = terminal.getvalue()
    assert "[numpile] compiling step (model.py:12): lowering, 1/2 builds done" in text
    assert text.endswith("\n") and text.count("\n") == 1  # one line, rewritten in place
    assert "[numpile] compiled step (model.py:12) in " in text


def test_a_short_compile_prints_nothing(monkeypatch: pytest.MonkeyPatch):
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    with compile_progress("quick (m.py:1)"):
        pass
    assert terminal.getvalue() == ""


def test_not_a_terminal_prints_nothing_unless_forced(monkeypatch: pytest.MonkeyPatch):
    pipe = io.StringIO()
    monkeypatch.setattr("sys.stderr", pipe)
    _slow_compile()
    assert pipe.getvalue() == ""
    rt.set_logs("progress")
    _slow_compile()
    assert "compiling step" in pipe.getvalue()


def test_forced_off_prints_nothing_on_a_terminal(monkeypatch: pytest.MonkeyPatch):
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    rt.set_logs("-progress")
    _slow_compile()
    assert terminal.getvalue() == ""


def test_real_builds_are_counted(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(progress_module, "DELAY_S", 0.0)
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    with compile_progress("lib (m.py:2)"):
        rt.build_many([rt.BuildJob("int a1(void) { return 1; }"), rt.BuildJob("int a2(void);")])
        time.sleep(0.1)
    assert "2/2 builds done" in terminal.getvalue()
