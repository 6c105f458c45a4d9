"""Scalar math in C loop bodies: float powers, complex quotients and constants, and a loop
whose divisions warn (round 2's seventeenth session, branch slowleft); complex `abs`, `exp`,
`log`, `sqrt` and a `0j` entry (eighteenth session, branch complexloops); `math.sqrt`,
`math.exp`, `math.floor`, `math.isnan` of elements (eighteenth session, branch mathfuncs).

    python -m benchmarks.loop_scalar_math            # every program, n = 2000
    python -m benchmarks.loop_scalar_math --n 20000
    python -m benchmarks.loop_scalar_math --n 100000 --only math_sqrt_exp math_floor_isnan

Per program: eager against ``numpile.compile(fn)`` (tiering off, the build waited for),
bit for bit (``tobytes``, the result's type) and the warnings each gives under "always";
then NumPy's median time over numpile's, from interleaved samples (``benchmarks.timer``),
with the machine's load average.
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from .child import load_average
from .timer import measure_interleaved


def float_powers(x: Any, y: Any) -> Any:
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] ** 2 + x[i] ** 0.5 + x[i] ** y[i]
    return out


def python_float_power(x: Any) -> Any:
    t = 1.5
    s = 0.0
    for i in range(x.shape[0]):
        s = s + t**2.0 + x[i]
        t = t * 0.99
    return s


def complex_quotients(z: Any, w: Any) -> Any:
    out = np.empty_like(z)
    for i in range(z.shape[0]):
        out[i] = z[i] / w[i] + 1j
    return out


def complex64_constants(z: Any) -> Any:
    out = np.empty_like(z)
    for i in range(z.shape[0]):
        out[i] = z[i] * (0.5 - 2j) / (1.5 + 0.5j)
    return out


def divisions_that_warn(x: Any, y: Any) -> Any:
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] / y[i]
    return out


def escape_counts(c: Any) -> Any:
    out = np.zeros(c.shape[0], dtype=np.int64)
    for i in range(c.shape[0]):
        z = 0j
        k = 0
        while k < 50 and abs(z) <= 2.0:
            z = z * z + c[i]
            k += 1
        out[i] = k
    return out


def phasors(x: Any, w: Any) -> Any:
    acc = 0j
    for i in range(x.shape[0]):
        acc = acc + x[i] * np.exp(1j * w[i])
    return acc


def complex_functions(z: Any) -> Any:
    out = np.empty_like(z)
    for i in range(z.shape[0]):
        out[i] = np.exp(z[i]) + np.log(z[i]) * np.sqrt(z[i])
    return out


def math_sqrt_exp(x: Any) -> Any:
    s = 0.0
    for i in range(x.shape[0]):
        s += math.sqrt(abs(x[i])) + math.exp(-x[i] * x[i])
    return s


def math_floor_isnan(x: Any) -> Any:
    counts = np.zeros(9, dtype=np.int64)
    missing = 0
    for i in range(x.shape[0]):
        if math.isnan(x[i]):
            missing += 1
        else:
            counts[math.floor(x[i] * 8.0)] += 1
    counts[8] = missing
    return counts


def _inputs(n: int) -> dict[str, tuple[Callable[..., Any], tuple[Any, ...]]]:
    rng = np.random.default_rng(0)
    z = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    zeros = np.where(rng.uniform(size=n) < 0.1, 0.0, 1.0)
    return {
        "float_powers": (float_powers, (rng.uniform(0, 2, n), rng.uniform(-2, 2, n))),
        "python_float_power": (python_float_power, (rng.standard_normal(n),)),
        "complex_quotients": (complex_quotients, (z, z[::-1].copy())),
        "complex64_constants": (complex64_constants, (z.astype(np.complex64),)),
        "divisions_that_warn": (divisions_that_warn, (rng.standard_normal(n), zeros)),
        "escape_counts": (escape_counts, (z * 0.8 - 0.5,)),
        "escape_counts_complex64": (escape_counts, ((z * 0.8 - 0.5).astype(np.complex64),)),
        "phasors": (phasors, (rng.standard_normal(n), rng.standard_normal(n))),
        "complex_functions": (complex_functions, (z,)),
        "math_sqrt_exp": (math_sqrt_exp, (rng.standard_normal(n),)),
        "math_floor_isnan": (math_floor_isnan, (np.where(zeros == 0.0, np.nan, z.real % 1.0),)),
    }


def _run(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[Any, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(*args)
    return result, [f"{w.lineno}: {w.message}" for w in caught]


def main(argv: list[str] | None = None) -> int:
    """Check and time each program; print one line per program."""
    import numpile  # late: `--help` needs no compiler

    parser = argparse.ArgumentParser(prog="python -m benchmarks.loop_scalar_math")
    parser.add_argument("--n", type=int, default=2000, help="the length of the inputs")
    parser.add_argument("--only", nargs="*", default=None, help="the programs to run")
    parser.add_argument("--budget", type=float, default=1.0, help="seconds of timing each")
    options = parser.parse_args(argv)
    print(f"n = {options.n}; load average {load_average()}")
    same_everywhere = True
    for name, (fn, args) in _inputs(options.n).items():
        if options.only and name not in options.only:
            continue
        numpile.reset()
        compiled = numpile.compile(fn, options={"tiered": False})
        want, want_warnings = _run(fn, args)
        got, got_warnings = _run(compiled, args)
        numpile.wait_for_compiles()
        same = (
            type(got) is type(want)
            and np.asarray(got).tobytes() == np.asarray(want).tobytes()
            and got_warnings == want_warnings
        )
        same_everywhere &= same
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            timings = measure_interleaved(
                {"numpy": fn, "numpile": compiled}, args, budget_s=options.budget, min_repeats=7
            )
        numpy_t, numpile_t = timings["numpy"], timings["numpile"]
        assert not isinstance(numpy_t, Exception) and not isinstance(numpile_t, Exception)
        print(
            f"{name}: {'same bits and warnings' if same else 'DIFFERS'}, "
            f"NumPy {numpy_t.median_s * 1e3:.3f} ms, numpile {numpile_t.median_s * 1e3:.3f} ms, "
            f"{numpy_t.median_s / numpile_t.median_s:.2f}x"
        )
    print(f"load average {load_average()}")
    return 0 if same_everywhere else 1


if __name__ == "__main__":
    sys.exit(main())
