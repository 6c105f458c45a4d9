"""numpile_guards: sources, guards and their compilation, per-code caches."""

from .guard import ArraySpec as ArraySpec
from .guard import Guard as Guard
from .guard import GuardKind as GuardKind
from .source import AttrSource as AttrSource
from .source import ClosureSource as ClosureSource
from .source import GlobalSource as GlobalSource
from .source import ItemSource as ItemSource
from .source import LocalSource as LocalSource
from .source import Source as Source

__version__ = "0.1.0"

__all__ = [
    "ArraySpec",
    "AttrSource",
    "ClosureSource",
    "GlobalSource",
    "Guard",
    "GuardKind",
    "ItemSource",
    "LocalSource",
    "Source",
]
