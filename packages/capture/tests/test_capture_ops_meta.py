"""Every op's meta rule against its own eager implementation on real arrays.

For each case the meta rule's shape and dtype must equal the result's, a
VIEW op's element strides must equal the view's (size-1 dims aside) and the
view must share memory with its input, a MUTATION op must return its
target, and a one-node graph run with `run_graph` must give the same values.
Invalid programs must raise the same exception type from the meta rule as
from NumPy.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from numpy.exceptions import AxisError

from numpile_capture import ArrayMeta, Graph, OpKind, all_ops, get_op, meta_of, run_graph
from numpile_capture.ops.extern import extern_rows
from numpile_capture.ops.indexing import IndexArray
from numpile_capture.ops.loop_values import ScalarSlot
from numpile_capture.ops.pointwise import UFUNC_NAMES

_RNG = np.random.default_rng(0)


def _f(*shape: int, dtype: str = "float64") -> np.ndarray[Any, Any]:
    return (_RNG.standard_normal(shape) * 3).astype(dtype)


def _i(*shape: int, dtype: str = "int64", high: int = 7) -> np.ndarray[Any, Any]:
    return _RNG.integers(1, high, size=shape).astype(dtype)


def _c(*shape: int) -> np.ndarray[Any, Any]:
    return _f(*shape) + 1j * _f(*shape)


_INT_UFUNCS = {
    "gcd", "lcm", "bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift",
    "right_shift", "bitwise_count",
}  # fmt: skip


def _ufunc_inputs(name: str) -> Callable[[], tuple[Any, ...]]:
    nin = getattr(np, name).nin
    if name in _INT_UFUNCS:
        return lambda: (_i(2, 3), _i(3))[:nin]
    if name == "ldexp":
        return lambda: (_f(2, 3), _i(3))
    if name in ("arccosh",):
        return lambda: (np.abs(_f(2, 3)) + 1,)
    return lambda: (_f(2, 3), _f(3))[:nin]


Case = tuple[str, Callable[[], tuple[Any, ...]], dict[str, Any]]

# A view chain (`view_scatter`'s `views`): rows 1 and 2.
_SECOND_ROWS = (("getitem", (("index", (slice(1, 3),)),)),)
CASES: list[Case] = [(name, _ufunc_inputs(name), {}) for name in UFUNC_NAMES]
CASES += [
    (f"{name}_", _ufunc_inputs(name), {}) for name in UFUNC_NAMES if getattr(np, name).nin == 2
]
CASES += [(name, lambda: (_f(2, 3),), {}) for name in ("erf", "erfc", "gamma", "lgamma")]
CASES += [(name, lambda: (_f(4).astype("float32"),), {}) for name in ("erf", "lgamma")]
CASES += [
    ("add", lambda: (_f(2, 3).T, 1.5), {}),
    ("multiply", lambda: (_i(4, dtype="int8"), np.float32(2.0)), {}),
    ("round", lambda: (_f(2, 3),), {"decimals": 1}),
    ("clip", lambda: (_f(2, 3), _f(3), 0.5), {}),
    ("clip", lambda: (_i(2, 3, dtype="int16"), None, 3), {}),
    ("where", lambda: (_f(2, 3) > 0, _f(2, 3), 0.0), {}),
    ("astype", lambda: (_f(2, 3),), {"dtype": np.dtype("int32")}),
    ("astype", lambda: (_f(3, 2).T,), {"dtype": np.dtype("float32")}),
    ("copy", lambda: (_f(3, 2).T,), {"order": "K"}),
    ("copy", lambda: (_f(3, 2).T,), {"order": "C"}),
    ("angle", lambda: (_c(4),), {"deg": True}),
    ("reshape", lambda: (_f(2, 3, 4),), {"shape": (6, 4)}),
    ("reshape", lambda: (_f(2, 3, 4),), {"shape": (-1, 1, 2)}),
    ("reshape", lambda: (_f(4, 6)[:, ::2],), {"shape": (4, 3, 1)}),
    ("reshape", lambda: (_f(4, 6)[:, ::2],), {"shape": (12,)}),
    ("reshape", lambda: (_f(2, 3, 4).transpose(2, 0, 1),), {"shape": (4, 6)}),
    ("transpose", lambda: (_f(2, 3, 4),), {"axes": (2, 0, 1)}),
    ("transpose", lambda: (_f(2, 3, 4)[:, ::-1],), {"axes": (-1, 1, 0)}),
    ("expand_dims", lambda: (_f(2, 3),), {"axis": (0, 2)}),
    ("squeeze", lambda: (_f(1, 3, 1),), {}),
    ("squeeze", lambda: (_f(1, 3, 1),), {"axis": (0,)}),
    ("broadcast_to", lambda: (_f(3),), {"shape": (2, 3)}),
    ("broadcast_to", lambda: (_f(2, 1)[::-1],), {"shape": (4, 2, 5)}),
    ("getitem", lambda: (_f(4, 3, 5),), {"index": (slice(None, None, -1), 1, None)}),
    ("getitem", lambda: (_f(4, 3, 5),), {"index": (Ellipsis, slice(1, None, 2))}),
    ("getitem", lambda: (_f(6, 3).T,), {"index": (-1, slice(5, 0, -2))}),
    ("getitem", lambda: (_f(4),), {"index": (slice(3, 1),)}),
    ("element", lambda: (_f(4, 3),), {"index": (1, 2)}),
    ("getitem", lambda: (_f(4),), {"index": (1, Ellipsis)}),
    ("real", lambda: (_c(3, 4)[:, ::2],), {}),
    ("imag", lambda: (_c(3, 4).T,), {}),
    ("real", lambda: (_f(3),), {}),
    ("zeros", lambda: (), {"shape": (2, 3), "dtype": np.dtype("float32")}),
    ("ones", lambda: (), {"shape": (4,), "dtype": None}),
    ("empty", lambda: (), {"shape": (0, 2), "dtype": np.dtype("int8")}),
    ("full", lambda: (2.5,), {"shape": (2, 2)}),
    ("full", lambda: (np.int8(3),), {"shape": (3,), "dtype": None}),
    ("arange", lambda: (), {"start": 0, "stop": 1, "step": 0.1}),
    ("arange", lambda: (), {"start": 2, "stop": 11, "step": 3}),
    ("arange", lambda: (), {"start": 5, "stop": 0, "step": 1}),
    ("arange", lambda: (), {"start": 0, "stop": 5.0, "step": 1}),
    ("arange", lambda: (), {"start": 10, "stop": -3, "step": -4, "dtype": np.dtype("int8")}),
    ("linspace", lambda: (), {"start": 0, "stop": 1, "num": 7}),
    ("linspace", lambda: (), {"start": 0, "stop": 1j, "num": 3, "endpoint": False}),
    ("eye", lambda: (), {"n": 3, "m": 4, "k": 1}),
    ("eye", lambda: (), {"n": 2, "dtype": np.dtype("int16")}),
    ("zeros_like", lambda: (np.asfortranarray(_f(2, 3)),), {}),
    ("ones_like", lambda: (_i(2, 3),), {"dtype": np.dtype("float32")}),
    ("empty_like", lambda: (_f(2, 3).T,), {"shape": (5,)}),
    ("full_like", lambda: (_i(2, 3), 2.5), {"dtype": None}),
    ("array", lambda: (), {"value": ((1, 2), (3, 4)), "dtype": None}),
    ("array", lambda: (), {"value": (1.5, 2), "dtype": np.dtype("float32")}),
    ("concatenate", lambda: (_f(2, 3), _f(2, 4)), {"axis": 1}),
    ("concatenate", lambda: (_f(2, 3), _i(5)), {"axis": None}),
    ("matmul", lambda: (_f(5, 2, 3), _f(3, 4)), {}),
    ("matmul", lambda: (_f(3), _f(2, 3, 4)), {}),
    ("matmul", lambda: (_i(2, 3, dtype="int8"), _f(3, dtype="float32")), {}),
    ("dot", lambda: (_f(2, 3), _f(3)), {}),
    ("dot", lambda: (_f(2, 3, 4), _f(5, 4, 2)), {}),
    ("dot", lambda: (_f(3), _f(3)), {}),
    ("tensordot", lambda: (_f(2, 3, 4), _f(4, 3, 5)), {"axes": ((1, 2), (1, 0))}),
    ("einsum", lambda: (_f(2, 3), _f(3, 4)), {"subscripts": "ij,jk->ik"}),
    ("einsum", lambda: (_f(5, 2, 3),), {"subscripts": "...ij->...ji"}),
    ("einsum", lambda: (_f(3, 3),), {"subscripts": "ii"}),
    ("einsum", lambda: (_f(2, 3), _f(3)), {"subscripts": "ij,j"}),
    ("tril", lambda: (_f(3, 4),), {}),
    ("triu", lambda: (_f(2, 3, 3),), {"k": 1}),
    ("tril", lambda: (_f(3),), {"k": -1}),
    ("sort", lambda: (_f(3, 4),), {"axis": 0}),
    ("argsort", lambda: (_f(3, 4),), {"axis": None, "stable": True}),
    ("diagonal", lambda: (_f(3, 4, 5),), {"offset": 1, "axis1": 2, "axis2": 0}),
    ("diagonal", lambda: (_f(4, 3).T[::-1],), {"offset": -1}),
    ("inv", lambda: (_f(2, 3, 3),), {}),
    ("det", lambda: (_f(3, 3, dtype="float32"),), {}),
    ("solve", lambda: (_f(2, 3, 3), _f(3, 4)), {}),
    ("solve", lambda: (_f(3, 3), _f(3)), {}),
    ("norm", lambda: (_f(2, 3, 4),), {"axis": (0, 2)}),
    ("norm", lambda: (_i(2, 3, dtype="int8"),), {}),
    ("norm", lambda: (_c(2, 3),), {"ord": "fro", "keepdims": True}),
    ("norm", lambda: (_f(4, dtype="float16"),), {"ord": 1}),
    ("matmul_", lambda: (_f(3, 3), _f(3, 3)), {}),
    ("setitem", lambda: (_f(4, 3), _f(3)), {"index": (slice(0, 2),)}),
    ("setitem", lambda: (_f(4, 3), 7), {"index": (1, slice(None, None, -1))}),
    ("fill", lambda: (_i(2, 2), 5), {}),
    ("getitem_at", lambda: (_f(4, 3), 2), {"index": (ScalarSlot(0), slice(None, None, -1))}),
    ("getitem_at", lambda: (_f(4, 3, 2), -1), {"index": (Ellipsis, ScalarSlot(0))}),
    ("element_at", lambda: (_f(4, 3), 1, -2), {"index": (ScalarSlot(0), ScalarSlot(1))}),
    ("setitem_at", lambda: (_f(4, 3), _f(3), 2), {"index": (ScalarSlot(0),)}),
    ("setitem_at", lambda: (_f(4, 3), 7, 1), {"index": (slice(1, 3), ScalarSlot(0))}),
    ("setitem_at_scatter", lambda: (_f(4, 3), _f(3), -1), {"index": (ScalarSlot(0),)}),
    ("carried_scalar", lambda: (_f(1).reshape(()),), {}),
    ("numpy_scalar", lambda: (300,), {"dtype": np.dtype("int16")}),
    ("copyto", lambda: (_f(2, 3), _i(3)), {}),
    ("index", lambda: (_f(5, 3), np.array([4, 0, -1])), {"index": (IndexArray(0),)}),
    ("index", lambda: (_f(5, 3, 4), _i(2, 2, high=3)), {"index": (0, slice(None), IndexArray(0))}),
    ("index", lambda: (_f(5, 3), np.array([True, False, True])), {
        "index": (slice(None), IndexArray(0)), "nnz": "u0"}),
    ("index_put", lambda: (_f(5, 3), 0.0, _f(5, 3) > 0), {"index": (IndexArray(0),), "nnz": "u0"}),
    ("index_put", lambda: (_f(5, 3), _f(3), np.array([1, 3])), {"index": (IndexArray(0),)}),
    ("ufunc_at", lambda: (_f(5, 3), _f(3), np.array([1, 3, 1, -1])), {
        "ufunc": "add", "index": (IndexArray(0),)}),
    ("ufunc_at", lambda: (_i(4), 2.5, np.array([0, 0, 3])), {
        "ufunc": "multiply", "index": (IndexArray(0),)}),
    # The pure scatters functionalization makes of the writes above (numpile_autograd_aot).
    ("view_scatter", lambda: (_f(4, 3), _f(3)), {"views": _SECOND_ROWS}),
    ("view_scatter", lambda: (_f(4, 3), 7.0), {"views": ()}),
    ("view_scatter_", lambda: (_f(4, 3), _f(2, 3)), {"views": _SECOND_ROWS}),
    ("index_scatter", lambda: (_f(5, 3), _f(3), np.array([1, 3])), {"index": (IndexArray(0),)}),
    ("index_add", lambda: (_f(5, 3), _f(3, 3), np.array([1, 3, 1])), {
        "index": (IndexArray(0),)}),
    ("index_accumulate", lambda: (_i(4), 3, np.array([0, 0, 3])), {
        "ufunc": "multiply", "index": (IndexArray(0),)}),
]  # fmt: skip
for _name in ("sum", "prod", "max", "min", "any", "all", "mean", "var", "std"):
    CASES.append((_name, lambda: (_f(2, 3, 4),), {"axis": (0, 2), "keepdims": True}))
    CASES.append((_name, lambda: (_i(2, 3),), {}))
for _name in ("nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar", "nanstd"):
    CASES.append((_name, lambda: (_f(2, 3),), {"axis": (-1,)}))
for _name in ("argmax", "argmin", "nanargmax", "nanargmin"):
    CASES.append((_name, lambda: (_f(2, 3),), {"axis": 1}))
    CASES.append((_name, lambda: (_f(2, 3),), {"keepdims": True}))
CASES.append(("sum", lambda: (_i(2, 3, dtype="int8"),), {"axis": (1,), "dtype": np.dtype("int16")}))
CASES.append(("var", lambda: (_f(4, 3),), {"axis": (0,), "ddof": 1}))
CASES += [
    ("sum", lambda: (_i(2, 3, dtype="int8"),), {"axis": (1,), "initial": 10.0}),
    ("prod", lambda: (_f(0, 3),), {"axis": (0,), "initial": 2}),
    ("max", lambda: (_f(2, 0),), {"axis": (1,), "initial": -np.inf}),
    ("min", lambda: (_i(0, dtype="int16"),), {"initial": 3}),
    ("nanmax", lambda: (_f(2, 3),), {"axis": (0,), "initial": 0.5}),
    ("count_nonzero", lambda: (_i(3, 4, high=2),), {"axis": (1,)}),
    ("count_nonzero", lambda: (_f(3, 4) > 0,), {}),
    ("count_nonzero", lambda: (_f(3, 4),), {"axis": (0, 1), "keepdims": True}),
    ("copy", lambda: (_f(3, 2),), {"order": "F"}),
    ("copy", lambda: (_f(3, 2).T,), {"order": "A"}),
    ("alias", lambda: (_f(4, 6)[::2, ::-3],), {}),
    ("repeat", lambda: (_f(2, 3),), {"repeats": 2}),
    ("repeat", lambda: (_f(2, 3).T,), {"repeats": (1, 0, 2), "axis": 0}),
    ("repeat", lambda: (_i(2, 3),), {"repeats": (3,), "axis": -1}),
    ("tile", lambda: (_f(2, 3),), {"reps": (2,)}),
    ("tile", lambda: (_f(3),), {"reps": (2, 1, 3)}),
    ("tile", lambda: (_f(3, 2).T,), {"reps": (1, 1)}),
    ("roll", lambda: (_f(3, 4),), {"shift": (1, -5), "axis": (0, 1)}),
    ("roll", lambda: (_f(3, 4).T,), {"shift": (2,), "axis": (1,)}),
    ("inner", lambda: (_f(2, 3), _f(4, 3)), {}),
    ("inner", lambda: (_f(3), _i(3)), {}),
    ("inner", lambda: (_f(2, 3), 2.0), {}),
]  # fmt: skip
for _name in ("cumsum", "cumprod", "nancumsum", "nancumprod"):
    CASES.append((_name, lambda: (_i(2, 3, dtype="uint8"),), {"axis": 1}))
    CASES.append((_name, lambda: (_f(2, 3),), {}))


def _fresh(make_inputs: Callable[[], tuple[Any, ...]]) -> tuple[Any, ...]:
    # The same inputs on every call, so two runs can be compared value for value.
    global _RNG
    _RNG = np.random.default_rng(0)
    return make_inputs()


def _meta_input(value: Any) -> Any:
    return meta_of(value) if isinstance(value, np.ndarray) else value


def _nontrivial_strides(shape: tuple[int, ...], strides: tuple[int, ...]) -> list[tuple[int, int]]:
    return [(i, s) for i, (d, s) in enumerate(zip(shape, strides, strict=True)) if d != 1]


def _case_id(case: Case) -> str:
    return f"{case[0]}-{sorted(case[2])}"


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_meta_matches_eager_result(case: Case) -> None:
    name, make_inputs, params = case
    op = get_op(name)
    inputs = _fresh(make_inputs)
    meta = op.meta(*(_meta_input(v) for v in inputs), **params)
    assert isinstance(meta, ArrayMeta)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        result = np.asarray(op.impl(*inputs, **params))
    static_shape = tuple(
        d if isinstance(d, int) else result.shape[i] for i, d in enumerate(meta.shape)
    )
    assert static_shape == result.shape
    assert meta.dtype == result.dtype
    if op.kind is OpKind.VIEW and meta.strides is not None:
        assert result.size == 0 or np.shares_memory(result, inputs[0])
        actual = meta_of(result).strides
        assert actual is not None
        if result.size:
            assert _nontrivial_strides(meta.shape, meta.strides) == _nontrivial_strides(
                result.shape, actual
            )
    elif meta.strides is not None and result.size:
        actual = meta_of(result).strides
        assert actual is not None
        assert _nontrivial_strides(meta.shape, meta.strides) == _nontrivial_strides(
            result.shape, actual
        )
    if op.kind is OpKind.MUTATION:
        again = _fresh(make_inputs)
        with np.errstate(all="ignore"):
            assert op.impl(*again, **params) is again[0]
    _check_graph_run(name, make_inputs, params, result)


def _check_graph_run(
    name: str, make_inputs: Callable[[], tuple[Any, ...]], params: dict[str, Any], expected: Any
) -> None:
    graph = Graph()
    inputs = _fresh(make_inputs)
    arrays = [v for v in inputs if isinstance(v, np.ndarray)]
    args = [
        graph.placeholder(f"a{i}", meta_of(v)) if isinstance(v, np.ndarray) else v
        for i, v in enumerate(inputs)
    ]
    graph.output = graph.call(get_op(name), *args, **params)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        got = np.asarray(run_graph(graph, arrays))
    if name in ("empty", "empty_like"):
        return
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


def test_every_op_has_a_case() -> None:
    # Only capture's own op set: other layers may register ops of theirs when they are
    # imported in the same process.
    covered = {case[0] for case in CASES}
    own = [op for op in all_ops() if op.meta.__module__.startswith("numpile_capture.")]
    assert len(own) > 150
    # Loop ops and Python-scalar ops: test_capture_loops.py covers them (python_number:
    # test_capture_python_numbers.py, math_call: test_capture_math_calls.py).
    loops = {"for_loop", "while_loop", "cond", "loop_output", "py_binary", "py_unary", "dim"}
    loops.update(("python_number", "math_call"))
    # The extern table's rows and their tuple items: test_capture_extern.py covers them.
    # broadcast_unbacked (the run-time check of two data-dependent sizes):
    # test_capture_unbacked.py covers it.
    externs = {row.name for row in extern_rows()} | {"result_item", "broadcast_unbacked"}
    missing = [op.name for op in own if op.name not in covered | loops | externs]
    assert not missing


def test_graph_run_gives_the_same_values() -> None:
    graph = Graph()
    x = graph.placeholder("x", ArrayMeta((4, 3), "float64"))
    view = graph.call(get_op("getitem"), x, index=(slice(None, None, -1),))
    total = graph.call(get_op("sum"), view, axis=(0,))
    graph.call(get_op("add_"), view, 1.0)
    graph.output = (view, total)
    data = np.arange(12.0).reshape(4, 3)
    got_view, got_total = run_graph(graph, [data])
    assert np.shares_memory(got_view, data)
    np.testing.assert_array_equal(got_total, np.arange(12.0).reshape(4, 3).sum(0))
    np.testing.assert_array_equal(data, np.arange(12.0).reshape(4, 3) + 1)


ErrorCase = tuple[str, Callable[[], tuple[Any, ...]], dict[str, Any], type[Exception]]

ERRORS: list[ErrorCase] = [
    ("add", lambda: (_f(2, 3), _f(4, 3)), {}, ValueError),
    ("power", lambda: (_i(3), -1), {}, ValueError),
    ("left_shift", lambda: (_f(3), 1), {}, TypeError),
    ("reshape", lambda: (_f(2, 3),), {"shape": (4,)}, ValueError),
    ("reshape", lambda: (_f(2, 3),), {"shape": (-1, -1)}, ValueError),
    ("transpose", lambda: (_f(2, 3),), {"axes": (0, 2)}, AxisError),
    ("transpose", lambda: (_f(2, 3),), {"axes": (0, 0)}, ValueError),
    ("transpose", lambda: (_f(2, 3),), {"axes": (0,)}, ValueError),
    ("squeeze", lambda: (_f(2, 1),), {"axis": (0,)}, ValueError),
    ("expand_dims", lambda: (_f(2, 1),), {"axis": (3,)}, AxisError),
    ("broadcast_to", lambda: (_f(2, 3),), {"shape": (4, 3)}, ValueError),
    ("broadcast_to", lambda: (_f(2, 3),), {"shape": (3,)}, ValueError),
    ("getitem", lambda: (_f(2, 3),), {"index": (5,)}, IndexError),
    ("getitem", lambda: (_f(2, 3),), {"index": (0, 1, 2)}, IndexError),
    ("getitem", lambda: (_f(2, 3),), {"index": (slice(None, None, 0),)}, ValueError),
    ("sum", lambda: (_f(2, 3),), {"axis": (2,)}, AxisError),
    ("sum", lambda: (_f(2, 3),), {"axis": (0, -2)}, ValueError),
    ("max", lambda: (_f(0, 3),), {"axis": (0,)}, ValueError),
    ("max", lambda: (_f(0, 3),), {}, ValueError),
    ("argmin", lambda: (_f(0, 3),), {"axis": 0}, ValueError),
    ("max", lambda: (_i(3, dtype="int8"),), {"initial": 1000}, OverflowError),
    ("mean", lambda: (_f(3),), {"initial": 1.0}, TypeError),
    ("repeat", lambda: (_f(3),), {"repeats": -1}, ValueError),
    ("repeat", lambda: (_f(3),), {"repeats": (1, -1, 1)}, ValueError),
    ("repeat", lambda: (_f(3, 2),), {"repeats": (1, 2), "axis": 0}, ValueError),
    ("repeat", lambda: (_f(3, 2),), {"repeats": 2, "axis": 2}, AxisError),
    ("tile", lambda: (_f(3),), {"reps": (-1,)}, ValueError),
    ("inner", lambda: (_f(2, 3), _f(2, 4)), {}, ValueError),
    ("cumsum", lambda: (_f(2, 3),), {"axis": 2}, AxisError),
    ("concatenate", lambda: (_f(2, 3), _f(2, 4)), {"axis": 0}, ValueError),
    ("concatenate", lambda: (_f(2, 3), _f(3)), {"axis": 0}, ValueError),
    ("concatenate", lambda: (_f(2, 3), _f(2, 3)), {"axis": 2}, AxisError),
    ("concatenate", lambda: (_f(2), _f(2)), {"dtype": np.dtype("int8")}, TypeError),
    ("matmul", lambda: (_f(2, 3), _f(4, 5)), {}, ValueError),
    ("matmul", lambda: (_f(2, 3), 2.0), {}, ValueError),
    ("dot", lambda: (_f(2, 3), _f(4, 5)), {}, ValueError),
    ("tensordot", lambda: (_f(2, 3), _f(4, 5)), {"axes": ((1,), (0,))}, ValueError),
    ("einsum", lambda: (_f(2, 3), _f(4, 5)), {"subscripts": "ij,jk->ik"}, ValueError),
    ("einsum", lambda: (_f(2, 3),), {"subscripts": "ijk"}, ValueError),
    ("add_", lambda: (_f(3), _f(2, 3)), {}, ValueError),
    ("add_", lambda: (_i(3), 1.5), {}, TypeError),
    ("add_", lambda: (_i(3, dtype="int8"), 300), {}, OverflowError),
    ("matmul_", lambda: (_f(2, 2), _f(2, 3)), {}, ValueError),
    ("setitem", lambda: (_f(4, 3), _f(2)), {"index": (slice(0, 2),)}, ValueError),
    ("setitem", lambda: (_i(4, dtype="int8"), 1000), {"index": (0,)}, OverflowError),
    ("fill", lambda: (_i(2, dtype="uint8"), -1), {}, OverflowError),
    ("copyto", lambda: (_i(3), _f(3)), {}, TypeError),
    ("index", lambda: (_f(2, 3), np.array([True, False, True])), {
        "index": (IndexArray(0),), "nnz": "u"}, IndexError),
    ("index", lambda: (_f(2, 3), np.array([0.5])), {"index": (IndexArray(0),)}, IndexError),
    ("arange", lambda: (), {"start": 0, "stop": 5, "step": 0}, ZeroDivisionError),
    ("zeros", lambda: (), {"shape": (-1,)}, ValueError),
    ("astype", lambda: (_f(3),), {"dtype": np.dtype("int8"), "casting": "safe"}, TypeError),
    ("tril", lambda: (_f(),), {}, TypeError),
    ("sort", lambda: (_f(2, 3),), {"axis": 2}, AxisError),
    ("diagonal", lambda: (_f(3),), {}, ValueError),
    ("diagonal", lambda: (_f(3, 3),), {"axis1": 1, "axis2": 1}, ValueError),
    ("inv", lambda: (_f(2, 3),), {}, np.linalg.LinAlgError),
    ("inv", lambda: (_f(3),), {}, np.linalg.LinAlgError),
    ("det", lambda: (_f(3, dtype="float16")[None].repeat(3, 0),), {}, TypeError),
    ("solve", lambda: (_f(2, 2), _f(3)), {}, ValueError),
    ("solve", lambda: (_f(2, 2), _f(3, 4)), {}, ValueError),
    ("norm", lambda: (_f(2, 3, 4),), {"ord": 2}, ValueError),
    ("norm", lambda: (_f(2, 3, 4),), {"axis": (0, 1, 2)}, ValueError),
]  # fmt: skip


@pytest.mark.parametrize("case", ERRORS, ids=[f"{c[0]}-{c[3].__name__}" for c in ERRORS])
def test_meta_raises_what_numpy_raises(case: ErrorCase) -> None:
    name, make_inputs, params, error = case
    op = get_op(name)
    with pytest.raises(error) as numpy_error, np.errstate(all="ignore"):
        op.impl(*make_inputs(), **params)
    inputs = make_inputs()
    with pytest.raises(type(numpy_error.value)) as meta_error:
        op.meta(*(_meta_input(v) for v in inputs), **params)
    assert type(meta_error.value) is type(numpy_error.value)


@pytest.mark.parametrize(
    "name, make_inputs, params",
    [
        ("add", lambda: (_f(2, 3), _f(4, 3)), {}),
        ("reshape", lambda: (_f(2, 3),), {"shape": (4,)}),
        ("getitem", lambda: (_f(2, 3),), {"index": (5,)}),
        ("sum", lambda: (_f(2, 3),), {"axis": (2,)}),
        ("max", lambda: (_f(0, 3),), {"axis": (0,)}),
        ("concatenate", lambda: (_f(2, 3), _f(2, 4)), {"axis": 0}),
        ("matmul", lambda: (_f(2, 3), _f(4, 5)), {}),
        ("dot", lambda: (_f(2, 3), _f(4, 5)), {}),
        ("add_", lambda: (_i(3), 1.5), {}),
        ("setitem", lambda: (_f(4, 3), _f(2)), {"index": (slice(0, 2),)}),
        ("transpose", lambda: (_f(2, 3),), {"axes": (0, 0)}),
    ],
)
def test_meta_error_messages_are_numpys(
    name: str, make_inputs: Callable[[], tuple[Any, ...]], params: dict[str, Any]
) -> None:
    op = get_op(name)
    with pytest.raises(Exception) as numpy_error:
        op.impl(*make_inputs(), **params)
    with pytest.raises(Exception) as meta_error:
        op.meta(*(_meta_input(v) for v in make_inputs()), **params)
    assert str(meta_error.value) == str(numpy_error.value)


def test_meta_rules_work_on_symbolic_sizes() -> None:
    sympy = pytest.importorskip("sympy")
    s0, s1 = sympy.symbols("s0 s1", integer=True, positive=True)
    x = ArrayMeta((s0, 4), "float32")
    cases: list[tuple[str, tuple[Any, ...], dict[str, Any], str]] = [
        ("add", (x, ArrayMeta((4,), "float64")), {}, "float64[s0, 4]"),
        ("sum", (x,), {"axis": (0,)}, "float32[4]"),
        ("transpose", (x,), {"axes": (1, 0)}, "float32[4, s0]{1, 4}"),
        ("reshape", (x,), {"shape": (-1, 2)}, "float32[2*s0, 2]"),
        ("matmul", (x, ArrayMeta((4, s1), "float32")), {}, "float32[s0, s1]"),
        ("concatenate", (x, x), {"axis": 0}, "float32[2*s0, 4]"),
        ("getitem", (x,), {"index": (slice(None), 1)}, "float32[s0]{4}"),
        ("cumsum", (x,), {}, "float32[4*s0]"),
    ]
    for name, inputs, params, expected in cases:
        assert str(get_op(name).meta(*inputs, **params)) == expected, name
