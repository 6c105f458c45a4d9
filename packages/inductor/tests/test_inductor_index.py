"""Index arithmetic: view remaps and flat-index helpers against NumPy, by brute force."""

from __future__ import annotations

from typing import Any

import numpy as np
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from numpile_capture import contiguous_strides
from numpile_inductor.index import (
    FloorDiv,
    ModularIndexing,
    c_index,
    flatten_index,
    loop_var,
    strided_offset,
    unflatten_index,
)
from numpile_inductor.lowering.view import _affine_remap

_shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)


def _as_int(value: Any) -> int:
    return int(sympy.sympify(value))


def _check_view(base_shape: tuple[int, ...], view: Any) -> None:
    numel = int(np.prod(base_shape))
    data = np.arange(numel).reshape(base_shape)
    probe = np.lib.stride_tricks.as_strided(
        np.zeros(max(numel, 1), np.uint8), base_shape, contiguous_strides(base_shape)
    )
    viewed = view(probe)
    offset = viewed.__array_interface__["data"][0] - probe.__array_interface__["data"][0]
    remap = _affine_remap(offset, tuple(viewed.strides), viewed.shape, base_shape)
    want = view(data)
    for idx in np.ndindex(*viewed.shape):
        source = tuple(_as_int(i) for i in remap(idx))
        assert data[source] == want[idx], (idx, source)


@settings(max_examples=60, deadline=None)
@given(_shapes, st.data())
def test_view_remaps_match_numpy_views(shape: tuple[int, ...], data: st.DataObject) -> None:
    kind = data.draw(st.sampled_from(["transpose", "slice", "reshape", "flip_reshape", "bcast"]))
    if kind == "transpose":
        axes = tuple(data.draw(st.permutations(range(len(shape)))))
        _check_view(shape, lambda a: a.transpose(axes))
    elif kind == "slice":
        index = tuple(
            slice(data.draw(st.integers(0, n - 1)), None, data.draw(st.sampled_from([1, 2, -1])))
            for n in shape
        )
        _check_view(shape, lambda a: a[index])
    elif kind == "reshape":
        _check_view(shape, lambda a: a.reshape(-1))
    elif kind == "flip_reshape":
        # a strided walk over the flattened array: the loader unflattens
        _check_view(shape, lambda a: a.reshape(-1)[::-2].reshape(-1, 1))
    else:
        _check_view(shape, lambda a: np.broadcast_to(a[..., None], (*a.shape, 3)))


def test_reshape_that_merges_dims_uses_floor_div_and_modulo() -> None:
    remap = _affine_remap(0, (1,), (6,), (2, 3))
    index = remap((loop_var(0),))
    assert index == (FloorDiv(loop_var(0), 3), ModularIndexing(loop_var(0), 1, 3))
    assert [tuple(_as_int(e.subs(loop_var(0), k)) for e in index) for k in range(6)] == [
        (0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)
    ]  # fmt: skip


@given(_shapes, st.data())
def test_flatten_and_unflatten_are_inverse(shape: tuple[int, ...], data: st.DataObject) -> None:
    flat = data.draw(st.integers(0, int(np.prod(shape)) - 1))
    index = tuple(_as_int(i) for i in unflatten_index(sympy.Integer(flat), shape))
    assert index == np.unravel_index(flat, shape)
    assert _as_int(flatten_index(index, shape)) == flat


def test_c_spelling_of_index_expressions() -> None:
    x0, x1 = loop_var(0), loop_var(1)
    assert c_index(ModularIndexing(x0 * 12 + x1, 4, 3)) == "(((12*x0 + x1) / 4) % 3)"
    assert c_index(FloorDiv(x0, 5)) == "((x0) / 5)"
    assert c_index(x0 * 2**40) == "1099511627776LL*x0"


_SIZE_SYMBOLS = [sympy.Symbol(f"s{n}", integer=True, positive=True) for n in range(3)]
_affine_terms = st.lists(
    st.tuples(st.integers(-3, 3), st.sampled_from([loop_var(0), loop_var(1), loop_var(0, "r")])),
    max_size=3,
)
_strides = st.one_of(st.integers(-4, 4), st.sampled_from(_SIZE_SYMBOLS))


def _by_expand(index: tuple[Any, ...], strides: tuple[Any, ...]) -> Any:
    flat: Any = sympy.Integer(0)
    for idx, stride in zip(index, strides, strict=True):
        flat = flat + sympy.sympify(idx) * stride
    return sympy.expand(flat)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_affine_terms, st.integers(-5, 5), _strides), min_size=1, max_size=3))
def test_a_strided_offset_of_affine_indices_is_what_expand_gives(
    dims: list[tuple[list[tuple[int, sympy.Symbol]], int, Any]],
) -> None:
    # The term-by-term construction against sympy's expand: the same expression, so the
    # same C text (the generated source, and so the kernel cache key, do not change).
    index = tuple(sum((c * v for c, v in terms), sympy.Integer(start)) for terms, start, _ in dims)
    strides = tuple(stride for _, _, stride in dims)
    got = strided_offset(index, strides)
    want = _by_expand(index, strides)
    assert got == want
    assert c_index(got) == c_index(want)


def test_a_strided_offset_of_other_indices_is_what_expand_gives() -> None:
    x0, x1 = loop_var(0), loop_var(1)
    s0, s1 = _SIZE_SYMBOLS[:2]
    for index, strides in [
        ((FloorDiv(x0, 4), ModularIndexing(x0, 1, 4)), (s0, 1)),
        ((x0 * x1, x1), (1, s0)),
        ((x0 + 1, x1), (s0 * s1, s1)),
        ((sympy.Rational(1, 2) * x0, x1), (2, 1)),
    ]:
        assert strided_offset(index, strides) == _by_expand(index, strides)
