"""Triton's CPU interpreter for the test modules that run generated Triton kernels.

Triton reads `TRITON_INTERPRET` once, when it is imported, so a test module that runs
kernels under the interpreter imports this module before anything that imports triton
(`numpile_inductor.codegen.triton`): a conftest fixture would run too late, after the
module's own imports. Importing it switches the interpreter on unless triton is already
imported, skips the importing module when triton is not installed, and skips it too when
triton was imported earlier without the interpreter (run such a module alone, as the nox
session `tests-triton-interpret` does).

    import triton_interpreter  # noqa: F401 - first: chooses the interpreter
"""

from __future__ import annotations

import os
import sys

import pytest

if "triton" not in sys.modules:
    os.environ.setdefault("TRITON_INTERPRET", "1")
pytest.importorskip("triton", reason="triton is not installed (pip install triton)")

import numpile_runtime as rt

if not rt.interpreting():
    pytest.skip(
        "triton was imported before TRITON_INTERPRET=1 was set; run this file alone",
        allow_module_level=True,
    )
