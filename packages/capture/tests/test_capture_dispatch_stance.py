"""set_stance: the seeds' examples, with a fake capture (compiled adds 1, eager subtracts 1)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from plus_one_backend import PlusOne, minus_one

from numpile_capture import (
    CaptureResult,
    CompiledFunction,
    Graph,
    current_stance,
    reset,
    set_stance,
)
from numpile_capture.stance import compiled_region, in_compiled_region
from numpile_guards import cache_for


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    reset()
    yield
    reset()
    set_stance("default")


def make(capture: PlusOne | None = None) -> Any:
    # Pinned: importing numpile makes inductor the default, and this layer's tests
    # must not depend on which packages happen to be imported.
    return CompiledFunction(minus_one, capture_fn=capture or PlusOne(), backend="eager")


def values(array: Any) -> list[float]:
    return [float(v) for v in np.asarray(array).ravel()]


def test_force_eager_as_decorator_context_manager_and_function() -> None:
    foo = make()
    inp = np.zeros(3)
    assert values(foo(inp)) == [1, 1, 1]

    @set_stance("force_eager")
    def bar(x: Any) -> Any:
        return foo(x)

    assert current_stance().name == "default"  # decorating does not change the stance
    assert values(bar(inp)) == [-1, -1, -1]
    assert current_stance().name == "default"
    with set_stance("force_eager"):
        assert values(foo(inp)) == [-1, -1, -1]
    assert values(foo(inp)) == [1, 1, 1]
    set_stance("force_eager")
    assert values(foo(inp)) == [-1, -1, -1]
    set_stance("default")
    assert values(foo(inp)) == [1, 1, 1]


def test_force_eager_never_captures() -> None:
    capture = PlusOne()
    foo = make(capture)
    with set_stance("force_eager"):
        foo(np.zeros(3))
    assert capture.calls == 0


def test_eager_on_recompile_sequence() -> None:
    capture = PlusOne()
    model = make(capture)
    assert values(model(np.zeros(3))) == [1, 1, 1]
    with set_stance("eager_on_recompile"):
        assert values(model(np.zeros(3))) == [1, 1, 1]
        assert values(model(np.zeros(4))) == [-1, -1, -1, -1]
        assert values(model(np.zeros(3))) == [1, 1, 1]
    assert capture.calls == 1


def test_fail_on_recompile() -> None:
    model = make()
    model(np.zeros(3))
    with set_stance("fail_on_recompile"):
        model(np.zeros(3))
        with pytest.raises(RuntimeError) as info:
            model(np.zeros(4))
    message = str(info.value)
    assert message.startswith(
        "Detected recompile when numpile.compile stance is 'fail_on_recompile'."
    )
    assert "L['x'].shape[0]: expected 3, got 4" in message
    assert len(cache_for(minus_one.__code__).entries) == 1


def test_recompile_stances_allow_a_first_compile() -> None:
    # As the seeds document them: only a recompile is refused; a function without
    # compiled code (never compiled, or since reset()) compiles for the first time.
    for stance in ("fail_on_recompile", "eager_on_recompile"):
        capture = PlusOne()
        model = make(capture)
        with set_stance(stance):
            assert values(model(np.zeros(3))) == [1, 1, 1]
        assert capture.calls == 1
        reset()


def test_set_stance_inside_a_compiled_region_raises() -> None:
    with compiled_region():
        assert in_compiled_region()
        with pytest.raises(RuntimeError, match="inside a compiled region"):
            set_stance("force_eager")
    assert not in_compiled_region()
    assert current_stance().name == "default"


def test_set_stance_inside_a_running_compiled_function_raises() -> None:
    # The function cannot be captured (fake Unsupported), so it runs eagerly inside the
    # compiled region, as Dynamo runs the frame of a graph break.
    from numpile_capture import Unsupported

    def unsupported(fn: Any, args: Any, kwargs: Any) -> CaptureResult:
        raise Unsupported("not supported yet: numpile.set_stance")

    def baz(x: Any) -> Any:
        with set_stance("force_eager"):
            return x + 1

    @set_stance("force_eager")
    def inner(x: Any) -> Any:
        return x + 1

    def outer(x: Any) -> Any:
        return inner(x)

    for fn in (baz, outer):
        compiled = CompiledFunction(fn, capture_fn=unsupported)
        with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="compiled region"):
            compiled(np.zeros(3))
    assert current_stance().name == "default"


def test_invalid_stance_arguments() -> None:
    with pytest.raises(ValueError, match=r"unknown stance 'lazy'.*force_eager"):
        set_stance("lazy")
    with pytest.raises(RuntimeError, match="force_backend can only be used with stance 'default'"):
        set_stance("force_eager", force_backend="eager")
    with pytest.raises(ValueError, match="unknown backend 'nope'"):
        set_stance("default", force_backend="nope")
    assert current_stance().name == "default"


def test_force_backend_compiles_with_that_backend() -> None:
    capture = PlusOne()
    model = make(capture)

    def tagged(graph: Graph, example_inputs: list[Any]) -> Any:
        return lambda x: "tagged"

    model(np.zeros(3))
    with set_stance("default", force_backend=tagged):
        assert model(np.zeros(3)) == "tagged"
    assert values(model(np.zeros(3))) == [1, 1, 1]
    assert capture.calls == 2


def test_skip_guard_eval_unsafe_reuses_the_only_entry() -> None:
    capture = PlusOne()
    model = make(capture)
    model(np.zeros(3))
    with set_stance(skip_guard_eval_unsafe=True):
        # Unsafe by contract: with one entry nothing is checked, so a new shape reuses it.
        assert values(model(np.zeros(7))) == [1] * 7
    assert capture.calls == 1
    model(np.zeros(5))
    assert capture.calls == 2
    with set_stance(skip_guard_eval_unsafe=True):
        assert values(model(np.zeros(5))) == [1] * 5
        assert values(model(np.zeros(3))) == [1] * 3
        assert capture.calls == 2
        model(np.zeros(6))  # differs from both entries: still a miss
    assert capture.calls == 3


def test_stance_restored_after_exception_in_decorated_function() -> None:
    @set_stance("force_eager")
    def boom() -> None:
        raise KeyError("x")

    with pytest.raises(KeyError):
        boom()
    assert current_stance().name == "default"
    with pytest.raises(KeyError), set_stance("fail_on_recompile"):
        raise KeyError("y")
    assert current_stance().name == "default"
