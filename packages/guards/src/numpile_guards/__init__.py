"""numpile_guards: sources, guards and their compilation, per-code caches."""

from typing import TYPE_CHECKING

from numpile_runtime import distribution_version

from .affine_size import AffineRelation as AffineRelation
from .affine_size import AffineSize as AffineSize
from .affine_size import NeedsSympy as NeedsSympy
from .affine_size import light_active as light_active
from .affine_size import light_sizes as light_sizes
from .affine_size import relation as relation
from .cache import DEFAULT_SIZE_LIMIT as DEFAULT_SIZE_LIMIT
from .cache import CacheEntry as CacheEntry
from .cache import CodeCache as CodeCache
from .cache import all_caches as all_caches
from .cache import cache_for as cache_for
from .cache import clear_caches as clear_caches
from .cache import differentiating_guards as differentiating_guards
from .check import CheckFn as CheckFn
from .check import FetchFn as FetchFn
from .check import GuardCheck as GuardCheck
from .check import compile_fetch as compile_fetch
from .check import compile_guards as compile_guards
from .check import order_guards as order_guards
from .entry import EntryParameters as EntryParameters
from .entry import compile_entry as compile_entry
from .entry import fusable as fusable
from .epoch import EPOCH as EPOCH
from .epoch import VALIDITY as VALIDITY
from .epoch import DispatchEpoch as DispatchEpoch
from .epoch import advance_epoch as advance_epoch
from .epoch import gate_generation as gate_generation
from .epoch import resume_gates as resume_gates
from .epoch import suspend_gates as suspend_gates
from .gate_plan import GATE_KINDS as GATE_KINDS
from .gate_plan import GatePlan as GatePlan
from .gate_plan import GateRefusedError as GateRefusedError
from .gate_plan import gate_plan as gate_plan
from .guard import ArraySpec as ArraySpec
from .guard import Guard as Guard
from .guard import GuardKind as GuardKind
from .guard import ShapeRelation as ShapeRelation
from .guard_filter import GuardFilterEntry as GuardFilterEntry
from .guard_filter import GuardFilterFn as GuardFilterFn
from .guard_filter import filter_guards as filter_guards
from .guard_filter import keep_array_guards_unsafe as keep_array_guards_unsafe
from .guard_filter import skip_all_guards_unsafe as skip_all_guards_unsafe
from .guard_filter import skip_guard_on_globals_unsafe as skip_guard_on_globals_unsafe
from .guard_filter import split_guard_filter as split_guard_filter
from .reasons import RecompileReason as RecompileReason
from .reasons import constants_match as constants_match
from .reasons import guard_failure as guard_failure
from .shape_env import DataDependentGuard as DataDependentGuard
from .shape_env import LoopIndexGuard as LoopIndexGuard
from .shape_env import ShapeEnv as ShapeEnv
from .shape_env import is_size_symbol as is_size_symbol
from .source import AttrSource as AttrSource
from .source import ClosureSource as ClosureSource
from .source import ExpressionSource as ExpressionSource
from .source import FunctionSource as FunctionSource
from .source import GlobalSource as GlobalSource
from .source import ItemSource as ItemSource
from .source import LocalSource as LocalSource
from .source import Source as Source
from .source import StateSource as StateSource
from .symbolic import ShapeGuard as ShapeGuard
from .symbolic import SymInt as SymInt

if TYPE_CHECKING:
    __version__: str
else:

    def __getattr__(name: str) -> str:
        # `__version__` reads the installed metadata when first asked (see `distribution`).
        if name == "__version__":
            return distribution_version("numpile-guards")
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AffineRelation",
    "AffineSize",
    "NeedsSympy",
    "light_active",
    "light_sizes",
    "relation",
    "DataDependentGuard",
    "LoopIndexGuard",
    "ShapeEnv",
    "is_size_symbol",
    "ShapeGuard",
    "SymInt",
    "DEFAULT_SIZE_LIMIT",
    "EPOCH",
    "GATE_KINDS",
    "GatePlan",
    "GateRefusedError",
    "VALIDITY",
    "gate_generation",
    "gate_plan",
    "resume_gates",
    "suspend_gates",
    "CheckFn",
    "DispatchEpoch",
    "EntryParameters",
    "compile_entry",
    "fusable",
    "FetchFn",
    "ArraySpec",
    "AttrSource",
    "CacheEntry",
    "ClosureSource",
    "CodeCache",
    "ExpressionSource",
    "FunctionSource",
    "GlobalSource",
    "Guard",
    "GuardCheck",
    "GuardFilterEntry",
    "GuardFilterFn",
    "GuardKind",
    "ItemSource",
    "LocalSource",
    "RecompileReason",
    "ShapeRelation",
    "Source",
    "StateSource",
    "advance_epoch",
    "all_caches",
    "cache_for",
    "clear_caches",
    "compile_fetch",
    "compile_guards",
    "constants_match",
    "differentiating_guards",
    "filter_guards",
    "guard_failure",
    "keep_array_guards_unsafe",
    "order_guards",
    "skip_all_guards_unsafe",
    "skip_guard_on_globals_unsafe",
    "split_guard_filter",
]
