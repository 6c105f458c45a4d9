"""A loop whose first iteration computes on a Python entry scalar (issue 23).

`t = 1.1; for i in range(n): y[i] = t * z[i]; t = x[i]` multiplies a Python float (weak,
NEP 50: a float32 product on a float32 `z`) in the first iteration and an `np.float64`
(a float64 product) after. The C loop runs the body from the start on the entry converted
to the carried dtype only where every op reading it computes the same either way
(`codegen/c/loop_entry_scalars.py`); else it runs the first iteration apart. Each program
runs compiled and eagerly at several trip counts: the same bits, dtypes and objects.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from numpile_capture import Graph, capture_function, compile_function, reset
from numpile_inductor import compile_graph
from numpile_inductor.codegen.c.loop_entry_scalars import computes_either_way


def float_and_int_entries(
    x: Any, k: Any, z: Any, zc: Any, z8: Any, y: Any, yc: Any, b: Any, y8: Any, n: int
) -> Any:
    t = 1.1
    c = 100
    for i in range(n):
        y[i] = t * z[i]  # float32 on the Python float, float64 on the np.float64 after
        yc[i] = t * zc[i]  # complex64, then complex128
        b[i] = z[i] == t  # compared in float32, then in float64
        s = t + 1.0  # Python's `+`: a Python float still, weak where it meets `z`
        y[i] = y[i] + s * z[i] + (c + 16777117) * z[i]  # a Python int times float32 too
        y8[i] = c * z8[i]  # int8 (wrapping) on the Python int, int64 on the np.int64 after
        t = x[i]
        c = k[i]
    return t, c, y, yc, b, y8


def half_and_complex_entries(x: Any, xc: Any, z16: Any, zc: Any, y: Any, yc: Any, n: int) -> Any:
    t = 1.1
    w = 1.1 + 0.3j
    for i in range(n):
        y[i] = t * z16[i]  # float16 on the Python float, float64 after
        yc[i] = w * zc[i]  # complex64 on the Python complex, complex128 after
        t = x[i]
        w = xc[i]
    return t, w, y, yc


def _inputs(fn: Callable[..., Any]) -> list[Any]:
    ramp = np.linspace(0.3, 2.9, 6)
    if fn is float_and_int_entries:
        z = np.full(6, 1.1, np.float32)
        zc = (z + 0.7j).astype(np.complex64)
        return [ramp, np.arange(6) + 3, z, zc, np.full(6, 3, np.int8), np.zeros(6),
                np.zeros(6, complex), np.zeros(6, bool), np.zeros(6, np.int64)]  # fmt: skip
    z16 = np.full(6, 1.1, np.float16)
    zc = (ramp + 0.7j).astype(np.complex64)
    return [ramp, ramp + 0.5j, z16, zc, np.zeros(6), np.zeros(6, complex)]


def _dispatched(fn: Callable[..., Any]) -> Callable[..., Any]:
    # `fn` through capture's dispatcher, each graph compiled by the inductor.
    reset()

    def backend(graph: Any, example_inputs: Any) -> Any:
        return compile_graph(graph).fn

    return compile_function(fn, backend=backend, dynamic=True)


def _same(got: Any, want: Any) -> None:
    assert len(got) == len(want)
    for mine, eager in zip(got, want, strict=True):
        assert type(mine) is type(eager), (mine, eager)
        assert np.asarray(mine).dtype == np.asarray(eager).dtype
        assert np.asarray(mine).tobytes() == np.asarray(eager).tobytes(), (mine, eager)


@pytest.mark.parametrize("fn", [float_and_int_entries, half_and_complex_entries])
def test_a_first_iteration_on_a_python_entry_keeps_eager_bits(
    fn: Callable[..., Any], numpy_runs: list[Any]
) -> None:
    compiled = _dispatched(fn)
    for n in (5, 0, 1, 2):
        mine, eager = _inputs(fn), _inputs(fn)
        with np.errstate(over="ignore"):  # int8 products wrap: C keeps them, warning none
            _same(compiled(*mine, n), fn(*eager, n))
        _same(mine, eager)
    if fn is not half_and_complex_entries:  # C has no float16 and no complex entry
        assert numpy_runs == []


def _first(fn: Callable[..., Any], *args: Any) -> Graph:
    # The first iteration's graph of `fn`'s loop, as capture keeps it.
    graph = capture_function(fn, args, {}).graph
    (loop,) = [node for node in graph.nodes if node.op is not None and node.op.name == "for_loop"]
    first: Graph = dict(loop.params)["first"]
    return first


# A loop storing `expression` on its carried local `t`, a Python `entry` in the first
# iteration and an element of `x` after (a program text: capture reads its bytecode).
_MEETS = """
def meets(x, z, y):
    t = {entry!r}
    for i in range(x.shape[0]):
        y[i] = {expression}
        t = x[i]
    return t
