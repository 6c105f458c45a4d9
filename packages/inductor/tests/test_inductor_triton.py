"""Generated Triton kernels under Triton's CPU interpreter, against NumPy.

Each test builds a graph, compiles it with the Triton backend, runs the
kernels in `TRITON_INTERPRET=1` on NumPy memory (through `numpile_runtime`'s
`KernelArg` adapter) and compares with `run_graph` (NumPy eager).

Tolerances: pointwise kernels call NumPy's own ufuncs under the interpreter
(libdevice on a GPU) and are compared exactly, except where the interpreter
computes a float32 intermediate differently (none here). Reductions reduce
tiles as a tree, not in NumPy's pairwise order: float sums and means within
rtol = 8 * eps * log2(n) (the C backend's documented bound), max/min/any/all
and integer sums exactly.

Skipped when triton is not installed. The interpreter is switched on before
triton is imported (`triton_interpreter.py`: triton reads the variable at import),
so this module is best run in its own process (nox session `tests-triton-interpret`);
under a process that already imported triton without it, the module skips.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np
import pytest
import triton_interpreter  # noqa: F401 - first: it chooses Triton's interpreter
from hypothesis import given, settings
from hypothesis import strategies as st

import numpile_runtime as rt
from numpile_capture import Graph, get_op, meta_of, run_graph
from numpile_inductor import TritonOptions
from numpile_inductor.codegen.triton.backend import compile_triton
from numpile_inductor.codegen.triton.kernel import fit_blocks
from numpile_inductor.codegen.triton.runner import TritonRunner
from numpile_inductor.loop_ir import ExternCall

_RNG = np.random.default_rng(11)
# Small tiles force several program instances and the looped reduction path.
_SMALL = TritonOptions(
    max_xblock=64, max_rblock=32, max_tile=256, looped_rblock=32, split_programs=16
)


def _graph(inputs: list[Any], build: Any) -> Graph:
    graph = Graph()
    nodes = [graph.placeholder(f"in{i}", meta_of(x)) for i, x in enumerate(inputs)]
    graph.output = build(graph, *nodes)
    return graph


def _op(g: Graph, name: str, *args: Any, **kwargs: Any) -> Any:
    return g.call(get_op(name), *args, **kwargs)


def _run(inputs: list[Any], build: Any, options: TritonOptions | None = None) -> tuple[Any, Any]:
    graph = _graph(inputs, build)
    compiled = compile_triton(graph, options=options)
    assert compiled.fallback_reason == ""
    assert compiled.kernel_count >= 1
    with np.errstate(all="ignore"):
        want = run_graph(graph, inputs)
        got = compiled.fn(*inputs)
    return got, want


def _same(got: Any, want: Any) -> None:
    assert type(got) is type(want), (type(got), type(want))
    assert got.dtype == want.dtype and np.shape(got) == np.shape(want)
    np.testing.assert_array_equal(got, want)


def _close(got: Any, want: Any, n: int, scale: Any = None) -> None:
    # `scale`: what the rounding error of a sum of n terms is relative to, the sum of their
    # magnitudes (a sum that cancels to near zero is no more exact than its terms are big);
    # by default the result itself.
    assert type(got) is type(want), (type(got), type(want))
    assert got.dtype == want.dtype and np.shape(got) == np.shape(want)
    rtol = 8 * float(np.finfo(want.dtype).eps) * max(1.0, math.log2(max(n, 2)))
    if scale is None:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)
        return
    ok = np.abs(got - want) <= rtol * (np.abs(scale) + 1)
    assert np.all(ok | (np.isnan(got) & np.isnan(want))), (got, want)


_FLOATS = ["float32", "float64"]


@pytest.mark.parametrize("dtype", _FLOATS)
@pytest.mark.parametrize("options", [None, _SMALL], ids=["one-block", "small-blocks"])
def test_pointwise_chain_with_broadcasting(dtype: str, options: TritonOptions | None) -> None:
    a = _RNG.normal(size=(37, 5)).astype(dtype)
    b = _RNG.normal(size=5).astype(dtype)

    def build(g: Graph, x: Any, y: Any) -> Any:
        t = _op(g, "multiply", _op(g, "sin", x), y)
        return _op(g, "add", _op(g, "exp", t), 1.5)

    _same(*_run([a, b], build, options))


@pytest.mark.parametrize("dtype", _FLOATS)
def test_float_ops_keep_numpy_rules_for_nan_zero_and_signs(dtype: str) -> None:
    a = (_RNG.normal(size=64) * 10).astype(dtype)
    b = (_RNG.normal(size=64) * 3).astype(dtype)
    a[:6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 7.0]
    b[:8] = [1.0, 2.0, np.nan, -0.0, 0.0, -2.0, 0.0, -3.0]

    def build(g: Graph, x: Any, y: Any) -> Any:
        names = ["maximum", "minimum", "fmax", "fmin", "floor_divide", "remainder", "divide"]
        binary = [_op(g, name, x, y) for name in names]
        unary = [_op(g, name, x) for name in ["sign", "isnan", "isinf", "signbit", "absolute"]]
        return (*binary, *unary, _op(g, "power", _op(g, "absolute", x), y))

    got, want = _run([a, b], build)
    assert len(got) == len(want)
    for g_, w_ in zip(got, want, strict=True):
        _same(g_, w_)


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8", "uint32"])
def test_integer_ops_wrap_and_divide_like_numpy(dtype: str) -> None:
    info = np.iinfo(dtype)
    a = _RNG.integers(info.min, info.max, size=50, dtype=dtype, endpoint=True)
    b = _RNG.integers(info.min, info.max, size=50, dtype=dtype, endpoint=True)
    b[:3] = [0, 1, 3]
    if info.min < 0:
        a[3], b[3] = info.min, -1
        b[4] = -7

    def build(g: Graph, x: Any, y: Any) -> Any:
        names = ["add", "multiply", "floor_divide", "remainder", "maximum", "bitwise_xor"]
        return (*tuple(_op(g, name, x, y) for name in names), _op(g, "negative", x))

    got, want = _run([a, b], build)
    for g_, w_ in zip(got, want, strict=True):
        _same(g_, w_)


def test_bool_inputs_casts_and_where() -> None:
    a = _RNG.normal(size=(6, 7))
    mask = a > 0.2

    def build(g: Graph, x: Any, m: Any) -> Any:
        chosen = _op(g, "where", m, x, _op(g, "negative", x))
        count = _op(g, "astype", _op(g, "logical_not", m), dtype=np.dtype("float32"))
        return chosen, _op(g, "add", count, chosen), _op(g, "logical_and", m, _op(g, "less", x, 1))

    got, want = _run([a, mask], build)
    for g_, w_ in zip(got, want, strict=True):
        _same(g_, w_)


def test_non_contiguous_negative_stride_and_python_scalar_inputs() -> None:
    base = _RNG.normal(size=(12, 10))
    view = base[::-2, 1::3]  # negative and non-unit strides
    fortran = np.asfortranarray(_RNG.normal(size=(6, 4)))

    def build(g: Graph, x: Any, y: Any, s: Any) -> Any:
        return _op(g, "multiply", _op(g, "add", x, s), 2.0), _op(g, "subtract", y, s)

    got, want = _run([view, fortran, 0.1 + 2**-40], build)
    for g_, w_ in zip(got, want, strict=True):
        _same(g_, w_)


def test_scalar_inputs_pass_by_value_with_their_dtype() -> None:
    # Each would be wrong as Triton's default for a Python number: float64 precision (not
    # float32), an int past int32, a bool; one kernel is reused across values.
    x = _RNG.normal(size=(5, 3))
    n = np.arange(15, dtype=np.int64).reshape(5, 3)

    def build(g: Graph, a: Any, k: Any, lr: Any, big: Any, flag: Any) -> Any:
        scaled = _op(g, "multiply", a, lr)
        shifted = _op(g, "add", k, big)
        return scaled, shifted, _op(g, "logical_and", _op(g, "greater", a, 0.0), flag)

    inputs: list[Any] = [x, n, 0.1 + 2**-40, 2**40 + 1, True]
    graph = _graph(inputs, build)
    compiled = compile_triton(graph)
    assert 'p_in2: "float64"' in compiled.source and 'p_in3: "int64"' in compiled.source
    assert "do_not_specialize=" in compiled.source
    for values in (inputs, [x, n, -3.5, 1, False], [x, n, 1e300, -(2**62), True]):
        got, want = compiled.fn(*values), run_graph(graph, values)
        for g_, w_ in zip(got, want, strict=True):
            _same(g_, w_)


@pytest.mark.parametrize("dtype", _FLOATS)
@pytest.mark.parametrize("options", [None, _SMALL], ids=["persistent", "looped"])
def test_row_softmax(dtype: str, options: TritonOptions | None) -> None:
    x = (_RNG.normal(size=(19, 100)) * 4).astype(dtype)

    def build(g: Graph, a: Any) -> Any:
        peak = _op(g, "max", a, axis=(1,), keepdims=True)
        e = _op(g, "exp", _op(g, "subtract", a, peak))
        return _op(g, "divide", e, _op(g, "sum", e, axis=(1,), keepdims=True))

    _close(*_run([x], build, options), 100)


@pytest.mark.parametrize("dtype", _FLOATS)
@pytest.mark.parametrize("options", [None, _SMALL], ids=["persistent", "looped"])
def test_layernorm(dtype: str, options: TritonOptions | None) -> None:
    x = _RNG.normal(size=(20, 96)).astype(dtype)
    gamma = _RNG.normal(size=96).astype(dtype)
    beta = _RNG.normal(size=96).astype(dtype)

    def build(g: Graph, a: Any, w: Any, b: Any) -> Any:
        mean = _op(g, "mean", a, axis=1, keepdims=True)
        centered = _op(g, "subtract", a, mean)
        var = _op(g, "mean", _op(g, "multiply", centered, centered), axis=1, keepdims=True)
        scale = _op(g, "sqrt", _op(g, "add", var, 1e-5))
        return _op(g, "add", _op(g, "multiply", _op(g, "divide", centered, scale), w), b)

    # the normalized values amplify the sum's rounding by ~1/std: a few more ulps
    got, want = _run([x, gamma, beta], build, options)
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-5)
    assert got.dtype == want.dtype


@pytest.mark.parametrize("dtype", _FLOATS)
@pytest.mark.parametrize("options", [None, _SMALL], ids=["persistent", "looped"])
def test_full_reductions_give_numpy_scalars(dtype: str, options: TritonOptions | None) -> None:
    x = _RNG.normal(size=(33, 17)).astype(dtype)
    x[4, 5] = np.nan

    def build(g: Graph, a: Any) -> Any:
        clean = _op(g, "where", _op(g, "isnan", a), 0.0, a)
        return (
            _op(g, "sum", clean),
            _op(g, "mean", clean),
            _op(g, "max", a),
            _op(g, "min", clean),
            _op(g, "any", _op(g, "greater", a, 2.0)),
        )

    got, want = _run([x], build, options)
    _close(got[0], want[0], x.size)
    _close(got[1], want[1], x.size)
    for g_, w_ in zip(got[2:], want[2:], strict=True):
        _same(g_, w_)


@pytest.mark.parametrize("options", [None, _SMALL], ids=["persistent", "looped"])
def test_axis_reductions_of_integers_and_bools(options: TritonOptions | None) -> None:
    x = _RNG.integers(-1000, 1000, size=(9, 70), dtype=np.int32)

    def build(g: Graph, a: Any) -> Any:
        return (
            _op(g, "sum", a, axis=0),
            _op(g, "max", a, axis=1),
            _op(g, "prod", _op(g, "remainder", a, 3), axis=1),
            _op(g, "all", _op(g, "greater", a, -990), axis=1),
        )

    got, want = _run([x], build, options)
    for g_, w_ in zip(got, want, strict=True):
        _same(g_, w_)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_few_long_rows_split_into_two_kernels(dtype: str) -> None:
    # x.sum() and per-row reductions of 3 rows: each row is cut into chunks reduced by
    # their own programs (stage 1), then the partials are combined (stage 2).
    x = (_RNG.normal(size=(3, 40, 25)) * 100).astype(dtype)
    if dtype != "int64":
        x[1, 7, 3] = np.nan  # max/min propagate it through the partials

    def build(g: Graph, a: Any) -> Any:
        flat = _op(g, "absolute", a)
        return (
            _op(g, "sum", flat),
            _op(g, "max", a, axis=(1, 2)),
            _op(g, "min", a, axis=(1, 2)),
            _op(g, "all", _op(g, "less", a, 250), axis=(1, 2)),
            _op(g, "any", _op(g, "greater", a, 280)),
            _op(g, "prod", _op(g, "sign", a), axis=(1, 2)),
        ) + ((_op(g, "mean", a, axis=(1, 2)),) if dtype != "int64" else ())

    graph = _graph([x], build)
    compiled = compile_triton(graph, options=_SMALL)
    assert compiled.module is not None
    names = [k.name for k in compiled.module.kernels]
    assert any(name.endswith("_split") for name in names), names
    with np.errstate(all="ignore"):
        got, want = compiled.fn(x), run_graph(graph, [x])
    for i, (g_, w_) in enumerate(zip(got, want, strict=True)):
        if dtype.startswith("float") and i in (0, 6):
            magnitude = np.abs(x).sum() if i == 0 else np.abs(x).mean(axis=(1, 2))
            _close(g_, w_, 1000, scale=magnitude)
        else:
            _same(g_, w_)
    unsplit = compile_triton(graph, options=attrs.evolve(_SMALL, split_reductions=False))
    assert unsplit.module is not None
    assert not any(k.name.endswith("_split") for k in unsplit.module.kernels)


def test_few_columns_summed_over_many_rows_split_chunk_major() -> None:
    x = _RNG.normal(size=(3000, 3))
    graph = _graph([x], lambda g, a: (_op(g, "sum", a, axis=0), _op(g, "max", a, axis=0)))
    compiled = compile_triton(graph, options=_SMALL)
    assert compiled.module is not None
    (first,) = compiled.module.kernels
    assert first.name.endswith("_split") and first.outer and "chunk-major" in first.source
    got, want = compiled.fn(x), run_graph(graph, [x])
    _close(got[0], want[0], 3000, scale=np.abs(x).sum(axis=0))
    _same(got[1], want[1])


@pytest.mark.parametrize("order", ["C", "F"])
def test_outer_reductions_tile_along_the_contiguous_kept_axis(order: str) -> None:
    # Summing over the slow axis (axis 0 of a C array, axis 1 of an F array) loops over
    # short row blocks with wide column blocks; every sum still matches NumPy.
    x = np.asarray(_RNG.normal(size=(70, 45)), order=order)
    axis = 0 if order == "C" else 1
    graph = _graph([x], lambda g, a: _op(g, "sum", a, axis=axis))
    compiled = compile_triton(graph, options=attrs.evolve(_SMALL, split_reductions=False))
    assert compiled.module is not None and compiled.module.kernels[0].outer
    kernel = compiled.module.kernels[0]
    assert kernel.xblock >= kernel.rblock  # wide along the kept axis
    _close(compiled.fn(x), run_graph(graph, [x]), x.shape[axis])


@pytest.mark.parametrize("layout", ["fortran", "transposed", "C"])
def test_outputs_keep_numpys_layout_and_lanes_walk_memory_order(layout: str) -> None:
    # The runner allocates kernel buffers in their node's layout (order='K': a Fortran or
    # transposed input's element-wise result and reductions, a keepdims axis in its place
    # in memory), and a pointwise kernel's fastest lane variable is the innermost axis in
    # memory: x0 for Fortran order, x1 for the transpose (7, 5, 6) -> (5, 6, 7).
    block = _RNG.normal(size=(7, 5, 6))
    x = {
        "fortran": np.asfortranarray(block.transpose(1, 2, 0)),
        "transposed": block.transpose(1, 2, 0),
        "C": np.ascontiguousarray(block.transpose(1, 2, 0)),
    }[layout]

    def build(g: Graph, a: Any) -> Any:
        scaled = _op(g, "add", _op(g, "multiply", a, 2.0), 1.0)
        return (
            scaled,
            _op(g, "sum", a, axis=(1,)),
            _op(g, "sum", scaled, axis=(0,), keepdims=True),
        )

    graph = _graph([x], build)
    compiled = compile_triton(graph)
    assert compiled.module is not None
    got, want = compiled.fn(x), run_graph(graph, [x])
    for g, w in zip(got, want, strict=True):
        _close(g, w, 7)
        assert g.strides == w.strides
    fastest = {"fortran": "x0", "transposed": "x1", "C": "x2"}[layout]
    pointwise = [k for k in compiled.module.kernels if not k.is_reduction]
    assert f"{fastest} = xindex % (" in pointwise[0].source


def test_matmul_runs_as_an_extern_call_with_a_fused_epilogue() -> None:
    x = _RNG.normal(size=(16, 32)).astype(np.float32)
    w = _RNG.normal(size=(32, 24)).astype(np.float32)
    b = _RNG.normal(size=24).astype(np.float32)

    def build(g: Graph, a: Any, m: Any, v: Any) -> Any:
        return _op(g, "maximum", _op(g, "add", _op(g, "matmul", a, m), v), 0.0)

    graph = _graph([x, w, b], build)
    compiled = compile_triton(graph)
    assert compiled.module is not None
    assert [type(s).__name__ for s in compiled.module.steps] == ["ExternCall", "TritonKernel"]
    _same(compiled.fn(x, w, b), run_graph(graph, [x, w, b]))


_TEMPLATE = TritonOptions.from_mode(None, {"gemm_backends": "triton"}, interpret=True)


@pytest.mark.parametrize("dtype", _FLOATS)
def test_matmul_template_fuses_the_epilogue_and_matches_numpy(dtype: str) -> None:
    # Sizes that fill no tile exactly; w transposed (strided); the product is also returned
    # (stored besides the epilogue), and a second product has no epilogue at all.
    x = _RNG.normal(size=(37, 50)).astype(dtype)
    w = _RNG.normal(size=(70, 50)).astype(dtype)
    b = _RNG.normal(size=70).astype(dtype)

    def build(g: Graph, a: Any, m: Any, v: Any) -> Any:
        product = _op(g, "matmul", a, _op(g, "transpose", m, axes=None))
        hidden = _op(g, "maximum", _op(g, "add", product, v), 0.0)
        return hidden, product, _op(g, "matmul", hidden, m)

    graph = _graph([x, w, b], build)
    compiled = compile_triton(graph, options=_TEMPLATE)
    assert compiled.module is not None
    templates = [k for k in compiled.module.kernels if k.template == "mm"]
    assert len(templates) == 2 and "tl.dot" in templates[0].source
    assert not any(getattr(s, "op_name", "") == "matmul" for s in compiled.module.steps)
    assert "epilogue fuses" in templates[0].source
    got, want = compiled.fn(x, w, b), run_graph(graph, [x, w, b])
    # A dot product of k terms, summed in any order, is within k * eps * (|a| @ |b|) of the
    # exact one (two computations: twice that); the second product also carries the first's
    # difference through its input.
    eps = float(np.finfo(dtype).eps)
    bound = 2 * 50 * eps * (np.abs(x) @ np.abs(w.T))
    for g_, w_ in zip(got, want, strict=True):
        assert g_.dtype == w_.dtype and g_.shape == w_.shape
    assert np.all(np.abs(got[1] - want[1]) <= bound)
    assert np.all(np.abs(got[0] - want[0]) <= bound)
    carried = np.abs(got[0] - want[0]) @ np.abs(w)
    assert np.all(
        np.abs(got[2] - want[2]) <= 2 * 70 * eps * (np.abs(want[0]) @ np.abs(w)) + carried
    )


def test_matmul_with_both_gemm_backends_times_them_and_stores_the_choice(
    caplog: Any, tmp_path: Any
) -> None:
    from numpile_inductor.codegen.triton.matmul import pick_backend

    x = _RNG.normal(size=(20, 30))
    w = _RNG.normal(size=(30, 40))
    graph = _graph([x, w], lambda g, a, m: _op(g, "tanh", _op(g, "matmul", a, m)))
    options = TritonOptions.from_mode("max-autotune-no-cudagraphs", interpret=True)
    assert options.gemm_backends == ("extern", "triton")
    previous = rt.default_cache()
    rt.set_cache_dir(tmp_path)
    try:
        with caplog.at_level("INFO", logger="numpile.inductor.triton"):
            for _ in range(2):  # the second compile finds the stored choice
                compiled = compile_triton(graph, options=options)
                assert compiled.module is not None
                assert [type(s).__name__ for s in compiled.module.steps] == ["MatmulChoice"]
                for _ in range(2):
                    _close(compiled.fn(x, w), np.tanh(x @ w), 30)
        assert caplog.text.count("matmul kernel0_mm") == 1  # timed once, on the first call
        choice = compiled.module.steps[0]

        def template_fails(index: int) -> float:
            if index == 1:
                raise RuntimeError("out of shared memory")
            return 1.0

        assert pick_backend(choice, template_fails, "another device") == 0  # a tie: cuBLAS
        assert pick_backend(choice, lambda i: [3.0, 2.0, 1.0, 2.0, 5.0, 4.0][i], "third") == 2
    finally:
        rt.set_cache_dir(previous.root)


def test_default_mode_times_cublas_against_one_template_tile_on_a_gpu() -> None:
    # The default on a GPU: the first call times cuBLAS (+ its epilogue kernel) against the
    # template in TILES' first shape; max-autotune against every shape; interpreted, cuBLAS.
    from numpile_inductor.codegen.triton.backend import generate_triton
    from numpile_inductor.codegen.triton.matmul import TILES

    x, w, b = _RNG.normal(size=(20, 30)), _RNG.normal(size=(30, 40)), _RNG.normal(size=40)
    graph = _graph(
        [x, w, b],
        lambda g, a, m, v: _op(g, "maximum", _op(g, "add", _op(g, "matmul", a, m), v), 0.0),
    )
    templates = {}
    for mode in (None, "max-autotune"):
        module, _ = generate_triton(graph, TritonOptions.from_mode(mode, interpret=False))
        (choice,) = module.steps
        templates[mode] = len(choice.templates)  # type: ignore[union-attr]
    assert templates == {None: 1, "max-autotune": len(TILES["float64"])}
    module, _ = generate_triton(graph, TritonOptions.from_mode(None, interpret=True))
    assert [type(s).__name__ for s in module.steps] == ["ExternCall", "TritonKernel"]


@pytest.mark.parametrize("dtype", _FLOATS)
def test_every_matmul_template_tile_shape_matches_numpy(dtype: str, monkeypatch: Any) -> None:
    # max-autotune times the template in each tile shape of TILES; force each in turn.
    import numpile_inductor.codegen.triton.runner as runner
    from numpile_inductor.codegen.triton.matmul import TILES

    x = _RNG.normal(size=(37, 50)).astype(dtype)
    w = _RNG.normal(size=(50, 70)).astype(dtype)
    b = _RNG.normal(size=70).astype(dtype)

    def build(g: Graph, a: Any, m: Any, v: Any) -> Any:
        return _op(g, "maximum", _op(g, "add", _op(g, "matmul", a, m), v), 0.0)

    graph = _graph([x, w, b], build)
    options = TritonOptions.from_mode("max-autotune-no-cudagraphs", interpret=True)
    bound = 2 * 50 * float(np.finfo(dtype).eps) * (np.abs(x) @ np.abs(w))
    want = run_graph(graph, [x, w, b])
    for tile in range(len(TILES[dtype])):
        monkeypatch.setattr(runner, "pick_backend", lambda *args, tile=tile: 1 + tile)
        compiled = compile_triton(graph, options=options)
        (choice,) = compiled.module.steps  # type: ignore[union-attr]
        assert len(choice.templates) == len(TILES[dtype])  # type: ignore[union-attr]
        block_m, block_n = TILES[dtype][tile][:2]
        assert f"tl.zeros([{block_m}, {block_n}]" in choice.templates[tile].source  # type: ignore[union-attr]
        got = compiled.fn(x, w, b)
        assert got.dtype == want.dtype and np.all(np.abs(got - want) <= bound)


@pytest.mark.parametrize(
    "left, right",
    [
        (_RNG.integers(-5, 5, size=(6, 7)), _RNG.integers(-5, 5, size=(7, 6))),  # ints
        (np.ones((0, 4)), np.ones((4, 3))),  # empty
        (np.ones((3, 4)), np.ones((4, 0))),
    ],
    ids=["int64", "no-rows", "no-columns"],
)
def test_matmuls_the_template_does_not_cover_stay_extern_calls(left: Any, right: Any) -> None:
    graph = _graph([left, right], lambda g, a, m: _op(g, "matmul", a, m))
    compiled = compile_triton(graph, options=_TEMPLATE)
    assert compiled.module is not None
    assert [type(s).__name__ for s in compiled.module.steps] == ["ExternCall"]
    _same(compiled.fn(left, right), left @ right)


def test_an_unknown_gemm_backend_is_an_error() -> None:
    with pytest.raises(ValueError, match="gemm_backends"):
        TritonOptions.from_mode(None, {"gemm_backends": "cublas"}, interpret=True)


def test_in_place_updates_reach_the_caller_arrays() -> None:
    x = _RNG.normal(size=(8, 3))
    y = _RNG.normal(size=3)

    def build(g: Graph, a: Any, b: Any) -> Any:
        updated = _op(g, "add_", a, b)
        return _op(g, "multiply", updated, 2.0)

    graph = _graph([x, y], build)
    compiled = compile_triton(graph)
    mine, theirs = x.copy(), x.copy()
    got = compiled.fn(mine, y)
    want = run_graph(graph, [theirs, y])
    _same(got, want)
    _same(mine, theirs)


def test_generated_source_names_kernels_masks_and_libdevice() -> None:
    x = _RNG.normal(size=(4, 50)).astype(np.float32)

    def build(g: Graph, a: Any) -> Any:
        return _op(g, "sum", _op(g, "tanh", a), axis=1)

    compiled = compile_triton(_graph([x], build), options=_SMALL)
    source = compiled.source
    assert source.startswith('"""Triton kernels generated by numpile')
    assert "@triton.jit\ndef kernel0(" in source
    assert "libdevice.tanh(" in source
    assert "for roffset in range(0, rnumel, RBLOCK):" in source  # 50 > max_rblock: looped
    assert "mask=mask" in source and "mask=xmask" in source


