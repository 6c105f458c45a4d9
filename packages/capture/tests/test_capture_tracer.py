"""The tracer: captured graphs run like the function, guards name what was read,
unsupported code is reported at the user's line. Runs on 3.11, 3.12 and 3.13."""

from __future__ import annotations

import copy
import inspect
import json
import math
import operator
from typing import Any

import numpy as np
import pytest

from numpile_capture import Op, OpKind, meta_of, run_graph
from numpile_capture.capture_result import CaptureResult, Unsupported
from numpile_capture.compiling import is_compiling
from numpile_capture.graph import Node
from numpile_capture.meta import ArrayMeta
from numpile_capture.tracer import capture_function
from numpile_guards import GuardKind

# -- a tiny stand-in for numpy_bindings: every binding is an extern op whose meta rule runs
# -- NumPy on zero-filled examples (the real module gives canonical ops; the values agree).


class _FakeUnsupportedCallError(Exception):
    pass


def _example(value: Any) -> Any:
    if isinstance(value, ArrayMeta):
        return np.zeros(value.shape, value.dtype)
    return value


class _FakeBinding:
    def __init__(self, name: str, fn: Any, mutates: tuple[int, ...] = ()) -> None:
        self.fn = fn
        self.op = Op(name, OpKind.EXTERN, self._meta, fn, mutates)

    def _meta(self, *inputs: Any, **params: Any) -> Any:
        return meta_of(self.fn(*[_example(v) for v in inputs], **params))

    def apply(self, graph: Any, *args: Any, **kwargs: Any) -> Any:
        for value in [*args, *kwargs.values()]:
            if isinstance(value, list | tuple) and any(isinstance(v, Node) for v in value):
                raise _FakeUnsupportedCallError("containers of arrays")
        return graph.call(self.op, *args, **kwargs)


def _inplace(fn: Any) -> Any:
    return lambda a, b: fn(a, b, out=a)


def _setitem(a: Any, index: Any, value: Any) -> Any:
    a[index] = value
    return a


_OPERATORS: dict[str, Any] = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "truediv": np.true_divide,
    "floordiv": np.floor_divide,
    "mod": np.remainder,
    "pow": np.power,
    "matmul": np.matmul,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
    "xor": np.bitwise_xor,
    "neg": np.negative,
    "pos": np.positive,
    "invert": np.invert,
    "abs": np.absolute,
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
    "getitem": operator.getitem,
}


class FakeBindings:
    UnsupportedCall = _FakeUnsupportedCallError

    def __init__(self) -> None:
        self.operators = {name: _FakeBinding(name, fn) for name, fn in _OPERATORS.items()}
        for name in ("add", "sub", "mul", "truediv"):
            self.operators["i" + name] = _FakeBinding("i" + name, _inplace(_OPERATORS[name]))
        self.operators["setitem"] = _FakeBinding("setitem", _setitem, (0,))
        functions = (np.sin, np.cos, np.exp, np.sum, np.zeros, np.ones, np.where, np.sqrt)
        self.functions = {fn: _FakeBinding(fn.__name__, fn) for fn in functions}

    def lookup_function(self, fn: Any) -> Any:
        try:
            return self.functions.get(fn)
        except TypeError:
            return None

    def lookup_method(self, name: str) -> Any:
        if name in ("sum", "mean", "reshape", "astype", "max", "copy"):
            return _FakeBinding(name, lambda a, *args, **kw: getattr(a, name)(*args, **kw))
        return None

    def lookup_attribute(self, name: str) -> Any:
        if name in ("T", "real", "imag"):
            return _FakeBinding(name, lambda a: getattr(a, name))
        return None

    def lookup_operator(self, name: str) -> Any:
        return self.operators[name]


def _bindings() -> Any:
    # The real mapping when it is there; the fake keeps these tests independent of it.
    try:
        from numpile_capture import numpy_bindings
    except ImportError:
        return FakeBindings()
    return numpy_bindings


BINDINGS = _bindings()


def capture(fn: Any, *args: Any, **kwargs: Any) -> CaptureResult:
    return capture_function(fn, args, kwargs, bindings=BINDINGS)


