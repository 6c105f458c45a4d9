"""max_autotune: choose the OpenMP thread count and parallel threshold by measuring.

Shapes are static, so for one graph the parallel threshold only decides which loop
nests start OpenMP threads; the thread count decides how many. `autotune` builds the
graph's module once per candidate threshold (in parallel), times each with every
candidate thread count on the example inputs, and returns the fastest pair. The choice
is stored in the on-disk cache under the graph's key, so another process (or a later
compile) reuses it without measuring.

    >>> choice = autotune(build, config, example_inputs, key="...")  # doctest: +SKIP
    >>> choice.threads, choice.parallel_threshold  # doctest: +SKIP
    (2, 65536)
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from ...config import InductorConfig

log = logging.getLogger("numpile.inductor.autotune")

# One build per threshold: the default, and one that starts threads on 8x smaller loops.
_THRESHOLD_DIVISORS = (1, 8)
# Time spent measuring one candidate, and the repetitions it gets within that.
_BUDGET_S = 0.05
_MAX_REPEATS = 50

# Builds the graph once per threshold: (compiled callable, its module's set_threads) each.
BuildCandidates = Callable[[Sequence[int]], list[tuple[Callable[..., Any], Callable[[int], Any]]]]


@attrs.frozen
class AutotuneChoice:
    """The measured best: OpenMP threads and the parallel threshold, and the time it took.

    >>> AutotuneChoice(2, 65536, 1e-3).threads
    2
    """

    threads: int
    parallel_threshold: int
    seconds: float


def thread_candidates() -> list[int]:
    """1, then powers of two up to the CPUs this process may run on, then that count.

    >>> thread_candidates()[0]
    1
    """
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    counts = [1]
    while counts[-1] * 2 <= cpus:
        counts.append(counts[-1] * 2)
    if counts[-1] != cpus:
        counts.append(cpus)
    return counts


def autotune(
    build: BuildCandidates,
    config: InductorConfig,
    example_inputs: Sequence[Any],
    *,
    key: str,
) -> AutotuneChoice:
    """The fastest (threads, parallel threshold) for a graph, from the cache or measured.

    `build(thresholds)` returns, per threshold, the compiled callable and the module's
    `set_threads`. The callable must not mutate its inputs (a functionalized graph).

        >>> autotune(build, InductorConfig(), [x], key="k")  # doctest: +SKIP
    """
    import numpile_runtime as rt

    cache = rt.default_cache()
    blob_key = f"autotune-{key}"
    stored = cache.get_bytes(blob_key)
    if stored is not None:
        try:
            values = json.loads(stored)
            return AutotuneChoice(
                int(values["threads"]), int(values["parallel_threshold"]), float(values["seconds"])
            )
        except (ValueError, KeyError, TypeError):
            log.warning("ignoring an unreadable autotune choice in the cache")
    thresholds = sorted({max(1, config.parallel_threshold // d) for d in _THRESHOLD_DIVISORS})
    built = build(thresholds)
    best: AutotuneChoice | None = None
    for threshold, (fn, set_threads) in zip(thresholds, built, strict=True):
        for threads in thread_candidates():
            set_threads(threads)
            seconds = _measure(fn, example_inputs)
            log.debug("autotune: threshold=%d threads=%d: %.3g s", threshold, threads, seconds)
            if best is None or seconds < best.seconds:
                best = AutotuneChoice(threads, threshold, seconds)
        set_threads(0)
    assert best is not None
    log.info(
        "autotune: %d threads, parallel threshold %d (%.3g s per call)",
        best.threads,
        best.parallel_threshold,
        best.seconds,
    )
    cache.put_bytes(blob_key, json.dumps(attrs.asdict(best)).encode())
    return best


def _measure(fn: Callable[..., Any], inputs: Sequence[Any]) -> float:
    # The minimum over repetitions (after one warm-up call) within a small time budget.
    fn(*inputs)
    best = float("inf")
    spent = 0.0
    repeats = 0
    while repeats < 3 or (spent < _BUDGET_S and repeats < _MAX_REPEATS):
        start = time.perf_counter()
        fn(*inputs)
        elapsed = time.perf_counter() - start
        best = min(best, elapsed)
        spent += elapsed
        repeats += 1
    return best
