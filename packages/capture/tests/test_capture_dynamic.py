"""Dynamic shapes in capture: symbolic placeholders, automatic dynamic, marks, specialization."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from numpile_capture import compile_function, config, mark_dynamic, mark_static, reset
from numpile_capture.capture_events import CaptureEvent, recording_captures
from numpile_capture.dynamic_shapes import DynamicPolicy, dim_marks, static_marks
from numpile_capture.graph import Graph
from numpile_guards import cache_for

SIZES = (5, 9, 2, 17, 64, 3)


pytestmark = pytest.mark.usefixtures("fresh_dispatch")


def _graphs(events: list[CaptureEvent]) -> list[Graph]:
    return [event.graph for event in events if event.graph is not None]


def _placeholder_dims(graph: Graph) -> list[tuple[Any, ...]]:
    return [tuple(node.meta.shape) for node in graph.placeholders]  # type: ignore[union-attr]


def _entries(fn: Callable[..., Any]) -> int:
    return len(cache_for(fn.__code__).entries)


def _same(got: Any, want: Any) -> None:
    got_arr = np.asarray(got)
    want_arr = np.asarray(want)
    assert got_arr.dtype == want_arr.dtype
    assert got_arr.shape == want_arr.shape
    np.testing.assert_array_equal(got_arr, want_arr)


def mlp(x: Any, w: Any, b: Any) -> Any:
    return np.maximum(x @ w + b, 0.0).sum(axis=1)


def test_dynamic_true_compiles_once_for_every_size() -> None:
    f = compile_function(mlp, backend="eager", dynamic=True)
    w = np.ones((4, 3))
    b = np.arange(3.0)
    with recording_captures() as events:
        for n in SIZES:
            x = np.random.default_rng(n).standard_normal((n, 4))
            _same(f(x, w, b), mlp(x, w, b))
    graphs = _graphs(events)
    assert len(graphs) == 1
    assert str(graphs[0].placeholders[0].meta) == "float64[s0, s1]"
    assert _entries(mlp) == 1


def test_dynamic_none_is_static_first_then_dynamic_on_change() -> None:
    def f(x: Any) -> Any:
        return (x * 2.0).sum(axis=0)

    compiled = compile_function(f, backend="eager")
    with recording_captures() as events:
        for n in SIZES:
            x = np.arange(n * 3.0).reshape(n, 3)
            _same(compiled(x), f(x))
    graphs = _graphs(events)
    assert len(graphs) == 2
    assert _placeholder_dims(graphs[0]) == [(5, 3)]
    assert str(graphs[1].placeholders[0].meta.shape[0]) == "s0"  # type: ignore[union-attr]
    assert graphs[1].placeholders[0].meta.shape[1] == 3  # type: ignore[union-attr]


def test_dynamic_false_recompiles_per_size_with_a_readable_reason() -> None:
    def f(x: Any) -> Any:
        return x + 1

    compiled = compile_function(f, backend="eager", dynamic=False)
    compiled(np.zeros(8))
    compiled(np.zeros(9))
    compiled(np.zeros(10))
    assert _entries(f) == 3
    reasons = cache_for(f.__code__).recompile_reasons
    assert "L['x'].shape[0]: expected 8, got 9" in reasons[0].failures[0]


def test_automatic_dynamic_can_be_switched_off() -> None:
    def f(x: Any) -> Any:
        return x - 1

    compiled = compile_function(f, backend="eager")
    with config.patch(automatic_dynamic_shapes=False):
        for n in (4, 5, 6):
            compiled(np.zeros(n))
    assert _entries(f) == 3


def test_zero_and_one_are_specialized() -> None:
    def f(x: Any) -> Any:
        return x.sum(axis=0) + 1

    compiled = compile_function(f, backend="eager", dynamic=True)
    with recording_captures() as events:
        for n in (0, 1, 4, 7, 0, 1):
            x = np.ones((n, 2))
            _same(compiled(x), f(x))
    dims = [_placeholder_dims(graph)[0][0] for graph in _graphs(events)]
    assert dims[:2] == [0, 1]
    assert str(dims[2]) == "s0"
    assert len(dims) == 3


def test_duck_sizing_merges_equal_sizes_and_guards_them() -> None:
    def f(x: Any, y: Any) -> Any:
        return x + y

    compiled = compile_function(f, backend="eager", dynamic=True)
    with recording_captures() as events:
        _same(compiled(np.ones(6), np.ones(6)), np.full(6, 2.0))
    graph = _graphs(events)[0]
    assert _placeholder_dims(graph) == [(graph.placeholders[0].meta.shape[0],)] * 2  # type: ignore[union-attr]
    texts = [str(guard) for guard in events[0].guards]
    assert any("L['y'].shape[0] == L['x'].shape[0]" in text for text in texts)
    # Different sizes now: the duck-sizing guard fails, and broadcasting raises NumPy's error.
    with pytest.raises(ValueError):
        compiled(np.ones(6), np.ones(7))


def test_without_duck_sizing_broadcasting_guards_the_equality() -> None:
    def f(x: Any, y: Any) -> Any:
        return x * y

    compiled = compile_function(f, backend="eager", dynamic=True)
    with config.patch(duck_shape=False), recording_captures() as events:
        _same(compiled(np.ones(6), np.full(6, 3.0)), np.full(6, 3.0))
    graph = _graphs(events)[0]
    x_dim, y_dim = (node.meta.shape[0] for node in graph.placeholders)  # type: ignore[union-attr]
    assert x_dim != y_dim
    assert any("L['x'].shape[0] == L['y'].shape[0]" in str(g) for g in events[0].guards)


def test_mark_dynamic_range_is_guarded_and_violations_recompile() -> None:
    def f(x: Any) -> Any:
        return x.mean(axis=1)

    compiled = compile_function(f, backend="eager", dynamic=False)
    # dynamic=False never makes sizes symbolic, marks included.
    x = np.ones((3, 8))
    mark_dynamic(x, 1, min=4, max=16)
    compiled(x)
    assert _placeholder_dims(cache_for(f.__code__).entries[0].metadata["graph"]) == [(3, 8)]
    reset()
    compiled = compile_function(f, backend="eager")
    with recording_captures() as events:
        compiled(x)
        for n in (4, 16):
            y = np.ones((3, n))
            _same(compiled(y), f(y))
        _same(compiled(np.ones((3, 17))), np.ones(3))  # above max: recompiles
    graphs = _graphs(events)
    assert str(graphs[0].placeholders[0].meta) == "float64[3, s0]"
    assert len(graphs) == 2
    texts = [str(guard) for guard in events[0].guards]
    assert any("L['x'].shape[1] >= 4" in text for text in texts)
    assert any("L['x'].shape[1] <= 16" in text for text in texts)


def test_mark_dynamic_checks_its_arguments() -> None:
    x = np.ones((3, 8))
    with pytest.raises(ValueError, match="outside"):
        mark_dynamic(x, 1, min=10)
    with pytest.raises(IndexError):
        mark_dynamic(x, 2)
    with pytest.raises(TypeError):
        mark_dynamic([1, 2], 0)
    mark_dynamic(x, -1)
    assert dim_marks(x) == {1: (None, None)}
    mark_static(x, 1)
    assert dim_marks(x) == {} and static_marks(x) == {1}
    assert dim_marks(x.copy()) == {}


def test_mark_static_wins_over_dynamic_true() -> None:
    def f(x: Any) -> Any:
        return x * 3

    compiled = compile_function(f, backend="eager", dynamic=True)
    x = np.ones((4, 5))
    mark_static(x, 0)
    with recording_captures() as events:
        compiled(x)
    dims = _placeholder_dims(_graphs(events)[0])[0]
    assert dims[0] == 4 and str(dims[1]) == "s0"


def test_marks_die_with_the_array() -> None:
    import gc

    from numpile_capture import dynamic_shapes

    x = np.ones(5)
    mark_dynamic(x, 0)
    key = id(x)
    assert key in dynamic_shapes._MARKS
    del x
    gc.collect()
    assert key not in dynamic_shapes._MARKS


def reshape_rows(x: Any) -> Any:
    return x.reshape(-1, 4).sum(axis=1)


def test_reshape_with_minus_one_guards_divisibility() -> None:
    compiled = compile_function(reshape_rows, backend="eager", dynamic=True)
    with recording_captures() as events:
        for n in (8, 12, 40):
            x = np.arange(float(n))
            _same(compiled(x), reshape_rows(x))
    assert len(_graphs(events)) == 1
    assert any("% 4 == 0" in str(guard) for guard in events[0].guards)
    with pytest.raises(ValueError):
        compiled(np.arange(10.0))


def test_shape_dependent_python_is_specialized_and_guarded() -> None:
    # A range loop over a size stays a loop (no guard, see test_capture_loops.py); one that
    # grows a Python list is unrolled, so it needs the size as an int: specialized.
    def f(x: Any) -> Any:
        n = x.shape[0]
        parts = []
        for i in range(n):
            parts.append(x[i])
        return np.stack(parts) * n

    compiled = compile_function(f, backend="eager", dynamic=True)
    with recording_captures() as events:
        for n in (3, 4, 3, 4):
            x = np.arange(float(n))
            _same(compiled(x), f(x))
    assert len(_graphs(events)) == 2
    assert any("L['x'].shape[0] == 3" in str(guard) for guard in events[0].guards)


def test_branch_on_a_size_becomes_a_guard() -> None:
    def f(x: Any) -> Any:
        if x.shape[0] > 4:
            return x[1:] * 2
        return x[:-1] + 1

    compiled = compile_function(f, backend="eager", dynamic=True)
    with recording_captures() as events:
        for n in (6, 9, 30, 3, 4, 2):
            x = np.arange(float(n))
            _same(compiled(x), f(x))
    graphs = _graphs(events)
    assert len(graphs) == 2
    assert "float64[s0 - 1]" in str(graphs[0])
    assert any("L['x'].shape[0] >= 5" in str(guard) for guard in events[0].guards)


@pytest.mark.parametrize("dynamic", [None, True, False])
def test_views_reductions_and_matmul_match_numpy(dynamic: bool | None) -> None:
    def f(x: Any, w: Any) -> Any:
        y = x @ w
        z = y.T[::2] + y[:1, :]
        return z.max(axis=0), y[2:-1].std(), np.concatenate([x, x], axis=0).sum(axis=0), x[-1]

    compiled = compile_function(f, backend="eager", dynamic=dynamic)
    for n in (4, 7, 11, 4, 32):
        x = np.random.default_rng(n).standard_normal((n, 3)).astype(np.float32)
        w = np.random.default_rng(n + 1).standard_normal((3, n)).astype(np.float32)
        got = compiled(x, w)
        want = f(x, w)
        for g, e in zip(got, want, strict=True):
            _same(g, e)
    limit = 2 if dynamic is not False else 4
    assert _entries(f) <= limit


@pytest.mark.parametrize(
    "item",
    [
        slice(None, None, -1),
        slice(5, 1, -1),
        slice(-2, None, -2),
        slice(1, None, -1),
        slice(100, None, -2),
        slice(None, -100, -1),
        slice(-1, -4, -1),
    ],
)
def test_negative_steps_of_symbolic_sizes_compile_once(item: slice) -> None:
    # Python's clamps of a negative step ([-1, size - 1]) are guarded like a positive one's.
    def f(x: Any) -> Any:
        return x[item] * 2.0

    compiled = compile_function(f, backend="eager", dynamic=True)
    with recording_captures() as events:
        for n in (2, 3, 7, 10, 31):
            x = np.arange(float(n))
            _same(compiled(x), f(x))
    graphs = _graphs(events)
    assert 1 <= len(graphs) <= 3
    assert all(not isinstance(g.placeholders[0].meta.shape[0], int) for g in graphs)


_LAYOUTS: dict[str, Callable[[Any], Any]] = {
    "fortran": np.asfortranarray,
    "transposed": lambda a: np.ascontiguousarray(a.T).T,
    "rows_reversed": lambda a: a[::-1].copy()[::-1],
    "every_other_column": lambda a: np.repeat(a, 2, axis=1)[:, ::2],
}


@pytest.mark.parametrize("layout", list(_LAYOUTS))
def test_non_contiguous_inputs_get_symbolic_sizes(layout: str) -> None:
    # Strides follow the sizes where the layout is dense (Fortran order, a transpose,
    # reversed rows); a column step keeps its strides exact. One graph serves every order.
    def f(x: Any) -> Any:
        return x * 2.0 + x[0]

    relayout = _LAYOUTS[layout]
    compiled = compile_function(f, backend="eager", dynamic=True)
    with recording_captures() as events:
        for n in (3, 5, 9):
            x = relayout(np.arange(n * 4.0).reshape(n, 4))
            _same(compiled(x), f(x))
    graphs = _graphs(events)
    assert len(graphs) == 1
    assert not isinstance(_placeholder_dims(graphs[0])[0][0], int)


def test_reshape_of_strided_rows_of_symbolic_count_is_a_view() -> None:
    # `x[:, ::2]` of an (n, 8) array flattens without a copy for every n (NumPy's view).
    def f(x: Any) -> Any:
        return x.reshape(-1)

    compiled = compile_function(f, backend="eager", dynamic=True)
    for n in (3, 5):
        x = np.arange(n * 8.0).reshape(n, 8)[:, ::2]
        got = compiled(x)
        _same(got, f(x))
        assert np.shares_memory(got, x)


def test_strides_of_a_sub_block_are_guarded_exactly() -> None:
    # A view into a larger array: its row stride is the parent's width, which no size of
    # the view gives, so a view of a wider parent compiles again.
    def f(x: Any) -> Any:
        return x + 1

    compiled = compile_function(f, backend="eager", dynamic=True)
    with recording_captures() as events:
        for width in (8, 8, 12):
            base = np.arange(6.0 * width).reshape(6, width)
            _same(compiled(base[:, 1:5]), base[:, 1:5] + 1)
    assert len(_graphs(events)) == 2


def test_policy_choices() -> None:
    observed: dict[str, tuple[int | None, ...]] = {}
    policy = DynamicPolicy(None, observed)
    assert [c.dynamic for c in policy.choose(np.ones((2, 3)), "L['x']")] == [False, False]
    assert [c.dynamic for c in policy.choose(np.ones((5, 3)), "L['x']")] == [True, False]
    assert observed == {"L['x']": (None, 3)}
    assert all(c.dynamic for c in DynamicPolicy(True).choose(np.ones((2, 3)), "L['x']"))


def test_backend_that_fails_on_symbols_gets_a_static_graph() -> None:
    seen: list[Graph] = []

    def picky(graph: Graph, example_inputs: list[Any]) -> Callable[..., Any]:
        seen.append(graph)
        for node in graph.placeholders:
            if not all(isinstance(d, int) for d in node.meta.shape):  # type: ignore[union-attr]
                raise NotImplementedError("static sizes only")
        from numpile_capture import run_graph

        return lambda *inputs: run_graph(graph, inputs)

    def f(x: Any) -> Any:
        return x * 2

    compiled = compile_function(f, backend=picky, dynamic=True)
    _same(compiled(np.ones(5)), np.full(5, 2.0))
    assert len(seen) == 2
    assert _placeholder_dims(seen[-1]) == [(5,)]


def test_sizes_returned_or_kept_across_a_break_are_right_for_every_size() -> None:
    from numpile_capture.trace_rules import graph_break

    def f(x: Any) -> Any:
        n = x.shape[0] * 2
        y = x + n
        graph_break()
        return n, y.sum() + x.shape[0], len(x)

    compiled = compile_function(f, backend="eager", dynamic=True)
    for size in (3, 4, 5, 3):
        x = np.arange(float(size))
        got = compiled(x)
        assert got == f(x)
        assert all(type(a) is type(b) for a, b in zip(got, f(x), strict=True))


def zeros_of_shape(x: Any) -> Any:
    return np.zeros(x.shape) + x


def constructors_of_sizes(x: Any) -> Any:
    n, m = x.shape
    parts = (
        np.ones((n, 3), dtype=np.int32).sum(axis=1),
        np.empty(n * m).shape[0] + np.zeros(m, dtype=np.float32).sum(),
        np.full(n + 1, 7, dtype=np.int16)[1:],
        np.full((2, m), n).sum(axis=0),
    )
    return parts


@pytest.mark.parametrize("fn", [zeros_of_shape, constructors_of_sizes])
def test_constructors_of_symbolic_sizes_compile_once(fn: Callable[..., Any]) -> None:
    # A size that reaches an allocation stays symbolic: no guard on its value.
    compiled = compile_function(fn, backend="eager", dynamic=True)
    with recording_captures() as events:
        for shape in ((3, 4), (7, 2), (5, 5), (2, 9)):
            x = np.arange(float(np.prod(shape))).reshape(shape)
            got, want = compiled(x), fn(x)
            for g, w in zip(
                got if isinstance(got, tuple) else (got,),
                want if isinstance(want, tuple) else (want,),
                strict=True,
            ):
                _same(g, w)
    assert len(_graphs(events)) == 1
    assert not any("shape[0] ==" in str(guard) for guard in events[0].guards)


def test_a_negative_symbolic_size_raises_numpys_error() -> None:
    def f(x: Any) -> Any:
        return np.zeros(x.shape[0] - 5)

    compiled = compile_function(f, backend="eager", dynamic=True)
    _same(compiled(np.ones(8)), f(np.ones(8)))
    with pytest.raises(ValueError, match="negative dimensions"):
        compiled(np.ones(3))


def test_a_failed_build_of_a_symbolic_graph_warns_and_compiles_static(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A backend whose compiler refuses the graph with symbolic sizes (generated code with a
    # bug): the call compiles static and gives NumPy's result, and the failure is said.
    from numpile_capture.backends import lookup_backend
    from numpile_capture.dynamic_shapes import graph_has_symbols
    from numpile_runtime import BuildError

    builds: list[bool] = []

    def refusing(graph: Graph, example_inputs: list[Any]) -> Callable[..., Any]:
        builds.append(graph_has_symbols(graph))
        if graph_has_symbols(graph):
            raise BuildError("status 1", source_path="k.c", command=(), stderr="")
        compiled: Callable[..., Any] = lookup_backend("eager")(graph, example_inputs)
        return compiled

    def f(x: Any) -> Any:
        return x[::-1] * 2.0

    compiled = compile_function(f, backend=refusing, dynamic=True)
    x = np.arange(7.0)
    with caplog.at_level("WARNING", logger="numpile"):
        np.testing.assert_array_equal(compiled(x), f(x))
    assert builds == [True, False]
    said = [record.getMessage() for record in caplog.records]
    assert any("with symbolic sizes failed, a numpile bug" in message for message in said)
