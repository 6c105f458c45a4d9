"""Importing numpile stays cheap: sympy (~0.35 s to import) loads only once a size is symbolic."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest


def _run(script: str) -> str:
    # A fresh interpreter: this one has imported sympy already through other tests.
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("module", ["numpile", "numpile_capture", "numpile_guards"])
def test_import_does_not_load_sympy(module: str) -> None:
    out = _run(f"import sys, {module}; print('sympy' in sys.modules)")
    assert out.strip() == "False"


def test_static_compile_does_not_load_sympy() -> None:
    out = _run(
        """
        import sys
        import numpy as np
        import numpile

        @numpile.compile(backend="eager", dynamic=False)
        def f(x):
            return np.sin(x) * 2 + x.shape[0]

        print(f(np.zeros(3)).tolist(), 'sympy' in sys.modules)
        """
    )
    assert out.strip() == "[3.0, 3.0, 3.0] False"


def test_dynamic_compile_loads_sympy_on_first_use() -> None:
    out = _run(
        """
        import sys
        import numpy as np
        import numpile

        @numpile.compile(dynamic=True)
        def f(x):
            return x * x.shape[0]

        print(f(np.ones(3)).tolist(), f(np.ones(5)).tolist(), 'sympy' in sys.modules)
        """
    )
    assert out.strip() == "[3.0, 3.0, 3.0] [5.0, 5.0, 5.0, 5.0, 5.0] True"
