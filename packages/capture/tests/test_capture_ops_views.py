"""View metadata against NumPy on many random layouts: no-copy reshape, basic indexing."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from numpile_capture import Graph, meta_of
from numpile_capture.numpy_bindings import lookup_operator
from numpile_capture.ops._shapes import reshape_strides, strides_of


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
