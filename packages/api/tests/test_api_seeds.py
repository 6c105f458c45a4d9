"""Issue 21: the seeds' examples (`../shared/seeds/`), adapted from tensors to arrays, with
the outcome the documents give. Each test here failed before the issue was fixed."""

from __future__ import annotations

import operator
import sys
import types
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import numpile
from numpile_capture import CaptureFallbackWarning, Graph, lookup_backend
from numpile_capture.trace_rules import scoped_rules


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    numpile.reset()
    with scoped_rules(), warnings.catch_warnings():
        warnings.simplefilter("ignore", CaptureFallbackWarning)
        yield
    numpile.set_stance("default")
    numpile.reset()


def counting(graphs: list[Graph], inner: str = "eager") -> Callable[..., Any]:
    """A backend that records each graph it is handed and compiles it with `inner`."""

    def backend(graph: Graph, example_inputs: list[Any]) -> Any:
        graphs.append(graph)
        return lookup_backend(inner)(graph, example_inputs)

    return backend


# -- 1. set_stance inside a compiled region raises (000, 001, 004) -------------------------


def test_seed_set_stance_inside_a_compiled_function_raises() -> None:
    inp = np.zeros(3)

    @numpile.compile
    def baz(x: Any) -> Any:
        # error!
        with numpile.set_stance("force_eager"):
            return x + 1

    with pytest.raises(RuntimeError, match=r"forbidden callable .*set_stance"):
        baz(inp)


def test_seed_a_function_decorated_with_set_stance_cannot_be_called_from_compiled_code() -> None:
    inp = np.zeros(3)

    @numpile.set_stance("force_eager")
    def inner(x: Any) -> Any:
        return x + 1

    @numpile.compile
    def outer(x: Any) -> Any:
        # error!
        return inner(x)

    with pytest.raises(RuntimeError, match=r"forbidden callable .*inner"):
        outer(inp)
    np.testing.assert_array_equal(inner(inp), [1.0, 1.0, 1.0])  # eagerly it is fine
    assert numpile.set_stance.__name__ == "set_stance"


def test_set_stance_inside_a_try_block_still_raises_from_the_users_line() -> None:
    @numpile.compile
    def guarded(x: Any) -> Any:
        try:
            with numpile.set_stance("force_eager"):
                return x + 1
        except ValueError:
            return x

    line = guarded.__wrapped__.__code__.co_firstlineno + 3
    with pytest.raises(RuntimeError, match=rf"test_api_seeds.py:{line}\)$"):
        guarded(np.zeros(2))


# -- 2. compiling a builtin (004) ----------------------------------------------------------


def test_seed_compiling_operator_index_of_before_and_after_its_polyfill() -> None:
    assert operator.indexOf([1, 2, 3, 4, 5], 3) == 2
    with pytest.raises(numpile.Unsupported):
        numpile.compile(operator.indexOf, fullgraph=True)([1, 2, 3, 4, 5], 3)

    @numpile.substitute_in_graph(operator.indexOf)
    def indexOf(a: Any, b: Any, /) -> int:  # noqa: N802 - the seed's name
        for i, item in enumerate(a):
            if item is b or item == b:
                return i
        raise ValueError("sequence.index(x): x not in sequence")

    assert numpile.compile(operator.indexOf, fullgraph=True)([1, 2, 3, 4, 5], 3) == 2


def test_compiling_a_ufunc_captures_it() -> None:
    graphs: list[Graph] = []
    compiled = numpile.compile(np.sin, backend=counting(graphs))
    np.testing.assert_array_equal(compiled(np.zeros(2)), [0.0, 0.0])
    assert len(graphs) == 1
    assert "sin(" in str(graphs[0])


# -- 3. disable(recursive=False) (002) -----------------------------------------------------


def test_seed_disable_not_recursive_compiles_the_frames_it_calls() -> None:
    # The FAQ's diagram: a_fn is skipped, aa_fn and ab_fn (which it calls) are compiled.
    seen: list[tuple[str, bool]] = []

    def aa_fn(x: Any) -> Any:
        seen.append(("aa_fn", numpile.is_compiling()))
        return x + 1

    def ab_fn(x: Any) -> Any:
        seen.append(("ab_fn", numpile.is_compiling()))
        return x * 2

    @numpile.disable(recursive=False)
    def a_fn(x: Any) -> Any:
        seen.append(("a_fn", numpile.is_compiling()))
        return ab_fn(aa_fn(x))

    @numpile.compile(backend="eager")
    def fn(x: Any) -> Any:
        return a_fn(x) - 1

    for _ in range(2):  # the compile, then the cached entry
        np.testing.assert_array_equal(fn(np.zeros(2)), [1.0, 1.0])
        assert seen == [("a_fn", False), ("aa_fn", True), ("ab_fn", True)]
        seen.clear()
    # Called eagerly, nothing compiles.
    np.testing.assert_array_equal(a_fn(np.zeros(2)), [2.0, 2.0])
    assert seen == [("a_fn", False), ("aa_fn", False), ("ab_fn", False)]
    seen.clear()
    # Compiled directly, the same: its own frame in Python, its callees compiled.
    np.testing.assert_array_equal(numpile.compile(a_fn, backend="eager")(np.zeros(2)), [2, 2])
    assert seen == [("a_fn", False), ("aa_fn", True), ("ab_fn", True)]


