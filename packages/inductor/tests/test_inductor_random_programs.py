"""Random straight-line programs: compiled results equal run_graph's (values, dtypes, types)."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from numpile_capture import Graph, Node, get_op, meta_of, run_graph
from numpile_inductor import compile_graph

_UNARY = ["negative", "absolute", "square", "sqrt", "exp", "sin", "floor", "sign", "isnan",
          "logical_not", "invert", "reciprocal", "tanh"]  # fmt: skip
_BINARY = ["add", "subtract", "multiply", "divide", "floor_divide", "remainder", "maximum",
           "minimum", "less", "equal", "logical_and", "bitwise_and", "power",
           "arctan2"]  # fmt: skip
_REDUCTIONS = ["sum", "prod", "max", "min", "mean", "any", "all", "var", "std"]
_DTYPES = ["float32", "float64", "int8", "int32", "int64", "uint16", "bool", "complex128"]


def _array(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    if dtype == "bool":
        a = np.asarray(rng.random(shape) < 0.5)
    elif dtype[0] in "iu":
        a = np.asarray(rng.integers(-20 if dtype[0] == "i" else 0, 20, size=shape), dtype=dtype)
    elif dtype.startswith("complex"):
        a = np.asarray(rng.normal(size=shape) + 1j * rng.normal(size=shape), dtype=dtype)
    else:
        a = np.asarray(rng.normal(size=shape) * 3, dtype=dtype)
    layout = rng.integers(0, 3)
    if layout == 1 and a.ndim >= 2:
        return np.asfortranarray(a)
    if layout == 2 and a.ndim >= 1:
        return np.concatenate([a, a], axis=-1)[..., ::-2]
    return a


def _step(g: Graph, r: random.Random, values: list[Node]) -> Node:
    k = r.random()
    x = r.choice(values)
    if k < 0.35:
        return g.call(get_op(r.choice(_UNARY)), x)
    if k < 0.7:
        return g.call(get_op(r.choice(_BINARY)), x, r.choice([*values, 2, 1.5, -3, True]))
    assert hasattr(x.meta, "ndim")
    nd = x.meta.ndim
    if k < 0.85:
        axis = None
        if nd and r.random() < 0.7:
            axis = tuple(sorted(r.sample(range(nd), r.randint(1, nd))))
        return g.call(get_op(r.choice(_REDUCTIONS)), x, axis=axis, keepdims=r.random() < 0.3)
    if k < 0.93:
        return g.call(get_op("transpose"), x, axes=tuple(r.sample(range(nd), nd)))
    return g.call(get_op("where"), g.call(get_op("greater"), x, 0), x, r.choice(values))


@pytest.mark.parametrize("seed", range(16))
def test_random_program(seed: int) -> None:
    rng = np.random.default_rng(seed)
    r = random.Random(seed)
    shape = tuple(int(s) for s in rng.integers(1, 6, size=rng.integers(1, 4)))
    g = Graph()
    inputs: list[np.ndarray] = []
    values: list[Node] = []
    for i in range(r.randint(1, 3)):
        inputs.append(_array(rng, shape[r.randint(0, len(shape) - 1) :], r.choice(_DTYPES)))
        values.append(g.placeholder(f"in{i}", meta_of(inputs[-1])))
    outputs = []
    for _ in range(r.randint(2, 7)):
        try:
            value = _step(g, r, values)
        except (TypeError, ValueError, np.exceptions.DTypePromotionError):
            continue  # NumPy rejects this combination at capture time
        values.append(value)
        if r.random() < 0.5:
            outputs.append(value)
    g.output = (*outputs, values[-1])
    with np.errstate(all="ignore"):
        compiled = compile_graph(g).fn
        try:
            want = run_graph(g, [a.copy() for a in inputs])
        except (ValueError, ZeroDivisionError) as error:  # e.g. integers to negative powers
            with pytest.raises(type(error)):
                compiled(*inputs)
            return
        got = compiled(*inputs)
    for g_, w_ in zip(got, want, strict=True):
        _assert_close(g_, w_)


def _assert_close(got: Any, want: Any) -> None:
    assert type(got) is type(want)
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind in "fc":
        rtol = 1e-5 if want.dtype.itemsize <= 4 or want.dtype == np.complex64 else 1e-12
        np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-6, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)
