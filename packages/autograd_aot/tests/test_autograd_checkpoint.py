"""checkpoint: both partitioners recompute a checkpointed call's values instead of saving them,
gradients unchanged; outside differentiation a checkpointed function is the function."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from numpile_autograd_aot import (
    checkpoint,
    default_partition,
    grad,
    jvp,
    min_cut_partition,
    saved_bytes,
    trace_joint,
    vmap,
)
from numpile_capture import compile_function


def _layer(h: np.ndarray, w: np.ndarray) -> Any:
    # An extern call and a reduction inside (kinds the min-cut saves unless checkpointed),
    # and sin, whose VJP reads the matmul's result.
    z = h @ w
    return np.tanh(np.sin(z) - np.mean(z, axis=1, keepdims=True))


_checkpointed = checkpoint(_layer)


def _chain(layer: Any) -> Any:
    def loss(ws: list[np.ndarray], x: np.ndarray) -> Any:
        h = x
        for w in ws:
            h = layer(h, w)
        return np.sum(h**2)

    return loss


@pytest.fixture
def data() -> tuple[list[np.ndarray], np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.normal(size=(16, 16)) * 0.3 for _ in range(3)], rng.normal(size=(32, 16))


@pytest.mark.parametrize("partition", [default_partition, min_cut_partition])
def test_partitioners_save_less_with_checkpoints(partition: Any, data: Any) -> None:
    ws, x = data
    plain = saved_bytes(partition(trace_joint(_chain(_layer), ws, x)))
    checkpointed = saved_bytes(partition(trace_joint(_chain(_checkpointed), ws, x)))
    assert checkpointed < plain


def test_default_partition_saves_only_what_enters_and_leaves_each_call(data: Any) -> None:
    ws, x = data
    partition = default_partition(trace_joint(_chain(_checkpointed), ws, x))
    # the weights and x, then the output of each call (the next call's input): no matmul or
    # mean results from inside a call
    inner = [node for node in partition.saved if node.op is not None and node.op.name != "tanh"]
    assert inner == []
    assert "checkpoint" not in str(partition.forward) + str(partition.backward)


@pytest.mark.parametrize("partitioner", ["default", "min_cut"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gradients_are_unchanged(partitioner: str, dtype: type, data: Any) -> None:
    ws, x = data
    ws = [w.astype(dtype) for w in ws]
    x = x.astype(dtype)
    want = grad(_chain(_layer), partitioner=partitioner)(ws, x)
    got = grad(_chain(_checkpointed), partitioner=partitioner)(ws, x)
    for a, b in zip(got, want, strict=True):
        # float32: the recomputed values are fused differently, so rounding differs
        tolerance = 1e-4 if dtype is np.float32 else 1e-12
        np.testing.assert_allclose(a, b, rtol=tolerance, atol=tolerance * np.max(np.abs(b)))


def test_checkpoint_outside_differentiation_is_the_function(data: Any) -> None:
    ws, x = data
    want = _layer(x, ws[0])
    np.testing.assert_allclose(_checkpointed(x, ws[0]), want)
    np.testing.assert_allclose(compile_function(_checkpointed)(x, ws[0]), want)
    batch = np.stack([x, 2 * x])
    by_example = np.stack([_layer(x, ws[0]), _layer(2 * x, ws[0])])
    np.testing.assert_allclose(vmap(_checkpointed, (0, None))(batch, ws[0]), by_example)
    _, tangent = jvp(lambda h: _checkpointed(h, ws[0]), (x,), (np.ones_like(x),))
    _, expected = jvp(lambda h: _layer(h, ws[0]), (x,), (np.ones_like(x),))
    np.testing.assert_allclose(tangent, expected, rtol=1e-12)
