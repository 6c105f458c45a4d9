"""vmap: every op with a VJP rule batched against a loop over examples (float64 and float32),
per-example gradients of an MLP as one graph, and the composition table vmap x grad x jvp x
compile."""

from __future__ import annotations

import importlib.util
import logging
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numpile_autograd_aot import batch_rule_ops, get_batch_rule, grad, jacfwd, jvp, vjp_ops, vmap
from numpile_autograd_aot.batching_table import batch_nodes
from numpile_capture import ArrayMeta, Graph, Op, compile_function, explain, get_op, run_graph


def _load_cases() -> Any:
    # The op cases of the VJP rule tests (pytest imports test modules by path, not by name).
    path = Path(__file__).with_name("test_autograd_vjp_rules.py")
    spec = importlib.util.spec_from_file_location("_autograd_batch_cases", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_CASES = _load_cases()
ALL_CASES: list[tuple[Op, Any]] = _CASES.ALL_CASES
BATCH = 3


def _batched_graph(graph: Graph, batched_inputs: set[int]) -> Graph:
    # The graph of one example rewritten for a batch of BATCH (batched inputs first axis).
    result = Graph()
    mapping: dict[Any, Any] = {}
    examples: dict[Any, Any] = {}
    placeholders = graph.placeholders
    for index, node in enumerate(placeholders):
        meta = node.meta
        assert isinstance(meta, ArrayMeta)
        if index in batched_inputs:
            full = result.placeholder(node.name, ArrayMeta((BATCH, *meta.shape), meta.dtype))
            example = result.call(get_op("getitem"), full, index=(0,))
            mapping[node] = example
            examples[example] = full
        else:
            mapping[node] = result.placeholder(node.name, meta)
    start = len(result.nodes)
    for node in graph.nodes:
        if node.op is not None:
            inputs = tuple(mapping.get(v, v) if hasattr(v, "op") else v for v in node.inputs)
            mapping[node] = result.add_node(node.op, inputs, node.kwargs, node.meta)
    region = list(result.nodes[start:])
    values, carried = batch_nodes(result, region, examples, BATCH)
    (leaf,) = graph.output
    new = values[mapping[leaf]]
    if mapping[leaf] not in carried:
        new = result.call(get_op("broadcast_to"), new, shape=(BATCH, *new.meta.shape))
    result.output = (new,)
    return result


def _check(op: Op, make: Any, seed: int, shape: tuple[int, ...], dtype: type) -> None:
    rng = np.random.default_rng(seed)
    inputs, params = make(rng, shape)
    inputs = [
        v.astype(dtype) if isinstance(v, np.ndarray) and v.dtype == np.float64 else v
        for v in inputs
    ]
    graph, _ = _CASES._graph(op, inputs, params)
    arrays = [v for v in inputs if isinstance(v, np.ndarray)]
    batched = {i for i, a in enumerate(arrays) if a.dtype.kind == "f"}
    scales = np.array([1.0, 0.9, 1.1], dtype)
    stacks = [
        np.stack([a * s for s in scales]) if i in batched else a for i, a in enumerate(arrays)
    ]
    (got,) = run_graph(_batched_graph(graph, batched), stacks)
    for example in range(BATCH):
        feeds = [s[example] if i in batched else s for i, s in enumerate(stacks)]
        (want,) = run_graph(graph, feeds)
        np.testing.assert_allclose(got[example], want, rtol=1e-5, atol=1e-6)
        assert np.asarray(got).dtype == np.asarray(want).dtype


@pytest.mark.parametrize(("op", "make"), ALL_CASES, ids=[op.name for op, _ in ALL_CASES])
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@settings(max_examples=2, deadline=None, database=None)
@given(seed=st.integers(0, 2**32 - 1), shape=_CASES.shapes)
def test_batched_op_matches_a_loop_over_examples(
    op: Op, make: Any, dtype: type, seed: int, shape: tuple[int, ...]
) -> None:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        _check(op, make, seed, shape, dtype)


def test_rules_cover_the_pointwise_reduction_and_view_families() -> None:
    walked = {op for op, _ in ALL_CASES}
    with_rule = [op.name for op in vjp_ops() if op in walked and get_batch_rule(op) is not None]
    assert {"sin", "add", "where", "sum", "cumsum", "reshape", "matmul", "concatenate"} <= set(
        with_rule
    )
    assert len(batch_rule_ops()) > 100


# --- transforms ---------------------------------------------------------------------------


def _loss(params: dict[str, Any], x: np.ndarray, y: np.ndarray) -> Any:
    hidden = np.tanh(x @ params["w1"] + params["b1"])
    return np.mean((hidden @ params["w2"] + params["b2"] - y) ** 2)


@pytest.fixture
def mlp() -> tuple[dict[str, Any], np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    params = {
        "w1": rng.normal(size=(3, 8)),
        "b1": rng.normal(size=8),
        "w2": rng.normal(size=(8, 1)),
        "b2": np.zeros(1),
    }
    return params, rng.normal(size=(16, 3)), rng.normal(size=(16, 1))


def test_per_example_gradients_are_one_graph_without_loops(
    mlp: Any, caplog: pytest.LogCaptureFixture
) -> None:
    params, x, y = mlp
    per_example = vmap(grad(_loss), in_axes=(None, 0, 0))
    with caplog.at_level(logging.DEBUG, logger="numpile.capture.graph_breaks"):
        got = per_example(params, x, y)
    # compiled from vmap's own module, the loss's globals are still read (no eager loop)
    assert not [r for r in caplog.records if "graph break" in r.getMessage()]
    for i in range(len(x)):
        want = grad(_loss)(params, x[i], y[i])
        for key in params:
            np.testing.assert_allclose(got[key][i], want[key], rtol=1e-10, atol=1e-12)
    explained = explain(lambda p, a, b: per_example(p, a, b))(params, x, y)
    assert explained.graph_count == 1
    assert explained.graph_break_count == 0
    names = [node.op.name for node in explained.graphs[0].nodes if node.op is not None]
    assert "concatenate" not in names  # no example was unrolled
    assert names.count("tanh") == 1  # one batched forward, no example forward left over


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compile_of_vmap_matches_eager(dtype: type) -> None:
    def fn(row: np.ndarray, w: np.ndarray) -> Any:
        return np.cumsum(np.sin(row @ w)) / np.sum(row**2)

    rng = np.random.default_rng(2)
    x, w = rng.normal(size=(5, 3)).astype(dtype), rng.normal(size=(3, 4)).astype(dtype)
    eager = np.stack([fn(row, w) for row in x])
    tolerance = 1e-5 if dtype is np.float32 else 1e-12
    np.testing.assert_allclose(vmap(fn, (0, None))(x, w), eager, rtol=tolerance)
    np.testing.assert_allclose(compile_function(vmap(fn, (0, None)))(x, w), eager, rtol=tolerance)


def test_in_axes_and_out_axes() -> None:
    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_allclose(vmap(lambda c: c * 2, in_axes=1, out_axes=1)(x), x * 2)
    np.testing.assert_allclose(vmap(lambda c: np.sum(c), in_axes=1)(x), x.sum(axis=0))
    np.testing.assert_allclose(vmap(lambda r, s: r * s, in_axes=(0, None))(x, 2.0), x * 2)


def _per_leaf(p: dict[str, Any], pair: tuple[Any, Any]) -> Any:
    return np.tanh(p["w"] @ pair[0]) * p["b"] + pair[1]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nested_in_axes_per_leaf_match_a_loop_over_examples(dtype: Any) -> None:
    rng = np.random.default_rng(6)
    p = {"w": rng.normal(size=(5, 3, 2)).astype(dtype), "b": rng.normal(size=3).astype(dtype)}
    pair = (rng.normal(size=(2, 5)).astype(dtype), rng.normal(size=3).astype(dtype))
    in_axes = ({"w": 0, "b": None}, (1, None))
    want = np.stack(
        [_per_leaf({"w": p["w"][i], "b": p["b"]}, (pair[0][:, i], pair[1])) for i in range(5)]
    )
    tolerance = 1e-5 if dtype is np.float32 else 1e-12
    batched = vmap(_per_leaf, in_axes=in_axes)
    got = batched(p, pair)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=tolerance)
    np.testing.assert_allclose(compile_function(batched)(p, pair), want, rtol=tolerance)
    explained = explain(lambda q, r: batched(q, r))(p, pair)
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)
    names = [node.op.name for node in explained.graphs[0].nodes if node.op is not None]
    assert "concatenate" not in names  # batched by the rules, no example unrolled


