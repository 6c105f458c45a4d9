"""A synchronous compile's first call in a fresh process and cache folder: the fixed costs
queued before capture (`backend.prepare`: the compiler probe, the precompiled prelude, the
buffer pool), the first module built with the precompiled prelude, and a second call that
runs no compiler: the call gate builds on the build queue while calls take the Python path.

Each test runs in a child process: what they check happens once per process and cache
folder (the gate's load, the toolchain's probe, the prelude's precompile).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

_PROLOGUE = """
import threading
import numpy as np
import numpile_runtime as rt
from numpile_runtime import builder
from numpile_capture import compile_function
from numpile_inductor import backend, wait_for_background_builds

# Every compiler process, with the thread that ran it.
compilers = []
real_run_compiler = builder.run_compiler


def recording(command, timeout):
    compilers.append((threading.current_thread().name, command))
    return real_run_compiler(command, timeout)


builder.run_compiler = recording


def f(x, y):
    return np.sin(x) * 2.0 + y


x = np.linspace(0.0, 1.0, 1000)
y = np.linspace(1.0, 2.0, 1000)
want = np.sin(x) * 2.0 + y
compiled = compile_function(f, backend="inductor", options={"tiered": False})
"""

_FIRST_MODULE_WITH_THE_PRELUDE = """
# The queue finished before capture (a long capture, as the loop workloads' is): the
# first module of the fresh cache folder compiles with the precompiled prelude.
backend.prepare(options={"tiered": False})
assert rt.wait_for_queued_builds(timeout=300)
assert rt.counters().get("pch_build") == 1, rt.counters()
np.testing.assert_allclose(compiled(x, y), want, rtol=1e-12)
counts = rt.counters()
assert counts.get("pch_use") == 1, counts
assert counts.get("pch_build") == 1, counts
assert "pch_fallback" not in counts, counts
included = [c for _, c in compilers if "-include" in c]
assert included and all(c[c.index("-include") + 1].endswith(".h") for c in included)
headers = {c[c.index("-include") + 1] for c in included}
assert len(headers) == 1 and os.path.exists(headers.pop() + ".gch"), included
"""

_SECOND_CALL_RUNS_NO_COMPILER = """
np.testing.assert_allclose(compiled(x, y), want, rtol=1e-12)
first_call = len(compilers)
np.testing.assert_allclose(compiled(x, y), want, rtol=1e-12)  # the gate is queued, not built here
on_the_call = [name for name, _ in compilers[first_call:] if name == "MainThread"]
assert on_the_call == [], compilers[first_call:]
assert compiled._gate is None
wait_for_background_builds()
assert rt.gate_module(wait=False) is not None
# Every compile after the first call ran on the build queue: the gate's, and the buffer
# pool's where that idle build had not ended with the first call.
after = compilers[first_call:]
assert {name for name, _ in after} == {"numpile-build-queue"}, after


def builds_the_gate(command):
    source = next(part for part in command if part.endswith(".c"))
    with open(source) as file:
        return "PyInit_numpile_call_gate" in file.read()


assert [name for name, c in after if builds_the_gate(c)] == ["numpile-build-queue"], after
for _ in range(3):
    np.testing.assert_allclose(compiled(x, y), want, rtol=1e-12)
assert compiled._gate is not None  # later calls go through the gate
"""


_TIERED_PROBE_BESIDE_CAPTURE = """
import numpy as np
import numpile_runtime as rt
from numpile_capture import compile_function
from numpile_inductor import wait_for_background_builds


def loop(x):
    total = 0.0
    for i in range(x.shape[0]):
        total = total + x[i] * 2.0
    return total


