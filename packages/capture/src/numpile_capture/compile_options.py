"""The options of `compile`: mode and options validation, and the keywords each backend receives.

>>> validate_mode("max-autotune", None)
>>> validate_mode("fast", None)  # doctest: +SKIP
ValueError: unknown mode 'fast'; valid modes: default, ...
"""

from __future__ import annotations

import warnings
from typing import Any

from numpile_guards import split_guard_filter

from .backends import BackendFn, accepted_options, backend_name

MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def backend_kwargs(
    backend_fn: BackendFn,
    backend: str | BackendFn,
    mode: str | None,
    options: dict[str, Any] | None,
    *,
    warn: bool = True,
) -> dict[str, Any]:
    """The `mode`/`options` keywords `backend_fn` accepts; TypeError for options it refuses."""
    _, options = split_guard_filter(options)
    accepted = accepted_options(backend_fn)
    kwargs: dict[str, Any] = {}
    name = backend_name(backend)
    if mode is not None and mode != "default":
        if "mode" in accepted:
            kwargs["mode"] = mode
        elif warn:
            warnings.warn(
                f"backend {name!r} takes no mode; mode={mode!r} is ignored",
                UserWarning,
                stacklevel=3,
            )
    if options is not None:
        if "options" not in accepted:
            raise TypeError(f"backend {name!r} takes no options; got options={options!r}")
        kwargs["options"] = options
    return kwargs


def validate_mode(mode: str | None, options: dict[str, Any] | None) -> None:
    """Raise for an unknown mode, for mode and options together, or for options not a dict."""
    _, options = split_guard_filter(options)
    if mode is not None and options is not None:
        raise ValueError(
            "Either mode or options can be specified, but both can't be specified at the same time."
        )
    if mode is not None and mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; valid modes: {', '.join(MODES)}")
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"options must be a dict, got {type(options).__name__}")
