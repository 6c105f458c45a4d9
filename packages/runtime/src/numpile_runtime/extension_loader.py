"""Extension modules loaded by numpile's own loader, so that they can be unloaded.

CPython's import machinery never `dlclose`s an extension module (and keeps its module
definition in a process-wide table), so every graph numpile ever loaded would stay mapped
for the life of the process (five mappings each: a process that compiles tens of thousands
of graphs reaches `vm.max_map_count`). On Linux, `open_extension` loads a single-phase
extension itself: `dlopen` (`RTLD_LOCAL`), then its `PyInit_<name>` through ctypes with the
GIL held. A weak reference watches the module; once it is gone (every function of a module
holds the module, so nothing can still call into the library), `close_unused` calls the
library's `numpile_release` (when it has one: it drops the Python objects its static
variables hold) and `dlclose`s it. Closing happens later, never inside the module's
deallocation, which still reads the module definition that lives in the library.

The OpenMP runtime (and glibc's vector math library) a kernel library pulls in are pinned
the first time they appear: unloading libgomp while its worker threads sleep in it would
crash the process.

    >>> module = open_extension(path, "numpile_graph_0123")  # doctest: +SKIP
    >>> del module  # doctest: +SKIP
    >>> close_unused()  # doctest: +SKIP
    1
"""

from __future__ import annotations

import ctypes
import gc
import os
import sys
import types
import weakref
from collections.abc import Callable

import attrs

from .locks import new_lock

__all__ = ["can_unload", "close_unused", "open_extension", "open_library_count"]

_dlclose: Callable[[int], None] | None
try:
    from _ctypes import dlclose as _dlclose
except ImportError:  # not POSIX
    _dlclose = None

# Libraries a kernel may pull in that must never be unloaded again (see the docstring).
_PINNED_NAMES = ("libgomp", "libomp", "libiomp", "libmvec")


@attrs.frozen
class _Open:
    handle: int
    path: str


# NOTE: the libraries open for live modules, by the weak reference that watches each module;
# `_DEAD` receives the references of modules that died (`list.append` as the weak reference
# callback: C code, so a module's deallocation runs no Python and cannot switch threads).
_OPEN: dict[weakref.ref[types.ModuleType], _Open] = {}
_DEAD: list[weakref.ref[types.ModuleType]] = []
_PER_PATH: dict[str, int] = {}
_PINNED: dict[str, ctypes.CDLL] = {}
_LOCK = new_lock()


def can_unload() -> bool:
    """Whether this platform loads extensions with numpile's loader (Linux with dlclose).

    >>> isinstance(can_unload(), bool)
    True
    """
    return _dlclose is not None and sys.platform.startswith("linux")


def open_extension(path: str | os.PathLike[str], module_name: str) -> types.ModuleType:
    """Load the single-phase extension at `path` (its `PyInit_<module_name>`) with `dlopen`.

    Raises `ImportError` when the library has no such init function or it fails.

        >>> open_extension(path, "numpile_graph_0123").__name__  # doctest: +SKIP
        'numpile_graph_0123'
    """
    close_unused(collect=False)
    where = os.fspath(path)
    try:
        library = ctypes.PyDLL(where, mode=os.RTLD_NOW | os.RTLD_LOCAL)
    except OSError as error:
        raise ImportError(f"cannot load {where}: {error}", path=where) from error
    handle = int(library._handle)
    try:
        init = getattr(library, f"PyInit_{module_name}")
        init.restype = ctypes.py_object
        init.argtypes = []
        module = init()
        if not isinstance(module, types.ModuleType):
            raise ImportError(f"{where} is no single-phase extension module", path=where)
    except BaseException:
        _close_handle(handle)
        raise
    module.__file__ = where
    with _LOCK:
        _OPEN[weakref.ref(module, _DEAD.append)] = _Open(handle, where)
        _PER_PATH[where] = _PER_PATH.get(where, 0) + 1
    _pin_runtime_libraries()
    return module


def close_unused(*, collect: bool = True) -> int:
    """Unload the libraries of modules that died; how many were closed.

    `collect` runs the garbage collector first (a module and its functions form a cycle)
    when a library is open: with none, there is nothing a collection could free for it
    (a full collection of a large heap takes 0.2 s, and `numpile.reset()` lands here).

        >>> close_unused() >= 0
        True
    """
    if collect and open_library_count():
        gc.collect()
    closed = 0
    while True:
        with _LOCK:
            if not _DEAD:
                return closed
            entry = _OPEN.pop(_DEAD.pop(), None)
            if entry is None:
                continue
            left = _PER_PATH[entry.path] - 1
            if left:
                _PER_PATH[entry.path] = left
            else:
                del _PER_PATH[entry.path]
        if not left:
            _release(entry.handle)  # outside the lock: it may run destructors
        _close_handle(entry.handle)
        closed += 1


def open_library_count() -> int:
    """How many libraries `open_extension` holds open now (live modules, or dead ones
    `close_unused` has not closed yet).

    >>> open_library_count() >= 0
    True
    """
    with _LOCK:
        return len(_OPEN)


def _release(handle: int) -> None:
    # The library's own cleanup of the Python objects its statics hold (externs, the pool).
    library = ctypes.PyDLL("", handle=handle)
    try:
        release = library.numpile_release
    except AttributeError:
        return
    release.restype = None
    release.argtypes = []
    release()


def _close_handle(handle: int) -> None:
    if _dlclose is not None:
        _dlclose(handle)


def _pin_runtime_libraries() -> None:
    # Linux: load once more (and never close) the OpenMP runtime and libmvec once they are
    # mapped, so that closing the last kernel library never unloads them.
    if len(_PINNED) >= 2 or not sys.platform.startswith("linux"):
        return
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            paths = {line.split()[-1] for line in maps if ".so" in line}
    except OSError:
        return
    for path in paths:
        name = os.path.basename(path)
        if name.startswith(_PINNED_NAMES) and path not in _PINNED:
            try:
                _PINNED[path] = ctypes.CDLL(path)
            except OSError:
                continue
