"""The capture layer's configuration: one attrs object, `config`, read at call time.

Fields are plain attributes; set them directly, or use `config.patch(...)` for
a scoped change (tests do this):

    >>> from numpile_capture.config import config
    >>> config.cache_size_limit
    8
    >>> with config.patch(cache_size_limit=2):
    ...     config.cache_size_limit
    2
"""

from __future__ import annotations

from typing import Any

import attrs

from numpile_runtime import LayerConfig


@attrs.define
class CaptureConfig(LayerConfig):
    """Settings of capture and of the call dispatcher.

    cache_size_limit: compiled entries kept per function (per code object and
        backend); past it, new kinds of inputs run eagerly, with one warning.
    default_backend: the backend `compile` uses when given none (a registered
        name or a callable); None (the default) is the best one installed, the
        first of `PREFERRED_BACKENDS` the backend registry knows (`inductor`
        when numpile_inductor is installed, else `eager`).
    suppress_errors: when True, a failure inside numpile itself (a backend
        that raises, guards that reject the inputs they were built from) is
        logged and the function runs eagerly, instead of raising.
    verbose: when True, internal errors keep numpile's own stack trace and
        each compile logs its graph and guards at INFO level on
        `numpile.capture` (otherwise at DEBUG).
    automatic_dynamic_shapes: with `compile(dynamic=None)`, make a size
        symbolic once a recompile sees it change (False: recompile per size).
    duck_shape: equal sizes of different inputs share one symbol (guarded
        equal); False gives each size its own symbol.
    specialize_int, specialize_float: when True, Python int (float) inputs
        are always baked into the graph and guarded by value. When False (the
        default), they follow `dynamic` as sizes do: with `dynamic=None`, one
        seen changing becomes a graph input (a float argument is one from the
        first compile), so an operand of array arithmetic (a learning rate, a
        step count) no longer recompiles per value; a use that needs the value
        (a slice bound, `np.full`) still guards it, a branch its outcome.
    performance_warnings: when True (the default), a decorated function that
        runs as several graphs (a graph break) gives one
        `NumpilePerformanceWarning` naming its first break; False silences it
        (the `perf_hints` log channel still lists every break).
    dynamic_loop_arrays: with `compile(dynamic=None)`, make the array inputs a
        kept loop computes with symbolic from the first compile (False, the
        default: static first, as every array; True: a new size of them
        compiles nothing more, dropped per function where the dynamic compile
        fails or a light capture would need sympy, which makes the light and
        sympy captures differ: hence off).
    small_loops_in_python: when True (the default), a loop not kept because
        its body graph-breaks, whose body traced up to its break saves too
        little work compiled to pay for its pieces' calls
        (`body_work.pays_for_pieces`: 0-d values, small arrays, cheap arithmetic
        and library calls at any size), runs whole in plain Python, at eager's
        speed, and the code after it continues compiled; False compiles such a
        body's pieces once as resume functions, as a body whose kernels save
        enough (transcendental functions, long fused chains) always is.

        >>> CaptureConfig().default_backend is None
        True
    """

    cache_size_limit: int = 8
    default_backend: Any = None
    suppress_errors: bool = False
    verbose: bool = False
    automatic_dynamic_shapes: bool = True
    duck_shape: bool = True
    specialize_int: bool = False
    specialize_float: bool = False
    performance_warnings: bool = True
    small_loops_in_python: bool = True
    dynamic_loop_arrays: bool = False


# NOTE: the one live configuration object of the capture layer (a module global by design).
config = CaptureConfig()
