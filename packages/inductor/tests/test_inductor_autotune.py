"""max_autotune: measures thread counts and thresholds once, caches the choice on disk."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from numpile_capture import Graph, get_op, meta_of
from numpile_inductor import compile_graph
from numpile_inductor.codegen.c import autotune as autotune_module


def _graph(n: int) -> tuple[Graph, list[np.ndarray]]:
    a, b = np.linspace(0, 1, n), np.linspace(1, 2, n)
    g = Graph()
    pa, pb = g.placeholder("a", meta_of(a)), g.placeholder("b", meta_of(b))
    g.output = g.call(get_op("add"), g.call(get_op("multiply"), pa, pb), pa)
    return g, [a, b]


def test_thread_candidates_start_at_one_and_grow() -> None:
    counts = autotune_module.thread_candidates()
    assert counts[0] == 1
    assert counts == sorted(set(counts))


def test_max_autotune_chooses_once_and_caches_the_choice(
    fresh_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph, inputs = _graph(4096)
    measured: list[int] = []
    real = autotune_module._measure

    def counting(fn, args):  # type: ignore[no-untyped-def]
        measured.append(1)
        return real(fn, args)

    monkeypatch.setattr(autotune_module, "_measure", counting)
    first = compile_graph(graph, mode="max-autotune", example_inputs=inputs)
    assert first.autotuned is not None
    assert len(measured) == 2 * len(autotune_module.thread_candidates())
    assert first.autotuned.threads in autotune_module.thread_candidates()
    assert f"g_threads = {first.autotuned.threads};" in first.source
    np.testing.assert_array_equal(first.fn(*inputs), inputs[0] * inputs[1] + inputs[0])
    # another compile (graph cache off) reuses the stored choice without measuring
    again = compile_graph(
        graph, mode="max-autotune", options={"graph_cache": False}, example_inputs=inputs
    )
    assert len(measured) == 2 * len(autotune_module.thread_candidates())
    assert again.autotuned == first.autotuned
    # and with the graph cache on, a warm compile loads the tuned module itself
    warm = compile_graph(graph, mode="max-autotune", example_inputs=inputs)
    assert warm.cache_hit and warm.source == first.source


def test_max_autotune_without_example_inputs_keeps_defaults(fresh_cache: Path) -> None:
    graph, inputs = _graph(64)
    compiled = compile_graph(graph, mode="max-autotune")
    assert compiled.autotuned is None
    np.testing.assert_array_equal(compiled.fn(*inputs), inputs[0] * inputs[1] + inputs[0])
