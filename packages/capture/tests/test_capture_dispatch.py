"""The dispatcher with an injected capture function: caching, recompiles, fallbacks, stances."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from numpile_capture import (
    CaptureFallbackWarning,
    CaptureResult,
    CompiledFunction,
    Graph,
    InternalCompilerError,
    Unsupported,
    compile_function,
    config,
    get_op,
    meta_of,
    reset,
    set_stance,
)
from numpile_capture.backends import BackendCompileError
from numpile_guards import ArraySpec, FunctionSource, Guard, GuardKind, LocalSource, cache_for


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    reset()
    yield
    reset()
    set_stance("default")


class FakeCapture:
    """Captures `x + k` for a function `f(x, k=1)`: guards the array and the constant k."""

    def __init__(self, *, error: Exception | None = None, bad_guards: bool = False) -> None:
        self.calls = 0
        self.error = error
        self.bad_guards = bad_guards

    def __call__(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> CaptureResult:
        self.calls += 1
        if self.error is not None:
            raise self.error
        x = args[0]
        k = kwargs.get("k", args[1] if len(args) > 1 else fn.__defaults__[0])
        graph = Graph()
        node = graph.placeholder("x", meta_of(x))
        graph.output = graph.call(get_op("add"), node, k)
        spec = ArraySpec(type(x), x.dtype, tuple(x.shape), tuple(x.strides))
        if self.bad_guards:
            spec = ArraySpec(type(x), np.dtype("int8"), tuple(x.shape), tuple(x.strides))
        guards = (
            Guard(GuardKind.ARRAY_MATCH, LocalSource("x"), spec),
            Guard(GuardKind.EQUALS_MATCH, LocalSource("k"), k),
        )
        return CaptureResult(graph, (LocalSource("x"),), guards)


def add_k(x: Any, k: int = 1) -> Any:
    return x - k  # eagerly it subtracts: a compiled result is told apart from an eager one


def compiled(capture: FakeCapture, fn: Callable[..., Any] = add_k, **kwargs: Any) -> Any:
    return CompiledFunction(fn, capture_fn=capture, **kwargs)


def test_hit_reuses_entry_and_miss_recaptures() -> None:
    capture = FakeCapture()
    f = compiled(capture)
    np.testing.assert_array_equal(f(np.zeros(3)), np.ones(3))
    np.testing.assert_array_equal(f(np.ones(3)), np.full(3, 2.0))
    assert capture.calls == 1
    f(np.zeros(4))
    f(np.zeros(3), k=2)
    f(np.zeros(3), 2)
    assert capture.calls == 3
    assert len(cache_for(add_k.__code__).entries) == 3


def test_wrapper_metadata() -> None:
    f = compiled(FakeCapture())
    assert f.__name__ == "add_k"
    assert f.__wrapped__ is add_k
    assert f._numpile_original is add_k
    assert "add_k" in repr(f)


def test_recompile_reasons_are_recorded_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    f = compiled(FakeCapture())
    f(np.zeros(3))
    with caplog.at_level(logging.INFO, logger="numpile.recompiles"):
        f(np.zeros(4))
        f(np.zeros(3, np.float32))
    reasons = cache_for(add_k.__code__).recompile_reasons
    assert [r.failures for r in reasons] == [
        ("L['x'].shape[0]: expected 3, got 4",),
        (
            "L['x'].dtype: expected float64, got float32",
            "L['x'].dtype: expected float64, got float32",
        ),
    ]
    assert "Recompiling function add_k" in caplog.text
    assert "L['x'].shape[0]: expected 3, got 4" in caplog.text


def test_cache_size_limit_warns_once_then_runs_eagerly() -> None:
    capture = FakeCapture()
    f = compiled(capture)
    with config.patch(cache_size_limit=2):
        f(np.zeros(1))
        f(np.zeros(2))
        with pytest.warns(CaptureFallbackWarning, match="cache_size_limit \\(2\\)"):
            out = f(np.zeros(3))
        np.testing.assert_array_equal(out, -np.ones(3))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            np.testing.assert_array_equal(f(np.zeros(4)), -np.ones(4))
        # Cached entries are still used.
        np.testing.assert_array_equal(f(np.zeros(2)), np.ones(2))
        # Eager calls past the limit are not recompiles: no reason is worked out or kept.
        reasons = len(cache_for(add_k.__code__).recompile_reasons)
        for size in range(5, 50):
            f(np.zeros(size))
        assert len(cache_for(add_k.__code__).recompile_reasons) == reasons
    assert capture.calls == 2


def test_unsupported_warns_once_and_runs_eagerly_until_reset() -> None:
    capture = FakeCapture(error=Unsupported("not supported yet: print", "model.py", 12))
    f = compiled(capture)
    with pytest.warns(CaptureFallbackWarning) as record:
        np.testing.assert_array_equal(f(np.zeros(2)), -np.ones(2))
    message = str(record[0].message)
    assert "not supported yet: print (model.py:12)" in message
    assert "running add_k eagerly" in message
    assert "filterwarnings" in message
    assert record[0].filename == "model.py"
    assert record[0].lineno == 12
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f(np.zeros(2))
        f(np.zeros(5))
    assert capture.calls == 1
    reset()
    with pytest.warns(CaptureFallbackWarning):
        f(np.zeros(2))
    assert capture.calls == 2


def test_fullgraph_raises_unsupported_with_location() -> None:
    capture = FakeCapture(error=Unsupported("not supported yet: print", "model.py", 12))
    f = compiled(capture, fullgraph=True)
    with pytest.raises(Unsupported) as info:
        f(np.zeros(2))
    assert str(info.value) == "not supported yet: print (model.py:12)"
    with pytest.raises(Unsupported):
        f(np.zeros(2))


def test_capture_error_reruns_eagerly_to_raise_numpys_error() -> None:
    def bad(x: Any, y: Any) -> Any:
        return x + y

    capture = FakeCapture(error=ValueError("operands could not be broadcast"))
    f = compiled(capture, bad)
    with pytest.raises(ValueError, match="could not be broadcast together") as info:
        f(np.zeros(2), np.zeros(3))
    assert info.value.__context__ is None  # not chained to the capture's exception
    assert info.traceback[-1].name == "bad"


def test_capture_error_with_working_eager_returns_eager_result(
    caplog: pytest.LogCaptureFixture,
) -> None:
    capture = FakeCapture(error=KeyError("tracer bug"))
    f = compiled(capture)
    with caplog.at_level(logging.WARNING, logger="numpile.capture"):
        np.testing.assert_array_equal(f(np.zeros(2)), -np.ones(2))
    assert "runs fine eagerly" in caplog.text
    f(np.zeros(2))
    assert capture.calls == 1


def test_wrong_arguments_raise_pythons_error() -> None:
    f = compiled(FakeCapture())
    with pytest.raises(TypeError, match="add_k\\(\\) got an unexpected keyword argument 'z'"):
        f(np.zeros(2), z=1)


def test_guards_that_reject_their_own_inputs_are_an_internal_error() -> None:
    f = compiled(FakeCapture(bad_guards=True))
    with pytest.raises(InternalCompilerError, match="reject the inputs they were built from"):
        f(np.zeros(2))
    with config.patch(suppress_errors=True):
        np.testing.assert_array_equal(f(np.zeros(2)), -np.ones(2))


def test_backend_failure() -> None:
    def broken(graph: Graph, example_inputs: list[Any]) -> Any:
        raise RuntimeError("boom")

    f = compiled(FakeCapture(), backend=broken)
    with pytest.raises(BackendCompileError, match=r"failed to compile add_k.*boom"):
        f(np.zeros(2))
    with config.patch(suppress_errors=True):
        np.testing.assert_array_equal(f(np.zeros(2)), -np.ones(2))


def test_backend_receives_graph_and_example_inputs() -> None:
    seen: list[Any] = []

    def spy(graph: Graph, example_inputs: list[Any]) -> Any:
        seen.append((str(graph), example_inputs))
        return lambda x: ("spy", x.shape)

    f = compiled(FakeCapture(), backend=spy)
    assert f(np.zeros(3)) == ("spy", (3,))
    assert f(np.ones(3)) == ("spy", (3,))
    assert len(seen) == 1
    assert "add(x, 1)" in seen[0][0]
    np.testing.assert_array_equal(seen[0][1][0], np.zeros(3))


def test_two_backends_do_not_share_entries() -> None:
    def other(graph: Graph, example_inputs: list[Any]) -> Any:
        return lambda x: "other"

    capture = FakeCapture()
    f = compiled(capture)
    g = compiled(capture, backend=other)
    f(np.zeros(3))
    assert g(np.zeros(3)) == "other"
    assert capture.calls == 2
    assert cache_for(add_k.__code__).recompile_reasons == []


def test_closures_share_a_code_cache_and_guards_tell_them_apart() -> None:
    def make(k: int) -> Callable[..., Any]:
        def inner(x: Any) -> Any:
            return x

        return inner

    seen: list[Any] = []

    def capture(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> CaptureResult:
        seen.append(fn)
        graph = Graph()
        graph.output = graph.placeholder("x", meta_of(args[0]))
        guards = (Guard(GuardKind.ID_MATCH, FunctionSource(), fn),)
        return CaptureResult(graph, (LocalSource("x"),), guards)

    f1 = CompiledFunction(make(1), capture_fn=capture)
    f2 = CompiledFunction(make(2), capture_fn=capture)
    f1(np.zeros(1))
    f1(np.zeros(1))
    f2(np.zeros(1))
    assert len(seen) == 2
    assert len(cache_for(f1._numpile_original.__code__).entries) == 2


def test_defaults_changes_are_seen() -> None:
    capture = FakeCapture()

    def f(x: Any, k: int = 1) -> Any:
        return x - k

    g = compiled(capture, f)
    np.testing.assert_array_equal(g(np.zeros(2)), np.ones(2))
    f.__defaults__ = (5,)
    np.testing.assert_array_equal(g(np.zeros(2)), np.full(2, 5.0))


def test_binding_handles_every_parameter_kind() -> None:
    seen: list[dict[str, Any]] = []

    def spy_capture(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> CaptureResult:
        raise Unsupported("not supported yet: test")

    def f(a: Any, /, b: Any = 2, *rest: Any, c: Any, d: Any = 4, **extra: Any) -> Any:
        return (a, b, rest, c, d, extra)

    g = CompiledFunction(f, capture_fn=spy_capture)
    seen.append(g._bound_locals((1,), {"c": 3}))
    seen.append(g._bound_locals((1, 5, 6, 7), {"c": 3, "d": 8, "z": 9}))
    assert seen[0] == {"a": 1, "b": 2, "rest": (), "c": 3, "d": 4, "extra": {}}
    assert seen[1] == {"a": 1, "b": 5, "rest": (6, 7), "c": 3, "d": 8, "extra": {"z": 9}}
    with pytest.raises(TypeError):
        g._bound_locals((), {"a": 1, "c": 3})


def test_methods_bind_self() -> None:
    class Model:
        scale = 3

        @compile_function(backend="eager")
        def forward(self, x: Any) -> Any:
            return x * self.scale

    model = Model()
    with set_stance("force_eager"):
        np.testing.assert_array_equal(model.forward(np.ones(2)), np.full(2, 3.0))
    assert isinstance(Model.__dict__["forward"], CompiledFunction)


def test_compile_forms_and_disable() -> None:
    def f(x: Any) -> Any:
        return x

    assert isinstance(compile_function(f), CompiledFunction)
    assert isinstance(compile_function()(f), CompiledFunction)
    assert isinstance(compile_function(backend="eager")(f), CompiledFunction)
    assert compile_function(f, disable=True) is f
    assert compile_function(compile_function(f))._numpile_original is f
    with pytest.raises(TypeError, match="expects a Python function"):
        compile_function(3)
    with pytest.raises(TypeError, match="expects a Python function"):
        compile_function(Exception)
    # A builtin is compiled through a Python frame that calls it (as torch does).
    assert compile_function(len, backend="eager")([1, 2]) == 2


def test_mode_and_options_validation() -> None:
    def f(x: Any) -> Any:
        return x

    with pytest.raises(ValueError, match=r"unknown mode 'fast'.*max-autotune"):
        compile_function(f, mode="fast")
    with pytest.raises(ValueError, match="Either mode or options"):
        compile_function(f, mode="max-autotune", options={"a": 1})
    with pytest.raises(TypeError, match="takes no options"):
        compile_function(f, backend="eager", options={"a": 1})
    with pytest.warns(UserWarning, match="takes no mode"):
        compile_function(f, backend="eager", mode="max-autotune")
    compile_function(f, backend="eager", mode="default")


def test_mode_and_options_reach_backends_that_accept_them() -> None:
    received: list[dict[str, Any]] = []

    def tunable(graph: Graph, example_inputs: list[Any], *, mode: Any = None, options: Any = None):  # type: ignore[no-untyped-def]
        received.append({"mode": mode, "options": options})
        return lambda x: x

    compiled(FakeCapture(), backend=tunable, mode="max-autotune")(np.zeros(1))
    compiled(FakeCapture(), backend=tunable, options={"cpp.threads": 2})(np.zeros(2))
    assert received == [
        {"mode": "max-autotune", "options": None},
        {"mode": None, "options": {"cpp.threads": 2}},
    ]


def test_a_backend_prepares_when_compiled_and_before_capture_with_its_own_options() -> None:
    # The inductor probes the compiler from the decoration on and while capture runs
    # (`prepare_backend`); a hit, which captures nothing, prepares nothing, and a prepare
    # that raises is ignored.
    events: list[Any] = []
    capture = FakeCapture()

    class Recording(FakeCapture):
        def __call__(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            events.append("capture")
            return capture(fn, args, kwargs)

    def backend(graph: Graph, example_inputs: list[Any], *, options: Any = None) -> Any:
        events.append("compile")
        return lambda x: x + 1

    def prepare(*, options: Any = None) -> None:
        events.append(("prepare", options))
        if options.get("fail"):
            raise RuntimeError("no compiler")

    backend.prepare = prepare  # type: ignore[attr-defined]
    f = compiled(Recording(), backend=backend, options={"cpp.threads": 2})
    assert events == [("prepare", {"cpp.threads": 2})]
    f(np.zeros(2))
    f(np.zeros(2))
    assert events[1:] == [("prepare", {"cpp.threads": 2}), "capture", "compile"]
    g = compiled(Recording(), backend=backend, options={"fail": True})
    np.testing.assert_array_equal(g(np.zeros(3)), np.ones(3))
    assert events[4:] == [("prepare", {"fail": True})] * 2 + ["capture", "compile"]
