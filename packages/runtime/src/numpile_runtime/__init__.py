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
from .code_cache import CodeCache as CodeCache
from .code_cache import cache_key as cache_key
from .code_cache import default_cache as default_cache
from .code_cache import set_cache_dir as set_cache_dir
from .metrics import compile_time_calls as compile_time_calls
from .metrics import compile_times as compile_times
from .metrics import count as count
from .metrics import counters as counters
from .metrics import reset_compile_times as reset_compile_times
from .metrics import reset_counters as reset_counters
from .metrics import timed as timed
from .toolchain import CompilerNotFoundError as CompilerNotFoundError
from .toolchain import Toolchain as Toolchain
from .toolchain import find_toolchain as find_toolchain

__version__ = "0.1.0"

__all__ = [
    "BuildError",
    "BuildJob",
    "CodeCache",
    "CompilerNotFoundError",
    "Toolchain",
    "build_extension",
    "build_library",
    "build_many",
    "cache_key",
    "compile_extension",
    "compile_library",
    "compile_many",
    "compile_time_calls",
    "compile_times",
    "count",
    "counters",
    "default_cache",
    "find_toolchain",
    "load_extension",
    "load_library",
    "reset_compile_times",
    "reset_counters",
    "set_cache_dir",
    "timed",
]
