"""Every op with a VJP rule, differentiated in forward mode (its JVP rule or the transposed
VJP rule) against central finite differences, in float64 and float32 (hypothesis)."""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numpile_autograd_aot import get_jvp, jvp_ops, vjp_ops
from numpile_autograd_aot.jvp_graph import build_jvp
from numpile_capture import Graph, Op, allowed_op, get_op, meta_of, run_graph


def _load_cases() -> Any:
    # The op cases of the VJP rule tests (pytest imports test modules by path, not by name).
    path = Path(__file__).with_name("test_autograd_vjp_rules.py")
    spec = importlib.util.spec_from_file_location("_autograd_rule_cases", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_CASES = _load_cases()
ALL_CASES: list[tuple[Op, Any]] = _CASES.ALL_CASES
Make = Any
Shape = tuple[int, ...]
_graph = _CASES._graph
shapes = _CASES.shapes


def _directional(graph: Graph, arrays: list[np.ndarray], tangents: dict[int, np.ndarray]) -> Any:
    step = 1e-6
    plus = [a + step * tangents[i] if i in tangents else a for i, a in enumerate(arrays)]
    minus = [a - step * tangents[i] if i in tangents else a for i, a in enumerate(arrays)]
    (high,) = run_graph(graph, plus)
    (low,) = run_graph(graph, minus)
    return (np.asarray(high) - np.asarray(low)) / (2 * step)


def _check(op: Op, make: Make, seed: int, shape: Shape, dtype: type) -> None:
    rng = np.random.default_rng(seed)
    inputs, params = make(rng, shape)
    graph, diff = _graph(op, inputs, params)
    arrays = [v for v in inputs if isinstance(v, np.ndarray)]
    tangents = {i: rng.normal(size=arrays[i].shape) for i in diff}
    expected = _directional(graph, arrays, tangents)
    if dtype is np.float32:
        arrays = [a.astype(np.float32) if a.dtype == np.float64 else a for a in arrays]
        graph, diff = _graph(op, _with_arrays(inputs, arrays), params)
    tangent_graph = build_jvp(graph, diff)
    feeds = [tangents[i].astype(arrays[i].dtype) for i in tangent_graph.diff_inputs]
    (out,), (tangent,) = run_graph(tangent_graph.graph, [*arrays, *feeds])
    (plain,) = run_graph(graph, arrays)
    assert np.shape(out) == np.shape(plain)
    if tangent is None:
        np.testing.assert_allclose(expected, 0, atol=1e-5)
        return
    assert np.shape(tangent) == np.shape(plain)
    assert np.asarray(tangent).dtype == np.asarray(plain).dtype
    tolerance = 1e-4 if dtype is np.float64 else 2e-3
    scale = 1.0 if dtype is np.float64 else max(1.0, float(np.max(np.abs(expected), initial=0)))
    np.testing.assert_allclose(tangent, expected, rtol=tolerance, atol=tolerance * scale)


def _with_arrays(inputs: list[Any], arrays: list[np.ndarray]) -> list[Any]:
    found = iter(arrays)
    return [next(found) if isinstance(v, np.ndarray) else v for v in inputs]


@pytest.mark.parametrize(("op", "make"), ALL_CASES, ids=[op.name for op, _ in ALL_CASES])
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@settings(max_examples=3, deadline=None, database=None)
@given(seed=st.integers(0, 2**32 - 1), shape=shapes)
def test_jvp_matches_finite_differences(
    op: Op, make: Make, dtype: type, seed: int, shape: Shape
) -> None:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        _check(op, make, seed, shape, dtype)


# Ops the walk above leaves out: zero almost everywhere, creation ops, complex-only ones.
_ZERO = ("sign", "floor", "ceil", "trunc", "rint", "round", "spacing", "heaviside")
_ZERO += ("floor_divide", "nextafter")
_NOT_WALKED = {*_ZERO, "zeros_like", "ones_like", "empty_like", "arange", "imag", "angle"}
# Tuple-valued decompositions: reverse mode only (forward mode raises, see the test below).
_TUPLE_VALUED = {"linalg.eigh", "linalg.svd", "linalg.qr", "linalg.slogdet"}
_NOT_WALKED |= _TUPLE_VALUED
# Tuple-valued with two inputs (a, b): reverse mode only, tested in test_autograd_vjp_rules.
_NOT_WALKED.add("linalg.lstsq")
# Loop ops: reverse mode only (forward mode unrolls loops), tested in test_autograd_loops.
_NOT_WALKED |= {"for_loop", "cond", "getitem_at", "element_at", "carried_scalar"}


@pytest.mark.parametrize("name", sorted(_TUPLE_VALUED))
def test_forward_mode_through_a_tuple_valued_op_raises(name: str) -> None:
    from numpile_capture.numpy_bindings import lookup_function

    graph = Graph()
    a = graph.placeholder("a", meta_of(np.eye(3)))
    binding = lookup_function(getattr(np.linalg, name.split(".")[1]))
    assert binding is not None
    items = binding.apply(graph, a)
    graph.output = (items[-1],)
    with pytest.raises(NotImplementedError, match="tuple-valued op"):
        build_jvp(graph, (0,))


def test_every_op_with_a_vjp_rule_is_walked() -> None:
    walked = {op for op, _ in ALL_CASES}
    assert [op.name for op in vjp_ops() if op not in walked and op.name not in _NOT_WALKED] == []
    assert set(jvp_ops()) <= set(vjp_ops())


@pytest.mark.parametrize("name", _ZERO)
def test_piecewise_constant_ops_have_a_zero_tangent(name: str) -> None:
    graph = Graph()
    x = graph.placeholder("x", meta_of(np.ones(3)))
    inputs = (x, x) if name in {"heaviside", "floor_divide", "nextafter"} else (x,)
    graph.output = (graph.call(get_op(name), *inputs),)
    _, (tangent,) = run_graph(build_jvp(graph, (0,)).graph, [np.full(3, 0.3), np.ones(3)])
    np.testing.assert_array_equal(tangent, np.zeros(3))


def test_direct_rules_cover_the_common_ops() -> None:
    for name in ("sin", "tanh", "exp", "add", "multiply", "divide", "matmul", "sum", "reshape"):
        assert get_jvp(get_op(name)) is not None


def test_an_allowed_function_without_a_rule_is_named() -> None:
    def opaque_double(x: np.ndarray) -> np.ndarray:
        return x * 2

    graph = Graph()
    x = graph.placeholder("x", meta_of(np.ones(2)))
    graph.output = (graph.call(allowed_op(opaque_double), x),)
    with pytest.raises(
        NotImplementedError, match=r"opaque_double.*custom_vjp or numpile\.custom_jvp"
    ):
        build_jvp(graph, (0,))
