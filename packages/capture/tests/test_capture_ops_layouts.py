"""Result layouts in the meta: element-wise ops and reductions lay their results out as
NumPy does (order='K'), checked against NumPy itself on strided, transposed and reversed
inputs."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from numpile_capture import ArrayMeta, contiguous_strides, get_op, meta_of
from numpile_capture.dynamic_shapes import shape_env_in_use
from numpile_capture.ops._shapes import elementwise_strides
from numpile_guards import ShapeEnv


def _strides(meta: ArrayMeta) -> tuple[Any, ...]:
    return meta.strides if meta.strides is not None else contiguous_strides(meta.shape)


def _same_layout(meta: ArrayMeta, array: np.ndarray[Any, Any]) -> bool:
    # Strides in elements, where a size-1 axis's stride never matters.
    elements = tuple(s // array.itemsize for s in array.strides)
    return all(
        a == b or size == 1
        for a, b, size in zip(_strides(meta), elements, array.shape, strict=True)
    )


@st.composite
def _strided(draw: st.DrawFn, shape: tuple[int, ...]) -> np.ndarray[Any, Any]:
    # An array of `shape` over a larger block: its axes permuted, each stepped by +-1 or +-2.
    ndim = len(shape)
    perm = draw(st.permutations(range(ndim)))
    steps = [draw(st.sampled_from([1, -1, 2, -2])) for _ in range(ndim)]
    block = np.arange(float(np.prod([2 * shape[p] for p in perm]))).reshape(
        [2 * shape[p] for p in perm]
    )
    view = block[tuple(slice(None, None, step) for step in steps)]
    view = view[tuple(slice(0, shape[p]) for p in perm)]
    return view.transpose(np.argsort(perm))


@st.composite
def _operands(draw: st.DrawFn) -> list[np.ndarray[Any, Any]]:
    ndim = draw(st.integers(2, 4))
    shape = tuple(draw(st.integers(1, 4)) for _ in range(ndim))
    arrays = []
    for _ in range(draw(st.integers(1, 3))):
        own = tuple(1 if draw(st.integers(0, 4)) == 0 else size for size in shape)
        arrays.append(draw(_strided(own[draw(st.integers(0, ndim - 1)) :])))
    return arrays


@settings(max_examples=120, deadline=None)
@given(_operands())
def test_elementwise_layout_is_numpys(arrays: list[np.ndarray[Any, Any]]) -> None:
    ops = {1: ("negative", np.negative), 2: ("add", np.add), 3: ("clip", np.clip)}
    name, function = ops[len(arrays)]
    expected = function(*arrays)
    meta = get_op(name).meta(*(meta_of(a) for a in arrays))
    assert _same_layout(meta, expected), (meta, expected.strides)


def _exact_strides(meta: ArrayMeta, array: np.ndarray[Any, Any]) -> bool:
    # Strides in elements, the strides of size-1 axes included (keepdims places them).
    return tuple(_strides(meta)) == tuple(s // array.itemsize for s in array.strides)


@settings(max_examples=80, deadline=None)
@given(_operands(), st.data())
def test_reduction_layout_is_numpys(arrays: list[np.ndarray[Any, Any]], data: Any) -> None:
    # The strides exactly, a reduced axis kept by keepdims in its place in memory; sum
    # over one or two axes, argmax (C order whatever the input), cumsum (the input's order).
    x = arrays[0]
    axes = tuple(sorted(set(data.draw(st.lists(st.integers(0, x.ndim - 1), min_size=1)))))
    keepdims = data.draw(st.booleans())
    expected = np.sum(x, axis=axes, keepdims=keepdims)
    if expected.ndim:
        meta = get_op("sum").meta(meta_of(x), axis=axes, keepdims=keepdims)
        assert _exact_strides(meta, expected), (meta, expected.strides)
    expected = np.argmax(x, axis=axes[0], keepdims=keepdims)
    meta = get_op("argmax").meta(meta_of(x), axis=axes[0], keepdims=keepdims)
    assert _exact_strides(meta, expected), (meta, expected.strides)
    expected = np.cumsum(x, axis=axes[0])
    meta = get_op("cumsum").meta(meta_of(x), axis=axes[0])
    assert _exact_strides(meta, expected), (meta, expected.strides)


def test_keepdims_places_the_reduced_axis_in_memory_order() -> None:
    # A Fortran-order sum over axis 1 with keepdims: (4, 1, 6) strides (1, 4, 4) as NumPy's,
    # not the (1, 6, 4) of a C-placed size-1 axis.
    fortran = ArrayMeta((4, 5, 6), "float64", (1, 4, 20))
    assert get_op("sum").meta(fortran, axis=(1,), keepdims=True).strides == (1, 4, 4)
    assert get_op("sum").meta(fortran, axis=(0, 2), keepdims=True).strides == (1, 1, 5)


def test_fortran_and_transposed_inputs_give_fortran_results() -> None:
    fortran = ArrayMeta((3, 4), "float64", (1, 3))
    assert elementwise_strides((3, 4), fortran, 2.0) == (1, 3)
    assert str(get_op("multiply").meta(fortran, 2)) == "float64[3, 4]{1, 3}"


def test_c_order_wins_where_inputs_disagree() -> None:
    fortran = ArrayMeta((3, 4), "float64", (1, 3))
    assert elementwise_strides((3, 4), ArrayMeta((3, 4), "float64"), fortran) is None
    assert elementwise_strides((3, 4), fortran, ArrayMeta((3, 4), "float64")) is None


def test_symbolic_strides_the_shape_facts_order_give_numpys_layout() -> None:
    # Sizes of a capture are at least 2 (0 and 1 are specialized): 1 < s0 < 6*s0.
    env = ShapeEnv()
    s0 = env.create_symbol(5, "L['a'].shape[0]")
    s1 = env.create_symbol(6, "L['a'].shape[1]")
    fortran = ArrayMeta((s0, 6, 7), "float64", (1, s0, 6 * s0))
    reversed_rows = ArrayMeta((s0, s1), "float64", (-s1, 1))
    unordered = ArrayMeta((s0, s1, 3), "float64", (3, 3 * s0, 1))
    with shape_env_in_use(env):
        assert elementwise_strides((s0, 6, 7), fortran, 2.0) == (1, s0, 6 * s0)
        assert get_op("sum").meta(fortran, axis=(1,)).strides == (1, s0)
        assert elementwise_strides((s0, s1), reversed_rows) is None  # C order
        assert elementwise_strides((s0, s1, 3), unordered) == (3, 3 * s0, 1)
    # Without the facts (outside a capture) symbolic strides are not ordered: C order.
    assert elementwise_strides((s0, 6, 7), fortran) is None


def test_strides_that_are_products_of_symbolic_sizes_are_ordered_by_their_ratio() -> None:
    # Ranges alone leave `s0 < s0*s1` open; the ratio `s1` (a symbolic size, at least 2)
    # decides it: an array all of whose dimensions are symbols keeps its Fortran layout.
    env = ShapeEnv()
    s0, s1, s2 = (env.create_symbol(n, f"L['a'].shape[{i}]") for i, n in enumerate((5, 6, 7)))
    fortran = ArrayMeta((s0, s1, s2), "float64", (1, s0, s0 * s1))
    transposed_reversed = ArrayMeta((s0, s1, s2), "float64", (1, -s2 * s0, s0))
    with shape_env_in_use(env):
        assert elementwise_strides((s0, s1, s2), fortran, 2.0) == (1, s0, s0 * s1)
        assert elementwise_strides((s0, s1, s2), transposed_reversed) == (1, s2 * s0, s0)
