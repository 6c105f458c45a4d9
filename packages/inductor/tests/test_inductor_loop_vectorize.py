"""A C loop nest with symbolic sizes vectorizes as one with constant sizes does: the loop
function stays out of line (`LOOP_FUNCTION`, noinline), so GCC's guessed profile does not
mark its loops cold after inlining them into the graph's `call` (Floyd-Warshall ran 15x
slower so)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from vectorization_report import assembly, vectorized_lines

from numpile_capture import compile_function
from numpile_inductor.codegen.c.loop_function import LOOP_FUNCTION


def floyd_warshall(D: Any) -> Any:
    D = D.copy()
    n = D.shape[0]
    for k in range(n):
        for i in range(n):
            D[i, :] = np.minimum(D[i, :], D[i, k] + D[k, :])
    return D


@pytest.mark.skipif(shutil.which("gcc") is None, reason="the report is GCC's")
def test_symbolic_loop_nest_vectorizes_its_row_updates(tmp_path: Path) -> None:
    options = {"trace.enabled": True, "trace.debug_dir": str(tmp_path / "debug")}
    fn = compile_function(floyd_warshall, backend="inductor", options=options, dynamic=True)
    rng = np.random.default_rng(5)
    for n in (7, 12):
        D = rng.uniform(1.0, 10.0, (n, n))
        np.testing.assert_array_equal(fn(D), floyd_warshall(D))
    sources = [p for p in tmp_path.glob("debug/*/output_code.c") if "loop_" in p.read_text()]
    assert sources
    source_path = sources[-1]
    lines = source_path.read_text().splitlines()
    declaration = f"{LOOP_FUNCTION} static PyObject *loop_"
    assert any(line.startswith(declaration) for line in lines)
    # The row update's loops over the row (`np.minimum` element by element) in the loop
    # nest's first form (unit strides, bounds proven outside the nest): through a
    # temporary where the row overlaps what it reads, straight into the row where not.
    row_loops = [
        number
        for number, line in enumerate(lines, start=1)
        if re.search(r"for \(int64_t k\d+ = 0;", line)
        and "_np_minimum_double" in "\n".join(lines[number : number + 3])
    ]
    assert len(row_loops) >= 2, row_loops
    vectorized = vectorized_lines(source_path, tmp_path)
    assert set(row_loops[:2]) <= vectorized, (row_loops, sorted(vectorized))


def forward_substitution(L: Any, b: Any) -> Any:
    # Integer inner products: GCC's own accumulator loops (a float dot product calls BLAS's
    # ?dot, as NumPy does: loop_reductions).
    n = b.shape[0]
    y = np.zeros_like(b)
    for i in range(n):
        y[i] = b[i] - L[i, :i] @ y[:i]
    return y


# The accumulator loop of an integer inner product over a slice's length.
_INT_ACCUMULATOR = r"for \(int64_t k\d+ = 0; k\d+ < len\d+; k\d+\+\+\) \{"


def _accumulators(lines: list[str]) -> list[int]:
    return [
        number
        for number, line in enumerate(lines, start=1)
        if re.search(_INT_ACCUMULATOR, line) and "acc" in lines[number]
    ]


@pytest.mark.skipif(shutil.which("gcc") is None, reason="the report is GCC's")
def test_symbolic_loop_nest_vectorizes_its_inner_products(tmp_path: Path) -> None:
    # The checked fast form sits behind a chain of stride and bounds tests, which GCC's
    # guessed profile would make cold without `NP_LIKELY`.
    options = {"trace.enabled": True, "trace.debug_dir": str(tmp_path / "debug")}
    fn = compile_function(forward_substitution, backend="inductor", options=options, dynamic=True)
    rng = np.random.default_rng(6)
    for n in (9, 20):
        L = np.tril(rng.integers(-3, 4, (n, n)))
        b = rng.integers(-9, 10, n)
        np.testing.assert_array_equal(fn(L, b), forward_substitution(L, b))
    sources = [p for p in tmp_path.glob("debug/*/output_code.c") if "loop_" in p.read_text()]
    source_path = sources[-1]
    lines = source_path.read_text().splitlines()
    accumulators = _accumulators(lines)
    assert accumulators
    assert accumulators[0] in vectorized_lines(source_path, tmp_path), accumulators


def sweeps(A: Any, b: Any, x: Any, count: int) -> Any:
    # Gauss-Seidel-like sweeps over ints: the outer loop tests no bounds, each sweep's row
    # loop does.
    for _ in range(count):
        for i in range(x.shape[0]):
            x[i] = (b[i] - A[i, :i] @ x[:i] - A[i, i + 1 :] @ x[i + 1 :]) % 1000
    return x


@pytest.mark.skipif(shutil.which("gcc") is None, reason="the report is GCC's")
def test_a_loops_checked_form_is_compiled_as_never_run(tmp_path: Path) -> None:
    # `NP_LIKELY` gives the checked form of a loop (its bounds not proven before it runs)
    # probability 0: GCC compiles it for size, so the inner products of the unit-stride
    # copy's checked form are not vectorized (nor unrolled), those of its fast form are.
    options = {"trace.enabled": True, "trace.debug_dir": str(tmp_path / "debug")}
    fn = compile_function(sweeps, backend="inductor", options=options, dynamic=True)
    rng = np.random.default_rng(7)
    for n in (9, 20):
        A = rng.integers(-3, 4, (n, n))
        b = rng.integers(-9, 10, n)
        x, want = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
        np.testing.assert_array_equal(fn(A, b, x, 3), sweeps(A, b, want, 3))
        np.testing.assert_array_equal(x, want)
    sources = [p for p in tmp_path.glob("debug/*/output_code.c") if "loop_" in p.read_text()]
    source_path = sources[-1]
    lines = source_path.read_text().splitlines()
    accumulators = _accumulators(lines)
    # Two inner products in each form: unit strides fast, unit strides checked, then those
    # of the copy for any strides.
    assert len(accumulators) >= 4, accumulators
    vectorized = vectorized_lines(source_path, tmp_path)
    assert set(accumulators[:2]) <= vectorized, (accumulators, sorted(vectorized))
    assert not set(accumulators[2:4]) & vectorized, (accumulators, sorted(vectorized))


def sum_of_squares(x: Any) -> Any:
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    return s


def _has_avx512() -> bool:
    try:
        return " avx512f " in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


@pytest.mark.skipif(shutil.which("gcc") is None, reason="the tuning attribute is GCC's")
@pytest.mark.skipif(not _has_avx512(), reason="512-bit vectors need an AVX-512 core")
def test_loop_functions_use_256_bit_vectors_on_avx512(tmp_path: Path) -> None:
    # A 512-bit body fed `s += x[i] * x[i]`'s in-order adds through lane shuffles: 1.7x the
    # add latency on AVX-512 cores (port 1's vector unit off). Loop functions tune for
    # 256 bits (`NP_LOOP_TUNE`); kernels keep 512.
    options = {"trace.enabled": True, "trace.debug_dir": str(tmp_path / "debug")}
    fn = compile_function(sum_of_squares, backend="inductor", options=options, dynamic=True)
    x = np.random.default_rng(3).random(1000)
    assert fn(x) == sum_of_squares(x)
    sources = [p for p in tmp_path.glob("debug/*/output_code.c") if "loop_" in p.read_text()]
    assert sources
    text = assembly(sources[-1], tmp_path)
    bodies = re.split(r"\n(?=[A-Za-z_]\S*:\n)", text)  # functions, not their .L labels
    loops = [body for body in bodies if re.match(r"loop_\S+:", body)]
    assert loops
    assert not any("%zmm" in body for body in loops)
