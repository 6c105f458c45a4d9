"""A light lowering (sizes and loop indices as ints and `AffineSize`, no sympy: a cold
compile in a process that has not loaded it) generates the C the sympy lowering generates,
byte for byte, for the graphs of every loop workload of `benchmarks.loops` and a sample of
the loop corpus.

Graphs are captured light (inside `numpile_guards.light_sizes()`, as a process without
sympy captures them) by a recording backend; each is then generated both ways with
`numpile_inductor.generated_source` (no C build). A light lowering that needs sympy falls
back to the sympy one, which is counted: the workloads must not need it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from harness import load_corpus

import numpile
import numpile_runtime as rt
from benchmarks.loops import LOOP_WORKLOADS
from numpile_guards import NeedsSympy, light_sizes
from numpile_inductor import generated_source

# Every tenth program of the theme: the whole of it (all 207 programs, 1 to 3 graphs each)
# agreed when this test was written, and took a minute.
_CORPUS_STEP = 10


def _light_graphs(fn: Callable[..., Any], args: tuple[Any, ...], *, fullgraph: bool) -> list[Any]:
    # The graphs a light capture of `fn(*args)` gives; none where capture needs sympy.
    graphs: list[Any] = []

    def record(graph: Any, example_inputs: Any) -> Callable[..., Any]:
        graphs.append(graph)
        return lambda *arguments: None

    record.takes_light_sizes = True  # type: ignore[attr-defined]
    try:
        with light_sizes():
            numpile.compile(fn, backend=record, fullgraph=fullgraph)(*args)
    except NeedsSympy:
        return []
    except Exception:
        pass  # the recording backend computes nothing: the graphs are what is compared
    return graphs


def _differences(graphs: list[Any]) -> tuple[list[int], int]:
    # The positions of the graphs whose C differs between the two ways, and how many light
    # lowerings fell back to sympy.
    before = rt.counters().get("inductor_light_lowering_fallback", 0)
    light = [generated_source(graph) for graph in graphs]
    fallbacks = rt.counters().get("inductor_light_lowering_fallback", 0) - before
    reference = [generated_source(graph, light=False) for graph in graphs]
    differ = [i for i, (a, b) in enumerate(zip(light, reference, strict=True)) if a != b]
    return differ, fallbacks


@pytest.mark.parametrize("workload", LOOP_WORKLOADS, ids=lambda w: w.name)
def test_each_loop_workload_lowers_light_to_the_c_of_the_sympy_lowering(workload: Any) -> None:
    graphs = _light_graphs(workload.fn, workload.inputs(workload.quick_trips), fullgraph=False)
    assert graphs, f"{workload.name}: its capture needed sympy"
    differ, fallbacks = _differences(graphs)
    assert differ == []
    assert fallbacks == 0, f"{workload.name}: the light lowering needed sympy"


def test_loop_corpus_programs_lower_light_to_the_c_of_the_sympy_lowering() -> None:
    programs = [p for p in load_corpus() if p.theme == "loops" and not p.expect_error]
    graphs: dict[str, list[Any]] = {}
    for program in programs[::_CORPUS_STEP]:
        inputs = program.inputs(program.sizes[0])
        found = _light_graphs(program.fn, tuple(inputs.args), fullgraph=program.fullgraph)
        if found:
            graphs[program.id] = found
    differ = {}
    fallbacks = 0
    for name, found in graphs.items():
        positions, fell_back = _differences(found)
        fallbacks += fell_back
        if positions:
            differ[name] = positions
    assert differ == {}, f"light and sympy lowerings generate different C: {differ}"
    total = sum(len(found) for found in graphs.values())
    assert total >= 10 and fallbacks <= total // 4, f"{fallbacks} of {total} fell back"
