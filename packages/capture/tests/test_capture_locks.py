"""Compile locks: one per code object, no user code under them, forks and signal handlers.

Every scenario that could hang runs in a child process with a timeout: a test that failed by
hanging would otherwise leave a lock held in the test process.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
import types
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from numpile_capture import (
    CaptureFallbackWarning,
    CompiledFunction,
    Graph,
    Unsupported,
    compile_function,
    eager,
)
from numpile_guards import cache_for
from numpile_runtime import compiling_in_this_thread

TIMEOUT_S = 120
POSIX_ONLY = pytest.mark.skipif(sys.platform == "win32", reason="fork and SIGUSR1 are POSIX's")


pytestmark = pytest.mark.usefixtures("fresh_dispatch")


def _run_script(source: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(source)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_concurrent_first_calls_make_one_entry() -> None:
    compiles: list[int] = []

    def slow_backend(graph: Graph, example_inputs: Sequence[Any]) -> Any:
        compiles.append(1)
        time.sleep(0.2)  # the window in which the other threads miss too
        return eager(graph, example_inputs)

    def f(x: Any) -> Any:
        return np.sin(x) + 1

    compiled = compile_function(f, backend=slow_backend)
    x = np.arange(6.0)
    barrier = threading.Barrier(8)
    results: list[Any] = []

    def call() -> None:
        barrier.wait()
        results.append(compiled(x))

    threads = [threading.Thread(target=call) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT_S)
    assert len(results) == 8
    for result in results:
        np.testing.assert_array_equal(result, np.sin(x) + 1)
    assert len(compiles) == 1
    assert len(cache_for(f.__code__).entries) == 1


def test_different_functions_compile_at_the_same_time() -> None:
    # Two compiles of different code objects overlap: neither waits on the other's lock.
    inside = threading.Barrier(2, timeout=30)

    def meeting_backend(graph: Graph, example_inputs: Sequence[Any]) -> Any:
        inside.wait()  # raises BrokenBarrierError if the other compile never gets in
        return eager(graph, example_inputs)

    def f(x: Any) -> Any:
        return x + 1

    def g(x: Any) -> Any:
        return x * 2

    cf = compile_function(f, backend=meeting_backend)
    cg = compile_function(g, backend=meeting_backend)
    x = np.arange(3.0)
    out: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: out.setdefault("f", cf(x)))
    thread.start()
    out["g"] = cg(x)
    thread.join(TIMEOUT_S)
    np.testing.assert_array_equal(out["f"], x + 1)
    np.testing.assert_array_equal(out["g"], x * 2)


def test_a_breaking_first_call_can_wait_on_a_thread_that_compiles() -> None:
    # The first call of `f` runs its Python part (a thread that compiles `g`, then a join)
    # with no numpile lock held; before, the process-wide compile lock made it hang.
    out = _run_script(
        """
        import threading
        import numpy as np
        from numpile_capture import compile_function, disable

        @compile_function(backend="eager")
        def g(x):
            return x * 2

        @disable
        def wait_for_other_thread(x):
            box = []
            thread = threading.Thread(target=lambda: box.append(g(x)))
            thread.start()
            thread.join()
            return box[0]

        @compile_function(backend="eager")
        def f(x):
            y = x + 1
            z = wait_for_other_thread(y)
            return z - 1

        print(f(np.arange(3.0)).tolist())
        """
    )
    assert out.strip() == "[1.0, 3.0, 5.0]"


@POSIX_ONLY
def test_a_fork_while_another_thread_compiles_leaves_the_child_free() -> None:
    out = _run_script(
        """
        import os, threading, time, warnings
        import numpy as np
        from numpile_capture import compile_function, eager

        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads running
        parent = os.getpid()
        entered = threading.Event()
        release = threading.Event()

        def blocking_backend(graph, example_inputs):
            if os.getpid() == parent:
                entered.set()
                release.wait()
            return eager(graph, example_inputs)

        @compile_function(backend=blocking_backend)
        def f(x):
            return x + 1

        x = np.arange(3.0)
        thread = threading.Thread(target=f, args=(x,))
        thread.start()
        entered.wait()
        pid = os.fork()
        if pid == 0:
            # The child: the same function (its lock was held in the parent) and a new one.
            ok = f(x).tolist() == [1.0, 2.0, 3.0]
            h = compile_function(lambda y: y * 3, backend="eager")
            ok = ok and h(x).tolist() == [0.0, 3.0, 6.0]
            os._exit(0 if ok else 1)
        deadline = time.monotonic() + 60
        status = None
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.05)
        else:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        release.set()
        thread.join()
        print("child", "hung" if status is None else os.waitstatus_to_exitcode(status))
        """
    )
    assert out.strip() == "child 0"


@POSIX_ONLY
def test_a_signal_handler_calls_a_compiled_function_during_the_toolchain_probe() -> None:
    # The handler interrupts the probe (its lock held by the same thread): the handler's call
    # runs eagerly instead of compiling into the probe's lock.
    out = _run_script(
        """
        import signal
        import numpy as np
        import numpile_runtime
        from numpile_runtime import toolchain
        from numpile_capture import compile_function, eager

        def probing_backend(graph, example_inputs):
            numpile_runtime.find_toolchain()
            return eager(graph, example_inputs)

        @compile_function(backend=probing_backend)
        def in_handler(x):
            return x * 10

        seen = []
        signal.signal(signal.SIGUSR1, lambda *_: seen.append(in_handler(np.ones(2)).tolist()))
        discover = toolchain._discover

        def interrupted_discover(*args):
            signal.raise_signal(signal.SIGUSR1)  # the handler runs right here
            return discover(*args)

        toolchain._discover = interrupted_discover

        @compile_function(backend=probing_backend)
        def f(x):
            return x + 1

        print(f(np.zeros(2)).tolist(), seen)
        """
    )
    assert out.strip() == "[1.0, 1.0] [[10.0, 10.0]]"


@POSIX_ONLY
def test_a_signal_handler_calls_a_compiled_function_during_the_sympy_import() -> None:
    out = _run_script(
        """
        import signal, sys
        import numpy as np
        from numpile_capture import compile_function, eager

        def sympy_backend(graph, example_inputs):
            import sympy  # the lazy import the inductor makes on its first compile

            return eager(graph, example_inputs)

        @compile_function(backend=sympy_backend)
        def in_handler(x):
            return x * 10

        seen = []
        signal.signal(signal.SIGUSR1, lambda *_: seen.append(in_handler(np.ones(2)).tolist()))

        class Interrupt:
            # A finder that raises the signal while the sympy import holds its module lock.
            def find_spec(self, name, path=None, target=None):
                if name == "sympy":
                    sys.meta_path.remove(self)
                    signal.raise_signal(signal.SIGUSR1)
                return None

        assert "sympy" not in sys.modules
        sys.meta_path.insert(0, Interrupt())

        @compile_function(backend=sympy_backend)
        def f(x):
            return x + 1

        print(f(np.zeros(2)).tolist(), seen)
        """
    )
    assert out.strip() == "[1.0, 1.0] [[10.0, 10.0]]"


def test_warnings_are_issued_after_the_compile_lock_is_released() -> None:
    # A showwarning hook (or a filter that raises) is user code: it runs outside the lock.
    def unsupported(fn: types.FunctionType, args: Any, kwargs: Any) -> Any:
        raise Unsupported("not supported yet: today")

    compiled = CompiledFunction(lambda x: x + 1, capture_fn=unsupported)
    seen: list[tuple[type[Warning], bool]] = []

    def hook(message: Any, category: type[Warning], *rest: Any, **options: Any) -> None:
        seen.append((category, compiling_in_this_thread()))

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = hook
        assert compiled(1) == 2
    assert seen == [(CaptureFallbackWarning, False)]


def test_a_user_backend_can_wait_on_a_thread_that_calls_the_same_function() -> None:
    # The backend runs while its thread holds f's compile lock; the other thread's call of f
    # does not wait for that lock (its holder runs user code): it runs eagerly.
    out = _run_script(
        """
        import threading
        import numpy as np
        from numpile_capture import compile_function, eager

        box = []

        def waiting_backend(graph, example_inputs):
            thread = threading.Thread(target=lambda: box.append(f(np.arange(2.0))))
            thread.start()
            thread.join()
            return eager(graph, example_inputs)

        @compile_function(backend=waiting_backend)
        def f(x):
            return x * 3

        print(f(np.arange(3.0)).tolist(), box[0].tolist())
        """
    )
    assert out.strip() == "[0.0, 3.0, 6.0] [0.0, 3.0]"


def test_a_user_hash_during_capture_can_wait_on_a_thread_that_calls_the_same_function() -> None:
    # Capture guards a dict keyed by a user object and calls its __hash__ under f's compile
    # lock; a thread that __hash__ waits on calls f too.
    out = _run_script(
        """
        import threading
        import numpy as np
        from numpile_capture import compile_function

        box = []

        class Key:
            armed = False

            def __hash__(self):
                if Key.armed:
                    Key.armed = False
                    thread = threading.Thread(
                        target=lambda: box.append(f(np.arange(2.0), table))
                    )
                    thread.start()
                    thread.join()
                return 7

            def __eq__(self, other):
                return self is other

        key = Key()
        table = {key: 2.0}

        @compile_function(backend="eager")
        def f(x, t):
            return x * t[key]

        Key.armed = True
        print(f(np.arange(3.0), table).tolist(), box[0].tolist())
        """
    )
    assert out.strip() == "[0.0, 2.0, 4.0] [0.0, 2.0]"


def test_user_hashes_in_guards_can_wait_on_threads_that_call_the_same_function() -> None:
    # Every `__hash__` of the key in the main thread (capture, the guards' compile and their
    # checks) waits on a thread that calls f. The guards of a first call used to run under
    # f's compile lock, unmarked: the other thread waited for that lock, forever.
    out = _run_script(
        """
        import threading
        import numpy as np
        from numpile_capture import compile_function

        main = threading.main_thread()
        box = []

        class Key:
            def __hash__(self):
                if threading.current_thread() is main:
                    value = float(len(box) + 10)
                    thread = threading.Thread(
                        target=lambda: box.append(f(np.arange(2.0), {key: value})[1])
                    )
                    thread.start()
                    thread.join()
                return 7

            def __eq__(self, other):
                return self is other

        key = Key()

        @compile_function(backend="eager")
        def f(x, t):
            return x * t[key]

        first = f(np.arange(3.0), {key: 2.0}).tolist()
        again = f(np.arange(3.0), {key: 3.0}).tolist()
        print(first, again, box == [10.0 + i for i in range(len(box))], len(box) > 2)
        """
    )
    assert out.strip() == "[0.0, 2.0, 4.0] [0.0, 3.0, 6.0] True True"


def test_a_caller_waits_for_a_numpile_backend_and_runs_its_entry() -> None:
    # One compile serves the callers that miss while numpile's own backend runs: they wait
    # for its entry instead of running eagerly or compiling again.
    inside = threading.Event()
    compiles: list[int] = []
    runs: list[int] = []

    def slow_backend(graph: Graph, example_inputs: Sequence[Any]) -> Any:
        compiles.append(1)
        inside.set()
        time.sleep(0.3)
        run = eager(graph, example_inputs)

        def counted(*inputs: Any) -> Any:
            runs.append(1)
            return run(*inputs)

        return counted

    # Stands in for a backend of numpile's own (the dispatcher trusts their module names).
    slow_backend.__module__ = "numpile_capture.test_stand_in"

    def f(x: Any) -> Any:
        return np.sin(x) + 1

    compiled = compile_function(f, backend=slow_backend)
    x = np.arange(6.0)
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(compiled(x)))
    thread.start()
    assert inside.wait(TIMEOUT_S)
    out.append(compiled(x))
    thread.join(TIMEOUT_S)
    assert len(out) == 2
    for result in out:
        np.testing.assert_array_equal(result, np.sin(x) + 1)
    assert (len(compiles), len(runs)) == (1, 2)
