"""Result dtypes of the meta rules against NumPy itself, over every pair of dtypes.

Each check runs the real NumPy function on tiny arrays (or weak Python
scalars) and compares the meta rule's dtype; when NumPy raises, the meta
rule must raise the same exception type.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

from numpile_capture import ArrayMeta, ScalarMeta, get_op

DTYPES = [
    np.dtype(name)
    for name in (
        "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float16", "float32", "float64", "complex64", "complex128",
    )
]  # fmt: skip
WEAK = [True, 3, 2.5, 1.5j]

BINARY = [
    "add", "subtract", "multiply", "divide", "floor_divide", "power", "maximum",
    "arctan2", "bitwise_and", "equal", "logical_and", "remainder", "left_shift",
    "hypot", "copysign", "fmax", "not_equal", "less",
]  # fmt: skip


def _outcome(function: Any, *args: Any, **kwargs: Any) -> tuple[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            try:
                result = function(*args, **kwargs)
                return "ok", result if isinstance(result, np.dtype) else np.asarray(result).dtype
            except Exception as exc:  # any NumPy error is an outcome to compare
                return "raises", type(exc)


def _concrete(value: Any) -> Any:
    return np.ones(2, dtype=value) if isinstance(value, np.dtype) else value


def _meta_input(value: Any, symbolic: bool) -> Any:
    if isinstance(value, np.dtype):
        return ArrayMeta((2,), value)
    return ScalarMeta(type(value)) if symbolic else value


def _meta_dtype(name: str, *inputs: Any, **params: Any) -> np.dtype[Any]:
    meta = get_op(name).meta(*inputs, **params)
    assert isinstance(meta, ArrayMeta)
    return meta.dtype


def _compare(name: str, operands: tuple[Any, ...], symbolic: bool) -> str | None:
    ufunc = getattr(np, name)
    expected = _outcome(ufunc, *(_concrete(v) for v in operands))
    got = _outcome(_meta_dtype, name, *(_meta_input(v, symbolic) for v in operands))
    both_raise = expected[0] == "raises" and got[0] == "raises"
    if both_raise and (
        symbolic or issubclass(got[1], expected[1]) or issubclass(expected[1], got[1])
    ):
        return None
    if expected == got:
        return None
    return (
        f"{name}{tuple(str(v) for v in operands)} symbolic={symbolic}: numpy {expected}, meta {got}"
    )


@pytest.mark.parametrize("name", BINARY)
def test_binary_ufunc_dtypes_match_numpy_on_every_pair(name: str) -> None:
    values: list[Any] = [*DTYPES, *WEAK]
    failures = []
    for lhs in values:
        for rhs in values:
            if not isinstance(lhs, np.dtype) and not isinstance(rhs, np.dtype):
                continue
            for symbolic in (False, True):
                failure = _compare(name, (lhs, rhs), symbolic)
                if failure is not None:
                    failures.append(failure)
    assert not failures, "\n".join(failures[:20])


def test_weak_python_int_out_of_bounds_raises_overflow_like_numpy() -> None:
    with pytest.raises(OverflowError):
        np.add(np.ones(2, np.int8), 300)
    with pytest.raises(OverflowError):
        get_op("add").meta(ArrayMeta((2,), "int8"), 300)
    assert get_op("add").meta(ArrayMeta((2,), "int16"), 300).dtype == np.int16


def test_numpy_scalars_are_strong() -> None:
    meta = get_op("multiply").meta(ArrayMeta((2,), "float32"), np.float64(2.0))
    assert meta.dtype == np.float64
    assert get_op("multiply").meta(ArrayMeta((2,), "float32"), 2.0).dtype == np.float32


def _unary_names() -> list[str]:
    from numpile_capture.ops.pointwise import UFUNC_NAMES

    return [name for name in UFUNC_NAMES if getattr(np, name).nin == 1]


@pytest.mark.parametrize("name", _unary_names())
def test_unary_ufunc_dtypes_match_numpy_on_every_dtype(name: str) -> None:
    failures = []
    for value in [*DTYPES, *WEAK]:
        failure = _compare(name, (value,), False)
        if failure is not None:
            failures.append(failure)
    assert not failures, "\n".join(failures)


REDUCTION_DTYPES: list[Any] = [None, np.dtype("int32"), np.dtype("float32"), np.dtype("complex128")]


@pytest.mark.parametrize(
    "name",
    [
        "sum",
        "prod",
        "max",
        "min",
        "argmax",
        "any",
        "all",
        "mean",
        "var",
        "std",
        "nansum",
        "nanmean",
    ],
)
def test_reduction_dtypes_match_numpy(name: str) -> None:
    function = getattr(np, name)
    takes_dtype = name in ("sum", "prod", "mean", "var", "std", "nansum", "nanmean")
    failures = []
    for dtype in DTYPES:
        data = np.ones((2, 3), dtype=dtype)
        meta = ArrayMeta((2, 3), dtype)
        for out_dtype in REDUCTION_DTYPES if takes_dtype else [None]:
            kwargs = {} if out_dtype is None else {"dtype": out_dtype}
            for axis in (None, 1):
                expected = _outcome(function, data, axis=axis, **kwargs)
                meta_axis = axis if axis is None or name.startswith("arg") else (axis,)
                got = _outcome(_meta_dtype, name, meta, axis=meta_axis, **kwargs)
                if expected != got and not (expected[0] == got[0] == "raises"):
                    failures.append(
                        f"{name}({dtype}, axis={axis}, dtype={out_dtype}): "
                        f"numpy {expected}, meta {got}"
                    )
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_scan_dtypes_match_numpy(name: str) -> None:
    failures = []
    for dtype in DTYPES:
        data = np.ones((2, 3), dtype=dtype)
        for out_dtype in REDUCTION_DTYPES:
            kwargs = {} if out_dtype is None else {"dtype": out_dtype}
            expected = _outcome(getattr(np, name), data, axis=0, **kwargs)
            got = _outcome(_meta_dtype, name, ArrayMeta((2, 3), dtype), axis=0, **kwargs)
            if expected != got:
                failures.append(f"{name}({dtype}, dtype={out_dtype}): numpy {expected}, meta {got}")
    assert not failures, "\n".join(failures)


def test_inplace_ufunc_raises_numpys_casting_error() -> None:
    target = np.zeros(3, np.int64)
    with pytest.raises(TypeError) as numpy_error:
        target += 1.5
    with pytest.raises(type(numpy_error.value)) as meta_error:
        get_op("add_").meta(ArrayMeta((3,), "int64"), 1.5)
    assert type(meta_error.value) is type(numpy_error.value)
    assert str(meta_error.value) == str(numpy_error.value)


@pytest.mark.parametrize("target", DTYPES)
@pytest.mark.parametrize("value", [*DTYPES, *WEAK])
def test_inplace_add_dtype_rules_match_numpy(target: np.dtype[Any], value: Any) -> None:
    def run_numpy() -> Any:
        array = np.ones(2, dtype=target)
        array += _concrete(value)
        return array

    expected = _outcome(run_numpy)
    got = _outcome(_meta_dtype, "add_", ArrayMeta((2,), target), _meta_input(value, False))
    assert expected[0] == got[0], (target, value, expected, got)
    if expected[0] == "raises":
        assert issubclass(got[1], expected[1]) or issubclass(expected[1], got[1])
    else:
        assert got == expected
