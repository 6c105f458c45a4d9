"""The `inductor` backend: graph in, compiled callable out.

Pipeline: lower the graph to loop IR (decompositions and views included),
fuse kernels, generate one C extension module (kernels + wrapper), build it
through numpile_runtime, and return its `call`.

    >>> fn = inductor(graph, [a, b])  # doctest: +SKIP
    >>> fn(a, b)  # same as run_graph(graph, [a, b])  # doctest: +SKIP
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from numpile_capture import Graph, run_graph

from . import decompositions as _decompositions  # noqa: F401  (registers lowerings)
from . import reductions as _reductions  # noqa: F401  (registers lowerings)
from .config import InductorConfig
from .lowering import lower_graph
from .scheduler import Schedule, schedule
from .wrapper import GeneratedModule, generate_module, output_rebuilder

log = logging.getLogger("numpile.inductor")
output_code_log = logging.getLogger("numpile.inductor.output_code")

_FLAGS = ("-std=gnu11", "-fwrapv", "-fno-math-errno", "-Wno-unused-variable")


@attrs.frozen
class CompiledGraph:
    """What the inductor made of a graph: the schedule, the module source and the callable.

    >>> compiled = compile_graph(graph)  # doctest: +SKIP
    >>> len(compiled.schedule.kernels)  # doctest: +SKIP
    1
    """

    schedule: Schedule
    generated: GeneratedModule
    fn: Callable[..., Any] = attrs.field(repr=False)

    @property
    def source(self) -> str:
        return self.generated.source

    @property
    def kernel_count(self) -> int:
        return len(self.schedule.kernels)

    @property
    def extern_ops(self) -> list[str]:
        return [step.op_name for step in self.schedule.steps if not hasattr(step, "kernels")]


def compile_graph(graph: Graph, *, options: Mapping[str, Any] | None = None) -> CompiledGraph:
    """Lower, fuse, generate and build `graph`; the full result for inspection.

    >>> compile_graph(graph).kernel_count  # doctest: +SKIP
    """
    import numpile_runtime as rt

    # Idle OpenMP threads sleep instead of spinning: kernels alternate with NumPy and BLAS
    # calls on the same cores, and spinning threads starve them (3-30x slower measured on
    # 2 busy cores). libgomp reads this once, when the first kernel module loads; a value
    # the user set wins.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    config = InductorConfig.from_options(options)
    program = lower_graph(graph)
    sched = schedule(program)
    generated = generate_module(sched, config)
    output_code_log.debug("%s", generated.source)
    if config.trace_enabled:
        _write_debug(config, graph, sched, generated)
    module = rt.build_extension(
        generated.source,
        module_name=generated.module_name,
        language="c",
        extra_flags=_FLAGS + config.extra_flags,
    )
    module.set_externs(generated.externs)
    fn = output_rebuilder(generated, module.call)
    return CompiledGraph(sched, generated, fn)


def inductor(
    graph: Graph,
    example_inputs: Sequence[Any],
    *,
    mode: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> Callable[..., Any]:
    """The inductor backend: a callable that evaluates `graph` like `run_graph`.

    It takes the graph inputs positionally. `mode` is accepted for the
    torch.compile-style API (only the default exists on CPU); `options` are
    inductor options (see `list_options`).

        >>> fn = inductor(graph, [np.ones(3)])  # doctest: +SKIP
    """
    if mode not in (
        None,
        "default",
        "reduce-overhead",
        "max-autotune",
        "max-autotune-no-cudagraphs",
    ):
        raise ValueError(f"unknown mode {mode!r}")
    del example_inputs  # layouts come from the graph's placeholder metadata
    import numpile_runtime as rt

    try:
        return compile_graph(graph, options=options).fn
    except rt.CompilerNotFoundError as error:
        log.warning("no C compiler (%s); the graph runs op by op with NumPy", error)
        return functools.partial(_run_eagerly, graph)


def _run_eagerly(graph: Graph, *inputs: Any) -> Any:
    return run_graph(graph, inputs)


def _write_debug(
    config: InductorConfig, graph: Graph, sched: Schedule, generated: GeneratedModule
) -> None:
    root = Path(config.debug_dir or os.path.join(os.getcwd(), "numpile_debug"))
    folder = root / f"inductor_{generated.module_name}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "graph.txt").write_text(str(graph) + "\n")
    (folder / "ir_pre_fusion.txt").write_text(str(sched.program) + "\n")
    (folder / "ir_post_fusion.txt").write_text(str(sched) + "\n")
    (folder / "output_code.c").write_text(generated.source)
    log.info("inductor debug output in %s", folder)