def test_recursive_disable_still_disables_the_callees() -> None:
    seen: list[bool] = []

    def callee(x: Any) -> Any:
        seen.append(numpile.is_compiling())
        return x + 1

    @numpile.disable
    def skipped(x: Any) -> Any:
        return callee(x)

    @numpile.compile(backend="eager")
    def fn(x: Any) -> Any:
        return skipped(x)

    fn(np.zeros(2))
    assert seen == [False]


# -- 4. reset restores the initial state (004) ---------------------------------------------


def test_seed_reset_makes_the_next_compile_a_first_compile() -> None:
    @numpile.compile
    def my_huge_model(x: Any) -> Any:
        if numpile.is_compiling():
            return x + 1
        else:
            return x - 1

    np.testing.assert_array_equal(my_huge_model(np.zeros(3)), [1, 1, 1])
    numpile.compile.reset()  # type: ignore[attr-defined]
    with numpile.set_stance("eager_on_recompile"):
        np.testing.assert_array_equal(my_huge_model(np.zeros(4)), [1, 1, 1, 1])  # compiled
        np.testing.assert_array_equal(my_huge_model(np.zeros(5)), [-1] * 5)  # a recompile
        np.testing.assert_array_equal(my_huge_model(np.zeros(4)), [1, 1, 1, 1])


def test_reset_forgets_automatic_dynamic_observations() -> None:
    graphs: list[Graph] = []

    @numpile.compile(backend=counting(graphs))
    def f(x: Any) -> Any:
        return x + 1

    f(np.zeros(3))
    f(np.zeros(4))  # dynamic from now on
    numpile.reset()
    f(np.zeros(5))
    assert "float64[s0]" in str(graphs[1])
    assert "float64[5]" in str(graphs[2])  # a first compile is static again


# -- 5 and 6. a size in arithmetic stays symbolic (003) ------------------------------------


@pytest.mark.parametrize("backend", ["eager", "inductor"])
@pytest.mark.parametrize("dynamic", [True, None])
def test_seed_dynamic_sizes_used_in_arithmetic_compile_once(
    backend: str, dynamic: bool | None
) -> None:
    graphs: list[Graph] = []

    @numpile.compile(dynamic=dynamic, backend=counting(graphs, backend))
    def scale(x: Any) -> Any:
        return x * x.shape[0]

    for n in (3, 5, 7, 11, 4):
        x = np.arange(n, dtype=np.float64)
        result = scale(x)
        np.testing.assert_array_equal(result, x * n)
        assert result.dtype == np.float64
    # dynamic=True: one compile for all sizes; None: static first, dynamic after one change.
    assert len(graphs) == (1 if dynamic else 2)
    assert "int" in str(graphs[-1]).splitlines()[0]  # the size is a scalar graph input


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_dynamic_size_arithmetic_matches_numpy_values_and_dtypes(backend: str) -> None:
    programs: list[Callable[[Any], Any]] = [
        lambda x: x * x.shape[0],
        lambda x: x.shape[0] * x,
        lambda x: x + (x.shape[0] - 1) * 2,
        lambda x: x * (x.shape[0] / 2),
        lambda x: np.multiply(x, x.size) + x.ndim,
        lambda x: (x * x.shape[0]).sum() / x.shape[0],
        lambda x: x - x.shape[0] // 2 % 3,
    ]
    for program in programs:
        graphs: list[Graph] = []
        compiled = numpile.compile(program, dynamic=True, backend=counting(graphs, backend))
        for dtype in ("float64", "float32", "int8", "int64", "uint8"):
            for n in (3, 5, 7, 11, 4):
                x = (np.arange(n) % 5).astype(dtype)
                expected, actual = program(x.copy()), compiled(x.copy())
                assert type(actual) is type(expected)
                if isinstance(expected, np.ndarray):
                    assert actual.dtype == expected.dtype, (dtype, n)
                np.testing.assert_array_equal(actual, expected)
        # One compile per dtype (NEP 50: an int8 array times a size stays int8).
        assert len(graphs) == 5, program


def test_a_size_out_of_the_int8_range_raises_as_numpy_does() -> None:
    @numpile.compile(dynamic=True)
    def scale(x: Any) -> Any:
        return x * x.shape[0]

    assert scale(np.ones(100, np.int8))[0] == 100
    with pytest.raises(OverflowError, match="out of bounds for int8"):
        scale(np.ones(200, np.int8))
    assert scale(np.ones(120, np.int8)).dtype == np.int8


