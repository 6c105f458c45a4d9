"""Precompiled headers: the text every translation unit of a build job starts with, parsed once.

A generated module includes Python.h, NumPy's headers, OpenMP's and a few hundred lines of
helpers: GCC spends a fifth of a small module's compile parsing them. A job that names
that text as its `header` (`BuildJob.header`) gets it precompiled once per cache folder,
compiler and flags (a `.gch` file in the code cache, under the cache's file lock, with its
checksum) and every unit is compiled with `-include` of it. GCC reads the `.gch` beside the
header when it fits the command, and the header's text when it does not: a refused,
mismatched or missing precompiled header costs time, never a wrong result.

    >>> key = header_key(("cc", "-O3"), "c", "#include <math.h>\\n")
    >>> len(key)
    64

A build never waits for a precompiled header: a job compiled before it is ready includes the
plain text, and `start_precompile` queues it (`build_queue`) for the builds after. A layer
that knows the header its first build will name queues it before that build is asked for
(`numpile_runtime.builder.prepare_header`), so that even a fresh cache folder's first build
finds it ready.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
from collections.abc import Sequence
from pathlib import Path

from .build_queue import queue_build
from .code_cache import CodeCache, cache_key
from .locks import at_fork_reset, new_lock
from .metrics import count, timed

__all__ = [
    "header_key",
    "plain_header",
    "precompile",
    "precompiled_exists",
    "ready_header",
    "remove_precompiled",
    "start_precompile",
]

log = logging.getLogger("numpile.runtime.build")

_KIND = "pch"
_PLAIN_KIND = "cpp"
_LANGUAGE = {"c": "c-header", "c++": "c++-header"}
# Bump when how a header is precompiled changes: old entries are ignored.
_VERSION = "1"
_TIMEOUT_S = 300

# NOTE: process-wide memo of precompiled headers, by cache folder and key: the header path
# checked beside a `.gch` whose checksum matched (a build checks 17 MB once per process, not
# once per module); and the keys the compiler refused to precompile (not asked again).
_READY: dict[tuple[Path, str], Path] = {}
_REFUSED: set[tuple[Path, str]] = set()
_LOCK = new_lock()


def _forget() -> None:
    _READY.clear()
    _REFUSED.clear()


at_fork_reset(_forget)


def header_key(command: Sequence[str], language: str, header: str) -> str:
    """The cache key of `header` precompiled by `command` (the compiler and every flag).

    >>> header_key(("cc",), "c", "x") != header_key(("cc", "-O1"), "c", "x")
    True
    """
    return cache_key("numpile-pch", _VERSION, language, "\0".join(command), header)


def ready_header(cache: CodeCache, key: str) -> Path | None:
    """The path to `-include` for `key`'s header when its precompiled copy is built and whole,
    else None (then include `plain_header`).

    >>> import tempfile
    >>> ready_header(CodeCache(tempfile.mkdtemp()), "ab12") is None
    True
    """
    memo = (cache.root, key)
    with _LOCK:
        path = _READY.get(memo)
    if path is not None:
        if _gch(path).exists():
            return path
        with _LOCK:
            _READY.pop(memo, None)  # removed by a cache sweep: look again
    if cache.get_artifact(key, ".h.gch", kind=_KIND) is None:
        return None
    path = cache.artifact_path(key, ".h", kind=_KIND)
    if not path.exists():
        return None
    with _LOCK:
        _READY[memo] = path
    return path


def precompiled_exists(cache: CodeCache, key: str) -> bool:
    """Whether `key`'s precompiled header has a file in the cache (unchecked: a build that
    includes it checks it whole, `ready_header`).

    >>> import tempfile
    >>> precompiled_exists(CodeCache(tempfile.mkdtemp()), "ab12")
    False
    """
    return cache.artifact_path(key, ".h.gch", kind=_KIND).exists()


def plain_header(cache: CodeCache, key: str, header: str) -> Path:
    """`header` written where no precompiled copy lies beside it; its path.

    >>> import tempfile
    >>> plain_header(CodeCache(tempfile.mkdtemp()), "ab12", "int x;").name
    'ab12.h'
    """
    path = cache.artifact_path(key, ".h", kind=_PLAIN_KIND)
    try:
        if path.read_text() == header:
            return path
    except (OSError, UnicodeDecodeError):
        pass
    return cache.write_text(key, ".h", header, kind=_PLAIN_KIND)


def precompile(
    cache: CodeCache, key: str, command: Sequence[str], language: str, header: str
) -> Path | None:
    """Build `key`'s precompiled header (once: under the cache's lock, and not again in this
    process once the compiler refused it); the header path beside it, or None.

    >>> import tempfile
    >>> cache = CodeCache(tempfile.mkdtemp())
    >>> command = ("cc", "-O1", "-fPIC")
    >>> key = header_key(command, "c", "#include <math.h>\\n")
    >>> precompile(cache, key, command, "c", "#include <math.h>\\n").name == key + ".h"
    True
    """
    found = ready_header(cache, key)
    memo = (cache.root, key)
    if found is not None or memo in _REFUSED:
        return found
    from .builder import run_compiler  # late: the builder imports this module

    with cache.lock(key, kind=_KIND):
        found = ready_header(cache, key)
        if found is not None:
            return found
        if cache.artifact_path(key, ".h.gch", kind=_KIND).exists():
            count("pch_corrupt")
            log.warning("precompiled header %s failed its checksum; building it again", key)
        path = cache.write_text(key, ".h", header, kind=_KIND)
        output = cache.temp_path(key, ".h.gch", kind=_KIND)
        compile_command = [*command, "-x", _LANGUAGE[language], str(path), "-o", str(output)]
        count("compiler_invocation")
        try:
            with timed("pch_build"):
                done = run_compiler(compile_command, _TIMEOUT_S)
        except BaseException:
            output.unlink(missing_ok=True)
            raise
        if done.returncode != 0 or not output.exists() or output.stat().st_size == 0:
            output.unlink(missing_ok=True)
            count("pch_refused")
            log.debug("the compiler did not precompile %s: %s", path, done.stderr[-2000:])
            with _LOCK:
                _REFUSED.add(memo)
            return None
        cache.put_artifact(key, ".h.gch", output, kind=_KIND, meta={"command": compile_command})
        count("pch_build")
    with _LOCK:
        _READY[memo] = path
    return path


def start_precompile(
    cache: CodeCache, key: str, command: Sequence[str], language: str, header: str
) -> None:
    """Queue `precompile` on the build queue, unless its header is ready or on its way.

    >>> import tempfile
    >>> start_precompile(CodeCache(tempfile.mkdtemp()), "ab12", ("true",), "c", "")
    """
    memo = (cache.root, key)
    with _LOCK:
        if memo in _READY or memo in _REFUSED:
            return
    build = functools.partial(precompile, cache, key, command, language, header)
    queue_build(f"precompiled header {key[:16]} in {cache.root}", build)


def _gch(header: Path) -> Path:
    return header.with_name(header.name + ".gch")


def remove_precompiled(cache: CodeCache, key: str) -> None:
    """Delete `key`'s precompiled header from the cache (it made the compiler fail).

    >>> import tempfile
    >>> remove_precompiled(CodeCache(tempfile.mkdtemp()), "ab12")
    """
    with _LOCK:
        _READY.pop((cache.root, key), None)
    path = cache.artifact_path(key, ".h.gch", kind=_KIND)
    with cache.lock(key, kind=_KIND), contextlib.suppress(OSError):
        os.unlink(path)
