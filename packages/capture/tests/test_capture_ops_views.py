"""View metadata against NumPy on many random layouts: no-copy reshape, basic indexing."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest
import sympy

from numpile_capture import ArrayMeta, Graph, get_op, meta_of
from numpile_capture.dynamic_shapes import shape_env_in_use
from numpile_capture.numpy_bindings import lookup_operator
from numpile_capture.ops._shapes import reshape_strides, strides_of
from numpile_guards import ShapeEnv


def _layout(rng: np.random.Generator) -> np.ndarray[Any, Any]:
    # A random view: random shape, then random steps (some negative) and a random permutation.
    ndim = int(rng.integers(1, 4))
    shape = tuple(int(d) for d in rng.integers(1, 5, size=ndim))
    base = np.arange(math.prod(shape) * 8, dtype=np.float64)
    steps = [int(rng.choice([1, 1, 2, -1])) for _ in shape]
    full = base[: math.prod(d * abs(s) for d, s in zip(shape, steps, strict=True))]
    array = full.reshape(tuple(d * abs(s) for d, s in zip(shape, steps, strict=True)))
    array = array[tuple(slice(None, None, s) for s in steps)]
    return array.transpose(tuple(rng.permutation(ndim)))


def _factorizations(numel: int, rng: np.random.Generator) -> tuple[int, ...]:
    dims: list[int] = []
    rest = numel
    while rest > 1 and len(dims) < 4:
        divisors = [d for d in range(1, rest + 1) if rest % d == 0]
        dim = int(rng.choice(divisors))
        dims.append(dim)
        rest //= dim
    dims.append(rest)
    if rng.random() < 0.3:
        dims.insert(int(rng.integers(0, len(dims) + 1)), 1)
    return tuple(dims)


def _significant(shape: tuple[int, ...], strides: tuple[Any, ...]) -> list[tuple[int, Any]]:
    return [(i, s) for i, (d, s) in enumerate(zip(shape, strides, strict=True)) if d != 1]


@pytest.mark.parametrize("seed", range(4))
def test_no_copy_reshape_agrees_with_numpy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(150):
        array = _layout(rng)
        target = _factorizations(array.size, rng)
        meta = meta_of(array)
        predicted = reshape_strides(array.shape, strides_of(meta), target)  # type: ignore[arg-type]
        try:
            view = array.reshape(target, copy=False)
        except ValueError:
            assert predicted is None, (array.shape, array.strides, target)
            continue
        assert predicted is not None, (array.shape, array.strides, target)
        actual = meta_of(view).strides
        assert actual is not None
        assert _significant(target, predicted) == _significant(target, actual)


def _random_index(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[Any, ...]:
    items: list[Any] = []
    for dim in shape:
        choice = rng.integers(0, 4)
        if choice == 0:
            items.append(int(rng.integers(-dim, dim)))
        elif choice == 1:
            start = int(rng.integers(-dim - 1, dim + 2))
            stop = int(rng.integers(-dim - 1, dim + 2))
            step = int(rng.choice([1, 2, -1, -3]))
            items.append(slice(start, stop, step))
        elif choice == 2:
            items.append(slice(None))
        if rng.random() < 0.2:
            items.append(None)
    if rng.random() < 0.3 and items:
        items[int(rng.integers(0, len(items)))] = Ellipsis
    return tuple(items)


@pytest.mark.parametrize("seed", range(4))
def test_basic_indexing_metadata_agrees_with_numpy(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    getitem = lookup_operator("getitem")
    for _ in range(150):
        array = _layout(rng)
        index = _random_index(rng, array.shape)
        graph = Graph()
        x = graph.placeholder("x", meta_of(array))
        try:
            expected = array[index]
        except IndexError as error:
            with pytest.raises(type(error)):
                getitem.apply(graph, x, index)
            continue
        node = getitem.apply(graph, x, index)
        assert node.meta.shape == expected.shape, (array.shape, index)
        if isinstance(expected, np.generic):
            assert node.op.name == "element"
            continue
        assert node.op.name == "getitem"
        actual = meta_of(expected).strides
        assert actual is not None and node.meta.strides is not None
        if expected.size:
            assert _significant(expected.shape, node.meta.strides) == _significant(
                expected.shape, actual
            )
            assert np.shares_memory(expected, array)


# -- where a view of a symbolic size starts (ArrayMeta.starts) ------------------------------

_BOUNDS = [None, -7, -6, -4, -3, -1, 0, 1, 2, 3, 5, 8]


@pytest.mark.parametrize("size", [2, 3, 5, 8])
def test_symbolic_slices_start_where_python_starts_them(size: int) -> None:
    # Brute force over slices: the start capture records (its clamps decided under the
    # guards of a size seen as `size`) is Python's start at that size, on every non-empty view.
    for start, stop, step in itertools.product(_BOUNDS, _BOUNDS, [None, 2, 3, -1, -2]):
        item = slice(start, stop, step)
        env = ShapeEnv()
        s0 = env.create_symbol(size, "L['x'].shape[0]")
        with shape_env_in_use(env):
            meta = get_op("getitem").meta(ArrayMeta((s0, 4), "float64"), index=(item, 1))
        assert meta.starts is not None
        first, stop_at, stride = item.indices(size)
        if len(range(first, stop_at, stride)):
            assert sympy.sympify(meta.starts[0]).subs(s0, size) == first, item
        assert meta.starts[1] == 1


def test_views_that_start_elsewhere_under_other_guards_print_apart() -> None:
    # `x[-6:-4:3]` is one element at size 5 (from 0) and at size 8 (from s0 - 6): the printed
    # graphs, the cache key, tell them apart.
    printed = []
    for size in (5, 8):
        env = ShapeEnv()
        s0 = env.create_symbol(size, "L['x'].shape[0]")
        with shape_env_in_use(env):
            graph = Graph()
            x = graph.placeholder("x", ArrayMeta((s0,), "float64"))
            graph.output = graph.call(get_op("getitem"), x, index=(slice(-6, -4, 3),))
        printed.append(str(graph))
    assert "# float64[1]\n" in printed[0]
    assert "# float64[1] from [s0 - 6]\n" in printed[1]


def test_a_slice_of_a_data_dependent_size_starts_at_its_clamp_expression() -> None:
    env = ShapeEnv()
    u0 = sympy.Symbol("u0", integer=True, nonnegative=True)
    env.create_unbacked(u0, 1)
    with shape_env_in_use(env):
        meta = get_op("getitem").meta(ArrayMeta((u0,), "float64"), index=(slice(-3, None),))
    assert meta.starts == (sympy.Max(0, u0 - 3),)


def test_static_views_record_no_start() -> None:
    meta = get_op("getitem").meta(ArrayMeta((6,), "float64"), index=(slice(1, None),))
    assert meta.starts is None


def test_stores_record_and_print_where_their_view_starts() -> None:
    # `A[-6:-4:3, 1] = v` writes row 0 at size 5 and row s0 - 6 from size 6: the store's
    # result records the start of the view it writes, and prints it (the cache key).
    printed = []
    for size in (5, 8):
        env = ShapeEnv()
        s0 = env.create_symbol(size, "L['A'].shape[0]")
        with shape_env_in_use(env):
            graph = Graph()
            A = graph.placeholder("A", ArrayMeta((s0, 3), "float64"))
            stored = graph.call(get_op("setitem"), A, 1.0, index=(slice(-6, -4, 3), 1))
            graph.output = stored
        assert stored.meta == A.meta
        assert stored.meta.starts == ((0, 1) if size == 5 else (s0 - 6, 1))
        printed.append(str(graph))
    assert "# float64[s0, 3]\n" in printed[0]
    assert "# float64[s0, 3] from [s0 - 6, 1]\n" in printed[1]
    static = get_op("setitem").meta(ArrayMeta((6, 3), "float64"), 1.0, index=(slice(1, None),))
    assert static.starts is None
