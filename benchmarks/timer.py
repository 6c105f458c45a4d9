"""Timing callables side by side: the first call alone, then medians of interleaved samples.

The first call is kept apart because for a compiler it holds the compile; the steady state is
the median of samples, each sample long enough (``inner`` calls) that the clock's resolution
does not matter, with the garbage collector paused as ``timeit`` does.

    >>> timings = measure_interleaved({"sum": sum}, ([1, 2, 3],), budget_s=0.01, min_repeats=3)
    >>> timings["sum"].repeats >= 3
    True
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable, Mapping
from typing import Any

import attrs

# A sample shorter than this is repeated `inner` times so that timer overhead stays below ~0.1%.
_MIN_SAMPLE_S = 2e-3
_MAX_INNER = 100_000


@attrs.frozen
class Timing:
    """How long calls took: the first one, and the steady state after warm-up (seconds).

    >>> Timing(first_s=1.0, median_s=0.25, min_s=0.2, repeats=7, inner=1).first_call_excess_s
    0.75
    """

    first_s: float
    median_s: float
    min_s: float
    repeats: int
    inner: int

    @property
    def first_call_excess_s(self) -> float:
        """First call minus the steady-state call: the compile time of a JIT."""
        return max(self.first_s - self.median_s, 0.0)


def _sample(fn: Callable[..., Any], args: tuple[Any, ...], inner: int) -> float:
    start = time.perf_counter()
    for _ in range(inner):
        fn(*args)
    return (time.perf_counter() - start) / inner


def _median(samples: list[float]) -> float:
    ordered = sorted(samples)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def _warm_up(
    fn: Callable[..., Any], args: tuple[Any, ...], warmup: int
) -> tuple[float, int] | Exception:
    # The first call (a JIT's compile) timed alone, then warm-up calls that size `inner`.
    try:
        start = time.perf_counter()
        fn(*args)
        first_s = time.perf_counter() - start
        warm_s = first_s
        for _ in range(warmup):
            start = time.perf_counter()
            fn(*args)
            warm_s = time.perf_counter() - start
    except Exception as error:  # handed back: a failing contender is a result
        return error
    inner = 1
    if warm_s < _MIN_SAMPLE_S:
        inner = min(_MAX_INNER, math.ceil(_MIN_SAMPLE_S / max(warm_s, 1e-9)))
    return first_s, inner


def measure_interleaved(
    fns: Mapping[str, Callable[..., Any]],
    args: tuple[Any, ...],
    *,
    budget_s: float,
    min_repeats: int,
    max_repeats: int = 100,
    warmup: int = 2,
) -> dict[str, Timing | Exception]:
    """Time each ``fn(*args)``: its first call alone, then samples taken in rounds.

    Each round takes one sample of every function (the order rotates), so a burst of load
    from elsewhere on the machine lands on all of them alike and their ratios stay fair.
    Rounds stop once ``min_repeats`` exist and ``budget_s`` has passed, or at
    ``max_repeats``. A function that raises gets its exception instead of a ``Timing``.

        >>> timings = measure_interleaved({"abs": abs}, (-1,), budget_s=0.0, min_repeats=5)
        >>> timings["abs"].repeats
        5
    """
    results: dict[str, Timing | Exception] = {}
    firsts: dict[str, tuple[float, int]] = {}
    for name, fn in fns.items():
        outcome = _warm_up(fn, args, warmup)
        if isinstance(outcome, Exception):
            results[name] = outcome
        else:
            firsts[name] = outcome
    names = list(firsts)
    samples: dict[str, list[float]] = {name: [] for name in names}
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        began = time.perf_counter()
        for round_index in range(max_repeats):
            if not names:
                break
            shift = round_index % len(names)
            for name in names[shift:] + names[:shift]:
                try:
                    samples[name].append(_sample(fns[name], args, firsts[name][1]))
                except Exception as error:  # same as a failing first call
                    results[name] = error
            names = [name for name in names if name not in results]
            enough = round_index + 1 >= min_repeats
            if enough and time.perf_counter() - began >= budget_s:
                break
    finally:
        if gc_was_enabled:
            gc.enable()
    for name, (first_s, inner) in firsts.items():
        if name in results:
            continue
        taken = samples[name]
        results[name] = Timing(
            first_s=first_s,
            median_s=_median(taken),
            min_s=min(taken),
            repeats=len(taken),
            inner=inner,
        )
    return {name: results[name] for name in fns}
