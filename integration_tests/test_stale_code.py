"""Code and defaults changed between calls are seen: nothing stale keeps running.

IPython's autoreload replaces a function's `__code__` in place; users mutate
`__kwdefaults__` dicts and list defaults in place. Each compiled call must run
what eager would run now.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import numpile


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    numpile.reset()
    yield
    numpile.reset()


def helper(x: Any) -> Any:
    return x + 1


def other_helper(x: Any) -> Any:
    return x + 100


def calls_helper(x: Any) -> Any:
    return helper(x) * 2


def test_inlined_callee_code_replaced_in_place() -> None:
    original = helper.__code__
    compiled = numpile.compile(calls_helper)
    x = np.ones(3)
    try:
        np.testing.assert_array_equal(compiled(x), (x + 1) * 2)
        helper.__code__ = other_helper.__code__
        np.testing.assert_array_equal(compiled(x), (x + 100) * 2)
    finally:
        helper.__code__ = original


def test_kwdefaults_mutated_in_place() -> None:
    def scaled(x: Any, *, s: float = 3.0) -> Any:
        return x * s

    compiled = numpile.compile(scaled)
    x = np.ones(3)
    np.testing.assert_array_equal(compiled(x), x * 3.0)
    assert scaled.__kwdefaults__ is not None
    scaled.__kwdefaults__["s"] = 6.0
    np.testing.assert_array_equal(compiled(x), x * 6.0)
    np.testing.assert_array_equal(compiled(x, s=2.0), x * 2.0)


def test_callee_kwdefaults_and_list_default_mutated_in_place() -> None:
    def inner(x: Any, scale: list[float] = [2.0], *, shift: float = 0.0) -> Any:  # noqa: B006
        return x * scale[0] + shift

    compiled = numpile.compile(lambda x: inner(x))
    x = np.ones(3)
    np.testing.assert_array_equal(compiled(x), x * 2.0)
    assert inner.__defaults__ is not None and inner.__kwdefaults__ is not None
    inner.__defaults__[0][0] = 7.0
    np.testing.assert_array_equal(compiled(x), x * 7.0)
    inner.__kwdefaults__["shift"] = 1.0
    np.testing.assert_array_equal(compiled(x), x * 7.0 + 1.0)
