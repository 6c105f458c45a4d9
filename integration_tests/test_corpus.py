"""The differential corpus: every program, eager against compiled, per backend."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from harness import (
    CUPY_DIFFERS,
    GPU_KNOWN,
    Program,
    corpus_backends,
    corpus_device,
    load_corpus,
    run_program,
)

PROGRAMS = load_corpus()
# A program registered with slow=True carries the `slow` marker (-m "not slow" leaves it out).
PARAMS = [pytest.param(p, id=p.id, marks=[pytest.mark.slow] if p.slow else []) for p in PROGRAMS]


@pytest.mark.parametrize("backend", corpus_backends())
@pytest.mark.parametrize("prog", PARAMS)
def test_corpus_program(
    prog: Program, backend: str, compile_fn: Callable[..., Callable[..., Any]]
) -> None:
    if corpus_device() == "cupy" and prog.id in CUPY_DIFFERS:
        pytest.skip(f"on CuPy arrays: {CUPY_DIFFERS[prog.id]}")
    tiered_before = _tiered_calls()
    problems = run_program(prog, compile_fn, backend)
    # Every compiled call ran the kernels, not NumPy (or the function) while they built:
    # otherwise the comparison would be eager against eager (conftest sets NUMPILE_TIERED=0).
    assert _tiered_calls() == tiered_before, "a call ran on the tiered path"
    if prog.id in GPU_KNOWN and _on_gpu(backend):
        if not problems:
            pytest.fail(f"{prog.id} matches NumPy on the GPU now: remove it from GPU_KNOWN")
        pytest.xfail(f"on a GPU: {GPU_KNOWN[prog.id]}")
    if problems:
        pytest.fail(f"{prog.id} [{backend}] differs from NumPy:\n  " + "\n  ".join(problems))


def _on_gpu(backend: str) -> bool:
    # Whether this run's compiled calls launch Triton kernels on a real GPU.
    import numpile_runtime as rt

    gpu_backend = backend == "triton" or corpus_device() == "cupy"
    return gpu_backend and rt.triton_status().mode == "gpu"


def _tiered_calls() -> int:
    # Calls the inductor ran op by op with NumPy, or handed back to the function, while
    # their graph's build ran in the background.
    import numpile_runtime as rt

    counts = rt.counters()
    return counts.get("inductor_tiered_numpy_call", 0) + counts.get("inductor_tiered_eager_call", 0)
