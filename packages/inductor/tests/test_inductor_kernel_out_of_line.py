"""Kernels stay out of line (`codegen/c/kernel.py`): inlined into the graph's `call`, GCC's
guessed profile makes their loops cold, so it does not vectorize them, and `call`'s live
values spill the hot loop's registers (a CSR product ran at NumPy's speed so). Checked on a
CSR product (a gather, a weighted bincount, a normalization): the result equals NumPy's to
the bit, every kernel is declared `noinline`, and GCC's report lists the bincount length
pass's contiguous loop as vectorized.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from vectorization_report import vectorized_lines

from numpile_capture import compile_function


def csr_product(data: Any, rows: Any, cols: Any, x: Any) -> Any:
    y = np.bincount(rows, weights=data * x[cols], minlength=x.shape[0])
    return y / (np.abs(y).max() + 1e-12)


@pytest.mark.skipif(shutil.which("gcc") is None, reason="the report is GCC's")
def test_a_csr_product_s_kernels_stay_out_of_line_and_vectorize(tmp_path: Path) -> None:
    rng = np.random.default_rng(28)
    n, nnz = 300, 2400
    rows = np.sort(rng.integers(0, n, nnz))
    args = (rng.standard_normal(nnz), rows, rng.integers(0, n, nnz), rng.standard_normal(n))
    options = {"trace.enabled": True, "trace.debug_dir": str(tmp_path / "debug")}
    got = compile_function(csr_product, backend="inductor", options=options)(*args)
    want = csr_product(*args)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    (source_path,) = tmp_path.glob("debug/*/output_code.c")
    lines = source_path.read_text().splitlines()
    kernels = [i for i, line in enumerate(lines) if re.match(r"static int kernel\d+\(", line)]
    assert kernels
    assert all(lines[i - 1] == "__attribute__((noinline))" for i in kernels)
    # The length pass over contiguous int64 bins: the first loop after its stride test.
    test = next(i for i, line in enumerate(lines) if "stride == sizeof(int64_t)" in line)
    loop = next(i for i in range(test, len(lines)) if lines[i].lstrip().startswith("for ("))
    assert loop + 1 in vectorized_lines(source_path, tmp_path), loop + 1
