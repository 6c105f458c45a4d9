"""The light lowering: index algebra on ints and `AffineSize`, spelled as sympy spells it,
and its fall back to sympy where a graph needs it (same C either way)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import numpy as np
import pytest
import sympy
from hypothesis import example, given, settings
from hypothesis import strategies as st

import numpile_runtime as rt
from numpile_capture import capture_function
from numpile_guards import AffineSize, NeedsSympy, light_sizes
from numpile_inductor import generated_source, index
from numpile_inductor.light_lowering import sympy as lazy_sympy

# Loop variables, a size and stride symbols, with the assumptions the lowering gives them.
_INDEX_NAMES = ("x0", "x1", "r0", "s0")
_STRIDE_NAMES = ("buf0_s0", "buf0_s1", "arg_s0")
_coefficients = st.one_of(
    st.integers(-5, 5), st.sampled_from([2**31 - 1, 2**31, -(2**31), 2**40, -(2**33) - 7])
)
_affine = st.tuples(_coefficients, st.dictionaries(st.sampled_from(_INDEX_NAMES), _coefficients))
_stride = st.one_of(st.integers(-3, 8), st.sampled_from(_STRIDE_NAMES))


def _sympy_symbol(name: str) -> Any:
    if name[0] in "xr":
        return sympy.Symbol(name, integer=True, nonnegative=True)
    if name[0] == "s":
        return sympy.Symbol(name, integer=True, positive=True)
    return sympy.Symbol(name, integer=True)


def _both(term: tuple[int, dict[str, int]]) -> tuple[Any, Any]:
    # One affine index as the light lowering and as the sympy lowering hold it.
    constant, coefficients = term
    light = AffineSize.of(constant, coefficients)
    heavy = sympy.Integer(constant) + sum(
        (c * _sympy_symbol(name) for name, c in coefficients.items()), sympy.Integer(0)
    )
    return light, heavy


def _stride_both(stride: int | str) -> tuple[Any, Any]:
    if isinstance(stride, int):
        return stride, sympy.Integer(stride)
    return AffineSize.symbol(stride), _sympy_symbol(stride)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(_affine, _stride), min_size=1, max_size=3))
@example([((1, {"x0": -1}), 1)])  # `1 - x0`: sympy puts the number first
@example([((5, {"x0": -2}), 1)])  # `5 - 2*x0`
@example([((0, {"x0": -1}), "buf0_s0"), ((3, {}), 1)])  # `-buf0_s0*x0 + 3`: not first
@example([((-(2**31), {"s0": 1, "x1": -(2**31)}), 1)])  # long long literals
def test_light_c_spelling_is_sympy_s(dims: list[tuple[Any, int | str]]) -> None:
    indices = [_both(term) for term, _ in dims]
    strides = [_stride_both(stride) for _, stride in dims]
    want = index.c_offset([h for _, h in indices], [h for _, h in strides])
    assert index.c_index(indices[0][1]) == index.c_index(indices[0][0])
    with light_sizes():
        got = index.c_offset([light for light, _ in indices], [light for light, _ in strides])
    assert got == want


@settings(max_examples=30, deadline=None)
@given(_affine, _affine, st.sampled_from(_INDEX_NAMES))
def test_light_index_helpers_agree_with_sympy(
    term: tuple[int, dict[str, int]], other: tuple[int, dict[str, int]], name: str
) -> None:
    light, heavy = _both(term)
    light_other, heavy_other = _both(other)
    symbol = _sympy_symbol(name)
    replaced = index.replace_symbols(light, {AffineSize.symbol(name): light_other})
    assert str(replaced) == str(index.replace_symbols(heavy, {symbol: heavy_other}))
    assert index.coefficient(light, AffineSize.symbol(name)) == index.coefficient(heavy, symbol)
    assert sorted(map(str, index.free_symbols(light))) == sorted(
        map(str, index.free_symbols(heavy))
    )


def test_a_light_lowering_refuses_sympy_even_where_another_thread_loaded_it() -> None:
    assert lazy_sympy.Integer(3) == 3
    with light_sizes():
        assert index.loop_var(1) == AffineSize.symbol("x1")
        assert index.index_int(0) == 0
        with pytest.raises(NeedsSympy):
            lazy_sympy.Integer(0)
        with pytest.raises(NeedsSympy):
            index.unflatten_index(index.loop_var(0), (2, 3))
        with pytest.raises(NeedsSympy):
            index.c_offset([index.loop_var(0) * index.loop_var(1)], [1])


def _light_graph(fn: Any, *args: Any) -> Any:
    with light_sizes():
        return capture_function(fn, args, {}).graph


def test_a_graph_that_needs_sympy_falls_back_to_the_same_c() -> None:
    # A reshape of a transposed view indexes with FloorDiv and ModularIndexing.
    def flat_of_transpose(x: Any) -> Any:
        return np.sin(x.T.reshape(-1)) + 1.0

    graph = _light_graph(flat_of_transpose, np.ones((3, 4)))
    before = rt.counters().get("inductor_light_lowering_fallback", 0)
    light = generated_source(graph)
    assert rt.counters().get("inductor_light_lowering_fallback", 0) == before + 1
    assert light == generated_source(graph, light=False)


def test_a_static_graph_lowers_light_to_the_same_c() -> None:
    def chain(x: Any, y: Any) -> Any:
        return np.tanh(x[1:, ::2] * 2.0 + y.sum(axis=0)) - x[:-1, 1::2]

    graph = _light_graph(chain, np.ones((5, 6)), np.ones((3, 3)))
    before = rt.counters().get("inductor_light_lowering_fallback", 0)
    light = generated_source(graph)
    assert rt.counters().get("inductor_light_lowering_fallback", 0) == before
    assert light == generated_source(graph, light=False)


def test_importing_the_c_code_generator_imports_no_sympy() -> None:
    modules = [
        "numpile_inductor",
        "numpile_inductor.backend",
        "numpile_inductor.lowering",
        "numpile_inductor.scheduler",
        "numpile_inductor.codegen.c.wrapper",
    ]
    program = f"import sys\nfor m in {modules!r}: __import__(m)\nprint('sympy' in sys.modules)"
    run = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "False"
