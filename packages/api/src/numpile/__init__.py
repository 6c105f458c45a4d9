"""numpile: a just-in-time compiler for plain NumPy programs.

The public surface, re-exported from the layers below (nothing lives here):

    >>> import numpy as np, numpile
    >>> @numpile.compile
    ... def f(x):
    ...     return np.sin(x) * 2 + 1
    >>> f(np.zeros(3))  # doctest: +SKIP
    array([1., 1., 1.])
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from numpile_capture import CompileProfiler as CompileProfiler
from numpile_capture import NumpilePerformanceWarning as NumpilePerformanceWarning
from numpile_capture import Unsupported as Unsupported
from numpile_capture import allow_in_graph as allow_in_graph
from numpile_capture import compile_function as compile
from numpile_capture import compile_times as compile_times
from numpile_capture import config as config
from numpile_capture import disable as disable
from numpile_capture import disallow_in_graph as disallow_in_graph
from numpile_capture import explain as explain
from numpile_capture import graph_break as graph_break
from numpile_capture import is_compiling as is_compiling
from numpile_capture import is_dynamo_compiling as is_dynamo_compiling
from numpile_capture import is_exporting as is_exporting
from numpile_capture import list_backends as list_backends
from numpile_capture import mark_dynamic as mark_dynamic
from numpile_capture import mark_static as mark_static
from numpile_capture import register_backend as register_backend
from numpile_capture import reset as _capture_reset
from numpile_capture import set_stance as set_stance
from numpile_capture import substitute_in_graph as substitute_in_graph
from numpile_capture import wrap_numpy as wrap_numpy
from numpile_guards import keep_array_guards_unsafe as keep_array_guards_unsafe
from numpile_guards import skip_all_guards_unsafe as skip_all_guards_unsafe
from numpile_guards import skip_guard_on_globals_unsafe as skip_guard_on_globals_unsafe
from numpile_inductor import NoCompilerWarning as NoCompilerWarning
from numpile_inductor import cancel_background_builds as _cancel_background_builds
from numpile_inductor import list_mode_options as list_mode_options
from numpile_inductor import list_options as list_options
from numpile_inductor import trim_buffer_pool as _trim_buffer_pool
from numpile_inductor import wait_for_background_builds as _wait_for_background_builds
from numpile_runtime import distribution_version
from numpile_runtime import release_cuda_graphs as _release_cuda_graphs
from numpile_runtime import release_modules as _release_modules
from numpile_runtime import set_logs as set_logs

if TYPE_CHECKING:
    from numpile_autograd_aot import DetachedFloatError as DetachedFloatError
    from numpile_autograd_aot import checkpoint as checkpoint
    from numpile_autograd_aot import custom_jvp as custom_jvp
    from numpile_autograd_aot import custom_vjp as custom_vjp
    from numpile_autograd_aot import grad as grad
    from numpile_autograd_aot import hessian as hessian
    from numpile_autograd_aot import jacfwd as jacfwd
    from numpile_autograd_aot import jacrev as jacrev
    from numpile_autograd_aot import jvp as jvp
    from numpile_autograd_aot import linearize as linearize
    from numpile_autograd_aot import register_pytree_node as register_pytree_node
    from numpile_autograd_aot import value_and_grad as value_and_grad
    from numpile_autograd_aot import vjp as vjp
    from numpile_autograd_aot import vmap as vmap

    __version__: str
else:

    def __getattr__(name: str) -> Any:
        # `__version__` reads the installed metadata when first asked (see `distribution`).
        if name == "__version__":
            return distribution_version("numpile")
        if name in _AUTOGRAD_NAMES:
            import numpile_autograd_aot  # late: see _AUTOGRAD_NAMES

            value = getattr(numpile_autograd_aot, name)
            globals()[name] = value
            return value
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# NOTE: the autograd transforms are imported by the first use of one of these names: a
# process that only compiles functions (a warm start) does not import numpile_autograd_aot.
_AUTOGRAD_NAMES = frozenset(
    {
        "DetachedFloatError",
        "checkpoint",
        "custom_jvp",
        "custom_vjp",
        "grad",
        "hessian",
        "jacfwd",
        "jacrev",
        "jvp",
        "linearize",
        "register_pytree_node",
        "value_and_grad",
        "vjp",
        "vmap",
    }
)


def reset() -> None:
    """Forget every compiled entry, cancel queued background builds, free cached buffers
    and CUDA graphs, and unload the kernel libraries nothing uses any more.

    The system is back in its initial state: the next call of a compiled function
    is a first compilation (also `numpile.compile.reset()`, as the seeds spell it).

    >>> reset()
    """
    _capture_reset()
    _cancel_background_builds()
    _trim_buffer_pool()
    _release_cuda_graphs()
    _release_modules()


def wait_for_compiles(timeout: float | None = None) -> bool:
    """Block until every compile that runs in the background has ended; whether they all
    did within `timeout` seconds (None: no limit).

    A new graph's first calls run with NumPy while its C module builds on a background
    thread (tiered compilation; `options={"tiered": False}` or `NUMPILE_TIERED=0` builds it
    in the first call instead). Once this returns True, the next call of each compiled
    function runs its compiled code, as a `torch.compile`d function does after its first
    call: wait before timing steady-state calls. A build that failed raises from the next
    call, not here.

    >>> wait_for_compiles(60.0)
    True
    """
    return _wait_for_background_builds(timeout)


# The seeds call `torch.compile.reset()`: the same function, reached through `compile`.
compile.reset = reset  # type: ignore[attr-defined]


__all__ = [
    "CompileProfiler",
    "DetachedFloatError",
    "NoCompilerWarning",
    "NumpilePerformanceWarning",
    "compile_times",
    "keep_array_guards_unsafe",
    "set_logs",
    "skip_all_guards_unsafe",
    "skip_guard_on_globals_unsafe",
    "Unsupported",
    "allow_in_graph",
    "compile",
    "config",
    "disable",
    "disallow_in_graph",
    "explain",
    "graph_break",
    "grad",
    "is_compiling",
    "is_dynamo_compiling",
    "is_exporting",
    "list_backends",
    "list_mode_options",
    "list_options",
    "register_backend",
    "reset",
    "mark_dynamic",
    "mark_static",
    "set_stance",
    "substitute_in_graph",
    "value_and_grad",
    "vjp",
    "wrap_numpy",
    "custom_jvp",
    "custom_vjp",
    "hessian",
    "jacfwd",
    "jacrev",
    "jvp",
    "linearize",
    "register_pytree_node",
    "vmap",
    "checkpoint",
    "wait_for_compiles",
]
