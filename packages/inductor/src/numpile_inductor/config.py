"""Inductor configuration: one attrs class, overridden per compile by `options`.

>>> InductorConfig.from_options({"trace.enabled": True}).trace_enabled
True
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import attrs

# NOTE: option names as users pass them in compile(options=...), mapped to fields.
_OPTION_FIELDS: dict[str, str] = {
    "trace.enabled": "trace_enabled",
    "trace.debug_dir": "debug_dir",
    "cpp.parallel_threshold": "parallel_threshold",
    "cpp.extra_flags": "extra_flags",
}


@attrs.frozen
class InductorConfig:
    """Knobs of the CPU inductor.

    - `parallel_threshold`: a loop nest runs on OpenMP threads only when its
      element count reaches this (thread start-up costs a few microseconds).
    - `trace_enabled`: write the graph, loop IR and generated C to `debug_dir`
      (default `./numpile_debug`; NUMPILE_COMPILE_DEBUG=1 turns it on too).
    - `extra_flags`: more C compiler flags.
    """

    parallel_threshold: int = 65536
    trace_enabled: bool = False
    debug_dir: str | None = None
    extra_flags: tuple[str, ...] = ()

    @classmethod
    def from_options(cls, options: Mapping[str, Any] | None) -> InductorConfig:
        """A config from `compile(options=...)`; unknown keys raise a clear error.

        >>> InductorConfig.from_options(None).parallel_threshold
        65536
        """
        values: dict[str, Any] = {}
        if os.environ.get("NUMPILE_COMPILE_DEBUG") == "1":
            values["trace_enabled"] = True
        for key, value in (options or {}).items():
            if key not in _OPTION_FIELDS:
                known = ", ".join(sorted(_OPTION_FIELDS))
                raise ValueError(f"unknown inductor option {key!r}; known options: {known}")
            field = _OPTION_FIELDS[key]
            values[field] = tuple(value) if field == "extra_flags" else value
        return cls(**values)


def list_options() -> list[str]:
    """The option names `compile(options=...)` accepts for the inductor.

    >>> "trace.enabled" in list_options()
    True
    """
    return list(_OPTION_FIELDS)
