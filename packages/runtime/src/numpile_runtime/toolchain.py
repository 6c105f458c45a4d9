"""The C/C++ toolchain: which compiler builds kernels, and with which flags.

`find_toolchain()` finds the compiler (env `CC`/`CXX`, else `cc`, `gcc`,
`clang` on PATH), asks it for its version, and probes once whether it
accepts `-march=native` and builds and runs OpenMP code. The probe result
is cached on disk (keyed by the compiler's path, version and file stamp),
so a warm process start runs no probe compile at all.

    >>> tc = find_toolchain()
    >>> tc.kind in ("gcc", "clang")
    True
    >>> "-ffp-contract=off" in tc.flags()
    True

Flags are chosen to keep NumPy's IEEE results: `-ffp-contract=off` (no
fused multiply-add that NumPy would not do) and never `-ffast-math` or
`-fno-math-errno` by default; generated code that wants vector libm calls
declares them itself (see research/toolchain.md, section 3.3).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from .build_queue import queue_build
from .code_cache import cache_key, default_cache
from .locks import new_rlock
from .metrics import count, timed

__all__ = ["CompilerNotFoundError", "Toolchain", "find_toolchain", "prepare_toolchain"]

log = logging.getLogger("numpile.runtime.toolchain")

# Bump when the probe below changes what it measures: old disk entries are ignored.
_PROBE_VERSION = "2"
BASE_FLAGS: tuple[str, ...] = ("-O3", "-fPIC", "-ffp-contract=off")

_OPENMP_PROBE = """
#include <omp.h>
int numpile_openmp_probe(void) {
    int threads = 0;
#pragma omp parallel reduction(+:threads)
    threads += 1;
    return threads + 0 * omp_get_max_threads();
}
"""
_MARCH_PROBE = "int numpile_march_probe(int x) { return x + 1; }\n"


class CompilerNotFoundError(RuntimeError):
    """No usable C (or C++) compiler: the message names what to install or set.

    >>> str(CompilerNotFoundError("no C compiler found")).startswith("no C")
    True
    """


@attrs.frozen(cache_hash=True)
class Toolchain:
    """A C/C++ compiler and the flags numpile builds kernels with.

    `openmp_flags` is empty when the compiler cannot build and load OpenMP
    code; `march_flag` is "" when it accepts neither `-march=native` nor
    `-mcpu=native`. `target` names the machine code that `march_flag`
    selects here (e.g. "x86_64-znver3"), so that caches shared between
    different machines never hand one machine's code to another. `cxx` is ""
    when no C++ compiler was found.

        >>> tc = find_toolchain()
        >>> tc.compiler("c") == tc.cc
        True
    """

    cc: str
    kind: str
    version: str
    base_flags: tuple[str, ...]
    openmp_flags: tuple[str, ...]
    march_flag: str
    cxx: str = ""
    version_line: str = ""
    target: str = ""

    def flags(self, *, openmp: bool = True) -> tuple[str, ...]:
        """Base, `-march` and (when asked and available) OpenMP flags, in that order.

        >>> find_toolchain().flags()[0]
        '-O3'
        """
        march = (self.march_flag,) if self.march_flag else ()
        return self.base_flags + march + (self.openmp_flags if openmp else ())

    def compiler(self, language: str) -> str:
        """The compiler driver for `language` ("c" or "c++").

        >>> find_toolchain().compiler("c") == find_toolchain().cc
        True
        """
        if language == "c":
            return self.cc
        if language == "c++":
            if not self.cxx:
                raise CompilerNotFoundError(
                    f"no C++ compiler found next to {self.cc}: install g++ "
                    "(apt-get install g++) or clang++, or set CXX"
                )
            return self.cxx
        raise ValueError(f"unknown language {language!r}: use 'c' or 'c++'")

    @property
    def identity(self) -> str:
        """What cache keys hash: compilers, version, target and flags.

        >>> find_toolchain().version in find_toolchain().identity
        True
        """
        parts = (self.cc, self.cxx, self.kind, self.version, self.version_line, self.target)
        return "\n".join(parts + self.flags())


# NOTE: the process-wide table of discovered toolchains, keyed by the values of
# CC and CXX at lookup time, so a test that changes CC sees a fresh discovery.
# `_FOUND_LOCK` is held for a whole discovery (one probe per process, however many threads
# ask); `known_toolchain` takes it only where the probe is on disk (no compiler to wait for).
_FOUND: dict[tuple[str | None, str | None], Toolchain] = {}
_FOUND_LOCK = new_rlock()


def find_toolchain() -> Toolchain:
    """The toolchain for this process: discovered and probed once, then cached.

    Honours env `CC` (and `CXX`); raises `CompilerNotFoundError` when no
    compiler can be found or run.

        >>> find_toolchain() is find_toolchain()
        True
    """
    env = (os.environ.get("CC") or None, os.environ.get("CXX") or None)
    with _FOUND_LOCK:
        found = _FOUND.get(env)
        if found is None:
            with timed("toolchain_discovery"):
                found = _discover(*env)
            _FOUND[env] = found
            log.info("toolchain: %s", found)
        return found


def _discover(cc_env: str | None, cxx_env: str | None) -> Toolchain:
    cc = _resolve_cc(cc_env)
    probe = _probe_cached(cc)
    version_line = str(probe["version_line"])
    kind = "clang" if "clang" in version_line.lower() else "gcc"
    cxx = _resolve_cxx(cc, cxx_env)
    return Toolchain(
        cc=cc,
        kind=kind,
        version=_version_number(version_line),
        base_flags=BASE_FLAGS,
        openmp_flags=tuple(str(flag) for flag in _as_list(probe["openmp_flags"])),
        march_flag=str(probe["march_flag"]),
        cxx=cxx,
        version_line=version_line,
        target=str(probe["target"]),
    )


def _as_list(value: object) -> list[object]:
    return list(value) if isinstance(value, list) else []


def _resolve_cc(cc_env: str | None) -> str:
    if cc_env is not None:
        path = shutil.which(cc_env)
        if path is None:
            raise CompilerNotFoundError(
                f"CC={cc_env!r} does not name a C compiler that exists: install it "
                "(e.g. apt-get install gcc), point CC at an installed compiler, "
                "or unset CC to use gcc or clang from PATH"
            )
        return path
    for name in ("cc", "gcc", "clang"):
        path = shutil.which(name)
        if path is not None:
            return path
    raise CompilerNotFoundError(
        "no C compiler found: install gcc (apt-get install gcc) or clang, or set CC "
        "to a compiler's path"
    )


def _resolve_cxx(cc: str, cxx_env: str | None) -> str:
    if cxx_env is not None:
        return shutil.which(cxx_env) or ""
    folder, name = os.path.split(cc)
    if "clang" in name:
        guess = name.replace("clang", "clang++", 1)
    elif "gcc" in name:
        guess = name.replace("gcc", "g++", 1)
    else:
        guess = "c++"
    return shutil.which(os.path.join(folder, guess)) or shutil.which(guess) or ""


def _version_line(cc: str) -> str:
    try:
        done = subprocess.run(
            [cc, "--version"], capture_output=True, text=True, timeout=60, check=False
        )
    except OSError as err:
        raise CompilerNotFoundError(
            f"the C compiler {cc} cannot be run ({err}): reinstall it (e.g. apt-get "
            "install gcc) or set CC to a working compiler"
        ) from err
    if done.returncode != 0 or not done.stdout.strip():
        raise CompilerNotFoundError(
            f"{cc} --version failed (exit status {done.returncode}): {done.stderr.strip()}; "
            "set CC to a working gcc or clang"
        )
    return done.stdout.strip().splitlines()[0]


def _version_number(version_line: str) -> str:
    match = re.search(r"\d+\.\d+(?:\.\d+)?", version_line)
    return match.group(0) if match else version_line


def known_toolchain() -> Toolchain | None:
    """The toolchain when finding it runs no compiler process, else None.

    Found in this process already, or probed by an earlier one (the probe is in the
    on-disk cache): then the same as `find_toolchain()`, which waits for another thread
    finding it from that probe now (the build queue's, a few milliseconds). None when
    finding it would probe the compiler (a fresh cache), when another thread probes it now
    (the build queue's probe: this call never waits for a compiler process), or when there
    is none; callers that must not wait for a probe (tiered compilation's first call, a
    cold compile that lowers its graph meanwhile) do without it then.

        >>> known_toolchain() in (None, find_toolchain())
        True
    """
    env = (os.environ.get("CC") or None, os.environ.get("CXX") or None)
    found = _FOUND.get(env)
    if found is not None:
        return found
    try:
        cc = _resolve_cc(env[0])
        if _stored_probe(_probe_key(cc)) is None:
            return None
        return find_toolchain()
    except (CompilerNotFoundError, OSError):
        return None


def prepare_toolchain() -> None:
    """Queue `find_toolchain` on the build queue (`numpile_runtime.queue_build`) when
    finding it would probe the compiler (a fresh cache folder): the probe then runs beside
    the caller's Python instead of when its first build asks. Returns at once; without a
    compiler nothing happens (the build that needs one reports it).

        >>> prepare_toolchain()
    """
    if known_toolchain() is None:
        queue_build("compiler probe", find_toolchain)


def _probe_key(cc: str) -> str:
    # Keyed by the compiler file's identity, so a warm start runs no compiler
    # process at all (not even --version); an upgrade changes the stamp.
    stat = os.stat(cc)
    return cache_key(
        "toolchain-probe",
        _PROBE_VERSION,
        os.path.realpath(cc),
        str(stat.st_ino),
        str(stat.st_mtime_ns),
        str(stat.st_size),
        platform.machine(),
        platform.node(),
    )


def _stored_probe(key: str) -> dict[str, object] | None:
    try:
        stored = default_cache().get_bytes(key)
    except OSError:
        return None  # an unusable cache: probe again
    if stored is None:
        return None
    try:
        probe: dict[str, object] = json.loads(stored)
    except ValueError:
        log.warning("ignoring an unreadable toolchain probe in the cache")
        return None
    if not is_valid_probe(probe):
        log.warning("ignoring a toolchain probe in the cache with flags numpile never sets")
        return None
    return probe


def _probe_cached(cc: str) -> dict[str, object]:
    key = _probe_key(cc)
    stored = _stored_probe(key)
    if stored is not None:
        return stored
    cache = default_cache()
    with timed("toolchain_probe"):
        probe = _probe(cc)
    with contextlib.suppress(OSError):
        cache.put_bytes(key, json.dumps(probe).encode())
    return probe


# NOTE: a probe read back from the cache goes onto compiler command lines, so each field
# must be one of the answers `_probe` itself can give (a planted `-wrapper` runs a program).
_MARCH_FLAGS: tuple[str, ...] = ("", "-march=native", "-mcpu=native")
_OPENMP_FLAGS: tuple[list[str], ...] = ([], ["-fopenmp"], ["-Xpreprocessor", "-fopenmp", "-lomp"])
_TARGET = re.compile(r"[A-Za-z0-9_.+-]{1,200}")


def is_valid_probe(probe: object) -> bool:
    """Whether a toolchain probe (as read back from the cache) holds only flags numpile
    itself chooses: anything else is a corrupt or planted entry, probed again.

    >>> is_valid_probe({"march_flag": "-march=native", "openmp_flags": ["-fopenmp"],
    ...                 "target": "x86_64-znver3", "version_line": "gcc 12.2.0"})
    True
    >>> is_valid_probe({"march_flag": "-wrapper=/tmp/x", "openmp_flags": [],
    ...                 "target": "x86_64-generic", "version_line": "gcc"})
    False
    """
    if not isinstance(probe, dict):
        return False
    version_line = probe.get("version_line")
    target = probe.get("target")
    return (
        probe.get("march_flag") in _MARCH_FLAGS
        and probe.get("openmp_flags") in _OPENMP_FLAGS
        and isinstance(target, str)
        and _TARGET.fullmatch(target) is not None
        and isinstance(version_line, str)
        and "\n" not in version_line
    )


def _probe(cc: str) -> dict[str, object]:
    # The first answer of each question (gcc's and clang's) is asked at once, each a
    # compiler process of its own: a cold start waits for the slowest, not for their sum.
    with tempfile.TemporaryDirectory(prefix="numpile-probe-") as tmp:
        folder = Path(tmp)
        first = _at_once(
            lambda: _compiles(cc, folder, _MARCH_PROBE, ["-march=native", "-c"], "march.o"),
            lambda: _openmp_works(cc, folder, ["-fopenmp"]),
            lambda: _native_cpu(cc, "-march=native"),
            lambda: _version_line(cc),
        )
        march_native, openmp_plain, native_cpu, version_line = first
        march = "-march=native" if march_native else ""
        if not march and _compiles(cc, folder, _MARCH_PROBE, ["-mcpu=native", "-c"], "mcpu.o"):
            march = "-mcpu=native"
        openmp: list[str] = ["-fopenmp"] if openmp_plain else []
        if not openmp and _openmp_works(cc, folder, _OPENMP_FLAGS[2]):
            openmp = list(_OPENMP_FLAGS[2])
    if march != "-march=native":
        native_cpu = _native_cpu(cc, march)
    target = f"{platform.machine()}-{native_cpu or 'generic'}"
    log.info("probed %s: march=%r openmp=%r target=%s", cc, march, openmp, target)
    return {
        "march_flag": march,
        "openmp_flags": openmp,
        "target": target,
        "version_line": version_line,
    }


def _at_once(*calls: Callable[[], Any]) -> list[Any]:
    # Each call on a thread of its own (they wait on compiler processes); their results in
    # order, or the first call's exception, in order, raised once all have ended.
    results: list[Any] = [None] * len(calls)
    errors: list[BaseException | None] = [None] * len(calls)

    def run(position: int) -> None:
        try:
            results[position] = calls[position]()
        except BaseException as error:  # re-raised below, in the calling thread
            errors[position] = error

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for error in errors:
        if error is not None:
            raise error
    return results


def _compiles(cc: str, folder: Path, source: str, flags: list[str], output: str) -> bool:
    src = folder / f"{Path(output).stem}.c"  # one source per probe: probes run at once
    src.write_text(source)
    command = [cc, *flags, str(src), "-o", str(folder / output)]
    count("compiler_invocation")
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        log.debug("probe %s failed: %s", command, err)
        return False
    if done.returncode != 0:
        log.debug("probe %s failed: %s", command, done.stderr)
    return done.returncode == 0


def _openmp_works(cc: str, folder: Path, flags: list[str]) -> bool:
    name = f"openmp{len(flags)}.so"
    shared = ["-shared", "-fPIC", *flags]
    if sys.platform == "darwin":
        shared += ["-undefined", "dynamic_lookup"]
    if not _compiles(cc, folder, _OPENMP_PROBE, shared, name):
        return False
    try:
        library = ctypes.CDLL(str(folder / name))
        threads = int(library.numpile_openmp_probe())
    except (OSError, AttributeError) as err:
        log.debug("OpenMP probe library would not load: %s", err)
        return False
    return threads >= 1


def _native_cpu(cc: str, march: str) -> str:
    # What "native" means on this machine, so cache keys differ across CPUs.
    if not march:
        return ""
    try:
        done = subprocess.run(
            [cc, march, "-###", "-c", "-x", "c", os.devnull, "-o", os.devnull],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    text = done.stderr + done.stdout
    for pattern in (r'"-target-cpu" "([^"]+)"', r"-m(?:arch|cpu)=([\w.+-]+)"):
        for found in re.findall(pattern, text):
            if found != "native":
                return str(found)
    return ""
