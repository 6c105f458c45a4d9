"""The graph cache: a second compile of the same graph skips lowering, in-process and in a
fresh process; corrupt entries are rebuilt; options and graphs get their own entries."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import numpile_runtime as rt
from numpile_capture import Graph, get_op, meta_of
from numpile_inductor import compile_graph
from numpile_inductor import graph_cache as gc


@pytest.fixture
def fresh_cache(tmp_path: Path) -> Iterator[Path]:
    previous = rt.default_cache().root
    root = tmp_path / "cache"
    rt.set_cache_dir(root)
    yield root
    rt.set_cache_dir(previous)


def _chain(n: int, scale: float = 2.0) -> tuple[Graph, list[np.ndarray]]:
    a, b = np.linspace(0, 1, n), np.linspace(1, 2, n)
    g = Graph()
    pa, pb = g.placeholder("a", meta_of(a)), g.placeholder("b", meta_of(b))
    v = g.call(get_op("multiply"), g.call(get_op("sin"), pa), pb)
    g.output = (g.call(get_op("add"), v, scale), 7)
    return g, [a, b]


def test_second_compile_is_a_cache_hit_and_skips_lowering(fresh_cache: Path) -> None:
    graph, inputs = _chain(33)
    first = compile_graph(graph)
    second = compile_graph(graph)
    assert not first.cache_hit and first.schedule is not None
    assert second.cache_hit and second.schedule is None
    assert second.kernel_count == first.kernel_count == 1
    assert second.source == first.source
    for got, want in zip(second.fn(*inputs), first.fn(*inputs), strict=True):
        np.testing.assert_array_equal(got, want)
    assert second.fn(*inputs)[1] == 7


def test_options_and_graphs_get_their_own_entries(fresh_cache: Path) -> None:
    graph, _ = _chain(33)
    compile_graph(graph)
    assert not compile_graph(graph, options={"cpp.parallel_threshold": 1}).cache_hit
    other, _ = _chain(33, scale=3.0)
    assert not compile_graph(other).cache_hit
    assert not compile_graph(graph, options={"graph_cache": False}).cache_hit


def test_corrupt_entry_is_ignored_and_rebuilt(fresh_cache: Path) -> None:
    graph, inputs = _chain(17)
    expected = compile_graph(graph).fn(*inputs)
    blobs = list((fresh_cache / "blobs").rglob("*.bin"))
    assert blobs
    for blob in blobs:
        blob.write_bytes(blob.read_bytes()[:-5])
    again = compile_graph(graph)
    assert not again.cache_hit
    np.testing.assert_array_equal(again.fn(*inputs)[0], expected[0])
    assert compile_graph(graph).cache_hit


def test_unpicklable_entry_reads_as_a_miss(fresh_cache: Path) -> None:
    rt.default_cache().put_bytes("graph-" + "ab" * 32, b"not a pickle")
    assert gc.load_artifact("ab" * 32) is None


def test_fresh_process_runs_from_the_cache_without_lowering(fresh_cache: Path) -> None:
    script = textwrap.dedent(
        """
        import sys, time
        import numpy as np
        from numpile_capture import Graph, get_op, meta_of
        import numpile_inductor
        from numpile_inductor import lowering
        a = np.linspace(0, 1, 64)
        g = Graph()
        p = g.placeholder("a", meta_of(a))
        g.output = g.call(get_op("add"), g.call(get_op("exp"), p), 1.0)
        if sys.argv[1] == "warm":
            def refuse(*args, **kwargs):
                raise AssertionError("lowered on a warm start")
            lowering.lower_graph = refuse
        start = time.perf_counter()
        out = numpile_inductor.inductor(g, [a])(a)
        print(time.perf_counter() - start, float(out.sum()))
        """
    )
    env = {**os.environ, "NUMPILE_CACHE_DIR": str(fresh_cache)}
    runs = []
    for mode in ("cold", "warm"):
        done = subprocess.run(
            [sys.executable, "-c", script, mode], env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        runs.append(done.stdout.split())
    assert runs[0][1] == runs[1][1]
    np.testing.assert_allclose(float(runs[1][1]), float((np.exp(np.linspace(0, 1, 64)) + 1).sum()))
