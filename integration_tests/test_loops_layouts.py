"""Loops over inputs of any layout stay loops (issue 23): Fortran order, a transpose, a
strided view into a larger array and reversed axes. Each input's sizes are symbols whose
strides follow from them where the layout is dense, and stay exact past a gap; before,
only C-contiguous inputs got symbolic sizes, so a square matrix in Fortran order stayed
static beside a symbolic vector, `L[i, :i] @ y[:i]` could not be proven and
`triangular_solves` unrolled into a C file GCC took minutes on.

Every loop program of the corpus below runs on each layout at trip counts 0, 1 and
several, eager against compiled (values, dtypes, the inputs' in-place effects: the
corpus' checks), with the loop kept; one program per layout runs through the inductor as
one C loop nest (no body run with NumPy per iteration).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np
import programs_loops
import pytest
from harness import Inputs, Program, load_corpus, run_program

import numpile
from benchmarks.loops import triangular_solves

Array = np.ndarray[Any, Any]


def _fortran(a: Array) -> Array:
    return np.asfortranarray(a)


def _transposed(a: Array) -> Array:
    return np.ascontiguousarray(a.T).T


def _strided(a: Array) -> Array:
    # Every other element of a larger array, one element in: no stride follows the sizes.
    parent = np.zeros(tuple(2 * size + 1 for size in a.shape), a.dtype)
    view = parent[tuple(slice(1, None, 2) for _ in a.shape)]
    view[...] = a
    return view


def _reversed(a: Array) -> Array:
    flip = tuple(slice(None, None, -1) for _ in a.shape)
    return a[flip].copy()[flip]


LAYOUTS: dict[str, Callable[[Array], Array]] = {
    "fortran": _fortran,
    "transposed": _transposed,
    "strided": _strided,
    "reversed": _reversed,
}

# NOTE: loop programs of the corpus whose loops slice or index 2-D (and 1-D) inputs by the
# index; three write their input in place.
PROGRAMS = (
    "forward_substitution_by_slices",
    "back_substitution_by_slices",
    "lu_row_by_row_in_place",
    "floyd_warshall_rows_in_place",
    "gauss_seidel_rows_by_slices",
    "prefix_sums_by_growing_slices",
)


def _relaid(name: str, layout: str, sizes: tuple[int, ...]) -> Program:
    (prog,) = [p for p in load_corpus() if p.fn is getattr(programs_loops, name)]
    relayout = LAYOUTS[layout]

    def make_inputs(rng: np.random.Generator, n: int) -> Inputs:
        made = prog.make_inputs(rng, n)
        args = made.args if isinstance(made, Inputs) else made
        return Inputs(tuple(relayout(a) if isinstance(a, np.ndarray) else a for a in args))

    return Program(f"{name}_{layout}", "loops", prog.fn, make_inputs, sizes=sizes)


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("name", PROGRAMS)
def test_loop_over_any_layout_is_kept_and_matches_eager(
    name: str, layout: str, compile_fn: Callable[..., Callable[..., Any]]
) -> None:
    prog = _relaid(name, layout, sizes=(5, 0, 1, 9))
    out = numpile.explain(prog.fn)(*prog.inputs(5).args)
    assert out.loops_not_kept == ()
    assert out.graph_break_count == 0
    assert "for_loop" in str(out.graphs[0])
    assert run_program(prog, compile_fn, "eager") == []


@pytest.mark.parametrize(
    ("name", "layout"),
    [
        ("back_substitution_by_slices", "strided"),
        ("floyd_warshall_rows_in_place", "reversed"),
        ("gauss_seidel_rows_by_slices", "transposed"),
    ],
)
def test_loop_over_any_layout_runs_as_c(
    name: str,
    layout: str,
    compile_fn: Callable[..., Callable[..., Any]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A strided view's strides are exact (another order compiles again): one order there.
    sizes = (5,) if layout == "strided" else (5, 9)
    with caplog.at_level(logging.INFO, logger="numpile.perf_hints"):
        assert run_program(_relaid(name, layout, sizes=sizes), compile_fn, "inductor") == []
    assert not [r for r in caplog.records if "per iteration" in r.getMessage()]


def test_triangular_solves_on_fortran_order_matrices_is_one_c_loop_nest(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The reproduction: Fortran-order L and U beside a C-order b.
    def inputs(n: int) -> tuple[Array, Array, Array]:
        rng = np.random.default_rng(n)
        A = rng.standard_normal((n, n)) + n * np.eye(n)
        return np.asfortranarray(np.tril(A)), np.asfortranarray(np.triu(A)), rng.standard_normal(n)

    out = numpile.explain(triangular_solves)(*inputs(8))
    assert out.loops_not_kept == ()
    assert str(out.graphs[0]).count("for_loop") == 2
    compiled = numpile.compile(triangular_solves)
    with caplog.at_level(logging.INFO, logger="numpile.perf_hints"):
        for n in (8, 24):
            got = compiled(*inputs(n))
            want = triangular_solves(*inputs(n))
            assert got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=1e-12)
    assert not [r for r in caplog.records if "per iteration" in r.getMessage()]
