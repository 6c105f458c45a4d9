"""numpile_runtime: the C/C++ toolchain, the on-disk code cache, kernel builds, timers.

The bottom layer of numpile. It knows nothing of graphs: it turns C or C++
source into loaded CPython extension modules (the fast call path) or ctypes
libraries, through a content-addressed on-disk cache that is safe under
concurrent processes, and it keeps per-stage compile timings.

    >>> import numpile_runtime as rt
    >>> rt.build_library("int answer(void) { return 42; }").answer()
    42
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .build_queue import IDLE_NICE as IDLE_NICE
from .build_queue import queue_build as queue_build
from .build_queue import queued_builds as queued_builds
from .build_queue import wait_for_queued_builds as wait_for_queued_builds
from .builder import BuildError as BuildError
from .builder import BuildJob as BuildJob
from .builder import build_extension as build_extension
from .builder import build_library as build_library
from .builder import build_many as build_many
from .builder import compile_extension as compile_extension
from .builder import compile_library as compile_library
from .builder import compile_many as compile_many
from .builder import load_extension as load_extension
from .builder import load_library as load_library
from .builder import prepare_header as prepare_header
from .cache_eviction import SweepResult as SweepResult
from .call_gate import GATE_ENV as GATE_ENV
from .call_gate import GATE_FORM as GATE_FORM
from .call_gate import gate_form as gate_form
from .call_gate import gate_module as gate_module
from .call_gate import gate_source as gate_source
from .call_gate import on_gate_loaded as on_gate_loaded
from .code_cache import CacheInfo as CacheInfo
from .code_cache import CodeCache as CodeCache
from .code_cache import cache_key as cache_key
from .code_cache import default_cache as default_cache
from .code_cache import set_cache_dir as set_cache_dir
from .collector_pause import collector_paused as collector_paused
from .core_claims import free_cores as free_cores
from .core_claims import usable_cores as usable_cores
from .cpu_blas import CpuBlas as CpuBlas
from .cpu_blas import cpu_blas_addresses as cpu_blas_addresses
from .cpu_blas import cpu_blas_dot_addresses as cpu_blas_dot_addresses
from .cpu_blas import cpu_blas_thread_addresses as cpu_blas_thread_addresses
from .cpu_blas import find_cpu_blas as find_cpu_blas
from .cublas_matmul import cublas_matmul as cublas_matmul
from .cuda_graph_capture import CapturedGraph as CapturedGraph
from .cuda_graph_capture import GraphCaptureError as GraphCaptureError
from .cuda_graph_capture import capture_graph as capture_graph
from .cuda_graphs import CudaGraphRunner as CudaGraphRunner
from .cuda_graphs import call_key as call_key
from .cuda_graphs import release_cuda_graphs as release_cuda_graphs
from .cuda_launch import KernelArg as KernelArg
from .cuda_launch import TritonStatus as TritonStatus
from .cuda_launch import cupy_available as cupy_available
from .cuda_launch import data_ptr as data_ptr
from .cuda_launch import interpreting as interpreting
from .cuda_launch import is_device_array as is_device_array
from .cuda_launch import kernel_arg as kernel_arg
from .cuda_launch import load_triton_module as load_triton_module
from .cuda_launch import triton_status as triton_status
from .cuda_launch import use_cupy_driver as use_cupy_driver
from .device_copy import DeviceCopy as DeviceCopy
from .device_copy import byte_extent as byte_extent
from .device_copy import download as download
from .device_copy import upload as upload
from .distribution import UNKNOWN_VERSION as UNKNOWN_VERSION
from .distribution import distribution_version as distribution_version
from .errstate_call import ERRSTATE_WORDS as ERRSTATE_WORDS
from .layer_config import LayerConfig as LayerConfig
from .loaded_modules import make_evictable as make_evictable
from .loaded_modules import release_modules as release_modules
from .loaded_modules import set_max_loaded_modules as set_max_loaded_modules
from .locks import at_fork_reset as at_fork_reset
from .locks import compile_owner as compile_owner
from .locks import compiling as compiling
from .locks import compiling_in_this_thread as compiling_in_this_thread
from .locks import new_lock as new_lock
from .locks import new_rlock as new_rlock
from .locks import numpile_code_only as numpile_code_only
from .logs import CHANNELS as LOG_CHANNELS
from .logs import _configure_from_env
from .logs import set_logs as set_logs
from .metrics import StageSpan as StageSpan
from .metrics import compile_time_calls as compile_time_calls
from .metrics import compile_times as compile_times
from .metrics import count as count
from .metrics import counters as counters
from .metrics import record_stage_spans as record_stage_spans
from .metrics import reset_compile_times as reset_compile_times
from .metrics import reset_counters as reset_counters
from .metrics import stage_spans as stage_spans
from .metrics import timed as timed
from .openmp import OPENMP_DEFAULTS as OPENMP_DEFAULTS
from .openmp import apply_openmp_defaults as apply_openmp_defaults
from .progress import compile_progress as compile_progress
from .scalar_slots import ScalarSlots as ScalarSlots
from .scalar_slots import slot_dtype as slot_dtype
from .source_fingerprint import source_fingerprint as source_fingerprint
from .toolchain import CompilerNotFoundError as CompilerNotFoundError
from .toolchain import Toolchain as Toolchain
from .toolchain import find_toolchain as find_toolchain
from .toolchain import known_toolchain as known_toolchain
from .toolchain import prepare_toolchain as prepare_toolchain
from .triton_launcher import TritonLauncher as TritonLauncher

if TYPE_CHECKING:
    __version__: str
else:

    def __getattr__(name: str) -> str:
        # `__version__` reads the installed metadata when first asked (see `distribution`).
        if name == "__version__":
            return distribution_version("numpile-runtime")
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


apply_openmp_defaults()
_configure_from_env()

__all__ = [
    "BuildError",
    "BuildJob",
    "CacheInfo",
    "CodeCache",
    "CompilerNotFoundError",
    "CpuBlas",
    "CapturedGraph",
    "CudaGraphRunner",
    "GraphCaptureError",
    "capture_graph",
    "call_key",
    "ScalarSlots",
    "slot_dtype",
    "release_cuda_graphs",
    "DeviceCopy",
    "KernelArg",
    "LOG_CHANNELS",
    "LayerConfig",
    "OPENMP_DEFAULTS",
    "Toolchain",
    "TritonLauncher",
    "StageSpan",
    "SweepResult",
    "TritonStatus",
    "UNKNOWN_VERSION",
    "apply_openmp_defaults",
    "at_fork_reset",
    "build_extension",
    "GATE_ENV",
    "IDLE_NICE",
    "GATE_FORM",
    "ERRSTATE_WORDS",
    "gate_form",
    "gate_module",
    "gate_source",
    "on_gate_loaded",
    "build_library",
    "build_many",
    "byte_extent",
    "cache_key",
    "collector_paused",
    "compile_extension",
    "compile_library",
    "compile_owner",
    "compile_many",
    "compile_progress",
    "compile_time_calls",
    "compiling",
    "compiling_in_this_thread",
    "compile_times",
    "count",
    "counters",
    "cpu_blas_addresses",
    "cpu_blas_dot_addresses",
    "cpu_blas_thread_addresses",
    "cublas_matmul",
    "cupy_available",
    "data_ptr",
    "default_cache",
    "distribution_version",
    "download",
    "find_cpu_blas",
    "find_toolchain",
    "free_cores",
    "known_toolchain",
    "interpreting",
    "is_device_array",
    "kernel_arg",
    "load_extension",
    "make_evictable",
    "release_modules",
    "set_max_loaded_modules",
    "load_library",
    "load_triton_module",
    "new_lock",
    "new_rlock",
    "numpile_code_only",
    "prepare_header",
    "prepare_toolchain",
    "queue_build",
    "queued_builds",
    "record_stage_spans",
    "reset_compile_times",
    "reset_counters",
    "set_cache_dir",
    "set_logs",
    "source_fingerprint",
    "stage_spans",
    "timed",
    "triton_status",
    "upload",
    "usable_cores",
    "use_cupy_driver",
    "wait_for_queued_builds",
]
