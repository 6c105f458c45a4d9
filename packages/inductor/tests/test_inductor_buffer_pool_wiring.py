"""Compiled graphs allocate large results from the buffer pool; the user still owns them."""

from __future__ import annotations

import gc
from typing import Any

import numpy as np
import pytest

from numpile_capture import Graph, get_op, meta_of, run_graph
from numpile_inductor import buffer_pool_bytes, compile_graph, trim_buffer_pool
from numpile_inductor.codegen.c.buffer_pool import (
    MIN_EXTERN_POOLED_BYTES,
    MIN_POOLED_BYTES,
    pool_handler,
)

_N = MIN_POOLED_BYTES // 8 * 2  # float64 elements: twice the pooling threshold


@pytest.fixture(autouse=True, scope="module")
def _pool_loaded() -> None:
    # The pool builds in the background and reaches modules when it loads (the test of a
    # cold process below): these tests check modules loaded once it is there.
    assert pool_handler() is not None


def _handler_name(array: np.ndarray) -> str:
    from numpy._core.multiarray import get_handler_name  # NumPy 2's home of the NEP 49 query

    return str(get_handler_name(array))


def _address(array: np.ndarray) -> int:
    return int(array.__array_interface__["data"][0])


def _chain(n: int) -> tuple[Graph, np.ndarray]:
    # x * x * 2 + x: one fused kernel, one output of x's shape
    x = np.linspace(0.0, 1.0, n)
    graph = Graph()
    a = graph.placeholder("x", meta_of(x))
    t = graph.call(get_op("multiply"), graph.call(get_op("multiply"), a, a), 2.0)
    graph.output = graph.call(get_op("add"), t, a)
    return graph, x


def _compiled(n: int) -> tuple[Any, np.ndarray, Graph]:
    graph, x = _chain(n)
    return compile_graph(graph).fn, x, graph


def test_large_result_comes_from_the_pool_and_is_an_ordinary_owned_array() -> None:
    fn, x, graph = _compiled(_N)
    out = fn(x)
    np.testing.assert_array_equal(out, run_graph(graph, [x]))
    assert _handler_name(out) == "numpile_pool"
    assert out.base is None and out.flags.owndata and out.flags.writeable
    out[0] = 42.0  # the user may write into it
    assert out[0] == 42.0


def test_outputs_alive_together_never_share_memory() -> None:
    fn, x, graph = _compiled(_N)
    outs = [fn(x) for _ in range(4)]
    for i, first in enumerate(outs):
        for second in outs[i + 1 :]:
            assert not np.shares_memory(first, second)
    outs[0][:] = -1.0  # writing one result leaves the others intact
    expected = run_graph(graph, [x])
    for other in outs[1:]:
        np.testing.assert_array_equal(other, expected)


def test_a_dead_result_block_serves_the_next_call() -> None:
    fn, x, graph = _compiled(_N)
    trim_buffer_pool()
    first = fn(x)
    address = _address(first)
    del first
    gc.collect()
    assert buffer_pool_bytes() >= _N * 8
    second = fn(x)
    assert _address(second) == address
    np.testing.assert_array_equal(second, run_graph(graph, [x]))


def test_a_view_keeps_the_block_alive() -> None:
    fn, x, _ = _compiled(_N)
    trim_buffer_pool()
    view = fn(x)[10:20]
    kept = view.copy()
    gc.collect()
    other = fn(x)  # the first result's memory is still in use through `view`
    assert not np.shares_memory(view, other)
    other[:] = 0.0
    np.testing.assert_array_equal(view, kept)


def test_trim_releases_every_cached_block() -> None:
    fn, x, _ = _compiled(_N)
    fn(x)
    gc.collect()
    assert buffer_pool_bytes() > 0
    assert trim_buffer_pool() > 0
    assert buffer_pool_bytes() == 0
    assert trim_buffer_pool() == 0


def test_small_results_use_numpys_allocator() -> None:
    fn, x, graph = _compiled(1000)
    out = fn(x)
    assert _handler_name(out) == "default_allocator"
    np.testing.assert_array_equal(out, run_graph(graph, [x]))


def _sorted(n: int) -> tuple[Any, np.ndarray]:
    # an extern call (np.sort) whose result is the graph's output
    x = np.linspace(1.0, 0.0, n)
    graph = Graph()
    graph.output = graph.call(get_op("sort"), graph.placeholder("x", meta_of(x)))
    return compile_graph(graph).fn, x


def test_an_extern_gets_the_pool_only_around_large_arrays() -> None:
    # Setting the handler costs more than a small extern's work; temporaries and results
    # of an extern on arrays of MIN_EXTERN_POOLED_BYTES still come from the pool.
    for n, handler in ((10, "default_allocator"), (MIN_EXTERN_POOLED_BYTES // 8, "numpile_pool")):
        fn, x = _sorted(n)
        out = fn(x)
        np.testing.assert_array_equal(out, np.sort(x))
        assert _handler_name(out) == handler, n


_COLD_PROCESS = """
import numpy as np
import numpile_runtime as rt
from numpile_capture import Graph, get_op, meta_of
from numpile_inductor import compile_graph, wait_for_background_builds
from numpile_inductor.codegen.c.buffer_pool import start_pool_build

x = np.linspace(0.0, 1.0, {n})
graph = Graph()
a = graph.placeholder("x", meta_of(x))
graph.output = graph.call(get_op("add"), graph.call(get_op("multiply"), a, a), a)
start_pool_build()
start_pool_build()
compiled = compile_graph(graph)
first = compiled.fn(x)
np.testing.assert_array_equal(first, x * x + x)
wait_for_background_builds()  # the pool, built once, reaches the module loaded before it
from numpy._core.multiarray import get_handler_name
out = compiled.fn(x)
assert get_handler_name(out) == "numpile_pool", get_handler_name(out)
np.testing.assert_array_equal(out, x * x + x)
np.testing.assert_array_equal(first, x * x + x)  # an output made before is untouched
assert rt.counters()["cache_miss"] == 2, rt.counters()  # the pool and the graph, once each
"""


def test_a_cold_process_builds_the_pool_once_beside_the_graph(tmp_path: Any) -> None:
    # The pool module builds on the build queue as idle work, never waited for: a graph
    # module loaded before it gets its handler when it loads, and no build runs twice.
    import os
    import subprocess
    import sys

    env = {**os.environ, "NUMPILE_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-c", _COLD_PROCESS.format(n=_N)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_a_synchronous_compile_queues_the_prelude_and_the_pool_before_capture(
    monkeypatch: Any,
) -> None:
    # The dispatcher calls the backend's `prepare` before capture: a synchronous compile
    # queues the precompiled prelude (and so the compiler probe) and the pool's build then;
    # a tiered one builds in the background, and queues the compiler probe alone.
    import numpile_runtime as rt
    from numpile_inductor import backend

    started: list[str] = []
    monkeypatch.setattr(backend, "start_pool_build", lambda: started.append("pool"))
    monkeypatch.setattr(rt, "prepare_header", lambda job: started.append(job.header[:40]))
    monkeypatch.setattr(rt, "prepare_toolchain", lambda: started.append("probe"))
    assert backend.inductor.prepare is backend.prepare  # type: ignore[attr-defined]
    backend.prepare(options={"tiered": True})
    assert started == ["probe"]
    started.clear()
    backend.prepare(options={"tiered": False})
    backend.prepare(mode="max-autotune")
    from numpile_inductor.codegen.c.prelude import module_prelude

    prelude = module_prelude()[:40]
    assert started == [prelude, "pool", prelude, "pool"]
