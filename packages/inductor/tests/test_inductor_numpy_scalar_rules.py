"""NumPy's scalar-constructor rules (codegen/numpy_scalar_rules.py) against NumPy itself.

For every (Python type, target dtype) of `SCALAR_RULES` and drawn values, the rule's check
fails exactly where NumPy's constructor raises or warns, and where it passes, the value
converted as the rule says (through its `through` dtype) is NumPy's, bit for bit.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numpile_inductor.codegen.numpy_scalar_rules import (
    SCALAR_RULES,
    Check,
    ScalarRule,
    int_range_bounds,
    truncation_bounds,
)

_VALUES: dict[type, st.SearchStrategy[Any]] = {
    bool: st.booleans(),
    int: st.integers(-(2**63), 2**63 - 1)
    # 2**60 + 2**36 + 1: float32 of its nearest float64 (a tie) is not its own nearest float32
    | st.sampled_from([-(2**63), -129, -128, -1, 0, 255, 256, 2**32, 2**60 + 2**36 + 1]),
    float: st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from([-129.0, -128.9, -1.0, -0.9, 255.9, 256.0, 2.0**63, -(2.0**63), 3.5e38]),
}


def _numpy(python: type, target: np.dtype[Any], value: Any) -> Any:
    # NumPy's constructor, or None where it raises or warns.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            return target.type(value)
        except (OverflowError, ValueError, RuntimeWarning):
            return None


def _fails(rule: ScalarRule, target: np.dtype[Any], value: Any) -> bool:
    # The rule's check, evaluated in Python on an int64, float64 or bool value.
    if rule.check is Check.INT_RANGE:
        return int_range_bounds(target, value, value) != (None, None)
    if rule.check is Check.TRUNCATED_RANGE:
        bounds = truncation_bounds(target)
        above = value >= bounds.above if bounds.inclusive else value > bounds.above
        return not (above and value < bounds.below)
    if rule.check is Check.FLOAT32_OVERFLOW:
        with np.errstate(over="ignore"):
            rounded = np.float64(value).astype(np.float32)
        return bool(np.isfinite(value) and not np.isfinite(rounded))
    return False


@pytest.mark.parametrize(("python", "name"), list(SCALAR_RULES))
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_each_rule_checks_and_converts_as_numpy(python: type, name: str, data: Any) -> None:
    target = np.dtype(name)
    rule = SCALAR_RULES[(python, name)]
    value = data.draw(_VALUES[python])
    want = _numpy(python, target, value)
    assert _fails(rule, target, value) == (want is None), (python, name, value)
    if want is None:
        return
    held = np.asarray(value, dtype={bool: np.bool_, int: np.int64, float: np.float64}[python])
    if rule.through is not None:
        held = held.astype(rule.through)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NaN to complex and the like: NumPy's own casts
        got = held.astype(target)[()]
    assert type(got) is type(want)
    np.testing.assert_array_equal(got, want, strict=True)
