"""Fusion decisions: kernel counts for sample graphs and the printed post-fusion IR."""

from __future__ import annotations

from typing import Any

import numpy as np

from numpile_capture import Graph, get_op, meta_of
from numpile_inductor import lower_graph, schedule


def _graph(inputs: list[np.ndarray], build: Any) -> Graph:
    g = Graph()
    nodes = [g.placeholder(name, meta_of(x)) for name, x in zip("abc", inputs, strict=False)]
    g.output = build(g, *nodes)
    return g


def test_post_fusion_ir_prints_as_loops() -> None:
    def build(g: Graph, a: Any, b: Any) -> Any:
        m = g.call(get_op("multiply"), g.call(get_op("sin"), a), b)
        return m, g.call(get_op("sum"), m, axis=(1,))

    sched = schedule(lower_graph(_graph([np.zeros((4, 3)), np.zeros(3)], build)))
    assert str(sched) == (
        "kernel0: rows over [4]\n"
        "  part0: pointwise over [4, 3]  # fuses v1\n"
        "    v1[x0, x1] = multiply(sin(a[x0, x1]), b[x1])\n"
        "  part1: reduction over [4] x [3]  # fuses v2\n"
        "    v2[x0] = sum(v1[x0, r0])"
    )


def test_softmax_is_four_loop_nests_in_one_row_group() -> None:
    def build(g: Graph, x: Any) -> Any:
        peak = g.call(get_op("max"), x, axis=(1,), keepdims=True)
        e = g.call(get_op("exp"), g.call(get_op("subtract"), x, peak))
        total = g.call(get_op("sum"), e, axis=(1,), keepdims=True)
        return g.call(get_op("divide"), e, total)

    sched = schedule(lower_graph(_graph([np.zeros((8, 16))], build)))
    (group,) = sched.kernels
    assert [k.is_reduction for k in group.parts] == [True, False, True, False]
    assert group.scratch == frozenset({"v0", "v2", "v3"})
    assert str(group).splitlines()[0] == "kernel0: rows over [8]"


def test_multi_output_pointwise_group_shares_one_loop() -> None:
    def build(g: Graph, a: Any, b: Any) -> Any:
        e = g.call(get_op("exp"), a)
        return g.call(get_op("add"), e, b), g.call(get_op("multiply"), e, b)

    sched = schedule(lower_graph(_graph([np.zeros((5, 7)), np.zeros((5, 7))], build)))
    assert len(sched.kernels) == 1
    (kernel,) = sched.kernels
    assert kernel.internal == frozenset({"v0"})  # exp lives in a register only
    assert [store.buffer for store in kernel.stores] == ["v0", "v1", "v2"]


def test_reductions_over_different_ranges_stay_apart() -> None:
    def build(g: Graph, a: Any) -> Any:
        return g.call(get_op("sum"), a, axis=(0,)), g.call(get_op("sum"), a, axis=(1,))

    sched = schedule(lower_graph(_graph([np.zeros((5, 7))], build)))
    assert len(sched.kernels) == 2
