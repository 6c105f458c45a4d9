"""Logs: the `NUMPILE_LOGS` channels, switched on from the environment or from code.

Every layer logs through the standard library, on loggers named
`numpile.<layer>...`. A channel is a short name for one of them; naming it
in `NUMPILE_LOGS` (comma-separated) sets that logger to INFO, `+name` to
DEBUG, `-name` to ERROR, and sends numpile's records to stderr:

    NUMPILE_LOGS=guards,recompiles,dynamic python model.py
    NUMPILE_LOGS=+capture,output_code python model.py

    >>> set_logs("recompiles")
    >>> logging.getLogger("numpile.recompiles").level == logging.INFO
    True
    >>> set_logs("")

The environment variable is read once, when numpile_runtime is imported;
`set_logs` changes the channels later from code.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings

__all__ = ["CHANNELS", "set_logs"]

# NOTE: the table of channels and the loggers each one sets, in the order `set_logs`
# documents them: artifact channels first (what a user asks for when debugging), then one
# channel per layer.
CHANNELS: dict[str, tuple[str, ...]] = {
    "guards": ("numpile.guards",),
    "recompiles": ("numpile.recompiles",),
    "dynamic": ("numpile.dynamic", "numpile.guards.dynamic", "numpile.capture.dynamic"),
    "graph_breaks": ("numpile.capture.graph_breaks",),
    "output_code": ("numpile.inductor.output_code",),
    "perf_hints": ("numpile.perf_hints",),
    "progress": ("numpile.progress",),
    "runtime": ("numpile.runtime",),
    "capture": ("numpile.capture",),
    "autograd_aot": ("numpile.autograd_aot",),
    "inductor": ("numpile.inductor",),
    "all": ("numpile",),
}

_ENV = "NUMPILE_LOGS"
_FORMAT = "[%(name)s] %(levelname)s %(message)s"

# NOTE: the one handler `set_logs` installs on the "numpile" logger (None until needed),
# and the loggers whose level it set, so a later call can put them back.
_handler: logging.Handler | None = None
_touched: list[str] = []


def _parse(spec: str) -> dict[str, int]:
    levels: dict[str, int] = {}
    for raw in spec.split(","):
        item = raw.strip()
        if not item:
            continue
        level = logging.INFO
        if item[0] in "+-":
            level = logging.DEBUG if item[0] == "+" else logging.ERROR
            item = item[1:]
        if item not in CHANNELS:
            known = ", ".join(CHANNELS)
            raise ValueError(f"unknown numpile log channel {item!r}; known channels: {known}")
        for name in CHANNELS[item]:
            levels[name] = level
    return levels


def set_logs(spec: str) -> None:
    """Switch log channels on, as `NUMPILE_LOGS` does: `"guards,+capture"`; `""` turns all off.

    Raises ValueError naming the known channels for an unknown one.

        >>> set_logs("guards,recompiles"); set_logs("")
    """
    global _handler
    levels = _parse(spec)
    for name in _touched:
        logging.getLogger(name).setLevel(logging.NOTSET)
    _touched.clear()
    root = logging.getLogger("numpile")
    if not levels:
        if _handler is not None:
            root.removeHandler(_handler)
            _handler = None
        return
    if _handler is None:
        _handler = logging.StreamHandler(sys.stderr)
        _handler.setFormatter(logging.Formatter(_FORMAT))
        root.addHandler(_handler)
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)
        _touched.append(name)


def _configure_from_env() -> None:
    # Called once by numpile_runtime's __init__; a bad value warns instead of breaking import.
    spec = os.environ.get(_ENV, "")
    if not spec.strip():
        return
    try:
        set_logs(spec)
    except ValueError as error:
        warnings.warn(f"{_ENV}={spec!r} ignored: {error}", stacklevel=2)
