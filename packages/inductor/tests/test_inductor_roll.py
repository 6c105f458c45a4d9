"""`np.roll` lowered as a load at a rotated index (lowering/view.py's `lower_roll`): a stencil
written with rolls is one kernel that reads its input in place, bit-identical to NumPy, on C,
Fortran and negative-stride inputs, with shifts past the length and along several axes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from numpile_capture import Graph, get_op, meta_of
from numpile_inductor import compile_graph

Array = np.ndarray[Any, Any]
_RNG = np.random.default_rng(31)


def _roll_graph(x: Array, rolls: list[tuple[tuple[int, ...], tuple[int, ...]]]) -> Graph:
    # The sum of `x` rolled by each (shift, axis) pair, minus len(rolls) * x.
    graph = Graph()
    px = graph.placeholder("u", meta_of(x))
    total = graph.call(get_op("multiply"), px, -len(rolls))
    for shift, axis in rolls:
        rolled = graph.call(get_op("roll"), px, shift=shift, axis=axis)
        total = graph.call(get_op("add"), total, rolled)
    graph.output = total
    return graph


FIVE_POINT = [((1,), (0,)), ((-1,), (0,)), ((1,), (1,)), ((-1,), (1,))]


def _five_point(u: Array) -> Array:
    total = -4 * u
    for shift, axis in FIVE_POINT:
        total = total + np.roll(u, shift, axis)
    return total


def test_a_roll_stencil_is_one_kernel_reading_its_input_in_place() -> None:
    u = _RNG.standard_normal((6, 7))
    compiled = compile_graph(_roll_graph(u, FIVE_POINT), options={"graph_cache": False})
    assert compiled.extern_ops == []
    assert compiled.kernel_count == 1
    assert "ModularIndexing" in str(compiled.schedule)
    np.testing.assert_array_equal(compiled.fn(u), _five_point(u))


@pytest.mark.parametrize(
    "make",
    [
        lambda: _RNG.standard_normal((5, 4)),
        lambda: np.asfortranarray(_RNG.standard_normal((5, 4))),
        lambda: _RNG.standard_normal((10, 8))[::-2, ::2],
        lambda: _RNG.standard_normal((1, 3)),
    ],
    ids=["c", "fortran", "negative_stride", "one_row"],
)
def test_rolls_match_numpy(make: Any) -> None:
    u = make()
    rolls = [((7, -9), (0, 1)), ((0,), (1,)), ((-13,), (0,))]
    compiled = compile_graph(_roll_graph(u, rolls), options={"graph_cache": False})
    want = -3 * u
    for shift, axis in rolls:
        want = want + np.roll(u, shift, axis)
    np.testing.assert_array_equal(compiled.fn(u), want)


def test_a_rolled_output_has_numpys_layout() -> None:
    # np.roll writes into empty_like(x): a Fortran input gives a Fortran result.
    u = np.asfortranarray(_RNG.standard_normal((4, 3)))
    graph = Graph()
    graph.output = graph.call(
        get_op("roll"), graph.placeholder("u", meta_of(u)), shift=(1,), axis=(1,)
    )
    got = compile_graph(graph, options={"graph_cache": False}).fn(u)
    want = np.roll(u, 1, 1)
    np.testing.assert_array_equal(got, want)
    assert got.strides == want.strides
