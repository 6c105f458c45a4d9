"""Kernels below the parallel threshold run outside any OpenMP region (`codegen/c/loop.py`).

An OpenMP region whose `if` clause is false still sets up a team; a kernel whose work is
below the threshold runs a serial copy of its loops instead, and one whose constant sizes
keep it below has no region at all. Both copies give NumPy's values and flags.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
import sympy

from numpile_capture import ArrayMeta, Graph, get_op, run_graph
from numpile_inductor import compile_graph

S0 = sympy.Symbol("s0", integer=True, positive=True)


def _op(g: Graph, name: str, *args: Any, **kwargs: Any) -> Any:
    return g.call(get_op(name), *args, **kwargs)


def _divide_graph(shape: tuple[Any, ...]) -> Graph:
    graph = Graph()
    strides = (1,) if len(shape) == 1 else (shape[1], 1)
    meta = ArrayMeta(shape, np.dtype("float64"), strides)
    x, y = graph.placeholder("x", meta), graph.placeholder("y", meta)
    graph.output = (_op(graph, "add", _op(graph, "divide", x, y), 1.0), _op(graph, "sum", x))
    return graph


def _inputs(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(n)
    x, y = rng.normal(size=n), rng.normal(size=n)
    y[n // 2] = 0.0  # a division by zero: NumPy warns, the kernel's flags must say so
    return x, y


@pytest.mark.parametrize("n", [1, 7, 1000, 70_000])
def test_symbolic_sizes_on_both_sides_of_the_threshold_give_numpys_values_and_warnings(
    n: int,
) -> None:
    graph = _divide_graph((S0,))
    compiled = compile_graph(graph)
    kernels = compiled.source[: compiled.source.index("static PyObject *call")]
    # The region and its serial copy, chosen at run time by the kernel's work.
    assert "if (work >= " in kernels and "} else {" in kernels
    x, y = _inputs(n)
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        got = compiled.fn(x, y)
    with warnings.catch_warnings(record=True) as eager:
        warnings.simplefilter("always")
        want = run_graph(graph, [x, y])
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)
    assert [str(w.message) for w in ours] == [str(w.message) for w in eager]
    assert any("divide by zero" in str(w.message) for w in ours)


def test_constant_sizes_below_the_threshold_write_no_region() -> None:
    graph = _divide_graph((4, 5))
    compiled = compile_graph(graph)
    assert "#pragma omp parallel" not in compiled.source
    x, y = (a.reshape(4, 5) for a in _inputs(20))
    with np.errstate(divide="ignore"):
        got = compiled.fn(x, y)
        want = run_graph(graph, [x, y])
    np.testing.assert_array_equal(got[0], want[0])


def test_constant_sizes_past_the_threshold_keep_only_the_region() -> None:
    graph = _divide_graph((300, 300))
    compiled = compile_graph(graph)
    kernels = compiled.source[: compiled.source.index("static PyObject *call")]
    assert "#pragma omp parallel reduction" in kernels
    assert "if (work >= " not in kernels
    x, y = (a.reshape(300, 300) for a in _inputs(90_000))
    with np.errstate(divide="ignore"):
        got = compiled.fn(x, y)
        want = run_graph(graph, [x, y])
    np.testing.assert_array_equal(got[0], want[0])


def test_the_idle_thread_count_reads_the_core_count_once_per_sample() -> None:
    # omp_get_num_procs() is a system call (sched_getaffinity): a call of a small graph
    # pays it only when the load sample is taken again, not on every call.
    from numpile_inductor.codegen.c.threads import THREAD_HELPERS

    body = THREAD_HELPERS[THREAD_HELPERS.index("static int np_idle_threads") :]
    sample = body[body.index("if (g_busy_at == 0") : body.index("const int idle")]
    per_call = body.replace(sample, "")
    assert "omp_get_num_procs()" in sample
    # Outside the sample, only the first call's check of the process's cpuset reads it.
    assert per_call.count("omp_get_num_procs()") == 1
    assert "whole_machine = omp_get_num_procs()" in per_call
