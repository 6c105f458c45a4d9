"""Loop nests at random (issue 23): a `for` loop over a range drawn from several shapes (a
Python int trip count, a negative step, symbolic bounds from `A.shape[0]`, a step of 2),
with a body of 1-4 statements drawn from index-dependent slices (`A[i, :i] @ b[:i]`, slices
that clamp past either end, negative steps), overlapping writes (`A[i, 1:] += A[i, :-1]`,
`b[i:] = b[: n - i] * 0.5`), scalar recurrences on a Python
float, a Python int, a float32 scalar and an int32 scalar (NEP 50 keeps their dtypes), `if`
on the index, on a Python int computed in the body and on array values, `continue` /
`break`, and an inner loop `for j in range(i)`. Each generated function is compiled once and
called on three sizes and trip counts (0 and 1 among them); results (values, dtypes and
types), the inputs afterwards (in-place effects) and the loop variable after the loop must
match eager. The `triton` case runs where Triton does (`nox -s tests-triton-interpret`).

Branches on array values graph-break today, so a body with one is compiled without
fullgraph (and must still never fall back to eager); every other body is compiled with
`fullgraph=True`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from harness import examples, skip_unless_chosen
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import numpile
from numpile_capture.capture_events import recording_captures

LOOPS = (
    "for i in range(N):",
    "for i in range(N - 1, -1, -1):",
    "for i in range(1, A.shape[0]):",
    "for i in range(0, A.shape[0], 2):",
    "for i in range(A.shape[0] - 1, 0, -2):",
)

# Each statement is valid for any 0 <= i < A.shape[0] (A is square, b has A's length).
STATEMENTS = (
    "s = s * 0.5 + b[i]",
    "k = k * 3 + i",
    "t = t * 1.5 + i",
    "c = c + i * 2",
    "b[i] = b[i] - A[i, :i] @ b[:i] * 0.25",
    "A[i, 1:] += A[i, :-1]",
    "acc = acc + A[i, : i + 1].sum()",
    "A[i] = np.where(A[i] > s, A[i], s)",
    "b[: i + 1] = b[i::-1] * 0.5",
    "b[i:] = b[: b.shape[0] - i] * 0.5",
    "s = s + b[i + 2 :].sum() - b[: i - 1].sum()",
    "A[i, i:] -= 0.5 * A[0, i:]",
    "acc = acc + b[i::-1] @ A[i, : i + 1]",
    "if i % 2 == 0:\n    s = s - 1.0",
    "if k % 3 == 1:\n    b[i] *= 2.0\nelse:\n    k = k - 1",
    "if i == 2:\n    continue",
    "if i == 3:\n    break",
    "for j in range(i):\n    A[i, j] -= A[i, :j] @ A[:j, j] * 0.1",
    "if b[i] > 0:\n    s = s + b[i]",
    "if A[i, 0] < s:\n    acc = acc + 1.0",
)

# Statements that branch on array values: a graph break per iteration today.
DATA_BRANCHES = frozenset(text for text in STATEMENTS if text.startswith(("if b[", "if A[")))


def source(loop: str, statements: list[str]) -> str:
    """The generated function ``f(A, b, N)``; returns every carried value and the index.

    >>> print(source("for i in range(N):", ["k = k * 3 + i"]).splitlines()[6])
        for i in range(N):
    """
    body = "\n".join("        " + line for text in statements for line in text.split("\n"))
    return (
        "def f(A, b, N):\n"
        "    s = 0.0\n"
        "    k = 1\n"
        "    t = np.float32(0.5)\n"
        "    c = np.int32(3)\n"
        "    acc = np.zeros(())\n"
        f"    {loop}\n{body}\n"
        "    return s, k, t, c, acc, i\n"
    )


def _inputs(n: int, N: int, seed: int) -> tuple[Any, ...]:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, n)), rng.standard_normal(n), N)


def _outcome(fn: Any, args: tuple[Any, ...]) -> tuple[str, Any, tuple[Any, ...]]:
    try:
        result: Any = fn(*args)
    except Exception as error:  # an empty loop leaves `i` unbound: eager's error is compared
        return "raised", f"{type(error).__name__}: {error}", args
    return "returned", result, args


def _same(want: Any, got: Any, rtol: float) -> None:
    assert type(got) is type(want), (want, got)
    if isinstance(want, tuple):
        assert len(got) == len(want)
        for a, b in zip(want, got, strict=True):
            _same(a, b, rtol)
    elif isinstance(want, np.ndarray | np.generic | float):
        assert np.asarray(got).dtype == np.asarray(want).dtype, (want, got)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-12)
    else:
        assert got == want


def _check(backend: str, loop: str, statements: list[str], calls: list[tuple[int, int]]) -> None:
    namespace: dict[str, Any] = {"np": np}
    exec(source(loop, statements), namespace)
    fn = namespace["f"]
    fullgraph = not DATA_BRANCHES.intersection(statements)
    numpile.reset()
    compiled = numpile.compile(fn, backend=backend, fullgraph=fullgraph)
    rtol = 1e-12 if backend == "eager" else 1e-9
    with recording_captures() as events:
        for seed, (n, trips) in enumerate(calls):
            N = min(trips, n)
            want = _outcome(fn, _inputs(n, N, seed))
            got = _outcome(compiled, _inputs(n, N, seed))
            _same(want, got, rtol)
    assert not any(event.eager for event in events)


def _triton_interpreting() -> bool:
    # The Triton backend runs here only under Triton's CPU interpreter set before triton was
    # imported (nox -s tests-triton-interpret), or on a GPU.
    import numpile_runtime as rt

    return rt.triton_status().mode in ("interpret", "gpu")


@pytest.mark.parametrize(
    "backend",
    [
        "eager",
        "inductor",
        pytest.param(
            "triton",
            marks=pytest.mark.skipif(
                not _triton_interpreting(), reason="needs triton (TRITON_INTERPRET=1 or a GPU)"
            ),
        ),
    ],
)
def test_random_loop_nests_behave_as_in_eager(backend: str) -> None:
    skip_unless_chosen(backend)
    cases = st.tuples(
        st.sampled_from(LOOPS),
        st.lists(st.sampled_from(STATEMENTS), min_size=1, max_size=4),
        st.lists(st.tuples(st.sampled_from([1, 2, 4, 5]), st.sampled_from([0, 1, 3, 5])),
                 min_size=3, max_size=3),
    )  # fmt: skip
    run = settings(
        max_examples=examples(40 if backend == "eager" else 12),
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow],
    )(given(cases)(lambda case: _check(backend, *case)))
    run()
