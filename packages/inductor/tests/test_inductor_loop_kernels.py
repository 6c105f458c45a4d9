"""Loops with array-sized bodies as one C loop calling the body's fused kernels
(codegen/c/loop_kernels.py, loop_stores.py): values, dtypes, in-place effects and errors as
NumPy gives them, and the loop run from C (no host loop)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
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


# -- stores into views of a symbolic size start where capture resolved them ----------------

_BOUNDS = [None, -6, -3, -1, 0, 1, 3, 8]


def _store_through_view(size: int, item: slice, form: str) -> tuple[Any, list[Any]]:
    # A body graph storing into `A[item, 1]` of `A: float64[s0, 3]` (s0 seen as `size`):
    # `A[item, 1] = A[item, 1] * 2.0` (form "setitem") or `v = A[item, 1]; v += 1.0`
    # ("in_place"). The symbol, and the stores into A its kernels make.
    from numpile_capture import ArrayMeta, Graph, get_op
    from numpile_capture.dynamic_shapes import shape_env_in_use
    from numpile_guards import ShapeEnv
    from numpile_inductor.codegen.c.loop_stores import recorded_starts, stores_as_kernels
    from numpile_inductor.lowering import lower_graph

    index = (item, 1)
    env = ShapeEnv()
    s0 = env.create_symbol(size, "L['A'].shape[0]")
    with shape_env_in_use(env):
        graph = Graph()
        A = graph.placeholder("A", ArrayMeta((s0, 3), "float64"))
        view = graph.call(get_op("getitem"), A, index=index)
        if form == "setitem":
            value = graph.call(get_op("multiply"), view, 2.0)
            graph.call(get_op("setitem"), A, value, index=index)
        else:
            graph.call(get_op("add_"), view, 1.0)
        graph.output = A
    program = lower_graph(graph, data_indices=False)
    stores = stores_as_kernels(program, recorded_starts(graph))
    return s0, [
        store
        for step in stores.steps
        for store in getattr(step, "stores", ())
        if store.buffer == program.inputs[0]
    ]


@pytest.mark.parametrize("size", [2, 3, 5, 8])
def test_stores_into_symbolic_views_write_where_python_writes(size: int) -> None:
    # Brute force over slices (negative, stepped, clamped bounds): each store kernel a
    # body's store into a view of a symbolic size becomes writes the elements Python's
    # slice picks at that size. A store derived by matching lengths wrote `A[s0 - 6, 1]`
    # for `A[-6:-4:3, 1] += 1.0` at size 5 (before the array); now it reads the start
    # capture recorded. A value of length 1 stored into a symbolic slice stays an extern:
    # it could broadcast, so it does not tell the view's length.
    import itertools

    import sympy

    from numpile_inductor.index import loop_var

    kernels = 0
    for start, stop, step in itertools.product(_BOUNDS, _BOUNDS, [None, 2, 3, -1, -2]):
        item = slice(start, stop, step)
        want = list(range(*item.indices(size)))
        if not want:
            continue
        for form in ("setitem", "in_place"):
            s0, found = _store_through_view(size, item, form)
            if not found:
                assert form == "setitem" and len(want) == 1, (item, form)
                continue
            (store,) = found
            rows = [
                sympy.sympify(store.index[0]).subs({s0: size, loop_var(0): k})
                for k in range(len(want))
            ]
            assert rows == want, (item, form)
            assert store.index[1] == 1
            kernels += 1
    assert kernels > 0


def _compiled_dynamic(fn: Callable[..., Any], tmp_path: Path) -> Callable[..., Any]:
    from numpile_capture import compile_function

    options = {"trace.enabled": True, "trace.debug_dir": str(tmp_path)}
    return compile_function(fn, backend="inductor", options=options, dynamic=True)


def _sources(tmp_path: Path) -> list[str]:
    return [p.read_text() for p in sorted(tmp_path.glob("*/output_code.c"))]


def _in_place_views(A: Any, steps: int) -> Any:
    for _ in range(steps):
        v = A[-6:-4:3, 1]
        v += 1.0
        w = A[-3::-2, 1:]
        w *= 0.5
    return A


def _stores_by_the_index(A: Any) -> Any:
    for i in range(A.shape[0]):
        A[i, -6:-4:3] = A[i, -6:-4:3] * 0.5 + 1.0
        A[-3::-2, i] += 2.0
    return A


@pytest.mark.parametrize(
    ("fn", "args"), [(_in_place_views, (3,)), (_stores_by_the_index, ())], ids=["views", "index"]
)
def test_stores_into_symbolic_views_in_kept_loops_match_eager(
    fn: Callable[..., Any], args: tuple[Any, ...], tmp_path: Path
) -> None:
    # One compile per guard branch of the slices' clamps, sizes through the symbol: values
    # and in-place writes as eager, each loop run from C (the in-place views were a host
    # loop at size 5, where `-6` clamps: the old derivation found no start).
    compiled = _compiled_dynamic(fn, tmp_path)
    for size in (9, 12, 5, 2):
        A = np.arange(size * size, dtype=np.float64).reshape(size, size) + 1.0
        ours, theirs = A.copy(), A.copy()
        np.testing.assert_array_equal(compiled(ours, *args), fn(theirs, *args))
        np.testing.assert_array_equal(ours, theirs)
    sources = _sources(tmp_path)
    assert sources
    for source in sources:
        assert "static PyObject *loop_" in source


# -- stores at the loop index (`stack[i] = h`): a row view and a kernel, no NumPy call --------


def _stack_rows(x: Any, S: Any) -> Any:
    h = x
    for i in range(S.shape[0]):
        S[i] = h
        h = np.tanh(h * 0.7 + 0.1)
    return h


def _stack_parts(x: Any, S: Any, C: Any) -> Any:
    h = x
    for i in range(S.shape[0]):
        S[i, 1:] = h[:-1] * 2.0
        C[:, i] = h[:3]
        S[i, 0] = 1.5
        h = np.sin(h) + 0.25
    return h


@pytest.mark.parametrize("steps", [0, 1, 2, 7])
def test_stores_at_the_index_are_kernels_into_row_views(steps: int) -> None:
    x = np.random.default_rng(steps).uniform(-1, 1, 5)
    # tanh and sin in C may differ from NumPy's in the last bit: values compared close.
    compiled = _check(_stack_rows, x, np.zeros((steps, 5)), exact=False)
    assert compiled.kernel_loop
    assert "np_loop_index(np_i" in compiled.source  # the row's bounds check, in C
    S, C = np.full((steps, 5), -1.0), np.zeros((3, steps))
    compiled = _check(_stack_parts, x, S, C, exact=False)
    assert compiled.kernel_loop


def test_a_store_at_the_index_casts_and_broadcasts_as_numpy() -> None:
    def stores(x: Any, k: Any, S: Any) -> Any:
        h = x
        for i in range(S.shape[0]):
            S[i] = h[:1]  # one element broadcast over the row
            S[i, 1:] = k  # int32 into float64
            S[i, 2] = 7  # a Python int
            h = h * 1.5
        return h

    k = np.array([3, -4], dtype=np.int32)
    compiled = _check(stores, np.arange(1.0, 4.0), k, np.zeros((4, 3)))
    assert compiled.kernel_loop


def test_a_store_at_the_index_out_of_bounds_raises_after_the_writes_before_it() -> None:
    def past(x: Any, S: Any) -> Any:
        h = x
        for i in range(S.shape[0] + 2):
            S[i] = h
            h = h + 1.0
        return h

    x, S = np.arange(3.0), np.zeros((4, 3))
    compiled = _Compiled(past, (x, S))
    assert compiled.kernel_loop
    ours, theirs = S.copy(), S.copy()
    with pytest.raises(IndexError) as mine:
        compiled.fn(x, ours)
    with pytest.raises(IndexError) as eager:
        past(x, theirs)
    assert str(mine.value) == str(eager.value)
    np.testing.assert_array_equal(ours, theirs)


def test_a_store_at_the_index_of_an_array_the_body_reads_stays_on_the_host_loop() -> None:
    # `S[i] = S[i - 1] + x`: the body reads the array it stores a row of; NumPy's result
    # (the host loop runs it) and no row view.
    def shifted(x: Any, S: Any) -> Any:
        for i in range(1, S.shape[0]):
            S[i] = S[i - 1] * 0.5 + x
        return S

    compiled = _check(shifted, np.arange(3.0), np.ones((5, 3)))
    assert not compiled.kernel_loop


def test_a_row_read_and_stored_at_the_index_is_updated_in_place() -> None:
    # `S[i] = S[i] * 0.5 + h` (what a reverse loop does to sum a row's cotangent): the
    # row view read and the one stored are the same memory, read before the store.
    def update(x: Any, S: Any) -> Any:
        h = x
        for i in range(S.shape[0]):
            S[i] = S[i] * 0.5 + h
            h = h * 0.75
        return h

    compiled = _check(update, np.arange(3.0), np.arange(12.0).reshape(4, 3))
    assert compiled.kernel_loop


def test_a_row_read_at_other_elements_than_stored_gives_numpys_result() -> None:
    # `S[i] = S[i, ::-1] + h` reads elements of the row the store writes: NumPy computes
    # the value first; so does the host loop the body then runs on.
    def reverse(x: Any, S: Any) -> Any:
        h = x
        for i in range(S.shape[0]):
            S[i] = S[i, ::-1] + h
            h = h * 0.5
        return S, h

    compiled = _check(reverse, np.arange(3.0), np.arange(12.0).reshape(4, 3))
    assert not compiled.kernel_loop


def test_elements_at_the_index_are_pointers_into_the_argument() -> None:
    # Horner's rule: `for c in coeffs` reads one element per iteration, a 0-d view of
    # `coeffs` moved per iteration as rows are (no body run with NumPy).
    def horner(x: Any, coeffs: Any) -> Any:
        out = np.zeros_like(x)
        for c in coeffs:
            out = out * x + c
        return out

    compiled = _check(horner, np.linspace(-1.0, 1.0, 9), np.arange(1.0, 6.0))
    assert compiled.kernel_loop


def test_elements_and_rows_at_the_index_with_a_product_per_row() -> None:
    # bicg: `r[i]` an element and `A[i]` a row at the index, `A[i] @ p` into `q[i]` (the
    # corpus runs it at 0 and 1 rows too: theme unseen_loops).
    def bicg(A: Any, p: Any, r: Any) -> Any:
        s = np.zeros(A.shape[1])
        q = np.zeros(A.shape[0])
        for i in range(A.shape[0]):
            s += r[i] * A[i]
            q[i] = A[i] @ p
        return s, q

    rng = np.random.default_rng(1)
    args = rng.standard_normal((4, 5)), rng.standard_normal(5), rng.standard_normal(4)
    compiled = _check(bicg, *args, exact=False)
    assert compiled.kernel_loop


def test_an_element_of_an_array_the_body_writes_is_read_before_the_write() -> None:
    # `v = r[i]` is a copy in NumPy: the store `r[i] = 0` after it must not change `v`,
    # so the element is no pointer into `r` (the host loop runs the body).
    def consume(x: Any, r: Any) -> Any:
        s = np.zeros_like(x)
        for i in range(r.shape[0]):
            v = r[i]
            r[i] = 0.0
            s = s + v * x
        return s

    compiled = _check(consume, np.arange(3.0), np.arange(1.0, 5.0))
    assert not compiled.kernel_loop