def test_numpy_scalars_of_python_scalars_are_kernel_casts_where_numpy_cannot_fail() -> None:
    # np.float32(k), np.int64(k), np.float64(y), np.uint8(flag) read their input by value in
    # the kernel (int to float32 rounds through float64, as NumPy); np.uint8(k) and
    # np.int16(y) raise in NumPy for some values and stay NumPy's call (an extern).
    x = _RNG.normal(size=7)

    def build(g: Graph, a: Any, k: Any, y: Any, flag: Any) -> Any:
        exact = [
            _op(g, "numpy_scalar", k, dtype=np.dtype("float32")),
            _op(g, "numpy_scalar", k, dtype=np.dtype("int64")),
            _op(g, "numpy_scalar", y, dtype=np.dtype("float64")),
            _op(g, "numpy_scalar", flag, dtype=np.dtype("uint8")),
        ]
        scaled = [_op(g, "multiply", a, value) for value in exact]
        checked = [
            _op(g, "numpy_scalar", k, dtype=np.dtype("uint8")),
            _op(g, "numpy_scalar", y, dtype=np.dtype("int16")),
        ]
        return (*scaled, *(_op(g, "add", value, 1) for value in checked))

    inputs: list[Any] = [x, 2**60 + 2**36 + 1, -2.75, True]
    graph = _graph(inputs, build)
    compiled = compile_triton(graph)
    assert compiled.module is not None
    externs = [step.op_name for step in compiled.module.steps if isinstance(step, ExternCall)]
    assert externs == ["numpy_scalar", "numpy_scalar"]  # np.uint8(k), np.int16(y)
    for k in (200, 2**53 + 1, 16777217, -(2**62) - 2**38 - 1):
        values = [x, k, -2.75, False]
        want, want_error = _outcome(run_graph, graph, values)
        got, got_error = _outcome(compiled.fn, *values)
        assert repr(got_error) == repr(want_error)
        for g_, w_ in zip(got or (), want or (), strict=True):
            _same(g_, w_)
            np.testing.assert_array_equal(g_, w_)


