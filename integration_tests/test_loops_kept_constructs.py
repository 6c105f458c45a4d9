"""Issue 23's loop constructs kept since loopcf27, on 3.11, 3.12 and 3.13 alike: a `return`
two loops deep and in `while` bodies (scalars, arrays and tuples returned), `while ... else`
with a break, `if a or b: break` (and `and`, `not`) in `while True:`, a local first bound in
`while True:` and read after it, `while True:` left only by returns, and matrix-vector
products on a shifted row (`H[i] = np.tanh(W @ H[i - 1] + b)`), which run as one C loop.
Each program is one graph with its loops as loop nodes (nothing unrolled: the graph's size
does not depend on the trip count); values, dtypes and in-place effects at trip counts 0, 1,
4 and 7 are the corpus' checks (programs_loops.py).
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import programs_loops
import pytest
from harness import loop_inputs

import numpile

# NOTE: the program, and the loop nodes its graph has (nested ones included).
KEPT = {
    "return_from_a_nested_loop": {"for_loop": 2},
    "return_a_row_sum_from_a_nested_loop": {"for_loop": 2},
    "return_an_array_from_a_nested_loop": {"for_loop": 2},
    "return_a_pair_from_a_nested_loop": {"for_loop": 2},
    "return_from_a_while_body": {"while_loop": 1},
    "return_an_index_from_while_true": {"while_loop": 1},
    "while_else_with_a_break": {"while_loop": 1},
    "while_else_writes_only_without_a_break": {"while_loop": 1},
    "while_true_breaks_on_an_or": {"while_loop": 1},
    "while_true_breaks_on_an_and": {"while_loop": 1},
    "while_true_breaks_on_a_not": {"while_loop": 1},
    "while_true_binds_a_local_read_after": {"while_loop": 1},
    "while_true_binds_an_int_read_after": {"while_loop": 1},
    "rnn_rows_by_a_matrix_product": {"for_loop": 1},
    "rnn_rows_by_a_transposed_product": {"for_loop": 1},
}


def _loop_nodes(graph: Any) -> dict[str, int]:
    text = str(graph)
    return {op: text.count(f"= {op}(") for op in ("for_loop", "while_loop")}


@pytest.mark.parametrize("name", list(KEPT))
def test_loop_is_kept_whole(name: str) -> None:
    from numpile_capture import capture_function

    fn = getattr(programs_loops, name)
    out = numpile.explain(fn)(*loop_inputs(name, 7))
    assert out.loops_not_kept == (), out.loops_not_kept
    assert out.graph_break_count == 0 and out.graph_count == 1
    sizes = {}
    for n in (4, 7):  # static shapes: an unrolled loop would grow with n
        graph = capture_function(fn, loop_inputs(name, n), {}).graph
        counts = _loop_nodes(graph)
        for op, count in KEPT[name].items():
            assert counts[op] == count, graph
        sizes[n] = len(str(graph).splitlines())
    assert sizes[4] == sizes[7]


@pytest.mark.parametrize(
    "name", ["rnn_rows_by_a_matrix_product", "rnn_rows_by_a_transposed_product"]
)
def test_matrix_vector_bodies_run_as_c(name: str, caplog: pytest.LogCaptureFixture) -> None:
    fn = getattr(programs_loops, name)
    compiled = numpile.compile(fn, fullgraph=True, dynamic=True)
    with caplog.at_level(logging.INFO, logger="numpile.perf_hints"):
        for n in (7, 4, 0):
            args = loop_inputs(name, n)
            want = fn(*loop_inputs(name, n))
            np.testing.assert_allclose(compiled(*args), want, rtol=1e-12, atol=1e-12)
    slow = [r.getMessage() for r in caplog.records if "per iteration" in r.getMessage()]
    assert not slow, slow


def test_matrix_vector_product_with_mismatched_sizes_raises_as_eager() -> None:
    def f(H: Any, W: Any) -> Any:
        for i in range(1, H.shape[0]):
            H[i, :2] = W @ H[i - 1]
        return H

    H, W = np.ones((4, 3)), np.ones((2, 2))
    with pytest.raises(ValueError) as eager:
        f(H.copy(), W)
    with pytest.raises(ValueError) as compiled:
        numpile.compile(f)(H.copy(), W)
    assert str(compiled.value) == str(eager.value)


def test_a_break_before_the_local_is_bound_is_not_kept() -> None:
    # `v` is unbound after the loop when it breaks in its first test: eager raises
    # UnboundLocalError there; the loop runs as before, and explain says why.
    def f(x: Any) -> Any:
        i = 0
        while True:
            if i >= x.shape[0]:
                break
            v = x[i] * 2.0
            i += 1
            if v > 1.0:
                break
        return v, i

    x = np.array([0.1, 0.2, 3.0])
    out = numpile.explain(f)(x)
    (loop,) = out.loops_not_kept
    assert "may be unbound after the loop" in loop.reason and loop.lineno > 0
    assert numpile.compile(f)(x) == f(x)
    with pytest.raises(UnboundLocalError):
        numpile.compile(f)(np.zeros(0))


def test_while_else_whose_values_change_type_is_not_kept() -> None:
    # `s = 0.0` becomes a NumPy float64 in the loop: the clause cannot be traced once for
    # both (0 iterations: a Python float); the loop falls back, with a reason (3.12+ copy
    # the code after the clause into the break: there the return's type changes too).
    def f(x: Any) -> Any:
        i = 0
        s = 0.0
        while i < x.shape[0]:
            if x[i] > 2.0:
                break
            s += x[i]
            i += 1
        else:
            s = s + 100.0
        return s, i

    x = np.array([0.5, 1.0, 0.25])
    out = numpile.explain(f)(x)
    assert out.loops_not_kept and out.loops_not_kept[0].lineno > 0
    got, want = numpile.compile(f)(x), f(x)
    assert got == want and type(got[0]) is type(want[0])
