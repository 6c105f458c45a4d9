"""The bound on loaded kernel libraries holds for graphs still in use.

With the bound set below the number of compiled graphs a process calls in rotation, the
least recently loaded graph's library is unloaded while its function lives; the function's
next call loads it again (from the code cache) with its set-up replayed (extern callables,
buffer pool, floating-point report) and runs. Every result equals eager, and the libraries
mapped in the process (counted in /proc/self/maps) stay within the bound.
"""

from __future__ import annotations

import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import numpile
import numpile_runtime as rt

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="unloading and /proc/self/maps are Linux's"
)

BOUND = 3
# Libraries that may be mapped besides the bound's: the buffer pool's module, which its
# allocator keeps for the life of the process, the call gate's (the compiled functions' hit
# path in C, loaded once per process), and one a thread is still inside.
SLACK = 3
# The process-wide modules among them: the buffer pool's and the call gate's.
PROCESS_MODULES = 2

_BODIES = (
    "return x * {c} + x * x",  # one kernel, the output as is
    "return x.sum() * {c}, x - {c}",  # a reduction and a tuple: the output rebuilt
    "x += {c}\n    return x * 2.0",  # an input written in place: the epilogue
    "return np.sort(x) * {c}",  # NumPy called from the module: its extern callables
    "return np.where(x > 0.5, x, {c}) ** 2",
)


def _program(k: int) -> Callable[..., Any]:
    # A code object of its own per k (entries are per code object).
    namespace: dict[str, Any] = {"np": np}
    body = _BODIES[k % len(_BODIES)].format(c=float(k + 1))
    exec(f"def program_{k}(x):\n    {body}\n", namespace)
    fn: Callable[..., Any] = namespace[f"program_{k}"]
    return fn


def _mapped_libraries() -> int:
    root = str(rt.default_cache().root)
    with open("/proc/self/maps", encoding="utf-8") as maps:
        return len({line.split()[-1] for line in maps if root in line and ".so" in line})


def _check(fn: Callable[..., Any], compiled: Callable[..., Any], x: np.ndarray) -> None:
    # Values, dtypes, shapes and the write into the input, against eager.
    x_eager, x_compiled = x.copy(), x.copy()
    expected = fn(x_eager)
    got = compiled(x_compiled)
    assert type(got) is type(expected)
    pairs = zip(expected, got, strict=True) if isinstance(expected, tuple) else [(expected, got)]
    for want, have in pairs:
        np.testing.assert_allclose(have, want, rtol=1e-13, atol=0)
        assert np.asarray(have).dtype == np.asarray(want).dtype
        assert np.shape(have) == np.shape(want)
    np.testing.assert_array_equal(x_compiled, x_eager)


@pytest.fixture
def small_bound() -> Iterator[int]:
    numpile.reset()
    previous = rt.set_max_loaded_modules(BOUND)
    try:
        yield BOUND
    finally:
        rt.set_max_loaded_modules(previous)
        numpile.reset()


def test_more_graphs_than_the_bound_in_rotation_stay_within_it(small_bound: int) -> None:
    programs = [_program(k) for k in range(10)]
    compiled = [numpile.compile(fn, options={"tiered": False}) for fn in programs]
    x = np.linspace(0.0, 1.0, 4097)
    reloads = rt.counters().get("inductor_module_reload", 0)
    most = 0
    for _ in range(3):
        for fn, fast in zip(programs, compiled, strict=True):
            _check(fn, fast, x)
            most = max(most, _mapped_libraries())
    assert most <= small_bound + SLACK
    # The first round loaded each graph once; the next two loaded every one again.
    assert rt.counters().get("inductor_module_reload", 0) - reloads >= 2 * len(programs)


def test_a_graph_loaded_again_warns_as_numpy_does(small_bound: int) -> None:
    # The floating-point report is set up again on the first call after a reload: the
    # division by zero warns on that very call, from the user's line.
    def divide(x: np.ndarray) -> np.ndarray:
        return 1.0 / x

    compiled = numpile.compile(divide, options={"tiered": False})
    others = [numpile.compile(_program(k), options={"tiered": False}) for k in range(small_bound)]
    x = np.linspace(0.0, 1.0, 64)
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        compiled(x)
    for other in others:  # `divide` is now the least recently loaded: unloaded
        other(np.ones(8))
    reloads = rt.counters().get("inductor_module_reload", 0)
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        got = compiled(x)
    assert rt.counters().get("inductor_module_reload", 0) == reloads + 1
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal(got, 1.0 / x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(compiled(x + 1.0), 1.0 / (x + 1.0))


def test_four_threads_call_rotating_graphs_past_the_bound(small_bound: int) -> None:
    programs = [_program(k) for k in range(16)]
    compiled = [numpile.compile(fn, options={"tiered": False}) for fn in programs]
    failures: list[str] = []
    most = [0]

    def worker(seed: int) -> None:
        rng = np.random.default_rng(seed)
        try:
            for step in range(2 * len(programs)):
                k = (seed + step) % len(programs)
                x = rng.random(int(rng.integers(1, 3000)))
                _check(programs[k], compiled[k], x)
                most[0] = max(most[0], _mapped_libraries())
        except BaseException as error:  # reported by the test, not lost in the thread
            failures.append(f"thread {seed}: {error!r}")

    threads = [threading.Thread(target=worker, args=(seed,), daemon=True) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not any(thread.is_alive() for thread in threads), "a thread is stuck"
    assert failures == []
    # While threads run, libraries past the bound are those a thread is inside (evicted
    # under it), modules loaded but not yet trimmed, and modules that died after their call
    # and wait for the next eviction's collection: a few per thread, never all 16 graphs.
    assert most[0] <= small_bound + PROCESS_MODULES + 3 * len(threads)
    # Once quiet, the next load's eviction collects them: the bound and the process's modules.
    _check(_program(99), numpile.compile(_program(99), options={"tiered": False}), np.ones(5))
    assert _mapped_libraries() <= small_bound + PROCESS_MODULES
