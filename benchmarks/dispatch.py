"""What a warm compiled call costs on tiny arrays: the dispatcher against Numba and Python.

    python -m benchmarks.dispatch [--calls N] [--repeats R] [--matvec] [--alternating]

For ``f2(a, b) = a * b + 1.0`` and ``f4(a, b, c, d) = a * b + c * d`` on 8 float64
elements, one process times, in interleaved rounds (best round of ``R``, ``N`` calls each;
short rounds, so that some of them run without being preempted on a loaded machine):
a plain Python call of a function of as many arguments, NumPy eager, ``numba.njit`` (when
installed), the numpile-compiled call, and the compiled entry's callable alone (the
generated module: what is left without binding, guards and input fetching). The
dispatcher's cost is the compiled call minus its kernel.

``--matvec`` adds the matrix-vector chains of the science set (``matvec_chain``,
``bicg_products``, ``cg_step`` at their small size): NumPy and the compiled call
alternate, one call each, and each keeps its fastest of 400 calls, a figure that a loaded
machine spoils less than a median.

``--alternating`` times calls whose guards pick one of two cache entries in turn: ``f2`` on
8 elements and on a (2, 4) array (two static entries, each with a call gate), and
``branch(a, s)`` with ``s`` a NumPy scalar of either sign (a guard on ``s > 0``, an entry
the gate does not take: the Python hit path), each against the same calls on one entry.
Prediction written before the dispatcher remembered two hits (issue 23): alternating calls
cost a full lookup each (15-35 us against 0.3-1.6 us); with two hits remembered, most
recent first, they should cost one failed check more than a single entry's hit (under
0.1 us through the gate, about 1 us on the Python path).

Prediction written before the fast path was measured (per layer, 2 arrays, load ~2): the
old path was about 9 us against a kernel of about 1.9 us: stance and region checks 1.2 us,
binding 0.9, backend lookup 0.2, guard lookup 1.1, the rest frames and argument packing.
The fast path (one epoch identity check, one per-thread counter, the code/defaults
identities, the remembered entry's generated check, the fetch) should leave about 1 us
over the kernel: 0.1 epoch and region, 0.1 binding, 0.3-0.5 the check, 0.1 the fetch,
0.3 the call of a class instance with ``*args``. Second prediction (callcost28), for one
generated entry function per remembered entry (binding, check, fetch and call fused) and
no OpenMP region below the parallel threshold: the binder's and the fetch's calls, the dict
of arguments and the tuple of inputs (0.25-0.3 us) and the region whose ``if`` is false
(0.33 us of the module's call) gone, about 0.9-1.0 us a call. Third prediction (dispatch29),
for the hit path in C (a call gate: the checks and the call of the compiled callable with
no Python frame of the dispatcher's): the dispatch over the compiled callable down from
0.7-1.2 us to 0.1-0.2 us, the whole tiny call below numba's. ``NUMPILE_CALL_GATE=0`` times
the Python path. Measured figures and their load: ``docs/performance_notes.md`` (earlier
sessions), ``docs/status.md`` (the call gate).

    >>> rows = run_dispatch(calls=200, repeats=2)  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import gc
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

_SIZE = 8


def f2(a: Any, b: Any) -> Any:
    return a * b + 1.0


def f4(a: Any, b: Any, c: Any, d: Any) -> Any:
    return a * b + c * d


def _plain2(a: Any, b: Any) -> Any:
    return a


def _plain4(a: Any, b: Any, c: Any, d: Any) -> Any:
    return a


def _contenders(fn: Callable[..., Any], args: tuple[Any, ...]) -> dict[str, Callable[[], Any]]:
    import numpile
    import numpile_runtime as rt
    from numpile_guards import cache_for

    plain = _plain2 if len(args) == 2 else _plain4
    compiled = numpile.compile(fn, options={"tiered": False})
    np.testing.assert_array_equal(compiled(*args), fn(*args))
    compiled(*args)
    # The entry's callable in the form a call gate calls (its C form where it has one:
    # the error-state check in C), so that "dispatch" is the gate's and the Caller's cost.
    kernel = rt.gate_form(cache_for(fn.__code__).entries[0].compiled)
    calls: dict[str, Callable[[], Any]] = {
        "python call": lambda: plain(*args),
        "numpy": lambda: fn(*args),
    }
    try:
        import numba
    except ImportError:
        pass
    else:
        jitted = numba.njit(fn)
        jitted(*args)
        calls["numba"] = lambda: jitted(*args)
    calls["numpile"] = lambda: compiled(*args)
    calls["numpile kernel"] = lambda: kernel(*args)
    return calls


def _best(calls: dict[str, Callable[[], Any]], count: int, repeats: int) -> dict[str, float]:
    # Interleaved rounds, the garbage collector paused; the best round per contender.
    best = dict.fromkeys(calls, float("inf"))
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeats):
            for name, call in calls.items():
                start = time.perf_counter()
                for _ in range(count):
                    call()
                best[name] = min(best[name], (time.perf_counter() - start) / count)
    finally:
        if enabled:
            gc.enable()
    return best


def run_dispatch(*, calls: int = 1_000, repeats: int = 60) -> dict[str, dict[str, float]]:
    """Seconds per call of each contender, for `f2` and `f4` on 8 float64 elements."""
    results: dict[str, dict[str, float]] = {}
    for fn in (f2, f4):
        arity = fn.__code__.co_argcount
        args = tuple(np.full(_SIZE, 1.5 + index) for index in range(arity))
        results[fn.__name__] = _best(_contenders(fn, args), calls, repeats)
    return results


def branch(a: Any, s: Any) -> Any:
    if s > 0:
        return a * 2.0
    return a * 3.0


def run_alternating(*, calls: int = 1_000, repeats: int = 60) -> dict[str, dict[str, float]]:
    """Seconds per call on one entry and alternating between two, for `f2` and `branch`."""
    import numpile

    first = (np.full(_SIZE, 1.5), np.full(_SIZE, 2.5))
    shapes = (first, (np.full((2, _SIZE // 2), 1.5), np.full((2, _SIZE // 2), 2.5)))
    signs = ((first[0], np.float64(1.0)), (first[0], np.float64(-1.0)))
    results: dict[str, dict[str, float]] = {}
    for fn, pair, static in ((f2, shapes, True), (branch, signs, False)):
        compiled = numpile.compile(fn, dynamic=False if static else None, options={"tiered": False})
        for args in pair + pair + pair:
            np.testing.assert_array_equal(compiled(*args), fn(*args))
        one, other = pair

        def same(call: Any = compiled, one: tuple[Any, ...] = one) -> None:
            call(*one)
            call(*one)

        def alternate(
            call: Any = compiled, one: tuple[Any, ...] = one, other: tuple[Any, ...] = other
        ) -> None:
            call(*one)
            call(*other)

        pairs = _best({"one entry": same, "alternating": alternate}, calls // 2, repeats)
        results[fn.__name__] = {name: seconds / 2 for name, seconds in pairs.items()}
    return results


def render_alternating(results: dict[str, dict[str, float]]) -> str:
    """One line per function: us per call on one entry and alternating between two."""
    lines = ["two entries in turn, best round, us per call:"]
    for name, row in results.items():
        cells = "  ".join(f"{label} {seconds * 1e6:7.3f}" for label, seconds in row.items())
        lines.append(f"  {name:<8} {cells}")
    return "\n".join(lines)


_MATVEC = ("matvec_chain", "bicg_products", "cg_step")


def run_matvec(*, calls: int = 400) -> dict[str, tuple[float, float]]:
    """Fastest single call (seconds) of NumPy and of numpile for each matrix-vector chain."""
    import numpile

    from .science import all_kernels

    results: dict[str, tuple[float, float]] = {}
    for kernel in all_kernels():
        if kernel.name not in _MATVEC:
            continue
        args = kernel.make_inputs(kernel.sizes[0])
        compiled = numpile.compile(kernel.fn, options={"tiered": False})
        compiled(*args)
        compiled(*args)
        contenders = {"numpy": kernel.fn, "numpile": compiled}
        best = dict.fromkeys(contenders, float("inf"))
        enabled = gc.isenabled()
        gc.disable()
        try:
            for _ in range(calls):
                for name, fn in contenders.items():
                    start = time.perf_counter()
                    fn(*args)
                    best[name] = min(best[name], time.perf_counter() - start)
        finally:
            if enabled:
                gc.enable()
        results[kernel.name] = (best["numpy"], best["numpile"])
    return results


def render_matvec(results: dict[str, tuple[float, float]]) -> str:
    """One line per kernel: the fastest calls and NumPy time / numpile time."""
    lines = ["matrix-vector chains, fastest call, us:"]
    for name, (numpy_s, numpile_s) in results.items():
        ratio = numpy_s / numpile_s
        lines.append(
            f"  {name:<15} numpy {numpy_s * 1e6:8.2f}  numpile {numpile_s * 1e6:8.2f}  {ratio:.3f}x"
        )
    return "\n".join(lines)


def render(results: dict[str, dict[str, float]]) -> str:
    """One table per function: us per call, and the ratio to Numba where it ran."""
    lines = [f"load: {os.getloadavg()[0]:.1f} (1 min)"]
    for name, row in results.items():
        lines.append(f"{name} ({_SIZE} float64 elements), best round, us per call:")
        numba_s = row.get("numba")
        for contender, seconds in row.items():
            ratio = f"  {seconds / numba_s:5.2f}x numba" if numba_s else ""
            lines.append(f"  {contender:<15} {seconds * 1e6:7.3f}{ratio}")
        overhead = row["numpile"] - row["numpile kernel"]
        lines.append(f"  dispatch (numpile - kernel): {overhead * 1e6:.3f} us")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """The command line: ``[--calls N] [--repeats R]``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.dispatch")
    parser.add_argument("--calls", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=60)
    parser.add_argument("--matvec", action="store_true", help="also the matvec chains")
    parser.add_argument("--alternating", action="store_true", help="also two entries in turn")
    options = parser.parse_args(argv)
    print(render(run_dispatch(calls=options.calls, repeats=options.repeats)))
    if options.alternating:
        print(render_alternating(run_alternating(calls=options.calls, repeats=options.repeats)))
    if options.matvec:
        print(render_matvec(run_matvec()))


if __name__ == "__main__":
    main()
