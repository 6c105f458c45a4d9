"""Kernels that read scalar inputs from memory (`TritonOptions.scalars_in_memory`), interpreted.

The CUDA-graph modes compile every kernel kind (pointwise, reduction, row group, split
reduction, matmul template epilogue) with pointer scalars, loaded once per program, so that
a recorded graph replays with new numbers. Under `TRITON_INTERPRET=1` the runner packs the
numbers into a host buffer the kernels point into; results must equal NumPy's, dtypes
included (NEP 50: a Python float with float32 arrays stays float32), for every value.
Run alone or in the `tests-triton-interpret` nox session (the interpreter is chosen at import).
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
import pytest
import triton_interpreter  # noqa: F401 - first: it chooses Triton's interpreter

from numpile_capture import Graph, get_op, meta_of, run_graph
from numpile_inductor import TritonOptions
from numpile_inductor.codegen.triton.backend import compile_triton, scalar_positions

_RNG = np.random.default_rng(29)
_MEMORY = TritonOptions.from_mode("reduce-overhead", interpret=True)
# Small tiles: several programs per kernel, so each program loads the scalars itself.
_SMALL = attrs.evolve(
    _MEMORY, max_xblock=8, max_rblock=16, max_tile=64, row_tile=64, split_programs=8
)


def _graph(inputs: list[Any], build: Any) -> Graph:
    graph = Graph()
    nodes = [graph.placeholder(f"in{i}", meta_of(x)) for i, x in enumerate(inputs)]
    graph.output = build(graph, *nodes)
    return graph


def _op(g: Graph, name: str, *args: Any, **kwargs: Any) -> Any:
    return g.call(get_op(name), *args, **kwargs)


def _same(got: Any, want: Any) -> None:
    for g_, w_ in zip(got, want, strict=True):
        assert type(g_) is type(w_) and g_.dtype == w_.dtype and np.shape(g_) == np.shape(w_)
        np.testing.assert_allclose(g_, w_, rtol=1e-6 if g_.dtype == np.float32 else 1e-13)


def _mixed(g: Graph, a: Any, k: Any, t: Any, n: Any, flag: Any, strong: Any) -> Any:
    scaled = _op(g, "add", _op(g, "multiply", a, t), 1.0)  # float32 * weak float: float32
    shifted = _op(g, "add", k, n)
    masked = _op(g, "logical_and", _op(g, "greater", a, t), flag)
    total = _op(g, "sum", _op(g, "multiply", a, strong), axis=1)  # strong float64
    return scaled, shifted, masked, total


def test_pointer_scalars_match_numpy_for_every_value_and_dtype() -> None:
    x = _RNG.normal(size=(6, 5)).astype(np.float32)
    k = np.arange(30, dtype=np.int64).reshape(6, 5)
    first: list[Any] = [x, k, 0.1 + 2**-40, 2**40 + 1, True, np.float64(1.5)]
    graph = _graph(first, _mixed)
    compiled = compile_triton(graph, options=_SMALL)
    assert compiled.module is not None
    source = compiled.source
    assert "p_in2 = tl.load(p_in2_ptr)" in source and "p_in3 = tl.load(p_in3_ptr)" in source
    assert "do_not_specialize" not in source and 'p_in2: "float64"' not in source
    assert all(kernel.scalars_in_memory for kernel in compiled.module.kernels if kernel.scalars)
    for values in (
        first,
        [x, k, -3.5, 1, False, np.float64(-0.0)],
        [x, k, np.inf, -(2**62), True, np.float64(np.nan)],
    ):
        with np.errstate(all="ignore"):
            _same(compiled.fn(*values), run_graph(graph, values))


def _softmax_with_temperature(g: Graph, x: Any, t: Any) -> Any:
    scaled = _op(g, "divide", x, t)
    e = _op(g, "exp", _op(g, "subtract", scaled, _op(g, "max", scaled, axis=1, keepdims=True)))
    return (_op(g, "divide", e, _op(g, "sum", e, axis=1, keepdims=True)),)


def _split_sum(g: Graph, x: Any, t: Any) -> Any:
    return (_op(g, "sum", _op(g, "multiply", x, t), axis=1),)


def _matmul_epilogue(g: Graph, x: Any, w: Any, t: Any) -> Any:
    return (_op(g, "maximum", _op(g, "multiply", _op(g, "matmul", x, w), t), 0.0),)


@pytest.mark.parametrize(
    ("build", "shapes", "options", "kind"),
    [
        (_softmax_with_temperature, [(5, 12)], _SMALL, "rows"),
        (_split_sum, [(2, 400)], _SMALL, "split"),
        (_matmul_epilogue, [(9, 7), (7, 5)], attrs.evolve(_MEMORY, gemm_backends="triton"), "mm"),
    ],
    ids=["row-group", "split-reduction", "matmul-epilogue"],
)
def test_every_kernel_kind_reads_its_scalars_from_memory(
    build: Any, shapes: list[tuple[int, ...]], options: TritonOptions, kind: str
) -> None:
    arrays = [_RNG.normal(size=shape) for shape in shapes]
    graph = _graph([*arrays, 0.5], build)
    compiled = compile_triton(graph, options=options)
    assert compiled.module is not None
    kernels = [k for k in compiled.module.kernels if k.scalars]
    assert kernels and all(k.scalars_in_memory for k in kernels)
    assert all("= tl.load(p_in" in k.source for k in kernels)
    assert any(
        {"rows": k.rows, "split": k.split > 1, "mm": k.template == "mm"}[kind] for k in kernels
    )
    for t in (0.5, 3.0, -0.25):
        _same(compiled.fn(*arrays, t), run_graph(graph, [*arrays, t]))


def test_numbers_only_kernels_read_go_through_memory_others_key_by_value() -> None:
    x = _RNG.normal(size=(4,))

    def build(g: Graph, a: Any, t: Any, s: Any, strong: Any, flag: Any) -> Any:
        scaled = _op(g, "multiply", _op(g, "add", a, t), strong)
        # A kernel reads the Python bool too (NumPy's bool under NEP 50, lowered since the
        # fourth unseen set; an extern call before).
        flipped = _op(g, "logical_xor", _op(g, "greater", a, 0.0), flag)
        return scaled, flipped, s  # `s` is an output too

    inputs: list[Any] = [x, 0.5, 2.0, np.float64(3.0), True]
    graph = _graph(inputs, build)
    compiled = compile_triton(graph, options=_MEMORY)
    assert compiled.module is not None
    program = compiled.fn.program  # type: ignore[attr-defined]
    by_value, in_memory = scalar_positions(program, compiled.module, _MEMORY)
    assert in_memory == {1: np.dtype("float64"), 3: np.dtype("float64"), 4: np.dtype("bool")}
    assert by_value == {2}
    assert compiled.fn.memory_scalars == ("in1", "in4")  # type: ignore[attr-defined]
    plain = attrs.evolve(_MEMORY, scalars_in_memory=False)
    assert scalar_positions(program, compiled.module, plain) == (frozenset({1, 2, 4}), {})
    for values in (inputs, [x, -0.5, 2.0, np.float64(3.0), False]):
        _same(compiled.fn(*values)[:2], run_graph(graph, values)[:2])


def test_numpy_scalar_inputs_of_a_captured_graph_go_through_memory() -> None:
    # Capture reads a NumPy scalar input through `carried_scalar`: the program takes it by
    # value as a scalar of its own dtype, so reduce-overhead keeps it in a device slot (one
    # CUDA graph for every value) instead of keying graphs by it.
    from numpile_capture import capture_function
    from numpile_capture.dynamic_shapes import DynamicPolicy, capturing_with

    def step(x: Any, dt: Any, k: Any) -> Any:
        return x + dt * x, x * k

    x = _RNG.normal(size=(10,)).astype(np.float32)
    with capturing_with(DynamicPolicy(True)):
        graph = capture_function(step, (x, np.float32(0.5), np.int8(3)), {}).graph
    compiled = compile_triton(graph, options=_MEMORY)
    assert compiled.module is not None
    program = compiled.fn.program  # type: ignore[attr-defined]
    kinds = {
        name: (program.buffers[name].kind, program.buffers[name].dtype.name)
        for name in program.inputs
    }
    assert kinds == {
        "x": ("input", "float32"),
        "dt": ("scalar", "float32"),
        "k": ("scalar", "int8"),
    }
    assert scalar_positions(program, compiled.module, _MEMORY)[1] == {
        1: np.dtype("float32"),
        2: np.dtype("int8"),
    }
    for dt, k in ((0.5, 3), (-0.25, -7), (3.0, 127)):
        values = [x, np.float32(dt), np.int8(k)]
        _same(compiled.fn(*values), run_graph(graph, values))