def _inputs(result: CaptureResult, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list:
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    return [s.get(dict(bound.arguments), fn.__globals__, fn) for s in result.input_sources]


def _assert_same(actual: Any, expected: Any) -> None:
    assert type(actual) is type(expected), (actual, expected)
    if isinstance(expected, np.ndarray | np.generic):
        assert actual.dtype == expected.dtype
        assert actual.shape == expected.shape
        np.testing.assert_array_equal(actual, expected)
    elif isinstance(expected, tuple | list):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected, strict=True):
            _assert_same(a, e)
    elif isinstance(expected, dict):
        assert list(actual) == list(expected)
        for key in expected:
            _assert_same(actual[key], expected[key])
    else:
        assert actual == expected


def check(fn: Any, *args: Any, **kwargs: Any) -> CaptureResult:
    """Capture fn, run the graph on copies of the inputs, compare with eager NumPy."""
    eager_args, eager_kwargs = copy.deepcopy((args, kwargs))
    expected = fn(*eager_args, **eager_kwargs)
    graph_args, graph_kwargs = copy.deepcopy((args, kwargs))
    result = capture(fn, *graph_args, **graph_kwargs)
    actual = run_graph(result.graph, _inputs(result, fn, graph_args, graph_kwargs))
    _assert_same(actual, expected)
    _assert_same(graph_args, eager_args)  # same in-place effects on the inputs
    _assert_same(graph_kwargs, eager_kwargs)
    return result


def guard_names(result: CaptureResult) -> set[tuple[str, str]]:
    return {(g.kind.name, g.source.name) for g in result.guards}


def line_of(fn: Any, marker: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, text in enumerate(lines) if marker in text)


X = np.arange(12.0).reshape(3, 4)
F32 = np.linspace(-1, 1, 4, dtype=np.float32)
SCALE = 2.5
WEIGHTS = np.full(4, 0.5)


def _helper(a: Any, k: Any = 2, *rest: Any, scale: float = 1.0, **extra: Any) -> Any:
    out = a * k * scale
    for item in rest:
        out = out + item
    for value in extra.values():
        out = out - value
    return out


def test_fake_bindings_capture_like_the_real_ones() -> None:
    def f(x, y):
        z = np.sin(x) * 2.0 + y.T[0]
        z += 1
        return z[1:], z.sum(axis=0), x.shape

    result = capture_function(f, (X, X.T.copy()), {}, bindings=FakeBindings())
    actual = run_graph(result.graph, [X, X.T.copy()])
    _assert_same(actual, f(X, X.T.copy()))


# -- values and dtypes ---------------------------------------------------------------------


def test_ufuncs_and_operators_match_numpy() -> None:
    def f(x, y):
        return np.sin(x) * y + 1, x - y, x / 2, x // 3, x % 2, -x, +x, abs(x), x**2, x @ y.T

    check(f, X, X + 1)


def test_weak_python_scalars_keep_float32() -> None:
    def f(x):
        return x * 2.0 + 1, x > 0.5, 3 - x

    result = check(f, F32)
    assert all(node.meta.dtype == np.float32 for node in result.graph.output_nodes()[:1])


def test_shape_arithmetic_is_folded_into_constants() -> None:
    def f(x, n):
        rows, cols = x.shape
        return x + (rows * cols + n + x.ndim + x.size + len(x)), x.dtype.itemsize

    result = check(f, X, 3)
    assert result.graph.output[1] == 8
    assert ("EQUALS_MATCH", "L['n']") in guard_names(result)


def test_comparisons_and_logic_on_arrays() -> None:
    def f(x):
        return (x < 3) | (x >= 9), x == 4, x != 4, ~(x > 2)

    check(f, X)


def test_dtype_comparisons_are_constants() -> None:
    def f(x):
        if x.dtype == np.float32 and x.dtype.kind == "f":
            return x * 2
        return x

    assert len(check(f, F32).graph.nodes) == 2
    assert len(check(f, X).graph.nodes) == 1


def test_attributes_and_methods() -> None:
    def f(x):
        return x.T + 0, x.sum(axis=0), x.reshape(4, 3).mean(), x.astype(np.float32)

    check(f, X)


def test_indexing_with_slices_none_and_ellipsis() -> None:
    def f(x):
        return x[1], x[1:, None, ...], x[::-1, 2], x[..., 0], x[:2][1:3]

    check(f, X)


# -- in-place effects ----------------------------------------------------------------------


def test_inplace_operators_mutate_the_input() -> None:
    def f(x):
        x += 1
        x *= 2
        return x

    result = check(f, X.copy())
    assert result.graph.output is not result.graph.placeholders[0]


