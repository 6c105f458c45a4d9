"""NumPy programs that graph-break the way users write them: prints, branches on data, library
calls numpile cannot see into, exceptions, early returns, mutation of inputs, globals, lists and
objects, generators, scalar conversions and explicit ``numpile.graph_break()`` /
``numpile.disable`` calls. Each is compiled with ``fullgraph=False`` and must give eager's values,
input mutations, aliasing, exceptions and printed output (``test_breaks.py`` compares stdout).

``expected_breaks`` is the number of breaks ``numpile.explain`` reports for one run on the inputs
of call 1 (n=4, seed 0), counted this way:

- each instruction capture cannot handle is one break, counted each time a capture meets it: a
  break, then the resume function's capture meeting another break, counts two;
- a call into a helper that breaks counts at the call (the caller breaks there) and again inside
  the helper, which is compiled on its own: one print two helpers deep counts three;
- a break inside a loop body resumes inside the loop: the graph ends at the break, and the
  resume function continues the body; its ``FOR_ITER`` over the rest of the items steps in
  Python, so each later iteration counts two (that step, then the break again), up to the
  nesting limit;
- a break inside a ``try`` block resumes inside it (an exception raised by the breaking
  instruction goes to the except clause, in Python); a Python exception raised at capture time
  inside a ``try`` block is a break, and so is an op that may raise on some data there (a
  singular ``inv``, an index out of bounds); a ``with`` block on a library context manager
  counts three (making the manager, entering it, leaving it); user context managers are inlined;
- a break while a local is captured by an inner function (a cell) makes the whole frame run
  eagerly: it counts once, whatever follows;
- a call to a ``numpile.disable``-d or ``disallow_in_graph``-ed function counts once (its body is
  never captured);
- library code (json, math on arrays, statistics, random, time, re ...) is never traced: each call
  into it counts once; an object capture does not model (a ``random.Random``, a NumPy
  ``Generator``) breaks twice at each method call: loading the method, calling it;
- values that reach a resumed capture from plain Python (Python scalars, NumPy scalars such as a
  reduction's result) are constants there, guarded: a branch on them does not break again.

Programs never depend on state left by an earlier call: globals are set, not accumulated, so the
eager and the compiled run agree.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import json
import math
import os
import random
import re
import statistics
import sys
import time
from typing import Any

import numpy as np
from harness import Inputs, breaking_program

import numpile

# ---------------------------------------------------------------------------------------------
# factories


def _vec(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    return (rng.standard_normal(n),)


def _mat(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    return (rng.standard_normal((n, 3)),)


def _pair(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    return (rng.standard_normal(n), rng.standard_normal(n))


def _positive(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    return (rng.uniform(0.5, 2.0, n),)


def _ints(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    return (rng.integers(-5, 6, n),)


def _square_singular_at_4(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    # Singular for the first two calls (two equal rows), invertible for the resized third.
    m = rng.standard_normal((n, n)) + n * np.eye(n)
    if n == 4:
        m[1] = m[0]
    return (m,)


def _vec_and_index_out_of_bounds_at_4(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    index = rng.integers(0, n, 3)
    if n == 4:
        index[1] = n + 2
    return (rng.standard_normal(n), index)


def _rows_one_all_nan_at_4(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    x = rng.standard_normal((3, n))
    if n == 4:
        x[1] = np.nan
    return (x,)


def _ints_and_exponents(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    exponents = rng.integers(0, 3, n)
    if n == 4:
        exponents[2] = -1
    return (rng.integers(1, 5, n), exponents)


def _vec_with_a_zero(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    x = rng.standard_normal(n)
    x[n // 2] = 0.0
    return (x,)


def _arrays(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    return ([rng.standard_normal(n) for _ in range(3)],)


def _vec_and_list(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    return (rng.standard_normal(n), [1.0, 2.0])


def _vec_and_dict(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    return ({"x": rng.standard_normal(n), "scale": 2.0},)


@dataclasses.dataclass
class Stats:
    """A user object passed in and mutated; compared by its (scalar) fields."""

    total: float = 0.0
    count: int = 0
    label: str = ""


def _vec_and_stats(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    return (rng.standard_normal(n), Stats())


breaks = breaking_program


# ---------------------------------------------------------------------------------------------
# helpers the programs call


def _log_helper(x: Any) -> Any:
    print("helper sees shape", x.shape)
    return x * 2.0


def _outer_helper(x: Any) -> Any:
    return _log_helper(x + 1.0) - 1.0


def _break_helper(x: Any) -> Any:
    y = x * 3.0
    numpile.graph_break()
    return y + 1.0


@numpile.disable
def _disabled_report(x: Any) -> Any:
    print("disabled report:", np.round(x, 3))
    return x.sum()


@numpile.disable(recursive=False)
def _disabled_shallow(x: Any) -> Any:
    return np.cumsum(x) * 2.0


@numpile.disable(reason="raises on purpose")
def _disabled_raiser(x: Any) -> Any:
    raise ValueError(f"refusing array of shape {x.shape}")


def _disallowed_helper(x: Any) -> Any:
    return np.sort(x)[::-1].copy()


numpile.disallow_in_graph(_disallowed_helper)


def _allowed_norm(x: Any) -> Any:
    return x / (np.sqrt((x * x).sum()) + 1.0)


numpile.allow_in_graph(_allowed_norm)


def _raises_value_error(x: Any) -> Any:
    raise ValueError("bad value")


def _solve_ones(m: Any) -> Any:
    return np.linalg.solve(m, np.ones(m.shape[0]))


def _squares(arrays: list[Any]) -> Any:
    for a in arrays:
        yield a * a


def _scaled(x: Any, k: int) -> Any:
    for i in range(k):
        yield x * float(i + 1)


class _Accumulator:
    def __init__(self) -> None:
        self.parts: list[Any] = []

    def add(self, x: Any) -> None:
        self.parts.append(x)

    def total(self) -> Any:
        return sum(self.parts[1:], self.parts[0])


class _Box:
    def __init__(self, value: Any) -> None:
        self.value = value


class _Model:
    def __init__(self, scale: float) -> None:
        self.scale = scale

    def forward(self, x: Any) -> Any:
        y = x * self.scale
        print("forward", y.shape)
        return y + 1.0

    @numpile.disable
    def report(self, x: Any) -> float:
        return float(x.mean())


_MODEL = _Model(1.5)

_WEIGHTS = np.linspace(0.5, 1.5, 3)

_LAST: dict[str, Any] = {}

_TAG = "unset"

_EVENTS: list[str] = []

_CONFIG = {"threshold": 0.25, "verbose": True}

# ---------------------------------------------------------------------------------------------
# prints


@breaks(_vec, expected_breaks=1)
def print_constant_between_ops(x):
    y = x * 2.0
    print("step")
    return y + 1.0


@breaks(_vec, expected_breaks=1)
def print_array_value(x):
    y = np.round(x * 10.0)
    print(y)
    return y - 1.0


@breaks(_vec, expected_breaks=2)
def print_fstring_of_sum(x):
    s = x.sum()
    print(f"sum={s:.3f}")
    return x - s


@breaks(_mat, expected_breaks=1)
def print_shape_only(x):
    print(x.shape)
    return x.T @ x


@breaks(_vec, expected_breaks=2)
def print_twice(x):
    print("before")
    y = np.exp(x)
    print("after")
    return y


@breaks(_vec, expected_breaks=3)
def print_three_times_with_work_between(x):
    print("a")
    x = x + 1.0
    print("b")
    x = x * 2.0
    print("c")
    return x


@breaks(_vec, expected_breaks=1)
def print_at_start(x):
    print("start")
    return np.sin(x)


@breaks(_vec, expected_breaks=1)
def print_at_end_before_return(x):
    y = np.cos(x) * x
    print("done")
    return y


@breaks(_vec, expected_breaks=1)
def print_with_sep_and_end(x):
    y = x - 1.0
    print("a", 1, 2.5, sep="-", end="!\n")
    return y


@breaks(_ints, expected_breaks=1)
def print_dtype(x):
    print(x.dtype, x.ndim)
    return x * 3


@breaks(_vec, expected_breaks=2)
def print_in_helper(x):
    y = x + 1.0
    return _log_helper(y) * 0.5


@breaks(_vec, expected_breaks=3)
def print_in_two_level_helper(x):
    return _outer_helper(x * 2.0) + 3.0


@breaks(_vec, expected_breaks=1)
def print_list_of_constants(x):
    print([1, 2, 3], (4, 5), {"k": 6})
    return x**2


@breaks(_vec, expected_breaks=1)
def print_then_mutate_input(x):
    x += 1.0
    print("mutated")
    x *= 2.0
    return x.sum()


@breaks(_vec, expected_breaks=1)  # a body with no array work: the loop runs in Python
def print_inside_unrolled_loop(x):
    for i in range(3):
        x = x + i
        print("iteration", i)
    return x


@breaks(_vec, expected_breaks=1)
def print_after_shape_branch(x):
    if x.shape[0] > 3:
        print("big input")
    return x * x.shape[0]


@breaks(_vec, expected_breaks=2)
def print_of_item(x):
    print(x[0].item())
    return x[1:] * 2.0


@breaks(_vec, expected_breaks=1)
def print_percent_formatting(x):
    print("%.2f and %d" % (3.14159, 7))  # noqa: UP031 - written as users do
    return x / 3.0


@breaks(_vec, expected_breaks=1)
def repr_of_array_returned(x):
    y = np.round(x, 2)
    text = repr(y)
    return text, y


@breaks(_vec, expected_breaks=1)
def print_flush_keyword(x):
    y = np.abs(x)
    print("flushing", flush=True)
    return y


@breaks(_vec, expected_breaks=1)
def print_in_disabled_helper(x):
    y = x * 2.0
    total = _disabled_report(y)
    return y - total


@breaks(_mat, expected_breaks=1)
def print_rounded_matrix(x):
    y = x @ x.T
    print(np.round(y, 2))
    return y.diagonal().copy()


# ---------------------------------------------------------------------------------------------
# data-dependent branches and early returns


@breaks(_vec, expected_breaks=1)
def if_sum_positive(x):
    if x.sum() > 0:
        return x * 2.0
    return x - 1.0


@breaks(_vec, expected_breaks=1)
def if_any_negative(x):
    y = x + 0.5
    if (y < 0).any():
        y = np.abs(y)
    return y


@breaks(_vec, expected_breaks=1)
def if_all_finite(x):
    y = np.log(np.abs(x))
    if np.isfinite(y).all():
        return y
    return np.zeros_like(y)


@breaks(_vec, expected_breaks=1)
def if_max_with_work_around(x):
    y = np.tanh(x) * 3.0
    if y.max() > 1.0:
        y = y / y.max()
    return y + 1.0


@breaks(_vec, expected_breaks=1)
def early_return_on_norm(x):
    if np.linalg.norm(x) > 100.0:
        return x
    x = x * 0.5
    return x + 2.0


@breaks(_vec, expected_breaks=1)
def early_return_when_no_outliers(x):
    if (np.abs(x) > 10.0).sum() == 0:
        return x.copy(), 0
    return np.clip(x, -10.0, 10.0), 1


@breaks(_vec, expected_breaks=1)
def ternary_on_mean(x):
    y = x if x.mean() > 0 else -x
    return y * 2.0


@breaks(_vec, expected_breaks=1)
def if_elif_chain_on_value(x):
    m = np.abs(x).max()
    if m < 0:
        return x
    elif m >= 0:
        return x / (m + 1.0)
    return -x


@breaks(_vec, expected_breaks=1)
def not_all_positive(x):
    if not (x > 0).all():
        x = x - x.min()
    return x


@breaks(_vec, expected_breaks=1)
def branch_on_zero_dim_flag(x):
    flag = x.sum() > 0
    if flag:
        return x + 1.0
    return x - 1.0


@breaks(_vec, expected_breaks=1)
def branch_on_int_argmax(x):
    i = int(x.argmax())
    if i == 0:
        return x * 0.0
    return x * float(i)


@breaks(_pair, expected_breaks=2)
def nested_data_branches(a, b):
    c = a + b
    if (c * c).sum() >= 0:  # noqa: SIM102 - two breaks on purpose
        if (a * a).sum() >= 0:
            c = c * 2.0
    return c


@breaks(_vec, expected_breaks=1)
def assert_on_values(x):
    y = x * 2.0
    assert np.isfinite(y).all(), "non-finite"
    return y


@breaks(_vec, expected_breaks=1)
def while_on_data(x):
    # A while on a run-time test alone is one while_loop node; a print in its body keeps
    # the loop from being kept, and its body saves little compiled: the whole loop runs in
    # Python from its test (one break).
    while np.abs(x).max() > 1.0:
        x = x / 2.0
        print("halved")
    return x


@breaks(_vec, expected_breaks=2)
def branch_then_print(x):
    if x.mean() > 0:
        print("positive mean")
    else:
        print("non-positive mean")
    return x


@breaks(_mat, expected_breaks=6)
def loop_over_rows_with_branch(x):
    out = []
    for row in x:
        if row.sum() > 0:
            out.append(row * 2.0)
        else:
            out.append(row)
    return np.stack(out)


@breaks(_vec, expected_breaks=1)
def truth_of_one_element_array(x):
    if x[:1] > 0:
        return x + 10.0
    return x - 10.0


@breaks(_pair, expected_breaks=1)
def compare_two_inputs(a, b):
    if (a > b).mean() > 0.5:
        return a - b
    return b - a


@breaks(_vec, expected_breaks=1)
def branch_on_item_then_compute(x):
    v = x.sum().item()
    if v > 0:
        return x / (v + 1.0)
    return x * (1.0 - v)


@breaks(_vec, expected_breaks=1)
def bool_of_any_as_value(x):
    flag = bool((x > 0).any())
    return flag, x * flag


@breaks(_vec, expected_breaks=1)
def early_return_tuple(x):
    if x[0] > 0:
        return x, 1
    return -x, 0


@breaks(_pair, expected_breaks=1)
def branch_on_allclose(a, b):
    if np.allclose(a, b):
        return a
    return (a + b) / 2.0


@breaks(_vec, expected_breaks=1)
def branch_on_count_nonzero(x):
    if np.count_nonzero(x > 0) > 2:
        return x.clip(0.0, None)
    return x.clip(None, 0.0)


@breaks(_vec, expected_breaks=1)
def conditional_normalization(x):
    mean = x.mean()
    std = x.std()
    if std > 0:
        x = (x - mean) / std
    return x


@breaks(_vec, expected_breaks=1)
def early_return_none_on_condition(x):
    if x.min() > 100.0:
        return None
    return x.cumsum()


@breaks(_ints, expected_breaks=1)
def integer_branch_on_sum(x):
    if x.sum() % 2 == 0:
        return x // 2
    return x * 3 + 1


# ---------------------------------------------------------------------------------------------
# scalars out of arrays: .item(), float(), int(), bool(), .tolist()


@breaks(_vec, expected_breaks=1)
def item_of_sum(x):
    s = x.sum().item()
    return x / (s * s + 1.0), s


@breaks(_vec, expected_breaks=0)
def float_of_mean(x):
    m = float(x.mean())
    return x - m, m


@breaks(_vec, expected_breaks=0)
def int_of_argmax_for_indexing(x):
    i = int(x.argmax())
    return x[i], i


@breaks(_mat, expected_breaks=1)
def tolist_returned(x):
    return (x * 2.0).tolist()


@breaks(_vec, expected_breaks=0)  # math of a 0-d value: a math_call node
def float_then_math_sqrt(x):
    f = float((x * x).sum())
    return x * math.sqrt(f)


@breaks(_vec, expected_breaks=1)
def item_in_fstring(x):
    return f"{x.max().item():.3f}"


@breaks(_vec, expected_breaks=2)
def two_items(x):
    lo = x.min().item()
    hi = x.max().item()
    return (x - lo) / (hi - lo + 1e-9)


@breaks(_vec, expected_breaks=1)
def bool_of_all(x):
    ok = bool((x < 100).all())
    return ok, x + ok


@breaks(_vec, expected_breaks=1)
def complex_of_sum(x):
    z = complex(x.sum())
    return z, x * z.real


@breaks(_vec, expected_breaks=0)
def int_for_range(x):
    k = int(np.abs(x).sum()) % 3 + 1
    for _ in range(k):
        x = x * 0.5
    return x, k


@breaks(_vec, expected_breaks=1)
def index_python_list_by_argmin(x):
    labels = ["a", "b", "c", "d", "e", "f", "g"]
    return labels[int(x.argmin())], x.min()


@breaks(lambda rng, n: (np.array(rng.standard_normal()),), expected_breaks=1)
def item_of_zero_dim_input(x):
    return x.item() * 2.0, x + 1.0


@breaks(_vec, expected_breaks=0)
def float_of_element_scales_array(x):
    f = float(x[0])
    return x * f


@breaks(_vec, expected_breaks=1)
def boolean_mask_indexing(x):
    positive = x[x > 0]
    return positive.sum(), positive.size


@breaks(_vec, expected_breaks=1)
def int_of_count_as_shape(x):
    n = int((x > 0).sum())
    return np.zeros(n) + x.mean()


@breaks(_vec, expected_breaks=1)
def tolist_then_python_sum(x):
    values = x.round(3).tolist()
    return sum(values), len(values)


# ---------------------------------------------------------------------------------------------
# library calls numpile does not trace


@breaks(_vec, expected_breaks=2)
def json_dumps_of_values(x):
    text = json.dumps(np.round(x, 3).tolist())
    return text, x * 2.0


@breaks(_vec, expected_breaks=1)
def json_loads_config(x):
    cfg = json.loads('{"scale": 2.0, "shift": -1.0}')
    return x * cfg["scale"] + cfg["shift"]


@breaks(_vec, expected_breaks=0)  # math of a 0-d value: a math_call node
def math_floor_of_array_sum(x):
    k = math.floor(np.abs(x).sum())
    return x + k, k


@breaks(_vec, expected_breaks=0)  # math of a 0-d value: a math_call node
def math_isfinite_check(x):
    ok = math.isfinite(x.mean())
    return x * 2.0, ok


@breaks(_vec, expected_breaks=1)
def math_fsum_of_array(x):
    total = math.fsum(x)
    return total, x - total


@breaks(lambda rng, n: (rng.standard_normal(n), [3.0, 1.0, 2.0, 5.0]), expected_breaks=1)
def statistics_median_of_list(x, values):
    med = statistics.median(values)
    return x * med


@breaks(_vec, expected_breaks=2)
def statistics_fmean_of_tolist(x):
    m = statistics.fmean(x.tolist())
    return x - m


@breaks(_vec, expected_breaks=3)
def python_random_seeded(x):
    r = random.Random(0)
    noise = r.random()
    return x + noise


# One break since the extern-op table (issue 24): default_rng; the draw is a graph node.
@breaks(_vec, expected_breaks=1)
def numpy_generator_inside(x):
    rng = np.random.default_rng(0)
    noise = rng.standard_normal(x.shape)
    return x + noise


@breaks(_vec_and_dict, expected_breaks=1)
def deepcopy_of_params(params):
    saved = copy.deepcopy(params)
    params["x"] = params["x"] * params["scale"]
    return saved["x"], params["x"]


@breaks(_vec, expected_breaks=1)
def str_of_array_sum(x):
    s = str(np.round(x.sum(), 3))
    return s, x + 1.0


@breaks(_vec, expected_breaks=1)
def str_format_with_array(x):
    text = "{}".format(np.round(x, 2))  # noqa: UP032 - written as users do
    return text


@breaks(_vec, expected_breaks=2)
def timing_with_perf_counter(x):
    start = time.perf_counter()
    y = np.exp(x) * 2.0
    elapsed = time.perf_counter() - start
    return y, elapsed >= 0.0


@breaks(_vec, expected_breaks=1)
def environment_flag(x):
    flag = os.environ.get("NUMPILE_CORPUS_UNSET_FLAG", "0")
    return x * (2.0 if flag == "1" else 1.0)


@breaks(_arrays, expected_breaks=1)
def functools_reduce_add(arrays):
    return functools.reduce(np.add, arrays)


@breaks(_vec, expected_breaks=1)
def regex_label(x):
    label = re.sub(r"\s+", "_", "sum of  squares")
    return label, (x * x).sum()


@breaks(_vec, expected_breaks=1)
def sys_getsizeof_of_array(x):
    size = sys.getsizeof(x) > 0
    return size, x * 2.0


@breaks(_vec, expected_breaks=1)
def array2string_returned(x):
    return np.array2string(np.round(x, 2), precision=2), x


@breaks(_vec, expected_breaks=2)
def isclose_python_floats_after_item(x):
    ok = math.isclose(x.sum().item(), float(x.sum()), rel_tol=1e-12)
    return ok


# ---------------------------------------------------------------------------------------------
# exceptions raised and caught, and exceptions that propagate


@breaks(_vec, expected_breaks=1)
def try_except_json_error(x):
    try:
        cfg = json.loads("not json")
    except ValueError:
        cfg = {"scale": 3.0}
    return x * cfg["scale"]


@breaks(_vec_and_dict, expected_breaks=1)
def try_except_missing_key(params):
    try:
        shift = params["shift"]
    except KeyError:
        shift = 1.0
    return params["x"] + shift


@breaks(_vec, expected_breaks=3)
def raise_in_helper_caught(x):
    try:
        y = _raises_value_error(x)
    except ValueError:
        y = x * 0.5
    return y


@breaks(_vec, expected_breaks=1)
def try_finally_prints(x):
    try:
        y = x * 2.0
    finally:
        print("cleanup")
    return y


@breaks(_vec, expected_breaks=1)
def zero_division_caught(x):
    try:
        r = 1.0 / (float(x.sum()) * 0.0)
    except ZeroDivisionError:
        r = -1.0
    return x * r


# A graph runs outside the user's exception table, so inside a try block an op that may raise
# on some data is a break: it runs in Python, where the handler sees what it raises.


@breaks(_square_singular_at_4, expected_breaks=1)
def inv_of_singular_matrix_caught(m):
    scaled = m * 2.0
    try:
        r = np.linalg.inv(scaled) + 1.0
    except np.linalg.LinAlgError:
        r = np.zeros_like(m)
    return r - scaled


@breaks(_square_singular_at_4, expected_breaks=1)  # the call breaks; the helper compiles whole
def solve_in_helper_caught(m):
    try:
        r = _solve_ones(m)
    except np.linalg.LinAlgError as error:
        r = np.full(m.shape[0], float(len(str(error))))
    return r * 3.0


@breaks(_vec_and_index_out_of_bounds_at_4, expected_breaks=1)
def fancy_index_out_of_bounds_caught(x, index):
    y = np.exp(x)
    try:
        picked = y[index] * 2.0
    except IndexError:
        picked = np.full(3, -1.0)
    return picked + y.sum()


@breaks(_vec_and_index_out_of_bounds_at_4, expected_breaks=1)
def fancy_assignment_out_of_bounds_caught(x, index):
    x = x.copy()
    try:
        x[index] = 0.0
    except IndexError:
        x[:] = -1.0
    return x * 2.0


@breaks(_rows_one_all_nan_at_4, expected_breaks=1)
def nanargmax_of_all_nan_row_caught(x):
    try:
        best = np.nanargmax(x, axis=1)
    except ValueError:
        best = np.full(x.shape[0], -1)
    return best + 1


@breaks(_ints_and_exponents, expected_breaks=1)
def integer_negative_power_caught(a, k):
    try:
        p = a**k + 1
    except ValueError:
        p = a * 0
    return p


@breaks(_vec_with_a_zero, expected_breaks=5, expect_error=True)
def errstate_raises_on_division_by_zero(x):
    # A with block is a try block: under a raising state each computing op in it breaks.
    with np.errstate(divide="raise"):
        y = np.cos(x) / x
    return y + 1


@breaks(_vec, expected_breaks=3)  # sqrt raises (negative inputs): `+ 1` is never reached
def errstate_raise_caught_in_try(x):
    with np.errstate(invalid="raise"):
        try:
            y = np.sqrt(x) + 1
        except FloatingPointError:
            y = np.zeros_like(x)
    return y * 2


@breaks(_vec, expected_breaks=3)
def with_suppress_key_error(x):
    d = {}
    with contextlib.suppress(KeyError):
        d["v"] = d["missing"]
    return x + len(d)


@breaks(_positive, expected_breaks=3)
def with_errstate_log(x):
    with np.errstate(divide="ignore"):
        y = np.log(x - x)
    return y


@breaks(_vec, expected_breaks=1, expect_error=True)
def raise_after_data_check(x):
    y = np.abs(x)
    if (y >= 0).all():
        raise ValueError("all entries are non-negative")
    return y


@breaks(_vec, expected_breaks=1, expect_error=True)
def assert_fails_on_data(x):
    assert (x > 100.0).all(), "values too small"
    return x


@breaks(_vec, expected_breaks=1, expect_error=True)
def disabled_helper_raises(x):
    y = x * 2.0
    return _disabled_raiser(y)


@breaks(_vec, expected_breaks=2, expect_error=True)
def raise_with_item_in_message(x):
    print("checking")
    raise RuntimeError(f"minimum is {x.min().item():.4f}")


@breaks(_vec, expected_breaks=1)
def exception_object_kept(x):
    try:
        int("not a number")
    except ValueError as error:
        message = str(error)
    return message, x


# ---------------------------------------------------------------------------------------------
# mutation of inputs around breaks


@breaks(_vec, expected_breaks=1)
def inplace_add_print_inplace_mul(x):
    x += 1.0
    print("between in-place ops")
    x *= 2.0
    return x


@breaks(_vec, expected_breaks=1)
def setitem_before_and_after_break(x):
    x[0] = 5.0
    numpile.graph_break()
    x[1] = 6.0
    return x.sum()


@breaks(_vec, expected_breaks=1)
def out_argument_around_break(x):
    np.add(x, 1.0, out=x)
    numpile.graph_break()
    np.multiply(x, 2.0, out=x)
    return None


@breaks(_vec, expected_breaks=1)
def mutate_then_data_branch(x):
    x -= x.mean()
    if x[0] > 0:
        x *= -1.0
    return x


@breaks(_vec, expected_breaks=1)
def view_mutation_across_break(x):
    v = x[1:]
    v += 1.0
    print("view updated")
    v *= 2.0
    return v


@breaks(_vec, expected_breaks=1)
def return_input_after_break(x):
    print("returning the input itself")
    return x


@breaks(_mat, expected_breaks=1)
def swap_rows_then_break(x):
    x[[0, 1]] = x[[1, 0]]
    numpile.graph_break()
    return x[0] - x[1]


@breaks(_vec_and_list, expected_breaks=1)
def append_to_input_list(x, items):
    items.append(2.5)
    print("appended")
    items.append(len(items))
    return x * len(items)


@breaks(_vec_and_dict, expected_breaks=1)
def write_into_input_dict(params):
    params["y"] = params["x"] * params["scale"]
    print("wrote y")
    params["z"] = params["y"] + 1.0
    return params["z"].sum()


@breaks(_arrays, expected_breaks=1)
def mutate_array_inside_input_list(arrays):
    arrays[0] += 1.0
    numpile.graph_break()
    arrays[1] *= 3.0
    return arrays[2] - arrays[0]


@breaks(_vec_and_stats, expected_breaks=0)
def set_attribute_of_input_object(x, stats):
    stats.total = float(x.sum())
    stats.count = x.shape[0]
    return x - stats.total / stats.count


@breaks(_vec_and_stats, expected_breaks=1)
def label_input_object_around_print(x, stats):
    stats.label = "started"
    print("label set")
    stats.label = "finished"
    stats.count = 2
    return x * stats.count


@breaks(_pair, expected_breaks=1)
def mutate_both_inputs_with_break(a, b):
    a += b
    numpile.graph_break()
    b -= a
    return a * b


@breaks(_vec, expected_breaks=1)
def fill_after_item(x):
    m = x.max().item()
    x.fill(m)
    return x


# ---------------------------------------------------------------------------------------------
# globals, lists and objects


@breaks(_vec, expected_breaks=1)
def global_write_then_print(x):
    global _TAG
    _TAG = "seen"
    print("tag set")
    return x * 2.0, _TAG


@breaks(_mat, expected_breaks=1)
def read_global_array_after_break(x):
    print("reading weights")
    return x * _WEIGHTS


@breaks(_vec, expected_breaks=1)
def global_dict_write_of_item(x):
    _LAST["total"] = x.sum().item()
    return x - _LAST["total"], _LAST["total"]


@breaks(_vec, expected_breaks=1)
def global_list_reset_and_append(x):
    _EVENTS[:] = ["start"]
    numpile.graph_break()
    _EVENTS.append("end")
    return list(_EVENTS), x + len(_EVENTS)


@breaks(_vec, expected_breaks=1)
def local_list_across_break(x):
    parts = [x * 2.0]
    print("first part")
    parts.append(x + 1.0)
    return np.concatenate(parts)


@breaks(_vec, expected_breaks=1)
def local_dict_across_break(x):
    out = {"double": x * 2.0}
    numpile.graph_break()
    out["half"] = x / 2.0
    return out


@breaks(_vec, expected_breaks=1)
def accumulator_object_across_break(x):
    acc = _Accumulator()
    acc.add(x)
    print("added once")
    acc.add(x * 2.0)
    return acc.total()


@breaks(_vec, expected_breaks=1)
def box_attribute_write_across_break(x):
    box = _Box(x)
    box.value = box.value * 2.0
    numpile.graph_break()
    box.value = box.value + 1.0
    return box.value


@breaks(_vec, expected_breaks=1)
def closure_reads_cell_after_break(x):
    scale = 3.0

    def apply(v):
        return v * scale

    print("closure ready")
    return apply(x)


@breaks(_vec, expected_breaks=1)
def global_config_read_after_break(x):
    numpile.graph_break()
    if _CONFIG["verbose"]:
        x = x + _CONFIG["threshold"]
    return x


@breaks(_pair, expected_breaks=1)
def tuple_unpacking_across_break(a, b):
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    print("unpacked")
    return hi - lo


@breaks(_arrays, expected_breaks=1)
def enumerate_then_print(arrays):
    total = arrays[0] * 0.0
    for i, a in enumerate(arrays):
        total = total + a * i
    print("summed", len(arrays))
    return total


@breaks(
    lambda rng, n: ({"a": rng.standard_normal(n), "b": rng.standard_normal(n)},), expected_breaks=1
)
def dict_items_then_break(params):
    out = {}
    for key, value in params.items():
        out[key] = value * 2.0
    numpile.graph_break()
    return out


def _keyword_defaults(x, *, scale=2.0, verbose=True):
    if verbose:
        print("scaling by", scale)
    return x * scale


@breaks(_vec, expected_breaks=2)
def keyword_defaults_with_print(x):
    return _keyword_defaults(x, scale=3.0)


@breaks(_pair, expected_breaks=1)
def star_args_with_break(*arrays):
    total = sum(arrays[1:], arrays[0])
    print("got", len(arrays), "arrays")
    return total


@breaks(_vec, expected_breaks=2)
def method_of_global_object_prints(x):
    return _MODEL.forward(x) - 1.0


# ---------------------------------------------------------------------------------------------
# generators


@breaks(_arrays, expected_breaks=1)
def generator_expression_then_print(arrays):
    total = sum(a * a for a in arrays)
    print("sum of squares computed")
    return total


@breaks(_vec, expected_breaks=1)
def generator_function_to_list(x):
    ys = list(_scaled(x, 3))
    numpile.graph_break()
    return np.stack(ys)


@breaks(_arrays, expected_breaks=1)
def generator_function_sum_then_item(arrays):
    total = sum(_squares(arrays), arrays[0] * 0.0)
    return total, total.max().item()


@breaks(_arrays, expected_breaks=1)
def zip_generator_and_list(arrays):
    weights = [0.5, 1.0, 2.0]
    out = [a * w for a, w in zip((b + 1.0 for b in arrays), weights, strict=True)]
    print("zipped")
    return out


@breaks(_vec, expected_breaks=1)
def next_of_generator(x):
    gen = _scaled(x, 5)
    first = next(gen)
    second = next(gen)
    numpile.graph_break()
    return first + second


@breaks(_arrays, expected_breaks=1)
def any_over_generator_of_checks(arrays):
    if any((a > 10.0).all() for a in arrays):
        return arrays[0]
    return arrays[1]


@breaks(_arrays, expected_breaks=1)
def generator_max_of_items(arrays):
    best = max(a.sum().item() for a in arrays)
    return best


@breaks(_vec, expected_breaks=1)
def dict_comprehension_then_print(x):
    powers = {k: x**k for k in range(1, 4)}
    print("powers", list(powers))
    return powers[3] - powers[1]


# ---------------------------------------------------------------------------------------------
# numpile.graph_break, disable, disallow_in_graph, allow_in_graph


@breaks(_vec, expected_breaks=1)
def explicit_graph_break(x):
    y = np.sin(x)
    numpile.graph_break()
    return np.cos(y)


@breaks(_vec, expected_breaks=2)
def two_explicit_graph_breaks(x):
    x = x + 1.0
    numpile.graph_break()
    x = x * 2.0
    numpile.graph_break()
    return x - 3.0


@breaks(_vec, expected_breaks=2)
def graph_break_in_helper(x):
    return _break_helper(x) * 2.0


@breaks(_vec, expected_breaks=1)  # a body with no array work: the loop runs in Python
def graph_break_in_unrolled_loop(x):
    for _ in range(2):
        x = x * 1.5
        numpile.graph_break()
    return x


@breaks(_vec, expected_breaks=1)
def disabled_helper_call(x):
    s = _disabled_report(x)
    return x / (abs(s) + 1.0)


@breaks(_vec, expected_breaks=1)
def disabled_non_recursive_call(x):
    y = _disabled_shallow(x)
    return y + 1.0


@breaks(_vec, expected_breaks=1)
def disallowed_helper_call(x):
    y = _disallowed_helper(x * 2.0)
    return y - 1.0


@breaks(_vec, expected_breaks=1)
def allowed_helper_then_print(x):
    y = _allowed_norm(x * 3.0)
    print("normalized")
    return y


@breaks(_vec, expected_breaks=1)
def disabled_method_call(x):
    m = _MODEL.report(x)
    return x - m


@breaks(_vec, expected_breaks=1)
def graph_break_between_inplace_ops(x):
    y = x.copy()
    y += 1.0
    numpile.graph_break()
    y *= y
    return y


@breaks(_vec, expected_breaks=1)
def is_compiling_then_break(x):
    y = x * 2.0 if numpile.is_compiling() else x + x
    numpile.graph_break()
    return y


@breaks(lambda rng, n: Inputs((rng.standard_normal(n),), {"verbose": True}), expected_breaks=1)
def keyword_argument_controls_print(x, verbose=False):
    if verbose:
        print("verbose run")
    return x * 2.0


@breaks(_vec, expected_breaks=3)
def break_print_and_item(x):
    numpile.graph_break()
    print("middle")
    return x * x.sum().item()


@breaks(_mat, expected_breaks=1)
def graph_break_keeps_matrix_views(x):
    t = x.T
    numpile.graph_break()
    return t, t @ x


@breaks(_vec, expected_breaks=1)
def disabled_then_data_branch(x):
    s = _disabled_report(x)
    if s > 0:
        return x * 2.0
    return x


@breaks(_vec, expected_breaks=1)
def graph_break_returns_nothing(x):
    result = numpile.graph_break()
    return x, result


# ---------------------------------------------------------------------------------------------
# breaks inside loops, try/except and with blocks; generators and user classes modelled


class _Meter:
    """A context manager written in Python: captured by inlining __enter__ and __exit__."""

    def __init__(self) -> None:
        self.depth = 0
        self.exits = 0

    def __enter__(self) -> _Meter:
        self.depth += 1
        return self

    def __exit__(self, kind: Any, value: Any, tb: Any) -> bool:
        self.depth -= 1
        self.exits += 1
        return kind is KeyError


class _Stats:
    __slots__ = ("count", "total")

    def __init__(self, like: Any) -> None:
        self.count = 0
        self.total = like * 0.0

    def push(self, value: Any) -> None:
        self.total = self.total + value
        self.count += 1

    @property
    def mean(self) -> Any:
        return self.total / max(self.count, 1)


@dataclasses.dataclass(frozen=True)
class _Affine:
    scale: float
    shift: float = 0.5

    def __call__(self, x: Any) -> Any:
        return x * self.scale + self.shift

    @classmethod
    def identity(cls) -> _Affine:
        return cls(1.0, 0.0)


@breaks(_vec, expected_breaks=1)  # a body with no array work: the loop runs in Python
def print_mid_body_of_range_loop(x):
    y = np.exp(x)
    for i in range(3):
        y = y + i
        print("step", i)
        y = np.tanh(y)
    return y


@breaks(_vec, expected_breaks=1)  # a body with no array work: the loop runs in Python
def library_call_in_every_iteration(x):
    s = 0.0
    for i in range(x.shape[0]):
        y = np.sin(x[i]) * 2.0
        s = s + json.loads(json.dumps(float(y)))
    return s


@breaks(_arrays, expected_breaks=3)
def graph_break_mid_body_of_list_loop(arrays):
    total = arrays[0] * 0.0
    for a in arrays:
        total = total + a
        numpile.graph_break()
        total = total * 0.5
    return total


# A cosine of a short vector saves too little compiled: the whole loop runs in Python.
@breaks(_vec, expected_breaks=1)
def while_loop_with_data_branch(x):
    k = 0
    while k < 3:
        x = np.cos(x)
        if x.sum() > 1.0:
            x = x - 0.25
        k += 1
    return x


@breaks(_vec, expected_breaks=3)
def print_then_raise_caught_in_try(x):
    y = x + 1.0
    try:
        print("in try")
        y = y * 2.0
        raise ValueError("caught")
    except ValueError as error:
        print("caught", error)
        y = y - 1.0
    return y


@breaks(_vec, expected_breaks=2)
def print_in_try_with_finally(x):
    y = np.sqrt(np.abs(x))
    try:
        print("body")
        y = y + 1.0
    finally:
        print("finally")
    return y * 2.0


@breaks(_vec, expected_breaks=1)
def print_inside_user_context_manager(x):
    meter = _Meter()
    with meter as m:
        y = x * (m.depth + 1)
        print("inside", m.depth)
        y = y + m.depth
    return y, meter.depth, meter.exits


@breaks(_vec, expected_breaks=2)
def user_context_manager_swallows_key_error(x):
    meter = _Meter()
    y = x
    with meter:
        y = x * 3.0
        raise KeyError("swallowed")
    return y, meter.exits


@breaks(_vec, expected_breaks=5)
def print_inside_errstate(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.log(x * 0.0)
        print("inside", np.geterr()["divide"])
        y = np.where(np.isfinite(y), y, 0.0)
    return y


@breaks(_arrays, expected_breaks=1)
def slotted_stats_across_break(arrays):
    stats = _Stats(arrays[0])
    for a in arrays:
        stats.push(a)
    print("pushed", stats.count)
    return stats.mean


@breaks(_vec, expected_breaks=0)
def frozen_dataclass_then_item(x):
    f = _Affine(2.0)
    g = _Affine.identity()
    y = g(f(x))
    return y, float(y.max())


@breaks(_arrays, expected_breaks=1)
def generator_feeding_loop_with_print(arrays):
    total = arrays[0] * 0.0
    for square in _squares(arrays):
        total = total + square
    print("total ready")
    return total


# ---------------------------------------------------------------------------------------------
# locals captured by inner functions (cells): resumed as values in fresh cells


@breaks(_vec, expected_breaks=2)
def closure_over_a_local_made_after_a_print(x):
    scale = x.sum()
    print("scale", round(float(scale), 6))
    shift = lambda y: y * 0.5 + scale  # noqa: E731
    return shift(x)


@breaks(_vec, expected_breaks=3)  # the loop's index is a run-time input: one resume
def closure_per_iteration_of_a_breaking_loop(x):
    acc = x * 0.0
    for i in range(3):
        bump = lambda y: y + i * x  # noqa: E731, B023 (a cell per iteration, on purpose)
        acc = bump(acc)
        print("iteration", i)
    return acc