def _outcome(fn: Any, *args: Any) -> tuple[Any, Exception | None]:
    try:
        return fn(*args), None
    except Exception as error:
        return None, error


def test_complex_graphs_fall_back_to_eager_with_a_reason() -> None:
    z = (_RNG.normal(size=5) + 1j).astype(np.complex64)

    def build(g: Graph, a: Any) -> Any:
        return _op(g, "multiply", a, a)

    graph = _graph([z], build)
    compiled = compile_triton(graph)
    assert compiled.module is None
    assert "complex64" in compiled.fallback_reason or "multiply" in compiled.fallback_reason
    _same(compiled.fn(z), run_graph(graph, [z]))


def test_mixed_numpy_and_cupy_like_inputs_raise() -> None:
    # What the runner sees of a cupy.ndarray: a class named ndarray from a cupy module.
    fake_cupy_array = type("ndarray", (), {"__module__": "cupy._core.core"})

    x = np.ones(3)

    def build(g: Graph, a: Any, b: Any) -> Any:
        return _op(g, "add", a, b)

    compiled = compile_triton(_graph([x, x], build))
    with pytest.raises(ValueError, match="NumPy and CuPy"):
        compiled.fn(x, fake_cupy_array())


def _softmax_rows(g: Graph, a: Any) -> Any:
    peak = _op(g, "max", a, axis=(1,), keepdims=True)
    e = _op(g, "exp", _op(g, "subtract", a, peak))
    return _op(g, "divide", e, _op(g, "sum", e, axis=(1,), keepdims=True))


