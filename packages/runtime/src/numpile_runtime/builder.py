"""The builder: C/C++ source in, loaded CPython extension or shared library out.

A build is one plain compiler command (no setuptools) against sysconfig's
Python headers and `numpy.get_include()`, run through the on-disk
`CodeCache`: the key hashes the source, the compiler and its flags, this
package's code and the Python ABI, so a warm process loads the shared
object straight from disk and never runs the compiler.

    >>> source = '''
    ... #include <Python.h>
    ... static PyModuleDef def = {PyModuleDef_HEAD_INIT, "hello", NULL, -1, NULL};
    ... PyMODINIT_FUNC PyInit_hello(void) { return PyModule_Create(&def); }
    ... '''
    >>> build_extension(source, module_name="hello", numpy_headers=False).__name__
    'hello'

Extensions are the fast path (a METH_FASTCALL call taking arrays costs
tens of nanoseconds); `build_library` returns a `ctypes.CDLL` for the
debug and fallback path. `build_many` compiles the kernels of one graph in
parallel: a thread pool whose threads each wait on one compiler process.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import functools
import importlib.machinery
import importlib.util
import logging
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import types
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from .build_queue import (
    compiler_ended,
    compiler_started,
    idle_compiles,
    on_build_queue,
    queue_build,
    yield_to_callers,
)
from .code_cache import CodeCache, cache_key, default_cache
from .collector_pause import collect_held_off
from .compiler_process import start_compiler
from .core_claims import background_core, claim_cores, usable_cores
from .extension_loader import can_unload, open_extension
from .loaded_modules import memo_get, memo_put, trim
from .locks import at_fork_reset, new_lock
from .metrics import count, timed
from .precompiled_header import (
    header_key,
    plain_header,
    precompile,
    precompiled_exists,
    ready_header,
    remove_precompiled,
    start_precompile,
)
from .progress import build_done, builds_started
from .toolchain import CompilerNotFoundError, Toolchain, find_toolchain

if TYPE_CHECKING:
    import concurrent.futures

__all__ = [
    "BuildError",
    "BuildJob",
    "build_extension",
    "build_library",
    "build_many",
    "compile_extension",
    "compile_library",
    "compile_many",
    "load_extension",
    "load_library",
    "prepare_header",
]

log = logging.getLogger("numpile.runtime.build")

_KIND = "cpp"
_SUFFIXES = {"c": ".c", "c++": ".cpp"}
_MODULE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_COMPILE_TIMEOUT_S = 600
_MAX_STDERR_CHARS = 20_000


class BuildError(RuntimeError):
    """The compiler rejected a source: the message has the kept source path,
    the command and the compiler's output.

        >>> err = BuildError("failed", source_path="k.c", command=("gcc",), stderr="")
        >>> err.source_path
        'k.c'
    """

    def __init__(
        self, message: str, *, source_path: str, command: Sequence[str], stderr: str
    ) -> None:
        super().__init__(message)
        self.source_path = source_path
        self.command = tuple(command)
        self.stderr = stderr


def _as_flags(flags: Sequence[str]) -> tuple[str, ...]:
    if isinstance(flags, str):
        raise TypeError(f"extra_flags must be a sequence of flags, not the string {flags!r}")
    return tuple(flags)


def _as_sources(sources: Sequence[str]) -> tuple[str, ...]:
    if isinstance(sources, str):
        raise TypeError("more_sources must be a sequence of sources, not one string")
    return tuple(sources)


@attrs.frozen(cache_hash=True)
class BuildJob:
    """One source to build: an extension module when `module_name` is set,
    else a plain shared library.

    `header` is text that `source` and each of `more_sources` start with, included as a
    precompiled header once one is built for it (`precompiled_header`); `more_sources` are
    further translation units, compiled at the same time as `source` and linked with it.
    `unsplit`, when set, is the one text the header and units were cut from (the same
    program): the cache then keys the build by it, not by the cut, so that a module cut
    for the cores free at the time (`free_cores`) is found again whatever the next cut.

        >>> BuildJob("int f(void) { return 1; }").module_name is None
        True
        >>> BuildJob("int g(void) { return f(); }", header="int f(void);").header
        'int f(void);'
    """

    source: str
    module_name: str | None = None
    language: str = "c"
    extra_flags: tuple[str, ...] = attrs.field(default=(), converter=_as_flags)
    numpy_headers: bool = True
    header: str = ""
    more_sources: tuple[str, ...] = attrs.field(default=(), converter=_as_sources)
    unsplit: str = ""


@attrs.frozen
class _Plan:
    key: str
    job: BuildJob
    command: tuple[str, ...]  # compiler and flags; the source and output go after
    libraries: tuple[str, ...]


def compile_extension(
    source: str,
    *,
    module_name: str,
    language: str = "c",
    extra_flags: Sequence[str] = (),
    numpy_headers: bool = True,
) -> Path:
    """Compile an extension module into the cache (or find it there); its path.

    >>> src = "#include <Python.h>\\nPyMODINIT_FUNC PyInit_m(void) { return NULL; }"
    >>> compile_extension(src, module_name="m", numpy_headers=False).suffix
    '.so'
    """
    job = BuildJob(source, module_name, language, _as_flags(extra_flags), numpy_headers)
    return compile_many([job])[0]


def compile_library(source: str, *, language: str = "c", extra_flags: Sequence[str] = ()) -> Path:
    """Compile a plain shared library into the cache (or find it there); its path.

    >>> compile_library("int one(void) { return 1; }").suffix
    '.so'
    """
    job = BuildJob(source, None, language, _as_flags(extra_flags), numpy_headers=False)
    return compile_many([job])[0]


def build_extension(
    source: str,
    *,
    module_name: str,
    language: str = "c",
    extra_flags: Sequence[str] = (),
    numpy_headers: bool = True,
) -> types.ModuleType:
    """Compile (through the cache) and import an extension that defines PyInit_<module_name>.

    The module is not added to `sys.modules`. Raises `BuildError` when the
    compiler fails and `CompilerNotFoundError` when there is no compiler.

        >>> src = '''#include <Python.h>
        ... static PyModuleDef d = {PyModuleDef_HEAD_INIT, "ext1", NULL, -1, NULL};
        ... PyMODINIT_FUNC PyInit_ext1(void) { return PyModule_Create(&d); }'''
        >>> build_extension(src, module_name="ext1", numpy_headers=False).__name__
        'ext1'
    """
    job = BuildJob(source, module_name, language, _as_flags(extra_flags), numpy_headers)
    result = build_many([job])[0]
    assert isinstance(result, types.ModuleType)
    return result


def build_library(
    source: str, *, language: str = "c", extra_flags: Sequence[str] = ()
) -> ctypes.CDLL:
    """Compile (through the cache) and load a plain shared library with ctypes.

    >>> build_library("int seven(void) { return 7; }").seven()
    7
    """
    job = BuildJob(source, None, language, _as_flags(extra_flags), numpy_headers=False)
    result = build_many([job])[0]
    assert isinstance(result, ctypes.CDLL)
    return result


def build_many(jobs: Sequence[BuildJob]) -> list[types.ModuleType | ctypes.CDLL]:
    """Build `jobs` in parallel and load each; results in the order of `jobs`.

    Loaded objects are memoized per cache key (`loaded_modules`: ctypes libraries for
    the life of the process, modules up to a bound), so building the same source again
    costs one hash. If any job fails, the
    others still finish (and are cached) before its `BuildError` is raised.

        >>> lib, = build_many([BuildJob("int two(void) { return 2; }")])
        >>> lib.two()
        2
    """
    toolchain = find_toolchain()
    plans = [_plan(job, toolchain) for job in jobs]
    results: dict[str, types.ModuleType | ctypes.CDLL] = {}
    for plan in plans:
        found = memo_get(plan.key)
        if found is not None:
            results[plan.key] = found
    missing = [plan for plan in plans if plan.key not in results]
    cache = default_cache()
    try:
        paths = _compile_plans(missing, cache)
    except OSError as error:
        cache = _uncached(cache, error)
        paths = _compile_plans(missing, cache)
    for plan, path in zip(missing, paths, strict=True):
        if plan.key in results:
            continue
        try:
            loaded = _load_planned(plan, path, cache)
        except OSError as error:
            loaded = _load_planned(plan, _compile(plan, _uncached(cache, error)), _scratch())
        results[plan.key] = memo_put(plan.key, loaded)
    if missing:
        trim()  # after every load, so that none of them is unloaded before it is returned
    return [results[plan.key] for plan in plans]


# NOTE: the process-private folder builds go to when the code cache fails (a full disk, an
# unreadable or read-only folder): compiling without the cache, never an error.
_SCRATCH: list[CodeCache] = []
_SCRATCH_LOCK = new_lock()


def _scratch() -> CodeCache:
    with _SCRATCH_LOCK:
        if not _SCRATCH:
            folder = tempfile.mkdtemp(prefix="numpile-uncached-")
            atexit.register(shutil.rmtree, folder, ignore_errors=True)
            _SCRATCH.append(CodeCache(folder))
        return _SCRATCH[0]


def _uncached(cache: CodeCache, error: OSError) -> CodeCache:
    # The cache failed: build in the private scratch folder instead (once more failing there
    # is a real error and raises).
    scratch = _scratch()
    if cache is scratch:
        raise error
    count("cache_io_error")
    log.warning(
        "the code cache in %s failed (%s); compiling without it in %s",
        cache.root,
        error,
        scratch.root,
    )
    return scratch


def _load_planned(plan: _Plan, path: Path, cache: CodeCache) -> types.ModuleType | ctypes.CDLL:
    # Loaded under the key's shared lock, so a cache sweep in another process cannot remove
    # the file between the check and the load; if one removed it before, build it again.
    name = plan.job.module_name
    for _ in range(3):
        with cache.reading(plan.key, kind=_KIND):
            if path.exists():
                return load_library(path) if name is None else load_extension(path, name)
        path = _compile(plan, cache)
    raise BuildError(
        f"the cached build of {name or 'a shared library'} kept disappearing from {cache.root} "
        "(is another process clearing the cache?)",
        source_path="",
        command=plan.command,
        stderr="",
    )


def compile_many(jobs: Sequence[BuildJob]) -> list[Path]:
    """Compile `jobs` in parallel into the cache, without loading; paths in order.

    >>> [p.suffix for p in compile_many([BuildJob("int three(void) { return 3; }")])]
    ['.so']
    """
    toolchain = find_toolchain()
    plans = [_plan(job, toolchain) for job in jobs]
    cache = default_cache()
    try:
        return _compile_plans(plans, cache)
    except OSError as error:
        return _compile_plans(plans, _uncached(cache, error))


def prepare_header(job: BuildJob) -> None:
    """Queue the precompiling of `job`'s header (`BuildJob.header`) for the compiler command
    `job` gets, so that a build of a fresh cache folder finds it ready; its source is not
    read. Returns at once: finding the compiler (a probe, in a fresh cache) and the build
    run on the build queue (`build_queue`); without a compiler, nothing happens.

    >>> prepare_header(BuildJob("", "m", header="#include <math.h>\\n"))
    """
    with _PREPARED_LOCK:
        if not job.header or job in _PREPARED:
            return
        _PREPARED.add(job)
    shape = (job.language, str(job.module_name is None), str(job.numpy_headers))
    name = "precompiled header " + cache_key(*shape, job.header, *job.extra_flags)[:16]
    queue_build(name, functools.partial(_precompile_header, job))


# NOTE: the jobs whose header `prepare_header` queued in this process: asked once (a build
# that finds its precompiled header gone queues it again itself).
_PREPARED: set[BuildJob] = set()
_PREPARED_LOCK = new_lock()
at_fork_reset(_PREPARED.clear)


def _precompile_header(job: BuildJob) -> None:
    plan = _plan(job, find_toolchain())
    key = header_key(plan.command, job.language, job.header)
    cache = default_cache()
    if not precompiled_exists(cache, key):  # a warm start reads no 17 MB file it may not need
        precompile(cache, key, plan.command, job.language, job.header)


def load_extension(path: str | os.PathLike[str], module_name: str) -> types.ModuleType:
    """Import the extension module at `path` (not registered in `sys.modules`).

    >>> src = "#include <Python.h>\\nstatic PyModuleDef d = {PyModuleDef_HEAD_INIT, \\"e2\\"};"
    >>> src += "\\nPyMODINIT_FUNC PyInit_e2(void) { return PyModule_Create(&d); }"
    >>> load_extension(compile_extension(src, module_name="e2"), "e2").__name__
    'e2'
    """
    if can_unload():
        with timed("module_load"):
            module = open_extension(path, module_name)
        count("module_load")
        return module
    with timed("module_load"):
        loader = importlib.machinery.ExtensionFileLoader(module_name, os.fspath(path))
        spec = importlib.util.spec_from_file_location(module_name, os.fspath(path), loader=loader)
        if spec is None:
            raise ImportError(f"cannot make an import spec for {path}", path=os.fspath(path))
        previous = sys.modules.get(module_name)
        try:
            module = importlib.util.module_from_spec(spec)
            loader.exec_module(module)
        finally:
            # Single-phase init registers the module in sys.modules under its bare
            # name, where it would shadow (or replace) a user's module of that name.
            if previous is None:
                sys.modules.pop(module_name, None)
            else:
                sys.modules[module_name] = previous
    count("module_load")
    return module


def load_library(path: str | os.PathLike[str]) -> ctypes.CDLL:
    """Load the shared library at `path` with ctypes.

    >>> load_library(compile_library("int four(void) { return 4; }")).four()
    4
    """
    with timed("module_load"):
        library = ctypes.CDLL(os.fspath(path))
    count("module_load")
    return library


# NOTE: process-wide memo of build plans, so that asking again for a loaded
# kernel costs a dict lookup instead of hashing its source.
_PLANS: dict[tuple[BuildJob, Toolchain], _Plan] = {}


def _plan(job: BuildJob, toolchain: Toolchain) -> _Plan:
    plan = _PLANS.get((job, toolchain))
    if plan is None:
        plan = _PLANS.setdefault((job, toolchain), _make_plan(job, toolchain))
    return plan


def _make_plan(job: BuildJob, toolchain: Toolchain) -> _Plan:
    if job.language not in _SUFFIXES:
        raise ValueError(f"unknown language {job.language!r}: use 'c' or 'c++'")
    if job.module_name is not None and not _MODULE_NAME.fullmatch(job.module_name):
        raise ValueError(f"module_name {job.module_name!r} is not a C identifier")
    command = [toolchain.compiler(job.language), *toolchain.flags(), "-shared"]
    if sys.platform == "darwin":
        command += ["-undefined", "dynamic_lookup"]
    abi = ""
    if job.module_name is not None:
        command += [f"-I{folder}" for folder in _python_includes()]
        abi = f"{sys.implementation.cache_tag} {sysconfig.get_config_var('EXT_SUFFIX')}"
    numpy_version = ""
    if job.numpy_headers:
        numpy_include, numpy_version = _numpy_include()
        command.append(f"-I{numpy_include}")
    command += job.extra_flags
    libraries = ("-lm",)
    key = cache_key(
        "numpile-build",
        _runtime_fingerprint(),
        toolchain.identity,
        abi,
        numpy_version,
        job.language,
        job.module_name or "",
        "\0".join(command),
        "\0".join(libraries),
        *_keyed_text(job),
    )
    return _Plan(key, job, tuple(command), libraries)


def _keyed_text(job: BuildJob) -> tuple[str, ...]:
    if job.unsplit:
        return ("unsplit", job.unsplit)
    if job.header or job.more_sources:
        return (job.source, "header", job.header, *job.more_sources)
    return (job.source,)


def _compile_plans(plans: Sequence[_Plan], cache: CodeCache) -> list[Path]:
    paths: dict[str, Path] = {}
    todo: dict[str, _Plan] = {}
    for plan in plans:
        if plan.key in paths or plan.key in todo:
            continue
        found = cache.get_artifact(plan.key, ".so", kind=_KIND)
        if found is not None:
            count("cache_hit")
            paths[plan.key] = found
        else:
            todo[plan.key] = plan
    builds_started(len(todo))
    if len(todo) == 1:
        (plan,) = todo.values()
        paths[plan.key] = _compile_counted(plan, cache)
    elif todo and on_build_queue():
        # One at a time: the queue's work for later takes one core at a time.
        failures: list[BaseException] = []
        for key, plan in todo.items():
            try:
                paths[key] = _compile_counted(plan, cache)
            except Exception as error:  # the others still build; the first raises below
                failures.append(error)
        if failures:
            raise failures[0]
    elif todo:
        import concurrent.futures  # late: only parallel builds need it (import cost)

        futures = {
            key: _executor().submit(_compile_counted, plan, cache) for key, plan in todo.items()
        }
        concurrent.futures.wait(futures.values())
        for key, future in futures.items():
            paths[key] = future.result()  # the first failure, in job order, raises here
    return [paths[plan.key] for plan in plans]


def _compile_counted(plan: _Plan, cache: CodeCache) -> Path:
    try:
        return _compile(plan, cache)
    finally:
        build_done()


def _compile(plan: _Plan, cache: CodeCache) -> Path:
    with cache.lock(plan.key, kind=_KIND):
        found = cache.get_artifact(plan.key, ".so", kind=_KIND)
        if found is not None:
            count("cache_hit")  # a concurrent process built it while we waited
            return found
        if cache.artifact_path(plan.key, ".so", kind=_KIND).exists():
            count("cache_corrupt")
            log.warning("cache entry %s failed its checksum; rebuilding it", plan.key)
        else:
            count("cache_miss")
        yield_to_callers()  # this build is waited for: queued work takes what cores it leaves
        output = cache.temp_path(plan.key, ".so", kind=_KIND)
        try:
            with timed("cpp_build"):
                command = _compile_units(plan, cache, output)
        except BaseException:
            output.unlink(missing_ok=True)
            raise
        meta = {"command": command, "module_name": plan.job.module_name}
        return cache.put_artifact(plan.key, ".so", output, kind=_KIND, meta=meta)


def _compile_units(plan: _Plan, cache: CodeCache, output: Path) -> list[str]:
    # Compile the job's translation units into `output`; the (last) compiler command. A job
    # with a header includes its precompiled copy when one is ready, and otherwise its text
    # (then starts precompiling it for the builds after this one); a unit that fails with the
    # precompiled copy is compiled again with the text, and that copy removed.
    job = plan.job
    suffix = _SUFFIXES[job.language]
    units = (job.source, *job.more_sources)
    paths = [
        cache.write_text(plan.key, f".{n}{suffix}" if n else suffix, text, kind=_KIND)
        for n, text in enumerate(units)
    ]
    if not job.header:
        return _run_units(plan, paths, output, ())
    hkey = header_key(plan.command, job.language, job.header)
    header = ready_header(cache, hkey)
    if header is not None:
        count("pch_use")
        try:
            return _run_units(plan, paths, output, ("-include", str(header)))
        except BuildError as error:
            count("pch_fallback")
            log.warning("a build failed with the precompiled header (%s); without it", error)
            remove_precompiled(cache, hkey)
    plain = plain_header(cache, hkey, job.header)
    command = _run_units(plan, paths, output, ("-include", str(plain)))
    if header is None:
        start_precompile(cache, hkey, plan.command, job.language, job.header)
    return command


def _run_units(
    plan: _Plan, paths: Sequence[Path], output: Path, include: tuple[str, ...]
) -> list[str]:
    # One unit: compile and link in one command. Several: each to an object file at once
    # (a thread per compiler process; one after the other on the build queue, whose work
    # takes one core at a time), then one link.
    if len(paths) == 1:
        command = [*plan.command, *include, str(paths[0]), "-o", str(output), *plan.libraries]
        _run_checked(plan, paths[0], command)
        return command
    objects = [path.with_name(f".{path.name}.{os.getpid()}.o") for path in paths]
    commands = [
        [*plan.command, "-c", *include, str(path), "-o", str(obj)]
        for path, obj in zip(paths, objects, strict=True)
    ]
    try:
        errors: list[BaseException | None] = [None] * len(paths)

        def run(n: int) -> None:
            try:
                _run_checked(plan, paths[n], commands[n])
            except BaseException as error:  # raised below, in the calling thread
                errors[n] = error

        if on_build_queue():
            for n in range(len(paths)):
                run(n)
        else:
            threads = [threading.Thread(target=run, args=(n,)) for n in range(1, len(paths))]
            for thread in threads:
                thread.start()
            run(0)
            for thread in threads:
                thread.join()
        for error in errors:
            if error is not None:
                raise error
        link = [*plan.command, *map(str, objects), "-o", str(output), *plan.libraries]
        _run_checked(plan, paths[0], link)
        return link
    finally:
        for obj in objects:
            obj.unlink(missing_ok=True)


def _run_checked(plan: _Plan, source_path: Path, command: list[str]) -> None:
    log.debug("compiling: %s", shlex.join(command))
    count("compiler_invocation")
    done = run_compiler(command, _COMPILE_TIMEOUT_S)
    if done.returncode != 0:
        raise _build_error(plan, source_path, command, done)
    if done.stderr.strip():
        log.debug("compiler warnings for %s:\n%s", source_path, done.stderr)


def run_compiler(command: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """Run a compiler command; past `timeout` seconds (or on any exception, such as a
    KeyboardInterrupt) kill it with every process it started, then re-raise.

    The compiler runs in a process group of its own: killing the driver alone (`cc`) would
    leave its compiler proper (`cc1`) running, gigabytes of memory for as long as it takes.
    Elsewhere it claims a core while it runs (`core_claims.claim_cores`: a caller waits for
    it); on the build queue it is background work, and starts once a core is free of such
    claims (`core_claims.background_core`).

        >>> run_compiler(["true"], 10).returncode
        0
    """
    with background_core() if on_build_queue() else claim_cores(1):
        process = start_compiler(command, idle=idle_compiles())
        compiler_started(process.pid)
        try:
            collect_held_off()  # while the compiler works, not after the caller's pause
            stdout, stderr = process.communicate(timeout=timeout)
        except BaseException:
            _kill_group(process)
            raise
        finally:
            compiler_ended(process.pid)
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def _kill_group(process: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.kill()
    process.communicate()


def _build_error(
    plan: _Plan, source_path: Path, command: list[str], done: subprocess.CompletedProcess[str]
) -> BuildError:
    what = (
        f"extension module {plan.job.module_name!r}"
        if plan.job.module_name is not None
        else "shared library"
    )
    stderr = done.stderr[-_MAX_STDERR_CHARS:]
    indented = "\n".join(f"    {line}" for line in (stderr or done.stdout).splitlines())
    message = (
        f"building {what} failed: the compiler exited with status {done.returncode}\n"
        f"  source (kept): {source_path}\n"
        f"  command: {shlex.join(command)}\n"
        f"  compiler output:\n{indented}"
    )
    return BuildError(message, source_path=str(source_path), command=command, stderr=done.stderr)


@functools.cache
def _python_includes() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    folders = tuple(dict.fromkeys((paths["include"], paths["platinclude"])))
    if not any(os.path.exists(os.path.join(folder, "Python.h")) for folder in folders):
        raise CompilerNotFoundError(
            f"Python's C headers (Python.h) are not in {folders[0]}: install the Python "
            f"development files (e.g. apt-get install python3-dev) for {sys.executable}"
        )
    return folders


@functools.cache
def _numpy_include() -> tuple[str, str]:
    import numpy  # late: libraries built without numpy headers need no numpy import

    return numpy.get_include(), numpy.__version__


def _runtime_fingerprint() -> str:
    # This package's code: a change to how we build invalidates entries (read once per state
    # of the files, not once per process).
    from .source_fingerprint import source_fingerprint  # late: it imports the code cache

    return source_fingerprint(Path(__file__).parent)


# NOTE: the process-wide compile pool, created on first parallel build and
# dropped in forked children (its threads do not survive a fork).
_EXECUTOR: concurrent.futures.ThreadPoolExecutor | None = None
_EXECUTOR_LOCK = new_lock()


def _executor() -> concurrent.futures.ThreadPoolExecutor:
    global _EXECUTOR
    with _EXECUTOR_LOCK:
        if _EXECUTOR is None:
            import concurrent.futures  # late: only parallel builds need it (import cost)

            workers = int(os.environ.get("NUMPILE_COMPILE_THREADS") or usable_cores())
            _EXECUTOR = concurrent.futures.ThreadPoolExecutor(
                max_workers=max(1, workers), thread_name_prefix="numpile-compile"
            )
        return _EXECUTOR


def _forget_executor() -> None:
    # Its lock is reset with every numpile lock (see `locks`).
    global _EXECUTOR
    _EXECUTOR = None


at_fork_reset(_forget_executor)
