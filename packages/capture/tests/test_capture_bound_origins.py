"""Ints that only bound kept loops never specialize (`bound_origins`), under the default
`dynamic=None` policy: a Python int trip count becomes a graph input and a size that bounds
a loop a symbol from the first compile; ints whose value matters still specialize.

Each program runs compiled and eagerly on the same inputs (values, dtypes, in-place effects).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from numpile_capture import compile_function, config, lookup_backend, sympy_sizes
from numpile_capture.capture_events import recording_captures
from numpile_capture.dynamic_shapes import graph_has_symbols
from numpile_guards import light_sizes

pytestmark = pytest.mark.usefixtures("fresh_dispatch")


def _same(got: Any, want: Any) -> None:
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _same(g, w)
        return
    assert type(got) is type(want) or np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12)


def _compiles(
    fn: Callable[..., Any], calls: list[tuple[Any, ...]], **options: Any
) -> tuple[int, list[Any]]:
    """How many graphs compiling `fn` made over `calls`; the compiled results match eager."""
    compiled = compile_function(fn, **{"backend": "eager", **options})
    results = []
    with recording_captures() as events:
        for args in calls:
            fresh = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
            got = compiled(*fresh)
            eager_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
            want = fn(*eager_args)
            _same(got, want)
            for g, w in zip(fresh, eager_args, strict=True):  # in-place effects
                if isinstance(w, np.ndarray):
                    np.testing.assert_allclose(g, w, rtol=1e-12)
            results.append(got)
    assert not any(event.eager for event in events)
    return sum(1 for event in events if event.graph is not None), results


def gauss_seidel(A: Any, b: Any, sweeps: int) -> Any:
    n = b.shape[0]
    x = np.zeros_like(b)
    for _ in range(sweeps):
        for i in range(n):
            x[i] = (b[i] - A[i, :i] @ x[:i] - A[i, i + 1 :] @ x[i + 1 :]) / A[i, i]
    return x


def stencil_steps(u: Any, steps: int) -> Any:
    u = u.copy()
    for _ in range(steps):
        u[1:-1] = 0.25 * u[:-2] + 0.5 * u[1:-1] + 0.25 * u[2:]
    return u


def decay(x: Any, steps: int, rate: float) -> Any:
    s = 0.0
    for k in range(1, steps + 1):
        s = s * rate + x[k % x.shape[0]]
    return s


def back_substitution(U: Any, b: Any) -> Any:
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in range(n - 1, -1, -1):
        x[i] = (b[i] - U[i, i + 1 :] @ x[i + 1 :]) / U[i, i]
    return x


def lu_in_place(A: Any) -> Any:
    A = A.copy()
    n = len(A)
    for i in range(n):
        for j in range(i):
            A[i, j] = (A[i, j] - A[i, :j] @ A[:j, j]) / A[j, j]
        for j in range(i, n):
            A[i, j] = A[i, j] - A[i, :i] @ A[:i, j]
    return A


def _dominant(n: int) -> Any:
    rng = np.random.default_rng(n)
    A = rng.standard_normal((n, n))
    A[np.diag_indices(n)] = np.abs(A).sum(axis=1) + 1.0
    return A


@pytest.mark.parametrize("counts", [(0, 1, 5, 50), (5, 0, 50, 1)])
def test_python_int_trip_counts_compile_once(counts: tuple[int, ...]) -> None:
    A, b = _dominant(6), np.linspace(1.0, 2.0, 6)
    x = np.linspace(-1.0, 1.0, 9)
    assert _compiles(gauss_seidel, [(A, b, t) for t in counts])[0] == 1
    assert _compiles(stencil_steps, [(x, t) for t in counts])[0] == 1
    assert _compiles(decay, [(x, t, 0.5) for t in counts])[0] == 1


def test_sizes_that_bound_loops_compile_once() -> None:
    calls = [(np.triu(_dominant(n)), np.linspace(1.0, 2.0, n)) for n in (5, 50, 17)]
    assert _compiles(back_substitution, calls)[0] == 1
    # `len(A)` of a square matrix: both dims become one symbol (duck sizing).
    assert _compiles(lu_in_place, [(_dominant(n),) for n in (4, 40, 9)])[0] == 1


def zip_weighted(a: Any, b: Any) -> Any:
    acc = 0
    out = np.zeros(a.shape[0])
    for i, (u, v) in enumerate(zip(a, b, strict=True)):
        acc += i
        out[i] = u * v
    return out, acc


def jacobi_until(b: Any, tol: float, maxit: int) -> Any:
    # `it < maxit` bounds the kept `while`: maxit is a trip count as `range(sweeps)`'s is.
    u = np.zeros_like(b)
    err = tol + 1.0
    it = 0
    while err > tol and it < maxit:
        new = u.copy()
        for i in range(1, b.shape[0] - 1):
            new[i] = 0.5 * (u[i - 1] + u[i + 1] + b[i])
        err = np.abs(new - u).max()
        u = new
        it += 1
    return u, it


def test_a_zip_of_arrays_and_a_while_counters_bound_compile_once() -> None:
    vectors = [(np.linspace(0.0, 1.0, n), np.linspace(1.0, 2.0, n)) for n in (5, 50, 17)]
    assert _compiles(zip_weighted, vectors)[0] == 1
    b = np.linspace(-1.0, 1.0, 9)
    assert _compiles(jacobi_until, [(b, 1e-9, m) for m in (3, 30, 7)])[0] == 1


def _zeros_of(x: Any, n: int) -> Any:
    out = np.zeros(n)
    for i in range(n):
        out[i] = x[i] * 2.0
    return out


def _branch_on(x: Any, n: int) -> Any:
    s = 0.0
    for i in range(n):
        s += x[i]
    if n > 3:
        s = s * 2.0
    return s


def test_ints_whose_value_matters_still_specialize() -> None:
    x = np.linspace(0.0, 1.0, 12)
    # A created array's size is a size symbol of the int (2 and more): one graph.
    assert _compiles(_zeros_of, [(x, 5), (x, 5), (x, 7), (x, 11)])[0] == 1
    # A branch guards its outcome only: 5 and 9 share a graph, 2 takes the other branch.
    assert _compiles(_branch_on, [(x, 5), (x, 9), (x, 2)])[0] == 2


def _scaled(x: Any, k: int) -> Any:
    return x * k


def test_ints_that_bound_no_loop_and_dynamic_false_are_unchanged() -> None:
    x = np.linspace(0.0, 1.0, 8)
    # No loop: baked in first, a graph input once it changes (automatic dynamic).
    count, _ = _compiles(_scaled, [(x, 2), (x, 3), (x, 4)])
    assert count == 2
    # dynamic=False specializes every int, loop bounds included.
    count, _ = _compiles(stencil_steps, [(x, 2), (x, 3)], dynamic=False)
    assert count == 2


def _kept_loops(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    # The loops capture kept (their bodies traced to the end), counted as it keeps them.
    from numpile_capture import loop_capture

    kept: list[int] = []
    keep = loop_capture._keep_loop

    def counting(frame: Any, inst: Any, iterator: Any) -> None:
        keep(frame, inst, iterator)
        kept.append(inst.offset)

    monkeypatch.setattr(loop_capture, "_keep_loop", counting)
    return kept


def test_a_loop_bounded_by_inputs_is_traced_in_one_capture(monkeypatch: pytest.MonkeyPatch) -> None:
    # The static capture stops at the loop's head (its graph would be thrown away): the
    # body is traced by the capture with the bounds dynamic only, and compiles once.
    kept = _kept_loops(monkeypatch)
    x = np.linspace(-1.0, 1.0, 9)
    assert _compiles(stencil_steps, [(x, 3), (x, 30)])[0] == 1
    assert len(kept) == 1
    kept.clear()
    # Nested loops, bounded by a size that a matrix read only inside them has too.
    assert _compiles(lu_in_place, [(_dominant(n),) for n in (4, 40)])[0] == 1
    assert len(kept) == 3  # the outer loop and its two inner ones, once each
    kept.clear()
    # Back substitution reads U after the loop's head: its dims of that size widen too.
    calls = [(np.triu(_dominant(n)), np.linspace(1.0, 2.0, n)) for n in (5, 50)]
    assert _compiles(back_substitution, calls)[0] == 1
    assert len(kept) == 1


def test_a_loop_that_falls_back_after_widening_keeps_its_static_bounds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A loop that falls back whatever its bounds (here: every body trace does) was
    # unrolled with its static trip count before the shortcut: its widening ahead is
    # undone, and the trip count stays specialized, as then.
    from numpile_capture import loop_capture
    from numpile_capture.dynamic_shapes import observed_scalars
    from numpile_capture.loop_exit import LoopFallback

    def falls_back(*args: Any, **kwargs: Any) -> Any:
        raise LoopFallback("a test's body that is never kept")

    monkeypatch.setattr(loop_capture, "trace_to_fixpoint", falls_back)
    x = np.linspace(-1.0, 1.0, 9)
    assert _compiles(decay, [(x, 4, 0.5)])[0] == 1
    assert observed_scalars(decay.__code__)["L['steps']"] == (int, 4)


# Issue 23's four cases that captured once more at a new size: a loop bounded by a view's
# size, a Python float argument, CSR's nonzero count, `np.arange(n)`.


def _view_inner_sum(A: Any) -> Any:
    v = A[1:-1]
    s = 0.0
    for i in range(v.shape[0]):
        s += v[i] * 2.0
    return s


def _view_tail_copy(A: Any, k: int) -> Any:
    v = A[k:]
    out = np.zeros(A.shape[0])
    for i in range(v.shape[0]):
        out[i] = v[i] + 1.0
    return out


def test_a_loop_bounded_by_a_views_size_compiles_once() -> None:
    rng = np.random.default_rng(0)
    sizes = (8, 16, 80)
    assert _compiles(_view_inner_sum, [(rng.standard_normal(n),) for n in sizes])[0] == 1
    calls = [(rng.standard_normal(n), 2) for n in sizes]
    assert _compiles(_view_tail_copy, calls)[0] == 1
    matrix = [(rng.standard_normal((n, 3)),) for n in sizes]  # a view of a 2-d input
    assert _compiles(_view_row_sum, matrix)[0] == 1


def _view_row_sum(A: Any) -> Any:
    v = A[1:-1]
    out = np.zeros(A.shape[1])
    for i in range(v.shape[0]):
        out += v[i]
    return out


def _euler_steps(x: Any, dt: float) -> Any:
    u = x.copy()
    for i in range(1, x.shape[0]):
        u[i] = u[i - 1] + dt * x[i]
    return u


def test_a_float_argument_compiles_once_across_sizes_and_values() -> None:
    rng = np.random.default_rng(1)
    calls = [(rng.standard_normal(n), dt) for n, dt in ((8, 0.1), (16, 0.2), (80, 0.05))]
    assert _compiles(_euler_steps, calls)[0] == 1


def _csr_matvec(indptr: Any, indices: Any, data: Any, x: Any) -> Any:
    n = indptr.shape[0] - 1
    y = np.zeros(n)
    for i in range(n):
        s = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            s += data[k] * x[indices[k]]
        y[i] = s
    return y


def _csr(n: int, rng: np.random.Generator) -> tuple[Any, ...]:
    indptr = np.concatenate([[0], np.cumsum(rng.integers(0, 4, n))]).astype(np.int64)
    indices = rng.integers(0, n, indptr[-1]).astype(np.int64)
    return indptr, indices, rng.standard_normal(indptr[-1]), rng.standard_normal(n)


def test_a_csr_nonzero_count_compiles_once() -> None:
    rng = np.random.default_rng(2)
    assert _compiles(_csr_matvec, [_csr(n, rng) for n in (8, 16, 80)])[0] == 1


def test_a_csr_matrix_with_as_many_nonzeros_as_rows_compiles_once() -> None:
    # The sizes a data-bounded loop reads share no symbol (duck sizing would guard a
    # diagonal's `data` and `x` equal), so the next matrix compiles nothing.
    rng = np.random.default_rng(4)
    diagonal = [(np.arange(n + 1), np.arange(n), np.ones(n), np.ones(n)) for n in (6, 9)]
    assert _compiles(_csr_matvec, [*diagonal, _csr(30, rng)])[0] == 1


def _squares_of_arange(n: int) -> Any:
    r = np.arange(n)
    s = 0
    for i in range(r.shape[0]):
        s += r[i] * r[i]
    return s


def _times_arange(x: Any, n: int) -> Any:
    return x * np.arange(n)


def _times_positions(x: Any) -> Any:
    return x * np.arange(1, x.shape[0] - 1, 2)[0] + np.arange(x.shape[0])


def test_arange_of_a_run_time_int_is_a_size_symbol() -> None:
    assert _compiles(_squares_of_arange, [(n,) for n in (8, 16, 80)])[0] == 1
    rng = np.random.default_rng(3)
    # No loop: n is baked in first, a size symbol once it changed (automatic dynamic).
    calls = [(rng.standard_normal(n), n) for n in (8, 16, 80)]
    assert _compiles(_times_arange, calls)[0] == 2
    sized = [(rng.standard_normal(n),) for n in (8, 16, 80)]
    assert _compiles(_times_positions, sized, dynamic=True)[0] == 1


# Arrays a kept loop computes with, whose sizes bound no loop: the data a polynomial's
# coefficients loop over, an ODE's state carried through its time steps. Symbolic from the
# first compile with `config.dynamic_loop_arrays` (off by default).


@pytest.fixture
def loop_arrays() -> Iterator[None]:
    with config.patch(dynamic_loop_arrays=True):
        yield


def _horner(x: Any, coeffs: Any) -> Any:
    out = np.zeros_like(x)
    for c in coeffs:
        out = out * x + c
    return out


def _decay_steps(y: Any, steps: int) -> Any:
    t = 0.0
    for _ in range(steps):
        y = y + 0.01 * (np.sin(t) - y)
        t += 0.01
    return y, t


@pytest.mark.usefixtures("loop_arrays")
def test_arrays_a_kept_loop_reads_compile_once_across_sizes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Their sizes are symbols from the first compile (widened at the loop's head, before
    # its body is traced: one trace); a new size, 10x included, compiles nothing more.
    kept = _kept_loops(monkeypatch)
    rng = np.random.default_rng(3)
    coeffs = rng.standard_normal(6)
    calls = [(rng.standard_normal(n), coeffs) for n in (4, 7, 70)]
    assert _compiles(_horner, calls)[0] == 1
    assert len(kept) == 1


@pytest.mark.usefixtures("loop_arrays")
def test_a_state_a_kept_loop_carries_compiles_once_across_sizes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kept = _kept_loops(monkeypatch)
    rng = np.random.default_rng(5)
    calls = [(rng.standard_normal(n), n + 3) for n in (4, 7, 70)]
    assert _compiles(_decay_steps, calls)[0] == 1
    assert len(kept) == 1


def test_arrays_only_code_after_no_loop_reads_stay_static_first() -> None:
    # An array no kept loop reads is baked in first, as before (torch's automatic dynamic):
    # a new size of it compiles once more, then never again.
    def f(x: Any, w: Any, steps: int) -> Any:
        for _ in range(steps):
            w = w * 0.5
        return x * 2.0, w

    w = np.ones(3)
    calls = [(np.ones(n), w, n) for n in (4, 7, 70)]
    assert _compiles(f, calls)[0] == 2


# Widening the arrays a kept loop computes with is a bet on calls to come: where it costs
# what the static first compile does not, they are static first again (as without it),
# and only the trip count is dynamic.


def _static_arrays_only(graph: Any, example_inputs: list[Any]) -> Any:
    # A backend that compiles symbolic trip counts but not symbolic array sizes (as the
    # inductor refuses a transform's stacks sized by them).
    if graph_has_symbols(graph):
        raise NotImplementedError("symbolic array sizes")
    return lookup_backend("eager")(graph, example_inputs)


@pytest.mark.usefixtures("loop_arrays")
def test_arrays_whose_dynamic_compile_fails_are_static_first_the_trip_count_dynamic() -> None:
    rng = np.random.default_rng(5)
    y = rng.standard_normal(4)
    calls = [(y, steps) for steps in (5, 9, 40, 0)]
    assert _compiles(_decay_steps, calls, backend=_static_arrays_only)[0] == 1


@pytest.mark.usefixtures("loop_arrays")
def test_a_light_capture_keeps_the_arrays_static_where_dynamic_ones_need_sympy() -> None:
    # `u[1:-1]` of a symbolic size needs sympy, a light capture must not: its arrays are
    # static first, its trip count dynamic all the same.
    graphs: list[Any] = []

    def record(graph: Any, example_inputs: list[Any]) -> Any:
        graphs.append(graph)
        return lookup_backend("eager")(sympy_sizes(graph), example_inputs)

    record.takes_light_sizes = True  # type: ignore[attr-defined]
    x = np.linspace(-1.0, 1.0, 9)
    compiled = compile_function(stencil_steps, backend=record)
    for steps in (3, 30):
        with light_sizes():
            got = compiled(x, steps)
        np.testing.assert_array_equal(got, stencil_steps(x, steps))
    (graph,) = graphs
    assert [p.meta.shape for p in graph.placeholders if hasattr(p.meta, "shape")] == [(9,)]