def _softmax_graph(shape: tuple[Any, ...], dtype: str = "float32") -> Graph:
    # A row softmax over an input of `shape`, whose sizes may be sympy symbols (run time).
    from numpile_capture import ArrayMeta

    graph = Graph()
    graph.output = _softmax_rows(
        graph, graph.placeholder("x", ArrayMeta(shape, np.dtype(dtype), None))
    )
    return graph


def _run_time_sizes(*names: str) -> tuple[Any, ...]:
    import sympy

    return tuple(sympy.Symbol(name, integer=True, positive=True) for name in names)


def test_softmax_is_one_kernel_persistent_or_looped_and_parts_when_rows_are_few() -> None:
    x = _RNG.normal(size=(6, 40)).astype(np.float32)
    graph = _graph([x], _softmax_rows)
    whole = compile_triton(graph)
    assert whole.kernel_count == 1
    assert "persistent rows over [6] x [40]" in whole.source
    assert whole.source.count("tl.load(") == 1  # the row is read once
    looped = compile_triton(graph, options=_SMALL)  # 40 > max_rblock: looped
    assert looped.kernel_count == 1
    assert "looped rows over [6] x [40]" in looped.source
    # a static row length: a loop each for the max, the sum of exp and the store
    assert looped.source.count("for roffset in range(0, rnumel, RBLOCK)") == 3
    assert "scale" not in looped.source
    want = run_graph(graph, [x])
    _close(whole.fn(x), want, 40)
    _close(looped.fn(x), want, 40)
    # two rows cannot fill the device: part by part, the reductions split (each in one
    # kernel), and exp(x - max) is computed where it is read (the sum's split, the divide),
    # never stored
    few = _RNG.normal(size=(2, 300)).astype(np.float32)
    few_graph = _graph([few], _softmax_rows)
    parts = compile_triton(few_graph, options=_SMALL)
    assert parts.kernel_count == 3 and parts.source.count("_split(") == 2
    assert parts.source.count("# pointwise over") == 1 and parts.source.count("exp(") == 2
    _close(parts.fn(few), run_graph(few_graph, [few]), 300)


# Row groups looped over rows longer than a tile, never split: one kernel per group.
_LOOPED_ROWS = TritonOptions(
    max_xblock=64, max_rblock=16, max_tile=256, looped_rblock=16, split_programs=1
)


def _softmax_with_parts_returned(g: Graph, a: Any) -> Any:
    peak = _op(g, "max", a, axis=(1,), keepdims=True)
    e = _op(g, "exp", _op(g, "subtract", a, peak))
    total = _op(g, "sum", e, axis=(1,), keepdims=True)
    return _op(g, "divide", e, total), peak, total, e


def _softmax_and_stats(g: Graph, a: Any) -> Any:
    # softmax with its row max and sum of exp also returned (exp itself is not)
    peak = _op(g, "max", a, axis=(1,), keepdims=True)
    total = _op(g, "sum", _op(g, "exp", _op(g, "subtract", a, peak)), axis=(1,), keepdims=True)
    return _op(g, "divide", _op(g, "exp", _op(g, "subtract", a, peak)), total), peak, total


def _log_softmax(g: Graph, a: Any) -> Any:
    shifted = _op(g, "subtract", a, _op(g, "max", a, axis=(1,), keepdims=True))
    total = _op(g, "sum", _op(g, "exp", shifted), axis=(1,), keepdims=True)
    return _op(g, "subtract", shifted, _op(g, "log", total))


def _standardize(g: Graph, a: Any) -> Any:
    centered = _op(g, "subtract", a, _op(g, "mean", a, axis=1, keepdims=True))
    var = _op(g, "mean", _op(g, "multiply", centered, centered), axis=1, keepdims=True)
    return _op(g, "divide", centered, _op(g, "sqrt", _op(g, "add", var, 1e-5))), var


def _keep_rows_with_a_positive(g: Graph, a: Any) -> Any:
    positive = _op(g, "any", _op(g, "greater", a, 0.5), axis=1, keepdims=True)
    ranged = _op(g, "all", _op(g, "less", a, 3.0), axis=1, keepdims=True)
    kept = _op(g, "where", _op(g, "logical_and", positive, ranged), a, 0.0)
    return _op(g, "subtract", kept, _op(g, "min", kept, axis=(1,), keepdims=True))


_ROW_PROGRAMS = {
    "softmax_parts": _softmax_with_parts_returned,
    "log_softmax": _log_softmax,
    "standardize": _standardize,
    "any_all_min": _keep_rows_with_a_positive,
}


