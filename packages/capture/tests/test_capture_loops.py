"""Loops that stay loops: the for_loop IR, capture of range loops, fallbacks, compile counts.

Each program runs eagerly and compiled (the eager backend: `run_graph`) at several trip
counts, 0 and 1 included; values, dtypes and the inputs' in-place effects must match.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from numpile_capture import (
    ArrayMeta,
    Graph,
    ScalarMeta,
    capture_function,
    compile_function,
    explain,
    get_op,
    run_graph,
)
from numpile_capture.capture_events import recording_captures
from numpile_capture.control_flow import add_loop, has_loops
from numpile_capture.ops.loop_values import ScalarSlot
from numpile_capture.testing import assert_same_as_eager as _same
from numpile_capture.testing import op_names as _ops

TRIP_COUNTS = (0, 1, 2, 7)


pytestmark = pytest.mark.usefixtures("fresh_dispatch")


def _sum_of_squares_graph() -> Graph:
    body = Graph()
    i = body.placeholder("i", ScalarMeta(int))
    s = body.placeholder("s", ArrayMeta((), "float64"))
    x = body.placeholder("x", ArrayMeta((5,), "float64"))
    item = body.call(get_op("element_at"), x, i, index=(ScalarSlot(0),))
    body.output = (body.call(get_op("add"), s, body.call(get_op("multiply"), item, item)),)
    graph = Graph()
    data = graph.placeholder("x", ArrayMeta((5,), "float64"))
    stop = graph.call(get_op("dim"), data, axis=0)
    (total,) = add_loop(graph, (0, stop, 1), [0.0], [data], body, ())
    graph.output = total
    return graph


def test_loop_prints_as_nested_block() -> None:
    assert str(_sum_of_squares_graph()) == (
        "graph(x: float64[5]):\n"
        "  v0 = dim(x, axis=0)  # int\n"
        "  v1 = for_loop(0, v0, 1, 0.0, x, body=<graph>, carried=1)  # tuple\n"
        "    body(i: int, s: float64[], x: float64[5]):\n"
        "      v0 = element_at(x, i, index=(scalars[0],))  # float64[]\n"
        "      v1 = multiply(v0, v0)  # float64[]\n"
        "      v2 = add(s, v1)  # float64[]\n"
        "      return (v2,)\n"
        "  v2 = loop_output(v1, index=0)  # float64[]\n"
        "  return v2"
    )


def test_structural_hash_covers_the_body() -> None:
    one, other = _sum_of_squares_graph(), _sum_of_squares_graph()
    assert one.structural_hash() == other.structural_hash()
    body = next(node for node in other.nodes if node.op is not None and node.op.name == "for_loop")
    inner = body.kwargs["body"]
    inner.output = (inner.nodes[-2],)  # the body returns the product instead of the sum
    assert one.structural_hash() != other.structural_hash()


def test_run_graph_runs_the_loop() -> None:
    graph = _sum_of_squares_graph()
    assert run_graph(graph, [np.arange(5.0)]) == 30.0
    assert has_loops(graph)


def test_python_scalar_ops_follow_python() -> None:
    op = get_op("py_binary")
    for name, left, right in [("floordiv", -7, 2), ("mod", -7, 3), ("rshift", -9, 1)]:
        graph = Graph()
        a = graph.placeholder("a", ScalarMeta(int))
        graph.output = graph.call(op, a, right, operator=name)
        assert str(graph.output.meta) == "int"
        want = {"floordiv": -7 // 2, "mod": -7 % 3, "rshift": -9 >> 1}[name]
        assert run_graph(graph, [left]) == want
    assert str(op.meta(ScalarMeta(int), 2, operator="truediv")) == "float"
    assert str(op.meta(ScalarMeta(int), 2, operator="lt")) == "bool"
    assert str(get_op("py_unary").meta(ScalarMeta(bool), operator="neg")) == "int"
    assert get_op("dim").impl(np.zeros((2, 7)), axis=1) == 7


# -- capture -------------------------------------------------------------------------------


def sum_of_squares(x: Any) -> Any:
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    return s


def test_range_loop_is_one_node() -> None:
    graph = capture_function(sum_of_squares, (np.arange(5.0),), {}).graph
    assert str(graph) == (
        "graph(x: float64[5]):\n"
        "  v0 = for_loop(0, 5, 1, 0.0, x, body=<graph>, carried=1, first=<graph>)  # tuple\n"
        "    body(i: int, s: float64[], x: float64[5]):\n"
        "      v0 = carried_scalar(s)  # float64[]\n"
        "      v1 = element_at(x, i, index=(scalars[0],))  # float64[]\n"
        "      v2 = element_at(x, i, index=(scalars[0],))  # float64[]\n"
        "      v3 = multiply(v1, v2)  # float64[]\n"
        "      v4 = add(v0, v3)  # float64[]\n"
        "      return (v4,)\n"
        "    first(i: int, s: float, x: float64[5]):\n"
        "      v0 = element_at(x, i, index=(scalars[0],))  # float64[]\n"
        "      v1 = element_at(x, i, index=(scalars[0],))  # float64[]\n"
        "      v2 = multiply(v0, v1)  # float64[]\n"
        "      v3 = add(s, v2)  # float64[]\n"
        "      return (v3,)\n"
        "  v1 = loop_output(v0, index=0)  # float64[]\n"
        "  return v1"
    )


def test_dynamic_trip_count_compiles_once() -> None:
    f = compile_function(sum_of_squares, backend="eager", dynamic=True)
    with recording_captures() as events:
        for n in (5, 40, 300):
            x = np.arange(n, dtype=np.float64)
            _same(f(x), sum_of_squares(x))
    graphs = [event.graph for event in events if event.graph is not None]
    assert len(graphs) == 1
    assert "dim(x, axis=0)" in str(graphs[0])


def test_trip_count_from_a_size_compiles_once() -> None:
    # The size bounds a kept loop: it is a symbol from the first compile (bound_origins).
    f = compile_function(sum_of_squares, backend="eager")
    with recording_captures() as events:
        for n in (5, 40, 300, 7):
            x = np.arange(n, dtype=np.float64)
            _same(f(x), sum_of_squares(x))
    assert len([event for event in events if event.graph is not None]) == 1


def test_float32_carry_reaches_its_fixpoint() -> None:
    # NEP 50: 0.0 + float32 is float32, so the carried value is a float32 scalar.
    x = np.arange(6, dtype=np.float32)
    graph = capture_function(sum_of_squares, (x,), {}).graph
    assert "body(i: int, s: float32[]" in str(graph)
    _same(run_graph(graph, [x]), sum_of_squares(x))


def recurrence(a: Any) -> Any:
    k = 0
    for i in range(1, a.shape[0]):
        a[i] = a[i - 1] * 0.5 + a[i]
        k += i * i
    return k


def back_substitution(u: Any, b: Any) -> Any:
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in range(n - 1, -1, -1):
        x[i] = (b[i] - u[i] @ x) / u[i, i]
    return x


def triangle(a: Any) -> Any:
    for i in range(a.shape[0]):
        for j in range(i):
            a[i, j] = a[i, j] - a[j, j] * 0.5 + j
    return a


def row_sums(a: Any) -> Any:
    acc = np.zeros(a.shape[1])
    for i in range(a.shape[0]):
        acc = acc + a[i]
    return acc


def time_steps(a: Any, steps: int) -> Any:
    b = a.copy()
    for _ in range(steps):
        b[1:-1] = 0.25 * (a[:-2] + 2.0 * a[1:-1] + a[2:])
        a[:] = b
    return a


def python_ints(x: Any) -> Any:
    k = 1
    m = -7
    for i in range(x.shape[0]):
        k = k * 3 + i  # past int64 after 40 iterations: Python ints are unbounded
        m = (m - i) // 3 + (m % 5) - (m >> 1)
    return k, m


def over_rows(a: Any, w: Any) -> Any:
    out = np.zeros(a.shape[1])
    for row in a:
        out += row * w
        row[0] = 1.0
    total = 0
    for value in a[:, 1]:
        total = total + value
    return out, total


def signed_sum(x: Any) -> Any:
    s = 0.0
    n = 0
    for i in range(x.shape[0]):
        if x[i] > 0:
            s += x[i]
            n += 1
        else:
            s -= 1.0
    return s, n


def crc16(data: Any) -> Any:
    crc = 0xFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            if crc & 1:  # noqa: SIM108 - the if statement is what is tested
                crc = (crc >> 1) ^ 0xA001
            else:
                crc = crc >> 1
    return crc


def mandelbrot(c: Any) -> Any:
    out = np.zeros(c.shape[0], dtype=np.int64)
    for k in range(c.shape[0]):
        z = 0j
        n = 20
        for it in range(20):
            z = z * z + c[k]
            if abs(z) > 2.0 and n == 20:
                n = it
        out[k] = n
    return out


def newton_sqrt(a: Any) -> Any:
    x = a + 1.0
    k = 0
    while np.abs(x * x - a).max() > 1e-12:
        x = 0.5 * (x + a / x)
        k += 1
    return x, k


def gauss_seidel(a: Any, b: Any) -> Any:
    x = np.zeros_like(b)
    err = 1.0
    sweeps = 0
    while err > 1e-10:
        err = 0.0
        for i in range(b.shape[0]):
            new = (b[i] - a[i] @ x + a[i, i] * x[i]) / a[i, i]
            d = abs(new - x[i])
            if d > err:
                err = d
            x[i] = new
        sweeps += 1
    return x, sweeps


def last_index(x: Any) -> Any:
    i = -1
    total = 0.0
    for i in range(x.shape[0] - 1, -1, -2):
        total = total + x[i] * i
    return i, total  # the loop variable keeps its last value (-1 when the range is empty)


PROGRAMS: list[tuple[Callable[..., Any], Callable[[int], tuple[Any, ...]]]] = [
    (sum_of_squares, lambda n: (np.arange(n, dtype=np.float64),)),
    (recurrence, lambda n: (np.arange(n, dtype=np.float64),)),
    (
        back_substitution,
        lambda n: (np.triu(np.ones((n, n))) + n * np.eye(n), np.arange(1.0, n + 1)),
    ),
    (triangle, lambda n: (np.arange(n * n, dtype=np.float64).reshape(n, n),)),
    (row_sums, lambda n: (np.arange(n * 3, dtype=np.float32).reshape(n, 3),)),
    (time_steps, lambda n: (np.arange(6.0) ** 2, n)),
    (python_ints, lambda n: (np.zeros(n * 7),)),
    (over_rows, lambda n: (np.arange(n * 3.0).reshape(n, 3), np.arange(3, dtype=np.int32))),
    (signed_sum, lambda n: (np.sin(np.arange(n * 3.0)),)),
    (crc16, lambda n: (np.arange(n * 5, dtype=np.int64) * 37 % 256,)),
    (mandelbrot, lambda n: (np.linspace(-2, 1, n * 3) + 0.3j,)),
    (newton_sqrt, lambda n: (np.arange(1.0, n + 2.0),)),
    (last_index, lambda n: (np.arange(n * 3.0),)),
    (gauss_seidel, lambda n: (np.eye(n + 1) * 4 + np.ones((n + 1, n + 1)), np.arange(n + 1.0))),
]


@pytest.mark.parametrize("fn,make", PROGRAMS, ids=[fn.__name__ for fn, _ in PROGRAMS])
def test_loop_matches_eager(fn: Callable[..., Any], make: Callable[[int], tuple[Any, ...]]) -> None:
    compiled = compile_function(fn, backend="eager", dynamic=True)
    for n in TRIP_COUNTS:
        args, expected_args = make(n), make(n)
        want = fn(*expected_args)
        got = compiled(*args)
        _same(got, want)
        for got_arg, want_arg in zip(args, expected_args, strict=True):
            _same(got_arg, want_arg)


@pytest.mark.parametrize("fn,make", PROGRAMS, ids=[fn.__name__ for fn, _ in PROGRAMS])
def test_loop_is_kept(fn: Callable[..., Any], make: Callable[[int], tuple[Any, ...]]) -> None:
    graph = capture_function(fn, make(4), {}).graph
    assert "for_loop" in _ops(graph) or "while_loop" in _ops(graph)
    assert "element" not in _ops(graph)  # nothing unrolled


def test_nested_loop_prints_nested_bodies() -> None:
    graph = capture_function(triangle, (np.zeros((3, 3)),), {}).graph
    text = str(graph)
    assert "    body(i: int, a: float64[3, 3]):" in text
    assert "        body(j: int, a: float64[3, 3], i: int" in text
    (loop,) = [node for node in graph.nodes if node.op is not None and node.op.name == "for_loop"]
    assert loop.op is not None and loop.op.mutates == (3,)  # a, written in place


def test_index_error_keeps_earlier_writes() -> None:
    def f(a: Any) -> Any:
        for i in range(a.shape[0] + 2):
            a[i] = i + 1.0
        return a

    compiled = compile_function(f, backend="eager")
    a = np.zeros(4)
    with pytest.raises(IndexError):
        compiled(a)
    np.testing.assert_array_equal(a, [1.0, 2.0, 3.0, 4.0])


def test_zero_step_raises_value_error() -> None:
    def f(x: Any, step: int) -> Any:
        for i in range(0, 3, step):
            x = x + i
        return x

    compiled = compile_function(f, backend="eager")
    with pytest.raises(ValueError, match="must not be zero"):
        compiled(np.zeros(2), 0)


def test_graph_break_in_body_falls_back_and_explains() -> None:
    def f(x: Any) -> Any:
        s = 0.0
        for i in range(x.shape[0]):
            if x[i] > 0:
                print(i)
                s += x[i]
        return s

    out = explain(f)(np.arange(-2.0, 2.0))
    assert len(out.loops_not_kept) == 1
    assert "print" in out.loops_not_kept[0].reason
    assert out.loops_not_kept[0].lineno == f.__code__.co_firstlineno + 2
    assert "Loops not kept as loops:" in str(out)


def test_list_append_falls_back_to_unrolling() -> None:
    def f(x: Any) -> Any:
        out = []
        for i in range(3):
            out.append(x * i)
        return out

    x = np.arange(3.0)
    out = explain(f)(x)
    assert "changes a Python container" in out.loops_not_kept[0].reason
    assert "for_loop" not in out.ops_per_graph[0]
    compiled = compile_function(f, backend="eager")
    for got, want in zip(compiled(x), f(x), strict=True):
        _same(got, want)


def test_index_dependent_slice_is_kept() -> None:
    def f(x: Any) -> Any:
        s = 0.0
        for i in range(x.shape[0]):
            s += x[i:].sum()
        return s

    out = explain(f)(np.arange(4.0))
    assert out.loops_not_kept == ()
    for n in (0, 1, 2, 7):
        _same(compile_function(f, backend="eager")(np.arange(float(n))), f(np.arange(float(n))))


def test_unprovable_index_guard_falls_back() -> None:
    def f(x: Any) -> Any:
        s = 0.0
        for i in range(x.shape[0]):
            s += (x[: i + 1] + x[:2]).sum()  # (i + 1,) broadcasts with (2,): a guard on i
        return s

    x = np.arange(2.0)
    out = explain(f)(x)
    assert "loop index i0" in out.loops_not_kept[0].reason
    _same(compile_function(f, backend="eager")(x), f(x))


def test_shape_changing_carry_falls_back() -> None:
    def f(x: Any) -> Any:
        for _ in range(3):
            x = np.concatenate([x, x])
        return x

    out = explain(f)(np.ones(2))
    assert "changes shape" in out.loops_not_kept[0].reason
    _same(compile_function(f, backend="eager")(np.ones(2)), f(np.ones(2)))


def test_branch_on_run_time_value_is_one_cond() -> None:
    graph = capture_function(signed_sum, (np.ones(3),), {}).graph
    assert str(graph).split("\n")[6:16] == [
        "      v3 = cond(v2, x, i, v0, n, then_branch=<graph>, else_branch=<graph>)  # tuple",
        "        then_branch(x: float64[3], i: int, v0: float64[], n: int):",
        "          v1 = element_at(x, i, index=(scalars[0],))  # float64[]",
        "          v2 = add(v0, v1)  # float64[]",
        "          v3 = py_binary(n, 1, operator='add')  # int",
        "          return (v2, v3)",
        "        else_branch(x: float64[3], i: int, v0: float64[], n: int):",
        "          v1 = subtract(v0, 1.0)  # float64[]",
        "          return (v1, n)",
        "      v4 = loop_output(v3, index=0)  # float64[]",
    ]


def test_while_loop_is_one_node() -> None:
    graph = capture_function(newton_sqrt, (np.arange(1.0, 4.0),), {}).graph
    assert _ops(graph).count("while_loop") == 1
    text = str(graph)
    assert "while_loop(v5, v0, 0, a, body=<graph>, carried=2, enter_if=True, again_if=True)" in text
    assert "    body(x: float64[3], k: int, a: float64[3]):" in text


def test_while_on_values_known_now_is_unrolled() -> None:
    # A loop on Python ints computes shapes at capture time: it stays Python.
    def f(x: Any) -> Any:
        n = 1
        while n < x.shape[0]:
            n *= 2
        return np.zeros(n) + x.sum()

    graph = capture_function(f, (np.ones(5),), {}).graph
    assert "while_loop" not in _ops(graph)
    assert "float64[8]" in str(graph)


# -- the unroll budget: a loop run at capture time never grows the graph without limit ------


def _growing(x: Any, n: int) -> Any:
    out = x[:1]
    for i in range(n):  # not kept: the carried array changes shape
        out = np.concatenate([out, x[i : i + 1] * 2.0])
    return out


def _counted_while(x: Any) -> Any:
    i = 0
    s = x[0]
    while i < x.shape[0]:  # a while on values known now runs at capture time
        s = s + x[i] * 2.0
        i += 1
    return s


def _layers(x: Any, ws: Any) -> Any:
    for w in ws:  # a loop over a list: unrolled
        x = np.tanh(x @ w)
    return x


def _triangular_with_static_matrix(L: Any, b: Any) -> Any:
    y = np.zeros_like(b)
    for i in range(b.shape[0]):  # L static, b symbolic: `L[i, :i] @ y[:i]` is not proven
        y[i] = (b[i] - L[i, :i] @ y[:i]) / L[i, i]
    return y


def _static_triangle(n: int) -> tuple[Any, Any]:
    L = np.tril(np.random.default_rng(n).standard_normal((n, n))) + n * np.eye(n)
    from numpile_capture import mark_static

    mark_static(L, 0)
    mark_static(L, 1)
    return L, np.random.default_rng(n + 1).standard_normal(n)


@pytest.mark.parametrize(
    ("fn", "args", "head"),
    [
        (_growing, lambda: (np.arange(400.0), 300), 2),
        (_counted_while, lambda: (np.arange(300.0) / 300,), 3),
        (_layers, lambda: (np.ones(3), [np.eye(3) * 0.5] * 100), 1),
        (_triangular_with_static_matrix, lambda: _static_triangle(300), 2),
    ],
    ids=["carried_shape_changes", "while_on_known_values", "list_of_layers", "static_matrix"],
)
def test_unrolling_past_the_budget_breaks_at_the_loop(
    fn: Callable[..., Any], args: Callable[[], tuple[Any, ...]], head: int
) -> None:
    from numpile_capture.unroll_budget import MAX_UNROLLED_NODES

    out = explain(fn)(*args())
    line = fn.__code__.co_firstlineno + head
    budget = next(b for b in out.break_reasons if "unroll budget" in b.reason)
    assert budget.lineno == line
    assert f"loop at line {line}" in budget.reason
    # Every graph stays small: what came before the loop, or one iteration of it (none where
    # the loop comes first and runs whole in Python: `_layers`' small tanh layers).
    assert max((len(g.nodes) for g in out.graphs), default=0) < MAX_UNROLLED_NODES
    compiled = compile_function(fn, backend="eager")
    for _ in range(2):
        _same(compiled(*args()), fn(*args()))


def test_the_budget_break_names_why_the_loop_was_not_kept(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level("INFO", logger="numpile.capture.graph_breaks"):
        out = explain(_growing)(np.arange(400.0), 300)
    budget = next(b for b in out.break_reasons if "unroll budget" in b.reason)
    assert "the carried array 'out' changes shape" in budget.reason
    logged = [r.getMessage() for r in caplog.records if "unroll budget" in r.getMessage()]
    assert logged
    assert f"loop at line {_growing.__code__.co_firstlineno + 2}" in logged[0]


def test_a_short_unrolled_loop_stays_one_graph() -> None:
    # Under the budget nothing changes: 30 iterations of 3 nodes unroll into the graph.
    out = explain(_growing)(np.arange(40.0), 30)
    assert out.graph_break_count == 0
    assert len(out.loops_not_kept) == 1
