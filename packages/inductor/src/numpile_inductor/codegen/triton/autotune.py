"""Autotuning of Triton launches: block sizes and warps per kernel.

A generated kernel takes its block sizes as constexprs, so tuning needs no
new code: each candidate is the same kernel launched with another `XBLOCK`
(and `RBLOCK` for looped reductions) and `num_warps`. The first call of a
compiled graph times every candidate on the call's own arrays and keeps the
fastest; the winner is stored in the code cache under the kernel's source,
its argument sizes and the device, so a later process starts tuned.

`mode="max-autotune"` times every kernel over many candidates (`candidates`).
The default mode times reduction kernels only (`TritonOptions.autotune_reductions`),
over at most `REDUCTION_CANDIDATES` configurations near the heuristic one
(`reduction_candidates`), once per kernel and shape class (the bit lengths of its
element counts), and stops timing once `REDUCTION_BUDGET_S` of launches have been
measured (per-launch times added up; about 20 ms of device time at most): each
candidate costs one untimed launch (its compile, from Triton's own disk cache after the
first process) and three timed ones. A kernel whose heuristic launch takes under
`REDUCTION_WORTH_S` is not tuned further (no other candidate compiled).

    >>> [c.xblock for c in candidates(kernel)]  # doctest: +SKIP
    [256, 512, 1024, 2048]
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from typing import Any

import attrs

import numpile_runtime as rt

from .kernel import TritonKernel, is_persistent

log = logging.getLogger("numpile.inductor.triton")

_XBLOCKS = (256, 512, 1024, 2048)
_RBLOCKS = (256, 512, 1024, 2048)
_WARPS = (4, 8)
_MAX_TILE = 16384
REDUCTION_CANDIDATES = 4  # the heuristic configuration and three near it
# Per-launch times, added over the candidates timed so far, after which no further one is
# timed: with four launches per candidate, a kernel's tuning launches take at most about
# 4 * (this + one candidate's launch) of device time.
REDUCTION_BUDGET_S = 0.005
# A kernel whose heuristic launch takes less is kept as it is: nothing else is compiled for
# it (a few tens of microseconds are mostly launch and ramp, which no tile changes).
REDUCTION_WORTH_S = 20e-6
_MAX_WARPS = 16


def _pow2_le(n: int) -> int:
    return 1 << max(0, int(n).bit_length() - 1) if n >= 1 else 1


def candidates(kernel: TritonKernel) -> list[TritonKernel]:
    """Launch configurations worth timing for `kernel`, the kernel's own first.

    Persistent reductions keep their `RBLOCK` (it covers the row); looped ones try
    several (outer ones: wide `XBLOCK`s, short `RBLOCK`s); pointwise kernels try several
    `XBLOCK`s; each with 4 and 8 warps.

    >>> candidates(kernel)[0] == kernel  # doctest: +SKIP
    True
    """
    found: dict[tuple[int, int, int], TritonKernel] = {
        (kernel.xblock, kernel.rblock, kernel.num_warps): kernel
    }
    persistent = is_persistent(kernel)
    if not kernel.is_reduction:
        shapes = [(x, 1) for x in _XBLOCKS]
    elif persistent:
        shapes = [(x, kernel.rblock) for x in (1, 2, 4, 8, 16) if x * kernel.rblock <= _MAX_TILE]
    elif kernel.outer:  # contiguous along the kept axes: wide in x, short in r
        shapes = [(x, r) for x in (8, 16, 32, 64) for r in (16, 32, 64, 128, 256)]
        shapes = [(x, r) for x, r in shapes if x * r <= _MAX_TILE]
    else:
        shapes = [(x, r) for r in _RBLOCKS for x in (1, 2, 4) if x * r <= _MAX_TILE]
    for xblock, rblock in shapes:
        if isinstance(kernel.xnumel, int) and xblock > max(1, 2 * kernel.xnumel):
            continue
        for warps in _WARPS:
            key = (xblock, rblock, warps)
            if key not in found:
                found[key] = attrs.evolve(kernel, xblock=xblock, rblock=rblock, num_warps=warps)
    return list(found.values())


def reduction_candidates(kernel: TritonKernel) -> list[TritonKernel]:
    """The default mode's choices for reduction `kernel`, its own first, at most
    `REDUCTION_CANDIDATES`: looped ones with half and twice the `RBLOCK` (warps scaled
    alike) and with other warps; persistent ones (`RBLOCK` covers the row) with half and
    twice the rows per program and other warps.

    >>> [(k.rblock, k.num_warps) for k in reduction_candidates(looped)]  # doctest: +SKIP
    [(8192, 16), (4096, 8), (16384, 16), (8192, 8)]
    """
    x, r, warps = kernel.xblock, kernel.rblock, kernel.num_warps
    other_warps = warps // 2 if warps > 4 else warps * 2
    persistent = is_persistent(kernel)
    if persistent:
        shapes = [(x, r, warps), (2 * x, r, warps), (max(1, x // 2), r, warps)]
    else:
        half_warps = max(1, warps // 2) if r >= 512 else warps
        shapes = [
            (x, r, warps),
            (x, max(16, r // 2), half_warps),
            (x, 2 * r, min(_MAX_WARPS, 2 * warps)),
        ]
    shapes.append((x, r, other_warps))
    found: dict[tuple[int, int, int], TritonKernel] = {}
    for xblock, rblock, num_warps in shapes:
        if isinstance(kernel.xnumel, int) and xblock > max(1, 2 * kernel.xnumel):
            continue  # more rows per program than there are rows
        if isinstance(kernel.rnumel, int) and rblock > 2 * max(kernel.rnumel, 1) and not persistent:
            continue  # a tile past the whole row
        key = (xblock, rblock, num_warps)
        if key not in found:
            found[key] = attrs.evolve(kernel, xblock=xblock, rblock=rblock, num_warps=num_warps)
    return list(found.values())[:REDUCTION_CANDIDATES]


def shape_class(xnumel: int, rnumel: int) -> tuple[int, int]:
    """The sizes a default-mode tuning choice serves: the bit length of the kept count and
    the exponent of the reduced count's next power of two. Row lengths of one class then
    get the same persistent RBLOCK (`kernel.fit_blocks`), so that a choice made for one
    covers every row of the others.

    >>> shape_class(1, 16_777_216), shape_class(4096, 4000) == shape_class(4096, 3000)
    ((1, 24), True)
    >>> shape_class(8, 512) == shape_class(8, 1000)
    False
    """
    return xnumel.bit_length(), max(rnumel - 1, 0).bit_length()


def cache_key(kernel: TritonKernel, signature: tuple[Any, ...], device: str) -> str:
    """The code-cache key of `kernel`'s tuned launch for argument `signature` on `device`.

    >>> len(cache_key(kernel, (1024,), "cpu"))  # doctest: +SKIP
    40
    """
    text = json.dumps([kernel.source, [str(s) for s in signature], device])
    return "triton-tune-" + hashlib.sha256(text.encode()).hexdigest()[:28]


def reduction_key(
    kernel: TritonKernel, numels: tuple[int, int], dtypes: tuple[str, ...], wide: bool, device: str
) -> str:
    """The code-cache key of the default mode's choice for reduction `kernel` launched over
    `numels` (its shape class) with arrays of `dtypes` on `device`.

    >>> reduction_key(kernel, (1, 4096), ("float64",), False, "cpu")[:12]  # doctest: +SKIP
    'triton-tune-'
    """
    return cache_key(kernel, ("reductions", *shape_class(*numels), *dtypes, wide), device)


def load_choice(key: str, kernel: TritonKernel) -> TritonKernel | None:
    """The tuned configuration stored under `key`, applied to `kernel`, or None.

    >>> load_choice("triton-tune-missing", kernel)  # doctest: +SKIP
    """
    raw = rt.default_cache().get_bytes(key)
    if raw is None:
        return None
    try:
        choice = json.loads(raw)
        chosen = attrs.evolve(
            kernel,
            xblock=int(choice["xblock"]),
            rblock=int(choice["rblock"]),
            num_warps=int(choice["num_warps"]),
        )
    except (ValueError, KeyError, TypeError):
        return None
    if kernel.is_reduction and is_persistent(kernel) and chosen.rblock != kernel.rblock:
        return None  # a persistent launch over a shorter tile would drop elements of each row
    return chosen


def tune(
    kernel: TritonKernel,
    time_launch: Callable[[TritonKernel], float],
    key: str,
    *,
    choices: list[TritonKernel] | None = None,
    budget_s: float = float("inf"),
    worth_s: float = 0.0,
) -> TritonKernel:
    """Time each of `choices` (by default `candidates(kernel)`) with `time_launch`
    (seconds), store and return the fastest; no further choice is timed once the measured
    times add up to `budget_s`, nor when the first takes less than `worth_s`.

    >>> tune(kernel, lambda k: 1.0 / k.xblock, "triton-tune-x").xblock  # doctest: +SKIP
    2048
    """
    cached = load_choice(key, kernel)
    if cached is not None:
        return cached
    timings: list[tuple[float, int, TritonKernel]] = []
    spent = 0.0
    for position, candidate in enumerate(candidates(kernel) if choices is None else choices):
        if spent >= budget_s or (timings and timings[0][0] < worth_s):
            break
        try:
            seconds = time_launch(candidate)
        except Exception as error:  # e.g. out of registers or shared memory on this device
            log.debug("autotune: %s xblock=%d failed: %s", kernel.name, candidate.xblock, error)
            continue
        timings.append((seconds, position, candidate))
        spent += seconds
    if not timings:
        return kernel
    best = min(timings, key=lambda item: (item[0], item[1]))[2]
    choice = {"xblock": best.xblock, "rblock": best.rblock, "num_warps": best.num_warps}
    rt.default_cache().put_bytes(key, json.dumps(choice).encode())
    log.info("autotune: %s -> %s (%d candidates)", kernel.name, choice, len(timings))
    return best
