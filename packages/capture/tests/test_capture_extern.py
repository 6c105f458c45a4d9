"""The extern-op table: every row's binding, meta rule and run against the library itself.

Each case binds the library call on placeholders (`lookup_function`), checks the nodes'
metadata against the eager result (shape where static, dtype always), and runs the graph
with `run_graph` against the eager call. Generator rows run with two generators of one seed
and must be bit-identical, in program order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from numpile_capture import ArrayMeta, Graph, all_ops, meta_of, run_graph
from numpile_capture.numpy_bindings import lookup_function
from numpile_capture.ops.extern import ExternState, extern_row, extern_rows

_RNG = np.random.default_rng(7)


def _f(*shape: int) -> np.ndarray[Any, Any]:
    return _RNG.standard_normal(shape)


def _spd(n: int) -> np.ndarray[Any, Any]:
    a = _f(n, n)
    return a @ a.T + n * np.eye(n)


def _ints(n: int, high: int) -> np.ndarray[Any, Any]:
    return _RNG.integers(0, high, n)


# (row name, the library callable, array arguments, static keyword arguments)
Case = tuple[str, Callable[..., Any], Callable[[], tuple[Any, ...]], dict[str, Any]]
FFT = np.fft
LA = np.linalg
CASES: list[Case] = [
    ("fft.fft", FFT.fft, lambda: (_f(8),), {}),
    ("fft.fft", FFT.fft, lambda: (_f(3, 8).astype("float32"),), {"n": 5, "axis": 0}),
    ("fft.ifft", FFT.ifft, lambda: (_f(6) + 1j,), {"norm": "ortho"}),
    ("fft.rfft", FFT.rfft, lambda: (_f(9),), {}),
    ("fft.irfft", FFT.irfft, lambda: (_f(5) + 0j,), {}),
    ("fft.irfft", FFT.irfft, lambda: (_f(5) + 0j,), {"n": 9}),
    ("fft.hfft", FFT.hfft, lambda: (_f(5) + 0j,), {}),
    ("fft.ihfft", FFT.ihfft, lambda: (_f(7),), {}),
    ("fft.fft2", FFT.fft2, lambda: (_f(2, 4, 6),), {}),
    ("fft.ifft2", FFT.ifft2, lambda: (_f(4, 6),), {"s": (3, 5)}),
    ("fft.rfft2", FFT.rfft2, lambda: (_f(4, 6),), {}),
    ("fft.irfft2", FFT.irfft2, lambda: (_f(4, 4) + 0j,), {}),
    ("fft.fftn", FFT.fftn, lambda: (_f(3, 4, 5),), {}),
    ("fft.ifftn", FFT.ifftn, lambda: (_f(3, 4, 5),), {"axes": (0, 2)}),
    ("fft.rfftn", FFT.rfftn, lambda: (_f(3, 4, 6),), {}),
    ("fft.irfftn", FFT.irfftn, lambda: (_f(3, 4) + 0j,), {"s": (3, 6), "axes": (0, 1)}),
    ("fft.fftshift", FFT.fftshift, lambda: (_f(5, 4),), {}),
    ("fft.ifftshift", FFT.ifftshift, lambda: (_f(5, 4),), {"axes": 0}),
    ("fft.fftfreq", FFT.fftfreq, lambda: (), {"n": 8, "d": 0.5}),
    ("fft.rfftfreq", FFT.rfftfreq, lambda: (), {"n": 9}),
    ("linalg.cholesky", LA.cholesky, lambda: (_spd(4),), {}),
    ("linalg.qr", LA.qr, lambda: (_f(5, 3),), {}),
    ("linalg.qr", LA.qr, lambda: (_f(3, 5),), {"mode": "complete"}),
    ("linalg.svd", LA.svd, lambda: (_f(5, 3),), {}),
    ("linalg.svd", LA.svd, lambda: (_f(2, 3, 4),), {"full_matrices": False}),
    ("linalg.svd", LA.svd, lambda: (_f(4, 3),), {"compute_uv": False}),
    ("linalg.svdvals", LA.svdvals, lambda: (_f(4, 3),), {}),
    ("linalg.eigh", LA.eigh, lambda: (_spd(4),), {}),
    ("linalg.eigvalsh", LA.eigvalsh, lambda: (_spd(4),), {"UPLO": "U"}),
    ("linalg.pinv", LA.pinv, lambda: (_f(5, 3),), {}),
    ("linalg.slogdet", LA.slogdet, lambda: (_f(2, 3, 3),), {}),
    ("linalg.lstsq", LA.lstsq, lambda: (_f(6, 3), _f(6)), {"rcond": None}),
    ("linalg.lstsq", LA.lstsq, lambda: (_f(3, 3), _f(3, 2)), {"rcond": None}),
    ("linalg.matrix_rank", LA.matrix_rank, lambda: (_f(4, 3),), {}),
    ("linalg.matrix_power", LA.matrix_power, lambda: (_f(3, 3),), {"n": 3}),
    ("linalg.cond", LA.cond, lambda: (_spd(3),), {}),
    ("linalg.multi_dot", LA.multi_dot, lambda: ([_f(4, 3), _f(3, 5), _f(5)],), {}),
    ("linalg.tensorinv", LA.tensorinv, lambda: (_spd(6).reshape(6, 2, 3),), {"ind": 1}),
    ("linalg.tensorsolve", LA.tensorsolve, lambda: (_spd(6).reshape(2, 3, 6), _f(2, 3)), {}),
    ("linalg.cross", LA.cross, lambda: (_f(4, 3), _f(4, 3)), {}),
    ("linalg.outer", LA.outer, lambda: (_f(4), _f(3)), {}),
    ("linalg.vecdot", LA.vecdot, lambda: (_f(4, 3), _f(4, 3)), {}),
    ("linalg.matrix_norm", LA.matrix_norm, lambda: (_f(2, 3, 3),), {"ord": 1}),
    ("linalg.vector_norm", LA.vector_norm, lambda: (_f(2, 3),), {"axis": 1}),
    ("linalg.trace", LA.trace, lambda: (_f(2, 3, 3),), {}),
    ("linalg.diagonal", LA.diagonal, lambda: (_f(3, 3),), {"offset": 1}),
    ("linalg.matmul", LA.matmul, lambda: (_f(3, 4), _f(4, 2)), {}),
    ("linalg.tensordot", LA.tensordot, lambda: (_f(3, 4), _f(4, 2)), {"axes": 1}),
    ("linalg.matrix_transpose", LA.matrix_transpose, lambda: (_f(3, 4),), {}),
    ("interp", np.interp, lambda: (_f(7), np.arange(4.0), _f(4)), {}),
    ("interp", np.interp, lambda: (_f(7), np.arange(4.0), _f(4) + 1j), {"period": 2.0}),
    ("histogram", np.histogram, lambda: (_f(50),), {"bins": 6}),
    ("histogram", np.histogram, lambda: (_f(50), np.linspace(-2, 2, 5)), {"density": True}),
    ("histogram2d", np.histogram2d, lambda: (_f(40), _f(40)), {"bins": (3, 4)}),
    ("convolve", np.convolve, lambda: (_f(9), _f(4)), {}),
    ("convolve", np.convolve, lambda: (_f(4), _f(9)), {"mode": "same"}),
    ("correlate", np.correlate, lambda: (_f(9), _f(4)), {}),
    ("correlate", np.correlate, lambda: (_f(9), _f(4)), {"mode": "full"}),
    ("searchsorted", np.searchsorted, lambda: (np.sort(_f(9)), _f(4)), {"side": "right"}),
    ("polyval", np.polyval, lambda: (_f(3), _f(6)), {}),
    ("polyfit", np.polyfit, lambda: (_f(8), _f(8)), {"deg": 2}),
    ("polyfit", np.polyfit, lambda: (_f(8), _f(8, 2)), {"deg": 1}),
    ("pad", np.pad, lambda: (_f(3, 4),), {"pad_width": ((1, 2), (0, 3))}),
    ("pad", np.pad, lambda: (_f(5),), {"pad_width": 2, "mode": "reflect"}),
    ("diff", np.diff, lambda: (_f(4, 6),), {}),
    ("diff", np.diff, lambda: (_f(4, 6) > 0,), {"n": 2, "axis": 0}),
    ("diff", np.diff, lambda: (_f(4, 6),), {"axis": 0, "prepend": 0.5, "append": 2}),
    ("gradient", np.gradient, lambda: (_f(4, 6),), {}),
    ("gradient", np.gradient, lambda: (_f(5),), {"edge_order": 2}),
    ("hanning", np.hanning, lambda: (), {"M": 8}),
    ("hamming", np.hamming, lambda: (), {"M": 1}),
    ("blackman", np.blackman, lambda: (), {"M": 0}),
    ("bartlett", np.bartlett, lambda: (), {"M": 5}),
    ("kaiser", np.kaiser, lambda: (), {"M": 6, "beta": 14.0}),
    ("nonzero", np.nonzero, lambda: (_f(4, 5) > 0,), {}),
    ("flatnonzero", np.flatnonzero, lambda: (_f(9) > 0,), {}),
    ("argwhere", np.argwhere, lambda: (_f(3, 4) > 0,), {}),
    ("unique", np.unique, lambda: (_ints(20, 6),), {}),
    ("unique", np.unique, lambda: (_ints(20, 6),), {"return_counts": True}),
    ("unique", np.unique, lambda: (_ints(20, 6),), {"return_index": True, "return_inverse": True}),
    ("compress", np.compress, lambda: (_f(4) > 0, _f(4, 3)), {"axis": 0}),
    ("bincount", np.bincount, lambda: (_ints(20, 6),), {}),
    ("bincount", np.bincount, lambda: (_ints(20, 6), _f(20)), {"minlength": 9}),
]
_REFUSED = {"linalg.eig", "linalg.eigvals"}


def _placeholders(graph: Graph, args: tuple[Any, ...]) -> tuple[list[Any], list[Any]]:
    # Arrays become placeholders (lists of arrays: a list of placeholders); the values fed.
    nodes: list[Any] = []
    values: list[Any] = []
    for arg in args:
        if isinstance(arg, list):
            items = [
                graph.placeholder(f"x{len(values) + i}", meta_of(a)) for i, a in enumerate(arg)
            ]
            values += arg
            nodes.append(items)
        else:
            nodes.append(graph.placeholder(f"x{len(values)}", meta_of(arg)))
            values.append(arg)
    return nodes, values


def _check_meta(meta: Any, value: Any) -> None:
    value = np.asarray(value)
    assert isinstance(meta, ArrayMeta)
    assert meta.dtype == value.dtype
    assert meta.ndim == value.ndim
    for dim, size in zip(meta.shape, value.shape, strict=True):
        assert not isinstance(dim, int) or dim == size, (meta, value.shape)


def _same(got: Any, expected: Any) -> None:
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected)
        for a, b in zip(got, expected, strict=True):
            _same(a, b)
        return
    assert np.asarray(got).dtype == np.asarray(expected).dtype
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize(("name", "function", "make", "kwargs"), CASES, ids=[c[0] for c in CASES])
def test_row_matches_the_library(
    name: str, function: Callable[..., Any], make: Callable[[], tuple[Any, ...]], kwargs: Any
) -> None:
    args = make()
    expected = function(*args, **kwargs)
    graph = Graph()
    nodes, values = _placeholders(graph, args)
    binding = lookup_function(function)
    assert binding is not None and binding.name == f"numpy.{name}"
    result = binding.apply(graph, *nodes, **kwargs)
    assert any(node.op is not None and node.op.name == name for node in graph.nodes)
    graph.output = result
    if isinstance(expected, tuple):
        for node, value in zip(result, expected, strict=True):
            _check_meta(node.meta, value)
    else:
        _check_meta(result.meta, expected)
    _same(run_graph(graph, values), expected)


def test_every_row_has_a_case() -> None:
    covered = {case[0] for case in CASES} | _REFUSED
    pure = [row.name for row in extern_rows() if row.state is ExternState.PURE]
    assert [name for name in pure if name not in covered] == []


def test_rows_register_their_ops() -> None:
    names = {op.name for op in all_ops()}
    assert all(row.name in names for row in extern_rows())
    assert extern_row("fft.fft").op.name == "fft.fft"


@pytest.mark.parametrize("name", sorted(_REFUSED))
def test_value_dependent_dtypes_are_refused(name: str) -> None:
    graph = Graph()
    x = graph.placeholder("x", ArrayMeta((3, 3), "float64"))
    binding = lookup_function(extern_row(name).function)
    assert binding is not None
    with pytest.raises(Exception, match="dtype depends on the values"):
        binding.apply(graph, x)


def test_symbolic_shapes_stay_symbolic() -> None:
    import sympy

    s0 = sympy.Symbol("s0", integer=True, positive=True)
    graph = Graph()
    x = graph.placeholder("x", ArrayMeta((s0, 6), "float64"))
    binding = lookup_function(np.fft.rfft)
    assert binding is not None
    node = binding.apply(graph, x, axis=0)
    assert str(node.meta) == "complex128[floor(s0/2) + 1, 6]"


def test_data_dependent_sizes_are_fresh_symbols() -> None:
    graph = Graph()
    x = graph.placeholder("x", ArrayMeta((5, 4), "bool"))
    rows, cols = lookup_function(np.nonzero).apply(graph, x)  # type: ignore[union-attr]
    size = rows.meta.shape[0]
    assert not isinstance(size, int) and size.is_nonnegative
    assert cols.meta.shape == (size,)
    counts = lookup_function(np.bincount).apply(graph, rows)  # type: ignore[union-attr]
    assert counts.meta.shape[0] != size


_DRAWS: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("normal", (), {"size": (3, 2)}),
    ("normal", (np.arange(4.0), 2.0), {}),
    ("uniform", (-1.0, np.ones(3)), {}),
    ("exponential", (2.0,), {"size": 5}),
    ("poisson", (np.arange(1.0, 4.0),), {}),
    ("binomial", (10, 0.3), {"size": 4}),
    ("gamma", (2.0,), {"size": 3}),
    ("beta", (2.0, 3.0), {"size": 3}),
    ("lognormal", (), {"size": 3}),
    ("laplace", (), {"size": 3}),
    ("logistic", (), {"size": 3}),
    ("geometric", (0.5,), {"size": 3}),
    ("standard_t", (3.0,), {"size": 3}),
    ("chisquare", (2.0,), {"size": 3}),
    ("random", (), {"size": (2, 3), "dtype": np.float32}),
    ("standard_normal", (), {"size": 4}),
    ("standard_exponential", (), {"size": 4}),
    ("integers", (0, 10), {"size": 6}),
    ("permutation", (np.arange(6.0),), {}),
    ("choice", (5,), {"size": 3, "replace": False}),
]


@pytest.mark.parametrize(("method", "args", "kwargs"), _DRAWS, ids=[d[0] for d in _DRAWS])
def test_generator_draws_are_bit_identical(method: str, args: Any, kwargs: Any) -> None:
    eager, traced = np.random.default_rng(3), np.random.default_rng(3)
    graph = Graph()
    nodes, values = _placeholders(graph, tuple(a for a in args if isinstance(a, np.ndarray)))
    inputs = iter(nodes)
    call_args = [next(inputs) if isinstance(a, np.ndarray) else a for a in args]
    binding = lookup_function(getattr(traced, method))
    assert binding is not None
    first = binding.apply(graph, *call_args, **kwargs)
    second = binding.apply(graph, *call_args, **kwargs)
    graph.output = (first, second)
    expected = (getattr(eager, method)(*args, **kwargs), getattr(eager, method)(*args, **kwargs))
    _check_meta(first.meta, expected[0])
    _same(run_graph(graph, values), expected)
    assert eager.bit_generator.state == traced.bit_generator.state


def test_every_generator_row_has_a_case() -> None:
    covered = {f"random.{d[0]}" for d in _DRAWS}
    rows = [row.name for row in extern_rows() if row.state is ExternState.GENERATOR]
    assert [name for name in rows if name not in covered] == []