@pytest.mark.parametrize("online", [None, True], ids=["default", "online"])
@pytest.mark.parametrize("shape", [(5, 37), (3, 64), (1, 100), (40, 17)])
@pytest.mark.parametrize("dtype", _FLOATS)
@pytest.mark.parametrize("program", sorted(_ROW_PROGRAMS))
def test_looped_row_groups_match_numpy(
    program: str, dtype: str, shape: tuple[int, int], online: bool | None
) -> None:
    x = (_RNG.normal(size=shape) * 2).astype(dtype)
    x[0, ::3] = -1.0  # ties and a row of the any/all program that keeps and drops elements
    graph = _graph([x], _ROW_PROGRAMS[program])
    compiled = compile_triton(graph, options=attrs.evolve(_LOOPED_ROWS, online_softmax=online))
    # one row: the scheduler keeps the parts apart (a GPU would split that row anyway)
    assert "looped rows over" in compiled.source or shape[0] == 1
    got, want = compiled.fn(x), run_graph(graph, [x])
    for g_, w_ in zip(*(v if isinstance(v, tuple) else (v,) for v in (got, want)), strict=True):
        _close(g_, w_, shape[1] * 4)


@pytest.mark.parametrize("options", [None, _LOOPED_ROWS], ids=["persistent", "looped"])
def test_row_groups_with_a_run_time_row_count_are_one_kernel(options: TritonOptions | None) -> None:
    from numpile_capture import ArrayMeta

    (s0,) = _run_time_sizes("s0")
    graph = Graph()
    x = graph.placeholder("x", ArrayMeta((s0, 40), np.dtype("float32"), None))
    gamma = graph.placeholder("gamma", ArrayMeta((40,), np.dtype("float32"), None))
    out, var = _standardize(graph, _softmax_rows(graph, x))
    graph.output = (_op(graph, "multiply", out, gamma), var)
    compiled = compile_triton(graph, options=options)
    kind = "persistent" if options is None else "looped"
    assert compiled.kernel_count == 1, compiled.source
    assert f"{kind} rows over [s0] x [40]" in compiled.source
    w = _RNG.normal(size=40).astype(np.float32)
    for rows in (1, 3, 70):  # one program, a partial block, several blocks
        a = (_RNG.normal(size=(rows, 40)) * 3).astype(np.float32)
        got, want = compiled.fn(a, w), run_graph(graph, [a, w])
        np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-5)
        _close(got[1], want[1], 160)


_BOTH_BODIES = "persistent-or-looped (PERSISTENT, per launch) rows over [s0] x [s1]"


@pytest.mark.parametrize("options", [None, _LOOPED_ROWS], ids=["one-tile", "small-tiles"])
def test_row_groups_with_a_run_time_row_length_are_one_kernel_of_both_bodies(
    options: TritonOptions | None,
) -> None:
    graph = _softmax_graph(_run_time_sizes("s0", "s1"), "float64")
    compiled = compile_triton(graph, options=options)
    assert compiled.kernel_count == 1 and _BOTH_BODIES in compiled.source
    assert "    if PERSISTENT:\n" in compiled.source
    # a store per body: exp(x - max) is kept in registers or recomputed, never stored
    assert compiled.source.count("tl.store(") == 2
    for shape in [(2, 3), (5, 40), (300, 7), (3, 100)]:  # row lengths under and over a tile
        a = _RNG.normal(size=shape) * 3
        _close(compiled.fn(a), run_graph(graph, [a]), shape[1])


def test_online_softmax_is_an_option_and_on_over_run_time_lengths_by_default() -> None:
    # True: max and sum of exp share a loop (two loops); False: a loop each (three); None,
    # the default: online over a run-time row length, a loop each over a static one.
    x = (_RNG.normal(size=(5, 37)) * 3).astype(np.float32)
    static = _graph([x], _softmax_rows)
    dynamic = _softmax_graph(_run_time_sizes("s0", "s1"))
    loops = {}
    for online in (True, False, None):
        for name, graph in (("static", static), ("dynamic", dynamic)):
            options = attrs.evolve(_LOOPED_ROWS, online_softmax=online)
            compiled = compile_triton(graph, options=options)
            count = compiled.source.count("for roffset in range(0, rnumel, RBLOCK):")
            loops[online, name] = count
            assert ("scale" in compiled.source) == (count == 2)
            _close(compiled.fn(x), run_graph(static, [x]), 64)
    assert loops == {
        (True, "static"): 2,
        (True, "dynamic"): 2,
        (False, "static"): 3,
        (False, "dynamic"): 3,
        (None, "static"): 3,
        (None, "dynamic"): 2,
    }


def test_means_over_a_run_time_row_length_fuse_into_one_looped_kernel() -> None:
    # Layernorm with dynamic rows: each mean is a sum and a count (the sum of ones) in one
    # loop; before, both means were extern calls between two kernels. (A mean that is
    # itself a result is a pointwise part over [s0, 1]: then the group runs part by part.)
    from numpile_capture import ArrayMeta

    graph = Graph()
    x = graph.placeholder("x", ArrayMeta(_run_time_sizes("s0", "s1"), np.dtype("float32"), None))
    graph.output = _standardize(graph, x)[0]
    compiled = compile_triton(graph, options=_LOOPED_ROWS)
    assert compiled.kernel_count == 1 and _BOTH_BODIES in compiled.source
    assert compiled.module is not None
    assert [type(step).__name__ for step in compiled.module.steps] == ["TritonKernel"]
    assert compiled.source.count("tl.store(") == 2  # one per body
    for shape in [(2, 3), (5, 40), (3, 100)]:
        a = (_RNG.normal(size=shape) * 3 + 1).astype(np.float32)
        got, want = compiled.fn(a), run_graph(graph, [a])
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_row_kernels_launch_as_measured_fastest_on_an_h200() -> None:
    # GPU defaults (compiled, not run): static sizes are constants of the body, and the rows
    # mask is all true where every program's rows exist (partial blocks of rows: the row
    # tests above, e.g. 6 rows in blocks of 4, and run-time row counts); rows of
    # 1024 persistent, one per program with 4 warps; rows of 32768 looped in tiles of 8192
    # with 16 warps and a loop each for the max, the sum and the store; rows of a run-time
    # length launched as the static kernel for that length would be (fit_blocks), looped over
    # long rows with the online loop (max and sum of exp in one loop, then the store).
    def kernel(shape: tuple[Any, ...]) -> tuple[Any, str]:
        compiled = compile_triton(_softmax_graph(shape), options=TritonOptions())
        assert compiled.module is not None and compiled.kernel_count == 1
        return compiled.module.steps[0], compiled.source

    loops = "for roffset in range(0, rnumel, RBLOCK):"
    persistent, source = kernel((65536, 1024))
    assert (persistent.xblock, persistent.rblock, persistent.num_warps) == (1, 1024, 4)
    assert "    xnumel = 65536\n    rnumel = 1024\n" in source
    assert "if 65536 % XBLOCK == 0:\n        xmask = tl.full([XBLOCK, 1], True" in source
    wide, source = kernel((2048, 32768))
    assert (wide.xblock, wide.rblock, wide.num_warps) == (1, 8192, 16)
    assert "    rnumel = 32768\n" in source and source.count(loops) == 3
    s0, s1 = _run_time_sizes("s0", "s1")
    # a run-time row count launches as the static count does (fit_blocks, at each call)
    for shape, launch in [((s0, 1024), (1, 1024, 4)), ((s0, 32768), (1, 8192, 16))]:
        fitted = fit_blocks(kernel(shape)[0], 2048, shape[1], TritonOptions())
        assert (fitted.xblock, fitted.rblock, fitted.num_warps) == launch
    dynamic, source = kernel((s0, s1))
    assert (dynamic.xblock, dynamic.rblock, dynamic.num_warps) == (1, 2048, 8)
    assert "numel = " not in source and source.count(loops) == 2  # online: max and sum, store
    for (rows, length), launch in [
        ((65536, 1024), (1, 1024, 4, True)),
        ((65536, 2048), (1, 2048, 8, True)),
        ((65536, 100), (8, 128, 4, True)),
        ((2048, 32768), (1, 8192, 16, False)),
        ((2048, 3000), (1, 4096, 8, False)),
    ]:
        fitted = fit_blocks(dynamic, rows, length, TritonOptions())
        assert (fitted.xblock, fitted.rblock, fitted.num_warps, fitted.persistent) == launch
        static = kernel((rows, length))[0]
        assert (static.xblock, static.rblock, static.num_warps) == launch[:3]
    assert "if XBLOCK == 1:\n        xmask = tl.full([XBLOCK, 1], True" in source


