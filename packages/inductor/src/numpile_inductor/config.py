"""Inductor configuration: one attrs class, overridden per compile by `mode` and `options`.

Option names are the ones `compile(options=...)` takes (torch.compile's names where
they mean something on a CPU); `list_options()` lists them and `list_mode_options()`
shows what each mode sets.

>>> InductorConfig.from_options({"trace.enabled": True}).trace_enabled
True
>>> InductorConfig.from_options(None, mode="max-autotune").max_autotune
True
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, cast

import attrs

# NOTE: option names as users pass them in compile(options=...), mapped to fields, in the
# order list_options() shows them.
_OPTION_FIELDS: dict[str, str] = {
    "max_autotune": "max_autotune",
    "epilogue_fusion": "epilogue_fusion",
    "fast_math": "fast_math",
    "graph_cache": "graph_cache",
    "trace.enabled": "trace_enabled",
    "trace.debug_dir": "debug_dir",
    "trace.graph_diagram": "graph_diagram",
    "cpp.parallel_threshold": "parallel_threshold",
    "cpp.threads": "threads",
    "cpp.extra_flags": "extra_flags",
    "cpp.no_compiler": "no_compiler",
}

# NOTE: what each mode sets before the user's options apply (torch.compile's mode names;
# "reduce-overhead" and "max-autotune-no-cudagraphs" are CUDA ideas that mean the default
# or max-autotune on a CPU).
_MODE_OPTIONS: dict[str, dict[str, Any]] = {
    "default": {},
    "reduce-overhead": {},
    "max-autotune": {"max_autotune": True},
    "max-autotune-no-cudagraphs": {"max_autotune": True},
}

_FIELD_TYPES: dict[str, type | tuple[type, ...]] = {
    "max_autotune": bool,
    "epilogue_fusion": bool,
    "fast_math": bool,
    "graph_cache": bool,
    "trace_enabled": bool,
    "debug_dir": (str, os.PathLike, type(None)),
    "graph_diagram": bool,
    "parallel_threshold": int,
    "threads": int,
    "extra_flags": (list, tuple),
    "no_compiler": str,
}
# What `no_compiler` may say: run graphs op by op with NumPy (one warning), or raise.
_NO_COMPILER_CHOICES = ("fallback", "raise")


@attrs.frozen
class InductorConfig:
    """Knobs of the CPU inductor.

    - `max_autotune`: choose the OpenMP thread count and parallel threshold by timing the
      compiled graph on the example inputs; the choice is cached on disk.
    - `epilogue_fusion`: let the scheduler fuse pointwise epilogues into the kernels
      that produce their inputs (read by the scheduler).
    - `fast_math`: compile with `-ffast-math -ffp-contract=fast` (results may differ from
      NumPy in the last bits, NaN/inf handling may change); off by default.
    - `graph_cache`: reuse the generated module of an identical graph from the on-disk
      cache, skipping lowering and code generation.
    - `trace_enabled`: write the graph, loop IR and generated C to `debug_dir`
      (default `./numpile_debug`; NUMPILE_COMPILE_DEBUG=1 turns it on too).
    - `graph_diagram`: also write the graph as Graphviz `graph.dot` there.
    - `parallel_threshold`: a loop nest runs on OpenMP threads only when its
      element count reaches this (thread start-up costs a few microseconds).
    - `threads`: OpenMP threads for the graph's kernels (0: OpenMP's default).
    - `extra_flags`: more C compiler flags.
    - `no_compiler`: without a usable C compiler, "fallback" (the default; env
      `NUMPILE_NO_COMPILER` sets it) runs graphs op by op with NumPy after one
      `NoCompilerWarning` per process; "raise" raises `CompilerNotFoundError`.

        >>> InductorConfig().fast_math
        False
    """

    max_autotune: bool = False
    epilogue_fusion: bool = True
    fast_math: bool = False
    graph_cache: bool = True
    trace_enabled: bool = False
    debug_dir: str | None = None
    graph_diagram: bool = False
    parallel_threshold: int = 65536
    threads: int = 0
    extra_flags: tuple[str, ...] = ()
    no_compiler: str = "fallback"

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
        if os.environ.get("NUMPILE_NO_COMPILER"):
            values["no_compiler"] = os.environ["NUMPILE_NO_COMPILER"].strip().lower()
        merged: dict[str, Any] = {**list_mode_options(mode or "default"), **(options or {})}
        for key, value in merged.items():
            if key not in _OPTION_FIELDS:
                known = ", ".join(_OPTION_FIELDS)
                raise ValueError(
                    f"unknown inductor option {key!r}; valid options: {known} "
                    "(numpile_inductor.list_options() lists them)"
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

    def key(self) -> str:
        """The fields that change generated code or its build, as text for cache keys.

        >>> "fast_math=False" in InductorConfig().key()
        True
        """
        return (
            f"max_autotune={self.max_autotune} "
            f"epilogue_fusion={self.epilogue_fusion} fast_math={self.fast_math} "
            f"parallel_threshold={self.parallel_threshold} threads={self.threads} "
            f"extra_flags={list(self.extra_flags)}"
        )


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
        {'max_autotune': True}
        >>> sorted(list_mode_options())[:2]
        ['default', 'max-autotune']
    """
    if mode is None:
        return {name: dict(values) for name, values in _MODE_OPTIONS.items()}
    if mode not in _MODE_OPTIONS:
        known = ", ".join(repr(name) for name in _MODE_OPTIONS)
        raise ValueError(f"unknown mode {mode!r}; valid modes: {known}")
    return dict(_MODE_OPTIONS[mode])
