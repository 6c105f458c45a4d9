"""The graph cache: a second compile of the same graph skips lowering, in-process and in a
fresh process; corrupt entries are rebuilt; options and graphs get their own entries."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import numpile_inductor
import numpile_runtime as rt
from numpile_capture import Graph, TreeSpec, get_op, meta_of
from numpile_inductor import compile_graph
from numpile_inductor import graph_cache as gc
from numpile_inductor.artifact_format import ArtifactFormatError, decode_artifact, encode_artifact


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


def test_a_compile_lowers_while_the_compiler_is_probed_and_asks_the_cache_after(
    fresh_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # While the build queue probes the compiler (`known_toolchain()` answers None), the
    # cache key (which names the toolchain) waits: the graph is lowered first, then the
    # toolchain is asked for; the entry is stored under the same key as ever, so a compile
    # once the toolchain is known is a hit.
    from numpile_inductor import backend

    order: list[str] = []
    lower, toolchain = backend.lower_and_schedule, backend._toolchain
    monkeypatch.setattr(backend, "lower_and_schedule", lambda g: order.append("lower") or lower(g))
    monkeypatch.setattr(backend, "_toolchain", lambda: order.append("toolchain") or toolchain())
    monkeypatch.setattr(rt, "known_toolchain", lambda: None)
    graph, inputs = _chain(29)
    first = compile_graph(graph)
    assert order[:2] == ["lower", "toolchain"], order
    a, b = inputs
    np.testing.assert_allclose(first.fn(*inputs)[0], np.sin(a) * b + 2.0, rtol=1e-15)
    monkeypatch.undo()
    second = compile_graph(graph)
    assert not first.cache_hit and second.cache_hit and second.source == first.source


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


def test_unreadable_entry_reads_as_a_miss(fresh_cache: Path) -> None:
    rt.default_cache().put_bytes("graph-" + "ab" * 32, b"not an artifact")
    assert gc.load_artifact("ab" * 32) is None


class _Planted:
    # What a writer of the cache folder could plant: a pickle that runs code when loaded.
    def __reduce__(self) -> tuple[object, ...]:
        return (exec, ("import numpile_inductor; numpile_inductor.PLANTED_RAN = True",))


@pytest.mark.parametrize(
    "payload",
    [
        pickle.dumps(_Planted()),
        b'{"format": 1, "value": {"$": "attrs", "class": "Popen", "v": {"args": "id"}}}',
        b'{"format": 1, "value": {"$": "type", "v": "builtins.exec"}}',
    ],
    ids=["pickle", "foreign-class", "foreign-type"],
)
def test_planted_entry_runs_no_code(fresh_cache: Path, payload: bytes) -> None:
    graph, inputs = _chain(19)
    expected = compile_graph(graph).fn(*inputs)
    blobs = list((fresh_cache / "blobs").rglob("graph-*.bin"))
    assert len(blobs) == 1
    key = blobs[0].name.removeprefix("graph-").removesuffix(".bin")
    rt.default_cache().put_bytes(f"graph-{key}", payload)
    assert gc.load_artifact(key) is None
    again = compile_graph(graph)
    assert not again.cache_hit
    assert not hasattr(numpile_inductor, "PLANTED_RAN")
    np.testing.assert_array_equal(again.fn(*inputs)[0], expected[0])


def test_artifact_values_round_trip_exactly() -> None:
    values = (
        None,
        True,
        -3,
        float("nan"),
        -0.0,
        1e-310,
        2j,
        b"\x00",
        "s",
        [1, (2, slice(None, -1, 2), Ellipsis)],
        {"k": (1,), 3: None},
        np.dtype(">f4"),
        np.float32(1.5),
        np.arange(6, dtype=np.int16).reshape(2, 3),
        float,
        np.int64,
        TreeSpec("tuple", (TreeSpec("leaf"),)),
    )
    back = decode_artifact(encode_artifact(values, classes=[TreeSpec]), classes=[TreeSpec])
    assert repr(back[:3]) == repr(values[:3])
    assert np.signbit(back[4]) and back[5] == 1e-310 and back[6] == 2j
    assert back[7:13] == values[7:13]
    assert type(back[12]) is np.float32
    np.testing.assert_array_equal(back[13], values[13])
    assert back[13].dtype == np.int16
    assert back[14:] == values[14:]


def test_artifact_format_refuses_code() -> None:
    with pytest.raises(ArtifactFormatError):
        encode_artifact(print, classes=())
    with pytest.raises(ArtifactFormatError):
        encode_artifact(np.array([None], dtype=object), classes=())
    with pytest.raises(ArtifactFormatError):
        decode_artifact(encode_artifact(TreeSpec("leaf"), classes=[TreeSpec]), classes=())


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


_LOOP_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import numpile_inductor
    import numpile_runtime as rt
    from numpile_capture import capture_function, has_loops

    def scalar_body(x, n):
        s = 0.0
        for i in range(n):
            s += x[i] * x[i]
        return s

    def array_body(a, steps):
        a = a.copy()
        for _ in range(steps):
            a[1:-1] = 0.5 * (a[:-2] + a[2:])
        return a

    def branchy(x):
        out = np.zeros_like(x)
        for i in range(x.shape[0]):
            if x[i] > 0.5:
                out[i] = x[i] * 2.0
            else:
                out[i] = -x[i]
        return out

    x = np.linspace(0.0, 1.0, 40)
    results = []
    for fn, args in ((scalar_body, (x, 25)), (array_body, (x, 7)), (branchy, (x,))):
        graph = capture_function(fn, args, {}).graph
        assert has_loops(graph), fn.__name__
        inputs = [a for a in args if isinstance(a, np.ndarray)]  # ints are baked in
        # Each module as two C files compiled at once, linked (the graph cache holds the text).
        options = {"cpp.translation_units": 2}
        out = numpile_inductor.compile_graph(graph, options=options).fn(*inputs)
        results.append(np.asarray(out).tolist())
    print(json.dumps({"results": results, "counters": rt.counters()}))
    """
)


