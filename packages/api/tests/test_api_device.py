"""`numpile.compile(..., device="cuda")`: NumPy inputs run as Triton kernels on the GPU.

Without a GPU the Triton compiler is replaced by one that records the graph and runs it
with `run_graph`: these tests pin the routing and the errors, not the kernels (those are
`numpile_inductor`'s Triton tests, under `TRITON_INTERPRET=1` or on a GPU).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import numpile
import numpile_inductor.codegen.triton.backend as triton_backend
from numpile_capture import BackendCompileError, run_graph
from numpile_runtime import triton_status


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    numpile.reset()
    yield
    numpile.reset()


def test_device_cuda_compiles_with_the_triton_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    graphs: list[Any] = []

    def recording_compile_triton(graph: Any, **kwargs: Any) -> Any:
        graphs.append(graph)
        return triton_backend.TritonCompiled(None, lambda *args: run_graph(graph, args))

    monkeypatch.setattr(triton_backend, "compile_triton", recording_compile_triton)
    compiled = numpile.compile(lambda a: a * 2.0 + 1.0, device="cuda")
    x = np.arange(4.0)

    np.testing.assert_array_equal(compiled(x), x * 2.0 + 1.0)
    assert len(graphs) == 1
    on_cpu = numpile.compile(lambda a: a * 2.0 + 1.0)
    np.testing.assert_array_equal(on_cpu(x), x * 2.0 + 1.0)
    assert len(graphs) == 1  # the default device stays on the C++ inductor


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"device": "gpu"}, "unknown device 'gpu'; valid devices: None, 'cuda'"),
        ({"device": "cuda", "backend": "eager"}, "needs backend 'inductor' or 'triton'"),
    ],
)
def test_device_errors_at_the_compile_call(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        numpile.compile(lambda a: a + 1, **kwargs)


def test_device_cuda_without_triton_names_what_is_missing() -> None:
    status = triton_status()
    if status.mode != "unavailable":
        pytest.skip(f"Triton can run here ({status.mode})")
    compiled = numpile.compile(lambda a: a * 2.0, device="cuda")
    with pytest.raises(BackendCompileError, match="the Triton backend cannot run here"):
        compiled(np.ones(3))
