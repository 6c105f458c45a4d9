"""The on-disk code cache: content-addressed artifacts that survive the process.

Layout under the root (`NUMPILE_CACHE_DIR`, else the platform's user cache
folder for "numpile"):

    <root>/<kind>/<key[:2]>/<key><suffix>             an artifact (e.g. a .so)
    <root>/<kind>/<key[:2]>/<key><suffix>.meta.json   its size and sha256
    <root>/<kind>/<key[:2]>/<key>.lock                the file lock of the key
    <root>/blobs/<key[:2]>/<key>.bin                  bytes put by other layers
    <root>/VERSION                                    the numpile versions that last wrote
    <root>/usage.json                                 the size at the last sweep

Invariants:

- Every file is written to a temporary name in its final folder and moved
  into place with `os.replace`, so a reader never sees half a file.
- Writers of one key hold its file lock, so concurrent processes building
  the same kernel build it once; readers take no lock on the fast path.
- Every artifact and blob carries its checksum; a corrupt or truncated file
  reads as a miss (and is rebuilt by whoever asked), never as data.
- Folders numpile creates are private (0700, whatever the umask). A root not owned by
  this user, or writable by others, is refused with one `RuntimeWarning`: whoever can
  write the cache can run code in every process that uses it (`docs/security.md`).
- The cache holds at most `max_bytes` (`NUMPILE_CACHE_MAX_MB`, default 300 MB):
  a write that would pass it sweeps least recently used entries (hits touch
  their entry). After the first write of a process made by other numpile
  versions than the last writer's, the build queue removes the entries written
  before it, as idle work (they can no longer hit: keys hash the versions).
  Sweeps skip entries another process holds the lock of: one being built, or
  one being loaded (`reading`); see `cache_eviction`.

    >>> import tempfile
    >>> cache = CodeCache(tempfile.mkdtemp())
    >>> cache.put_bytes("graph-1", b"payload")
    >>> cache.get_bytes("graph-1")
    b'payload'
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import glob
import hashlib
import json
import logging
import os
import re
import shutil
import stat
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import platformdirs

from .build_queue import queue_build
from .cache_eviction import SweepResult, sweep, usage
from .locks import new_lock
from .metrics import count

if TYPE_CHECKING:
    import filelock

__all__ = ["CacheInfo", "CodeCache", "cache_key", "default_cache", "set_cache_dir"]

log = logging.getLogger("numpile.runtime.cache")

_KEY_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,199}")
_BLOB_MAGIC = b"numpile-blob-1"
# A compile holds a key's lock; waiting longer than this means a stuck peer.
_LOCK_TIMEOUT_S = 900.0
DEFAULT_MAX_BYTES = 300 * 1024 * 1024
# The size recorded in usage.json is trusted for this long after a sweep counted it.
_USAGE_FRESH_S = 600.0
# The distributions whose versions cache keys hash (the layers of numpile).
_DISTRIBUTIONS = (
    "numpile",
    "numpile-runtime",
    "numpile-guards",
    "numpile-capture",
    "numpile-autograd-aot",
    "numpile-inductor",
)


@attrs.frozen
class CacheInfo:
    """What `CodeCache.info()` reports: where the cache is, its size and its cap.

    >>> CacheInfo("/tmp/c", 0, 0, {}, 1, "").size_bytes
    0
    """

    root: str
    size_bytes: int
    entry_count: int
    by_kind: dict[str, int]
    max_bytes: int
    versions: str


def cache_key(*parts: str | bytes) -> str:
    """A sha256 hex key of `parts`, unambiguous about where each part ends.

    >>> cache_key("a", "bc") == cache_key("ab", "c")
    False
    >>> len(cache_key("source"))
    64
    """
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


class CodeCache:
    """A folder of content-addressed artifacts with atomic writes and checksums.

    `root=None` reads `NUMPILE_CACHE_DIR` now, else uses the user cache dir.
    A root that cannot be written falls back to a fresh temporary folder
    (removed at exit) with one `RuntimeWarning`.

        >>> import tempfile
        >>> cache = CodeCache(tempfile.mkdtemp())
        >>> cache.get_bytes("missing") is None
        True
    """

    def __init__(
        self, root: str | os.PathLike[str] | None = None, *, max_bytes: int | None = None
    ) -> None:
        if root is None:
            root = os.environ.get("NUMPILE_CACHE_DIR") or platformdirs.user_cache_dir("numpile")
        self._root, self._is_fallback = _usable_root(Path(root).expanduser())
        self.max_bytes = _max_bytes_from_env() if max_bytes is None else max_bytes
        # NOTE: whether this process compared the cache's VERSION with its own yet.
        self._checked_versions = False
        self._sweep_lock = new_lock()

    def __repr__(self) -> str:
        return f"CodeCache({str(self._root)!r})"

    @property
    def root(self) -> Path:
        """The folder that holds the cache (the fallback folder after a fallback)."""
        return self._root

    @property
    def is_fallback(self) -> bool:
        """True when the requested root was unwritable and a temp folder is used."""
        return self._is_fallback

    # -- generic bytes, for other layers ------------------------------------------

    def get_bytes(self, key: str) -> bytes | None:
        """The bytes stored under `key`, or None if absent or corrupt.

        >>> import tempfile
        >>> CodeCache(tempfile.mkdtemp()).get_bytes("k") is None
        True
        """
        path = self._blob_path(key)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as err:  # unreadable: a miss, never an error
            log.warning("could not read cache blob %s: %s", path, err)
            return None
        data = _unpack_blob(raw)
        if data is None:
            count("cache_corrupt")
            log.warning("cache blob %s is corrupt; ignoring it", path)
        else:
            _touch(path)
        return data

    def put_bytes(self, key: str, data: bytes) -> None:
        """Store `data` under `key` atomically, replacing what was there.

        A failed write (disk full, permissions changed) is logged and
        ignored: the cache is an optimization, never a source of errors.

            >>> import tempfile
            >>> cache = CodeCache(tempfile.mkdtemp())
            >>> cache.put_bytes("k", b"1"); cache.put_bytes("k", b"2")
            >>> cache.get_bytes("k")
            b'2'
        """
        path = self._blob_path(key)
        self._before_write()
        header = b"%s %s %d\n" % (_BLOB_MAGIC, hashlib.sha256(data).hexdigest().encode(), len(data))
        try:
            _private_folders(self._root, path.parent)
            _write_atomic(path, header + data)
        except OSError as err:
            log.warning("could not write cache blob %s: %s", path, err)
            return
        self._wrote(len(header) + len(data))

    # -- file artifacts (shared objects and their sources) -------------------------

    def folder(self, key: str, *, kind: str) -> Path:
        """The folder holding `key`'s files of `kind`, created if needed.

        >>> import tempfile
        >>> CodeCache(tempfile.mkdtemp()).folder("ab12", kind="cpp").name
        'ab'
        """
        _check_key(key)
        _check_key(kind)
        path = self._root / kind / key[:2]
        _private_folders(self._root, path)
        return path

    def artifact_path(self, key: str, suffix: str, *, kind: str) -> Path:
        """Where the artifact `key` + `suffix` lives (it may not exist yet).

        >>> import tempfile
        >>> CodeCache(tempfile.mkdtemp()).artifact_path("ab12", ".so", kind="cpp").name
        'ab12.so'
        """
        return self.folder(key, kind=kind) / f"{key}{suffix}"

    def lock(self, key: str, *, kind: str) -> filelock.BaseFileLock:
        """The inter-process lock of `key`: hold it while producing the key's files.

        >>> import tempfile
        >>> cache = CodeCache(tempfile.mkdtemp())
        >>> with cache.lock("ab12", kind="cpp"):
        ...     pass
        """
        import filelock  # late: only writers need it, and it costs ~10 ms to import

        path = self.folder(key, kind=kind) / f"{key}.lock"
        return filelock.FileLock(path, timeout=_LOCK_TIMEOUT_S)

    @contextlib.contextmanager
    def reading(self, key: str, *, kind: str) -> Iterator[None]:
        """Hold `key`'s lock shared while checking and loading its artifact: sweeps skip it.

        Writers (`lock`) wait for readers; readers wait for a writer. Not POSIX: no lock.

            >>> import tempfile
            >>> with CodeCache(tempfile.mkdtemp()).reading("ab12", kind="cpp"):
            ...     pass
        """
        try:
            import fcntl
        except ImportError:
            yield
            return
        path = self.folder(key, kind=kind) / f"{key}.lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def get_artifact(self, key: str, suffix: str, *, kind: str) -> Path | None:
        """The path of a stored artifact whose checksum matches, else None.

        A file whose size or sha256 disagrees with its sidecar, or that has no
        sidecar (a writer died between the two renames), counts as corrupt.

            >>> import tempfile
            >>> CodeCache(tempfile.mkdtemp()).get_artifact("ab12", ".so", kind="cpp") is None
            True
        """
        path = self.artifact_path(key, suffix, kind=kind)
        meta_path = path.with_name(path.name + ".meta.json")
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        try:
            meta = json.loads(meta_path.read_text())
            expected = (int(meta["size"]), str(meta["sha256"]))
        except (OSError, ValueError, KeyError, TypeError):
            expected = None
        if expected != (len(data), hashlib.sha256(data).hexdigest()):
            log.debug("cache entry %s is corrupt or incomplete", path)
            return None
        _touch(path)
        return path

    def put_artifact(
        self,
        key: str,
        suffix: str,
        produced: Path,
        *,
        kind: str,
        meta: dict[str, Any] | None = None,
    ) -> Path:
        """Move the file `produced` into place as `key` + `suffix`, with its checksum.

        `produced` must lie in `folder(key, kind=kind)` (so the move is an
        atomic rename); `meta` is extra JSON kept in the sidecar for people
        debugging the cache (e.g. the compiler command).

            >>> import tempfile
            >>> cache = CodeCache(tempfile.mkdtemp())
            >>> tmp = cache.folder("ab12", kind="cpp") / "tmp"
            >>> _ = tmp.write_bytes(b"so")
            >>> cache.put_artifact("ab12", ".so", tmp, kind="cpp").name
            'ab12.so'
        """
        path = self.artifact_path(key, suffix, kind=kind)
        self._before_write()
        data = produced.read_bytes()
        record = dict(meta or {})
        record.update(size=len(data), sha256=hashlib.sha256(data).hexdigest())
        # NOTE: artifact first, sidecar second: a reader that sees the artifact
        # without its sidecar treats it as incomplete and waits on the lock.
        os.replace(produced, path)
        sidecar = path.with_name(path.name + ".meta.json")
        _write_atomic(sidecar, json.dumps(record, indent=1, sort_keys=True).encode())
        self._wrote(len(data))
        return path

    def write_text(self, key: str, suffix: str, text: str, *, kind: str) -> Path:
        """Write `text` atomically as `key` + `suffix` (e.g. a kernel's source).

        >>> import tempfile
        >>> CodeCache(tempfile.mkdtemp()).write_text("ab12", ".c", "", kind="cpp").name
        'ab12.c'
        """
        path = self.artifact_path(key, suffix, kind=kind)
        self._before_write()
        encoded = text.encode()
        _write_atomic(path, encoded)
        self._wrote(len(encoded))
        return path

    def temp_path(self, key: str, suffix: str, *, kind: str) -> Path:
        """A fresh, unused file name in `key`'s folder, for a producer holding `lock(key)`.

        Temporary files of `key` left there are a killed producer's (the lock is exclusive):
        they are removed first.

        >>> import tempfile
        >>> CodeCache(tempfile.mkdtemp()).temp_path("ab12", ".so", kind="cpp").suffix
        '.so'
        """
        folder = self.folder(key, kind=kind)
        for stale in folder.glob(f".{key}.*{suffix}"):
            with contextlib.suppress(OSError):
                stale.unlink()
        fd, name = tempfile.mkstemp(dir=folder, prefix=f".{key}.", suffix=suffix)
        os.close(fd)
        return Path(name)

    def clear(self) -> None:
        """Delete every entry (processes that loaded a shared object keep it).

        >>> import tempfile
        >>> cache = CodeCache(tempfile.mkdtemp()); cache.put_bytes("k", b"1")
        >>> cache.clear(); cache.get_bytes("k") is None
        True
        """
        for child in self._root.iterdir():
            if child.is_dir():
                shutil.rmtree(child, ignore_errors=True)
        with contextlib.suppress(FileNotFoundError):
            (self._root / "usage.json").unlink()

    def info(self) -> CacheInfo:
        """Where the cache is, what it holds (bytes per kind) and its cap.

        >>> import tempfile
        >>> CodeCache(tempfile.mkdtemp(), max_bytes=10).info().max_bytes
        10
        """
        found = usage(self._root)
        try:
            versions = (self._root / "VERSION").read_text().strip()
        except OSError:
            versions = ""
        return CacheInfo(
            str(self._root),
            found.size_bytes,
            found.entry_count,
            found.by_kind,
            self.max_bytes,
            versions,
        )

    def evict(self, max_bytes: int | None = None) -> SweepResult:
        """Remove least recently used entries until the cache fits `max_bytes` (default: its cap).

        Entries another process is building or loading are kept.

            >>> import tempfile
            >>> CodeCache(tempfile.mkdtemp()).evict().removed_entries
            0
        """
        with self._sweep_lock, self._usage_lock():
            return self._sweep(self.max_bytes if max_bytes is None else max_bytes, None)

    def _wrote(self, size: int) -> None:
        # NOTE: the size is shared through usage.json, read and written back under its file
        # lock on each write (writes are compiles: rare); a full sweep recounts it every
        # _USAGE_FRESH_S, since crashed writers and `clear` in other processes skew it.
        with self._sweep_lock, self._usage_lock():
            recorded = self._recorded_usage()
            if recorded is None:
                self._sweep(self.max_bytes, None)
                return
            total, swept = recorded
            total += size
            if total > self.max_bytes:
                self._sweep(self.max_bytes, None)
            else:
                self._record_usage(total, swept)

    def _usage_lock(self) -> filelock.BaseFileLock:
        import filelock  # late: as in `lock`

        return filelock.FileLock(self._root / "usage.lock", timeout=_LOCK_TIMEOUT_S)

    def _before_write(self) -> None:
        # Once per process, before its first write: queue the removal of other versions'
        # entries. NOTE: idle work on the build queue, not the write's: reading the installed
        # versions (importlib.metadata) cost the first compile of every process about 30 ms
        # of CPU before its module's build, and other versions' entries can never hit anyway
        # (keys hash the versions), so removing them a little later changes no result.
        if self._checked_versions:
            return
        with self._sweep_lock:
            if self._checked_versions:
                return
            self._checked_versions = True
        first_write = time.time()
        task = functools.partial(self._remove_other_versions, first_write)
        queue_build(f"cache versions of {self._root}", task, idle=True)

    def _remove_other_versions(self, first_write: float) -> None:
        # The build queue's task: entries made before this process's first write by other
        # numpile versions than this one go; the VERSION marker is this process's after it.
        versions = _installed_versions()
        marker = self._root / "VERSION"
        with self._sweep_lock, self._usage_lock():
            try:
                previous: str | None = marker.read_text().strip()
            except OSError:
                previous = None
            if previous == versions:
                return
            with contextlib.suppress(OSError):
                _write_atomic(marker, (versions + "\n").encode())
            if previous is None:
                return
            log.info("cache %s: written by %s before; removing its entries", self._root, previous)
            self._sweep(self.max_bytes, first_write)

    def _recorded_usage(self) -> tuple[int, float] | None:
        try:
            record = json.loads((self._root / "usage.json").read_text())
            size, swept = int(record["size_bytes"]), float(record["swept"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return (size, swept) if 0 <= time.time() - swept < _USAGE_FRESH_S else None

    def _record_usage(self, size: int, swept: float) -> None:
        record = {"size_bytes": size, "swept": swept}
        with contextlib.suppress(OSError):
            _write_atomic(self._root / "usage.json", json.dumps(record).encode())

    def _sweep(self, max_bytes: int, stale_before: float | None) -> SweepResult:
        result = sweep(self._root, max_bytes=max_bytes, stale_before=stale_before)
        if result.removed_entries:
            count("cache_evicted", result.removed_entries)
        self._record_usage(result.size_after, time.time())
        return result

    def _blob_path(self, key: str) -> Path:
        _check_key(key)
        return self._root / "blobs" / key[:2] / f"{key}.bin"


def _touch(path: Path) -> None:
    # A hit marks its entry as recently used, for the least-recently-used sweep.
    with contextlib.suppress(OSError):
        os.utime(path)


def _max_bytes_from_env() -> int:
    raw = os.environ.get("NUMPILE_CACHE_MAX_MB", "").strip()
    if not raw:
        return DEFAULT_MAX_BYTES
    try:
        return int(float(raw) * 1024 * 1024)
    except ValueError:
        warnings.warn(
            f"NUMPILE_CACHE_MAX_MB={raw!r} is not a number of megabytes; using the default "
            f"({DEFAULT_MAX_BYTES // (1024 * 1024)} MB)",
            RuntimeWarning,
            stacklevel=4,
        )
        return DEFAULT_MAX_BYTES


def _installed_versions() -> str:
    # The versions keys hash; a change means older entries can never hit again.
    from importlib import metadata  # late: only the first write of a process reads them

    parts = []
    for name in _DISTRIBUTIONS:
        try:
            parts.append(f"{name}=={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return " ".join(parts)


def _check_key(key: str) -> None:
    if not _KEY_PATTERN.fullmatch(key):
        raise ValueError(
            f"invalid cache key {key!r}: use 1-200 characters from [A-Za-z0-9_.-] "
            "starting with a letter or digit (cache_key(...) makes one from any data)"
        )


def _unpack_blob(raw: bytes) -> bytes | None:
    header, sep, data = raw.partition(b"\n")
    fields = header.split(b" ")
    if not sep or len(fields) != 3 or fields[0] != _BLOB_MAGIC:
        return None
    try:
        size = int(fields[2])
    except ValueError:
        return None
    if size != len(data) or hashlib.sha256(data).hexdigest().encode() != fields[1]:
        return None
    return data


# NOTE: a temporary file older than this was left by a killed writer: the next writer of the
# same file removes it (a live one writes its few bytes in far less).
_STALE_TEMP_S = 600


def _write_atomic(path: Path, data: bytes) -> None:
    now = time.time()
    for stale in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        with contextlib.suppress(OSError):
            if now - stale.stat().st_mtime > _STALE_TEMP_S:
                stale.unlink()
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as tmp:
            tmp.write(data)
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise


def _private_folders(root: Path, path: Path) -> None:
    # Each missing folder from `root` down to `path`, made 0700 (parents=True would use the
    # umask for the intermediate ones).
    for folder in (*reversed(path.relative_to(root).parents), path.relative_to(root)):
        target = root / folder
        if not target.is_dir():
            target.mkdir(mode=0o700, exist_ok=True)


def untrusted_root_reason(root: Path) -> str | None:
    """Why `root` may not hold this user's cache (None: it may): a folder owned by another
    user, or one others can write, lets them plant code that this process would load.

    >>> import tempfile
    >>> untrusted_root_reason(Path(tempfile.mkdtemp())) is None
    True
    """
    getuid = getattr(os, "getuid", None)
    if getuid is None:
        return None  # Windows: folder ACLs, not modes; the user's profile is private
    info = root.stat()
    if info.st_uid != getuid():
        return f"it is owned by another user (uid {info.st_uid})"
    if info.st_mode & stat.S_IWOTH:
        return f"other users can write it (mode {stat.S_IMODE(info.st_mode):o})"
    return None


def _usable_root(root: Path) -> tuple[Path, bool]:
    try:
        if not root.is_dir():
            root.parent.mkdir(parents=True, exist_ok=True)
            root.mkdir(mode=0o700, exist_ok=True)
        reason = untrusted_root_reason(root)
        if reason is None:
            fd, probe = tempfile.mkstemp(dir=root, prefix=".write-probe-")
            os.close(fd)
            os.unlink(probe)
            return root, False
        why = f"refuses the cache folder {root}: {reason}, so others could plant code"
    except OSError as err:
        why = f"cannot write its cache folder {root} ({err.strerror or err})"
    fallback = Path(tempfile.mkdtemp(prefix="numpile-cache-"))
    atexit.register(shutil.rmtree, fallback, ignore_errors=True)
    warnings.warn(
        f"numpile {why}; this process caches compiled code in {fallback} instead, which "
        "is removed at exit. Set NUMPILE_CACHE_DIR to a folder only you can write to keep "
        "compiled code.",
        RuntimeWarning,
        stacklevel=3,
    )
    return fallback, True


# NOTE: the process-wide cache, created on first use so that NUMPILE_CACHE_DIR
# is read then, not at import.
_DEFAULT: CodeCache | None = None
_DEFAULT_LOCK = new_lock()


def default_cache() -> CodeCache:
    """The process-wide cache (created on first call from `NUMPILE_CACHE_DIR`).

    >>> default_cache() is default_cache()
    True
    """
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = CodeCache()
        return _DEFAULT


def set_cache_dir(
    path: str | os.PathLike[str] | None, *, max_bytes: int | None = None
) -> CodeCache:
    """Replace the process-wide cache by one at `path` (None: re-read the env), capped at
    `max_bytes` (None: `NUMPILE_CACHE_MAX_MB`, else 300 MB).

    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> str(set_cache_dir(folder).root) == folder
    True
    """
    global _DEFAULT
    with _DEFAULT_LOCK:
        _DEFAULT = CodeCache(path, max_bytes=max_bytes)
        return _DEFAULT
