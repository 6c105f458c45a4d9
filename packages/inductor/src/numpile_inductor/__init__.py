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
import os
from typing import TYPE_CHECKING, Any

from .autotune import AutotuneChoice as AutotuneChoice
from .backend import CompiledGraph as CompiledGraph
from .backend import KernelCompileError as KernelCompileError
from .backend import compile_graph as compile_graph
from .backend import inductor as inductor
from .buffer_pool import buffer_pool_bytes as buffer_pool_bytes
from .buffer_pool import trim_buffer_pool as trim_buffer_pool
from .config import InductorConfig as InductorConfig
from .config import list_mode_options as list_mode_options
from .config import list_options as list_options
from .debug import graph_dot as graph_dot
from .no_compiler import NoCompilerWarning as NoCompilerWarning

if TYPE_CHECKING:
    from .decompositions import DECOMPOSITIONS as DECOMPOSITIONS
    from .lowering import LOWERINGS as LOWERINGS
    from .lowering import lower_graph as lower_graph
    from .lowering import register_lowering as register_lowering
    from .scheduler import schedule as schedule
    from .triton_backend import TritonCompiled as TritonCompiled
    from .triton_backend import compile_triton as compile_triton
    from .triton_backend import triton_backend as triton_backend
    from .triton_kernel import TritonOptions as TritonOptions

__version__ = "0.1.0"

# Idle OpenMP threads sleep instead of spinning: kernels alternate with NumPy and BLAS calls
# on the same cores. libgomp reads this once, when it loads, and a process has one libgomp
# (torch's, if torch came first, is the one kernels bind to): set it as early as possible.
# A value the user set wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__all__ = [
    "NoCompilerWarning",
    "DECOMPOSITIONS",
    "LOWERINGS",
    "AutotuneChoice",
    "CompiledGraph",
    "InductorConfig",
    "KernelCompileError",
    "TritonCompiled",
    "TritonOptions",
    "buffer_pool_bytes",
    "compile_graph",
    "compile_triton",
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
    "DECOMPOSITIONS": ".decompositions",
    "LOWERINGS": ".lowering",
    "lower_graph": ".lowering",
    "register_lowering": ".lowering",
    "schedule": ".scheduler",
    "TritonCompiled": ".triton_backend",
    "TritonOptions": ".triton_kernel",
    "compile_triton": ".triton_backend",
    "triton_backend": ".triton_backend",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # decompositions and reductions register lowerings: import them before any use
    importlib.import_module(".decompositions", __name__)
    importlib.import_module(".reductions", __name__)
    module = importlib.import_module(_LAZY[name], __name__)
    value = getattr(module, name)
    globals()[name] = value
    return value
