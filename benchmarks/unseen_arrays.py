"""Unseen arrays (round 2 goals): each program of `benchmarks.unseen_array_programs` checked
against NumPy eager and timed, one table row a program.

    python -m benchmarks.unseen_arrays                   # every program
    python -m benchmarks.unseen_arrays --only '*roll*'   # some programs (shell patterns)
    python -m benchmarks.unseen_arrays --size 256        # the size the warm calls run at

Per program: ``numpile.compile(fn)`` and ``numpile.compile(fn, dynamic=True)`` against eager
at each of its sizes (result structure, leaf types, dtypes, values within the program's
tolerance, the inputs afterwards; for a program NumPy rejects, the exception's type and
message); the graph breaks ``numpile.explain`` finds at its last size; and NumPy's warm
time over numpile's (default options) at ``--size``, medians of interleaved samples
(``benchmarks.timer``). A ratio below 1 is a program numpile runs slower than NumPy.
Everything runs in this process, after ``numpile.reset()`` per program.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np

from .child import agree, load_average
from .selection import is_selected
from .timer import measure_interleaved
from .unseen_array_programs import PROGRAMS, UnseenArrays


@attrs.frozen
class UnseenArraysRow:
    """What one program did: its check, its graph breaks, its ratio to NumPy."""

    name: str
    check: str
    breaks: int
    ratio: float | None


def _inputs(entry: UnseenArrays, n: int, seed: int) -> tuple[Any, ...]:
    made = entry.inputs(np.random.default_rng(seed), n)
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in made)


def _outcome(fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(*args)
        except Exception as error:
            return error


def check(entry: UnseenArrays) -> str:
    """``ok``, or the first way a compiled call differs from eager (options, size, what)."""
    import numpile  # late: `--help` needs no compiler

    tolerance = {"rtol": entry.rtol or 1e-12, "atol": entry.atol or 0.0}
    for label, options in (("default", {}), ("dynamic", {"dynamic": True})):
        numpile.reset()
        compiled = numpile.compile(entry.fn, **options)
        for seed, n in enumerate(entry.sizes):
            eager_args, compiled_args = _inputs(entry, n, seed), _inputs(entry, n, seed)
            want, got = _outcome(entry.fn, eager_args), _outcome(compiled, compiled_args)
            if isinstance(want, Exception) or isinstance(got, Exception):
                same = type(want) is type(got) and str(want) == str(got)
                found = "ok" if same else f"{want!r} vs {got!r}"
            else:
                found = agree(want, got, **tolerance)
                if found == "ok":
                    found = agree(eager_args, compiled_args, **tolerance)
            if found != "ok":
                return f"{label} n={n}: {found}"[:80]
    return "ok"


def run_program(name: str, size: int, *, budget_s: float) -> UnseenArraysRow:
    """Check, explain and time the program `name`."""
    import numpile
    import numpile_runtime

    entry = PROGRAMS[name]
    checked = check(entry)
    numpile.reset()
    explained = _outcome(numpile.explain(entry.fn), _inputs(entry, entry.sizes[-1], 0))
    breaks = -1 if isinstance(explained, Exception) else explained.graph_break_count
    if entry.expect_error:
        return UnseenArraysRow(name, checked, breaks, None)
    numpile.reset()
    # Tiering off and the queued builds waited for, as in `benchmarks.unseen_loops`.
    compiled = numpile.compile(entry.fn, options={"tiered": False})
    args = _inputs(entry, size, 0)
    _outcome(compiled, _inputs(entry, size, 0))  # the compile, apart from the timing
    numpile_runtime.wait_for_queued_builds(timeout=240.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        timings = measure_interleaved(
            {"numpy": entry.fn, "numpile": compiled}, args, budget_s=budget_s, min_repeats=5
        )
    ratio = timings["numpy"].median_s / timings["numpile"].median_s
    return UnseenArraysRow(name, checked, breaks, ratio)


def render(rows: Sequence[UnseenArraysRow], *, size: int) -> str:
    """The rows as a Markdown table, with the size and the load average."""
    lines = [
        f"Unseen arrays at size {size}; load average {load_average()}",
        "",
        "| program | result | graph breaks | NumPy / numpile |",
        "| --- | --- | --- | --- |",
    ]
    for row in rows:
        ratio = "n/a" if row.ratio is None else f"{row.ratio:.2f}x"
        lines.append(f"| {row.name} | {row.check} | {row.breaks} | {ratio} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the programs `--only` names (all by default) and print the table."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.unseen_arrays")
    parser.add_argument("--only", action="append", help="shell pattern of program names")
    parser.add_argument("--size", type=int, default=64, help="the size of the timed calls")
    parser.add_argument("--budget", type=float, default=0.5, help="seconds of timing each")
    options = parser.parse_args(argv)
    names = [name for name in PROGRAMS if is_selected(name, options.only)]
    rows = []
    for name in names:
        rows.append(run_program(name, options.size, budget_s=options.budget))
        print(f"{name}: {rows[-1].check}", file=sys.stderr, flush=True)
    print(render(rows, size=options.size))
    return 0 if all(row.check == "ok" for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
