"""NumpilePerformanceWarning: once per code object for a function that runs as several graphs,
naming its first break and line; a config switch, a warnings filter and the perf_hints log."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from numpile_capture import (
    CaptureFallbackWarning,
    NumpilePerformanceWarning,
    compile_function,
    config,
    reset,
)

STEP = """
def step(x):
    y = np.sin(x)
    print("logging a step")  # line +2: the first break
    z = y * 2
    print("again")
    return z + 1
"""


@pytest.fixture(autouse=True)
def _fresh_caches() -> None:
    reset()


def _breaking() -> Callable[..., Any]:
    # A fresh code object each time: warnings are once per code object.
    scope: dict[str, Any] = {"np": np}
    exec(compile(STEP, __file__, "exec"), scope)
    return scope["step"]  # type: ignore[no-any-return]


def _calls(fn: Callable[..., Any]) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn(np.ones(3))
        fn(np.ones(3) * 2)
        fn(np.ones(5))  # a recompile: still no second warning
    return [w for w in caught if issubclass(w.category, NumpilePerformanceWarning)]


def test_first_break_warns_once_per_code_object_with_its_line():
    step = _breaking()
    caught = _calls(compile_function(step, backend="eager"))
    assert len(caught) == 1
    message = str(caught[0].message)
    first_break = step.__code__.co_firstlineno + 2
    assert caught[0].filename == __file__ and caught[0].lineno == first_break
    assert f"graph break at {__file__}:{first_break}" in message
    assert "calling print" in message and "numpile.explain(step)" in message
    assert issubclass(caught[0].category, UserWarning)
    # Compiled again (another wrapper, after a reset): the same code object warns no more.
    reset()
    assert _calls(compile_function(step, backend="eager")) == []


def test_config_switch_silences_it_and_the_log_channel_lists_every_break(
    caplog: pytest.LogCaptureFixture,
):
    with config.patch(performance_warnings=False), caplog.at_level(logging.INFO, "numpile"):
        assert _calls(compile_function(_breaking(), backend="eager")) == []
    hints = [r.getMessage() for r in caplog.records if r.name == "numpile.perf_hints"]
    assert len(hints) >= 2  # both breaks (the second in a resume function), each compile
    assert any("calling print" in hint for hint in hints)


def test_a_warnings_filter_on_the_category_silences_it():
    step = compile_function(_breaking(), backend="eager")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=NumpilePerformanceWarning)
        step(np.ones(2))
    assert caught == []


def test_one_graph_functions_do_not_warn():
    @compile_function(backend="eager")
    def clean(x):
        return np.sin(x) * 2

    assert _calls(clean) == []


def test_eager_fallback_is_a_performance_warning_too():
    assert issubclass(CaptureFallbackWarning, NumpilePerformanceWarning)
