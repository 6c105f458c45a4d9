"""numpile_inductor: lowering to loop IR, fusion, and C/OpenMP code generation.

>>> from numpile_inductor import inductor, list_options
>>> fn = inductor(graph, example_inputs)  # doctest: +SKIP
>>> "max_autotune" in list_options()
True

The code generator (lowering, scheduler: they import sympy) loads on first use of
its names or on the first compile that misses the graph cache, so `import numpile`
and a warm start stay cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from numpile_capture import register_backend_path
from numpile_runtime import distribution_version

from .backend import CompiledGraph as CompiledGraph
from .backend import KernelCompileError as KernelCompileError
from .backend import compile_graph as compile_graph
from .backend import generated_source as generated_source
from .backend import inductor as inductor
from .background_build import cancel_pending as cancel_background_builds
from .background_build import wait_idle as wait_for_background_builds
from .codegen.c import AutotuneChoice as AutotuneChoice
from .codegen.c import buffer_pool_bytes as buffer_pool_bytes
from .codegen.c import trim_buffer_pool as trim_buffer_pool
from .config import InductorConfig as InductorConfig
from .config import TritonOptions as TritonOptions
from .config import list_mode_options as list_mode_options
from .config import list_options as list_options
from .debug import graph_dot as graph_dot
from .no_compiler import NoCompilerWarning as NoCompilerWarning
from .tiered_graph import TieredGraph as TieredGraph

# The package's backends, as its entry points name them: no metadata read to find them.
register_backend_path("inductor", "numpile_inductor.backend:inductor")
register_backend_path("triton", "numpile_inductor.codegen.triton:triton_backend")

if TYPE_CHECKING:
    from .codegen.triton import TritonCompiled as TritonCompiled
    from .codegen.triton import compile_triton as compile_triton
    from .codegen.triton import triton_backend as triton_backend
    from .lowering import DECOMPOSITIONS as DECOMPOSITIONS
    from .lowering import LOWERINGS as LOWERINGS
    from .lowering import lower_graph as lower_graph
    from .lowering import register_lowering as register_lowering
    from .scheduler import schedule as schedule

    __version__: str

__all__ = [
    "NoCompilerWarning",
    "DECOMPOSITIONS",
    "LOWERINGS",
    "AutotuneChoice",
    "CompiledGraph",
    "InductorConfig",
    "KernelCompileError",
    "TritonCompiled",
    "TieredGraph",
    "TritonOptions",
    "buffer_pool_bytes",
    "cancel_background_builds",
    "wait_for_background_builds",
    "compile_graph",
    "compile_triton",
    "generated_source",
    "graph_dot",
    "inductor",
    "list_mode_options",
    "list_options",
    "lower_graph",
    "register_lowering",
    "schedule",
    "trim_buffer_pool",
    "triton_backend",
]

# NOTE: public names that live in the code generator's modules, imported on first access.
_LAZY: dict[str, str] = {
    "DECOMPOSITIONS": ".lowering",
    "LOWERINGS": ".lowering",
    "lower_graph": ".lowering",
    "register_lowering": ".lowering",
    "schedule": ".scheduler",
    "TritonCompiled": ".codegen.triton",
    "compile_triton": ".codegen.triton",
    "triton_backend": ".codegen.triton",
}


def __getattr__(name: str) -> Any:
    # `__version__` reads the installed metadata when first asked (see `distribution`).
    if name == "__version__":
        return distribution_version("numpile-inductor")
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(_LAZY[name], __name__)
    value = getattr(module, name)
    globals()[name] = value
    return value