def _scaled(row: Any, v: Any) -> Any:
    return {"scaled": (row * v, np.sum(row)), "norm": np.sum(v * v)}


def test_out_axes_per_output_and_none_for_an_unbatched_output() -> None:
    rng = np.random.default_rng(7)
    x, w = rng.normal(size=(4, 3)), rng.normal(size=3)
    out_axes = {"scaled": (1, 0), "norm": None}
    got = vmap(_scaled, in_axes=(0, None), out_axes=out_axes)(x, w)
    np.testing.assert_allclose(got["scaled"][0], (x * w).T, rtol=1e-12)
    np.testing.assert_allclose(got["scaled"][1], x.sum(axis=1), rtol=1e-12)
    assert np.shape(got["norm"]) == ()
    np.testing.assert_allclose(got["norm"], np.sum(w * w), rtol=1e-12)


def test_out_axes_none_for_a_batched_output_is_an_error() -> None:
    with pytest.raises(ValueError, match="out_axes is None for an output that depends"):
        vmap(lambda r: (r * 2, np.sum(r)), out_axes=(0, None))(np.arange(6.0).reshape(3, 2))


def test_axes_that_do_not_match_the_argument_are_an_error() -> None:
    p = {"w": np.ones((2, 3)), "b": np.ones(3)}
    with pytest.raises(ValueError, match="do not match the structure"):
        vmap(lambda q: q["w"] * q["b"], in_axes=({"w": 0},))(p)
    with pytest.raises(ValueError, match="do not match the structure"):
        vmap(lambda q: q["w"] * q["b"], in_axes=((0, None),))(p)


