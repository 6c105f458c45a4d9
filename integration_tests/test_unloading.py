"""`numpile.reset()` unloads the kernel libraries of the graphs it forgets.

Each compiled graph is a shared library (several memory mappings); a long-running process
that compiles many graphs must not keep them all mapped. After `reset()`, a function
compiled before still works: it compiles again (its library comes back from the cache).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

import numpile
import numpile_runtime as rt

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="counts mappings in /proc/self/maps"
)


def _kernel_mappings(cache: str) -> int:
    with open("/proc/self/maps", encoding="utf-8") as maps:
        return sum(1 for line in maps if cache in line and line.rstrip().endswith(".so"))


def _program(k: int) -> Any:
    # A code object of its own (compiled entries are per code object).
    namespace: dict[str, Any] = {}
    exec(f"def program_{k}(x):\n    return x * 2.0 + x * x\n", namespace)
    return namespace[f"program_{k}"]


def test_reset_unloads_the_libraries_of_forgotten_graphs() -> None:
    root = str(rt.default_cache().root)  # where the libraries are mapped from
    numpile.reset()
    baseline = _kernel_mappings(root)
    compiled = []
    for k in range(12):
        x = np.linspace(0.0, 1.0, 20_000 + k)  # a static shape each: a library each
        fn = numpile.compile(_program(k))
        np.testing.assert_array_equal(fn(x), x * 2.0 + x * x)
        compiled.append((fn, x))
    loaded = _kernel_mappings(root)
    assert loaded >= baseline + 12
    numpile.reset()
    assert _kernel_mappings(root) <= baseline + 5  # at most one library more (the pool's)
    # Compiled before the reset: compiles again, from the cache, and gives the same values.
    fn, x = compiled[5]
    np.testing.assert_array_equal(fn(x), x * 2.0 + x * x)
    del compiled
    numpile.reset()
    assert _kernel_mappings(root) <= baseline + 5