@pytest.mark.parametrize(
    ("program", "mode"),
    # (max-autotune times every candidate: interpreted, a max's combine per element is slow)
    [("softmax", None), ("standardize", None), ("standardize", "max-autotune-no-cudagraphs")],
)
def test_run_time_row_lengths_launch_persistent_where_a_row_fits(
    program: str, mode: str | None, monkeypatch: Any
) -> None:
    # GPU tiles (max_rblock 2048): rows of a run-time length up to 2048 launch the
    # persistent body (RBLOCK covering the row, whatever tunes it), longer ones the looped
    # body. 512 then 1000 share a bit length: a default-mode choice kept for 512 must not
    # serve 1000 (an RBLOCK of 512 over rows of 1000 would drop half of each row). Rows of
    # -inf and with a NaN keep NumPy's NaNs.
    from numpile_capture import ArrayMeta

    seen: list[tuple[bool | None, int, int]] = []
    call = TritonRunner._call

    def record(self: Any, kernel: Any, call_args: list[Any], *args: Any) -> None:
        seen.append((kernel.persistent, kernel.rblock, call_args[-1]))
        call(self, kernel, call_args, *args)

    monkeypatch.setattr(TritonRunner, "_call", record)
    builds = {"softmax": _softmax_rows, "standardize": lambda g, a: _standardize(g, a)[0]}
    graph = Graph()
    x = graph.placeholder("x", ArrayMeta(_run_time_sizes("s0", "s1"), np.dtype("float32"), None))
    graph.output = builds[program](graph, x)
    gpu_tiles = {"max_rblock": 2048, "row_tile": 1024}
    compiled = compile_triton(graph, mode=mode, option_overrides=gpu_tiles)
    assert compiled.kernel_count == 1 and _BOTH_BODIES in compiled.source
    # (Interpreted, a max's combine runs per element: the softmax's looped rows, 5000, are
    # the standardize's, and max-autotune times each candidate: two lengths.)
    lengths = {"softmax": (1, 7, 64, 512, 1000), "standardize": (1, 7, 64, 512, 1000, 5000)}
    for length in (7, 1000) if mode else lengths[program]:
        a = (_RNG.normal(size=(3, length)) * 3).astype(np.float32)
        a[1] = -np.inf
        a[2, length // 2] = np.nan
        seen.clear()
        with np.errstate(all="ignore"):
            got, want = compiled.fn(a), run_graph(graph, [a])
        _close(got, want, length)
        assert {persistent for persistent, _, _ in seen} == {length <= 2048}, seen
        assert all(rblock >= rnumel for persistent, rblock, rnumel in seen if persistent)


def test_tuning_keeps_the_tile_of_a_persistent_launch_over_a_run_time_length(
    fresh_cache: Any,
) -> None:
    from numpile_inductor.codegen.triton.autotune import (
        candidates,
        load_choice,
        reduction_candidates,
        shape_class,
    )

    compiled = compile_triton(_softmax_graph(_run_time_sizes("s0", "s1")), options=TritonOptions())
    assert compiled.module is not None
    (kernel,) = compiled.module.kernels
    persistent = fit_blocks(kernel, 64, 1000, TritonOptions())
    assert (persistent.persistent, persistent.rblock) == (True, 1024)
    for choices in (candidates(persistent), reduction_candidates(persistent)):
        assert {(c.rblock, c.persistent) for c in choices} == {(1024, True)}
    looped = fit_blocks(kernel, 64, 5000, TritonOptions())
    assert looped.persistent is False
    assert len({c.rblock for c in reduction_candidates(looped)}) > 1
    # a stored choice that would shorten a persistent tile is not taken
    for rblock, taken in ((512, False), (1024, True)):
        choice = {"xblock": 2, "rblock": rblock, "num_warps": 8}
        rt.default_cache().put_bytes(
            f"triton-tune-{rblock}", repr(choice).replace("'", '"').encode()
        )
        assert (load_choice(f"triton-tune-{rblock}", persistent) is not None) is taken
    # one shape class, one persistent RBLOCK
    assert shape_class(64, 512) != shape_class(64, 1000) == shape_class(64, 513)


def test_intermediates_of_rows_too_long_for_a_scratch_row_are_recomputed_not_stored() -> None:
    # The C backend keeps a row group's intermediates in a per-thread scratch row of at most
    # 64 KiB; a Triton kernel recomputes them (looped) or keeps them in registers, so a
    # softmax over 80 KB rows stores only its result (it stored exp(x - max) before: a
    # third more memory traffic).
    x = (_RNG.normal(size=(3, 20000)) * 3).astype(np.float32)
    graph = _graph([x], _softmax_rows)
    options = TritonOptions(max_xblock=64, max_rblock=4096, max_tile=4096, split_programs=1)
    compiled = compile_triton(graph, options=options)
    assert compiled.kernel_count == 1 and "looped rows over [3] x [20000]" in compiled.source
    assert compiled.source.count("tl.store(") == 1
    _close(compiled.fn(x), run_graph(graph, [x]), 64)


@pytest.mark.parametrize("online", [True, None], ids=["online", "default"])
@pytest.mark.parametrize("dtype", _FLOATS)
@pytest.mark.parametrize("returns_exp", [False, True], ids=["stats", "exp-returned"])
def test_looped_softmax_with_numpys_edge_values(
    dtype: str, returns_exp: bool, online: bool | None
) -> None:
    # Online, max and sum of exp share one loop, unless exp(x - max) is itself a result
    # (it needs the final max to be stored): then a loop each, as by default.
    x = _RNG.normal(size=(7, 37)).astype(dtype) * 30
    x[1] = -np.inf  # max -inf: NumPy's exp(-inf - -inf) is NaN
    x[2, ::5] = -np.inf  # some -inf: exp gives 0 there
    x[3, 17] = np.inf  # +inf: inf - inf is NaN
    x[4, 30] = np.nan
    x[5, :20] = -np.inf  # lanes that see only -inf while the row max is finite
    graph = _graph([x], _softmax_with_parts_returned if returns_exp else _softmax_and_stats)
    compiled = compile_triton(graph, options=attrs.evolve(_LOOPED_ROWS, online_softmax=online))
    assert "looped rows over [7] x [37]" in compiled.source
    loops = compiled.source.count("for roffset in range(0, rnumel, RBLOCK)")
    assert loops == (2 if online and not returns_exp else 3)
    with np.errstate(all="ignore"):
        want = run_graph(graph, [x])
        got = compiled.fn(x)
    for g_, w_ in zip(got, want, strict=True):
        assert g_.dtype == w_.dtype and g_.shape == w_.shape
        np.testing.assert_array_equal(np.isnan(g_), np.isnan(w_))
        np.testing.assert_allclose(g_, w_, rtol=64 * float(np.finfo(dtype).eps), atol=0)


def test_row_values_do_not_make_a_split_row_reduction_tile_as_a_column_one() -> None:
    # Few rows: standardize(softmax(x)) runs part by part, split. Its later reductions read
    # several keepdims row values (max, sum, mean) besides x; those are the same element
    # along a row and must not vote for column (chunk-major) tiles.
    few = _RNG.normal(size=(2, 300))
    graph = _graph([few], lambda g, a: _standardize(g, _softmax_rows(g, a)))
    compiled = compile_triton(graph, options=_SMALL)
    assert compiled.source.count("_split(") >= 3 and "chunk-major" not in compiled.source
    got, want = compiled.fn(few), run_graph(graph, [few])
    np.testing.assert_allclose(got[0], want[0], rtol=1e-9, atol=1e-12)
    _close(got[1], want[1], 1200)


def test_integer_rows_loop_exactly() -> None:
    x = _RNG.integers(-50, 50, size=(7, 45)).astype(np.int64)

    def build(g: Graph, a: Any) -> Any:
        low = _op(g, "subtract", a, _op(g, "min", a, axis=(1,), keepdims=True))
        return _op(g, "multiply", low, _op(g, "sum", low, axis=(1,), keepdims=True))

    graph = _graph([x], build)
    compiled = compile_triton(graph, options=_LOOPED_ROWS)
    assert compiled.kernel_count == 1 and "looped rows over [7] x [45]" in compiled.source
    _same(compiled.fn(x), run_graph(graph, [x]))


def _pointwise_kernel() -> Any:
    x = np.ones(3000, np.float32)
    compiled = compile_triton(_graph([x], lambda g, a: _op(g, "exp", a)))
    assert compiled.module is not None
    return compiled.module.kernels[0]


def test_autotune_candidates_keep_persistent_rows_and_vary_looped_ones() -> None:
    from numpile_inductor.codegen.triton.autotune import candidates

    kernel = _pointwise_kernel()
    shapes = {(c.xblock, c.num_warps) for c in candidates(kernel)}
    assert (2048, 8) in shapes and (256, 4) in shapes
    assert candidates(kernel)[0] == kernel
    x = np.ones((64, 300), np.float32)
    graph = _graph([x], lambda g, a: _op(g, "sum", a, axis=1))
    (persistent,) = compile_triton(graph).module.kernels  # type: ignore[union-attr]
    assert {c.rblock for c in candidates(persistent)} == {persistent.rblock}
    unsplit = attrs.evolve(_SMALL, split_reductions=False)
    (looped,) = compile_triton(graph, options=unsplit).module.kernels  # type: ignore[union-attr]
    assert len({c.rblock for c in candidates(looped)}) > 1


def test_autotune_keeps_the_fastest_and_caches_it_on_disk(tmp_path: Any) -> None:
    from numpile_inductor.codegen.triton.autotune import tune

    kernel = _pointwise_kernel()
    previous = rt.default_cache()
    rt.set_cache_dir(tmp_path)
    try:
        timed: list[int] = []

        def fake_time(candidate: Any) -> float:
            timed.append(candidate.xblock)
            return abs(candidate.xblock - 512) + candidate.num_warps / 100

        best = tune(kernel, fake_time, "triton-tune-test")
        assert (best.xblock, best.num_warps) == (512, 4)
        count = len(timed)
        again = tune(kernel, fake_time, "triton-tune-test")  # from disk: nothing re-timed
        assert (again.xblock, again.num_warps) == (512, 4) and len(timed) == count
    finally:
        rt.set_cache_dir(previous.root)


def test_max_autotune_mode_gives_numpy_values() -> None:
    a = _RNG.normal(size=(30, 70))

    def build(g: Graph, x: Any) -> Any:
        return _op(g, "sum", _op(g, "multiply", x, x), axis=0), _op(g, "tanh", x)

    graph = _graph([a], build)
    compiled = compile_triton(graph, mode="max-autotune-no-cudagraphs")
    got, want = compiled.fn(a), run_graph(graph, [a])
    _close(got[0], want[0], 30)
    _same(got[1], want[1])


def test_unknown_modes_and_options_are_errors_that_list_the_known_ones() -> None:
    with pytest.raises(ValueError, match="reduce-overhead"):
        TritonOptions.from_mode("fast", interpret=True)
    with pytest.raises(ValueError, match="max_xblock"):
        TritonOptions.from_mode(None, {"xblock": 4}, interpret=True)
    assert TritonOptions.from_mode("reduce-overhead", interpret=False).cudagraphs
    with pytest.raises(TypeError, match=r"trace\.enabled"):
        TritonOptions.from_mode(None, {"trace.enabled": "yes"}, interpret=True)


def test_inductor_options_mean_the_same_on_triton() -> None:
    options = TritonOptions.from_mode(
        None, {"max_autotune": True, "cpp.threads": 2, "max_xblock": 64}, interpret=True
    )
    assert options.autotune and options.max_xblock == 64  # cpp.* accepted, no effect
    assert not TritonOptions.from_mode(
        "max-autotune", {"max_autotune": False}, interpret=True
    ).autotune


def test_trace_writes_the_graph_ir_and_triton_source(tmp_path: Any, caplog: Any) -> None:
    x = _RNG.normal(size=(3, 8))
    graph = _graph([x], lambda g, a: _op(g, "sum", _op(g, "exp", a), axis=1))
    options = TritonOptions.from_mode(
        None, {"trace.enabled": True, "trace.debug_dir": str(tmp_path)}, interpret=True
    )
    with caplog.at_level("INFO", logger="numpile.inductor.output_code"):
        compiled = compile_triton(graph, options=options)
    _close(compiled.fn(x), np.exp(x).sum(axis=1), 8)
    (folder,) = tmp_path.iterdir()
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["graph.txt", "ir_post_fusion.txt", "ir_pre_fusion.txt", "output_code.py"]
    source = (folder / "output_code.py").read_text()
    assert source.strip() == compiled.source.strip()
    assert "@triton.jit" in source and "tl.sum" in source
    assert folder.name[len("inductor_triton_") :] in source  # the graph hash it names
    assert compiled.source in caplog.text


def test_the_inductor_sends_graphs_of_cuda_arrays_to_triton() -> None:
    from numpile_capture import ArrayMeta
    from numpile_inductor import inductor

    x = _RNG.normal(size=(4, 5)).astype(np.float32)
    graph = Graph()
    node = graph.placeholder("x", ArrayMeta(x.shape, x.dtype, (5, 1), device="cuda"))
    graph.output = _op(graph, "exp", node)
    fn = inductor(graph, [x])
    assert isinstance(fn, TritonRunner)  # the Triton runner, not a C module
    _same(fn(x), np.exp(x))


def test_a_run_time_row_length_splits_with_each_program_working_out_its_chunk() -> None:
    import sympy

    from numpile_capture import ArrayMeta

    s0 = sympy.Symbol("s0", integer=True, positive=True)
    graph = Graph()
    node = graph.placeholder("x", ArrayMeta((s0,), np.dtype("float64"), None))
    graph.output = (_op(graph, "sum", node), _op(graph, "max", node))
    compiled = compile_triton(graph, options=_SMALL)
    assert compiled.module is not None
    first = compiled.module.kernels[0]
    assert first.name.endswith("_split") and "rchunk = tl.cdiv" in first.source
    for n in (1, 7, 300, 5000):  # chunks hold nothing, a little, or many tiles
        x = _RNG.normal(size=n)
        got, want = compiled.fn(x), run_graph(graph, [x])
        _close(got[0], want[0], n, scale=np.abs(x).sum())
        _same(got[1], want[1])


def test_one_compile_serves_every_size_of_a_dynamic_dim() -> None:
    import sympy

    from numpile_capture import ArrayMeta

    s0 = sympy.Symbol("s0", integer=True, positive=True)
    graph = Graph()
    node = graph.placeholder("x", ArrayMeta((s0, 6), np.dtype("float64"), None))
    total = _op(graph, "sum", _op(graph, "exp", node), axis=1, keepdims=True)
    graph.output = _op(graph, "divide", node, total)
    compiled = compile_triton(graph)
    assert compiled.fallback_reason == "" and compiled.kernel_count >= 1
    assert "s0" in compiled.source  # the row count is a kernel argument
    for rows in (1, 5, 300):
        x = _RNG.normal(size=(rows, 6))
        _close(compiled.fn(x), run_graph(graph, [x]), 6)


_REDUCTIONS = ["sum", "prod", "max", "min", "any", "all", "mean"]


@settings(max_examples=50, deadline=None, derandomize=True)
@given(
    shape=st.one_of(
        st.lists(st.integers(1, 30), min_size=1, max_size=3),
        st.tuples(st.integers(20, 80), st.integers(1, 6)).map(list),  # tall: outer splits
    ),
    data=st.data(),
    name=st.sampled_from(_REDUCTIONS),
    dtype=st.sampled_from(["float32", "float64", "int32", "int64", "bool"]),
    blocks=st.sampled_from([(4, 16, 2), (8, 64, 16), (32, 256, 512)]),
)
def test_random_reductions_split_or_not_match_numpy(
    shape: list[int], data: Any, name: str, dtype: str, blocks: tuple[int, int, int]
) -> None:
    # Small blocks and split targets make most of these split (row-major or chunk-major,
    # static lengths); each must still be NumPy's value, dtype and shape.
    if name == "mean" and dtype == "bool":
        dtype = "float64"
    ndim = len(shape)
    axis = data.draw(
        st.one_of(
            st.none(),
            st.just(0),
            st.integers(-ndim, ndim - 1),
            st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True).map(tuple),
        )
    )
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    if dtype == "bool":
        x = rng.random(shape) < data.draw(st.sampled_from([0.05, 0.5, 0.95]))
    elif dtype.startswith("int"):
        x = rng.integers(-3, 4, size=shape).astype(dtype)
    else:
        x = rng.normal(size=shape).astype(dtype)
        if data.draw(st.booleans()) and x.size > 1:
            x.flat[data.draw(st.integers(0, x.size - 1))] = np.nan
    rblock, tile, programs = blocks
    options = TritonOptions(
        max_xblock=64, max_rblock=rblock, max_tile=tile, split_programs=programs
    )
    graph = _graph([x], lambda g, a: _op(g, name, a, axis=axis))
    compiled = compile_triton(graph, options=options)
    assert compiled.fallback_reason == ""
    with np.errstate(all="ignore"):
        got, want = compiled.fn(x), run_graph(graph, [x])
    if name in ("sum", "mean") and dtype.startswith("float"):
        magnitude = np.abs(x).sum(axis=axis) if name == "sum" else np.abs(x).mean(axis=axis)
        _close(got, want, x.size, scale=magnitude)
    elif name == "prod" and dtype.startswith("float"):
        assert type(got) is type(want) and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-4 if dtype == "float32" else 1e-12)
    else:
        _same(got, want)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(
    m=st.integers(1, 70),
    n=st.integers(1, 70),
    k=st.integers(1, 70),
    dtype=st.sampled_from(_FLOATS),
    transposed=st.booleans(),
    epilogue=st.sampled_from(["none", "bias_relu", "scale"]),
    seed=st.integers(0, 2**16),
)
def test_random_matmul_templates_match_numpy(
    m: int, n: int, k: int, dtype: str, transposed: bool, epilogue: str, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(m, k)).astype(dtype)
    w = rng.normal(size=(n, k) if transposed else (k, n)).astype(dtype)
    b = rng.normal(size=n).astype(dtype)

    def build(g: Graph, a: Any, v: Any, c: Any) -> Any:
        rhs = _op(g, "transpose", v, axes=None) if transposed else v
        product = _op(g, "matmul", a, rhs)
        if epilogue == "bias_relu":
            return _op(g, "maximum", _op(g, "add", product, c), 0.0)
        if epilogue == "scale":
            return _op(g, "multiply", product, 0.5)
        return product

    graph = _graph([x, w, b], build)
    compiled = compile_triton(graph, options=_TEMPLATE)
    assert compiled.module is not None
    assert any(kernel.template == "mm" for kernel in compiled.module.kernels)
    got, want = compiled.fn(x, w, b), run_graph(graph, [x, w, b])
    assert type(got) is type(want) and got.dtype == want.dtype and got.shape == want.shape
    rhs = w.T if transposed else w
    bound = 2 * k * float(np.finfo(dtype).eps) * (np.abs(x) @ np.abs(rhs)) + 1e-300
    assert np.all(np.abs(got - want) <= bound)


