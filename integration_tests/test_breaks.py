"""Graph-breaking programs: printed output matches eager, and explain() counts the breaks.

Values, dtypes, input mutations and aliasing of these programs are compared by ``test_corpus``
like every other program; here each one is run eagerly and compiled (eager backend, two calls:
compile, then cache hit) with stdout captured, and ``numpile.explain`` is asked how many graph
breaks it met.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from collections.abc import Callable
from typing import Any

import pytest
from harness import EXPECTED_BREAKS, Inputs, Program, call, load_corpus

import numpile

BREAKING = [p for p in load_corpus() if p.theme == "breaks"]


def _printed(fn: Callable[..., Any], inputs: Inputs) -> tuple[str, bool]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outcome = call(fn, inputs)
    return out.getvalue(), outcome.raised


def test_the_corpus_has_150_graph_breaking_programs() -> None:
    assert len(BREAKING) >= 150
    assert all(not p.fullgraph for p in BREAKING)
    assert sorted(EXPECTED_BREAKS) == sorted(p.id for p in BREAKING)
    # A program capture has learned to keep whole (`float(x.mean())`: a python_number
    # node) stays in the theme with 0 breaks expected; at least 150 still break.
    assert sum(EXPECTED_BREAKS[p.id] >= 1 for p in BREAKING) >= 150


@pytest.mark.parametrize("prog", BREAKING, ids=[p.id for p in BREAKING])
def test_printed_output_matches_eager(prog: Program) -> None:
    compiled = numpile.compile(prog.fn, backend="eager", fullgraph=False)
    for seed in (0, 1):  # the compile, then a cache hit that must print again
        eager_text, eager_raised = _printed(prog.fn, prog.inputs(prog.sizes[0], seed))
        compiled_text, compiled_raised = _printed(compiled, prog.inputs(prog.sizes[0], seed))
        assert compiled_raised == eager_raised == prog.expect_error
        assert compiled_text == eager_text, f"seed {seed}"


# NOTE: one explain() per program checks both the count and the lines: two tests each ran
# the same explain() of every program (every graph captured twice).
@pytest.mark.parametrize("prog", BREAKING, ids=[p.id for p in BREAKING])
def test_explain_counts_the_breaks_and_names_their_user_lines(prog: Program) -> None:
    inputs = prog.inputs(prog.sizes[0], 0)
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            report = numpile.explain(prog.fn)(*inputs.args, **inputs.kwargs)
        except Exception:
            if not prog.expect_error:
                raise
            pytest.skip("explain() re-raises the program's own exception")
    reasons = "\n".join(str(reason) for reason in report.break_reasons)
    assert report.graph_break_count == EXPECTED_BREAKS[prog.id], reasons
    for reason in report.break_reasons:
        assert reason.filename is not None and reason.lineno is not None, str(reason)
