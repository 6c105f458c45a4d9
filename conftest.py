"""Collection rules for the whole monorepo (stdlib only: each layer's session loads it).

`nox -s tests-<layer>` collects the doctests of the layer's modules
(`--doctest-modules packages/<layer>/src`). A module that imports an optional
dependency at its top (the GPU stack) cannot be imported where that dependency
is missing; its doctests are collected only where it is installed.

The repository root goes on `sys.path` (pytest's importlib mode puts no folder there), so
tests of any layer can import the plain-NumPy programs the benchmarks run
(`benchmarks.loop_programs`: NumPy only, no numpile package).
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import os
import pathlib
import sys

_ROOT = str(pathlib.Path(__file__).parent)
if _ROOT not in sys.path:
    sys.path.append(_ROOT)

# NOTE: tests run graphs compiled from the first call (tiered compilation would run the
# first calls with NumPy while a background build runs, and the switch would depend on
# timing); the tests of the tiered path pass options={"tiered": True}.
os.environ.setdefault("NUMPILE_TIERED", "0")

# NOTE: optional dependencies (extras) that a module may import at its top.
OPTIONAL_DEPENDENCIES = ("cupy", "triton", "torch")


def pytest_ignore_collect(collection_path: pathlib.Path) -> bool | None:
    """Skip a source module whose top-level imports need a missing optional dependency."""
    if collection_path.suffix != ".py" or "src" not in collection_path.parts:
        return None
    missing = [name for name in _top_level_imports(collection_path) if not _installed(name)]
    return True if missing else None


@functools.cache
def _installed(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def _top_level_imports(path: pathlib.Path) -> list[str]:
    # Only statements at module level: a late import inside a function is the usual way to
    # keep an optional dependency optional, and does not block importing the module.
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError):
        return []
    roots: list[str] = []
    for statement in tree.body:
        if isinstance(statement, ast.Import):
            roots += [alias.name.split(".")[0] for alias in statement.names]
        elif isinstance(statement, ast.ImportFrom) and statement.module and not statement.level:
            roots.append(statement.module.split(".")[0])
    return [root for root in roots if root in OPTIONAL_DEPENDENCIES]
