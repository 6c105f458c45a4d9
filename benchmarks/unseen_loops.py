"""Unseen loops (issue 23): each program of `benchmarks.unseen_loop_programs` checked against
NumPy eager and timed, one table row a program.

    python -m benchmarks.unseen_loops                  # every program
    python -m benchmarks.unseen_loops --only 'gcd*'    # some programs (shell patterns)
    python -m benchmarks.unseen_loops --size 64        # the size the warm calls run at
    python -m benchmarks.unseen_loops --captures-only  # the checks and the captures column

Per program: ``numpile.compile(fn, dynamic=True)`` and ``numpile.compile(fn)`` against eager
at each of its sizes (result structure, leaf types, dtypes, values, the inputs afterwards),
with the captures the default options made at a new size (2 and more, after the first);
what ``numpile.explain`` finds at its last size (graphs, graph breaks, loops not kept); the
loops the inductor runs with NumPy per iteration instead of as C (its
``numpile.perf_hints`` lines, logged while the checks compiled); and NumPy's warm time over
numpile's (``dynamic=True``) at ``--size``, medians of interleaved samples
(``benchmarks.timer``). A program that writes its inputs writes them again at every sample,
as eager does; tiering is off and the queued builds are waited for before timing.
Everything runs in this process, after ``numpile.reset()`` per program.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np

from .child import agree, load_average
from .selection import is_selected
from .timer import measure_interleaved
from .unseen_loop_programs import PROGRAMS, UnseenLoop


@attrs.frozen
class UnseenRow:
    """What one program did: its check, its capture, its loops left to NumPy, its ratio."""

    name: str
    check: str
    graphs: int
    breaks: int
    not_kept: int
    per_iteration: int
    captures_again: int
    ratio: float | None


class _Hints(logging.Handler):
    # The inductor's "runs its body with NumPy per iteration" lines, counted by loop.
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.loops: set[str] = set()

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "per iteration" in message:
            self.loops.add(message.split(" runs ")[0])


def _inputs(entry: UnseenLoop, n: int, seed: int) -> tuple[Any, ...]:
    made = entry.inputs(np.random.default_rng(seed), n)
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in made)


def _outcome(fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    try:
        return fn(*args)
    except Exception as error:
        return error


def check(entry: UnseenLoop) -> tuple[str, int]:
    """``ok``, or the first way a compiled call differs from eager (options, size, what);
    and how many captures the default options made at sizes of 2 and more after the first
    (a new size that captures again; sizes 0 and 1 are specialized, as in torch)."""
    import numpile  # late: `--help` needs no compiler
    from numpile_capture.capture_events import recording_captures

    again = 0
    for label, options in (("dynamic", {"dynamic": True}), ("default", {})):
        numpile.reset()
        compiled = numpile.compile(entry.fn, **options)
        seen_a_size = False
        for seed, n in enumerate(entry.sizes):
            eager_args, compiled_args = _inputs(entry, n, seed), _inputs(entry, n, seed)
            want = _outcome(entry.fn, eager_args)
            with recording_captures() as events:
                got = _outcome(compiled, compiled_args)
            if label == "default" and n >= 2:
                again += len(events) if seen_a_size else 0
                seen_a_size = True
            if isinstance(want, Exception) or isinstance(got, Exception):
                same = type(want) is type(got) and str(want) == str(got)
                found = "ok" if same else f"{want!r} vs {got!r}"
            else:
                found = agree(want, got)
                if found == "ok":
                    found = agree(eager_args, compiled_args)
            if found != "ok":
                return f"{label} n={n}: {found}"[:80], again
    return "ok", again


def run_program(name: str, size: int, *, budget_s: float) -> UnseenRow:
    """Check, explain and time the program `name`."""
    import numpile
    import numpile_runtime

    entry = PROGRAMS[name]
    hints = _Hints()
    log = logging.getLogger("numpile.perf_hints")
    log.addHandler(hints)
    level = log.level
    log.setLevel(logging.INFO)
    try:
        checked, again = check(entry)
    finally:
        log.removeHandler(hints)
        log.setLevel(level)
    numpile.reset()
    explained = _outcome(numpile.explain(entry.fn), _inputs(entry, entry.sizes[-1], 0))
    if isinstance(explained, Exception):
        # The eager backend runs the captured graph: a wrong capture can raise here.
        return UnseenRow(name, f"explain raised {explained!r}"[:80], -1, -1, -1, -1, again, None)
    numpile.reset()
    # Tiering off and the queued builds waited for: the timed calls run the kernels, not the
    # NumPy tier a loaded machine's slow background build would leave them on.
    compiled = numpile.compile(entry.fn, dynamic=True, options={"tiered": False})
    args = _inputs(entry, size, 0)
    _outcome(compiled, _inputs(entry, size, 0))  # the compile, apart from the timing
    numpile_runtime.wait_for_queued_builds(timeout=240.0)
    timings = measure_interleaved(
        {"numpy": entry.fn, "numpile": compiled}, args, budget_s=budget_s, min_repeats=5
    )
    numpy_t, numpile_t = timings["numpy"], timings["numpile"]
    ratio = None
    if not isinstance(numpy_t, Exception) and not isinstance(numpile_t, Exception):
        ratio = numpy_t.median_s / numpile_t.median_s
    return UnseenRow(
        name=name,
        check=checked,
        graphs=explained.graph_count,
        breaks=explained.graph_break_count,
        not_kept=len(explained.loops_not_kept),
        per_iteration=len(hints.loops),
        captures_again=again,
        ratio=ratio,
    )


def render(rows: Sequence[UnseenRow], *, size: int) -> str:
    """The rows as a Markdown table, with the size and the load average."""
    lines = [
        f"Unseen loops at size {size}; load average {load_average()}",
        "",
        "| program | result | graphs | breaks | loops not kept | loops run by NumPy "
        "| captures at a new size | NumPy / numpile |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        ratio = "n/a" if row.ratio is None else f"{row.ratio:.2f}x"
        lines.append(
            f"| {row.name} | {row.check} | {row.graphs} | {row.breaks} | {row.not_kept} "
            f"| {row.per_iteration} | {row.captures_again} | {ratio} |"
        )
    return "\n".join(lines)


def _captures_only(names: list[str]) -> int:
    # The check and the "captures at a new size" column alone, a line a program.
    results = [(name, *check(PROGRAMS[name])) for name in names]
    for name, checked, again in results:
        print(f"{name}: {checked}, {again} again")
    print(f"{sum(1 for _, _, again in results if again)} of {len(results)} capture again")
    return 0 if all(checked == "ok" for _, checked, _ in results) else 1


def main(argv: list[str] | None = None) -> int:
    """Run the programs `--only` names (all by default) and print the table."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.unseen_loops")
    parser.add_argument("--only", action="append", help="shell pattern of program names")
    parser.add_argument("--size", type=int, default=48, help="the size of the timed calls")
    parser.add_argument("--budget", type=float, default=0.5, help="seconds of timing each")
    parser.add_argument(
        "--captures-only",
        action="store_true",
        help="only check each program and count its captures at a new size (no timing)",
    )
    options = parser.parse_args(argv)
    names = [name for name in PROGRAMS if is_selected(name, options.only)]
    if options.captures_only:
        return _captures_only(names)
    rows = []
    for name in names:
        rows.append(run_program(name, options.size, budget_s=options.budget))
        row = rows[-1]
        print(f"{name}: {row.check}, {row.captures_again} again", file=sys.stderr, flush=True)
    print(render(rows, size=options.size))
    return 0 if all(row.check == "ok" for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
