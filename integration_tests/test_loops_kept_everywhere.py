"""Issue 23's loops kept on 3.11, 3.12 and 3.13 alike: `while True:` loops that break on
run-time values (3.12+ copy the code after such a loop into each break, or thread it through
an enclosing `for`'s jump back), `continue` in nested loops, `for ... else` with a break, a
loop that both returns and breaks, rows at a shifted index (`A[i - 1]`, `A[i + 1]`,
`A[i - 1, j]`; past the end: eager's IndexError), loops inside `try` blocks and `while`
tests that are chained comparisons of run-time values, a counted `while` in a `try` block.
Capture keeps each loop (no graph break, nothing unrolled) and the inductor runs it as C
(no body run with NumPy per iteration). Values, dtypes and in-place effects are the
corpus' checks (programs_loops.py).
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import programs_loops
import pytest
from harness import loop_inputs

import numpile

KEPT_EVERYWHERE = (
    "while_true_breaks_on_running_sum",
    "while_true_newton_sqrt_of_an_element",
    "while_true_halvings_per_element",
    "while_true_skips_negatives_with_continue",
    "continue_in_an_inner_loop",
    "continue_outer_loop_before_its_inner_loop",
    "return_and_break_in_one_loop",
    "for_else_gives_a_default_index",
    "for_else_writes_only_without_a_break",
    "rows_smoothed_by_the_previous_row",
    "rows_differenced_with_the_next_row",
    "dot_of_neighbouring_rows",
    "elements_accumulated_down_columns",
    "gauss_seidel_rows_by_slices",
    "next_row_past_the_end_keeps_earlier_writes",
    "squares_summed_inside_try",
    "newton_sqrt_inside_try_finally",
    "while_chained_comparison_in_a_for",
    "while_true_or_break_ends_a_for_body",
    "sum_to_a_counter_inside_try",
)


@pytest.mark.parametrize("name", KEPT_EVERYWHERE)
def test_loop_is_kept_and_runs_as_c(name: str, caplog: pytest.LogCaptureFixture) -> None:
    fn = getattr(programs_loops, name)
    try:
        out = numpile.explain(fn)(*loop_inputs(name, 7))
    except IndexError:
        return _kept_until_the_error(fn, loop_inputs(name, 7))
    assert out.loops_not_kept == ()
    assert out.graph_break_count == 0
    compiled = numpile.compile(fn, fullgraph=True, dynamic=True)
    with caplog.at_level(logging.INFO, logger="numpile.perf_hints"):
        for n in (7, 4):
            try:
                compiled(*loop_inputs(name, n))
            except IndexError:
                assert name.endswith("keeps_earlier_writes")  # the corpus compares the error
    slow = [r.getMessage() for r in caplog.records if "per iteration" in r.getMessage()]
    assert not slow, slow


def _kept_until_the_error(fn: Any, args: tuple[Any, ...]) -> None:
    # The program raises IndexError (as eager does): its loop is still one loop node.
    from numpile_capture import capture_function

    graph = capture_function(fn, args, {}).graph
    assert "for_loop" in str(graph)


def test_while_true_on_known_values_still_unrolls() -> None:
    # A `while True:` whose breaks test values known at capture time runs now, unrolled:
    # the graph has no while_loop node.
    def count_to_the_length(x: Any) -> Any:
        i = 0
        while True:
            if i >= x.shape[0]:
                break
            i += 1
        return x * i

    x = np.arange(5.0)
    out = numpile.explain(count_to_the_length)(x)
    assert out.graph_break_count == 0
    assert "while_loop" not in str(out.graphs[0])
    np.testing.assert_array_equal(numpile.compile(count_to_the_length)(x), x * 5)