def _jacobian_scaled(p: dict[str, Any], x: Any) -> Any:
    return jacfwd(lambda v: np.sin(v) * p["s"])(x) + p["t"], p["t"]


def test_nested_in_axes_and_out_axes_around_a_jacobian() -> None:
    rng = np.random.default_rng(8)
    p = {"s": rng.normal(size=4), "t": rng.normal(size=(2, 2))}
    x = rng.normal(size=(2, 4))
    jacobians, t = vmap(_jacobian_scaled, in_axes=({"s": 0, "t": None}, 1), out_axes=(2, None))(
        p, x
    )
    want = np.stack(
        [_jacobian_scaled({"s": p["s"][i], "t": p["t"]}, x[:, i])[0] for i in range(4)], axis=2
    )
    np.testing.assert_allclose(jacobians, want, rtol=1e-12)
    np.testing.assert_array_equal(t, p["t"])


def test_vmap_of_vmap() -> None:
    a = np.random.default_rng(3).normal(size=(3, 4, 2))
    got = vmap(vmap(lambda v: np.sum(v * np.sin(v))))(a)
    np.testing.assert_allclose(got, np.sum(a * np.sin(a), axis=-1))


def test_grad_and_jvp_of_vmap() -> None:
    x = np.random.default_rng(4).normal(size=(4, 3))
    batched = vmap(lambda row: np.sum(np.tanh(row) ** 2))
    np.testing.assert_allclose(
        grad(lambda v: np.sum(batched(v)))(x), 2 * np.tanh(x) * (1 - np.tanh(x) ** 2)
    )
    _, tangent = jvp(batched, (x,), (np.ones_like(x),))
    np.testing.assert_allclose(tangent, np.sum(2 * np.tanh(x) * (1 - np.tanh(x) ** 2), axis=1))


def test_vmap_of_jacfwd() -> None:
    # jacfwd's rule joins vmap's graph (test_autograd_forward_in_graph checks it is one).
    x = np.random.default_rng(5).normal(size=(3, 2))
    got = vmap(jacfwd(lambda v: np.sin(v) * v[0]))(x)
    for i, row in enumerate(x):
        np.testing.assert_allclose(got[i], jacfwd(lambda v: np.sin(v) * v[0])(row))


