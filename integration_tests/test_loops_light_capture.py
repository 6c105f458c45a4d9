"""A light capture (sizes and loop indices without sympy: a process that has not loaded it)
gives every loop program of the corpus the graph the sympy capture gives, printed alike:
the printed graph is the kernel cache key, so a warm start's light capture finds the entry
a cold build stored.

Only the first captures of a process can be light (a capture that needs sympy loads it),
so the light pass runs the programs in fresh interpreters, each going on until sympy is
loaded; the sympy pass runs them all in one interpreter that loaded sympy first.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from harness import load_corpus

_RUNNER = textwrap.dedent(
    """
    import json, sys
    sys.path.insert(0, {tests!r})
    if {sympy_first!r}:
        import sympy
    import numpile
    from harness import load_corpus

    programs = {{p.id: p for p in load_corpus()}}
    graphs = []

    def record(graph, example_inputs):
        graphs.append(str(graph))
        return lambda *args: None

    record.takes_light_sizes = True  # the graph as captured, light or not
    found = {{}}
    for name in json.loads(sys.argv[1]):
        program = programs[name]
        light = "sympy" not in sys.modules
        graphs.clear()
        compiled = numpile.compile(program.fn, backend=record, fullgraph=program.fullgraph)
        try:
            compiled(*program.inputs(program.sizes[0]).args)
        except Exception:
            pass  # the recording backend computes nothing: the graphs are what is compared
        light = light and "sympy" not in sys.modules
        found[name] = {{"light": light, "graphs": list(graphs)}}
        if not light and not {sympy_first!r}:
            break  # sympy is loaded: the captures after this one would not be light
    print(json.dumps(found))
    """
)


def _run(names: list[str], *, sympy_first: bool) -> dict[str, Any]:
    tests = str(Path(__file__).parent)
    script = _RUNNER.format(tests=tests, sympy_first=sympy_first)
    done = subprocess.run(
        [sys.executable, "-c", script, json.dumps(names)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def test_light_captures_print_the_graphs_of_sympy_captures() -> None:
    # Every second program: the whole theme takes a minute of fresh interpreters.
    names = [p.id for p in load_corpus() if p.theme == "loops" and not p.expect_error][::2]
    light: dict[str, Any] = {}
    pending = list(names)
    while pending:
        found = _run(pending, sympy_first=False)
        assert found, "a fresh interpreter captured nothing"
        light.update(found)
        pending = [name for name in pending if name not in light]
    reference = _run(names, sympy_first=True)
    kept_light = [name for name in names if light[name]["light"]]
    differ = [name for name in kept_light if light[name]["graphs"] != reference[name]["graphs"]]
    assert differ == [], f"light and sympy captures print different graphs: {differ}"
    # The light path must carry most of the corpus (the nine index-reading workloads' kind).
    assert len(kept_light) >= 0.75 * len(names), f"{len(kept_light)} of {len(names)} light"