def test_loop_graphs_are_cache_hits_in_a_second_process(fresh_cache: Path) -> None:
    # Loop bodies are subgraphs: the artifact names them by node and parameter, so a second
    # process with the same cache folder builds nothing.
    import json

    env = {**os.environ, "NUMPILE_CACHE_DIR": str(fresh_cache), "NUMPILE_TIERED": "0"}
    runs = []
    for _ in ("cold", "warm"):
        done = subprocess.run(
            [sys.executable, "-c", _LOOP_SCRIPT], env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    cold, warm = runs
    assert cold["counters"].get("compiler_invocation", 0) > 0
    assert list(fresh_cache.rglob("*.1.c"))  # a module's second translation unit
    assert warm["counters"].get("compiler_invocation", 0) == 0
    assert warm["counters"].get("inductor_graph_cache_miss", 0) == 0
    assert warm["counters"]["inductor_graph_cache_hit"] >= 3
    assert warm["results"] == cold["results"]
    x = np.linspace(0.0, 1.0, 40)
    np.testing.assert_allclose(warm["results"][0], float((x[:25] ** 2).sum()))
    np.testing.assert_allclose(warm["results"][2], np.where(x > 0.5, 2.0 * x, -x))


def test_artifact_names_loop_bodies_by_node_and_parameter() -> None:
    body = Graph()
    body.output = ()
    graph = Graph()
    graph.placeholder("a", meta_of(np.zeros(3)))
    spec = gc.ExternSpec("for_loop", (1,), (("body", body),))
    # A body the graph does not hold stays a graph: that artifact cannot be stored.
    assert spec.stored(graph).kwargs == (("body", body),)
    with pytest.raises(ArtifactFormatError):
        encode_artifact(spec.stored(graph), classes=[gc.ExternSpec])
    ref = gc.ExternSpec("for_loop", (1,), (("body", gc.SubgraphRef(0, "body")),))
    data = encode_artifact(ref, classes=[gc.ExternSpec, gc.SubgraphRef])
    assert decode_artifact(data, classes=[gc.ExternSpec, gc.SubgraphRef]) == ref
    with pytest.raises(ArtifactFormatError):
        ref.resolved(graph)  # node 0 is a placeholder: no body there


def test_index_templates_are_stored_without_their_symbolic_value() -> None:
    import sympy

    from numpile_capture import ScalarSlot

    i = sympy.Symbol("i0", integer=True)
    index = (ScalarSlot(0, i), slice(ScalarSlot(1, i + 1), None, None))
    spec = gc.ExternSpec("getitem_at", (), (("index", index),)).stored(Graph())
    classes = [gc.ExternSpec, ScalarSlot]
    back = decode_artifact(encode_artifact(spec, classes=classes), classes=classes)
    ((_, stored),) = back.kwargs
    assert stored == (ScalarSlot(0), slice(ScalarSlot(1), None, None))
    assert stored[0].expr is None
