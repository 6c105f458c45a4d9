"""pytest setup for the integration tests: the harness on sys.path, the compile function, reset.

The corpus imports only ``numpile``. ``NUMPILE_CORPUS_STANDIN=1`` swaps ``numpile.compile`` for a
stand-in that returns the function unchanged, to check the corpus itself (every program runs
eagerly, factories are deterministic) while the real stack is unavailable.
"""

from __future__ import annotations

import gc
import os
import pathlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

# The tests compare the compiled kernels with eager, so no call may run on the tiered path
# (NumPy op by op, or the function's own Python, while the build runs in the background):
# without this, nearly every call of a test with a cold cache ran NumPy against NumPy.
# `test_tiered.py` turns tiering on through the `tiered` option, which overrides this.
os.environ["NUMPILE_TIERED"] = "0"

# pytest runs with --import-mode=importlib, which does not put test folders on sys.path.
sys.path.insert(0, str(pathlib.Path(__file__).parent))

from harness import corpus_backends, count_by_theme, load_corpus, standin_compile

import numpile

STANDIN = os.environ.get("NUMPILE_CORPUS_STANDIN") == "1"


@pytest.fixture
def compile_fn() -> Callable[..., Callable[..., Any]]:
    if STANDIN:
        return standin_compile
    compile_ = getattr(numpile, "compile", None)
    if compile_ is None:
        pytest.fail(
            "numpile.compile does not exist yet (NUMPILE_CORPUS_STANDIN=1 runs the stand-in)"
        )
    return compile_  # type: ignore[no-any-return]


@pytest.fixture(autouse=True)
def _fresh_numpile() -> Iterator[None]:
    # Each test starts from empty caches, so recompile limits and stale entries never leak across.
    reset = getattr(numpile, "reset", None)
    if reset is not None and not STANDIN:
        reset()
    yield


def pytest_report_header() -> str:
    counts = count_by_theme(load_corpus())
    themes = ", ".join(f"{theme} {count}" for theme, count in counts.items())
    mode = "stand-in compile" if STANDIN else "numpile.compile"
    return (
        f"numpile corpus: {sum(counts.values())} programs ({themes}); "
        f"backends {corpus_backends()}; {mode}"
    )


def pytest_collection_finish(session: pytest.Session) -> None:
    # Every test starts with `numpile.reset()`, whose full garbage collection (it unloads
    # the kernel libraries of dead graphs) scanned the imports and the collected programs
    # each time: 0.1-0.2 s a test on a busy 2-core machine. They live as long as the
    # process, so they are moved out of the collector's sight once.
    gc.freeze()
