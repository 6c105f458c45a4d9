"""Pickling compiled functions: by reference when importable, by value (cloudpickle) otherwise,
before and after the first call; the receiving process compiles again."""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from numpile_capture import CompiledFunction, compile_function
from numpile_capture.pickling import compiled_from_reference, compiled_from_value

cloudpickle = pytest.importorskip("cloudpickle")

MODULE = textwrap.dedent(
    """
    import numpy as np
    from numpile_capture import compile_function

    @compile_function(backend="eager")
    def decorated(x):
        return np.sin(x) * 2

    def plain(x):
        return np.cos(x) + 1

    plain_compiled = compile_function(plain, backend="eager", dynamic=True)

    class Model:
        def __init__(self, scale):
            self.scale = scale

        @compile_function(backend="eager")
        def forward(self, x):
            return x * self.scale
    """
)


@pytest.fixture
def user_module(tmp_path: Path) -> Iterator[object]:
    name = f"numpile_pickle_user_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(MODULE)
    sys.path.insert(0, str(tmp_path))
    try:
        yield __import__(name)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop(name, None)


@pytest.mark.parametrize("called_first", [False, True])
def test_decorated_module_function_pickles_by_reference(user_module: object, called_first: bool):
    decorated = user_module.decorated  # type: ignore[attr-defined]
    x = np.linspace(0, 1, 5)
    if called_first:
        decorated(x)
    data = pickle.dumps(decorated)
    assert b"compiled_from_reference" in data
    assert pickle.loads(data) is decorated


def test_compiled_plain_function_pickles_by_reference_with_its_settings(user_module: object):
    compiled = user_module.plain_compiled  # type: ignore[attr-defined]
    compiled(np.ones(3))
    reducer, (module, qualname, settings) = compiled.__reduce__()
    assert reducer is compiled_from_reference
    assert (module, qualname) == (user_module.__name__, "plain")  # type: ignore[attr-defined]
    assert settings["dynamic"] is True and settings["backend"] == "eager"
    clone = pickle.loads(pickle.dumps(compiled))
    assert isinstance(clone, CompiledFunction) and clone is not compiled
    assert clone.dynamic is True
    np.testing.assert_array_equal(clone(np.zeros(2)), np.cos(np.zeros(2)) + 1)


def test_compiled_method_pickles_with_its_instance(user_module: object):
    model = user_module.Model(3.0)  # type: ignore[attr-defined]
    model.forward(np.ones(2))
    clone = pickle.loads(pickle.dumps(model.forward))
    np.testing.assert_array_equal(clone(np.ones(2)), [3.0, 3.0])
    unbound = pickle.loads(pickle.dumps(type(model).forward))
    assert unbound is type(model).forward


@pytest.mark.parametrize("called_first", [False, True])
def test_local_function_pickles_by_value(called_first: bool):
    offset = np.float64(0.5)

    def local(x):
        return np.tanh(x) + offset

    compiled = compile_function(local, backend="eager")
    x = np.linspace(-1, 1, 7)
    if called_first:
        compiled(x)
    data = pickle.dumps(compiled)
    assert b"compiled_from_value" in data
    assert b"numpile_graph" not in data
    clone = pickle.loads(data)
    assert isinstance(clone, CompiledFunction)
    np.testing.assert_array_equal(clone(x), np.tanh(x) + 0.5)
    # The same payload unpickled twice in one process is one compiled function.
    assert pickle.loads(data) is clone
    # cloudpickle goes through the same reduction.
    np.testing.assert_array_equal(cloudpickle.loads(cloudpickle.dumps(compiled))(x), clone(x))


def test_value_pickle_keeps_the_user_file_name():
    def local(x):
        return x + 1

    clone = pickle.loads(pickle.dumps(compile_function(local, backend="eager")))
    assert clone._numpile_original.__code__.co_filename == __file__


def test_reference_to_a_missing_name_says_what_is_wrong():
    with pytest.raises(pickle.UnpicklingError, match="no longer exists"):
        compiled_from_reference("json", "no_such_function", {})


def test_by_value_payload_of_a_builtin_is_returned_as_is():
    assert compiled_from_value(cloudpickle.dumps((abs, {}, ""))) is abs


MAIN_SCRIPT = textwrap.dedent(
    """
    import pickle, sys
    import numpy as np
    from numpile_capture import compile_function

    @compile_function(backend="eager")
    def f(x):
        return np.sqrt(x) + 1

    if sys.argv[1] == "after":
        f(np.ones(3))
    sys.stdout.buffer.write(pickle.dumps(f))
    """
)
RECEIVER = (
    "import pickle, sys, numpy as np; f = pickle.load(sys.stdin.buffer); print(f(np.full(3, 4.0)))"
)


@pytest.mark.parametrize("when", ["before", "after"])
def test_function_defined_in_main_unpickles_in_another_process(tmp_path: Path, when: str):
    script = tmp_path / "script.py"
    script.write_text(MAIN_SCRIPT)
    sent = subprocess.run(
        [sys.executable, str(script), when], capture_output=True, check=True, timeout=120
    ).stdout
    received = subprocess.run(
        [sys.executable, "-c", RECEIVER], input=sent, capture_output=True, check=True, timeout=120
    )
    assert received.stdout.decode().strip() == "[3. 3. 3.]"


def test_functions_of_a_script_run_by_runpy_pickle_by_value(tmp_path: Path):
    # runpy.run_path puts a temporary "<run_path>" module in sys.modules: not importable.
    script = tmp_path / "script_for_runpy.py"
    script.write_text(
        "import pickle\n"
        "from numpile_capture import compile_function\n"
        "@compile_function(backend='eager')\n"
        "def f(x):\n"
        "    return x + 1\n"
        "data = pickle.dumps(f)\n"
    )
    import runpy

    data = runpy.run_path(str(script))["data"]
    assert b"compiled_from_value" in data
    assert pickle.loads(data)(1) == 2