def test_sizes_shown_to_python_are_numbers_never_symbols() -> None:
    @numpile.compile(dynamic=True)
    def describe(x: Any) -> Any:
        n = x.shape[0]
        text = f"{x.size} {x.shape} {n - 1}", str(n), repr(n), "{}".format(n), format(n, "03")  # noqa: UP032
        return x * 2, text, n, x.size, {"n": n}

    for n in (4, 6, 9):
        _, text, first, size, named = describe(np.ones(n))
        assert text == (f"{n} ({n},) {n - 1}", str(n), str(n), str(n), f"{n:03}")
        assert (first, size, named) == (n, n, {"n": n})
        assert type(first) is int and type(size) is int


def test_a_branch_on_a_size_still_guards() -> None:
    graphs: list[Graph] = []

    @numpile.compile(dynamic=True, backend=counting(graphs))
    def branch(x: Any) -> Any:
        if x.shape[0] > 4:
            return x * x.shape[0]
        return x - 1

    np.testing.assert_array_equal(branch(np.ones(5)), np.full(5, 5.0))
    np.testing.assert_array_equal(branch(np.ones(8)), np.full(8, 8.0))
    np.testing.assert_array_equal(branch(np.ones(3)), np.zeros(3))
    assert len(graphs) == 2


def test_explain_shows_no_size_specialization() -> None:
    def scale(x: Any) -> Any:
        return x * x.shape[0]

    numpile.mark_dynamic(x := np.ones(6), 0)
    text = "\n".join(str(guard) for guard in numpile.explain(scale)(x).guards)
    assert "== 6" not in text


# -- the names the Compiler APIs page lists (004) ------------------------------------------


def test_seed_helpful_apis() -> None:
    assert "inductor" in numpile.list_backends()
    numpile.compile.reset()  # type: ignore[attr-defined]
    assert numpile.is_compiling() is False
    assert numpile.is_dynamo_compiling() is False
    assert numpile.is_exporting() is False


def test_is_dynamo_compiling_is_true_only_while_capture_traces() -> None:
    inside_backend: list[tuple[bool, bool]] = []

    def backend(graph: Graph, example_inputs: list[Any]) -> Any:
        inside_backend.append((numpile.is_compiling(), numpile.is_dynamo_compiling()))
        return lookup_backend("eager")(graph, example_inputs)

    @numpile.compile(backend=backend)
    def probes(x: Any) -> Any:
        if numpile.is_dynamo_compiling() and not numpile.is_exporting():
            return x + 1
        return x - 1

    np.testing.assert_array_equal(probes(np.zeros(2)), [1.0, 1.0])
    assert inside_backend == [(True, False)]
    np.testing.assert_array_equal(probes.__wrapped__(np.zeros(2)), [-1.0, -1.0])


class _Device:
    """A stand-in for `cupy.cuda.Device`: a context manager naming a GPU."""

    def __init__(self, index: int) -> None:
        self.id = index

    def __enter__(self) -> _Device:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class _GpuArray:
    """A stand-in for a CuPy array: NumPy data, CuPy's type name and NumPy protocols."""

    def __init__(self, data: Any) -> None:
        self.data = np.asarray(data)
        self.device = _Device(0)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        plain = [item.data if isinstance(item, _GpuArray) else item for item in inputs]
        return _GpuArray(getattr(ufunc, method)(*plain, **kwargs))

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        plain = [item.data if isinstance(item, _GpuArray) else item for item in args]
        return _GpuArray(func(*plain, **kwargs))

    def __mul__(self, other: Any) -> Any:
        return np.multiply(self, other)


_GpuArray.__module__ = "cupy"
_GpuArray.__name__ = "ndarray"
_GpuArray.__qualname__ = "ndarray"


def test_seed_wrap_numpy_returns_device_arrays(monkeypatch: pytest.MonkeyPatch) -> None:
    # The FAQ's wrap_numpy example, run eagerly through the GPU arrays' NumPy protocols; a
    # NumPy array the function creates comes back on the device too.
    fake_cupy = types.ModuleType("cupy")
    fake_cupy.asarray = _GpuArray  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy)

    @numpile.wrap_numpy
    def numpy_fn(X: Any, Y: Any) -> Any:
        return np.sum(X * Y, axis=-1), np.zeros(2)

    X, Y = _GpuArray(np.ones((4, 3))), _GpuArray(np.full((4, 3), 2.0))
    Z, created = numpy_fn(X, Y)
    assert type(Z) is _GpuArray and type(created) is _GpuArray
    np.testing.assert_array_equal(Z.data, np.full(4, 6.0))
    # With NumPy inputs it is the function itself, and it compiles like one.
    plain = numpile.compile(numpy_fn, fullgraph=True)
    np.testing.assert_array_equal(plain(np.ones((4, 3)), np.ones((4, 3)))[0], np.full(4, 3.0))
