"""The autograd layer's configuration: one attrs object, `config`, read when a transform is made.

`grad`, `value_and_grad` and `vjp` given no `compiler` compile their forward
and backward graphs with `config.compiler`; given no `partitioner`, they cut
the joint graph with `config.partitioner`. Set fields directly, or scope a
change with `config.patch(...)`:

    >>> from numpile_autograd_aot import config
    >>> config.compiler
    'eager'
    >>> with config.patch(compiler="aot_eager"):
    ...     config.compiler
    'aot_eager'

The `numpile` façade sets `compiler = "inductor"`, so the full stack compiles
both halves of a training step to C; this layer alone knows only the
backends of the layers below it, and finds the inductor by name in capture's
backend registry (`lookup_backend`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import attrs

from numpile_capture import Graph, lookup_backend, run_graph

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
class AutogradConfig:
    """Defaults of the transforms `grad`, `value_and_grad` and `vjp`.

    compiler: what compiles the forward and the backward graph when a
        transform is given no `compiler`: a backend name of capture's registry
        (`"eager"` runs the graphs with `run_graph`; `"inductor"` compiles them
        to C when numpile_inductor is installed; `"aot_eager"`; a user's) or a
        callable `(graph, example_inputs) -> callable`.
    partitioner: how the joint graph is cut when a transform is given no
        `partitioner`: `"min_cut"` (recompute cheap ops in the backward),
        `"default"` (save what the backward reads) or a callable
        `joint -> Partition`.

        >>> AutogradConfig().partitioner
        'min_cut'
    """

    compiler: str | Compiler = "eager"
    partitioner: str | Partitioner = "min_cut"

    @contextlib.contextmanager
    def patch(self, **changes: Any) -> Iterator[AutogradConfig]:
        """Set fields for the duration of a `with` block, then restore them."""
        unknown = [name for name in changes if not hasattr(self, name)]
        if unknown:
            raise AttributeError(f"AutogradConfig has no field(s) {', '.join(unknown)}")
        saved = {name: getattr(self, name) for name in changes}
        for name, value in changes.items():
            setattr(self, name, value)
        try:
            yield self
        finally:
            for name, value in saved.items():
                setattr(self, name, value)


# NOTE: the one live configuration object of the autograd layer (a module global by design).
config = AutogradConfig()


def resolve_compiler(compiler: str | Compiler | None) -> Compiler:
    """The compiler callable for a name, a callable, or None (`config.compiler`).

    `"eager"` is `run_graph_compiler`; any other name is looked up in capture's
    backend registry, so `"inductor"` finds numpile_inductor through its entry point.

        >>> resolve_compiler("eager") is run_graph_compiler
        True
    """
    chosen = config.compiler if compiler is None else compiler
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