"""


def _meets(expression: str, entry: Any) -> Callable[..., Any]:
    namespace: dict[str, Any] = {"np": np}
    exec(_MEETS.format(entry=entry, expression=expression), namespace)
    fn: Callable[..., Any] = namespace["meets"]
    return fn


@pytest.mark.parametrize(
    ("entry", "expression", "z", "y", "either_way"),
    [
        pytest.param(0.5, "t * z[i]", np.float64, np.float64, True, id="float-float64"),
        pytest.param(0.5, "t + z[i]", np.int32, np.float64, True, id="float-int32"),
        pytest.param(0.5, "t * z[i]", np.float32, np.float64, False, id="float-float32"),
        pytest.param(0.5, "z[i] <= t", np.float32, bool, False, id="float-le-float32"),
        pytest.param(0.5, "z[i] <= t", np.float64, bool, True, id="float-le-float64"),
        pytest.param(3, "t * z[i]", np.int8, np.int64, False, id="int-int8"),
        pytest.param(3, "t + z[i]", np.uint8, np.int64, False, id="int-uint8"),
        pytest.param(3, "t + z[i]", np.uint64, np.float64, False, id="int-uint64"),
        pytest.param(3, "t * z[i]", np.float64, np.float64, True, id="int-float64"),
        pytest.param(0.5, "1.0 / t + z[i]", np.float64, np.float64, False, id="py-div"),
        pytest.param(0.5, "t * 3.0 + z[i]", np.float64, np.float64, True, id="py-mul"),
        pytest.param(3, "t * 3 + z[i]", np.float64, np.float64, False, id="py-int-mul"),
        pytest.param(3, "t", np.int8, np.int8, False, id="int-store-int8"),
        pytest.param(0.5, "t", np.float32, np.float64, True, id="float-store"),
    ],
)
def test_the_first_iteration_computes_either_way_where_numpy_rules_agree(
    entry: Any, expression: str, z: Any, y: Any, either_way: bool
) -> None:
    x = np.arange(1, 5).astype(np.int64 if isinstance(entry, int) else np.float64)
    first = _first(_meets(expression, entry), x, np.ones(4, z), np.zeros(4, y))
    carried = np.dtype(np.int64 if isinstance(entry, int) else np.float64)
    assert computes_either_way(first, first.placeholders[1], carried) is either_way


def branch_kept_entry(x: Any, z: Any, y: Any, w: Any) -> Any:
    t = 1.1
    for i in range(x.shape[0]):
        if x[i] > 0.5:
            t = x[i]  # until a branch assigns it, `t` is still the Python float
        y[i] = t * z[i]  # float32 on the Python float, float64 on the np.float64
        w[i] = t * 2.0  # float64 either way
    return y, w


def branch_kept_int_entry(x: Any, z: Any, y: Any, w: Any) -> Any:
    t = 100
    for i in range(x.shape[0]):
        if x[i] > 0.5:
            t = x[i]  # a float64 from here; a Python int (weak) until then
        y[i] = t + z[i].astype(np.int8)  # int8 (wrapping) on the int, float64 after
        w[i] = t * 2.0
    return y, w


def running_max(x: Any, y: Any) -> Any:
    best = -np.inf
    for i in range(x.shape[0]):
        if x[i] > best:
            best = x[i]
        y[i] = best * 2.0  # float64 either way: the loop stays C
    return y


def test_a_python_entry_a_branch_may_keep_is_computed_on_as_eager(
    numpy_runs: list[Any],
) -> None:
    rng = np.random.default_rng(3)
    for fn in (branch_kept_entry, branch_kept_int_entry):
        numpy_runs.clear()
        compiled = _dispatched(fn)
        for n, scale in ((3, 1.0), (6, 0.4), (6, 1.0), (1, 0.4), (0, 1.0)):
            x = rng.random(n) * scale
            z = (rng.random(n) * 100).astype(np.float32)
            mine = [x, z, np.zeros(n), np.zeros(n)]
            eager = [a.copy() for a in mine]
            with np.errstate(over="ignore"):
                _same(compiled(*mine), fn(*eager))
        assert numpy_runs  # the product's dtype follows the branch taken: NumPy's run

    numpy_runs.clear()
    compiled_max = _dispatched(running_max)
    x = rng.random(7)
    _same((compiled_max(x, np.zeros(7)),), (running_max(x, np.zeros(7)),))
    assert numpy_runs == []


def running_max_float32_from_a_python_float(x: Any, y: Any) -> Any:
    best = -1.1  # no float32 holds it: carried as float32, it would come back changed
    for i in range(x.shape[0]):
        v = x[i] * np.float32(2.0)
        if v > best:
            best = v
        y[i] = v
    return y, best


def test_a_python_entry_a_branch_may_keep_comes_back_as_it_came() -> None:
    # Where no iteration takes the branch, eager hands back the Python float -1.1 itself;
    # C carried it as float32 and gave np.float32(-1.1), another value (main, unseen4).
    compiled = _dispatched(running_max_float32_from_a_python_float)
    for values in ([-3.0, -2.0], [0.5, -2.0, 0.25], [-5.0], []):
        x = np.array(values, dtype=np.float32)
        got = compiled(x, np.zeros(x.shape[0], np.float32))
        want = running_max_float32_from_a_python_float(x, np.zeros(x.shape[0], np.float32))
        _same(got, want)