def test_vmap_inside_a_compiled_training_step(mlp: Any) -> None:
    params, x, y = mlp

    @compile_function
    def clipped_step(p: dict[str, Any], a: np.ndarray, b: np.ndarray) -> Any:
        grads = vmap(grad(_loss), in_axes=(None, 0, 0))(p, a, b)
        return {k: p[k] - 0.1 * np.mean(np.clip(grads[k], -1, 1), axis=0) for k in p}

    report = explain(clipped_step)(params, x, y)
    assert report.graph_count == 1 and report.graph_break_count == 0, report.break_reasons
    new = clipped_step(params, x, y)
    for key in params:
        per = np.stack([grad(_loss)(params, x[i], y[i])[key] for i in range(len(x))])
        want = params[key] - 0.1 * np.mean(np.clip(per, -1, 1), axis=0)
        np.testing.assert_allclose(new[key], want, rtol=1e-10)


def test_mismatched_batch_sizes_are_an_error() -> None:
    with pytest.raises(ValueError, match="different sizes"):
        vmap(lambda a, b: a + b)(np.ones((2, 3)), np.ones((3, 3)))


def _affine(p: dict[str, Any], x: np.ndarray) -> Any:
    return {"y": np.tanh(p["w"] @ x + p["b"]), "norm": np.sum(x**2)}


def _affine_loop(params: dict[str, Any], xs: np.ndarray) -> dict[str, Any]:
    rows = [_affine({"w": params["w"], "b": params["b"][i]}, xs[:, i]) for i in range(4)]
    return {
        "y": np.stack([r["y"] for r in rows], axis=1),
        "norm": np.stack([r["norm"] for r in rows]),
    }


@pytest.mark.parametrize("compiled", [False, True])
def test_in_axes_and_out_axes_as_tree_prefixes(compiled: bool) -> None:
    rng = np.random.default_rng(7)
    params = {"w": rng.normal(size=(2, 3)), "b": rng.normal(size=(4, 2))}
    xs = rng.normal(size=(3, 4))  # batched along axis 1
    batched = vmap(_affine, in_axes=({"w": None, "b": 0}, 1), out_axes={"y": 1, "norm": 0})
    want = _affine_loop(params, xs)
    run = compile_function(lambda p, x: batched(p, x)) if compiled else batched
    got = run(params, xs)
    assert set(got) == {"y", "norm"} and got["y"].shape == (2, 4)
    np.testing.assert_allclose(got["y"], want["y"], rtol=1e-12)
    np.testing.assert_allclose(got["norm"], want["norm"], rtol=1e-12)


def test_out_axes_none_keeps_an_unbatched_output() -> None:
    x = np.arange(6.0).reshape(3, 2)
    out = vmap(lambda r: (r * 2, np.float64(1.0)), out_axes=(0, None))
    with pytest.raises(ValueError, match="do not match"):
        vmap(lambda r: r, out_axes=(0, 1))(x)
    np.testing.assert_allclose(out(x)[0], x * 2)


def test_in_axes_prefix_that_does_not_match_the_arguments_raises() -> None:
    with pytest.raises(ValueError, match="do not match"):
        vmap(lambda p: p["a"], in_axes=({"b": 0},))({"a": np.ones((2, 2))})


def test_vmap_of_a_lambda_made_in_compiled_code_is_one_graph() -> None:
    def fn(x: np.ndarray, w: np.ndarray) -> Any:
        return vmap(lambda row: np.tanh(row @ w), in_axes=0)(x) * 2

    x, w = np.linspace(0, 1, 12).reshape(4, 3), np.linspace(-1, 1, 6).reshape(3, 2)
    report = explain(fn)(x, w)
    assert report.graph_count == 1 and report.graph_break_count == 0, report.break_reasons
    np.testing.assert_allclose(compile_function(fn)(x, w), np.tanh(x @ w) * 2, rtol=1e-12)
