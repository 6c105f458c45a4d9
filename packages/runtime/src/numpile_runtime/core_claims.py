"""Core claims: a build a caller waits for takes the cores first, background compilers after.

This process runs two kinds of compiler processes. Each compiler of a build a caller waits
for (a graph's module on a first call, a tiered compile the later calls wait for) claims a
core for as long as it runs (`claim_cores`): a module of two translation units claims two
while both compile, one once the shorter is done. The build queue's work for later (the
precompiled header, the buffer pool, the call gate) is background: each of its compilers
starts only on a core nothing claims and no other background compiler holds
(`background_core`), and waits otherwise. A background compiler started before a claim
keeps running, lowered (`build_queue.yield_to_callers`): a started compiler is never
paused.

    >>> with claim_cores(1):
    ...     claimed_cores()
    1
    >>> claimed_cores()
    0

The cores are those this process may run on (`usable_cores`: its CPU affinity, within its
cgroup's CPU quota), so a container given two CPUs of a large machine splits and schedules
for two. On a machine with more cores than a build claims, background compilers start at
once, as before.

Invariant: a claim is held only while a compiler process runs (no lock is taken under it),
so a background compiler that waits for a core, whatever locks its task holds, waits only
for compilers that end.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import threading
from collections.abc import Iterator

from .locks import at_fork_reset, new_lock

__all__ = [
    "background_core",
    "claim_cores",
    "claimed_cores",
    "cores_in_quota",
    "free_cores",
    "usable_cores",
]

# NOTE: the cgroup files that hold a CPU quota: version 2's `cpu.max` ("max 100000" or
# "<quota> <period>"), version 1's quota and period in microseconds (-1: none).
_CGROUP2_MAX = "/sys/fs/cgroup/cpu.max"
_CGROUP1_QUOTA = "/sys/fs/cgroup/cpu/cpu.cfs_quota_us"
_CGROUP1_PERIOD = "/sys/fs/cgroup/cpu/cpu.cfs_period_us"

# NOTE: the process-wide ledger (module globals by design: the cores are the process's).
# `_CLAIMED` counts the cores claimed by waited builds, `_BACKGROUND` the background
# compilers running; both change under `_CHANGED`, which wakes the background compilers
# waiting for a core.
_LOCK = new_lock()
_CHANGED = threading.Condition(_LOCK)
_CLAIMED = [0]
_BACKGROUND = [0]


def _forget() -> None:
    global _CHANGED
    _CHANGED = threading.Condition(_LOCK)
    _CLAIMED[0] = 0
    _BACKGROUND[0] = 0


at_fork_reset(_forget)


@functools.cache
def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity (all of the machine's where the
    platform has none), at most its cgroup's CPU quota rounded up; at least 1.

    >>> usable_cores() >= 1
    True
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    quota = cores_in_quota(_read(_CGROUP2_MAX))
    if quota is None:
        quota = cores_in_quota(f"{_read(_CGROUP1_QUOTA)} {_read(_CGROUP1_PERIOD)}".strip())
    return max(1, min(cores, quota or cores))


def cores_in_quota(text: str) -> int | None:
    """The cores a cgroup CPU quota (`"<quota> <period>"`, cgroup v2's `cpu.max`) allows,
    rounded up; None for no quota (`max`, -1) or text that is not one.

    >>> cores_in_quota("150000 100000"), cores_in_quota("max 100000"), cores_in_quota("")
    (2, None, None)
    """
    parts = text.split()
    if len(parts) != 2:
        return None
    try:
        quota, period = int(parts[0]), int(parts[1])
    except ValueError:
        return None
    if quota <= 0 or period <= 0:
        return None
    return max(1, math.ceil(quota / period))


def _read(path: str) -> str:
    try:
        with open(path) as file:
            return file.read().strip()
    except OSError:
        return ""


def claimed_cores() -> int:
    """The cores the builds callers wait for claim now.

    >>> claimed_cores()
    0
    """
    with _LOCK:
        return _CLAIMED[0]


def free_cores() -> int:
    """The cores a build that starts now may have: those no other waited build claims (at
    least 1). Background compilers do not count: they wait, or go on lowered.

    >>> free_cores() == usable_cores()
    True
    """
    return max(1, usable_cores() - claimed_cores())


@contextlib.contextmanager
def claim_cores(count: int) -> Iterator[None]:
    """Claim `count` cores (at most `usable_cores()`) for the block: a compiler a caller
    waits for runs in it, and background compilers do not start on those cores meanwhile.

    >>> with claim_cores(64):
    ...     claimed_cores() == usable_cores()
    True
    """
    count = max(0, min(count, usable_cores()))
    with _CHANGED:
        _CLAIMED[0] += count
    try:
        yield
    finally:
        with _CHANGED:
            _CLAIMED[0] = max(0, _CLAIMED[0] - count)
            _CHANGED.notify_all()


@contextlib.contextmanager
def background_core() -> Iterator[None]:
    """Wait until a core is neither claimed nor held by another background compiler, then
    hold it for the block (a background compiler runs in it).

    >>> with background_core():
    ...     pass
    """
    with _CHANGED:
        while _CLAIMED[0] + _BACKGROUND[0] >= usable_cores():
            _CHANGED.wait()
        _BACKGROUND[0] += 1
    try:
        yield
    finally:
        with _CHANGED:
            _BACKGROUND[0] = max(0, _BACKGROUND[0] - 1)
            _CHANGED.notify_all()
