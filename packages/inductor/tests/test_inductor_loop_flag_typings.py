"""A loop that computes on a local before an inner loop assigning it may have run (issue 23).

`t = 1.1; for i in range(n): y[i] = t * z[i]; while x[k] > 0.5: t = t + x[k]` multiplies a
Python float (weak, NEP 50: a float32 product on a float32 `z`) until an inner loop ran,
a NumPy float64 (a float64 product) after. The C loop writes such work both ways, the
run-time flag of whether an inner loop assigning `t` ran choosing per iteration
(`codegen/c/loop_flag_typings.py`): eager's values, dtypes and objects with no run of the
loop with NumPy. What it cannot type both ways keeps that run, and the perf hint says why.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from numpile_capture import compile_function, explain, reset
from numpile_inductor import compile_graph
from numpile_inductor.codegen.c.loop_body import NotScalarLoop
from numpile_inductor.codegen.c.loop_flag_typings import flag_typing


def float_product_before(x: Any, z: Any, y: Any, n: int) -> Any:
    t = 1.1
    for i in range(n):
        y[i] = t * z[i]  # float32 for a Python float `t` and a float32 `z`, float64 after
        k = i
        while x[k] > 0.5:
            t = t + x[k]
            k += 1
    return t, y


def int_product_before(x: Any, z: Any, y: Any, n: int) -> Any:
    c = 3
    for i in range(n):
        y[i] = c * z[i] + z[i]  # int32 for a Python int `c` and an int32 `z`, int64 after
        k = i
        while x[k] > 0:
            c = c + x[k]
            k += 1
    return c, y


def int_argument_product_before(x: Any, z: Any, y: Any, n: int, c: int) -> Any:
    for i in range(n):
        y[i] = c * z[i]  # OverflowError where int32 cannot hold a Python int `c`
        k = i
        while x[k] > 0:
            c = c + x[k]
            k += 1
    return c, y


def bool_product_before(x: Any, z: Any, y: Any, n: int) -> Any:
    b = False
    for i in range(n):
        y[i] = z[i] * b  # NumPy takes a Python bool as its own bool: the same either way
        k = i
        while x[k] > 0.5:
            b = x[k] > 0.7  # a NumPy bool once it runs
            k += 1
    return b, y


def read_before_and_after(x: Any, z: Any, y: Any, n: int) -> Any:
    t = 1.1
    for i in range(n):
        y[i] = t * z[i]
        for j in range(i, 8):
            if x[j] <= 0.5:
                break  # the first iteration may break: `t` is not assigned then
            t = t + x[j]
        y[i] = y[i] + t * z[i]  # the flag after the inner loop chooses
    return t, y


def array_of_either_dtype(x: Any, z: Any, y: Any, n: int) -> Any:
    t = 1.1
    for i in range(n):
        w = t * z  # a float32 array for a Python float `t`, float64 after
        y[i] = w[i]
        k = i
        while x[k] > 0.5:
            t = t + x[k]
            k += 1
    return t, y


def python_product_before(x: Any, z: Any, y: Any, n: int) -> Any:
    t = 1.1
    for i in range(n):
        y[i] = t * 2.0 * z[i]  # Python's `*` where `t` is a Python float
        k = i
        while x[k] > 0.5:
            t = t + x[k]
            k += 1
    return t, y


def product_in_inner_first_iteration(x: Any, z: Any, y: Any, n: int) -> Any:
    t = 1.1
    for i in range(n):
        k = i
        while x[k] > 0.5:
            y[k] = t * z[k]  # float32 while `t` is the Python float: no inner loop ran yet
            t = t + x[k]
            k += 1
    return t, y


def sum_of_a_second_array(x: Any, w: Any, z: Any, y: Any, n: int) -> Any:
    t = 1.1
    for i in range(n):
        y[i] = t * z[i]
        k = i
        while x[k] > 0.5:
            # In its first iteration `t` may be the Python float: an int32 or a float64 `w`
            # adds in float64 on both types (C), a float32 one in float32 on the Python
            # float (NumPy), and `t * 3.0` is followed as `t` is.
            t = t * 3.0 + w[k]
            k += 1
    return t, y


def _data(kind: str, integer: bool) -> Any:
    # Inner loops that run never, in some outer iterations, or in all of them.
    x = {"never": np.zeros(9), "sometimes": np.array([0, 0.9, 0, 0, 0, 0, 0, 0, 0])}.get(
        kind, np.full(9, 0.9)
    )
    x[-2:] = 0.0
    return (x * 10).astype(np.int64) if integer else x


def _operands(dtype: Any) -> tuple[Any, Any]:
    # `z` with values whose products round otherwise in float32 than in float64, and `y`.
    z = np.linspace(0.3, 2.9, 8)
    z = np.arange(1, 9) * 7 if np.dtype(dtype).kind == "i" else z
    return z.astype(dtype), np.zeros(8, dtype)


def _dispatched(fn: Callable[..., Any]) -> Callable[..., Any]:
    # `fn` through capture's dispatcher, each graph compiled by the inductor.
    reset()

    def backend(graph: Any, example_inputs: Any) -> Any:
        return compile_graph(graph).fn

    return compile_function(fn, backend=backend, dynamic=True)


def _same(got: Any, want: Any) -> None:
    # Eager's objects: the local's type after the loop, `y`'s dtype and bits.
    assert type(got[0]) is type(want[0]), (got[0], want[0])
    assert got[0] == want[0]
    assert got[1].dtype == want[1].dtype
    assert got[1].tobytes() == want[1].tobytes(), (got[1], want[1])


def _runs_like_eager(fn: Callable[..., Any], dtype: Any, integer: bool) -> None:
    compiled = _dispatched(fn)
    for n in (5, 0, 1, 5):
        for kind in ("never", "sometimes", "always"):
            z, y = _operands(dtype)
            want_y = y.copy()
            got = compiled(_data(kind, integer), z, y, n)
            want = fn(_data(kind, integer), z, want_y, n)
            assert got[1] is y
            _same(got, want)


@pytest.mark.parametrize(
    ("fn", "dtype", "integer"),
    [
        pytest.param(float_product_before, np.float32, False, id="float-float32"),
        pytest.param(int_product_before, np.int32, True, id="int-int32"),
        pytest.param(bool_product_before, np.float64, False, id="bool-float64"),
        pytest.param(read_before_and_after, np.float32, False, id="before-and-after"),
    ],
)
def test_work_on_a_flagged_local_runs_as_c_both_ways(
    fn: Callable[..., Any], dtype: Any, integer: bool, numpy_runs: list[Any]
) -> None:
    _runs_like_eager(fn, dtype, integer)
    assert numpy_runs == []


def test_a_python_int_the_narrower_dtype_cannot_hold_raises_as_eager(
    numpy_runs: list[Any],
) -> None:
    compiled = _dispatched(int_argument_product_before)
    x, (z, y) = _data("never", True), _operands(np.int32)
    for c in (3, 2**32 + 1, -(2**32) - 1, 5):  # 1 and -1 where C would wrap them silently
        try:
            want = int_argument_product_before(x, z, y.copy(), 5, c)
        except OverflowError as error:
            with pytest.raises(OverflowError, match=str(error)):
                compiled(x, z, y.copy(), 5, c)
            continue
        _same(compiled(x, z, y.copy(), 5, c), want)
    assert len(numpy_runs) == 2  # the two calls that raise: C bails, NumPy raises


def test_an_inner_loop_computing_on_the_entry_object_in_its_first_iteration_keeps_eager_bits(
    numpy_runs: list[Any],
) -> None:
    # `t` is left as it came unless the inner loop ran (capture's `entry_unless_ran`), but
    # that loop's first iteration multiplies the Python float: the loop's run with NumPy.
    compiled = _dispatched(product_in_inner_first_iteration)
    for n in (5, 0, 1, 5):
        for kind in ("never", "sometimes", "always"):
            z, _ = _operands(np.float32)
            y, want_y = np.zeros(8), np.zeros(8)  # float64: the float32 product stays visible
            got = compiled(_data(kind, False), z, y, n)
            _same(got, product_in_inner_first_iteration(_data(kind, False), z, want_y, n))
    assert numpy_runs


def test_an_array_whose_dtype_would_follow_the_flag_keeps_the_numpy_run_and_says_why(
    numpy_runs: list[Any], caplog: pytest.LogCaptureFixture, fresh_cache: Path
) -> None:
    with caplog.at_level(logging.INFO, logger="numpile.perf_hints"):  # logged as it compiles
        _runs_like_eager(array_of_either_dtype, np.float32, False)
    reason = "is an array of float64 on the loop's types and of float32 on the entry's"
    assert reason in caplog.text
    assert numpy_runs


def _loop_body(fn: Callable[..., Any]) -> Any:
    # The body graph of `fn`'s loop, as capture keeps it.
    z, y = _operands(np.float32)
    (graph,) = explain(fn)(_data("sometimes", False), z, y, 5).graphs
    (loop,) = [node for node in graph.nodes if node.op is not None and node.op.name == "for_loop"]
    return dict(loop.params)["body"]


def test_python_arithmetic_on_the_local_is_not_typed_both_ways() -> None:
    with pytest.raises(NotScalarLoop, match="the graph does not say which"):
        flag_typing(_loop_body(python_product_before), 0, "t", float)


def test_the_typing_on_the_entry_type_is_numpys_own() -> None:
    typing = flag_typing(_loop_body(float_product_before), 0, "t", float)
    products = [node for node in typing.dual if node.op is not None and node.op.name == "multiply"]
    assert [str(node.meta) for node in products] == ["float64[]"]
    assert [str(typing.dual[node].meta) for node in products] == ["float32[]"]
    assert len(typing.boundaries) == 1


@pytest.mark.parametrize(
    ("dtype", "in_c"),
    [
        pytest.param(np.int32, True, id="int32"),
        pytest.param(np.uint8, True, id="uint8"),
        pytest.param(np.float64, True, id="float64"),
        pytest.param(np.float32, False, id="float32"),
    ],
)
def test_an_inner_loop_on_mixed_dtypes_runs_as_c_where_numpys_rules_agree(
    dtype: Any, in_c: bool, numpy_runs: list[Any]
) -> None:
    # The inner loop's first iteration on the entry object is judged by
    # loop_entry_scalars' `computes_either_way`, as any loop's first iteration is.
    compiled = _dispatched(sum_of_a_second_array)
    w = (np.arange(9) * 7 + 0.37).astype(dtype)
    for n in (5, 0, 1, 5):
        for kind in ("never", "sometimes", "always"):
            z, y = _operands(np.float32)
            want_y = y.copy()
            got = compiled(_data(kind, False), w, z, y, n)
            _same(got, sum_of_a_second_array(_data(kind, False), w, z, want_y, n))
    assert (numpy_runs == []) is in_c
