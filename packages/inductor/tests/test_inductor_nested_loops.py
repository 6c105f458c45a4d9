"""Loops nested in a body that runs op by op (nested_loops.py): each a C module of its own.

The outer bodies below slice with shapes that follow the loop index (no kernel takes them:
they run op by op); the `while` loops and the loops of `cond` branches inside them must
run as C modules of their own (counter `loop_nested_c_runs`), with eager's values, dtypes
and in-place effects. `loop_graph` gives None for a loop whose inputs have shapes that
follow an enclosing index, and a loop whose module does not run it as C, or that gets
values of other types, runs op by op.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pytest

import numpile_runtime as rt
from numpile_capture import Graph, Node, capture_function, compile_function, run_graph
from numpile_capture.testing import assert_same_as_eager as _same
from numpile_inductor.background_build import wait_idle
from numpile_inductor.loops import host_loop
from numpile_inductor.nested_loops import (
    NestedLoop,
    build_nested_loops,
    loop_graph,
    loops_to_build,
    nested_loop_runner,
)

SIZES = (0, 1, 5, 30)


def first_large_from(A: Any, tol: float) -> Any:
    # A pivot search per row: the first column from the diagonal on whose entry reaches
    # `tol` times the row's largest. (The largest by a sort keeps the body op by op: a 0-d
    # reduction would be C, loop_reductions.)
    n = A.shape[0]
    found = np.zeros(n, dtype=np.int64)
    for k in range(n):
        big = np.sort(np.abs(A[k, k:]))[-1]
        j = k
        while j < n - 1 and abs(A[k, j]) < tol * big:
            j += 1
        found[k] = j
    return found


def scaled_row_sums(A: Any) -> Any:
    # A nested `for` carrying `s = 0.0`: its first iteration runs on the Python float, then
    # the module takes the value it left (not the node's constant 0.0).
    n = A.shape[0]
    out = np.zeros(n)
    for k in range(n):
        m = np.sort(np.abs(A[k:, k]))[-1]  # op by op (a 0-d reduction would be C)
        s = 0.0
        for j in range(k, n):
            s += A[k, j] / m
        out[k] = s
    return out


def gram_schmidt_twice(A: Any) -> Any:
    # Re-orthogonalised while a column lost too much of its norm: the `while` carries a
    # Python float through its first pass (`after = 0.0`), its element loops inside it.
    m, n = A.shape
    Q = np.zeros((m, n))
    R = np.zeros((n, n))
    for j in range(n):
        v = A[:, j].copy()
        before = np.sqrt(v @ v)
        after = 0.0
        passes = 0
        while passes < 2 and after < 0.7071 * before:
            if passes > 0:
                before = after
            for i in range(j):
                s = 0.0
                for r in range(m):
                    s += Q[r, i] * v[r]
                R[i, j] += s
                for r in range(m):
                    v[r] -= s * Q[r, i]
            t = 0.0
            for r in range(m):
                t += v[r] * v[r]
            after = np.sqrt(t)
            passes += 1
        R[j, j] = after
        Q[:, j] = v / after
        R[: j + 1, j] = R[: j + 1, j] * 1.0  # shape follows j: the body runs op by op
    return Q, R


def halve_rows_with_negatives(A: Any) -> Any:
    # An element loop under an `if` of a body that runs op by op (a sort: `np.any` would
    # be C).
    n = A.shape[0]
    for k in range(n):
        if np.sort(A[k, k:])[0] < 0.0:
            for j in range(k, n):
                A[k, j] = A[k, j] * 0.5
    return A


def scale_below_diagonal(A: Any) -> Any:
    # LU's shape: an element loop in a body that slices by its index.
    n = A.shape[0]
    for k in range(n):
        scale = np.sort(np.abs(A[k:, k]))[-1] + 1.0  # op by op (a 0-d reduction: C)
        for i in range(k + 1, n):
            A[i, k] = A[i, k] / scale
    return A


def halve_tails(A: Any) -> Any:
    # The inner loop takes a view whose shape follows the outer index: no module of its own.
    n = A.shape[0]
    for k in range(n):
        tail = A[k, k:]
        for j in range(n - k):
            tail[j] = tail[j] * 0.5
    return A


def _inputs(fn: Callable[..., Any], n: int) -> tuple[Any, ...]:
    rng = np.random.default_rng(n)
    if fn is first_large_from:
        return (rng.standard_normal((n, n)), 0.9)
    if fn is gram_schmidt_twice:
        return (rng.standard_normal((n + 2, n)),)
    return (rng.standard_normal((n, n)),)


def _copies(args: tuple[Any, ...]) -> list[Any]:
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _entered(A: Any, tol: float) -> int:
    # The rows whose pivot search enters its `while`.
    n = A.shape[0]
    return sum(k < n - 1 and abs(A[k, k]) < tol * np.abs(A[k, k:]).max() for k in range(n))


def _halved(A: Any) -> int:
    # The rows with a negative entry from the diagonal on.
    return sum(bool(np.any(A[k, k:] < 0.0)) for k in range(A.shape[0]))


@pytest.mark.parametrize(
    ("fn", "runs"),
    [
        (first_large_from, _entered),
        (scaled_row_sums, lambda A: A.shape[0]),
        (gram_schmidt_twice, lambda A: A.shape[1]),
        (halve_rows_with_negatives, _halved),
    ],
)
def test_while_and_cond_loops_nested_in_op_by_op_bodies_run_as_c(
    fn: Callable[..., Any], runs: Callable[..., int]
) -> None:
    compiled = compile_function(fn, backend="inductor", dynamic=True)
    for n in SIZES:
        args = _inputs(fn, n)
        mine, theirs = _copies(args), _copies(args)
        rt.reset_counters()
        _same(compiled(*mine), fn(*theirs))
        for got, want in zip(mine, theirs, strict=True):
            if isinstance(want, np.ndarray):
                np.testing.assert_array_equal(got, want)
        if n > 1:  # 0 and 1 are specialized: their loops are unrolled
            assert rt.counters().get("loop_nested_c_runs", 0) == runs(*args), (fn.__name__, n)
        if n == 30:
            assert runs(*args) > 0


def _loop_nodes(graph: Graph) -> list[tuple[Node, Graph]]:
    # Every loop node of `graph`'s bodies and branches, with the graph it sits in.
    found = []
    for node in graph.nodes:
        for _, value in node.params:
            if isinstance(value, Graph):
                found.extend((inner, value) for inner in value.nodes if _is_loop(inner))
                found.extend(_loop_nodes(value))
    return found


def _is_loop(node: Node) -> bool:
    return node.op is not None and node.op.name in ("for_loop", "while_loop")


def _dynamic_graph(fn: Callable[..., Any], *args: Any) -> Graph:
    # The graph capture's dispatcher makes of `fn` at these arguments, sizes symbolic.
    graphs: list[Graph] = []

    def backend(graph: Graph, example_inputs: Any) -> Any:
        graphs.append(graph)
        return lambda *inputs: run_graph(graph, inputs)

    compile_function(fn, backend=backend, dynamic=True)(*_copies(args))
    (graph,) = graphs
    return graph


def test_loop_graph_is_none_where_an_input_shape_follows_an_enclosing_index() -> None:
    A = np.random.default_rng(0).standard_normal((6, 6))
    ((inner, _),) = _loop_nodes(_dynamic_graph(halve_tails, A))
    assert loop_graph(inner, dict(inner.params)["body"]) is None
    assert NestedLoop(inner, dict(inner.params)["body"], _no_compile).build() is False


def _no_compile(graph: Graph) -> tuple[Callable[..., Any], bool]:
    raise AssertionError("a loop with no loop graph is not compiled")


def test_a_nested_while_graph_takes_its_entry_and_its_first_pass_values() -> None:
    A = np.random.default_rng(0).standard_normal((7, 5))
    graph = _dynamic_graph(gram_schmidt_twice, A)
    ((node, _),) = [(n, g) for n, g in _loop_nodes(graph) if n.op.name == "while_loop"]
    text = str(loop_graph(node, dict(node.params)["body"]))
    # Whether it enters as a bool; the carried values as arguments (`before`, which a
    # pass may reassign and the test reads; `after = 0.0` and `passes = 0`, constants of
    # the node), with the first pass's types: the module runs the first pass too.
    assert text.startswith("graph(a0: bool, a1: float64[], a2: float, a3: int, a4: int,")
    assert "first=<graph>" in text


def _nested_for(n: int) -> tuple[Node, Graph, Any]:
    # The inner `for` of halve_rows_with_negatives' branch, and the graph to run it in.
    A = np.random.default_rng(1).standard_normal((n, n))
    graph = capture_function(halve_rows_with_negatives, (A,), {}).graph
    ((node, _),) = _loop_nodes(graph)
    return node, dict(node.params)["body"], A


def test_a_nested_loop_whose_module_does_not_run_it_as_c_runs_op_by_op() -> None:
    node, body, A = _nested_for(5)
    built: list[Graph] = []

    def not_c(graph: Graph) -> tuple[Callable[..., Any], bool]:
        built.append(graph)
        return (lambda *args: pytest.fail("the module of a host loop was called")), False

    runner = nested_loop_runner(NestedLoop(node, body, not_c), host_loop(body, None))
    mine, theirs = A.copy(), A.copy()
    rt.reset_counters()
    runner(range(1, 5), (mine, 1), 0)  # the values of the node's inputs A, k
    for index in range(1, 5):
        run_graph(body, (index, theirs, 1))
    np.testing.assert_array_equal(mine, theirs)
    assert len(built) == 1 and rt.counters().get("loop_op_by_op_runs") == 1
    runner(range(1, 5), (mine, 1), 0)
    assert len(built) == 1  # compiled once


def test_a_nested_loop_whose_compile_fails_runs_op_by_op_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    node, body, A = _nested_for(5)

    def failing(graph: Graph) -> tuple[Callable[..., Any], bool]:
        raise RuntimeError("no module today")

    runner = nested_loop_runner(NestedLoop(node, body, failing), host_loop(body, None))
    mine, theirs = A.copy(), A.copy()
    runner(range(2, 5), (mine, 2), 0)
    for index in range(2, 5):
        run_graph(body, (index, theirs, 2))
    np.testing.assert_array_equal(mine, theirs)
    assert any("no module today" in record.getMessage() for record in caplog.records)


def test_a_nested_loop_given_values_of_other_types_runs_op_by_op() -> None:
    node, body, A = _nested_for(5)
    calls: list[tuple[Any, ...]] = []

    def c_module(graph: Graph) -> tuple[Callable[..., Any], bool]:
        return (lambda *args: calls.append(args) or ()), True

    runner = nested_loop_runner(NestedLoop(node, body, c_module), host_loop(body, None))
    runner(range(0, 5), (A, 0), 0)
    assert len(calls) == 1
    as_float32 = A.astype(np.float32)
    want = as_float32.copy()
    runner(range(0, 5), (as_float32, 0), 0)
    for index in range(5):
        run_graph(body, (index, want, 0))
    assert len(calls) == 1
    np.testing.assert_array_equal(as_float32, want)


def test_nested_modules_build_with_the_graph_not_in_its_first_compiled_call() -> None:
    # Tiered: the background build that compiles the graph builds its nested loops too; the
    # first call that runs the compiled code compiles nothing.
    fn = compile_function(
        scale_below_diagonal, backend="inductor", options={"tiered": True, "graph_cache": False}
    )
    A = np.random.default_rng(3).standard_normal((8, 8))
    _same(fn(A.copy()), scale_below_diagonal(A.copy()))
    assert wait_idle(120)
    rt.reset_counters()
    _same(fn(A.copy()), scale_below_diagonal(A.copy()))
    counters = rt.counters()
    assert counters.get("loop_nested_c_runs") == 8
    assert "inductor_graph_cache_miss" not in counters and "module_load" not in counters


def pivot_rows_between_sweeps(A: Any) -> Any:
    # An outer body that kernels take (`A[:] = A * 0.5 + 1.0`, run from a host loop) holds
    # a `for` whose body slices by its index (op by op) around a `while`: the `while` is a
    # loop nested in a body of the outer body's own module.
    n = A.shape[0]
    for _ in range(2):
        A[:] = A * 0.5 + 1.0
        for k in range(n):
            big = np.sort(np.abs(A[k:, k]))[-1]  # op by op (a 0-d reduction would be C)
            j = k
            while j < n - 1 and abs(A[j, k]) < 0.9 * big:
                j += 1
            A[k, 0] = A[j, k]
    return A


def test_loops_nested_in_a_kernels_body_build_with_the_graph(fresh_cache: Path) -> None:
    # Tiered, a fresh cache: the background build compiles the graph, the outer body and
    # the `while` nested in the body of the outer body's host loop; the first call that runs
    # the compiled code builds and loads nothing.
    fn = compile_function(pivot_rows_between_sweeps, backend="inductor", options={"tiered": True})
    A = np.random.default_rng(4).standard_normal((8, 8))
    _same(fn(A.copy()), pivot_rows_between_sweeps(A.copy()))
    assert wait_idle(300)
    rt.reset_counters()
    mine, theirs = A.copy(), A.copy()
    _same(fn(mine), pivot_rows_between_sweeps(theirs))
    np.testing.assert_array_equal(mine, theirs)
    counters = rt.counters()
    assert counters.get("loop_nested_c_runs", 0) > 0
    assert "inductor_graph_cache_miss" not in counters and "module_load" not in counters


def lu_threshold_pivoting(A: Any) -> Any:
    # Two loops nested in one body that runs op by op: a pivot search `while`, and the
    # elimination's element loops.
    n = A.shape[0]
    for k in range(n):
        big = np.abs(A[k:, k]).max()
        p = k
        while p < n - 1 and abs(A[p, k]) < 0.5 * big:
            p += 1
        if p != k:
            A[[k, p]] = A[[p, k]]
        for i in range(k + 1, n):
            A[i, k] /= A[k, k]
            for j in range(k + 1, n):
                A[i, j] -= A[i, k] * A[k, j]
    return A


def test_nested_modules_build_with_the_graphs_module_in_one_build(
    fresh_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The graph's module and the modules of both loops nested in its host loop's body are
    # built by one `build_many` (side by side), not one after the other.
    built: list[int] = []
    build_many = rt.build_many

    def counted(jobs: Any) -> Any:
        built.append(sum(1 for job in jobs if (job.module_name or "").startswith("numpile_")))
        return build_many(jobs)

    monkeypatch.setattr(rt, "build_many", counted)
    fn = compile_function(lu_threshold_pivoting, backend="inductor", dynamic=True)
    A = np.random.default_rng(5).standard_normal((9, 9))
    mine, theirs = A.copy(), A.copy()
    rt.reset_counters()
    _same(fn(mine), lu_threshold_pivoting(theirs))
    np.testing.assert_array_equal(mine, theirs)
    assert rt.counters().get("loop_nested_c_runs", 0) > 9
    assert [count for count in built if count] == [3]


@pytest.mark.parametrize("outer_as_c", [True, False])
def test_nested_loops_build_one_depth_at_a_time(outer_as_c: bool) -> None:
    # LU's `for k` body runs op by op: its `while` and `for i` build together; the `for j`
    # inside `for i` builds only where the module of `for i` does not run it as C.
    A = np.random.default_rng(6).standard_normal((6, 6))
    graph = _dynamic_graph(lu_threshold_pivoting, A)

    def compiled(graph: Graph) -> tuple[Callable[..., Any], bool]:
        return (lambda *args: ()), outer_as_c

    nested = {
        body: NestedLoop(node, body, compiled)
        for node, _ in _loop_nodes(graph)
        for body in [dict(node.params)["body"]]
    }
    depths: list[list[str]] = []
    build_nested_loops(
        [graph_body(graph)],
        nested,
        lambda loops: depths.append(sorted(loop.node.op.name for loop in loops)),
    )
    expected = [["for_loop", "while_loop"]] + ([] if outer_as_c else [["for_loop"]])
    assert depths == expected
    assert loops_to_build([graph_body(graph)], nested) == []


def graph_body(graph: Graph) -> Graph:
    # The body of `graph`'s one top-level loop node.
    (node,) = [n for n in graph.nodes if _is_loop(n)]
    body: Graph = dict(node.params)["body"]
    return body


def _first_large_from_once(A: Any, tol: float) -> Any:
    # `first_large_from` with its product the other way round: modules no other test of
    # this process loaded (a module loaded before is found in memory, built or not).
    n = A.shape[0]
    found = np.zeros(n, dtype=np.int64)
    for k in range(n):
        big = np.sort(np.abs(A[k, k:]))[-1]
        j = k
        while j < n - 1 and abs(A[k, j]) < big * tol:
            j += 1
        found[k] = j
    return found


def test_a_nested_module_that_fails_in_the_graphs_build_leaves_its_loop_op_by_op(
    fresh_cache: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # The `while`'s module fails in the build it shares with the graph's module: the graph's
    # module is built alone and runs, the `while` op by op with a warning.
    build_many = rt.build_many

    def failing(jobs: Any) -> Any:
        if any(" *   graph(a0: bool" in (job.unsplit or job.source) for job in jobs):
            path = str(fresh_cache / "while.c")  # its graph is written beside it
            raise rt.BuildError("no while module today", source_path=path, command=(), stderr="")
        return build_many(jobs)

    monkeypatch.setattr(rt, "build_many", failing)
    fn = compile_function(_first_large_from_once, backend="inductor", dynamic=True)
    A = np.random.default_rng(7).standard_normal((9, 9))
    rt.reset_counters()
    _same(fn(A, 0.9), _first_large_from_once(A, 0.9))
    assert rt.counters().get("loop_nested_c_runs", 0) == 0
    warned = [r.getMessage() for r in caplog.records if "did not compile" in r.getMessage()]
    assert len(warned) == 1 and "runs op by op" in warned[0]


def digit_sums_of_products(x: Any) -> Any:
    prod = 1
    sums = np.zeros(x.shape[0], dtype=np.int64)
    for i in range(x.shape[0]):
        prod *= int(x[i]) * 1000  # a Python int: past int64 from the seventh element
        s = 0
        p = prod
        while p > 0:  # a nested while on the Python int
            s += p % 10
            p //= 10
        sums[i] = s
    return prod, sums


def test_a_python_int_past_int64_runs_a_nested_loop_with_python() -> None:
    # The nested while's module took the int as int64: OverflowError (main, unseen4).
    compiled = compile_function(digit_sums_of_products, backend="inductor", dynamic=True)
    for n in (3, 12, 24):
        x = np.arange(n) % 5 + 1
        _same(compiled(x), digit_sums_of_products(x))


def prefix_sums_by_rows(img: Any) -> Any:
    # A running sum from a Python int 0: `row` becomes np.uint8 in the first iteration (the
    # for_loop's `first`) and wraps with a warning; the outer body runs op by op where the
    # graph replays with NumPy for the warning, and its inner `for j` runs from its module.
    h, w = img.shape
    ii = np.zeros((h + 1, w + 1), dtype=np.int64)
    for i in range(h):
        row = 0
        for j in range(w):
            row += img[i, j]
            ii[i + 1, j + 1] = ii[i, j + 1] + row
    return ii


def prefix_sums_by_rows_while(img: Any) -> Any:
    # `prefix_sums_by_rows` with a `while` (its module takes its first pass too).
    h, w = img.shape
    ii = np.zeros((h + 1, w + 1), dtype=np.int64)
    for i in range(h):
        row = 0
        j = 0
        while j < w:
            row += img[i, j]
            ii[i + 1, j + 1] = ii[i, j + 1] + row
            j += 1
    return ii


def _recorded(fn: Callable[..., Any], *args: Any) -> tuple[Any, list[tuple[Any, ...]]]:
    # fn's result (or the type of what it raised) and its warnings.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = fn(*args)
        except FloatingPointError as error:
            result = type(error)
    return result, [(w.category, str(w.message), w.lineno) for w in caught]


@pytest.mark.parametrize("fn", [prefix_sums_by_rows, prefix_sums_by_rows_while])
@pytest.mark.parametrize("over", ["warn", "ignore", "raise"])
def test_a_nested_loop_after_a_first_iteration_runs_the_rest_once(
    fn: Callable[..., Any], over: Literal["warn", "ignore", "raise"]
) -> None:
    # main ran the for_loop's first iteration again from the nested module and from its
    # replay with NumPy (the start it took was the node's 0, not the range left).
    compiled = compile_function(fn, backend="inductor", dynamic=True)
    rng = np.random.default_rng(0)
    for shape in ((0, 0), (1, 1), (4, 5), (7, 9)):
        img = rng.integers(0, 256, shape).astype(np.uint8)
        for _ in range(3):  # the first calls before the modules are built, then from them
            with np.errstate(over=over):
                got, got_warnings = _recorded(compiled, img.copy())
                wait_idle(120)
                want, want_warnings = _recorded(fn, img.copy())
            if isinstance(want, type):
                assert got is want, (shape, over)
            else:
                _same(got, want)
            assert got_warnings == want_warnings, (shape, over)


def test_loop_graph_of_a_for_loop_with_a_first_iteration_takes_its_start() -> None:
    img = np.random.default_rng(0).integers(0, 256, (4, 5)).astype(np.uint8)
    with np.errstate(over="ignore"):
        graph = _dynamic_graph(prefix_sums_by_rows, img)
    ((node, _),) = _loop_nodes(graph)
    assert node.inputs[0] == 0 and "first" in dict(node.params)
    text = str(loop_graph(node, dict(node.params)["body"]))
    assert text.startswith("graph(a0: int, a1: int, a3: uint8[],"), text
    assert "for_loop(a0, a1, 1, a3," in text


def test_gram_schmidt_with_its_while_refused_runs_its_inner_loops_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The `while` runs as captured (op by op); its `for r` loops carrying `s = 0.0` run from
    # their modules after their first iteration on the Python float.
    build = NestedLoop.build

    def refusing_whiles(loop: NestedLoop, compile_graph: Any = None) -> bool:
        if loop.node.op is not None and loop.node.op.name == "while_loop":
            return build(loop, lambda graph: ((lambda *args: ()), False))
        return build(loop, compile_graph)

    monkeypatch.setattr(NestedLoop, "build", refusing_whiles)
    compiled = compile_function(gram_schmidt_twice, backend="inductor", dynamic=True)
    for n in SIZES:
        args = _inputs(gram_schmidt_twice, n)
        for _ in range(2):
            rt.reset_counters()
            _same(compiled(*_copies(args)), gram_schmidt_twice(*_copies(args)))
            wait_idle(120)
        if n > 1:
            assert rt.counters().get("loop_nested_c_runs", 0) > 0, n
