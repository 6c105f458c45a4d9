"""numpile_capture: the graph IR, the canonical op set, and bytecode capture."""

from typing import TYPE_CHECKING

from numpile_runtime import distribution_version

from . import ops as ops
from .backends import PREFERRED_BACKENDS as PREFERRED_BACKENDS
from .backends import BackendCompileError as BackendCompileError
from .backends import InvalidBackendError as InvalidBackendError
from .backends import default_backend as default_backend
from .backends import eager as eager
from .backends import list_backends as list_backends
from .backends import lookup_backend as lookup_backend
from .backends import preferred_backend as preferred_backend
from .backends import register_backend as register_backend
from .backends import register_backend_path as register_backend_path
from .body_graph import written_inputs as written_inputs
from .bound_origins import OriginVar as OriginVar
from .capture_result import CaptureResult as CaptureResult
from .capture_result import Unsupported as Unsupported
from .compiling import is_compiling as is_compiling
from .compiling import is_dynamo_compiling as is_dynamo_compiling
from .compiling import is_exporting as is_exporting
from .config import CaptureConfig as CaptureConfig
from .config import config as config
from .control_flow import add_loop as add_loop
from .control_flow import body_runner as body_runner
from .control_flow import has_loops as has_loops
from .control_flow import is_loop as is_loop
from .control_flow import is_while_loop as is_while_loop
from .control_flow import set_body_runner as set_body_runner
from .control_flow import set_loop_runner as set_loop_runner
from .control_flow import set_while_runner as set_while_runner
from .dispatch import CaptureFallbackWarning as CaptureFallbackWarning
from .dispatch import CompiledFunction as CompiledFunction
from .dispatch import InternalCompilerError as InternalCompilerError
from .dispatch import reset as reset
from .dynamic_shapes import mark_dynamic as mark_dynamic
from .dynamic_shapes import mark_static as mark_static
from .eager_tier import NotCompiledYet as NotCompiledYet
from .eager_tier import offer_eager_tier as offer_eager_tier
from .entry_objects import computes_unless_ran as computes_unless_ran
from .entry_objects import may_hold_entry as may_hold_entry
from .entry_objects import own_entry_results as own_entry_results
from .entry_point import compile_function as compile_function
from .explain import BreakReason as BreakReason
from .explain import ExplainOutput as ExplainOutput
from .explain import explain as explain
from .fallbacks import NumpilePerformanceWarning as NumpilePerformanceWarning
from .graph import Graph as Graph
from .graph import Node as Node
from .graph import gives_scalar as gives_scalar
from .graph import writeable as writeable
from .graph_sizes import has_light_sizes as has_light_sizes
from .graph_sizes import sympy_sizes as sympy_sizes
from .interpreter import run_graph as run_graph
from .loop_index import is_loop_symbol as is_loop_symbol
from .loop_index import mentions_loop_symbol as mentions_loop_symbol
from .loop_tiers import C_KERNEL_LOOP as C_KERNEL_LOOP
from .loop_tiers import C_LOOP as C_LOOP
from .loop_tiers import DEVICE_PROGRAM as DEVICE_PROGRAM
from .loop_tiers import FIRST_ITERATION_APART as FIRST_ITERATION_APART
from .loop_tiers import HOST_LOOP as HOST_LOOP
from .loop_tiers import NUMPY_AT_RUN_TIME as NUMPY_AT_RUN_TIME
from .loop_tiers import NUMPY_RERUN as NUMPY_RERUN
from .loop_tiers import OP_BY_OP as OP_BY_OP
from .loop_tiers import LoopTier as LoopTier
from .loop_tiers import collecting_loop_tiers as collecting_loop_tiers
from .loop_tiers import compiles_synchronously as compiles_synchronously
from .loop_tiers import merged_loop_tiers as merged_loop_tiers
from .loop_tiers import record_loop_tier as record_loop_tier
from .loop_tiers import synchronous_compiles as synchronous_compiles
from .meta import ArrayMeta as ArrayMeta
from .meta import ScalarMeta as ScalarMeta
from .meta import contiguous_strides as contiguous_strides
from .meta import k_order_axes as k_order_axes
from .meta import meta_of as meta_of
from .numpy_wrapper import wrap_numpy as wrap_numpy
from .op import Op as Op
from .op import OpKind as OpKind
from .op import RaisesWhen as RaisesWhen
from .op import all_ops as all_ops
from .op import get_op as get_op
from .op import register_op as register_op
from .ops.extern import ExternRow as ExternRow
from .ops.extern import ExternState as ExternState
from .ops.extern import extern_row as extern_row
from .ops.extern import extern_rows as extern_rows
from .ops.extern import register_extern as register_extern
from .ops.indexing import IndexArray as IndexArray
from .ops.loop_values import ScalarSlot as ScalarSlot
from .own_entries import flagged_reads as flagged_reads
from .profiler import CompileProfiler as CompileProfiler
from .profiler import compile_times as compile_times
from .pytree import TreeSpec as TreeSpec
from .pytree import broadcast_prefix as broadcast_prefix
from .pytree import tree_flatten as tree_flatten
from .pytree import tree_map as tree_map
from .pytree import tree_unflatten as tree_unflatten
from .source_line import SourceLine as SourceLine
from .stance import current_stance as current_stance
from .stance import set_stance as set_stance
from .trace_rules import ForbiddenCallError as ForbiddenCallError
from .trace_rules import TransformCall as TransformCall
from .trace_rules import allow_in_graph as allow_in_graph
from .trace_rules import allowed_op as allowed_op
from .trace_rules import allowed_op_named as allowed_op_named
from .trace_rules import disable as disable
from .trace_rules import disallow_in_graph as disallow_in_graph
from .trace_rules import graph_break as graph_break
from .trace_rules import register_transform as register_transform
from .trace_rules import substitute_in_graph as substitute_in_graph
from .tracer import capture_function as capture_function
from .variables import ScalarInputVar as ScalarInputVar

