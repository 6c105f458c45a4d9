"""Pointwise lowering: the inductor against run_graph, bit for bit."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from numpile_capture import Graph, get_op, meta_of, run_graph
from numpile_inductor import compile_graph


def _graph(inputs: list[np.ndarray], build: Any) -> Graph:
    graph = Graph()
    nodes = [graph.placeholder(f"in{i}", meta_of(x)) for i, x in enumerate(inputs)]
    graph.output = build(graph, *nodes)
    return graph


def _call(op: str, graph: Graph, *args: Any, **params: Any) -> Any:
    return graph.call(get_op(op), *args, **params)


def _assert_same(got: Any, want: Any) -> None:
    if isinstance(want, tuple | list):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _assert_same(g, w)
        return
    assert type(got) is type(want), (type(got), type(want))
    if isinstance(want, np.ndarray | np.generic):
        assert got.dtype == want.dtype and np.shape(got) == np.shape(want)
        np.testing.assert_array_equal(got, want)  # NaNs match NaNs
        assert np.array_equal(np.signbit(np.real(got)), np.signbit(np.real(want)))


def _check(inputs: list[np.ndarray], build: Any) -> Any:
    graph = _graph(inputs, build)
    compiled = compile_graph(graph)
    with np.errstate(all="ignore"):
        want = run_graph(graph, inputs)
        got = compiled.fn(*inputs)
    _assert_same(got, want)
    return compiled


_RNG = np.random.default_rng(0)
_BINARY_EXACT = ["add", "subtract", "multiply", "maximum", "minimum", "fmax", "fmin"]
_COMPARE = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]


def _special_floats(dtype: str, n: int) -> np.ndarray:
    x = _RNG.normal(size=n).astype(dtype) * 10
    x[:6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0]
    return x


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_ops_match_numpy_bit_for_bit(dtype: str) -> None:
    a = _special_floats(dtype, 257)
    b = _RNG.permutation(_special_floats(dtype, 257))
    names = [*_BINARY_EXACT, "divide", "floor_divide", "remainder", "fmod", "copysign", *_COMPARE]
    unary = [
        "negative",
        "absolute",
        "square",
        "sqrt",
        "floor",
        "ceil",
        "trunc",
        "rint",
        "sign",
        "isnan",
        "isinf",
        "isfinite",
        "signbit",
        "reciprocal",
        "logical_not",
    ]

    def build(g: Graph, x: Any, y: Any) -> Any:
        outs = [_call(n, g, x, y) for n in names]
        outs += [_call(n, g, x) for n in unary]
        return tuple(outs)

    _check([a, b], build)


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8", "uint64"])
def test_integer_ops_wrap_and_follow_python_division(dtype: str) -> None:
    info = np.iinfo(dtype)
    a = _RNG.integers(info.min, info.max, size=300, dtype=dtype, endpoint=True)
    b = _RNG.integers(info.min, info.max, size=300, dtype=dtype, endpoint=True)
    a[:4] = [info.min, info.max, 0, 7]
    b[:4] = [-1 if info.min < 0 else 1, 1, 0, 0]
    b[4:20] = _RNG.integers(-3 if info.min < 0 else 0, 4, size=16)
    names = [
        "add",
        "subtract",
        "multiply",
        "floor_divide",
        "remainder",
        "maximum",
        "minimum",
        "bitwise_and",
        "bitwise_or",
        "bitwise_xor",
        *_COMPARE,
        "logical_and",
    ]

    def build(g: Graph, x: Any, y: Any) -> Any:
        outs = [_call(n, g, x, y) for n in names]
        outs += [_call(n, g, x) for n in ["negative", "absolute", "square", "invert", "sign"]]
        outs.append(_call("divide", g, x, y))  # int / int -> float64
        return tuple(outs)

    _check([a, b], build)


def test_bool_and_complex_ops() -> None:
    p = _RNG.random(64) < 0.5
    q = _RNG.random(64) < 0.5
    z = (_RNG.normal(size=64) + 1j * _RNG.normal(size=64)).astype(np.complex128)
    w = (_RNG.normal(size=64) + 1j * _RNG.normal(size=64)).astype(np.complex64)

    def build(g: Graph, p_: Any, q_: Any, z_: Any, w_: Any) -> Any:
        outs = [
            _call(n, g, p_, q_)
            for n in ["add", "multiply", "logical_xor", "bitwise_and", "maximum", "equal", "less"]
        ]
        outs += [_call(n, g, z_, w_) for n in ["add", "subtract", "multiply", "equal"]]
        outs += [_call("negative", g, w_), _call("conjugate", g, z_)]
        return tuple(outs)

    _check([p, q, z, w], build)


def test_python_complex_constants_fuse_and_match_numpy_bit_for_bit() -> None:
    # `1j * k` (a spectral derivative's factor) is a kernel, not a NumPy call: a weak complex
    # scalar takes the arrays' complex type (complex64 beside float32), signs of zeros,
    # infinities and NaNs as NumPy's complex multiply gives them.
    k = _special_floats("float64", 40)
    z = (_RNG.normal(size=40) + 1j * _RNG.normal(size=40)).astype(np.complex64)

    def build(g: Graph, k_: Any, z_: Any) -> Any:
        k32 = _call("astype", g, k_, dtype=np.dtype("float32"))
        return (
            _call("multiply", g, 1j, k_),
            _call("multiply", g, k_, 2.0 - 3.0j),
            _call("add", g, k32, 1.5j),
            _call("subtract", g, z_, -0.0 - 1j),
        )

    compiled = _check([k, z], build)
    assert compiled.extern_ops == []


def test_mixed_dtypes_and_weak_scalars_follow_nep50() -> None:
    f32 = _RNG.normal(size=(4, 5)).astype(np.float32)
    i16 = _RNG.integers(-100, 100, size=(5,), dtype=np.int16)
    u8 = _RNG.integers(0, 255, size=(4, 1), dtype=np.uint8)

    def build(g: Graph, a: Any, b: Any, c: Any) -> Any:
        return (
            _call("add", g, a, 2.5),  # float32 stays float32
            _call("multiply", g, b, 3),  # int16 stays int16 (wraps)
            _call("add", g, a, b),  # float32 + int16 -> float32
            _call("subtract", g, c, b),  # uint8 - int16 -> int16
            _call("add", g, c, 200),  # uint8 wraps
            _call("true_divide" if False else "divide", g, b, 7),
            _call("less", g, a, 0),
        )

    _check([f32, i16, u8], build)


def test_chain_fuses_into_one_kernel_and_is_bit_exact() -> None:
    a, b, c = (_RNG.normal(size=(33, 17)) for _ in range(3))

    def build(g: Graph, x: Any, y: Any, z: Any) -> Any:
        t = _call("multiply", g, x, y)
        t = _call("add", g, t, z)
        t = _call("subtract", g, t, x)
        t = _call("divide", g, t, 3.0)
        return _call("multiply", g, t, t)

    compiled = _check([a, b, c], build)
    assert compiled.kernel_count == 1


def test_shared_heavy_intermediate_is_computed_once_in_one_kernel() -> None:
    a = _RNG.normal(size=(100,))

    def build(g: Graph, x: Any) -> Any:
        s = _call("exp", g, x)
        return _call("add", g, _call("multiply", g, s, 2.0), _call("sqrt", g, s))

    compiled = _check_close([a], build)
    assert compiled.kernel_count == 1
    # exp is computed once per loop variant (fast and generic) and never stored to memory
    assert compiled.source.count("= exp(t") == 2
    assert "o_v0" not in compiled.source


def _check_close(inputs: list[np.ndarray], build: Any, rtol: float = 1e-13) -> Any:
    graph = _graph(inputs, build)
    compiled = compile_graph(graph)
    with np.errstate(all="ignore"):
        want = run_graph(graph, inputs)
        got = compiled.fn(*inputs)
    wants = want if isinstance(want, tuple) else (want,)
    gots = got if isinstance(got, tuple) else (got,)
    for g, w in zip(gots, wants, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=0)
    return compiled


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_transcendentals_within_a_few_ulp(dtype: str) -> None:
    a = _RNG.uniform(-10, 10, size=1000).astype(dtype)
    pos = _RNG.uniform(0.01, 10, size=1000).astype(dtype)
    rtol = 4e-6 if dtype == "float32" else 4e-15

    def build(g: Graph, x: Any, p: Any) -> Any:
        outs = [_call(n, g, x) for n in ["sin", "cos", "exp", "tanh", "arctan", "expm1"]]
        outs += [_call(n, g, p) for n in ["log", "log2", "log10", "log1p", "cbrt"]]
        outs.append(_call("power", g, p, x))
        outs.append(_call("arctan2", g, x, p))
        return tuple(outs)

    _check_close([a, pos], build, rtol=rtol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("exponent", [4, 3, -2, 2.5, 7.0])
def test_float_power_matches_numpy_bit_for_bit(dtype: str, exponent: float) -> None:
    # NumPy calls its own pow (SVML on AVX-512) for exponents other than 0.5, 1, 2, -1, 0;
    # libm's differs in the last bit, so a float power inside a fused chain stays exact.
    x = _RNG.uniform(0.01, 3, size=1000).astype(dtype)

    def build(g: Graph, a: Any) -> Any:
        return _call("add", g, _call("power", g, _call("multiply", g, a, a), exponent), a)

    _check([x], build)


def test_broadcasting_noncontiguous_negative_strides_0d_and_empty() -> None:
    base = _RNG.normal(size=(6, 8))
    transposed = base.T  # (8, 6), not contiguous
    flipped = base[::-1, ::2]  # negative and step strides, (6, 4)
    row = _RNG.normal(size=(4,))
    scalar = np.array(2.5)
    empty = np.zeros((0, 4))

    def build(g: Graph, t: Any, f: Any, r: Any, s: Any, e: Any) -> Any:
        return (
            _call("sin", g, t),
            _call("add", g, f, r),
            _call("multiply", g, _call("transpose", g, f, axes=(1, 0)), s),
            _call("add", g, e, r),
            _call("multiply", g, s, s),  # 0-d result: a NumPy scalar, as np.multiply gives
        )

    graph = _graph([transposed, flipped, row, scalar, empty], build)
    compiled = compile_graph(graph)
    inputs = [transposed, flipped, row, scalar, empty]
    got = compiled.fn(*inputs)
    want = run_graph(graph, inputs)
    for g, w in zip(got, want, strict=True):
        assert type(g) is type(w)
        np.testing.assert_allclose(g, w, rtol=1e-15)


def test_fortran_order_inputs_keep_numpy_result_layout() -> None:
    a = np.asfortranarray(_RNG.normal(size=(5, 7)))

    def build(g: Graph, x: Any) -> Any:
        return _call("add", g, x, 1.0)

    graph = _graph([a], build)
    got = compile_graph(graph).fn(a)
    want = run_graph(graph, [a])
    np.testing.assert_array_equal(got, want)


def test_views_reshape_getitem_and_broadcast_are_index_arithmetic() -> None:
    a = _RNG.normal(size=(4, 6))
    b = _RNG.normal(size=(3, 8))[:, ::-1]  # (3, 8) reversed columns

    def build(g: Graph, x: Any, y: Any) -> Any:
        r = _call("reshape", g, _call("transpose", g, x, axes=(1, 0)), shape=(3, 8))
        s = _call("getitem", g, x, index=(slice(None, None, -1), slice(1, 5, 2)))
        e = _call("expand_dims", g, _call("getitem", g, x, index=(1,)), axis=(0,))
        return (
            _call("add", g, r, y),
            _call("multiply", g, s, 2.0),
            _call("add", g, e, _call("broadcast_to", g, e, shape=(4, 6))),
        )

    compiled = _check([a, b], build)
    assert compiled.extern_ops == []


def test_where_astype_clip_copy() -> None:
    a = _special_floats("float64", 50)
    i = _RNG.integers(-5, 5, size=50).astype(np.int32)

    def build(g: Graph, x: Any, n: Any) -> Any:
        cond = _call("greater", g, x, 0.0)
        return (
            _call("where", g, cond, x, n),
            _call("where", g, cond, 1, n),
            _call("astype", g, n, dtype=np.dtype("float32")),
            _call("astype", g, x, dtype=np.dtype("bool")),
            _call("clip", g, x, -1.0, 2.0),
            _call("clip", g, n, -2, 3),
            _call("copy", g, x),
        )

    compiled = _check([a, i], build)
    assert compiled.extern_ops == []


@pytest.mark.parametrize(
    "names", [("x0", "x1"), ("s0", "r0"), ("double", "sin"), ("_k", "a_s0"), ("in_x0", "x0")]
)
def test_inputs_named_like_generated_identifiers_compile(names: tuple[str, str]) -> None:
    # Input names become C identifiers beside the loop variables (x0, r0), sizes (s0),
    # strides (a_s0), C keywords and libm's functions: those that could clash are renamed.
    inputs = [np.arange(6.0).reshape(2, 3), np.linspace(-1.0, 1.0, 3)]
    graph = Graph()
    a, b = (graph.placeholder(name, meta_of(x)) for name, x in zip(names, inputs, strict=True))
    graph.output = _call("add", graph, _call("sin", graph, a), b)
    got = compile_graph(graph).fn(*inputs)
    want = run_graph(graph, inputs)
    assert got.dtype == want.dtype and got.shape == want.shape
    # sin may run as libmvec's vector version: within the README's tolerance (Numerics).
    np.testing.assert_allclose(got, want, rtol=4e-15, atol=0)
