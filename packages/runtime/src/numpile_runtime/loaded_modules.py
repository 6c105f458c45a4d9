"""The memo of loaded extension modules: one per build key, a bounded number loaded at once.

`build_many` asks the memo before it loads a built module and records what it loaded. The
memo holds the most recently used modules, at most the bound (`NUMPILE_MAX_LOADED_MODULES`,
default 1024; `set_max_loaded_modules`), and finds modules still alive elsewhere through a
weak map, so one library is never loaded twice while in use. A module the memo drops is
unloaded once nothing else holds it (`extension_loader`).

The bound holds for modules in use too. A user of a module can let the memo unload it while
the module is still in use (`make_evictable`): when that module is the least recently used
one past the bound, the memo calls the user's `evict` callback, which drops every reference
the user holds to the module (a compiled graph swaps the callable it holds for a stub that
loads the module again on its next call), then collects and unloads what died. "Used" means
loaded, found in the memo or made evictable: calls into a module are not counted, so a call
pays nothing for the bound. Evicting module after module one collection each would cost a
full garbage collection per load in a process that rotates through more modules than the
bound: past the bound, an eviction drops an eighth of the bound at once.

A thread inside a module's function holds the module (the running call holds the function
object, which holds its module), so a library is never closed under a running call: it is
closed after the call returns and the module dies.

Only where numpile unloads libraries (Linux, `can_unload`) are modules in use evicted;
elsewhere the memo drops them and their users keep them loaded: no unloading, no error.

    >>> previous = set_max_loaded_modules(64)
    >>> set_max_loaded_modules(previous)
    64
"""

from __future__ import annotations

import collections
import ctypes
import os
import types
import weakref
from collections.abc import Callable

from .extension_loader import can_unload, close_unused
from .locks import new_lock
from .metrics import count

__all__ = ["make_evictable", "release_modules", "set_max_loaded_modules"]

# NOTE: the memo. `_LOADED` holds the most recently used modules by build key, in order of
# use (least recent first), at most `_MAX_LOADED[0]`; `_LOADED_WEAK` finds any that is alive
# elsewhere; `_KEYS` is the key of each memoized module. The eviction callbacks of a module
# live in its own namespace (`_EVICT`), so that they die with it (a callback holds what
# holds the module). ctypes libraries (the debug path) are kept for the life of the process.
_LOADED: collections.OrderedDict[str, types.ModuleType] = collections.OrderedDict()
_LOADED_WEAK: weakref.WeakValueDictionary[str, types.ModuleType] = weakref.WeakValueDictionary()
_KEYS: weakref.WeakKeyDictionary[types.ModuleType, str] = weakref.WeakKeyDictionary()
_LIBRARIES: dict[str, ctypes.CDLL] = {}
_LOCK = new_lock()
_MAX_LOADED = [int(os.environ.get("NUMPILE_MAX_LOADED_MODULES") or 1024)]
_EVICT = "numpile_evict"


def memo_get(key: str) -> types.ModuleType | ctypes.CDLL | None:
    """The loaded module (or library) of `key`, now the most recently used; None if none.

    >>> memo_get("no such key") is None
    True
    """
    with _LOCK:
        if key in _LIBRARIES:
            return _LIBRARIES[key]
        module = _LOADED.get(key)
        if module is not None:
            _LOADED.move_to_end(key)
            return module
        module = _LOADED_WEAK.get(key)
        if module is not None:
            _hold(key, module)
        return module


def memo_put(key: str, loaded: types.ModuleType | ctypes.CDLL) -> types.ModuleType | ctypes.CDLL:
    """Record `loaded` under `key`; the memoized object (the first one, when two threads
    loaded it at once). The caller calls `trim()` after (outside its locks).

        >>> memo_put(key, module) is module  # doctest: +SKIP
        True
    """
    with _LOCK:
        if isinstance(loaded, ctypes.CDLL):
            return _LIBRARIES.setdefault(key, loaded)
        module = _LOADED_WEAK.setdefault(key, loaded)
        _hold(key, module)
        return module


def make_evictable(module: types.ModuleType, evict: Callable[[], None]) -> None:
    """Let the memo unload `module` while it is in use: past the bound, when `module` is the
    least recently used, `evict()` runs and must drop every reference its caller holds to
    the module (it may run in any thread, holding no lock). `module` becomes the most
    recently used. A module the memo did not load, or a platform that never unloads
    (`can_unload`), makes this a no-op: the module stays loaded while used.

        >>> make_evictable(module, swap_in_a_reloading_stub)  # doctest: +SKIP
    """
    if not can_unload():
        return
    with _LOCK:
        key = _KEYS.get(module)
        if key is None:
            return
        callbacks: list[Callable[[], None]] = vars(module).setdefault(_EVICT, [])
        if not any(callback is evict for callback in callbacks):
            callbacks.append(evict)
        _hold(key, module)
    trim()


def trim() -> int:
    """Drop the least recently used modules past the bound (running the eviction callbacks
    of those in use, then unloading what died); how many eviction callbacks ran.

        >>> trim() >= 0
        True
    """
    callbacks = _pop_least_recent()
    for evict in callbacks:  # outside the lock: a callback may take its own
        evict()
    if callbacks:
        count("module_evicted", len(callbacks))
        close_unused()
    return len(callbacks)


def _pop_least_recent() -> list[Callable[[], None]]:
    # Past the bound: drop down to it, and when that evicts a module in use, an eighth of
    # the bound more (one collection then serves that many loads); the eviction callbacks
    # of the modules in use dropped. (A function of its own: no variable of the caller's
    # may still hold a dropped module while the collection runs.)
    callbacks: list[Callable[[], None]] = []
    with _LOCK:
        bound = _MAX_LOADED[0]
        evicting = False
        while len(_LOADED) > (bound - bound // 8 if evicting else bound):
            _, module = _LOADED.popitem(last=False)
            found = vars(module).pop(_EVICT, None) if can_unload() else None
            if found:
                callbacks.extend(found)
                evicting = True
    return callbacks


def set_max_loaded_modules(count: int) -> int:
    """Keep at most `count` modules loaded (least recently used unloaded first;
    `NUMPILE_MAX_LOADED_MODULES`, default 1024); the previous bound.

    Modules in use that their users made evictable (compiled graphs) are unloaded too and
    load again on their next use; others stay loaded while used and are unloaded once
    nothing uses them (`release_modules`, or the next load).

        >>> previous = set_max_loaded_modules(64)
        >>> set_max_loaded_modules(previous)
        64
    """
    if count < 0:
        raise ValueError(f"count must be >= 0, not {count}")
    with _LOCK:
        previous = _MAX_LOADED[0]
        _MAX_LOADED[0] = count
    trim()
    return previous


def release_modules() -> int:
    """Drop the memo's hold on loaded modules and unload every module nothing else uses
    (after a garbage collection); how many libraries were unloaded. Modules still in use
    that are evictable stay in the memo. `numpile.reset()` calls it.

        >>> release_modules() >= 0
        True
    """
    with _LOCK:
        _LOADED.clear()
    closed = close_unused()
    with _LOCK:
        for key, module in list(_LOADED_WEAK.items()):
            if vars(module).get(_EVICT):
                _hold(key, module)
    return closed


def _hold(key: str, module: types.ModuleType) -> None:
    # Under `_LOCK`: `module` is the memo's most recently used.
    _LOADED[key] = module
    _LOADED.move_to_end(key)
    _KEYS[module] = key
