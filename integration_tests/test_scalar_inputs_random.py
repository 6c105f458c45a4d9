"""Python scalar inputs at random: one expression, one array dtype, a sequence of calls whose
scalars come from the values NumPy and Python treat specially (out of an integer dtype's
range, beyond int64, zero, signed zero, infinities, NaN, bools). Each call is compared with
eager: values, dtype and type, or the exception type. The compiled function keeps its cache
across the sequence, so calls hit entries whose scalars are graph inputs, specialized
constants, or guarded comparisons."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest
from harness import examples, skip_unless_chosen
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import numpile

EXPRESSIONS = (
    "x * a + b",
    "x - a * b",
    "(x + a) / b",
    "x * (a / b)",
    "x * (a // b) + (a % 7)",
    "x ** a",
    "np.maximum(x, a) - b",
    "np.where(x > a, x, b)",
    "x * (1 if a > b else 2)",
    "x * math.sqrt(abs(a)) + b",
    "x * max(a, b) + min(a, b)",
    "x * float(a) + int(b)",
    "x + sum([a, b, 0.5])",
    "x * (a == b) + (a != b)",
    "x * round(a) + b",
    "(x < a) & (x > b)",
    "x + a if a else x - b",
    "np.clip(x, min(a, b), max(a, b))",
    "x * (-a) + (+b)",
    # Statements updating the (copied) input in place; the function returns `x`.
    "do: x += a",
    "do: x[1:] *= a - b",
    "do: np.multiply(x, a, out=x)",
    "do: x[::2] = a",
    "do: x //= a",
)
VALUES = (0, 1, -1, 2, 3, 7, 127, 128, 255, 256, -129, 2**31, 2**63 - 1, -(2**63), 2**64)
VALUES += (0.0, -0.0, 0.5, -2.5, 1e300, -1e-300, math.inf, -math.inf, math.nan, True, False)
# Exponents stay small: a huge power takes forever in Python itself.
EXPONENTS = (0, 1, -1, 2, 3, -2, 0.5, 2.0, -1.0, 1.5, 0.0, -0.0, math.nan, math.inf, True)
DTYPES = ("int8", "uint8", "int32", "int64", "float16", "float32", "float64", "bool", "complex64")


def _outcome(fn: Any, x: np.ndarray, a: Any, b: Any) -> tuple[str, Any]:
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return "value", fn(x.copy(), a, b)
        except Exception as error:
            return "error", type(error)


def _assert_same(got: tuple[str, Any], want: tuple[str, Any], backend: str) -> None:
    assert got[0] == want[0], (got, want)
    if got[0] == "error":
        assert got[1] is want[1]
        return
    g, w = got[1], want[1]
    assert type(g) is type(w)
    if isinstance(w, np.ndarray):
        assert g.dtype == w.dtype and g.shape == w.shape
        if backend == "eager" or w.dtype.kind not in "fc":
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=2e-3, atol=1e-6, equal_nan=True)


@st.composite
def _cases(draw: Any) -> tuple[str, str, bool | None, list[tuple[Any, Any]]]:
    expression = draw(st.sampled_from(EXPRESSIONS))
    pool = EXPONENTS if "**" in expression else VALUES
    pair = st.tuples(st.sampled_from(pool), st.sampled_from(pool))
    calls = draw(st.lists(pair, min_size=2, max_size=6))
    return expression, draw(st.sampled_from(DTYPES)), draw(st.sampled_from([None, True])), calls


def _check(backend: str, case: tuple[str, str, bool | None, list[tuple[Any, Any]]]) -> None:
    expression, dtype, dynamic, calls = case
    namespace: dict[str, Any] = {"np": np, "math": math}
    if expression.startswith("do: "):
        body = f"    {expression[4:]}\n    return x\n"
    else:
        body = f"    return {expression}\n"
    exec(f"def f(x, a, b):\n{body}", namespace)
    fn = namespace["f"]
    numpile.reset()
    compiled = numpile.compile(fn, backend=backend, dynamic=dynamic)
    x = (np.arange(-3, 4) * 1.7).astype(dtype)
    for a, b in calls:
        _assert_same(_outcome(compiled, x, a, b), _outcome(fn, x, a, b), backend)


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_scalar_inputs_behave_as_in_eager(backend: str) -> None:
    skip_unless_chosen(backend)
    run = settings(
        max_examples=examples(150 if backend == "eager" else 30),
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow],
    )(given(_cases())(lambda case: _check(backend, case)))
    run()
