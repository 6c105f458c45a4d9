"""Extern forms (`codegen/c/extern_forms.py`): `np.zeros_like` and int `n - 1` around kept
loops run as C in the wrapper, with eager's values, dtypes, memory order and Python ints, and
fall back to the extern (Python) where C does not handle the operands."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from numpile_capture import Graph, ScalarMeta, compile_function, get_op, reset, run_graph
from numpile_inductor import compile_graph
from numpile_inductor.codegen.c.buffer_pool import MIN_POOLED_BYTES


def _first_column_doubled(A: Any) -> Any:
    y = np.zeros_like(A)
    for i in range(A.shape[0]):
        y[i, 0] = A[i, 0] * 2.0
    return y


def test_zeros_like_runs_as_c_in_the_input_memory_order(python_calls: Any) -> None:
    compiled = compile_function(_first_column_doubled, backend="inductor", dynamic=True)
    rng = np.random.default_rng(0)
    inputs = [
        rng.standard_normal((5, 3)),
        np.asfortranarray(rng.standard_normal((4, 6))),
        rng.standard_normal((6, 8))[::2, 1::3],
        rng.standard_normal((MIN_POOLED_BYTES // 8, 2)),
    ]
    for A in inputs:
        compiled(A)  # compiles
        got, called = python_calls(compiled, A)
        want = _first_column_doubled(A)
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype and got.strides == want.strides
        assert got.flags.owndata and got.base is None
        assert "zeros_like" not in called, called


def _reverse_total(x: Any) -> Any:
    n = x.shape[0]
    total = 0.0
    for i in range(n - 1, -1, -1):  # `n - 1`: a py_binary on the dim's Python int
        total = total + x[i]
    return total


def test_python_int_arithmetic_before_a_loop_is_c(python_calls: Any) -> None:
    compiled = compile_function(_reverse_total, backend="inductor", dynamic=True)
    for n in (8, 3, 1, 5):
        x = np.arange(1.0, n + 1.0)
        compiled(x)
        got, called = python_calls(compiled, x)
        want = _reverse_total(x)
        assert got == want and type(got) is type(want)
        assert "_py_binary_impl" not in called, called


@pytest.mark.parametrize("operator", ["add", "sub", "mul"])
def test_python_ints_beyond_int64_fall_back_to_python(operator: str) -> None:
    graph = Graph()
    a = graph.placeholder("a", ScalarMeta(int))
    b = graph.placeholder("b", ScalarMeta(int))
    graph.output = graph.call(get_op("py_binary"), a, b, operator=operator)
    compiled = compile_graph(graph)
    assert f"__builtin_{operator}_overflow(x0, x1, &r)" in compiled.source
    # Graph inputs are int64s; results beyond it are Python's (the extern's).
    cases = [(3, 4), (-7, 2), (2**62, 2**62), (-(2**63), 1), (2**63 - 1, -1), (-(2**63), -1),
             (2**40, 2**40), (True, 2)]  # fmt: skip
    for left, right in cases:
        want = run_graph(graph, [left, right])
        got = compiled.fn(left, right)
        assert got == want and type(got) is type(want), (left, right)


def _bits_then(op: str, constant: Any) -> Any:
    def fn(data: Any) -> Any:
        c = data.dtype.type(0) | constant  # a NumPy scalar of the data's type
        for i in range(data.shape[0]):
            c = c ^ data[i]
        if op == "xor":
            return c ^ constant
        if op == "and":
            return c & constant
        if op == "or":
            return constant | c
        if op == "lshift":
            return c << constant
        return c >> constant

    return fn


@pytest.mark.parametrize(
    ("op", "constant"),
    [
        ("xor", np.uint32(0xFFFFFFFF)),
        ("and", np.uint8(0x0F)),
        ("or", np.int16(-32768)),
        ("lshift", np.uint64(63)),
        ("rshift", np.int8(3)),
        ("rshift", np.uint32(40)),  # past the width: 0, as NumPy gives
        ("lshift", np.int64(70)),
    ],
)
@pytest.mark.parametrize("dynamic", [True, False])
def test_bitwise_ops_of_a_loop_result_and_a_constant_are_c(
    op: str, constant: Any, dynamic: bool, python_calls: Any
) -> None:
    reset()  # every case's `fn` shares one code object: no recompile limit across cases
    fn = _bits_then(op, constant)
    # dynamic=True makes the NumPy scalar a 0-d input (two scalars of one type meet in C);
    # dynamic=False keeps it a constant of the graph (a scalar and a literal).
    compiled = compile_function(fn, backend="inductor", dynamic=dynamic)
    info = np.iinfo(constant.dtype)
    rng = np.random.default_rng(5)
    for data in (
        np.full(7, info.max, dtype=constant.dtype),
        np.array([info.min, -1 if info.min else 1, info.max], dtype=constant.dtype),
        rng.integers(-128 if info.min else 0, 256, 9).astype(constant.dtype),
    ):
        compiled(data)
        got, called = python_calls(compiled, data)
        want = fn(data)
        assert got == want and type(got) is type(want)
        assert "<numpile graph op>" not in called, called  # the extern's frame at the line


def test_a_loop_result_of_another_type_falls_back_to_the_ufunc(python_calls: Any) -> None:
    # An int64 loop result with a uint8 constant: not the constant's type, so NumPy runs it.
    fn = _bits_then("xor", np.uint8(3))
    compiled = compile_function(fn, backend="inductor", dynamic=True)
    for data in (np.arange(4, dtype=np.int64), np.arange(3, dtype=np.int64) - 7):
        compiled(data)
        got, called = python_calls(compiled, data)
        want = fn(data)
        assert got == want and type(got) is type(want)
        assert "<numpile graph op>" in called, called


def _allocations(x: Any) -> Any:
    n = x.shape[0]
    counts = np.zeros(n, dtype=np.int64)
    rows = np.zeros((n, 3), dtype=np.float32)
    scratch = np.empty((2, n))
    for i in range(n):
        counts[i] = i * 2
        rows[i, 1] = x[i]
        scratch[0, i] = x[i]
        scratch[1, i] = -x[i]
    return counts, rows, scratch


def test_allocations_of_symbolic_sizes_are_c(python_calls: Any) -> None:
    compiled = compile_function(_allocations, backend="inductor", dynamic=True)
    for n in (4, 7, 0, 3):
        x = np.arange(float(n))
        compiled(x)
        got, called = python_calls(compiled, x)
        want = _allocations(x)
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype and g.shape == w.shape and g.flags.c_contiguous
            np.testing.assert_array_equal(g, w)
        assert "<numpile graph op>" not in called, called


def test_a_negative_symbolic_size_falls_back_to_numpys_error() -> None:
    def fn(x: Any) -> Any:
        return np.zeros(x.shape[0] - 4) + 1.0

    compiled = compile_function(fn, backend="inductor", dynamic=True)
    for n in (6, 9):
        np.testing.assert_array_equal(compiled(np.ones(n)), fn(np.ones(n)))
    with pytest.raises(ValueError, match="negative dimensions are not allowed"):
        compiled(np.ones(2))
