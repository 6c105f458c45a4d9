"""The guard and dispatch benchmarks: what a compiled call costs before and around its kernel.

Selected as ``python -m benchmarks --only guards`` (and run with the full suite):

- **Guard check per call**, for functions of 1, 4 and 16 array inputs: the entry's compiled
  check (one generated Python function, ``numpile_guards.compile_guards``) called on the
  inputs it was built from, against two alternatives built from the same guards in this
  file: one closure per guard called in a loop (the other way to build a check), and the
  slow, verbose path that explains failures (``GuardCheck.failure``). Target: under 1 us
  per array input.
- **Dispatch overhead**: a compiled call on 1-element float64 arrays (``a0 * a1 + a2 ...``)
  against calling the same NumPy function directly, measured in interleaved rounds by
  ``benchmarks.timer``; overhead = compiled time - NumPy time, with the default stance and
  with ``skip_guard_eval_unsafe=True``. Target: under 10 us for 4 inputs.

Prediction written before measuring (2 cores, Python 3.11): the generated check costs about
0.2 us per array input (4 cheap clauses: type, dtype, shape, strides), closures about twice
that (a Python call per guard plus one per fetch); dispatch overhead about 4 us at 4 inputs
(binding the arguments, the check, fetching the inputs, the generated C wrapper).

    >>> result = run_guards(quick=True)  # doctest: +SKIP
    >>> print(render_guards(result))  # doctest: +SKIP
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from .selection import run_if_selected
from .timer import Timing, measure_interleaved

# The name that selects these benchmarks (``--only guards``).
GUARDS = "guards"

_INPUT_COUNTS = (1, 4, 16)

CheckFn = Callable[[dict[str, Any], dict[str, Any], Any], Any]


@attrs.frozen
class GuardRow:
    """Seconds per call of each way to check one entry's guards, for `inputs` arrays."""

    inputs: int
    guards: int
    compiled_s: float
    closures_s: float
    verbose_s: float


@attrs.frozen
class DispatchRow:
    """Seconds per call: NumPy directly, the compiled call, the same unguarded, its kernel alone.

    `kernel_s` times the entry's compiled callable called directly with the inputs: what
    is left when binding, guards and input fetching are taken away.
    """

    inputs: int
    backend: str
    numpy_s: float
    compiled_s: float
    unsafe_s: float
    kernel_s: float


@attrs.frozen
class GuardsResult:
    """Everything `run_guards` measured."""

    checks: tuple[GuardRow, ...]
    dispatch: tuple[DispatchRow, ...]


def run_selected(patterns: list[str] | None, *, quick: bool) -> list[str] | None:
    """Run and print these benchmarks when selected; the patterns left for the main suite.

    >>> run_selected(["chain*"], quick=True)
    ['chain*']
    """
    return run_if_selected(GUARDS, patterns, lambda: render_guards(run_guards(quick=quick)))


def _function(inputs: int) -> Callable[..., Any]:
    # ``def f(a0, ..., aN): return a0 * a1 + a2 * a3 ...``: N array inputs, one graph (a lone
    # input is squared).
    names = [f"a{index}" for index in range(inputs)]
    pairs = [(names[i], names[min(i + 1, inputs - 1)]) for i in range(0, inputs, 2)]
    terms = " + ".join(f"{left} * {right}" for left, right in pairs)
    namespace: dict[str, Any] = {}
    exec(f"def f{inputs}({', '.join(names)}):\n    return {terms}\n", namespace)
    fn: Callable[..., Any] = namespace[f"f{inputs}"]
    return fn


def _closure_check(guards: Any) -> CheckFn:
    # The alternative design: one closure per guard, called in order until one fails.
    from numpile_guards import GuardKind, LocalSource

    checks: list[CheckFn] = []
    for guard in guards:
        if guard.kind is not GuardKind.ARRAY_MATCH or not isinstance(guard.source, LocalSource):
            raise NotImplementedError(f"closure check of {guard}")
        spec = guard.expected
        expected_dtype = np.dtype(spec.dtype)

        def array_check(
            L: dict[str, Any],
            G: dict[str, Any],
            F: Any,
            name: str = guard.source.local,
            kind: type = spec.type,
            dtype: Any = expected_dtype,
            shape: tuple[Any, ...] = spec.shape,
            strides: tuple[Any, ...] = spec.strides,
        ) -> bool:
            value = L[name]
            return (
                type(value) is kind
                and value.dtype == dtype
                and value.shape == shape
                and value.strides == strides
            )

        checks.append(array_check)

    def check(L: dict[str, Any], G: dict[str, Any], F: Any) -> bool:
        try:
            # A plain loop: all() over a generator costs more per guard.
            for one in checks:  # noqa: SIM110
                if not one(L, G, F):
                    return False
            return True
        except Exception:
            return False

    return check


