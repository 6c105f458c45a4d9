"""A light capture (sizes and loop indices without sympy: a process that has not loaded it)
gives every loop program of the corpus the graph the sympy capture gives, printed alike:
the printed graph is the kernel cache key, so a warm start's light capture finds the entry
a cold build stored.

Only the first captures of a process can be light (a capture that needs sympy loads it),
so the light pass captures each program in a child forked from one interpreter that has
imported numpile and the corpus but not sympy (a capture that loads sympy loads it in its
child alone); the sympy pass runs them all in one interpreter that loaded sympy first.
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
    import json, os, sys, traceback
    sys.path.insert(0, {tests!r})
    if {sympy_first!r}:
        import sympy
    import numpile
    from harness import load_corpus

    programs = {{p.id: p for p in load_corpus()}}

    def capture(name):
        program = programs[name]
        graphs = []

        def record(graph, example_inputs):
            graphs.append(str(graph))
            return lambda *args: None

        record.takes_light_sizes = True  # the graph as captured, light or not
        light = "sympy" not in sys.modules
        compiled = numpile.compile(program.fn, backend=record, fullgraph=program.fullgraph)
        try:
            compiled(*program.inputs(program.sizes[0]).args)
        except Exception:
            pass  # the recording backend computes nothing: the graphs are what is compared
        return {{"light": light and "sympy" not in sys.modules, "graphs": graphs}}

    class SympyWanted(BaseException):
        # A BaseException: no `except Exception` of the capture or the program catches it.
        pass

    class StopAtSympy:
        # The light capture of this program gave up: it is not light, and the rest of its
        # capture (importing sympy, capturing again with it) is the reference pass' work.
        def find_spec(self, name, path=None, target=None):
            if name == "sympy":
                raise SympyWanted
            return None

    def capture_in_a_child(name):
        # The child starts from this process' modules, without sympy, whatever the
        # captures before it loaded in theirs: a fresh interpreter costs seconds, a fork
        # milliseconds.
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.close(read)
                sys.meta_path.insert(0, StopAtSympy())
                try:
                    result = capture(name)
                except SympyWanted:
                    result = {{"light": False, "graphs": []}}
                with os.fdopen(write, "w") as out:
                    json.dump(result, out)
                code = 0
            except BaseException:
                traceback.print_exc()
            finally:
                os._exit(code)
        os.close(write)
        with os.fdopen(read) as source:
            text = source.read()
        _, status = os.waitpid(pid, 0)
        if status != 0:
            raise SystemExit(f"the capture of {{name}} failed in its child (status {{status}})")
        return json.loads(text)

    found = {{}}
    for name in json.loads(sys.argv[1]):
        found[name] = capture(name) if {sympy_first!r} else capture_in_a_child(name)
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
    # Every second program: the whole theme takes twice as long.
    names = [p.id for p in load_corpus() if p.theme == "loops" and not p.expect_error][::2]
    light = _run(names, sympy_first=False)
    reference = _run(names, sympy_first=True)
    assert sorted(light) == sorted(reference) == sorted(names)
    kept_light = [name for name in names if light[name]["light"]]
    differ = [name for name in kept_light if light[name]["graphs"] != reference[name]["graphs"]]
    assert differ == [], f"light and sympy captures print different graphs: {differ}"
    # The light path must carry most of the corpus (the nine index-reading workloads' kind).
    assert len(kept_light) >= 0.75 * len(names), f"{len(kept_light)} of {len(names)} light"
