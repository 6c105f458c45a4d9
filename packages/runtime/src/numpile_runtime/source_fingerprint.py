"""Source fingerprints: a digest of packages' Python code that a warm process does not re-read.

Cache keys hash the code that generated an entry, so that a changed code generator never
reuses what an older one built. Reading and hashing every module of a package costs a few
milliseconds of each new process (the inductor and its four layers: about 230 files,
2 MB); `source_fingerprint` pays it once per state of the files. It takes the files' stat
signature (relative path, size and modification time of every `.py` file), and keeps the
content digest in the code cache under that signature: a process whose files did not
change reads one cache entry after one `stat` per file. The digest itself hashes paths
and bytes only, so two machines with the same code agree on it (keys stay shareable).

    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "a.py").write_text("x = 1\\n")
    >>> source_fingerprint(folder) == source_fingerprint(folder)
    True
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
from pathlib import Path

from .code_cache import cache_key, default_cache

__all__ = ["source_fingerprint"]

log = logging.getLogger("numpile.runtime.source_fingerprint")

# Bump when what the digest covers changes.
_FORMAT = "numpile-source-fingerprint-1"


def source_fingerprint(*folders: str | os.PathLike[str]) -> str:
    """The SHA-256 (hex) of every `.py` file under `folders`: each folder's name, each
    file's path relative to it and its bytes, in sorted order.

    Computed once per process and folder list; read from the code cache when the files'
    sizes and modification times are those it was computed from.

        >>> import tempfile, pathlib
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (folder / "a.py").write_text("x = 1\\n")
        >>> len(source_fingerprint(folder))
        64
    """
    return _fingerprint(tuple(os.fspath(folder) for folder in folders))


@functools.cache
def _fingerprint(folders: tuple[str, ...]) -> str:
    files = [(folder, f"{Path(folder).name}/", _walk(folder)) for folder in folders]
    stats = "\n".join(
        f"{name}{relative}:{size}:{mtime}"
        for _, name, found in files
        for relative, (size, mtime) in found
    )
    key = f"source-fingerprint-{cache_key(_FORMAT, stats)}"
    try:
        cache = default_cache()
        stored = cache.get_bytes(key)
    except OSError:  # an unusable cache: hash the files every time
        cache, stored = None, None
    if stored is not None and len(stored) == 64:
        return stored.decode("ascii")
    digest = hashlib.sha256(_FORMAT.encode())
    for folder, name, found in files:
        for relative, _ in found:
            digest.update(f"\0{name}{relative}\0".encode())
            # NOTE: plain `open` of a joined string, not a `Path` per file: pathlib's parsing
            # was half of a cold process's fingerprint (about 280 files).
            with open(os.path.join(folder, relative), "rb") as source:
                digest.update(source.read())
    fingerprint = digest.hexdigest()
    if cache is not None:
        cache.put_bytes(key, fingerprint.encode("ascii"))
    log.debug("source fingerprint of %s: %s", folders, fingerprint[:16])
    return fingerprint


def _walk(root: str) -> list[tuple[str, tuple[int, int]]]:
    # (path relative to `root` with "/" separators, (size, mtime_ns)) of every .py file,
    # sorted; bytecode caches and hidden folders are skipped.
    found: list[tuple[str, tuple[int, int]]] = []
    pending = [""]
    while pending:
        relative_dir = pending.pop()
        with os.scandir(os.path.join(root, relative_dir)) as entries:
            for entry in entries:
                relative = f"{relative_dir}/{entry.name}" if relative_dir else entry.name
                if entry.is_dir():
                    if entry.name != "__pycache__" and not entry.name.startswith("."):
                        pending.append(relative)
                elif entry.name.endswith(".py"):
                    stat = entry.stat()
                    found.append((relative, (stat.st_size, stat.st_mtime_ns)))
    found.sort()
    return found
