"""The autograd layer's configuration: one attrs object, `config`, read when a transform is made.

`grad`, `value_and_grad` and `vjp` given no `compiler` compile their forward
and backward graphs with `config.compiler`; given no `partitioner`, they cut
the joint graph with `config.partitioner`. Set fields directly, or scope a
change with `config.patch(...)`:

    >>> from numpile_autograd_aot import config
    >>> config.compiler is None
    True
    >>> with config.patch(compiler="aot_eager"):
    ...     config.compiler
    'aot_eager'

`compiler` None (the default) is the best backend installed, found in capture's
backend registry (`preferred_backend()`): with numpile_inductor installed (its
entry point), both halves of a training step compile to C; this layer alone
runs them with `run_graph`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs

from numpile_capture import Graph, lookup_backend, preferred_backend, run_graph
from numpile_runtime import LayerConfig

from .partition import Partition, default_partition, min_cut_partition

__all__ = [
    "AutogradConfig",
    "Compiler",
    "Partitioner",
    "config",
    "resolve_compiler",
    "resolve_partitioner",
    "run_graph_compiler",
]

Compiler = Callable[[Graph, Sequence[Any]], Callable[..., Any]]
Partitioner = Callable[..., Partition]

# NOTE: partitioner names accepted by `config.partitioner` and the transforms' `partitioner=`.
PARTITIONERS: dict[str, Partitioner] = {
    "min_cut": min_cut_partition,
    "default": default_partition,
}


def run_graph_compiler(graph: Graph, example_inputs: Sequence[Any]) -> Callable[..., Any]:
    """The `"eager"` compiler: run the graph op by op with NumPy (`run_graph`).

    >>> run_graph_compiler(graph, [x])(x)  # doctest: +SKIP
    """
    del example_inputs  # nothing to specialize: run_graph reads the values it is given

    def run(*inputs: Any) -> Any:
        return run_graph(graph, inputs)

    return run


@attrs.define
class AutogradConfig(LayerConfig):
    """Defaults of the transforms `grad`, `value_and_grad` and `vjp`.

    compiler: what compiles the forward and the backward graph when a
        transform is given no `compiler`: a backend name of capture's registry
        (`"eager"` runs the graphs with `run_graph`; `"inductor"` compiles them
        to C when numpile_inductor is installed; `"aot_eager"`; a user's), a
        callable `(graph, example_inputs) -> callable`, or None (the default):
        the best backend installed (`preferred_backend()`).
    partitioner: how the joint graph is cut when a transform is given no
        `partitioner`: `"min_cut"` (recompute cheap ops in the backward),
        `"default"` (save what the backward reads) or a callable
        `joint -> Partition`.

    keep_loops: reverse mode keeps the `for` loops it can differentiate as loops (their
        VJP is a reverse loop, `vjp_loop`; compile time does not grow with the trip
        count); False unrolls every loop it differentiates (up to capture's limit of
        1000 iterations), as before loops had a VJP. Read when a function is traced.

        >>> AutogradConfig().partitioner, AutogradConfig().keep_loops
        ('min_cut', True)
    """

    compiler: str | Compiler | None = None
    partitioner: str | Partitioner = "min_cut"
    keep_loops: bool = True


# NOTE: the one live configuration object of the autograd layer (a module global by design).
config = AutogradConfig()


def resolve_compiler(compiler: str | Compiler | None) -> Compiler:
    """The compiler callable for a name, a callable, or None (`config.compiler`, and
    when that is None too, the best backend installed: `preferred_backend()`).

    `"eager"` is `run_graph_compiler`; any other name is looked up in capture's
    backend registry, so `"inductor"` finds numpile_inductor through its entry point.

        >>> resolve_compiler("eager") is run_graph_compiler
        True
    """
    chosen = config.compiler if compiler is None else compiler
    if chosen is None:
        chosen = preferred_backend()
    if chosen == "eager":
        return run_graph_compiler
    if isinstance(chosen, str):
        found: Compiler = lookup_backend(chosen)
        return found
    if not callable(chosen):
        raise TypeError(
            f"compiler must be a backend name or a callable (graph, example_inputs) -> "
            f"callable, got {type(chosen).__name__}"
        )
    return chosen


def resolve_partitioner(partitioner: str | Partitioner | None) -> Partitioner:
    """The partitioner callable for a name, a callable, or None (`config.partitioner`).

    >>> resolve_partitioner("default") is default_partition
    True
    """
    chosen = config.partitioner if partitioner is None else partitioner
    if isinstance(chosen, str):
        if chosen not in PARTITIONERS:
            known = ", ".join(PARTITIONERS)
            raise ValueError(f"unknown partitioner {chosen!r}; known partitioners: {known}")
        return PARTITIONERS[chosen]
    if not callable(chosen):
        raise TypeError(f"partitioner must be a name or a callable, got {type(chosen).__name__}")
    return chosen
