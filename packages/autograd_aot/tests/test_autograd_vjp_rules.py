"""Every VJP rule against central finite differences in float64, over random shapes (hypothesis)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numpile_autograd_aot import build_joint, extern_no_grad, get_vjp, vjp_ops
from numpile_capture import Graph, IndexArray, Op, OpKind, all_ops, get_op, meta_of, run_graph
from numpile_capture.ops.scatter import index_accumulate, index_add, index_scatter, view_scatter

Rng = np.random.Generator
Shape = tuple[int, ...]
# A case makes the op's inputs (arrays are differentiated, other values are constants) and params.
Make = Callable[[Rng, Shape], tuple[list[Any], dict[str, Any]]]


def _normal(rng: Rng, shape: Shape) -> np.ndarray:
    return rng.normal(size=shape)


def _positive(rng: Rng, shape: Shape) -> np.ndarray:
    return rng.uniform(0.5, 2.0, size=shape)


def _unit(rng: Rng, shape: Shape) -> np.ndarray:
    return rng.uniform(-0.8, 0.8, size=shape)


def _unary(domain: Callable[[Rng, Shape], np.ndarray]) -> Make:
    return lambda rng, shape: ([domain(rng, shape)], {})


def _binary(
    first: Callable[[Rng, Shape], np.ndarray], second: Callable[[Rng, Shape], np.ndarray]
) -> Make:
    def make(rng: Rng, shape: Shape) -> tuple[list[Any], dict[str, Any]]:
        # the second operand broadcasts: its trailing dims, some set to 1
        other = tuple(1 if rng.random() < 0.3 else d for d in shape[int(rng.integers(0, 2)) :])
        return [first(rng, shape), second(rng, other)], {}

    return make


def _reduction(domain: Callable[[Rng, Shape], np.ndarray] = _normal, **extra: Any) -> Make:
    def make(rng: Rng, shape: Shape) -> tuple[list[Any], dict[str, Any]]:
        choices: list[Any] = [None, *((a,) for a in range(len(shape)))]
        axis = choices[int(rng.integers(0, len(choices)))]
        return [domain(rng, shape)], {"axis": axis, "keepdims": bool(rng.random() < 0.5), **extra}

    return make


def _scan(domain: Callable[[Rng, Shape], np.ndarray] = _normal) -> Make:
    def make(rng: Rng, shape: Shape) -> tuple[list[Any], dict[str, Any]]:
        axis = None if not shape or rng.random() < 0.5 else int(rng.integers(0, len(shape)))
        return [domain(rng, shape)], {"axis": axis}

    return make


def _matrix(rng: Rng, shape: Shape) -> np.ndarray:
    n = (shape or (2,))[0] + 1
    return rng.normal(size=(n, n)) + 3 * np.eye(n)


UNARY = {
    "sin": _normal, "cos": _normal, "tan": _unit, "arcsin": _unit, "arccos": _unit,
    "arctan": _normal, "sinh": _normal, "cosh": _normal, "tanh": _normal, "arcsinh": _normal,
    "arccosh": lambda rng, shape: rng.uniform(1.5, 3.0, size=shape), "arctanh": _unit,
    "exp": _normal, "exp2": _normal, "expm1": _normal, "log": _positive, "log2": _positive,
    "log10": _positive, "log1p": _positive, "sqrt": _positive, "cbrt": _positive,
    "square": _normal, "reciprocal": _positive, "deg2rad": _normal, "radians": _normal,
    "rad2deg": _normal, "degrees": _normal, "negative": _normal, "positive": _normal,
    "absolute": _positive, "fabs": _normal, "conjugate": _normal, "copy": _normal,
}  # fmt: skip

BINARY = {
    "add": (_normal, _normal), "subtract": (_normal, _normal), "multiply": (_normal, _normal),
    "divide": (_normal, _positive), "power": (_positive, _normal),
    "float_power": (_positive, _normal), "maximum": (_normal, _normal),
    "minimum": (_normal, _normal), "fmax": (_normal, _normal), "fmin": (_normal, _normal),
    "logaddexp": (_normal, _normal), "logaddexp2": (_normal, _normal),
    "arctan2": (_normal, _positive), "hypot": (_positive, _positive),
    "remainder": (_positive, lambda rng, shape: rng.uniform(3.0, 4.0, size=shape)),
    "fmod": (_positive, lambda rng, shape: rng.uniform(3.0, 4.0, size=shape)),
}  # fmt: skip

CASES: dict[str, Make] = {name: _unary(domain) for name, domain in UNARY.items()}
CASES.update({name: _binary(*domains) for name, domains in BINARY.items()})
CASES.update(
    {
        "copysign": lambda rng, s: ([_positive(rng, s), np.sign(_normal(rng, s))], {}),
        "ldexp": lambda rng, s: ([_normal(rng, s), 2], {}),
        "sum": _reduction(),
        "nansum": _reduction(),
        "mean": _reduction(),
        "nanmean": _reduction(),
        "prod": _reduction(_positive),
        "nanprod": _reduction(_positive),
        "max": _reduction(),
        "min": _reduction(),
        "nanmax": _reduction(),
        "nanmin": _reduction(),
        "var": _reduction(ddof=0),
        "nanvar": _reduction(ddof=0),
        "std": _reduction(_positive, ddof=1),
        "nanstd": _reduction(_positive, ddof=1),
        "cumsum": _scan(),
        "nancumsum": _scan(),
        "cumprod": _scan(_positive),
        "nancumprod": _scan(_positive),
        "reshape": lambda rng, s: ([_normal(rng, s)], {"shape": (-1,)}),
        "transpose": lambda rng, s: ([_normal(rng, s)], {"axes": tuple(reversed(range(len(s))))}),
        "expand_dims": lambda rng, s: ([_normal(rng, s)], {"axis": (0,)}),
        "squeeze": lambda rng, s: ([_normal(rng, (1, *s, 1))], {"axis": None}),
        "broadcast_to": lambda rng, s: ([_normal(rng, s)], {"shape": (2, *s)}),
        "getitem": lambda rng, s: ([_normal(rng, (3, *s))], {"index": (slice(None, None, -2),)}),
        "element": lambda rng, s: ([_normal(rng, (2, 3))], {"index": (1, 2)}),
        "diagonal": lambda rng, s: (
            [_normal(rng, (3, 4, 2))],
            {"offset": 1, "axis1": 2, "axis2": 0},
        ),
        "real": _unary(_normal),
        "where": lambda rng, s: ([_normal(rng, s) > 0, _normal(rng, s), _normal(rng, s)], {}),
        "clip": lambda rng, s: ([_normal(rng, s), -0.5, _positive(rng, s)], {}),
        "astype": lambda rng, s: ([_normal(rng, s)], {"dtype": np.dtype("complex128")}),
        "full_like": lambda rng, s: ([_normal(rng, s), np.asarray(_normal(rng, ()))], {}),
        "full": lambda rng, s: ([np.asarray(_normal(rng, ()))], {"shape": (2, 3)}),
        "matmul": lambda rng, s: (
            [_normal(rng, (2, 3, 4)), _normal(rng, (4,) if s else (4, 2))],
            {},
        ),
        "dot": lambda rng, s: ([_normal(rng, (3,)), _normal(rng, (3, 2))], {}),
        "tensordot": lambda rng, s: (
            [_normal(rng, (2, 3, 4)), _normal(rng, (4, 2, 5))],
            {"axes": ((2, 0), (0, 1))},
        ),
        "einsum": lambda rng, s: (
            [_normal(rng, (2, 3)), _normal(rng, (3, 4))],
            {"subscripts": "ij,jk->ik" if s else "ij,jk->k"},
        ),
        "concatenate": lambda rng, s: (
            [_normal(rng, (2, 3)), _normal(rng, (1, 3))],
            {"axis": None if s else 0},
        ),
        "tril": lambda rng, s: ([_normal(rng, (3, 4))], {"k": 1}),
        "triu": lambda rng, s: ([_normal(rng, (4,))], {"k": 0}),
        "inv": lambda rng, s: ([_matrix(rng, s)], {}),
        "det": lambda rng, s: ([_matrix(rng, s)], {}),
        "solve": lambda rng, s: ([_matrix(rng, (2,)), _normal(rng, (3,) if s else (3, 2))], {}),
        "norm": lambda rng, s: ([_normal(rng, (2, 3))], {"axis": (1,) if s else None}),
        "sort": lambda rng, s: ([_normal(rng, (3, 4))], {"axis": 1 if s else None}),
        "index": lambda rng, s: (
            [_normal(rng, (4, 3)), np.array([0, 2, 2, 3])],
            {"index": (IndexArray(0),)},
        ),
    }
)


def _spd(rng: Rng, shape: Shape) -> np.ndarray:
    n = (shape or (2,))[0] + 1
    a = rng.normal(size=(n, n))
    return a @ a.T + n * np.eye(n)


def _resized(rng: Rng, shape: Shape) -> dict[str, Any]:
    # n that pads, cuts or keeps the transformed length of a (2, 4) input
    return {"n": [None, 3, 6][int(rng.integers(0, 3))]} if shape else {}


CASES.update(
    {
        "fft.fft": lambda rng, s: ([_normal(rng, (2, 4))], {"axis": 1, **_resized(rng, s)}),
        "fft.ifft": lambda rng, s: ([_normal(rng, (4, 2)) + 1j], {"axis": 0, "norm": "ortho"}),
        "fft.fft2": lambda rng, s: ([_normal(rng, (3, 4))], {}),
        "fft.ifft2": lambda rng, s: ([_normal(rng, (3, 4))], {"s": (4, 3)} if s else {}),
        "fft.fftn": lambda rng, s: ([_normal(rng, (2, 3, 2))], {}),
        "fft.ifftn": lambda rng, s: ([_normal(rng, (2, 3, 2))], {"axes": (0, 2)}),
        "fft.rfft": lambda rng, s: ([_normal(rng, (2, 5))], _resized(rng, s)),
        "fft.irfft": lambda rng, s: ([_normal(rng, (2, 4))], {"n": [None, 5, 8, 3][len(s)]}),
        "fft.hfft": lambda rng, s: ([_normal(rng, (3, 4))], {"norm": "ortho"} if s else {}),
        "fft.ihfft": lambda rng, s: ([_normal(rng, (2, 5))], _resized(rng, s)),
        "fft.rfft2": lambda rng, s: ([_normal(rng, (3, 4))], {"s": (3, 5)} if s else {}),
        "fft.rfftn": lambda rng, s: ([_normal(rng, (2, 3, 4))], {"axes": (0, 2)}),
        "fft.irfft2": lambda rng, s: ([_normal(rng, (3, 4))], {"s": (3, 7)} if s else {}),
        "fft.irfftn": lambda rng, s: (
            [_normal(rng, (2, 3, 4))],
            {"axes": (0, 2), "norm": "forward"} if s else {},
        ),
        "fft.fftshift": lambda rng, s: ([_normal(rng, (3, 4))], {}),
        "pad": lambda rng, s: (
            [_normal(rng, (3, 4))],
            {"pad_width": ((1, 2), (0, 3)), "mode": ["constant", "edge", "reflect"][len(s)]},
        ),
        "convolve": lambda rng, s: (
            [_normal(rng, (5,)), _normal(rng, (2 + len(s),))],
            {"mode": ["full", "same", "valid"][len(s)]},
        ),
        "correlate": lambda rng, s: (
            [_normal(rng, (2 + 2 * len(s),)), _normal(rng, (4,))],
            {"mode": ["valid", "same", "full"][len(s)]},
        ),
        "interp": lambda rng, s: (
            [
                _normal(rng, (2, 3)) * 2,
                np.arange(-2, 3),
                _normal(rng, (5,)),
                -1.0 if s else None,
                None,
            ],
            {},
        ),
        "fft.ifftshift": lambda rng, s: ([_normal(rng, (3, 5))], {"axes": (1,)}),
        "linalg.cholesky": lambda rng, s: ([_spd(rng, s)], {}),
        "linalg.eigvalsh": lambda rng, s: ([_spd(rng, s)], {"UPLO": "U"} if s else {}),
        "erf": _unary(_normal),
        "erfc": _unary(_normal),
        "linalg.svdvals": lambda rng, s: ([_normal(rng, (4, 3) if s else (2, 3))], {}),
        "roll": lambda rng, s: (
            [_normal(rng, (3, 4))],
            {"shift": (1, -5), "axis": (0, 1)} if s else {"shift": (2,), "axis": (1,)},
        ),
        "diff": lambda rng, s: (
            [_normal(rng, (3, 5)), np._NoValue, np._NoValue],
            {"n": 1 + len(s) % 3, "axis": len(s) % 2},
        ),
        "polyval": lambda rng, s: ([_normal(rng, (4,)), _normal(rng, s)], {}),
        "polyfit": lambda rng, s: (
            [
                np.linspace(-1.0, 1.0, 7) + 0.05 * _normal(rng, (7,)),
                _normal(rng, (7, 2) if s else (7,)),
                1.0 + rng.uniform(size=7) if len(s) % 2 else None,
            ],
            {"deg": 2},
        ),
        "linalg.pinv": lambda rng, s: (
            [_normal(rng, [(4, 3), (2, 5), (2, 3, 2)][len(s) % 3]) if s else _spd(rng, (2,))],
            {} if s else {"hermitian": True},
        ),
    }
)

OPTIONAL_CASES: dict[str, Make] = {
    "inner": lambda rng, s: ([_normal(rng, (2, 3)), _normal(rng, (4, 3) if s else (3,))], {}),
    "tile": lambda rng, s: ([_normal(rng, (2, 3))], {"reps": (2, 1, 3) if s else (2,)}),
    "repeat": lambda rng, s: (
        [_normal(rng, (2, 3))],
        {"repeats": (1, 0, 2) if s else 2, "axis": 1 if s else None},
    ),
    "alias": _unary(_normal),
}
for _name, _make in OPTIONAL_CASES.items():
    try:
        get_op(_name)
    except KeyError:
        continue
    CASES[_name] = _make

SCATTER_CASES: dict[Op, Make] = {
    view_scatter: lambda rng, s: (
        [_normal(rng, (4, 3)), _normal(rng, (3,))],
        {"views": (("getitem", (("index", (slice(1, 3),)),)),)},
    ),
    index_scatter: lambda rng, s: (
        [_normal(rng, (5,)), _normal(rng, (2,)), np.array([4, 1])],
        {"index": (IndexArray(0),)},
    ),
    index_add: lambda rng, s: (
        [_normal(rng, (5,)), _normal(rng, (3,)), np.array([4, 1, 4])],
        {"index": (IndexArray(0),)},
    ),
    # np.subtract.at with a repeated and a negative index, rows of a 2-D target
    index_accumulate: lambda rng, s: (
        [_normal(rng, (5, 2)), _normal(rng, (4, 2)), np.array([4, 1, -1, 0])],
        {"ufunc": "subtract", "index": (IndexArray(0),)},
    ),
}

ALL_CASES: list[tuple[Op, Make]] = [(get_op(n), m) for n, m in CASES.items()]
ALL_CASES += list(SCATTER_CASES.items())

shapes = st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple)


def _graph(op: Op, inputs: list[Any], params: dict[str, Any]) -> tuple[Graph, list[int]]:
    graph = Graph()
    args: list[Any] = []
    diff = []
    for position, value in enumerate(inputs):
        if isinstance(value, np.ndarray):
            if value.dtype.kind == "f":
                diff.append(len(graph.placeholders))
            args.append(graph.placeholder(f"a{position}", meta_of(value)))
        else:
            args.append(value)
    graph.output = (graph.call(op, *args, **params),)
    return graph, diff


def _pairing(graph: Graph, arrays: list[np.ndarray], cotangent: np.ndarray) -> float:
    (out,) = run_graph(graph, arrays)
    return float(np.real(np.sum(np.asarray(out) * cotangent)))


def _check_against_finite_differences(op: Op, make: Make, seed: int, shape: Shape) -> None:
    rng = np.random.default_rng(seed)
    inputs, params = make(rng, shape)
    graph, diff = _graph(op, inputs, params)
    arrays = [v for v in inputs if isinstance(v, np.ndarray)]
    (out,) = run_graph(graph, arrays)
    cotangent = rng.normal(size=np.shape(out)).astype(np.asarray(out).dtype)
    joint = build_joint(graph, diff, (0,))
    _, grads = run_graph(joint.graph, [*arrays, cotangent])
    step = 1e-6
    for position, grad in zip(diff, grads, strict=True):
        expected = np.zeros_like(arrays[position])
        for flat in range(arrays[position].size):
            plus = [a.copy() for a in arrays]
            minus = [a.copy() for a in arrays]
            plus[position].flat[flat] += step
            minus[position].flat[flat] -= step
            delta = _pairing(graph, plus, cotangent) - _pairing(graph, minus, cotangent)
            expected.flat[flat] = delta / (2 * step)
        assert grad.shape == arrays[position].shape
        assert grad.dtype == arrays[position].dtype
        np.testing.assert_allclose(grad, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(("op", "make"), ALL_CASES, ids=[op.name for op, _ in ALL_CASES])
@settings(max_examples=3, deadline=None, database=None)
@given(seed=st.integers(0, 2**32 - 1), shape=shapes)
def test_vjp_matches_finite_differences(op: Op, make: Make, seed: int, shape: Shape) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _check_against_finite_differences(op, make, seed, shape)


# Ops whose results carry no gradient (integer or bool results) need no rule; these others
# have none yet, with the reason.
# Loop nodes and the run-time index ops of their bodies: grad captures loops unrolled.
MISSING_WITH_REASON: dict[str, str] = dict.fromkeys(
    (
        "for_loop",
        "while_loop",
        "cond",
        "loop_output",
        "py_binary",
        "py_unary",
        "dim",
        "getitem_at",
        "element_at",
        "carried_scalar",
        "setitem_at_scatter",
        "numpy_scalar",
        "python_number",
        "math_call",
    ),
    "loop structure (see vjp_exclusions)",
)


# Extern-table rows without a rule: each row's `no_grad` says why.
MISSING_WITH_REASON.update(extern_no_grad())
MISSING_WITH_REASON.update(dict.fromkeys(("gamma", "lgamma"), "needs digamma"))


def test_every_differentiable_op_has_a_rule_or_a_reason() -> None:
    have = set(vjp_ops())
    missing = []
    for op in all_ops():
        if op in have or op.kind is OpKind.MUTATION or op.name in MISSING_WITH_REASON:
            continue
        probe_kinds = {OpKind.CREATION, OpKind.REDUCTION, OpKind.EXTERN}
        if op.kind in probe_kinds and op.name in {
            "zeros", "ones", "empty", "linspace", "eye", "array", "argsort", "argmax", "argmin",
            "any", "all", "nanargmax", "nanargmin", "count_nonzero",
        }:  # fmt: skip
            continue  # no array inputs, or an integer/bool result
        if op.kind is OpKind.POINTWISE and _bool_or_int_result(op):
            continue
        missing.append(op.name)
    assert not missing


def _bool_or_int_result(op: Op) -> bool:
    # Ufuncs without a float loop (gcd, bitwise ops) or with a bool result carry no gradient.
    from numpile_capture import ArrayMeta

    for dtype in ("float64", "int64"):
        for arity in (1, 2):
            try:
                meta = op.meta(*(ArrayMeta((1,), dtype) for _ in range(arity)))
            except Exception:
                continue
            return isinstance(meta, ArrayMeta) and meta.dtype.kind in "biu"
    return False


def test_every_rule_is_tested() -> None:
    tested = {op for op, _ in ALL_CASES}
    tested |= {get_op(f"linalg.{case[0].__name__}") for case in _TUPLE_CASES}
    tested.add(get_op("linalg.lstsq"))  # two inputs: its own test below
    untested_zero = {"sign", "floor", "ceil", "trunc", "rint", "round", "spacing", "heaviside"}
    untested = [
        op.name
        for op in vjp_ops()
        if op not in tested
        and op.name not in untested_zero
        and op.name
        not in {"floor_divide", "nextafter", "zeros_like", "ones_like", "empty_like", "arange"}
        and op.name not in {"imag", "angle"}
        # loop ops: against the unrolled gradient in test_autograd_loops.py
        and op.name not in {"for_loop", "cond", "getitem_at", "element_at", "carried_scalar"}
    ]
    assert not untested


def test_integer_inputs_get_no_gradient() -> None:
    graph = Graph()
    x = graph.placeholder("x", meta_of(np.ones(3)))
    n = graph.placeholder("n", meta_of(np.arange(3)))
    graph.output = (graph.call(get_op("multiply"), x, n),)
    joint = build_joint(graph, (0, 1), (0,))
    _, grads = run_graph(joint.graph, [np.ones(3), np.arange(3), np.ones(3)])
    assert grads[1] is None
    np.testing.assert_array_equal(grads[0], [0.0, 1.0, 2.0])


def test_complex_follows_jax_convention() -> None:
    # grad of |z|^2 is 2 conj(z); holomorphic ops do not conjugate: d(c z)/dz pairs as ct * c.
    graph = Graph()
    z = graph.placeholder("z", meta_of(np.ones(2, complex)))
    graph.output = (graph.call(get_op("square"), graph.call(get_op("absolute"), z)),)
    joint = build_joint(graph, (0,), (0,))
    value = np.array([3 + 4j, 1 - 2j])
    _, (gz,) = run_graph(joint.graph, [value, np.ones(2)])
    np.testing.assert_allclose(gz, 2 * np.conj(value))
    holomorphic = Graph()
    w = holomorphic.placeholder("w", meta_of(np.ones(2, complex)))
    holomorphic.output = (holomorphic.call(get_op("multiply"), w, 2 + 1j),)
    joint = build_joint(holomorphic, (0,), (0,))
    _, (gw,) = run_graph(joint.graph, [value, np.ones(2, complex)])
    np.testing.assert_allclose(gw, np.full(2, 2 + 1j))


def test_missing_rule_is_named() -> None:
    assert get_vjp(get_op("sin")) is not None
    graph = Graph()
    x = graph.placeholder("x", meta_of(np.ones((2, 2))))
    graph.output = (graph.call(get_op("einsum"), x, subscripts="ii->i"),)
    with pytest.raises(NotImplementedError, match="einsum"):
        build_joint(graph, (0,), (0,))


@pytest.mark.parametrize("name", ["imag", "angle", "absolute", "real", "conjugate"])
def test_complex_input_rules_match_finite_differences(name: str) -> None:
    # For a real pairing L(z) = Re(sum(ct * f(z))), JAX's convention gives dL/dx - i dL/dy.
    rng = np.random.default_rng(3)
    z = rng.normal(size=3) + 1j * rng.normal(size=3)
    graph, _ = _graph(get_op(name), [z], {})
    (out,) = run_graph(graph, [z])
    cotangent = rng.normal(size=np.shape(out)).astype(np.asarray(out).dtype)
    joint = build_joint(graph, (0,), (0,))
    _, (gz,) = run_graph(joint.graph, [z, cotangent])
    expected = np.zeros(3, complex)
    step = 1e-6
    for i in range(3):
        for unit, weight in ((1.0, 1.0), (1j, -1j)):
            plus, minus = z.copy(), z.copy()
            plus[i] += step * unit
            minus[i] -= step * unit
            delta = _pairing(graph, [plus], cotangent) - _pairing(graph, [minus], cotangent)
            expected[i] += weight * delta / (2 * step)
    np.testing.assert_allclose(gz, expected, rtol=1e-5, atol=1e-6)


_COMPLEX_IN = [
    ("fft.fft", {}),
    ("fft.irfft", {}),
    ("fft.irfft", {"n": 5}),
    ("fft.hfft", {"n": 7, "norm": "ortho"}),
    ("fft.irfftn", {}),
    ("fft.irfft2", {"s": (3, 5), "norm": "forward"}),
]


@pytest.mark.parametrize(("name", "params"), _COMPLEX_IN, ids=[str(c) for c in _COMPLEX_IN])
def test_complex_inputs_follow_the_complex_convention(name: str, params: dict[str, Any]) -> None:
    # The gradient of a complex input is dL/du - i dL/dv (JAX's convention, the fft rule's),
    # checked by central differences along the real and the imaginary directions.
    rng = np.random.default_rng(11)
    a = rng.normal(size=(2, 4)) + 1j * rng.normal(size=(2, 4))
    graph = Graph()
    graph.output = (graph.call(get_op(name), graph.placeholder("a", meta_of(a)), **params),)
    (out,) = run_graph(graph, [a])
    cotangent = rng.normal(size=np.shape(out)).astype(np.asarray(out).dtype)
    _, (grad,) = run_graph(build_joint(graph, [0], (0,)).graph, [a, cotangent])
    expected = np.zeros_like(a)
    step = 1e-6
    for flat in range(a.size):
        delta = np.zeros_like(a)
        delta.flat[flat] = step
        du = _pairing(graph, [a + delta], cotangent) - _pairing(graph, [a - delta], cotangent)
        dv = _pairing(graph, [a + 1j * delta], cotangent)
        dv -= _pairing(graph, [a - 1j * delta], cotangent)
        expected.flat[flat] = (du - 1j * dv) / (2 * step)
    np.testing.assert_allclose(grad, expected, rtol=1e-5, atol=1e-6)


def _spd_of(rng: Rng, n: int) -> np.ndarray:
    a = rng.normal(size=(n, n))
    return a @ a.T + np.diag(np.arange(1.0, n + 1.0))


# (function, input factory, keyword arguments): tuple-valued decompositions (distinct
# eigen- and singular values), every item's cotangent random.
_TUPLE_CASES: list[tuple[Any, Callable[[Rng], np.ndarray], dict[str, Any]]] = [
    (np.linalg.eigh, lambda rng: _spd_of(rng, 4), {}),
    (np.linalg.eigh, lambda rng: _spd_of(rng, 3), {"UPLO": "U"}),
    (np.linalg.svd, lambda rng: rng.normal(size=(4, 3)), {"full_matrices": False}),
    (np.linalg.svd, lambda rng: rng.normal(size=(2, 5)), {"full_matrices": False}),
    (np.linalg.svd, lambda rng: rng.normal(size=(3, 3)), {}),
    (np.linalg.qr, lambda rng: rng.normal(size=(4, 3)), {}),
    (np.linalg.qr, lambda rng: rng.normal(size=(3, 3)), {"mode": "complete"}),
    (np.linalg.qr, lambda rng: rng.normal(size=(5, 2)), {"mode": "r"}),
    (np.linalg.svd, lambda rng: rng.normal(size=(3, 4)), {"compute_uv": False}),
    (np.linalg.slogdet, lambda rng: rng.normal(size=(3, 3)) + 3 * np.eye(3), {}),
]


@pytest.mark.parametrize(
    ("function", "make", "params"),
    _TUPLE_CASES,
    ids=[f"{c[0].__name__}{c[2]}" for c in _TUPLE_CASES],
)
def test_tuple_valued_decompositions_match_finite_differences(
    function: Any, make: Callable[[Rng], np.ndarray], params: dict[str, Any]
) -> None:
    from numpile_capture.numpy_bindings import lookup_function

    rng = np.random.default_rng(21)
    a = make(rng)
    graph = Graph()
    binding = lookup_function(function)
    assert binding is not None
    items = binding.apply(graph, graph.placeholder("a", meta_of(a)), **params)
    items = items if isinstance(items, tuple) else (items,)
    graph.output = tuple(items)
    outs = run_graph(graph, [a])
    cotangents = [rng.normal(size=np.shape(out)) for out in outs]
    joint = build_joint(graph, [0], tuple(range(len(items))))
    _, (grad,) = run_graph(joint.graph, [a, *cotangents])

    def pairing(value: np.ndarray) -> float:
        results = run_graph(graph, [value])
        return float(sum(np.sum(r * c) for r, c in zip(results, cotangents, strict=True)))

    expected = np.zeros_like(a)
    step = 1e-6
    for flat in range(a.size):
        delta = np.zeros_like(a)
        delta.flat[flat] = step
        expected.flat[flat] = (pairing(a + delta) - pairing(a - delta)) / (2 * step)
    np.testing.assert_allclose(grad, expected, rtol=1e-4, atol=1e-5)


# Every layout of the pseudo-inverse's rule (each of its three terms vanishes for some),
# deterministic: tall and wide, a batch, a rank-deficient-free Hermitian input, and the
# fits whose rule goes through it (weights, several right-hand sides, a high degree).
_LEAST_SQUARES_CASES: list[tuple[str, Make]] = [
    ("linalg.pinv", lambda rng, s: ([_normal(rng, (4, 3))], {})),
    ("linalg.pinv", lambda rng, s: ([_normal(rng, (2, 5))], {})),
    ("linalg.pinv", lambda rng, s: ([_normal(rng, (2, 3, 2))], {})),
    ("linalg.pinv", lambda rng, s: ([_spd(rng, (2,))], {"hermitian": True})),
    ("polyfit", lambda rng, s: ([np.linspace(-1, 1, 6), _normal(rng, (6, 2)), None], {"deg": 3})),
    (
        "polyfit",
        lambda rng, s: (
            [np.linspace(0, 2, 5), _normal(rng, (5,)), 1 + rng.uniform(size=5)],
            {"deg": 1},
        ),
    ),
    ("polyval", lambda rng, s: ([_normal(rng, (1,)), _normal(rng, (3,))], {})),
    ("diff", lambda rng, s: ([_normal(rng, (2, 6)), np._NoValue, np._NoValue], {"n": 3})),
    # prepend= and append= join the array first: a 0-d end broadcasts along the axis
    ("diff", lambda rng, s: ([_normal(rng, (2, 4)), _normal(rng, ()), _normal(rng, (2, 2))], {})),
    (
        "diff",
        lambda rng, s: (
            [_normal(rng, (3, 2)), _normal(rng, (1, 2)), _normal(rng, ())],
            {"n": 2, "axis": 0},
        ),
    ),
]


@pytest.mark.parametrize(
    ("name", "make"),
    _LEAST_SQUARES_CASES,
    ids=[f"{name}-{k}" for k, (name, _) in enumerate(_LEAST_SQUARES_CASES)],
)
def test_least_squares_and_polynomial_rules_match_finite_differences(name: str, make: Make) -> None:
    _check_against_finite_differences(get_op(name), make, 7, ())


@pytest.mark.parametrize(
    ("a_shape", "b_shape", "items"),
    [((5, 3), (5,), (0,)), ((5, 3), (5, 2), (0, 3)), ((2, 4), (2,), (0, 3))],
)
def test_lstsq_solution_and_singular_values_match_finite_differences(
    a_shape: Shape, b_shape: Shape, items: tuple[int, ...]
) -> None:
    from numpile_capture.numpy_bindings import lookup_function

    rng = np.random.default_rng(5)
    a, b = rng.normal(size=a_shape), rng.normal(size=b_shape)
    graph = Graph()
    binding = lookup_function(np.linalg.lstsq)
    assert binding is not None
    placeholders = (graph.placeholder("a", meta_of(a)), graph.placeholder("b", meta_of(b)))
    results = binding.apply(graph, *placeholders, rcond=None)
    graph.output = tuple(results[k] for k in items)
    outs = run_graph(graph, [a, b])
    cotangents = [rng.normal(size=np.shape(out)) for out in outs]
    joint = build_joint(graph, [0, 1], tuple(range(len(items))))
    _, grads = run_graph(joint.graph, [a, b, *cotangents])

    def pairing(values: list[np.ndarray]) -> float:
        found = run_graph(graph, values)
        return float(sum(np.sum(r * c) for r, c in zip(found, cotangents, strict=True)))

    step = 1e-6
    for position, grad in enumerate(grads):
        expected = np.zeros_like([a, b][position])
        for flat in range(expected.size):
            plus, minus = [a.copy(), b.copy()], [a.copy(), b.copy()]
            plus[position].flat[flat] += step
            minus[position].flat[flat] -= step
            expected.flat[flat] = (pairing(plus) - pairing(minus)) / (2 * step)
        np.testing.assert_allclose(grad, expected, rtol=1e-4, atol=1e-5)


def test_lstsq_residuals_have_no_rule_and_say_so() -> None:
    from numpile_capture.numpy_bindings import lookup_function

    a, b = np.ones((4, 2)) + np.eye(4, 2), np.arange(4.0)
    graph = Graph()
    binding = lookup_function(np.linalg.lstsq)
    assert binding is not None
    placeholders = (graph.placeholder("a", meta_of(a)), graph.placeholder("b", meta_of(b)))
    graph.output = (binding.apply(graph, *placeholders)[1],)
    with pytest.raises(NotImplementedError, match="residuals"):
        build_joint(graph, [0, 1], (0,))
