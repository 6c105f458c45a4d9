"""Dynamic shapes end to end: programs run at many sizes, compiled with dynamic=None/True/False.

Every call is compared with NumPy eager: values (bit-exact on the eager backend), dtypes,
shapes, in-place effects on the inputs and aliasing; the number of compiles stays small
where sizes can be symbolic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import numpile
from numpile_capture import CaptureFallbackWarning

SIZES = (4, 9, 16, 2, 33, 64, 5, 0, 1, 12)


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    numpile.reset()
    yield
    numpile.reset()


def relu_matmul(x: Any, w: Any) -> Any:
    return np.maximum(x @ w, 0).sum(axis=0)


def broadcast_rows(x: Any, w: Any) -> Any:
    return (x - x.mean(axis=1, keepdims=True)) * w[:, 0]


def int_weak_scalar(x: Any, w: Any) -> Any:
    return (x.astype(np.int16) * 3 + 1) // 2


def in_place_update(x: Any, w: Any) -> Any:
    x *= 2.0
    x[1:] += x[:-1]
    return x


def view_of_input(x: Any, w: Any) -> Any:
    return x[::2].T


def shape_arithmetic(x: Any, w: Any) -> Any:
    n = x.shape[0]
    return x.reshape(-1) * (n + 1), x.size


def reductions(x: Any, w: Any) -> Any:
    return x.max(axis=0), x.argmin(axis=0), x.std(), np.cumsum(x, axis=0)


def concat_and_stack(x: Any, w: Any) -> Any:
    return np.concatenate([x, x * 2], axis=0).sum(axis=1), np.stack([x, x]).shape


def allocations_of_sizes(x: Any, w: Any) -> Any:
    # Sizes that reach np.zeros/ones/empty/full stay symbolic (no guard on their values).
    n, m = x.shape
    out = np.zeros(n)
    out[:] = x[:, 0]
    filled = np.empty(x.shape, dtype=np.float32)
    filled[...] = x * 2
    return (
        out + np.ones((n, m), dtype=np.float32).sum(axis=1),
        filled,
        np.full(n + 1, 2, dtype=np.int16),
        np.full((2, n), m).sum(axis=0),
    )


PROGRAMS: list[Callable[..., Any]] = [
    relu_matmul,
    broadcast_rows,
    int_weak_scalar,
    in_place_update,
    view_of_input,
    shape_arithmetic,
    reductions,
    concat_and_stack,
    allocations_of_sizes,
]


# Programs that return sizes as Python ints: each size is its own (guarded) entry.
SPECIALIZING = (shape_arithmetic, concat_and_stack)


def _inputs(n: int, seed: int) -> tuple[Any, Any]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 3)), rng.standard_normal((3, 4))


def _compare(got: Any, want: Any) -> None:
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _compare(g, w)
        return
    assert type(got) is type(want)
    if isinstance(want, np.ndarray):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    else:
        assert got == want


@pytest.mark.parametrize("dynamic", [None, True, False], ids=["auto", "dynamic", "static"])
@pytest.mark.parametrize("program", PROGRAMS, ids=[p.__name__ for p in PROGRAMS])
def test_program_matches_numpy_at_every_size(program: Callable[..., Any], dynamic: Any) -> None:
    compiled = numpile.compile(program, backend="eager", dynamic=dynamic)
    if dynamic is False or program in SPECIALIZING:
        # Ten sizes, each its own entry: the ninth hits the cache size limit, warns once
        # and runs eagerly, as every later new size does.
        with pytest.warns(CaptureFallbackWarning, match="cache_size_limit"):
            _run_every_size(program, compiled)
        from numpile_guards import cache_for

        assert len(cache_for(program.__code__).entries) == numpile.config.cache_size_limit
        return
    _run_every_size(program, compiled)
    if dynamic is True:
        from numpile_guards import cache_for

        # Sizes 0 and 1, a duck-sizing coincidence (4 == w.shape[1]), one symbolic entry.
        assert len(cache_for(program.__code__).entries) <= 4


def _run_every_size(program: Callable[..., Any], compiled: Callable[..., Any]) -> None:
    for index, n in enumerate(SIZES):
        x_eager, w_eager = _inputs(n, index)
        x_compiled, w_compiled = _inputs(n, index)
        try:
            want = program(x_eager, w_eager)
        except ValueError as error:
            with pytest.raises(ValueError, match=str(error)):
                compiled(x_compiled, w_compiled)
            continue
        got = compiled(x_compiled, w_compiled)
        _compare(got, want)
        np.testing.assert_array_equal(x_compiled, x_eager)  # in-place effects
        if isinstance(want, np.ndarray) and np.shares_memory(want, x_eager):
            assert np.shares_memory(got, x_compiled)


def test_automatic_dynamic_compiles_at_most_twice_for_nonzero_sizes() -> None:
    from numpile_guards import cache_for

    compiled = numpile.compile(relu_matmul, backend="eager")
    for n in range(2, 60, 3):
        x, w = _inputs(n, n)
        _compare(compiled(x, w), relu_matmul(x, w))
    assert len(cache_for(relu_matmul.__code__).entries) == 2


def test_dynamic_entries_with_the_inductor_match_numpy() -> None:
    def f(x: Any) -> Any:
        y = np.sin(x) * 2.0 + x.sum(axis=1, keepdims=True)
        return y, y.reshape(-1, 2)[::3].sum(axis=1)

    from numpile_guards import cache_for

    compiled = numpile.compile(f, dynamic=True)
    for n in (4, 18, 64):
        x = np.random.default_rng(n).standard_normal((n, 5))
        for got, want in zip(compiled(x), f(x), strict=True):
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert len(cache_for(f.__code__).entries) == 1


def test_allocations_of_symbolic_sizes_with_the_inductor_compile_once() -> None:
    from numpile_guards import cache_for

    compiled = numpile.compile(allocations_of_sizes, dynamic=True)
    for n in (4, 18, 64):
        x, w = _inputs(n, n)
        _compare(compiled(x, w), allocations_of_sizes(x, w))
    assert len(cache_for(allocations_of_sizes.__code__).entries) == 1


def reversed_views(x: Any, index: Any) -> Any:
    column = x[::-1, 3]  # starts at row s0 - 1: a size the kernels do not loop over
    np.multiply.at(column, index, 0.5)
    return x[::-1] * 2.0, column * 1.0


def test_views_starting_at_a_symbolic_size_compile_once_with_the_inductor() -> None:
    # A kernel indexing from `s0 - 1` takes `s0` as an argument. Without it the C build of
    # every symbolic entry failed and each size fell back to a static compile of its own.
    from numpile_guards import cache_for

    compiled = numpile.compile(reversed_views, dynamic=True)
    index = np.array([0, 2, 2, 1])
    for n in (6, 9, 13):  # never 4 or 5: a size equal to another input's is its symbol
        x = np.arange(n * 5.0).reshape(n, 5)
        x_compiled = x.copy()
        for got, want in zip(compiled(x_compiled, index), reversed_views(x, index), strict=True):
            _compare(got, want)
        np.testing.assert_array_equal(x_compiled, x)
    assert len(cache_for(reversed_views.__code__).entries) == 1


def collatz_of_a_size(x: Any) -> Any:
    c = x.shape[0]
    steps = 0
    while c != 1:
        c = c // 2 if c % 2 == 0 else 3 * c + 1
        steps += 1
    return x * steps, steps


def test_a_loop_of_size_arithmetic_pins_the_size_instead_of_reasoning_on_deep_expressions() -> None:
    # Each iteration nests the size's expression one floor deeper, and sympy's reasoning on
    # it grows with the depth: 111 iterations at size 27 never finished before such an
    # expression pinned its size (a guard on its value).
    from numpile_guards import cache_for

    compiled = numpile.compile(collatz_of_a_size, backend="eager", dynamic=True)
    for n in (27, 9):
        x = np.arange(float(n))
        got, want = compiled(x), collatz_of_a_size(x)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1] == want[1] and type(got[1]) is type(want[1])
    texts = [
        str(guard)
        for entry in cache_for(collatz_of_a_size.__code__).entries
        for guard in entry.check.guards
    ]
    assert any("L['x'].shape[0] == 27" in text for text in texts), texts