def test_item_assignment_mutates_the_input() -> None:
    def f(x, v):
        x[0] = 5.0
        x[1:, 2] = v[:2]
        x[..., -1] += 1
        return x.sum()

    check(f, X.copy(), np.arange(4.0))


def test_returning_an_input_returns_its_placeholder() -> None:
    def f(x, y):
        return x, y

    result = check(f, X, F32)
    assert result.graph.output == tuple(result.graph.placeholders)


# -- Python values and control flow --------------------------------------------------------


def test_loops_over_containers_zip_enumerate_are_unrolled_ranges_kept() -> None:
    def f(xs, opts):
        total = xs[0] * 0
        for i in range(len(xs)):
            total = total + xs[i] * i
        for i, (a, b) in enumerate(zip(xs, reversed(xs), strict=True)):
            total = total + a * b + i
        for _key, value in opts.items():
            total = total + value
        for row in xs[0]:
            total = total + row
        return total

    result = check(f, [X[0], X[1], X[2]], {"a": 1.0, "b": 2})
    # The loop over range(len(xs)) indexes a list: it is unrolled (a body can index only
    # arrays by its index). zip/enumerate and dict items unroll. The loop over the 1-D array
    # xs[0] stays a loop whose item is a NumPy scalar, as NumPy gives: `element_at`.
    ops = [n.op.name for n in result.graph.nodes if n.op]
    assert ops.count("for_loop") == 1
    (loop,) = [n for n in result.graph.nodes if n.op and n.op.name == "for_loop"]
    assert "element_at" in [n.op.name for n in loop.kwargs["body"].nodes if n.op]
    assert "getitem" not in ops


def test_while_loop_on_constants() -> None:
    def f(x, n):
        i = 0
        while i < n:
            x = x + i
            i += 1
        else:
            x = x * 2
        return x

    check(f, X, 4)


def test_loop_with_break_and_continue() -> None:
    def f(x):
        for i in range(10):
            if i % 2:
                continue
            if i > 6:
                break
            x = x + i
        return x

    check(f, X)


def test_comprehensions() -> None:
    def f(xs):
        doubled = [x * 2 for x in xs]
        by_name = {f"k{i}": x for i, x in enumerate(xs) if i != 1}
        pairs = [(a, b) for a in range(2) for b in range(2)]
        return doubled, by_name, pairs

    check(f, [X, X + 1, X + 2])


def test_containers_built_unpacked_and_indexed() -> None:
    def f(x, t):
        a, *rest = t
        items = [x, x + 1]
        items.append(x + 2)
        items.extend((x + 3,))
        d = {"first": items[0], **{"second": items[-1]}}
        d["third"] = rest
        return (*items[1:3], d, len(d), t[1:], items.pop(), a in (1, 2))

    check(f, X, (1, 2, 3))


def test_builtins_on_python_values() -> None:
    def f(x, n, s):
        values = (min(n, 3), max([1, n, 2]), abs(-n), int(2.7), float(n), bool(n), round(2.5))
        flags = (isinstance(x, np.ndarray), isinstance(n, (float, str)), isinstance(s, str))
        return x + sum(values), flags, math.sqrt(16.0), sorted((3, 1, 2)), s.upper() + "!"

    check(f, X, 4, "ab")


def test_fstrings_and_string_methods_on_constants() -> None:
    def f(x, name):
        label = f"{name}:{x.shape[0]:03d}:{x.dtype!r}"
        return x + len(label), label, "-".join(["a", name])

    check(f, X, "w")


def test_none_checks_and_chained_comparisons() -> None:
    def f(x, bias=None, lo=0, hi=10):
        if bias is not None:
            x = x + bias
        if lo < x.shape[0] <= hi and not x.ndim > 3:
            x = x * 2
        return x if bias is None else -x

    check(f, X)
    check(f, X, bias=1.5)


def test_data_dependent_branch_is_unsupported_at_its_line() -> None:
    def f(x):
        y = x + 1
        if y.sum() > 0:  # <- here
            return y
        return x

    with pytest.raises(Unsupported) as info:
        capture(f, X)
    assert info.value.reason == (
        "not supported yet: branching on array values (data-dependent control flow)"
    )
    assert info.value.lineno == line_of(f, "# <- here")
    assert info.value.filename == __file__


