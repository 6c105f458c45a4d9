"""GCC's vectorization report of a generated module, for the tests that check what vectorizes.

>>> callable(vectorized_lines)
True
"""

from __future__ import annotations

import re
import subprocess
import sysconfig
from pathlib import Path

import numpy as np

import numpile_runtime as rt


def vectorized_lines(source_path: Path, tmp_path: Path) -> set[int]:
    """The lines of `source_path` (a module's `output_code.c`) whose loops GCC vectorized,
    compiled with the toolchain's own flags."""
    toolchain = rt.find_toolchain()
    includes = [f"-I{sysconfig.get_paths()['include']}", f"-I{np.get_include()}"]
    command = [
        toolchain.compiler("c"),
        *toolchain.flags(),
        *includes,
        "-fopt-info-vec-optimized",
        "-c",
        str(source_path),
        "-o",
        str(tmp_path / "module.o"),
    ]
    report = subprocess.run(command, capture_output=True, text=True, check=True).stderr
    return {
        int(m.group(1))
        for m in re.finditer(r"output_code\.c:(\d+):\d+: optimized: loop vec", report)
    }


def assembly(source_path: Path, tmp_path: Path) -> str:
    """The assembly GCC makes of `source_path` (a module's `output_code.c`) with the
    toolchain's own flags."""
    toolchain = rt.find_toolchain()
    includes = [f"-I{sysconfig.get_paths()['include']}", f"-I{np.get_include()}"]
    out = tmp_path / "module.s"
    command = [toolchain.compiler("c"), *toolchain.flags(), *includes, "-S"]
    subprocess.run([*command, str(source_path), "-o", str(out)], check=True)
    return out.read_text()
