"""What the nox sessions give every test process (noxfile.py), checked where they run.

Test processes, xdist workers and the interpreters tests start write the bytecode of what
they import, once (even where the caller sets PYTHONDONTWRITEBYTECODE), and every session
of a checkout compiles into one kernel cache in its `.nox` folder, not the user's. Outside
nox (a plain `pytest` run) these tests are skipped: the environment is the caller's.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import sys

import platformdirs
import pytest

import numpile_runtime as rt

pytestmark = pytest.mark.skipif(
    "NOX_CURRENT_SESSION" not in os.environ, reason="checks the environment nox sessions set"
)


def test_test_processes_write_the_bytecode_of_what_they_import() -> None:
    import numpile_inductor.backend as imported

    assert not sys.dont_write_bytecode
    cached = importlib.util.cache_from_source(imported.__file__)
    assert pathlib.Path(cached).is_file(), f"no bytecode written for {imported.__file__}"


def test_sessions_compile_into_the_checkouts_kernel_cache() -> None:
    root = rt.default_cache().root.resolve()
    assert root != pathlib.Path(platformdirs.user_cache_dir("numpile")).resolve()
    assert root == pathlib.Path(os.environ["NUMPILE_CACHE_DIR"]).resolve()