# One step of a random row program: a pointwise op of the current value, or the current
# value combined with one of its own row reductions (keepdims), as softmax and layernorm do.
_ROW_STEPS = {
    "softmax": lambda g, cur, x: _softmax_rows(g, cur),
    "log_softmax": lambda g, cur, x: _log_softmax(g, cur),
    "tanh": lambda g, cur, x: _op(g, "tanh", cur),
    "exp_neg_abs": lambda g, cur, x: _op(g, "exp", _op(g, "negative", _op(g, "absolute", cur))),
    "plus_input": lambda g, cur, x: _op(g, "add", cur, x),
    "minus_row_max": lambda g, cur, x: _op(
        g, "subtract", cur, _op(g, "max", cur, axis=(1,), keepdims=True)
    ),
    "over_row_abs_sum": lambda g, cur, x: _op(
        g,
        "divide",
        cur,
        _op(g, "add", _op(g, "sum", _op(g, "absolute", cur), axis=(1,), keepdims=True), 1.0),
    ),
    "times_row_mean": lambda g, cur, x: _op(
        g, "multiply", cur, _op(g, "mean", cur, axis=1, keepdims=True)
    ),
    "where_row_min_negative": lambda g, cur, x: _op(
        g,
        "where",
        _op(g, "less", _op(g, "min", cur, axis=(1,), keepdims=True), 0.0),
        cur,
        _op(g, "negative", cur),
    ),
}


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    rows=st.integers(1, 12),
    cols=st.integers(1, 70),
    steps=st.lists(st.sampled_from(sorted(_ROW_STEPS)), min_size=1, max_size=5),
    max_rblock=st.sampled_from([4, 16, 128]),
    dynamic=st.sampled_from(["static", "rows", "both"]),
    split_programs=st.sampled_from([1, 64]),
    seed=st.integers(0, 2**16),
)
def test_random_row_programs_match_numpy(
    rows: int,
    cols: int,
    steps: list[str],
    max_rblock: int,
    dynamic: str,
    split_programs: int,
    seed: int,
) -> None:
    # Row kernels, persistent or looped, with static or run-time sizes, or part by part
    # with split reductions and pointwise parts inlined where read (few static rows and
    # split_programs=64): each result within rounding of NumPy's.
    import sympy

    from numpile_capture import ArrayMeta

    x = np.random.default_rng(seed).normal(size=(rows, cols)) * 2
    shape: tuple[Any, ...] = x.shape
    if dynamic != "static":
        s0, s1 = (sympy.Symbol(n, integer=True, positive=True) for n in ("s0", "s1"))
        shape = (s0, s1 if dynamic == "both" else cols)
        if rows < 2 or (dynamic == "both" and cols < 2):
            return  # sizes 0 and 1 are always specialized, never symbols
    graph = Graph()
    node = graph.placeholder("x", ArrayMeta(shape, np.dtype("float64"), None))
    cur = node
    for step in steps:
        cur = _ROW_STEPS[step](graph, cur, node)
    graph.output = (cur, _op(graph, "sum", cur, axis=(1,)))
    options = TritonOptions(
        max_xblock=64, max_rblock=max_rblock, max_tile=256, split_programs=split_programs
    )
    compiled = compile_triton(graph, options=options)
    with np.errstate(all="ignore"):
        want = run_graph(graph, [x])
        got = compiled.fn(x)
    for g_, w_ in zip(got, want, strict=True):
        assert g_.shape == w_.shape and g_.dtype == w_.dtype
        np.testing.assert_allclose(g_, w_, rtol=1e-9, atol=1e-9)


