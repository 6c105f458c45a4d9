"""`math` functions of run-time 0-d values (builtin_calls, ops/math_calls): `math.sqrt(x[i])`
in a loop is a `math_call` node (the loop stays kept); the eager backend runs the graph,
calling `math` itself, so values, Python types and errors are CPython's.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from numpile_capture import ArrayMeta, ScalarMeta, compile_function, explain, get_op
from numpile_capture.testing import assert_same_as_eager as _same

pytestmark = pytest.mark.usefixtures("fresh_dispatch")


def mixed(x: Any) -> Any:
    s = 0.0
    k = 0
    flags = 0
    for i in range(x.shape[0]):
        s += math.sqrt(abs(x[i])) + math.exp(-x[i] * x[i]) + math.copysign(1.0, x[i])
        k += math.floor(x[i] * 3) + math.ceil(i / 2)
        flags += math.isnan(x[i]) + math.isinf(x[i]) + math.isfinite(x[i])
    return s, k, flags


def roots(x: Any) -> Any:
    for i in range(x.shape[0]):
        x[i] = math.sqrt(x[i])
    return x


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_math_calls_keep_the_loop_and_give_cpythons_values(dtype: str) -> None:
    out = explain(mixed)(np.linspace(-2, 2, 7))
    assert out.loops_not_kept == () and out.graph_break_count == 0
    assert "math_call(" in str(out.graphs[0])
    compiled = compile_function(mixed, backend="eager", dynamic=True)
    for n in (0, 1, 2, 9):
        x = (np.random.default_rng(n).standard_normal(n) * 3).astype(dtype)
        _same(compiled(x.copy()), mixed(x.copy()))


def test_domain_error_is_cpythons_after_the_earlier_writes() -> None:
    assert explain(roots)(np.ones(3)).loops_not_kept == ()
    compiled = compile_function(roots, backend="eager", dynamic=True)
    x = np.array([4.0, 9.0, -1.0, 16.0])
    mine, eager = x.copy(), x.copy()
    with pytest.raises(ValueError, match="math domain error"):
        roots(eager)
    with pytest.raises(ValueError, match="math domain error"):
        compiled(mine)
    np.testing.assert_array_equal(mine, eager)


def test_math_call_meta_and_impl() -> None:
    op = get_op("math_call")
    assert op.meta(ArrayMeta((), "float32"), function="sqrt") == ScalarMeta(float)
    assert op.meta(ScalarMeta(int), function="floor") == ScalarMeta(int)
    assert op.meta(ArrayMeta((), "int8"), function="isnan") == ScalarMeta(bool)
    assert op.meta(ArrayMeta((), "int8"), -1.0, function="copysign") == ScalarMeta(float)
    got = op.impl(np.float32(2.0), function="sqrt")
    assert type(got) is float and got == math.sqrt(2.0)
    with pytest.raises(ValueError, match="real 0-d"):
        op.meta(ArrayMeta((3,), "float64"), function="sqrt")
    with pytest.raises(ValueError, match="real 0-d"):
        op.meta(ArrayMeta((), "complex128"), function="sqrt")
    with pytest.raises(ValueError, match="no function"):
        op.meta(ArrayMeta((), "float64"), function="hypot")
