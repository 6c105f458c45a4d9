"""Loops with array-sized bodies as one C loop calling the body's fused kernels
(codegen/c/loop_kernels.py, loop_stores.py): values, dtypes, in-place effects and errors as
NumPy gives them, and the loop run from C (no host loop)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from numpile_capture import capture_function
from numpile_inductor import compile_graph


class _Compiled:
    # A function's graph compiled by the inductor, called with the function's arguments.
    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        graph = capture_function(fn, tuple(_copy(a) for a in args), {}).graph
        self.compiled = compile_graph(graph)
        self.source = self.compiled.source
        names = list(inspect.signature(fn).parameters)
        self.order = [names.index(p.name) for p in graph.placeholders]

    def fn(self, *args: Any) -> Any:
        return self.compiled.fn(*(args[k] for k in self.order))

    @property
    def kernel_loop(self) -> bool:
        # The loop is a C function whose body calls kernels of its own.
        return "static PyObject *loop_" in self.source and "_k0(" in self.source


def _copy(value: Any) -> Any:
    return value.copy() if isinstance(value, np.ndarray) else value


def _check(fn: Callable[..., Any], *args: Any, exact: bool = True) -> _Compiled:
    compiled = _Compiled(fn, args)
    ours = [_copy(a) for a in args]
    theirs = [_copy(a) for a in args]
    got = compiled.fn(*ours)
    want = fn(*theirs)
    compare = np.testing.assert_array_equal if exact else np.testing.assert_allclose
    got_leaves = got if isinstance(got, tuple) else (got,)
    want_leaves = want if isinstance(want, tuple) else (want,)
    for mine, eager in zip(got_leaves, want_leaves, strict=True):
        assert np.asarray(mine).dtype == np.asarray(eager).dtype
        assert np.shape(mine) == np.shape(eager)
        compare(mine, eager)
    for mine, eager in zip(ours, theirs, strict=True):
        compare(mine, eager)  # the inputs' in-place writes
    return compiled


def _jacobi(A: Any, B: Any, steps: int) -> Any:
    for _ in range(steps):
        B[1:-1, 1:-1] = 0.2 * (
            A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1]
        )
        A[1:-1, 1:-1] = 0.2 * (
            B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1]
        )
    return A, B


def _grid(n: int = 12) -> tuple[Any, Any]:
    rng = np.random.default_rng(0)
    return rng.standard_normal((n, n)), np.zeros((n, n))


@pytest.mark.parametrize("steps", [0, 1, 7])
def test_time_stepped_stencil_is_one_c_loop_of_kernels(steps: int) -> None:
    def jacobi(A: Any, B: Any) -> Any:
        return _jacobi(A, B, steps)

    compiled = _check(jacobi, *_grid())
    if not steps:
        return  # no loop left to run (run-time trip counts of 0: the loop corpus)
    assert compiled.kernel_loop
    # The stores into the views are fused into the kernels: no NumPy setitem per step.
    body = compiled.source[compiled.source.index("static PyObject *loop_") :]
    body = body[: body.index("\n}\n")]
    assert "PyObject_Vectorcall(eager" in body  # only the fallback calls NumPy
    assert body.count("PyObject_Vectorcall") == 1
    assert "#pragma omp" not in body  # no parallel region opened by the loop itself


def test_overlapping_arguments_give_numpys_result() -> None:
    # B is A: the kernels would read elements they already wrote; the loop runs with NumPy.
    def jacobi(A: Any, B: Any) -> Any:
        return _jacobi(A, B, 3)

    compiled = _Compiled(jacobi, _grid())
    assert compiled.kernel_loop
    ours = _grid()[0]
    theirs = ours.copy()
    compiled.fn(ours, ours)
    jacobi(theirs, theirs)
    np.testing.assert_array_equal(ours, theirs)


def test_strided_arguments() -> None:
    def jacobi(A: Any, B: Any) -> Any:
        return _jacobi(A, B, 4)

    A, B = _grid(16)
    compiled = _Compiled(jacobi, (A[::2, ::2].copy(), B[::2, ::2].copy()))
    ours, theirs = A.copy(), A.copy()
    ours_b, theirs_b = B.copy(), B.copy()
    compiled.fn(ours[::2, ::2], ours_b[::2, ::2])
    jacobi(theirs[::2, ::2], theirs_b[::2, ::2])
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(ours_b, theirs_b)


def _particles(pos: Any, vel: Any, steps: int) -> Any:
    n = pos.shape[0]
    for _ in range(steps):
        d = pos.reshape(n, 1, 2) - pos.reshape(1, n, 2)
        r2 = (d * d).sum(axis=2) + 0.01
        acc = -(d * (r2**-1.5).reshape(n, n, 1)).sum(axis=1)
        vel = vel + acc * 0.001
        pos = pos + vel * 0.001
    return pos, vel


@pytest.mark.parametrize("steps", [0, 1, 7])
def test_carried_arrays_computed_anew(steps: int) -> None:
    def particles(pos: Any, vel: Any) -> Any:
        return _particles(pos, vel, steps)

    rng = np.random.default_rng(1)
    pos, vel = rng.standard_normal((9, 2)), rng.standard_normal((9, 2)) * 0.1
    compiled = _check(particles, pos, vel, exact=False)
    if not steps:
        return
    assert compiled.kernel_loop
    # The float power stays NumPy's (bit-identical), called from C into its buffer.
    assert '"power"' in compiled.source
    got_pos, got_vel = compiled.fn(pos, vel)
    # Fresh arrays, never the inputs nor each other.
    assert not np.shares_memory(got_pos, pos)
    assert not np.shares_memory(got_pos, got_vel)


def test_in_place_updates_with_the_index_and_a_python_float() -> None:
    def leapfrog(pos: Any, vel: Any, dt: float) -> Any:
        for t in range(6):
            pos += dt * vel
            vel -= dt * pos
            vel[0] = 0.0
            pos[-1, :] += t
        return pos, vel

    rng = np.random.default_rng(2)
    compiled = _check(leapfrog, rng.standard_normal((7, 3)), rng.standard_normal((7, 3)), 0.1)
    assert compiled.kernel_loop


def test_store_reading_its_target_at_other_elements() -> None:
    # NumPy computes `A[:-1] + 1` before it stores into `A[1:]`.
    def shift(A: Any) -> Any:
        for _ in range(3):
            A[1:, :] = A[:-1, :] * 0.5 + 1.0
            A[:, :-1] += A[:, 1:]
        return A

    compiled = _check(shift, np.random.default_rng(3).standard_normal((6, 5)))
    assert compiled.kernel_loop


def test_int_arrays_and_broadcast_stores() -> None:
    def counts(x: Any, row: Any) -> Any:
        for t in range(5):
            x[1:, :] = row
            x += t
            x[0] = 7
        return x

    compiled = _check(counts, np.arange(12, dtype=np.int64).reshape(3, 4), np.arange(4))
    assert compiled.kernel_loop


def test_out_of_bounds_index_raises_with_earlier_writes_kept() -> None:
    def steps(A: Any) -> Any:
        for i in range(A.shape[0] + 2):
            A[1:, :] = A[1:, :] + 1.0
            A[i] = 0.0
        return A

    A = np.zeros((4, 3))
    compiled = _Compiled(steps, (A,))
    ours, theirs = A.copy(), A.copy()
    with pytest.raises(IndexError) as mine:
        compiled.fn(ours)
    with pytest.raises(IndexError) as eager:
        steps(theirs)
    assert str(mine.value) == str(eager.value)
    np.testing.assert_array_equal(ours, theirs)


def test_kernels_keep_their_own_parallel_threshold() -> None:
    def jacobi(A: Any, B: Any) -> Any:
        return _jacobi(A, B, 2)

    # A grid past the threshold (the work of a small one is known to stay below it: no
    # region is written at all, see `loop.parallel`).
    source = _Compiled(jacobi, _grid(300)).source
    kernels = source[source.index("static int loop_") : source.index("static PyObject *loop_")]
    assert "#pragma omp parallel " in kernels
    small = _Compiled(jacobi, _grid()).source
    assert "#pragma omp parallel " not in small[small.index("static int loop_") :]


def test_rows_by_the_index_are_views_moved_per_iteration() -> None:
    def rows(A: Any, w: Any) -> Any:
        acc = np.zeros(A.shape[1])
        for i in range(A.shape[0]):
            acc = acc * 0.5 + A[i] * w + i
        return acc

    compiled = _check(rows, np.random.default_rng(4).standard_normal((6, 4)), np.arange(4.0))
    assert compiled.kernel_loop
    assert "np_loop_index(np_i" in compiled.source  # the row's bounds check, in C


def test_loop_over_the_first_axis() -> None:
    def over(xs: Any) -> Any:
        acc = np.zeros(xs.shape[1:])
        for x in xs:
            acc = acc + np.sqrt(x * x)
        return acc

    compiled = _check(over, np.random.default_rng(5).standard_normal((5, 3, 2)))
    assert compiled.kernel_loop


def test_row_out_of_bounds_raises_numpys_index_error_after_the_writes_before_it() -> None:
    def steps(A: Any, B: Any) -> Any:
        acc = np.zeros(A.shape[1])
        for i in range(A.shape[0] + 2):
            B[0, :] += 1.0
            acc = acc + A[i]
        return acc

    A, B = np.ones((3, 2)), np.zeros((3, 2))
    compiled = _Compiled(steps, (A, B))
    assert compiled.kernel_loop
    ours, theirs = B.copy(), B.copy()
    with pytest.raises(IndexError) as mine:
        compiled.fn(A, ours)
    with pytest.raises(IndexError) as eager:
        steps(A, theirs)
    assert str(mine.value) == str(eager.value)
    np.testing.assert_array_equal(ours, theirs)  # four writes: the failing iteration's too