def test_direct_launch_option_reaches_every_kernels_launcher() -> None:
    x = np.ones((4, 40), np.float32)
    graph = _graph([x], _softmax_rows)
    default = compile_triton(graph)
    off = compile_triton(
        graph, options=TritonOptions.from_mode(None, {"direct_launch": False}, interpret=True)
    )
    launchers = [*default.fn.launchers.values()]  # type: ignore[attr-defined]
    assert launchers and all(launcher.launches_direct for launcher in launchers)
    assert not any(launcher.launches_direct for launcher in off.fn.launchers.values())  # type: ignore[attr-defined]
    _close(off.fn(x), run_graph(graph, [x]), 40)


def test_run_time_shapes_are_evaluated_per_size_values() -> None:
    # Shapes of run-time sizes are remembered per value of their symbols (any assumptions
    # on the symbols): a new value gives a new shape, never the remembered one.
    import sympy

    from numpile_inductor.codegen.triton.sizes import RunTimeShape, SizeBinding

    s0 = sympy.Symbol("s0", integer=True, positive=True)
    n = sympy.Symbol("n", integer=True)
    shape = RunTimeShape.of((s0, 2 * n + 1, 7))
    assert shape.at({"s0": 3, "n": 4}) == (3, 9, 7)
    assert shape.at({"s0": 3, "n": 5}) == (3, 11, 7)
    assert shape.at({"s0": 2, "n": 4, "s9": 1}) == (2, 9, 7)
    assert shape.at({"s0": 3, "n": 4}) == (3, 9, 7)
    assert RunTimeShape.of((5, 6)).at({}) == (5, 6)
    sizes: dict[str, int] = {"n": 1}
    SizeBinding.of((s0, 2 * n + 1)).bind(np.zeros((4, 9)), sizes)
    assert sizes == {"n": 1, "s0": 4}  # bare symbols only: 2n+1 binds nothing
    SizeBinding.of((s0,)).bind(np.zeros((4, 9)), sizes)  # another rank: binds nothing
    assert sizes == {"n": 1, "s0": 4}


@pytest.mark.parametrize("options", [None, _LOOPED_ROWS], ids=["persistent", "looped"])
def test_no_rows_launch_no_kernel(options: TritonOptions | None, monkeypatch: Any) -> None:
    # A row kernel whose every program has its rows drops the rows mask, so a launch over
    # zero rows (the grid has at least one program) would touch a row that is not there:
    # nothing launches when a kernel has no output elements; the results are empty.
    launches: list[Any] = []
    original = rt.TritonLauncher.__call__

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        launches.append(args[1])
        return original(self, *args, **kwargs)

    monkeypatch.setattr(rt.TritonLauncher, "__call__", counted)
    empty = np.zeros((0, 40), np.float32)
    dynamic = _softmax_graph((*_run_time_sizes("s0"), 40))
    for graph in (_graph([empty], _softmax_rows), dynamic):
        compiled = compile_triton(graph, options=options)
        got = compiled.fn(empty)
        assert got.shape == (0, 40) and got.dtype == np.float32 and not launches
    rows = (_RNG.normal(size=(3, 40)) * 3).astype(np.float32)
    _close(compiled.fn(rows), run_graph(dynamic, [rows]), 40)
    assert launches
