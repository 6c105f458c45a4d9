"""A symbolic size as an index (operators.run_time_index): `path[n - 1] = last` and
`score[n - 1, k]`, with `n = x.shape[0]`, read the size at run time as a loop's index is
read, so a new size reuses the graph instead of pinning the size (a guard, then a new
capture for every trip count); Python's negative indices and its IndexError stay eager's.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from numpile_capture import compile_function
from numpile_capture.capture_events import recording_captures
from numpile_capture.testing import assert_same_as_eager as _same

pytestmark = pytest.mark.usefixtures("fresh_dispatch")


def last_row_pick(score: Any) -> Any:
    # Viterbi's end: the best state of the last row, written at the last position.
    n, s = score.shape
    path = np.zeros(n, dtype=np.int64)
    last = 0
    for k in range(1, s):
        if score[n - 1, k] > score[n - 1, last]:
            last = k
    path[n - 1] = last
    return path, score[n - 1, last], score[n - 2, 0]


def _score(n: int) -> tuple[Any, ...]:
    return (np.random.default_rng(n).standard_normal((n, 3)),)


def _outcome(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except IndexError as error:
        return str(error)


def test_a_size_index_reads_the_size_at_run_time() -> None:
    compiled = compile_function(last_row_pick, backend="eager", dynamic=True)
    with recording_captures() as events:
        for n in (4, 7, 40, 23):
            _same(compiled(*_score(n)), last_row_pick(*_score(n)))
    assert [event.break_reason for event in events] == [None]
    assert "element_at" in str(events[0].graph)
    for n in (1, 0):  # sizes 0 and 1 are specialized, as torch does
        _same(_outcome(compiled, *_score(n)), _outcome(last_row_pick, *_score(n)))
