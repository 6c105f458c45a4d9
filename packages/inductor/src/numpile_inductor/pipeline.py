"""The stages every backend shares: functionalization, lowering and scheduling, device choice.

A graph goes through one pipeline whatever its code generator:

1. `functionalized`: a graph with in-place updates becomes a pure graph plus a
   write-back epilogue (kernels then fuse across the updates);
2. `lower_and_schedule`: decompositions, lowering to loop IR, fusion (`scheduler`);
3. code generation by the backend of the graph's device (`graph_device`,
   `device_backend`): C for "cpu" (`numpile_inductor.backend`), Triton for "cuda"
   (`codegen/triton/backend.py`).

A new device adds one folder under `codegen/` and one entry in `DEVICE_BACKENDS`.
OpenMP's environment defaults are set by `numpile_runtime` when it is imported (the one
place numpile sets `OMP_*` variables), before any kernel module loads libgomp.

    >>> DEVICE_BACKENDS["cuda"]
    'numpile_inductor.codegen.triton:triton_backend'
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from numpile_capture import Graph

from .graph_cache import Epilogue

if TYPE_CHECKING:
    from .scheduler import Schedule

log = logging.getLogger("numpile.inductor")

# NOTE: the code generator of each device other than "cpu" (whose C backend is the
# `inductor` entry point itself), as "module:function"; imported on first use so that a
# CPU-only process never loads Triton's code generator.
DEVICE_BACKENDS: dict[str, str] = {
    "cuda": "numpile_inductor.codegen.triton:triton_backend",
}


def graph_device(graph: Graph) -> str:
    """The device whose backend compiles `graph`: "cuda" when an input lives there.

    >>> graph_device(Graph())
    'cpu'
    """
    if any(getattr(node.meta, "device", "cpu") == "cuda" for node in graph.placeholders):
        return "cuda"
    return "cpu"


def device_backend(device: str) -> Callable[..., Any]:
    """The backend function (`(graph, example_inputs, *, mode, options) -> callable`) of
    `device`, from `DEVICE_BACKENDS`.

    >>> device_backend("cuda").__name__
    'triton_backend'
    """
    module_name, _, attr = DEVICE_BACKENDS[device].partition(":")
    backend: Callable[..., Any] = getattr(importlib.import_module(module_name), attr)
    return backend


def functionalized(graph: Graph) -> tuple[Graph, Epilogue | None, str]:
    """The pure graph, its write-back epilogue and its text when `graph` mutates its inputs.

    A graph without in-place updates, or one functionalization refuses (its mutation ops
    then stay barriers), comes back as it is, with no epilogue.

    >>> functionalized(Graph())[1] is None
    True
    """
    if not any(node.op is not None and node.op.mutates for node in graph.nodes):
        return graph, None, ""
    # Late import: only graphs with in-place updates need functionalization.
    from numpile_autograd_aot import functionalize

    try:
        fg = functionalize(graph)
    except NotImplementedError as error:
        log.debug("not functionalized (%s): mutation ops stay barriers", error)
        return graph, None, ""
    epilogue = Epilogue(
        fg.output_spec,
        fg.num_outputs,
        fg.mutated_inputs,
        tuple((a.output, a.input, tuple(a.views)) for a in fg.output_aliases),
    )
    return fg.graph, epilogue, str(fg)


def lower_and_schedule(
    graph: Graph, *, scratch_rows: bool = True, data_indices: bool = True
) -> Schedule:
    """Lower `graph` to loop IR and fuse its kernels (see `scheduler.schedule`).

    `data_indices`: gathers and scatter-accumulates lower to kernels (a backend whose
    kernels read indices from data); False keeps them extern calls.

    >>> lower_and_schedule(graph).kernels  # doctest: +SKIP
    """
    # Late imports: lowering pulls in sympy (~0.3 s); a graph cache hit needs none.
    from .lowering import lower_graph
    from .scheduler import schedule

    return schedule(lower_graph(graph, data_indices=data_indices), scratch_rows=scratch_rows)
