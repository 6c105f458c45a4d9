"""Without a C compiler (hidden from the process: CC unset, PATH without one), compiled
functions run op by op with NumPy, with one warning per process that says how to fix it;
NUMPILE_NO_COMPILER=raise makes it an error; `numpile info` says the same."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

PROGRAM = textwrap.dedent(
    """
    import warnings
    import numpy as np
    import numpile

    @numpile.compile
    def chain(x, y):
        return np.sin(x) * y + np.cos(y) ** 2

    @numpile.compile
    def reduce(x):
        return (x * 2).sum(axis=0) / x.shape[0]

    x = np.linspace(0, 1, 12).reshape(3, 4)
    y = np.arange(4.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = chain(x, y)
        second = reduce(x)
        again = chain(x + 1, y)
    assert np.array_equal(first, np.sin(x) * y + np.cos(y) ** 2)
    assert np.array_equal(second, (x * 2).sum(axis=0) / 3)
    assert np.array_equal(again, np.sin(x + 1) * y + np.cos(y) ** 2)
    for _ in range(3):  # warm calls: the Python hit path, as no call gate can be built
        assert np.array_equal(chain(x, y), first)
    assert chain._gate is None and type(type(chain).__dict__["__call__"]).__name__ == "function"
    mine = [w for w in caught if issubclass(w.category, numpile.NumpilePerformanceWarning)]
    assert len(mine) == 1, [str(w.message) for w in caught]
    assert type(mine[0].message).__name__ == "NoCompilerWarning"
    assert mine[0].filename == __file__, mine[0].filename
    print(mine[0].message)
    """
)


def _env_without_compiler(tmp_path: Path) -> dict[str, str]:
    empty = tmp_path / "empty-bin"
    empty.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("CC", "CXX", "NUMPILE_NO_COMPILER")}
    env["PATH"] = str(empty)
    env["NUMPILE_CACHE_DIR"] = str(tmp_path / "cache")
    return env


def test_compiled_functions_run_with_numpy_and_warn_once(tmp_path: Path):
    script = tmp_path / "no_compiler_program.py"
    script.write_text(PROGRAM)
    done = subprocess.run(
        [sys.executable, str(script)],
        env=_env_without_compiler(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "no usable C compiler" in done.stdout
    assert "apt-get install gcc" in done.stdout and "CC=" in done.stdout


def test_no_compiler_can_be_made_an_error(tmp_path: Path):
    program = textwrap.dedent(
        """
        import numpy as np, numpile
        from numpile_capture import BackendCompileError

        @numpile.compile
        def f(x):
            return np.sin(x) + 1

        try:
            f(np.ones(3))
        except BackendCompileError as error:
            print("raised:", error)
        """
    )
    env = {**_env_without_compiler(tmp_path), "NUMPILE_NO_COMPILER": "raise"}
    done = subprocess.run(
        [sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "raised:" in done.stdout and "C compiler" in done.stdout


def test_numpile_info_says_there_is_no_compiler_and_the_fix(tmp_path: Path):
    done = subprocess.run(
        [sys.executable, "-m", "numpile", "info"],
        env=_env_without_compiler(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "none found" in done.stdout
    assert "apt-get install gcc" in done.stdout
    assert "op by op" in done.stdout
