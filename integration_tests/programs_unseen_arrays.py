"""Unseen arrays (round 2 goals): the loop-free programs of
`benchmarks.unseen_array_programs`, written the way users write NumPy and new to the
compiler when they were added, that the corpus runs in CI: those that found a graph break
where NumPy runs (fixed since), and a few that guard what must never be silently wrong.

- `laplacian_5pt_roll`: `np.roll` was not supported (a graph break); it is one op, fused
  into the stencil's kernel as a load at a rotated index;
- `mask_assignment_on_a_copy`: `z[:, row > 0] = row[row > 0]` gave the two counts of one
  mask two size symbols, and the assignment a graph break;
- `cumsum_diff_gradient`: `np.diff(..., prepend=)` and `np.gradient` were graph breaks;
- `qr_least_squares_residual`, `tensordot_kron_outer`: `np.diag` and `np.kron` were;
- `narrow_integers_wrap`, `floating_point_warnings`, `views_of_inputs_returned`: int8 /
  uint8 / int16 wrap-around, NumPy's floating-point warnings from the user's line, and
  results that are views of the inputs (aliasing as eager);
- `python_int_too_big_for_int32_raises`, `negative_python_int_for_uint8_raises`: NEP 50's
  OverflowError for a Python int out of the array's range, raised from the user's line.

Every program there is checked and timed by ``python -m benchmarks.unseen_arrays``; each
size here is a C compile, so the corpus keeps to these few.
"""

from __future__ import annotations

from harness import program

from benchmarks.unseen_array_programs import PROGRAMS

IN_CORPUS = (
    "laplacian_5pt_roll",
    "mask_assignment_on_a_copy",
    "cumsum_diff_gradient",
    "tensordot_kron_outer",
    "solve_of_singular_raises",
    "cholesky_of_indefinite_raises",
    "inv_of_non_square_raises",
    "max_of_empty_raises",
    "python_int_too_big_for_int32_raises",
    "negative_python_int_for_uint8_raises",
)

for _name in IN_CORPUS:
    _entry = PROGRAMS[_name]
    program(
        "unseen_arrays",
        _entry.inputs,
        sizes=_entry.sizes,
        rtol=_entry.rtol,
        atol=_entry.atol,
        expect_error=_entry.expect_error,
    )(_entry.fn)
