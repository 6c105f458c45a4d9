"""The command line: `python -m numpile` (or `numpile`) with `info`, `cache` and `explain`.

    numpile info                          versions, compiler, OpenMP, SIMD, cache, GPU
    numpile cache info|clear|path         the on-disk code cache
    numpile explain model.py:step "np.ones(1000)" "3"
                                          run step(np.ones(1000), 3) and print the
                                          explain report (graphs, breaks, guards)

Arguments of `explain` are Python expressions evaluated with `np` (NumPy) in scope.

    >>> main(["cache", "path"])  # doctest: +SKIP
    /home/me/.cache/numpile
    0
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import platform
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

import numpile_runtime as rt

__all__ = ["main"]

# The layers, bottom to top, as `info` lists their versions.
_PACKAGES = (
    "numpile_runtime",
    "numpile_guards",
    "numpile_capture",
    "numpile_autograd_aot",
    "numpile_inductor",
    "numpile",
)
# x86 and Arm vector extensions, best first, as /proc/cpuinfo names them.
_SIMD_LEVELS = ("avx512f", "avx2", "avx", "sse4_2", "sve", "asimd", "neon")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line on `argv` (default `sys.argv[1:]`); the exit status.

    >>> main(["cache", "path"])  # doctest: +SKIP
    0
    """
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    handler: Any = args.handler
    return int(handler(args))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="numpile", description="numpile: a just-in-time compiler for NumPy programs."
    )
    commands = parser.add_subparsers(dest="command")
    info = commands.add_parser("info", help="versions, C compiler, OpenMP, SIMD, cache, GPU")
    info.set_defaults(handler=_info)
    cache = commands.add_parser("cache", help="inspect or clear the on-disk code cache")
    cache.add_argument("action", choices=("info", "clear", "path"))
    cache.set_defaults(handler=_cache)
    explain = commands.add_parser(
        "explain", help="run FILE:FUNCTION on example arguments and print its explain report"
    )
    explain.add_argument("target", help="a Python file and a function in it: model.py:step")
    explain.add_argument(
        "arguments", nargs="*", help="Python expressions for the arguments (np is NumPy)"
    )
    explain.set_defaults(handler=_explain)
    return parser


def _info(args: argparse.Namespace) -> int:
    print("numpile")
    for name in _PACKAGES:
        module = importlib.import_module(name)
        print(f"  {name:<22} {getattr(module, '__version__', '?')}")
    print(f"  python                 {platform.python_version()} ({sys.executable})")
    print(f"  numpy                  {np.__version__}")
    print("C compiler")
    for line in compiler_report():
        print(f"  {line}")
    print("code cache")
    for line in _cache_lines(rt.default_cache()):
        print(f"  {line}")
    print("GPU")
    status = rt.triton_status()
    print(f"  triton                 {status.mode}{f' ({status.reason})' if status.reason else ''}")
    print(f"  cupy device            {'found' if rt.cupy_available() else 'none'}")
    return 0


def compiler_report() -> list[str]:
    """Lines on the C compiler numpile found (or how to get one), OpenMP and SIMD.

    >>> any(line.startswith("SIMD") for line in compiler_report())
    True
    """
    lines: list[str] = []
    try:
        toolchain = rt.find_toolchain()
    except rt.CompilerNotFoundError as error:
        lines.append("compiler               none found")
        lines.append(f"  {error}")
        lines.append(
            "  without one, compiled functions run op by op with NumPy (same results, no "
            "speed-up) after one NoCompilerWarning; NUMPILE_NO_COMPILER=raise makes it an error"
        )
        lines.append(f"SIMD (CPU)             {simd_level()}")
        return lines
    lines.append(f"compiler               {toolchain.cc} ({toolchain.version_line})")
    lines.append(f"C++ compiler           {toolchain.cxx or 'none'}")
    openmp = " ".join(toolchain.openmp_flags) if toolchain.openmp_flags else "not available"
    lines.append(f"OpenMP                 {openmp}")
    march = toolchain.march_flag or "none (generic code)"
    lines.append(f"target                 {toolchain.target or '?'} ({march})")
    lines.append(f"SIMD (CPU)             {simd_level()}")
    return lines


def simd_level() -> str:
    """The widest vector extension this CPU reports ("unknown" where it cannot be read).

    >>> isinstance(simd_level(), str)
    True
    """
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.machine() or "unknown"
    flags: set[str] = set()
    for line in text.splitlines():
        if line.startswith(("flags", "Features")):
            flags.update(line.partition(":")[2].split())
            break
    for level in _SIMD_LEVELS:
        if level in flags:
            return level
    return "none reported"


def _cache_lines(cache: rt.CodeCache) -> list[str]:
    info = cache.info()
    kinds = ", ".join(f"{kind} {_megabytes(size)}" for kind, size in sorted(info.by_kind.items()))
    return [
        f"path                   {info.root}{' (temporary fallback)' if cache.is_fallback else ''}",
        f"size                   {_megabytes(info.size_bytes)} in {info.entry_count} entries"
        + (f" ({kinds})" if kinds else ""),
        f"cap                    {_megabytes(info.max_bytes)} (NUMPILE_CACHE_MAX_MB)",
    ]


def _megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"


def _cache(args: argparse.Namespace) -> int:
    cache = rt.default_cache()
    if args.action == "path":
        print(cache.root)
    elif args.action == "info":
        for line in _cache_lines(cache):
            print(line)
    else:
        before = cache.info()
        cache.clear()
        print(f"removed {_megabytes(before.size_bytes)} ({before.entry_count} entries) from")
        print(f"  {cache.root}")
    return 0


def _explain(args: argparse.Namespace) -> int:
    import numpile  # late: the façade imports the whole stack

    path_text, sep, name = str(args.target).rpartition(":")
    if not sep or not path_text or not name:
        print(f"numpile explain: expected FILE:FUNCTION, got {args.target!r}", file=sys.stderr)
        return 2
    path = Path(path_text)
    if not path.is_file():
        print(f"numpile explain: no such file: {path}", file=sys.stderr)
        return 2
    module = _load_module(path)
    fn: Any = module
    for part in name.split("."):
        fn = getattr(fn, part, None)
        if fn is None:
            print(f"numpile explain: {path} has no function {name!r}", file=sys.stderr)
            return 2
    scope = {"np": np, "numpy": np, **vars(module)}
    values = [eval(text, scope) for text in args.arguments]  # the user's own input
    print(numpile.explain(fn)(*values))
    return 0


def _load_module(path: Path) -> Any:
    # Imported under its file name, with its folder on sys.path (its own imports work).
    name = path.stem
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.resolve().parent))
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
