"""The Triton backend reports how it runs each loop (`numpile_capture.LoopTier`), as C does.

A loop of scalar work is one Triton program; a body of array work is Triton kernels
launched from a host loop; a body one program does not compute runs op by op, with the
reason. Run under Triton's CPU interpreter (`triton_interpreter.py`), in its own process.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import triton_interpreter  # noqa: F401 - first: it chooses Triton's interpreter

from numpile_capture import (
    DEVICE_PROGRAM,
    LoopTier,
    compile_function,
)
from numpile_capture.capture_events import recording_captures
from numpile_inductor.codegen.triton.backend import compile_triton


def sum_of_squares(x: Any, n: int) -> Any:
    s = 0.0
    for i in range(n):
        s = s + x[i] * x[i]
    return s


def rows_recurrence(a: Any, n: int) -> Any:
    s = np.zeros(a.shape[1])
    for i in range(n):
        s = s * 0.5 + np.sin(a[i]) * i
    return s


def _tiers(fn: Callable[..., Any], *args: Any) -> list[LoopTier]:
    # The records of compiling fn's graphs with Triton, as the dispatcher collects them per
    # compile; its result checked against NumPy.
    def triton(graph: Any, example_inputs: Any) -> Any:
        return compile_triton(graph).fn

    with recording_captures() as events:
        result = compile_function(fn, backend=triton)(*args)
    np.testing.assert_allclose(result, fn(*args))
    return [tier for event in events for tier in event.loop_tiers]


def _lineno(fn: Callable[..., Any], text: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, line in enumerate(lines) if text in line)


def test_a_loop_of_scalar_work_is_one_triton_program() -> None:
    (tier,) = _tiers(sum_of_squares, np.arange(6.0), 6)
    assert (tier.kind, tier.tier, tier.reason) == ("for", DEVICE_PROGRAM, None)
    assert tier.lineno == _lineno(sum_of_squares, "for i")


def test_a_body_of_array_work_is_launched_from_a_host_loop() -> None:
    tiers = _tiers(rows_recurrence, np.ones((4, 3)), 4)
    assert [t.lineno for t in tiers] == [_lineno(rows_recurrence, "for i")]
    assert "host loop" in str(tiers[0]) and "array work" in str(tiers[0])


pytestmark = pytest.mark.filterwarnings("ignore")