if TYPE_CHECKING:
    __version__: str
else:

    def __getattr__(name: str) -> str:
        # `__version__` reads the installed metadata when first asked (see `distribution`).
        if name == "__version__":
            return distribution_version("numpile-capture")
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "add_loop",
    "body_runner",
    "computes_unless_ran",
    "has_loops",
    "is_loop",
    "is_loop_symbol",
    "is_while_loop",
    "may_hold_entry",
    "own_entry_results",
    "flagged_reads",
    "written_inputs",
    "mentions_loop_symbol",
    "ScalarSlot",
    "set_body_runner",
    "set_loop_runner",
    "set_while_runner",
    "mark_dynamic",
    "mark_static",
    "ArrayMeta",
    "Graph",
    "has_light_sizes",
    "sympy_sizes",
    "Node",
    "gives_scalar",
    "writeable",
    "Op",
    "OpKind",
    "RaisesWhen",
    "ScalarMeta",
    "ScalarInputVar",
    "OriginVar",
    "SourceLine",
    "TreeSpec",
    "all_ops",
    "broadcast_prefix",
    "ExternRow",
    "ExternState",
    "extern_row",
    "extern_rows",
    "register_extern",
    "contiguous_strides",
    "k_order_axes",
    "get_op",
    "meta_of",
    "register_op",
    "run_graph",
    "tree_flatten",
    "tree_map",
    "tree_unflatten",
    "BackendCompileError",
    "InvalidBackendError",
    "PREFERRED_BACKENDS",
    "default_backend",
    "eager",
    "list_backends",
    "lookup_backend",
    "preferred_backend",
    "register_backend",
    "register_backend_path",
    "CaptureResult",
    "Unsupported",
    "CaptureConfig",
    "config",
    "CaptureFallbackWarning",
    "NotCompiledYet",
    "offer_eager_tier",
    "NumpilePerformanceWarning",
    "CompiledFunction",
    "InternalCompilerError",
    "compile_function",
    "reset",
    "current_stance",
    "set_stance",
    "is_compiling",
    "is_dynamo_compiling",
    "is_exporting",
    "wrap_numpy",
    "ForbiddenCallError",
    "capture_function",
    "BreakReason",
    "ExplainOutput",
    "explain",
    "C_KERNEL_LOOP",
    "C_LOOP",
    "DEVICE_PROGRAM",
    "FIRST_ITERATION_APART",
    "HOST_LOOP",
    "NUMPY_AT_RUN_TIME",
    "NUMPY_RERUN",
    "OP_BY_OP",
    "LoopTier",
    "collecting_loop_tiers",
    "compiles_synchronously",
    "merged_loop_tiers",
    "record_loop_tier",
    "synchronous_compiles",
    "CompileProfiler",
    "compile_times",
    "allow_in_graph",
    "allowed_op",
    "allowed_op_named",
    "disable",
    "disallow_in_graph",
    "graph_break",
    "TransformCall",
    "register_transform",
    "substitute_in_graph",
]
