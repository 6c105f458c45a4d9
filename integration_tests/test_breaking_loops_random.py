"""Loops that graph-break, at random: a body of 1-4 statements drawn from prints on a data
condition, `numpile.graph_break()`, `continue` / `break`, scalar and array updates, and
closures over the frame's locals (cells), over `range` and list loops, called three times
with other trip counts. Printed output, returned arrays, floats and lists must match eager;
the captures must not fall back to eager. This covers resume functions made while running
resume functions (mapped back to the original code), the runner's tail-call loop, and
cells resumed as values."""

from __future__ import annotations

import contextlib
import io
import math
from typing import Any

import numpy as np
import pytest
from harness import examples, skip_unless_chosen
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import numpile
from numpile_capture.capture_events import recording_captures

STATEMENTS = (
    "x = x * 0.9 + 0.5",
    "x = np.sin(x) + i * 0.1",
    "x = x + lr * i",
    "if i % 3 == 0:\n    print('step', i, round(float(x.sum()), 6))",
    "if x.sum() > 2.0:\n    x = x - 1.0",
    "total = total + float(x[0])",
    "seen.append(i)",
    "if i == 2:\n    continue",
    "if i > 7:\n    break",
    "numpile.graph_break()",
    "x = np.where(x > lr, x, lr)",
    "lr = lr * 0.99",
    "x = (lambda v: v * lr + i)(x)",
)
LOOPS = ("for i in range(n):", "for i in range(2, n, 2):", "for i in list(range(n)):")


def _source(loop: str, statements: list[str]) -> str:
    body = "\n".join("        " + line for text in statements for line in text.split("\n"))
    return (
        "def f(x, n, lr):\n    total = 0.0\n    seen = []\n"
        f"    {loop}\n{body}\n    return x, total, seen, lr\n"
    )


def _run(fn: Any, n: int, lr: float) -> tuple[Any, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = fn(np.linspace(-1.0, 1.0, 5), n, lr)
    return result, out.getvalue()


def _check(backend: str, loop: str, statements: list[str], calls: list[tuple[int, float]]) -> None:
    namespace: dict[str, Any] = {"np": np, "numpile": numpile}
    exec(_source(loop, statements), namespace)
    fn = namespace["f"]
    numpile.reset()
    compiled = numpile.compile(fn, backend=backend)
    with recording_captures() as events:
        for n, lr in calls:
            (want, want_out), (got, got_out) = _run(fn, n, lr), _run(compiled, n, lr)
            assert got_out == want_out
            np.testing.assert_allclose(got[0], want[0], rtol=1e-12 if backend == "eager" else 1e-9)
            assert math.isclose(got[1], want[1], rel_tol=1e-12, abs_tol=1e-12)
            assert got[2:] == want[2:]
    assert not any(event.eager for event in events)


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_breaking_loops_behave_as_in_eager(backend: str) -> None:
    skip_unless_chosen(backend)
    cases = st.tuples(
        st.sampled_from(LOOPS),
        st.lists(st.sampled_from(STATEMENTS), min_size=1, max_size=4),
        st.lists(st.tuples(st.sampled_from([0, 1, 5, 12, 30]), st.sampled_from([0.05, 0.2])),
                 min_size=3, max_size=3),
    )  # fmt: skip
    run = settings(
        max_examples=examples(60 if backend == "eager" else 12),
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow],
    )(given(cases)(lambda case: _check(backend, *case)))
    run()
