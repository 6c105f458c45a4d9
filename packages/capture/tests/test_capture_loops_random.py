"""Random small loop nests, compiled (eager backend) and compared with eager Python.

Each program is generated as source: a `for` over a range with random bounds and step,
a body of scalar recurrences, index arithmetic, in-place writes, an `if` on a run-time
value, `break` and `continue`, and optionally an inner loop whose bounds depend on the
outer index (which may break). Values,
dtypes and the input's in-place effects must match eager at every generated trip count.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from numpile_capture import compile_function, reset

# Statements of the body: lines as (extra indentation, text).
_STATEMENTS: tuple[tuple[tuple[int, str], ...], ...] = (
    ((0, "s = s + x[i] * {c}"),),
    ((0, "k = k + i * {n} - 1"),),
    ((0, "k = (k * 3 + i) // 2 - k % 5"),),
    ((0, "x[i] = x[i - 1] * {c} + s"),),
    ((0, "s = s * {c} - x[i]"),),
    ((0, "if x[i] > {c}:"), (1, "s = s - x[i]"), (0, "else:"), (1, "k = k + 1")),
    ((0, "if k % 3 == 0:"), (1, "s = s + 1.0")),
    ((0, "for j in range(i):"), (1, "s = s + x[j] * {c}")),
    ((0, "if x[i] < {c}:"), (1, "break")),
    ((0, "if k % 4 == 1:"), (1, "continue")),
    ((0, "for j in range(i):"), (1, "if x[j] > {c}:"), (2, "break"), (1, "s = s + x[j]")),
)


@st.composite
def _programs(draw: st.DrawFn) -> str:
    start = draw(st.integers(-3, 3))
    stop = draw(st.integers(-3, 12))
    step = draw(st.sampled_from([1, 1, 2, -1, -2]))
    lines = [
        "def program(x, unused):",
        "    s = 0.0",
        "    k = 0",
        f"    for i in range(max({start}, -x.shape[0]), min({stop}, x.shape[0]), {step}):",
    ]
    for _ in range(draw(st.integers(1, 4))):
        statement = draw(st.sampled_from(_STATEMENTS))
        constant = draw(st.sampled_from(["0.5", "2.0", "-1.25", "0.0"]))
        count = draw(st.integers(0, 3))
        for depth, text in statement:
            lines.append("    " * (2 + depth) + text.format(c=constant, n=count))
    lines.append("    return s, k")
    return "\n".join(lines) + "\n"


def _function(source: str) -> Any:
    namespace: dict[str, Any] = {"np": np}
    exec(compile(source, "<random loop>", "exec"), namespace)
    return namespace["program"]


def _same(got: Any, want: Any) -> None:
    for got_item, want_item in zip(got, want, strict=True):
        assert type(got_item) is type(want_item), (got_item, want_item)
        np.testing.assert_array_equal(np.asarray(got_item), np.asarray(want_item))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    _programs(),
    st.sampled_from(["float64", "float32"]),
    st.lists(st.integers(0, 9), min_size=1, max_size=3),
)
def test_random_loop_nests_match_eager(source: str, dtype: str, sizes: list[int]) -> None:
    reset()
    program = _function(source)
    compiled = compile_function(program, backend="eager", dynamic=True)
    for size in sizes:
        data = np.linspace(-2.0, 3.0, size).astype(dtype)
        want_x, got_x = data.copy(), data.copy()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                want = program(want_x, None)
            except Exception as error:
                try:
                    compiled(got_x, None)
                except type(error):
                    np.testing.assert_array_equal(got_x, want_x)
                    continue
                raise AssertionError(f"eager raised {error!r}, compiled did not") from None
            got = compiled(got_x, None)
        _same(got, want)
        np.testing.assert_array_equal(got_x, want_x)
    reset()
