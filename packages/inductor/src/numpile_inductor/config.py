"""Inductor configuration: one attrs class, overridden per compile by `mode` and `options`.

Option names are the ones `compile(options=...)` takes (torch.compile's names where
they mean something on a CPU); `list_options()` lists them and `list_mode_options()`
shows what each mode sets. `TritonOptions` is the section the Triton backend reads.

>>> InductorConfig.from_options({"trace.enabled": True}).trace_enabled
True
>>> InductorConfig.from_options(None, mode="max-autotune").max_autotune
True
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, cast

import attrs

from numpile_runtime import LayerConfig

# NOTE: option names as users pass them in compile(options=...), mapped to fields, in the
# order list_options() shows them.
_OPTION_FIELDS: dict[str, str] = {
    "max_autotune": "max_autotune",
    "epilogue_fusion": "epilogue_fusion",
    "fast_math": "fast_math",
    "graph_cache": "graph_cache",
    "tiered": "tiered",
    "trace.enabled": "trace_enabled",
    "trace.debug_dir": "debug_dir",
    "trace.graph_diagram": "graph_diagram",
    "cpp.parallel_threshold": "parallel_threshold",
    "cpp.threads": "threads",
    "cpp.extra_flags": "extra_flags",
    "cpp.no_compiler": "no_compiler",
    "cpp.blas": "blas",
    "cpp.translation_units": "translation_units",
}

# NOTE: what each mode sets before the user's options apply (torch.compile's mode names;
# "reduce-overhead" and "max-autotune-no-cudagraphs" are CUDA ideas that mean the default
# or max-autotune on a CPU).
_MODE_OPTIONS: dict[str, dict[str, Any]] = {
    "default": {},
    "reduce-overhead": {},
    "max-autotune": {"max_autotune": True, "tiered": False},
    "max-autotune-no-cudagraphs": {"max_autotune": True, "tiered": False},
}

_FIELD_TYPES: dict[str, type | tuple[type, ...]] = {
    "max_autotune": bool,
    "epilogue_fusion": bool,
    "fast_math": bool,
    "graph_cache": bool,
    "tiered": bool,
    "trace_enabled": bool,
    "debug_dir": (str, os.PathLike, type(None)),
    "graph_diagram": bool,
    "parallel_threshold": int,
    "threads": int,
    "extra_flags": (list, tuple),
    "no_compiler": str,
    "blas": bool,
    "translation_units": int,
}
# What `no_compiler` may say: run graphs op by op with NumPy (one warning), or raise.
_NO_COMPILER_CHOICES = ("fallback", "raise")


@attrs.frozen
class InductorConfig(LayerConfig):
    """Knobs of the CPU inductor.

    - `max_autotune`: choose the OpenMP thread count and parallel threshold by timing the
      compiled graph on the example inputs; the choice is cached on disk.
    - `epilogue_fusion`: let the scheduler fuse pointwise epilogues into the kernels
      that produce their inputs (read by the scheduler).
    - `fast_math`: compile with the parts of `-ffast-math` and `-ffp-contract=fast`
      (results may differ from NumPy in the last bits, NaN/inf handling may change); off
      by default.
    - `graph_cache`: reuse the generated module of an identical graph from the on-disk
      cache, skipping lowering and code generation.
    - `tiered`: a graph the graph cache does not hold runs op by op with NumPy while its
      C build runs in the background, then its calls switch to the compiled kernels
      (`tiered_graph.py`; same results either way). On by default; off in the
      max-autotune modes and with env `NUMPILE_TIERED=0`, for code that wants the
      compiled kernels from the first call (benchmarks, tests that count compiles).
    - `trace_enabled`: write the graph, loop IR and generated C to `debug_dir`
      (default `./numpile_debug`; NUMPILE_COMPILE_DEBUG=1 turns it on too).
    - `graph_diagram`: also write the graph as Graphviz `graph.dot` there.
    - `parallel_threshold`: a loop nest runs on OpenMP threads only when its
      element count reaches this (thread start-up costs a few microseconds).
    - `threads`: OpenMP threads for the graph's kernels (0: OpenMP's maximum less
      the cores other runnable tasks hold, per call; see codegen/c/threads.py).
    - `extra_flags`: more C compiler flags.
    - `no_compiler`: without a usable C compiler, "fallback" (the default; env
      `NUMPILE_NO_COMPILER` sets it) runs graphs op by op with NumPy after one
      `NoCompilerWarning` per process; "raise" raises `CompilerNotFoundError`.
    - `blas`: float32/float64 products (`matmul`, `dot`) call the BLAS NumPy loaded from
      the generated C, into the graph's own output (`codegen/c/blas.py`); False: they run
      as NumPy calls.
    - `translation_units`: compile a graph's module as up to this many C files at once,
      linked into one library (`codegen/c/translation_units.py`); 0 (the default): one per
      core, up to 4, where a file gets enough code to gain; 1: one file.

        >>> InductorConfig().fast_math
        False
    """

    max_autotune: bool = False
    epilogue_fusion: bool = True
    fast_math: bool = False
    graph_cache: bool = True
    tiered: bool = True
    trace_enabled: bool = False
    debug_dir: str | None = None
    graph_diagram: bool = False
    parallel_threshold: int = 65536
    threads: int = 0
    extra_flags: tuple[str, ...] = ()
    no_compiler: str = "fallback"
    blas: bool = True
    translation_units: int = 0

    # NOTE: fields that change neither the generated code nor its build stay out of key().
    KEY_EXCLUDES: ClassVar[frozenset[str]] = frozenset(
        {
            "graph_cache",
            "tiered",
            "trace_enabled",
            "debug_dir",
            "graph_diagram",
            "no_compiler",
            "translation_units",
        }
    )

    @classmethod
    def from_options(
        cls, options: Mapping[str, Any] | None, *, mode: str | None = None
    ) -> InductorConfig:
        """A config from `compile(mode=..., options=...)`; unknown names raise a clear error.

        >>> InductorConfig.from_options(None).parallel_threshold
        65536
        >>> InductorConfig.from_options({"max_autotune": False}, mode="max-autotune").max_autotune
        False
        """
        values: dict[str, Any] = {}
        if os.environ.get("NUMPILE_COMPILE_DEBUG") == "1":
            values["trace_enabled"] = True
        tiered_env = os.environ.get("NUMPILE_TIERED", "").strip().lower()
        if tiered_env:
            values["tiered"] = tiered_env not in ("0", "false", "no", "off")
        if os.environ.get("NUMPILE_NO_COMPILER"):
            values["no_compiler"] = os.environ["NUMPILE_NO_COMPILER"].strip().lower()
        merged: dict[str, Any] = {**list_mode_options(mode or "default"), **(options or {})}
        # NOTE: a function's graphs share its options, and each graph goes to C or Triton by
        # where its inputs live (a resume function of 0-d values runs in C): the Triton
        # section's names are checked here too, and have no effect on C code.
        device = {key: value for key, value in merged.items() if key in _triton_fields()}
        if device:
            TritonOptions.from_mode(None, device, interpret=True)
        for key, value in merged.items():
            if key in device:
                continue
            if key not in _OPTION_FIELDS:
                known = ", ".join([*_OPTION_FIELDS, *_triton_fields()])
                raise ValueError(
                    f"unknown inductor option {key!r}; valid options: {known} "
                    "(numpile_inductor.list_options() lists the C ones, "
                    "numpile_inductor.TritonOptions the Triton ones)"
                )
            field = _OPTION_FIELDS[key]
            expected = _FIELD_TYPES[field]
            if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
                raise TypeError(
                    f"inductor option {key!r} takes {_type_names(expected)}, got {value!r}"
                )
            if field == "extra_flags":
                value = tuple(str(flag) for flag in cast("Sequence[Any]", value))
            if field == "debug_dir" and value is not None:
                value = os.fspath(value)
            values[field] = value
        choice = values.get("no_compiler", "fallback")
        if choice not in _NO_COMPILER_CHOICES:
            raise ValueError(
                f"inductor option 'cpp.no_compiler' (or NUMPILE_NO_COMPILER) is {choice!r}; "
                "use 'fallback' or 'raise'"
            )
        return cls(**values)


def _triton_fields() -> dict[str, attrs.Attribute[Any]]:
    # The Triton section's own option names (its `trace_*` fields are the `trace.*` options).
    return {
        name: field
        for name, field in attrs.fields_dict(TritonOptions).items()
        if name not in _OPTION_FIELDS.values()
    }


def _type_names(expected: type | tuple[type, ...]) -> str:
    kinds = expected if isinstance(expected, tuple) else (expected,)
    return " or ".join(kind.__name__ for kind in kinds)


def list_options() -> list[str]:
    """The option names `compile(options=...)` accepts for the inductor.

    >>> "trace.enabled" in list_options() and "max_autotune" in list_options()
    True
    """
    return list(_OPTION_FIELDS)


def list_mode_options(mode: str | None = None) -> dict[str, Any]:
    """The options each mode sets: all modes as a dict of dicts, or the options of `mode`.

    Examples:
        >>> list_mode_options("max-autotune")
        {'max_autotune': True, 'tiered': False}
        >>> sorted(list_mode_options())[:2]
        ['default', 'max-autotune']
    """
    if mode is None:
        return {name: dict(values) for name, values in _MODE_OPTIONS.items()}
    if mode not in _MODE_OPTIONS:
        known = ", ".join(repr(name) for name in _MODE_OPTIONS)
        raise ValueError(f"unknown mode {mode!r}; valid modes: {known}")
    return dict(_MODE_OPTIONS[mode])


# The Triton backend's section (codegen/triton/).

# max-autotune times cuBLAS against the template in every tile shape (also interpreted).
_EVERY_GEMM: dict[str, Any] = {"gemm_backends": ("extern", "triton"), "gemm_tiles": None}
_TRITON_MODES: dict[str, dict[str, Any]] = {
    "default": {},
    "reduce-overhead": {"cudagraphs": True, "scalars_in_memory": True},
    "max-autotune": {
        "autotune": True,
        "cudagraphs": True,
        "scalars_in_memory": True,
        **_EVERY_GEMM,
    },
    "max-autotune-no-cudagraphs": {"autotune": True, "loop_graphs": 0, **_EVERY_GEMM},
}


def _gemm_backends(value: Any) -> tuple[str, ...]:
    # "extern,triton" or ("extern", "triton"): each name known, at least one.
    names = value.split(",") if isinstance(value, str) else list(value)
    names = [str(name).strip().lower() for name in names if str(name).strip()]
    unknown = sorted(set(names) - {"extern", "triton"})
    if unknown or not names:
        raise ValueError(f"gemm_backends takes 'extern' and/or 'triton', got {value!r}")
    return tuple(dict.fromkeys(names))


@attrs.frozen
class TritonOptions:
    """The Triton section of the inductor's options: block sizes and the backend's knobs.

    Used for graphs compiled with `backend="triton"` and for graphs whose inputs live on a
    GPU (`numpile_inductor.pipeline.DEVICE_BACKENDS`).

    `max_xblock`: elements of the output per program instance (pointwise);
    `max_rblock`: the longest row a reduction keeps in one tile (persistent);
    `max_tile`: elements of a reduction tile (`XBLOCK * RBLOCK`);
    `row_tile`: elements of a persistent row kernel's tile: rows per program are
    `row_tile // RBLOCK`, at least one (`codegen/triton/rows.py`);
    `looped_rblock`: the longest tile of a row kernel looped over rows (`max_rblock` tiles
    until a launch knows a run-time row length);
    `num_warps`: warps per program on a GPU (ignored by the interpreter);
    `autotune`: time launch configurations on the first call (`codegen/triton/autotune.py`);
    `autotune_reductions`: in the other modes, time a few tile and warp choices of each
    reduction kernel on its first call per shape class on a GPU (at most four, see
    `reduction_candidates`), the winner stored on disk; interpreted, a stored choice is used
    and nothing is timed;
    `cudagraphs`: replay calls through a CUDA graph (`numpile_runtime.CudaGraphRunner`);
    `scalars_in_memory`: kernels read the numbers a call passes (scalar graph inputs) from
    device memory, one load per program, instead of taking them by value: a CUDA graph then
    replays whatever the numbers are (on with `cudagraphs`, and for the bodies of loops
    `loop_graphs` records; by value, off, costs no upload per plain call);
    `scalars_by_value`: graph inputs (placeholder names) whose numbers kernels take by
    value all the same: the backend sets it for a loop body's index and carried values,
    which every iteration of a recorded loop bakes in (numbers an extern call or the
    outputs read too are taken by value without being named);
    `loop_graphs`: how many CUDA graphs a kept loop of kernels records (one per trip count,
    buffers, and the values of the scalars not in device slots) to replay the whole loop in
    one launch
    (`codegen/triton/loop_graphs.py`); 0: always a host loop of launches;
    `loop_graph_iterations`: the most iterations one such graph holds (longer loops run
    as a host loop);
    `split_reductions`: reduce few long rows in two kernels (`codegen/triton/split.py`), with
    about `split_programs` programs in the first (a few per multiprocessor of a current GPU:
    132 on an H100); `split_in_one_kernel`: both stages of a split reduction in one kernel,
    the last program to finish combining the partial results (a last-block finish,
    deterministic); False: a second kernel combines them;
    `gemm_backends`: how a matmul may run, "extern" (cuBLAS, `numpile_runtime.cublas_matmul`)
    and/or "triton" (a `tl.dot` template with its epilogue fused, `codegen/triton/matmul.py`); with
    both (the default on a GPU), the first call times them (a tuple, or a comma-separated
    string as in torch's option); `gemm_tiles`: how many of the template's tile shapes (`TILES`) are
    timed against cuBLAS (1 by default, all with None: max-autotune);
    `online_softmax`: a looped row group's max and sum of exp(v - max) share one loop
    (`codegen/triton/rows.py`): True always; False never (a loop each); None (the default)
    over a run-time row length only, the faster form of each on an H200;
    `direct_launch`: launch compiled kernels without Triton's `run` after their first
    launch (`numpile_runtime.TritonLauncher`; False: always through `run`, to compare);
    `trace_enabled`, `debug_dir`, `graph_diagram`: the inductor's `trace.*` options (the
    graph, the loop IR and `output_code.py` under `debug_dir`; see `debug.py`).

    >>> TritonOptions().max_xblock
    1024
    """

    max_xblock: int = 1024
    max_rblock: int = 2048
    max_tile: int = 4096
    row_tile: int = 1024
    looped_rblock: int = 8192
    num_warps: int = 4
    autotune: bool = False
    autotune_reductions: bool = True
    cudagraphs: bool = False
    scalars_in_memory: bool = False
    scalars_by_value: tuple[str, ...] = ()
    loop_graphs: int = 8
    loop_graph_iterations: int = 20_000
    split_reductions: bool = True
    split_programs: int = 512
    split_in_one_kernel: bool = True
    gemm_backends: tuple[str, ...] = attrs.field(
        default=("extern", "triton"), converter=_gemm_backends
    )
    gemm_tiles: int | None = 1
    online_softmax: bool | None = None
    direct_launch: bool = True
    trace_enabled: bool = False
    debug_dir: str | None = None
    graph_diagram: bool = False

    @classmethod
    def from_mode(
        cls, mode: str | None, options: Mapping[str, Any] | None = None, *, interpret: bool
    ) -> TritonOptions:
        """Options for a `numpile.compile` mode, overridden by `options`.

        `options` holds field names of this class and the inductor's own option names
        (`numpile_inductor.list_options()`): `trace.*` apply here, `max_autotune` means
        `autotune`, and the C compiler's options (`cpp.*`, `fast_math`, ...) are accepted
        and have no effect on Triton kernels. NUMPILE_COMPILE_DEBUG=1 sets `trace_enabled`.

        >>> TritonOptions.from_mode("max-autotune", interpret=False).autotune
        True
        >>> TritonOptions.from_mode(None, {"trace.enabled": True}, interpret=False).trace_enabled
        True
        """
        base = cls.for_interpreter() if interpret else cls()
        flags = _TRITON_MODES.get(mode or "default")
        if flags is None:
            raise ValueError(f"unknown mode {mode!r}; modes: {', '.join(_TRITON_MODES)}")
        fields = attrs.fields_dict(cls)
        given = dict(options or {})
        shared = {key: value for key, value in given.items() if key in list_options()}
        overrides = {**flags, **{k: v for k, v in given.items() if k not in shared}}
        unknown = set(overrides) - set(fields)
        if unknown:
            known = ", ".join([*fields, *list_options()])
            raise ValueError(f"unknown Triton options {sorted(unknown)}; known: {known}")
        config = InductorConfig.from_options(shared)  # checks their types; reads the env
        for field in ("trace_enabled", "debug_dir", "graph_diagram"):
            overrides.setdefault(field, getattr(config, field))
        if "max_autotune" in shared:
            overrides["autotune"] = config.max_autotune
        return attrs.evolve(base, **overrides)

    @classmethod
    def for_interpreter(cls) -> TritonOptions:
        """Few, large blocks: each program instance costs ~2 ms interpreted; matmuls are
        extern calls unless `gemm_backends` says otherwise (timing a template interpreted
        against NumPy says nothing about a GPU).

        >>> TritonOptions.for_interpreter().max_xblock
        65536
        """
        return cls(
            max_xblock=65536,
            max_rblock=65536,
            max_tile=65536,
            row_tile=65536,
            looped_rblock=65536,
            split_programs=4,
            gemm_backends=("extern",),
        )
