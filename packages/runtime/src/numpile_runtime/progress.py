"""Compile progress: one line on stderr for a compile that takes longer than 2 seconds.

The outermost `compile_progress(label)` block is one compile (the dispatcher
opens it around a backend call, naming the function). If it is still running
after `DELAY_S`, a ticker thread writes, and keeps rewriting, one line:

    [numpile] compiling step (model.py:12): cpp_build, 1/3 builds done, 4.2 s

and ends it with the total time once the block exits. The stage is the latest
`metrics.timed` stage; builds are the compiler jobs of `build_many`.

When: stderr is a terminal or a notebook's stream (auto); `NUMPILE_LOGS=progress`
(or `set_logs("progress")`) forces it on, `NUMPILE_LOGS=-progress` off.

    >>> with compile_progress("f (m.py:1)"):
    ...     pass
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from collections.abc import Iterator
from typing import TextIO

from .locks import new_lock

__all__ = ["DELAY_S", "build_done", "builds_started", "compile_progress", "set_stage"]

# A compile shorter than this prints nothing.
DELAY_S = 2.0
_TICK_S = 0.5
_LOGGER = "numpile.progress"


class _Progress:
    # The state of the compile in progress: written by compile threads, read by the ticker.
    def __init__(self, label: str, stream: TextIO) -> None:
        self.label = label
        self.stream = stream
        self.started = time.perf_counter()
        self.stage = ""
        self.builds_total = 0
        self.builds_done = 0
        self.shown = False
        self.finished = threading.Event()
        self.lock = new_lock()

    def line(self) -> str:
        elapsed = time.perf_counter() - self.started
        parts = [self.stage] if self.stage else []
        if self.builds_total:
            parts.append(f"{self.builds_done}/{self.builds_total} builds done")
        parts.append(f"{elapsed:.1f} s")
        return f"[numpile] compiling {self.label}: {', '.join(parts)}"

    def tick(self) -> None:
        if self.finished.wait(DELAY_S):
            return
        while True:
            with self.lock:
                if self.finished.is_set():
                    return
                self._write("\r" + self.line() + "\x1b[K")
                self.shown = True
            if self.finished.wait(_TICK_S):
                return

    def finish(self) -> None:
        with self.lock:
            self.finished.set()
            if self.shown:
                elapsed = time.perf_counter() - self.started
                self._write(f"\r[numpile] compiled {self.label} in {elapsed:.1f} s\x1b[K\n")

    def _write(self, text: str) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.stream.write(text)
            self.stream.flush()


# NOTE: the compile in progress (one at a time: compiles are serialized by the dispatcher's
# lock; a nested block is part of the outer compile).
_CURRENT: _Progress | None = None
_CURRENT_LOCK = new_lock()


@contextlib.contextmanager
def compile_progress(label: str) -> Iterator[None]:
    """Show progress of the compile inside the block if it takes longer than `DELAY_S`.

    >>> with compile_progress("g (m.py:3)"):
    ...     set_stage("lowering")
    """
    global _CURRENT
    stream = sys.stderr
    progress = None
    with _CURRENT_LOCK:
        # A block inside a compile in progress is part of it.
        if _CURRENT is None and _enabled(stream):
            progress = _CURRENT = _Progress(label, stream)
    if progress is None:
        yield
        return
    ticker = threading.Thread(target=progress.tick, name="numpile-progress", daemon=True)
    ticker.start()
    try:
        yield
    finally:
        progress.finish()
        ticker.join()
        with _CURRENT_LOCK:
            _CURRENT = None


def set_stage(stage: str) -> None:
    """Name the stage the compile in progress is in (`metrics.timed` calls it).

    >>> set_stage("lowering")
    """
    progress = _CURRENT
    if progress is not None:
        progress.stage = stage


def builds_started(count: int) -> None:
    """`count` compiler jobs were started for the compile in progress.

    >>> builds_started(2)
    """
    progress = _CURRENT
    if progress is not None:
        with progress.lock:
            progress.builds_total += count


def build_done() -> None:
    """One compiler job of the compile in progress finished.

    >>> build_done()
    """
    progress = _CURRENT
    if progress is not None:
        with progress.lock:
            progress.builds_done += 1


def _enabled(stream: TextIO) -> bool:
    level = logging.getLogger(_LOGGER).level
    if level != logging.NOTSET:
        return level <= logging.INFO  # NUMPILE_LOGS=progress: on; -progress: off
    if type(stream).__module__.startswith("ipykernel"):
        return True
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
