"""Pointwise kernels loop in the memory order of their arrays (`codegen/memory_order.py`):
the smallest stride innermost, the outermost loop parallel, C order where the arrays are
C-contiguous or disagree. Values, dtypes and layouts match NumPy's (order='K' results)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from numpile_capture import Graph, get_op, meta_of, run_graph
from numpile_inductor import compile_graph


def _chain(g: Graph, a: Any, *rest: Any) -> Any:
    scaled = g.call(get_op("add"), g.call(get_op("multiply"), a, 2.0), 1.0)
    for other in rest:
        scaled = g.call(get_op("subtract"), scaled, other)
    return g.call(get_op("sqrt"), g.call(get_op("absolute"), scaled))


def _compile(*groups: tuple[np.ndarray[Any, Any], ...]) -> tuple[Any, list[Any], list[Any]]:
    # (compiled graph, its results, NumPy's results): one element-wise chain per group of
    # inputs, all in one module (one build); chains of different shapes are kernels of
    # their own (`kernel0`, `kernel1`, ... in the groups' order).
    graph = Graph()
    inputs = [x for group in groups for x in group]
    nodes = iter([graph.placeholder(f"in{i}", meta_of(x)) for i, x in enumerate(inputs)])
    graph.output = tuple(_chain(graph, *(next(nodes) for _ in group)) for group in groups)
    compiled = compile_graph(graph)
    return compiled, list(compiled.fn(*inputs)), list(run_graph(graph, inputs))


def _outer_loop(source: str, kernel: str = "kernel0") -> str:
    # The loop variable of the fast copy's chunked (outermost, parallel) loop.
    fast = source[source.index(f"static int {kernel}(") :]
    found = re.search(r"for \(int64_t (x\d+) = \1_lo;", fast)
    assert found is not None
    return found.group(1)


def _same_as_numpy(got: np.ndarray[Any, Any], want: np.ndarray[Any, Any]) -> None:
    np.testing.assert_allclose(got, want, rtol=1e-15)
    assert got.dtype == want.dtype
    assert got.strides == want.strides


def _block(shape: tuple[int, ...], seed: int = 0) -> np.ndarray[Any, Any]:
    return np.random.default_rng(seed).standard_normal(shape)


def test_a_fortran_input_loops_over_columns_outermost() -> None:
    a = np.asfortranarray(_block((37, 41)))
    compiled, [got], [want] = _compile((a,))
    assert _outer_loop(compiled.source) == "x1"
    assert "for (int64_t x0 = 0; x0 < n0; x0++)" in compiled.source
    _same_as_numpy(got, want)
    assert got.flags.f_contiguous and not got.flags.c_contiguous


def test_c_mixed_and_reversed_inputs_keep_c_order_as_numpy_does() -> None:
    # C inputs (one broadcast); a C and a Fortran input (NumPy: C order where operands
    # disagree); reversed axes (NumPy's result is C-ordered, its strides positive).
    fortran = np.asfortranarray(_block((37, 41), 1))
    compiled, got, want = _compile(
        (_block((37, 41)), _block((41,), 1)),
        (_block((37, 41)), fortran),
        (_block((37, 41))[::-1, ::-1], fortran[::-1]),
    )
    # The three chains share their ranges: one fused kernel, in C order.
    assert _outer_loop(compiled.source) == "x0"
    assert "for (int64_t x1 = 0; x1 < n1; x1++)" in compiled.source
    for g, w in zip(got, want, strict=True):
        _same_as_numpy(g, w)
        assert g.flags.c_contiguous


def test_transposed_inputs_loop_in_their_memory_order() -> None:
    block = _block((6, 7, 8))
    groups = [(block.transpose(axes),) for axes in ((2, 0, 1), (1, 2, 0), (0, 2, 1))]
    compiled, got, want = _compile(*groups)
    outer = [_outer_loop(compiled.source, f"kernel{k}") for k in range(3)]
    assert outer == ["x1", "x2", "x0"]
    for g, w in zip(got, want, strict=True):
        _same_as_numpy(g, w)


def test_the_generic_copy_stays_correct_for_other_strides() -> None:
    # Compiled for a Fortran input, called with a C-order and a strided one: the kernel's
    # generic copy reads any strides, in the compiled loop order.
    compiled, _, _ = _compile((np.asfortranarray(_block((37, 41))),))
    for other in (_block((37, 41), 2), _block((74, 82), 3)[::2, ::-2]):
        [got] = compiled.fn(other)
        np.testing.assert_allclose(got, np.sqrt(np.abs(other * 2.0 + 1.0)), rtol=1e-15)


def test_an_intermediate_is_laid_out_as_numpy_lays_its_node_out() -> None:
    # exp(a) feeds a reduction and a pointwise kernel, so it is a buffer of its own: laid
    # out in Fortran order like NumPy's, both pointwise kernels read and write it along
    # columns, and the column sums read it with unit stride.
    a = np.asfortranarray(_block((37, 41)))
    graph = Graph()
    x = graph.placeholder("in0", meta_of(a))
    e = graph.call(get_op("exp"), x)
    graph.output = graph.call(get_op("subtract"), e, graph.call(get_op("sum"), e, axis=(0,)))
    compiled = compile_graph(graph)
    assert "kernel2" in compiled.source
    assert _outer_loop(compiled.source, "kernel0") == "x1"
    assert _outer_loop(compiled.source, "kernel2") == "x1"
    _same_as_numpy(compiled.fn(a), run_graph(graph, [a]))


def _bits_equal(got: np.ndarray[Any, Any], want: np.ndarray[Any, Any]) -> bool:
    same = np.ascontiguousarray(got).view(np.uint8) == np.ascontiguousarray(want).view(np.uint8)
    return bool(same.all()) and got.strides == want.strides


def test_reductions_add_in_numpys_order_of_the_reduced_array() -> None:
    # A Fortran-order (37, 60, 45) block: NumPy walks axis 0 innermost. Summed over axis 2
    # or 1, a kept axis is innermost: NumPy adds the reduced elements one by one per
    # output element, so the kernel accumulates columns (x0 the column loop) in that
    # order, bit for bit. Summed over axis 0, the reduced axis is innermost: a pairwise
    # row over unit stride, the kept loops in memory order (x1 outermost).
    a = np.asfortranarray(_block((37, 60, 45)))
    graph = Graph()
    x = graph.placeholder("in0", meta_of(a))
    sums = [graph.call(get_op("sum"), x, axis=(axis,)) for axis in (2, 1, 0)]
    graph.output = tuple(sums)
    compiled = compile_graph(graph)
    source = compiled.source
    for kernel in ("kernel0", "kernel1"):
        body = source[source.index(f"static int {kernel}(") :]
        assert "for (int64_t x0 = xb; x0 < xe; x0++)" in body[: body.index("return np_fp")]
    assert _outer_loop(source, "kernel2") == "x1"
    for got, want in zip(compiled.fn(a), run_graph(graph, [a]), strict=True):
        assert _bits_equal(got, want)


def test_column_reductions_form_no_row_group() -> None:
    # x - x.max(axis=1, keepdims=True) over a Fortran-order array: NumPy adds each row's
    # sum column by column, which a row group (one row per thread) cannot: the kernels stay
    # apart, and the sums keep NumPy's bits.
    a = np.asfortranarray(_block((40, 90)))
    graph = Graph()
    x = graph.placeholder("in0", meta_of(a))
    peak = graph.call(get_op("max"), x, axis=(1,), keepdims=True)
    shifted = graph.call(get_op("subtract"), x, peak)
    squares = graph.call(get_op("multiply"), shifted, shifted)
    graph.output = graph.call(get_op("sum"), squares, axis=(1,))
    compiled = compile_graph(graph)
    assert "part0" not in compiled.source
    assert _bits_equal(compiled.fn(a), run_graph(graph, [a]))