def test_unroll_cap() -> None:
    # A body that cannot be kept as a loop (it grows a list) is unrolled, up to a cap.
    def f(x):
        out = []
        for i in range(5000):
            out.append(x + i)
        return out

    with pytest.raises(Unsupported, match="5000 iterations"):
        capture(f, X)


def test_long_loop_stays_a_loop() -> None:
    def f(x):
        for i in range(5000):
            x = x + i
        return x

    graph = capture(f, X).graph
    assert [node.op.name for node in graph.nodes if node.op is not None] == [
        "for_loop",
        "loop_output",
    ]


def test_runaway_while_loop_is_unsupported() -> None:
    def f(x):
        n = 0
        while True:
            n += 1

    with pytest.raises(Unsupported, match="too many iterations"):
        capture(f, X)


# -- inlining ------------------------------------------------------------------------------


def test_user_functions_are_inlined_with_defaults_varargs_kwargs() -> None:
    def f(x):
        a = _helper(x)
        b = _helper(x, 3, x, x, scale=0.5, extra=1.0)
        c = _helper(*(x, 4), **{"scale": 2.0})
        return a, b, c

    result = check(f, X)
    assert ("ID_MATCH", "G['_helper']") in guard_names(result)
    assert all(node.op is None or node.op.name != "call" for node in result.graph.nodes)


def test_nested_functions_closures_and_lambdas() -> None:
    def f(x, k):
        offset = x * 2

        def inner(y, times=k):
            return y * times + offset

        square = lambda v: v * v  # noqa: E731
        return inner(x), inner(x, times=1), square(x)

    check(f, X, 3)


def test_closure_of_the_captured_function_is_guarded() -> None:
    table = np.ones(4)
    factor = 3

    def f(x):
        return x * factor + table

    result = check(f, X)
    names = guard_names(result)
    index = f.__code__.co_freevars.index("table")
    assert ("ARRAY_MATCH", f"F.__closure__[{index}].cell_contents") in names
    assert [s.name for s in result.input_sources] == [
        "L['x']",
        f"F.__closure__[{index}].cell_contents",
    ]


def test_globals_arrays_constants_and_modules_are_guarded() -> None:
    def f(x):
        return x * SCALE + WEIGHTS

    result = check(f, X)
    assert guard_names(result) == {
        ("ARRAY_MATCH", "L['x']"),
        ("EQUALS_MATCH", "G['SCALE']"),
        ("ARRAY_MATCH", "G['WEIGHTS']"),
    }
    assert [s.name for s in result.input_sources] == ["L['x']", "G['WEIGHTS']"]


def test_guard_set_of_a_typical_function() -> None:
    def f(x, xs, n, unused, opts):
        y = np.sin(x) + xs[1] * n
        return _helper(y, opts["k"])

    result = check(f, X, (X, X), 2, np.zeros(3), {"k": 2.0})
    assert guard_names(result) == {
        ("ARRAY_MATCH", "L['x']"),
        ("ID_MATCH", "G['np']"),
        ("ID_MATCH", "G['np'].sin"),
        ("TYPE_MATCH", "L['xs']"),
        ("LENGTH_MATCH", "L['xs']"),
        ("ARRAY_MATCH", "L['xs'][0]"),
        ("ARRAY_MATCH", "L['xs'][1]"),
        ("EQUALS_MATCH", "L['n']"),
        ("ID_MATCH", "G['_helper']"),
        ("ID_MATCH", "G['_helper'].__code__"),  # replaced in place by autoreload
        ("EQUALS_MATCH", "G['_helper'].__kwdefaults__['scale']"),
        ("TYPE_MATCH", "L['opts']"),
        ("DICT_KEYS", "L['opts']"),
        ("EQUALS_MATCH", "L['opts']['k']"),
    }
    kinds = {g.kind for g in result.guards if g.source.name == "L['n']"}
    assert kinds == {GuardKind.EQUALS_MATCH}
    array_guard = next(g for g in result.guards if g.source.name == "L['x']")
    assert array_guard.expected.shape == (3, 4)
    assert array_guard.expected.strides == (32, 8)
    assert array_guard.expected.dtype == np.float64


def test_defaults_of_inlined_globals_are_guarded_through_the_function() -> None:
    def f(x):
        return _helper(x)

    result = check(f, X)
    assert ("EQUALS_MATCH", "G['_helper'].__defaults__[0]") in guard_names(result)


