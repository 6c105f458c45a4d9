"""Unseen loops (issue 23): the loop programs of `benchmarks.unseen_loop_programs`, written
the way scientists write plain NumPy and new to the compiler when they were added, that the
corpus runs in CI: those that found a wrong result or a loop left to Python, fixed since.

- `gcd_by_remainders`: `x, y = y, x % y` in a C `while` gave 0 (the new `x` read the `y`
  assigned just before it);
- `diagonal_neighbour_in_range`: `0 <= ii < h and 0 <= jj < w` tested the first chain only
  (wrong values, or eager's IndexError where eager has none);
- `edit_distance`, `lcs_length_int32`: `min()` / `max()` of NumPy int scalars left the DP
  loop to Python;
- `row_through_an_integer_scalar`: `A[idx[0]]` (a NumPy int scalar index) was a copy on
  the C backend, so writing the row did not write `A`;
- `float32_filter_with_python_floats`, `continue_and_early_return`, `collatz_lengths`,
  `sieve_of_eratosthenes`, `newton_cube_roots`, `enumerate_zip_running_sum`: NEP 50 types,
  early exits, `while` loops on run-time values and `enumerate(zip(...))`, at trip counts
  0 and 1 too (the float32 filter's first iteration, on a Python float, ran with NumPy
  per iteration: it now runs apart in C);
- `bicg_by_rows`, `atax_over_rows`, `horner`, `rk4_steps`: bodies carrying 1-d arrays,
  once run with NumPy per iteration (an element `r[i]` or `for c in coeffs` at the index, a
  row of symbolic shape, a carried Python float `t += h`), now C loops of kernels.

Every program there is checked and timed by ``python -m benchmarks.unseen_loops``; each size
here is a C compile, so the corpus keeps to these few.
"""

from __future__ import annotations

from harness import program

from benchmarks.unseen_loop_programs import PROGRAMS

IN_CORPUS = (
    "gcd_by_remainders",
    "diagonal_neighbour_in_range",
    "edit_distance",
    "lcs_length_int32",
    "row_through_an_integer_scalar",
    "float32_filter_with_python_floats",
    "continue_and_early_return",
    "collatz_lengths",
    "sieve_of_eratosthenes",
    "newton_cube_roots",
    "enumerate_zip_running_sum",
    "bicg_by_rows",
    "atax_over_rows",
    "horner",
    "rk4_steps",
)

for _name in IN_CORPUS:
    _entry = PROGRAMS[_name]
    program("unseen_loops", _entry.inputs, sizes=_entry.sizes, fullgraph=not _entry.breaks)(
        _entry.fn
    )
