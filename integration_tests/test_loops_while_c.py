"""Issue 23's loops that stay loops to the end: compound `while` / `if` tests, NumPy
scalars carried, `while` loops outside any `for`, and `return` inside a loop body. Capture
keeps each loop (no graph break, nothing unrolled) and the inductor runs it as C (no body
run with NumPy per iteration). Values, in-place effects and errors are the corpus' checks
(programs_loops.py); these tests check the path.
"""

from __future__ import annotations

import logging

import pytest
from harness import compile_kept_loop, loop_inputs, per_iteration_hints

# NOTE: corpus programs of the loops theme written for issue 23's while loops and early
# exits (programs_loops.py, its "issue 23, while and early exits" sections).
WHILE_AND_EXITS = (
    "while_and_guards_the_index",
    "while_not_or_stops_at_first_large",
    "while_and_three_operands_accumulates",
    "mandelbrot_while_and_escape_test",
    "escape_while_or_keeps_going",
    "if_or_outside_band",
    "if_not_and_inside_band",
    "if_chained_comparison_counts",
    "if_chained_comparison_with_else",
    "if_mixed_and_or_two_arrays",
    "elif_with_or_and_not",
    "if_not_or_on_python_ints",
    "insertion_sort_while_and",
    "run_lengths_while_and_equal",
    "while_two_sided_bounds_walks",
    "while_bottom_test_or_in_for",
    "while_int_truthiness_and_limit",
    "crc32_uint32_bitwise",
    "crc16_uint16_branchy",
    "adler32_uint32_modulo",
    "fnv1a_uint64_state_masked_to_32_bits",
    "xorshift_uint64_state",
    "collatz_steps_of_a_python_int",
    "collatz_steps_of_an_int64_element",
    "gcd_by_euclid_python_ints",
    "newton_sqrt_of_a_float64_element",
    "digit_sum_while_python_int",
    "power_by_squaring_overflows_int64",
    "while_writes_every_third_element",
    "while_and_or_running_sum",
    "uint8_counter_keeps_its_dtype",
    "int32_tripling_keeps_its_dtype",
    "float32_halving_keeps_its_dtype",
    "while_that_runs_no_iteration",
    "gauss_seidel_while_around_a_for",
    "while_around_a_for_counts_passes",
    "fixed_point_cosine_python_floats",
    "while_running_product_python_float",
    "digit_sum_of_an_int64_element",
    "geometric_series_until_small",
    "return_first_index_above",
    "return_first_index_in_band",
    "return_last_positive_index_reversed",
    "return_index_from_enumerate",
    "return_element_over_the_array",
    "return_difference_over_zip",
    "return_true_on_a_zero",
    "return_false_when_not_sorted",
    "return_computed_int",
    "return_running_sum_when_large",
    "return_after_writes_keeps_them",
    "return_skips_the_writes_after_the_loop",
    "return_and_break_in_one_loop",
    "return_with_continue",
    "return_from_an_elif",
    "return_element_plus_one",
    "return_uint32_checksum_on_zero_byte",
    "return_first_multiple_of_four",
    "return_count_at_threshold",
    "return_insertion_point_linear_search",
    "return_first_escaping_point",
)

# NOTE: those whose loops run with NumPy, and why (none may run eagerly or graph-break).
NOT_C: dict[str, str] = {}


@pytest.mark.parametrize("name", WHILE_AND_EXITS)
def test_loop_is_kept_and_runs_as_c(name: str, caplog: pytest.LogCaptureFixture) -> None:
    compiled = compile_kept_loop(name)
    with caplog.at_level(logging.INFO, logger="numpile.perf_hints"):
        for n in (7, 4):
            compiled(*loop_inputs(name, n))
    slow = per_iteration_hints(caplog.records)
    if name in NOT_C:
        assert slow, f"{name} runs as C now: remove it from NOT_C"
    else:
        assert not slow, slow


def test_issue_23_wrote_at_least_sixty_loop_programs() -> None:
    assert len(WHILE_AND_EXITS) >= 60