def test_compiled_functions_inline_their_original() -> None:
    class Wrapper:
        def __init__(self, fn: Any) -> None:
            self._numpile_original = fn

        def __call__(self, *args: Any) -> Any:
            return self._numpile_original(*args)

    wrapped = Wrapper(lambda v: np.cos(v) + 1)

    def f(x):
        return wrapped(x) * 2

    result = check(f, X)
    names = [n.op.name for n in result.graph.nodes if n.op]
    assert len(names) == 3 and names[0] == "cos"


def test_is_compiling_folds_to_true() -> None:
    def f(x):
        if is_compiling():
            return x + 1
        return x - 1

    assert not is_compiling()
    result = capture(f, X)
    np.testing.assert_array_equal(run_graph(result.graph, [X]), X + 1)


def test_unused_arguments_get_no_guards_or_placeholders() -> None:
    def f(x, y, n):
        return x + 1

    result = check(f, X, X, 7)
    assert [p.name for p in result.graph.placeholders] == ["x"]
    assert guard_names(result) == {("ARRAY_MATCH", "L['x']")}


def test_python_only_function_captures_a_constant_output() -> None:
    def f(n, s):
        return {"n": n * 2, "s": s + "!"}, None

    result = check(f, 3, "a")
    assert result.graph.output == ({"n": 6, "s": "a!"}, None)


# -- what is not supported, and where ------------------------------------------------------


def _unsupported_line(fn: Any, *args: Any) -> tuple[str, int | None]:
    with pytest.raises(Unsupported) as info:
        capture(fn, *args)
    assert info.value.filename == __file__
    return info.value.reason, info.value.lineno


def test_print_is_unsupported_at_its_line() -> None:
    def f(x):
        y = x + 1
        print(y)  # <- here
        return y

    reason, line = _unsupported_line(f, X)
    assert reason == "not supported yet: calling print"
    assert line == line_of(f, "# <- here")


def test_unknown_library_call_is_unsupported() -> None:
    def f(x):
        return json.dumps(x.shape)  # <- here

    reason, line = _unsupported_line(f, X)
    assert "json.dumps" in reason and line == line_of(f, "# <- here")


def test_unsupported_inside_an_inlined_function_points_into_it() -> None:
    def inner(y):
        return y.tolist()  # <- here

    def f(x):
        return inner(x + 1)

    reason, line = _unsupported_line(f, X)
    assert "tolist" in reason and line == line_of(inner, "# <- here")


@pytest.mark.parametrize(
    ("source", "what"),
    [
        ("import numpile_not_a_module  # <- here", "import"),
        ("with x:  # <- here\n        pass", "with"),
        ("raise ValueError  # <- here", "raise"),
        ("x.flags.writeable = False  # <- here", "attribute"),
        ("del x[0]  # <- here", "del"),
        ("x = {1, 2}  # <- here", "sets"),
    ],
)
def test_unsupported_constructs(source: str, what: str) -> None:
    text = f"def f(x):\n    {source}\n    return x\n"
    namespace: dict[str, Any] = {"np": np}
    exec(compile(text, __file__, "exec"), namespace)
    fn = namespace["f"]
    with pytest.raises(Unsupported) as info:
        capture(fn, X)
    assert what in info.value.reason
    expected = 1 + next(i for i, t in enumerate(text.splitlines()) if "# <- here" in t)
    assert info.value.lineno == expected


def test_mutating_an_input_list_is_unsupported() -> None:
    def f(xs):
        xs.append(1)
        return xs[0]

    with pytest.raises(Unsupported, match="side effects"):
        capture(f, [X])


def test_generator_function_is_unsupported() -> None:
    def gen(x):
        yield x

    with pytest.raises(Unsupported, match="generator"):
        capture(gen, X)


# -- invalid programs raise what NumPy and Python raise ------------------------------------


def test_numpy_meta_errors_propagate() -> None:
    def f(x, y):
        return x + y

    with pytest.raises(ValueError, match="broadcast"):
        capture(f, np.ones(3), np.ones(4))


def test_python_errors_propagate() -> None:
    def f(x, t):
        return x + t[5]

    with pytest.raises(IndexError):
        capture(f, X, (1, 2))

    def g(x):
        return _helper(x, nope=1, **{"nope": 2})

    with pytest.raises(TypeError):
        capture(g, X)
