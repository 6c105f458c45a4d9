"""The on-disk code cache: content-addressed artifacts that survive the process.

Layout under the root (`NUMPILE_CACHE_DIR`, else the platform's user cache
folder for "numpile"):

    <root>/<kind>/<key[:2]>/<key><suffix>             an artifact (e.g. a .so)
    <root>/<kind>/<key[:2]>/<key><suffix>.meta.json   its size and sha256
    <root>/<kind>/<key[:2]>/<key>.lock                the file lock of the key
    <root>/blobs/<key[:2]>/<key>.bin                  bytes put by other layers

Invariants:

- Every file is written to a temporary name in its final folder and moved
  into place with `os.replace`, so a reader never sees half a file.
- Writers of one key hold its file lock, so concurrent processes building
  the same kernel build it once; readers take no lock on the fast path.
- Every artifact and blob carries its checksum; a corrupt or truncated file
  reads as a miss (and is rebuilt by whoever asked), never as data.

    >>> import tempfile
    >>> cache = CodeCache(tempfile.mkdtemp())
    >>> cache.put_bytes("graph-1", b"payload")
    >>> cache.get_bytes("graph-1")
    b'payload'
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
import threading
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import platformdirs

from .metrics import count

if TYPE_CHECKING:
    import filelock

__all__ = ["CodeCache", "cache_key", "default_cache", "set_cache_dir"]

log = logging.getLogger("numpile.runtime.cache")

_KEY_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,199}")
_BLOB_MAGIC = b"numpile-blob-1"
# A compile holds a key's lock; waiting longer than this means a stuck peer.
_LOCK_TIMEOUT_S = 900.0


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

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        if root is None:
            root = os.environ.get("NUMPILE_CACHE_DIR") or platformdirs.user_cache_dir("numpile")
        self._root, self._is_fallback = _usable_root(Path(root).expanduser())

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
        data = _unpack_blob(raw)
        if data is None:
            count("cache_corrupt")
            log.warning("cache blob %s is corrupt; ignoring it", path)
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
        header = b"%s %s %d\n" % (_BLOB_MAGIC, hashlib.sha256(data).hexdigest().encode(), len(data))
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            _write_atomic(path, header + data)
        except OSError as err:
            log.warning("could not write cache blob %s: %s", path, err)

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
        path.mkdir(parents=True, exist_ok=True)
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
        data = produced.read_bytes()
        record = dict(meta or {})
        record.update(size=len(data), sha256=hashlib.sha256(data).hexdigest())
        # NOTE: artifact first, sidecar second: a reader that sees the artifact
        # without its sidecar treats it as incomplete and waits on the lock.
        os.replace(produced, path)
        sidecar = path.with_name(path.name + ".meta.json")
        _write_atomic(sidecar, json.dumps(record, indent=1, sort_keys=True).encode())
        return path

    def write_text(self, key: str, suffix: str, text: str, *, kind: str) -> Path:
        """Write `text` atomically as `key` + `suffix` (e.g. a kernel's source).

        >>> import tempfile
        >>> CodeCache(tempfile.mkdtemp()).write_text("ab12", ".c", "", kind="cpp").name
        'ab12.c'
        """
        path = self.artifact_path(key, suffix, kind=kind)
        _write_atomic(path, text.encode())
        return path

    def temp_path(self, key: str, suffix: str, *, kind: str) -> Path:
        """A fresh, unused file name in `key`'s folder, for a producer to write to.

        >>> import tempfile
        >>> CodeCache(tempfile.mkdtemp()).temp_path("ab12", ".so", kind="cpp").suffix
        '.so'
        """
        folder = self.folder(key, kind=kind)
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

    def _blob_path(self, key: str) -> Path:
        _check_key(key)
        return self._root / "blobs" / key[:2] / f"{key}.bin"


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


def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as tmp:
            tmp.write(data)
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise


def _usable_root(root: Path) -> tuple[Path, bool]:
    try:
        root.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=root, prefix=".write-probe-")
        os.close(fd)
        os.unlink(probe)
        return root, False
    except OSError as err:
        fallback = Path(tempfile.mkdtemp(prefix="numpile-cache-"))
        atexit.register(shutil.rmtree, fallback, ignore_errors=True)
        warnings.warn(
            f"numpile cannot write its cache folder {root} ({err.strerror or err}); "
            f"this process caches compiled code in {fallback} instead, which is removed "
            "at exit. Set NUMPILE_CACHE_DIR to a writable folder to keep compiled code.",
            RuntimeWarning,
            stacklevel=3,
        )
        return fallback, True


# NOTE: the process-wide cache, created on first use so that NUMPILE_CACHE_DIR
# is read then, not at import.
_DEFAULT: CodeCache | None = None
_DEFAULT_LOCK = threading.Lock()


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


def set_cache_dir(path: str | os.PathLike[str] | None) -> CodeCache:
    """Replace the process-wide cache by one at `path` (None: re-read the env).

    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> str(set_cache_dir(folder).root) == folder
    True
    """
    global _DEFAULT
    with _DEFAULT_LOCK:
        _DEFAULT = CodeCache(path)
        return _DEFAULT
