"""numpile_guards: sources, guards and their compilation, per-code caches."""

from .cache import DEFAULT_SIZE_LIMIT as DEFAULT_SIZE_LIMIT
from .cache import CacheEntry as CacheEntry
from .cache import CodeCache as CodeCache
from .cache import all_caches as all_caches
from .cache import cache_for as cache_for
from .cache import clear_caches as clear_caches
from .cache import differentiating_guards as differentiating_guards
from .check import GuardCheck as GuardCheck
from .check import compile_fetch as compile_fetch
from .check import compile_guards as compile_guards
from .check import order_guards as order_guards
from .guard import ArraySpec as ArraySpec
from .guard import Guard as Guard
from .guard import GuardKind as GuardKind
from .reasons import RecompileReason as RecompileReason
from .reasons import constants_match as constants_match
from .reasons import guard_failure as guard_failure
from .source import AttrSource as AttrSource
from .source import ClosureSource as ClosureSource
from .source import FunctionSource as FunctionSource
from .source import GlobalSource as GlobalSource
from .source import ItemSource as ItemSource
from .source import LocalSource as LocalSource
from .source import Source as Source

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_SIZE_LIMIT",
    "ArraySpec",
    "AttrSource",
    "CacheEntry",
    "ClosureSource",
    "CodeCache",
    "FunctionSource",
    "GlobalSource",
    "Guard",
    "GuardCheck",
    "GuardKind",
    "ItemSource",
    "LocalSource",
    "RecompileReason",
    "Source",
    "all_caches",
    "cache_for",
    "clear_caches",
    "compile_fetch",
    "compile_guards",
    "constants_match",
    "differentiating_guards",
    "guard_failure",
    "order_guards",
]
