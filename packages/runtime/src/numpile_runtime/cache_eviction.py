"""Cache eviction: the size cap, least-recently-used order, and entries of older versions.

An entry is every file of one key in one folder (`<key>.so`, its sidecar, its
source, its lock) or one blob. Readers touch an entry on each hit, so its newest
modification time is its last use. `sweep` removes entries in that order until
the cache is under its low-water mark, and entries written by another numpile
version first.

Safety under concurrent processes (see `CodeCache.reading`):

- A file-locked entry is skipped: a writer holds its lock exclusively while it
  builds, a reader holds it shared while it checks and loads a shared object;
  the sweep only takes it with a non-blocking exclusive lock.
- Files whose name starts with "." are writes in progress (temporary names
  before their atomic rename): skipped unless older than an hour (a dead writer).

    >>> import tempfile
    >>> sweep(Path(tempfile.mkdtemp()), max_bytes=1, stale_before=None).removed_bytes
    0
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path

import attrs

__all__ = ["CacheUsage", "Entry", "SweepResult", "entries", "lock_exclusive_nowait", "sweep"]

log = logging.getLogger("numpile.runtime.cache")

# A dot-file older than this was left by a writer that died before its rename.
_ABANDONED_TEMP_S = 3600.0
# Eviction frees down to this fraction of the cap, so the next writes do not sweep again.
_LOW_WATER = 0.8


@attrs.frozen
class Entry:
    """The files of one key in one folder, their total size and last use.

    >>> Entry("cpp", (), 0, 0.0, False).size
    0
    """

    kind: str
    files: tuple[Path, ...]
    size: int
    last_use: float
    writing: bool

    @property
    def lock_file(self) -> Path | None:
        """The entry's lock file, if it has one (artifacts do, blobs do not)."""
        return next((path for path in self.files if path.suffix == ".lock"), None)


@attrs.frozen
class CacheUsage:
    """What a cache folder holds: bytes and entries, in total and per kind.

    >>> CacheUsage(0, 0, {}).size_bytes
    0
    """

    size_bytes: int
    entry_count: int
    by_kind: dict[str, int]


@attrs.frozen
class SweepResult:
    """What one sweep did: entries and bytes removed, and the size left.

    >>> SweepResult(0, 0, 0, 0).removed_entries
    0
    """

    removed_entries: int
    removed_bytes: int
    skipped_in_use: int
    size_after: int


def entries(root: Path) -> list[Entry]:
    """Every entry under `root` (kinds are its sub-folders; files at the top are not entries).

    >>> import tempfile
    >>> entries(Path(tempfile.mkdtemp()))
    []
    """
    now = time.time()
    found: list[Entry] = []
    for kind_dir in _subdirs(root):
        for leaf in _subdirs(kind_dir):
            groups: dict[str, list[tuple[Path, os.stat_result]]] = {}
            for item in _files(leaf):
                key = item.name.lstrip(".").split(".", 1)[0]
                try:
                    stat = item.stat()
                except FileNotFoundError:  # removed by another process since the listing
                    continue
                groups.setdefault(key, []).append((Path(item.path), stat))
            for files in groups.values():
                writing = any(
                    path.name.startswith(".") and now - stat.st_mtime < _ABANDONED_TEMP_S
                    for path, stat in files
                )
                found.append(
                    Entry(
                        kind_dir.name,
                        tuple(path for path, _ in files),
                        sum(stat.st_size for _, stat in files),
                        max(stat.st_mtime for _, stat in files),
                        writing,
                    )
                )
    return found


def usage(root: Path) -> CacheUsage:
    """Bytes and entries under `root`, per kind.

    >>> import tempfile
    >>> usage(Path(tempfile.mkdtemp())).entry_count
    0
    """
    by_kind: dict[str, int] = {}
    listed = entries(root)
    for entry in listed:
        by_kind[entry.kind] = by_kind.get(entry.kind, 0) + entry.size
    return CacheUsage(sum(by_kind.values()), len(listed), by_kind)


def sweep(root: Path, *, max_bytes: int, stale_before: float | None) -> SweepResult:
    """Remove entries last used before `stale_before` (None: none), then least recently used
    ones until the cache holds at most 80 % of `max_bytes`; locked entries are skipped.

        >>> import tempfile
        >>> sweep(Path(tempfile.mkdtemp()), max_bytes=10, stale_before=0.0).size_after
        0
    """
    listed = sorted(entries(root), key=lambda entry: entry.last_use)
    total = sum(entry.size for entry in listed)
    target = int(max_bytes * _LOW_WATER) if total > max_bytes else total
    removed = removed_bytes = skipped = 0
    for entry in listed:
        stale = stale_before is not None and entry.last_use < stale_before
        if not stale and total <= target:
            continue
        if entry.writing or not _remove(entry):
            skipped += 1
            continue
        removed += 1
        removed_bytes += entry.size
        total -= entry.size
    if removed:
        log.info("cache sweep of %s: removed %d entries, %d bytes", root, removed, removed_bytes)
    return SweepResult(removed, removed_bytes, skipped, total)


@contextlib.contextmanager
def lock_exclusive_nowait(path: Path) -> Iterator[bool]:
    """Try to lock `path` exclusively without waiting; yields whether it is held.

    Where file locks do not exist (not POSIX), yields True.

        >>> import tempfile
        >>> with lock_exclusive_nowait(Path(tempfile.mkdtemp()) / "k.lock") as held:
        ...     held
        True
    """
    try:
        import fcntl
    except ImportError:  # Windows: no advisory locks; the sweep trusts the recency check
        yield True
        return
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        yield False
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _remove(entry: Entry) -> bool:
    lock_file = entry.lock_file
    if lock_file is None:
        _unlink_all(entry.files)
        return True
    with lock_exclusive_nowait(lock_file) as held:
        if not held:
            return False
        # Touched after it was listed: a reader used it just now; keep it.
        if any(_mtime(path) > entry.last_use for path in entry.files if path != lock_file):
            return False
        # NOTE: the lock file goes last: a process that opens it after the unlink locks a new
        # file, which at worst builds the key twice (both writes are atomic renames).
        _unlink_all([path for path in entry.files if path != lock_file])
        _unlink_all([lock_file])
    return True


def _unlink_all(paths: list[Path] | tuple[Path, ...]) -> None:
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return 0.0


def _subdirs(folder: Path) -> list[Path]:
    try:
        with os.scandir(folder) as items:
            return [Path(item.path) for item in items if item.is_dir(follow_symlinks=False)]
    except (FileNotFoundError, NotADirectoryError):
        return []


def _files(folder: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as items:
            return [item for item in items if item.is_file(follow_symlinks=False)]
    except FileNotFoundError:
        return []