def _per_call(fn: CheckFn, L: dict[str, Any], G: dict[str, Any], F: Any, calls: int) -> float:
    # Best of 5 loops of `calls` calls, the garbage collector paused (as timeit does).
    best = float("inf")
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(calls):
                fn(L, G, F)
            best = min(best, (time.perf_counter() - start) / calls)
    finally:
        if enabled:
            gc.enable()
    return best


def _measure_checks(quick: bool) -> list[GuardRow]:
    import numpile
    from numpile_guards import cache_for

    rows: list[GuardRow] = []
    calls = 2_000 if quick else 50_000
    for inputs in _INPUT_COUNTS:
        fn = _function(inputs)
        args = [np.ones(1) for _ in range(inputs)]
        numpile.compile(fn, backend="eager")(*args)
        entry = cache_for(fn.__code__).entries[0]
        check = entry.check
        L = {f"a{index}": array for index, array in enumerate(args)}
        G = fn.__globals__
        closures = _closure_check(check.guards)
        if not (check.fn(L, G, fn) and closures(L, G, fn) and check.failure(L, G, fn) is None):
            raise RuntimeError(f"guards of f{inputs} reject their own inputs")
        rows.append(
            GuardRow(
                inputs=inputs,
                guards=len(check.guards),
                compiled_s=_per_call(check.fn, L, G, fn, calls),
                closures_s=_per_call(closures, L, G, fn, calls),
                verbose_s=_per_call(check.failure, L, G, fn, max(calls // 10, 200)),
            )
        )
    return rows


def _median_s(timing: Timing | Exception) -> float:
    if isinstance(timing, Exception):
        raise timing
    return timing.median_s


def _measure_dispatch(quick: bool) -> list[DispatchRow]:
    import numpile
    from numpile_guards import cache_for

    rows: list[DispatchRow] = []
    budget = 0.2 if quick else 1.5
    for inputs in _INPUT_COUNTS:
        fn = _function(inputs)
        args = tuple(np.full(1, 1.5) for _ in range(inputs))
        compiled = numpile.compile(fn)
        np.testing.assert_array_equal(compiled(*args), fn(*args))

        def unsafe(*call_args: Any, compiled: Any = compiled) -> Any:
            return compiled(*call_args)

        kernel = cache_for(fn.__code__).entries[0].compiled
        timings = measure_interleaved(
            {"numpy": fn, "numpile": compiled, "kernel": kernel},
            args,
            budget_s=budget,
            min_repeats=5,
        )
        with numpile.set_stance(skip_guard_eval_unsafe=True):
            unsafe_timing = measure_interleaved(
                {"unsafe": unsafe}, args, budget_s=budget / 2, min_repeats=5
            )
        rows.append(
            DispatchRow(
                inputs=inputs,
                backend=str(compiled.backend),  # the name compile resolved (None: the default)
                numpy_s=_median_s(timings["numpy"]),
                compiled_s=_median_s(timings["numpile"]),
                unsafe_s=_median_s(unsafe_timing["unsafe"]),
                kernel_s=_median_s(timings["kernel"]),
            )
        )
    return rows


def run_guards(*, quick: bool = False) -> GuardsResult:
    """Measure guard checks and dispatch overhead for 1, 4 and 16 array inputs."""
    import numpile

    numpile.reset()
    try:
        return GuardsResult(tuple(_measure_checks(quick)), tuple(_measure_dispatch(quick)))
    finally:
        numpile.reset()


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:8.3f}"


def render_guards(result: GuardsResult) -> str:
    """The two tables, in microseconds, with the targets beside them."""
    lines = [
        "",
        "guard checks, us per call (1-element float64 arrays; target < 1 us per array input)",
        "  inputs  guards  generated  per input   closures  closures/generated  explain-path",
    ]
    for row in result.checks:
        ratio = row.closures_s / row.compiled_s
        lines.append(
            f"  {row.inputs:6}  {row.guards:6}   {_us(row.compiled_s)}   "
            f"{_us(row.compiled_s / row.inputs)}   {_us(row.closures_s)}  "
            f"{ratio:17.2f}x   {_us(row.verbose_s)}"
        )
    lines += [
        "",
        "dispatch overhead, us per call on 1-element arrays (target < 10 us at 4 inputs)",
        "  overhead = numpile - numpy; dispatch = numpile - kernel (bind, guards, fetch)",
        "  inputs  backend     numpy   numpile  overhead    kernel  dispatch  unsafe-stance"
        "  dispatch(unsafe)",
    ]
    for d in result.dispatch:
        lines.append(
            f"  {d.inputs:6}  {d.backend:8} {_us(d.numpy_s)}  {_us(d.compiled_s)}  "
            f"{_us(d.compiled_s - d.numpy_s)}  {_us(d.kernel_s)}  {_us(d.compiled_s - d.kernel_s)}"
            f"       {_us(d.unsafe_s)}          {_us(d.unsafe_s - d.kernel_s)}"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render_guards(run_guards(quick="--quick" in sys.argv)))
