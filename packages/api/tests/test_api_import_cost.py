"""What a warm start (a new process whose disk cache holds the graph) must not import:
sympy (0.3-6 s on a loaded machine; only symbolic sizes, loop indices and the C lowering
need it) and optree (about 70 ms; only the transforms' pytrees need it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

_PROGRAM = (
    "import sys, numpy as np, numpile\n"
    "f = numpile.compile(lambda x: x * 2.0 + 1.0)\n"
    "x = np.arange(5.0)\n"
    "assert (f(x) == x * 2.0 + 1.0).all()\n"
    "print(sorted({'sympy', 'optree'} & set(sys.modules)))\n"
)


def _late_imports(cache: Path) -> str:
    env = {**os.environ, "NUMPILE_CACHE_DIR": str(cache), "NUMPILE_TIERED": "0"}
    run = subprocess.run(
        [sys.executable, "-c", _PROGRAM], env=env, check=True, timeout=300, capture_output=True
    )
    return run.stdout.decode().strip().splitlines()[-1]


def test_a_warm_start_imports_neither_sympy_nor_optree(tmp_path: Path) -> None:
    cold = _late_imports(tmp_path)
    assert "optree" not in cold
    assert _late_imports(tmp_path) == "[]"