x = np.linspace(0.0, 1.0, 1000)
rt.record_stage_spans()
tiered = compile_function(loop, backend="inductor", options={"tiered": True})
assert tiered(x) == loop(x)  # runs the function's Python while its module builds
wait_for_background_builds()
assert tiered(x) == loop(x)
# The probe ran on the build queue, queued when the function was compiled: not on the
# background build's thread after lowering and code generation.
probes = [(span.stage, span.thread) for span in rt.stage_spans() if "probe" in span.stage]
assert probes == [("toolchain_probe", "numpile-build-queue")], rt.stage_spans()
"""


def _run(tmp_path: Path, script: str, *, tiered: bool = False) -> None:
    # `tiered`: the script alone, in the default (tiered) mode; else after `_PROLOGUE`.
    env = {**os.environ, "NUMPILE_CACHE_DIR": str(tmp_path / "cache"), "NUMPILE_TIERED": "0"}
    if tiered:
        env.pop("NUMPILE_TIERED")
    done = subprocess.run(
        [sys.executable, "-c", "import os\n" + (script if tiered else _PROLOGUE + script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]


def test_the_first_module_of_a_fresh_cache_folder_uses_the_prepared_prelude(
    tmp_path: Path,
) -> None:
    _run(tmp_path, _FIRST_MODULE_WITH_THE_PRELUDE)


def test_the_second_call_runs_no_compiler_and_the_gate_arrives_later(tmp_path: Path) -> None:
    _run(tmp_path, _SECOND_CALL_RUNS_NO_COMPILER)


def test_a_tiered_compile_probes_the_compiler_beside_capture(tmp_path: Path) -> None:
    _run(tmp_path, _TIERED_PROBE_BESIDE_CAPTURE, tiered=True)


def test_a_compile_runs_with_the_collector_paused_and_collects_while_the_compiler_works(
    fresh_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Lowering, code generation and the C build run with the cyclic collector paused; the
    # young pass the pause held off runs once the compiler has started (the builder's
    # `collect_held_off`), not at the first allocation after the pause; and the collector
    # is back afterwards.
    import gc
    import threading

    import numpy as np

    from numpile_capture import compile_function
    from numpile_inductor import backend
    from numpile_inductor.codegen.c import wrapper
    from numpile_runtime import builder

    seen: dict[str, bool] = {}
    young: list[tuple[int, int]] = []
    real_lower = backend.lower_and_schedule
    real_generate = wrapper.generate_module
    real_build = backend._build_many
    real_collect = builder.collect_held_off

    def lower(*args: Any, **kwargs: Any) -> Any:
        seen["lowering"] = gc.isenabled()
        return real_lower(*args, **kwargs)

    def generate(*args: Any, **kwargs: Any) -> Any:
        seen["codegen"] = gc.isenabled()
        return real_generate(*args, **kwargs)

    def build(*args: Any, **kwargs: Any) -> Any:
        seen["build"] = gc.isenabled()
        return real_build(*args, **kwargs)

    def collect() -> None:  # the build queue's compilers (probe, prelude, pool) aside
        before = gc.get_count()[0]
        real_collect()
        if threading.current_thread() is threading.main_thread():
            young.append((before, gc.get_count()[0]))

    monkeypatch.setattr(backend, "lower_and_schedule", lower)
    monkeypatch.setattr(wrapper, "generate_module", generate)
    monkeypatch.setattr(backend, "_build_many", build)
    monkeypatch.setattr(builder, "collect_held_off", collect)

    def f(x: Any) -> Any:
        return np.cos(x) * 3.0 - x

    x = np.linspace(0.0, 1.0, 64)
    options = {"tiered": False, "graph_cache": False}
    compiled = compile_function(f, backend="inductor", options=options)
    assert gc.isenabled()
    np.testing.assert_allclose(compiled(x), f(x), rtol=1e-12)
    assert seen == {"lowering": False, "codegen": False, "build": False}
    assert young, "the module's compiler ran without the held-off pass"
    before, after = young[0]
    assert after < before, "the held-off pass did not run while the compiler worked"
    assert gc.isenabled()


def test_a_tiered_compile_converts_its_sizes_with_the_collector_paused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The default (tiered) first call converts a light graph's sizes, sympy's import, on the
    # calling thread before the NumPy tier runs: with the collector paused there too.
    import gc

    import numpy as np

    from numpile_capture import compile_function
    from numpile_inductor import backend, wait_for_background_builds

    seen: list[bool] = []
    real_sympy_sizes = backend.sympy_sizes

    def sympy_sizes(graph: Any) -> Any:
        seen.append(gc.isenabled())
        return real_sympy_sizes(graph)

    monkeypatch.setattr(backend, "sympy_sizes", sympy_sizes)

    def f(x: Any) -> Any:
        return np.tan(x) * 0.5 + x

    x = np.linspace(0.0, 1.0, 48)
    compiled = compile_function(
        f, backend="inductor", options={"tiered": True, "graph_cache": False}
    )
    np.testing.assert_allclose(compiled(x), f(x), rtol=1e-12)
    wait_for_background_builds()
    np.testing.assert_allclose(compiled(x), f(x), rtol=1e-12)
    assert seen and not any(seen), seen
    assert gc.isenabled()
