"""ndarray subclasses and objects that override NumPy run as NumPy runs them.

numpile models plain ndarrays only: a masked array, an `np.matrix`, a subclass
with `__array_ufunc__` or `__array_finalize__`, or a duck array with
`__array_function__` is guarded on its exact type and used eagerly (every use is
a graph break), so values and result types match eager while plain ndarrays
passed to the same function still compile.
"""

from __future__ import annotations

import logging
import warnings
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


def masked() -> Any:
    return np.ma.masked_array(np.arange(5.0), mask=[0, 0, 1, 0, 0])


def test_masked_array_sum_keeps_the_mask() -> None:
    compiled = numpile.compile(lambda x: x.sum())
    assert compiled(masked()) == masked().sum() == 8.0


def test_masked_array_in_place_add_keeps_masked_data() -> None:
    def f(x: Any) -> Any:
        x += 1
        return np.sum(x * 2)

    mine, theirs = masked(), masked()
    assert numpile.compile(f)(mine) == f(theirs)
    np.testing.assert_array_equal(mine.data, theirs.data)
    np.testing.assert_array_equal(mine.mask, theirs.mask)


def test_matrix_multiplies_as_a_matrix() -> None:
    m = np.matrix([[1.0, 2.0], [3.0, 4.0]])
    out = numpile.compile(lambda x: x * x)(m)
    assert type(out) is np.matrix
    np.testing.assert_array_equal(out, m * m)


class Overriding(np.ndarray):  # type: ignore[type-arg]
    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return "overridden"


class Tagged(np.ndarray):  # type: ignore[type-arg]
    def __array_finalize__(self, obj: Any) -> None:
        self.tag = getattr(obj, "tag", "fresh")


class Duck:
    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        return "duck"


def test_subclass_array_ufunc_is_respected() -> None:
    x = np.arange(3.0).view(Overriding)
    assert numpile.compile(lambda x: x * x)(x) == "overridden"


def test_subclass_comes_back_as_the_subclass() -> None:
    x = np.arange(3.0).view(Tagged)
    x.tag = "mine"
    out = numpile.compile(lambda x: np.sin(x) + 1)(x)
    assert type(out) is Tagged
    assert out.tag == "mine"
    np.testing.assert_array_equal(out.view(np.ndarray), np.sin(np.arange(3.0)) + 1)


def test_array_function_override_is_respected() -> None:
    assert numpile.compile(lambda x: np.sum(x))(Duck()) == "duck"


def test_plain_arrays_still_compile_after_a_subclass(caplog: pytest.LogCaptureFixture) -> None:
    profiler = numpile.CompileProfiler()
    compiled = numpile.compile(lambda x: np.sin(x) + 1, backend=profiler)
    with caplog.at_level(logging.INFO, logger="numpile.perf_hints"):
        compiled(masked())
    assert "ndarray subclass (numpy.ma.MaskedArray)" in caplog.text
    before = profiler.op_count
    out = compiled(np.arange(3.0))
    assert type(out) is np.ndarray
    assert profiler.op_count >= before + 2
    np.testing.assert_array_equal(out, np.sin(np.arange(3.0)) + 1)


@pytest.mark.parametrize("program", ["double", "mean"])
def test_big_endian_inputs_after_native_ones(program: str) -> None:
    def double(x: Any) -> Any:
        return x * 2

    def mean(x: Any) -> Any:
        return x.mean(axis=0)

    fn = double if program == "double" else mean
    compiled = numpile.compile(fn)
    native = np.arange(6.0).reshape(3, 2)
    swapped = native.astype(">f8")
    np.testing.assert_array_equal(compiled(native), fn(native))
    np.testing.assert_array_equal(compiled(swapped), fn(swapped))
    assert compiled(swapped).dtype == fn(swapped).dtype
    np.testing.assert_array_equal(compiled(native), fn(native))


def test_big_endian_input_first() -> None:
    compiled = numpile.compile(lambda x: x.mean(axis=0))
    swapped = np.arange(6.0).reshape(3, 2).astype(">f8")
    np.testing.assert_array_equal(compiled(swapped), swapped.mean(axis=0))


def _broadcast_pair(a: Any, b: Any) -> Any:
    first, second = np.broadcast_arrays(a, b)
    return first, second


def _broadcast_computed(a: Any, b: Any) -> Any:
    first, second = np.broadcast_arrays(a * 2, b + 1)
    return first, second, np.broadcast_to(a, (2, 3))


@pytest.mark.parametrize("backend", ["eager", "inductor"])
@pytest.mark.parametrize("program", [_broadcast_pair, _broadcast_computed])
def test_broadcast_arrays_results_are_writeable_as_numpy_makes_them(
    backend: str, program: Any
) -> None:
    a, b = np.arange(3.0), np.ones((2, 3))
    got = numpile.compile(program, backend=backend)(a, b)
    want = program(a, b)
    with pytest.warns(FutureWarning):  # NumPy 2 warns when the flag is read
        flags = [value.flags.writeable for value in got]
    assert flags == [value.flags.writeable for value in want]
    assert flags[:2] == [True, True]
    for mine, theirs in zip(got, want, strict=True):
        np.testing.assert_array_equal(mine, theirs)
        assert (mine is a) == (theirs is a) and (mine is b) == (theirs is b)


def test_broadcast_arrays_of_one_shape_returns_the_arrays() -> None:
    a, b = np.arange(3.0), np.ones(3)
    got = numpile.compile(lambda a, b: np.broadcast_arrays(a, b))(a, b)
    assert got[0] is a and got[1] is b


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_writing_into_a_broadcast_arrays_view_matches_numpy(backend: str) -> None:
    def write(a: Any, b: Any) -> Any:
        first, _ = np.broadcast_arrays(a, b)
        first[0, 1] = 5.0
        first += 1
        return a * 1, first + 0

    mine, theirs = np.arange(3.0), np.arange(3.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = numpile.compile(write, backend=backend)(mine, np.ones((2, 3)))
        want = write(theirs, np.ones((2, 3)))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(mine, theirs)
