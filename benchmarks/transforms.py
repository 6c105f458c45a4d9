"""Function-transform benchmarks: per-example gradients and the checkpointing trade.

Run as ``python -m benchmarks.transforms [--quick]``; two measurements:

- **Per-example gradients** of an MLP loss (float32, one example per row): a Python loop
  of ``numpile.grad`` calls (compiled, cached: the loop is the cost), ``numpile.vmap(
  numpile.grad(loss))`` (one compiled graph for the whole batch), a NumPy reference that
  writes the batched backward by hand, and ``jax.jit(jax.vmap(jax.grad(loss)))`` on the
  CPU when JAX is installed (a benchmark-only contender, never a test dependency).
- **Checkpointing** a deep MLP's layers (``numpile.checkpoint``): the bytes the forward
  saves for the backward under both partitioners, and the time of the training step
  (``numpile.value_and_grad`` compiled by the inductor), with and without.

Timed in interleaved rounds by ``benchmarks.timer``.

    >>> print(render(run(quick=True)))  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import numpy as np

from .timer import Timing, measure_interleaved

_SEED = 20261126


def mlp_loss(params: dict[str, Any], x: Any, y: Any) -> Any:
    """Squared error of a one-hidden-layer tanh MLP on one example (or a batch)."""
    hidden = np.tanh(x @ params["w1"] + params["b1"])
    return np.mean((hidden @ params["w2"] + params["b2"] - y) ** 2)


def _mlp(features: int, width: int, dtype: Any) -> dict[str, Any]:
    rng = np.random.default_rng(_SEED)
    return {
        "w1": (rng.normal(size=(features, width)) / np.sqrt(features)).astype(dtype),
        "b1": np.zeros(width, dtype),
        "w2": (rng.normal(size=(width, 1)) / np.sqrt(width)).astype(dtype),
        "b2": np.zeros(1, dtype),
    }


def _numpy_per_example(params: dict[str, Any], x: Any, y: Any) -> dict[str, Any]:
    # The batched backward of mlp_loss by hand (each example's loss is a mean over 1 output).
    hidden = np.tanh(x @ params["w1"] + params["b1"])
    error = 2 * (hidden @ params["w2"] + params["b2"] - y)
    d_hidden = (error @ params["w2"].T) * (1 - hidden**2)
    return {
        "w1": x[:, :, None] * d_hidden[:, None, :],
        "b1": d_hidden,
        "w2": hidden[:, :, None] * error[:, None, :],
        "b2": error,
    }


def per_example_contenders() -> dict[str, Callable[..., Any]]:
    """The per-example-gradient contenders, by name (JAX's only when it imports)."""
    import numpile

    grad = numpile.grad(mlp_loss)

    def loop(params: dict[str, Any], x: Any, y: Any) -> Any:
        return [grad(params, x[i], y[i]) for i in range(len(x))]

    contenders: dict[str, Callable[..., Any]] = {
        "numpy (by hand)": _numpy_per_example,
        "numpile grad loop": loop,
        "numpile vmap(grad)": numpile.vmap(numpile.grad(mlp_loss), in_axes=(None, 0, 0)),
    }
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return contenders

    def jax_loss(params: dict[str, Any], x: Any, y: Any) -> Any:
        hidden = jnp.tanh(x @ params["w1"] + params["b1"])
        return jnp.mean((hidden @ params["w2"] + params["b2"] - y) ** 2)

    jitted = jax.jit(jax.vmap(jax.grad(jax_loss), in_axes=(None, 0, 0)))

    def with_jax(params: dict[str, Any], x: Any, y: Any) -> Any:
        return jax.block_until_ready(jitted(params, x, y))

    contenders["jax jit(vmap(grad))"] = with_jax
    return contenders


def run_per_example(*, quick: bool) -> dict[str, dict[str, Timing | Exception]]:
    """Timings per batch size label."""
    results = {}
    for batch, features, width in ((64, 32, 64), (512, 32, 64)):
        params = _mlp(features, width, np.float32)
        rng = np.random.default_rng(_SEED + batch)
        x = rng.normal(size=(batch, features)).astype(np.float32)
        y = rng.normal(size=(batch, 1)).astype(np.float32)
        fns = per_example_contenders()
        check = fns["numpile vmap(grad)"](params, x, y)
        want = _numpy_per_example(params, x, y)
        for key in params:
            np.testing.assert_allclose(check[key], want[key], rtol=1e-3, atol=1e-5)
        label = f"batch {batch}, MLP {features}-{width}-1, float32"
        results[label] = measure_interleaved(
            fns,
            (params, x, y),
            budget_s=0.5 if quick else 3.0,
            min_repeats=3 if quick else 10,
        )
    return results


def _deep_loss(layer: Callable[..., Any]) -> Callable[..., Any]:
    def loss(params: list[Any], x: Any, y: Any) -> Any:
        h = x
        for w in params:
            h = layer(h, w)
        return np.mean((h - y) ** 2)

    return loss


def _layer(h: Any, w: Any) -> Any:
    z = h @ w
    return np.tanh(z) * np.exp(-0.5 * z * z) + np.sin(z)


def run_checkpoint(*, quick: bool) -> dict[str, Any]:
    """Saved bytes per partitioner and step timings, with and without checkpointing."""
    import numpile
    from numpile_autograd_aot import (
        default_partition,
        min_cut_partition,
        saved_bytes,
        trace_joint,
    )

    rng = np.random.default_rng(_SEED)
    depth, batch, width = 8, 1024, 256
    params = [(rng.normal(size=(width, width)) / np.sqrt(width)).astype(np.float32)]
    params += [(rng.normal(size=(width, width)) / np.sqrt(width)).astype(np.float32)]
    params = params * (depth // 2)
    x = rng.normal(size=(batch, width)).astype(np.float32)
    y = rng.normal(size=(batch, width)).astype(np.float32)
    plain = _deep_loss(_layer)
    checkpointed = _deep_loss(numpile.checkpoint(_layer))
    saved = {}
    for name, loss in (("plain", plain), ("checkpoint", checkpointed)):
        joint = trace_joint(loss, params, x, y)
        saved[name] = {
            "default": saved_bytes(default_partition(joint)),
            "min_cut": saved_bytes(min_cut_partition(joint)),
        }
    fns = {
        "plain": numpile.value_and_grad(plain),
        "checkpoint": numpile.value_and_grad(checkpointed),
    }
    timings = measure_interleaved(
        fns, (params, x, y), budget_s=0.5 if quick else 3.0, min_repeats=3 if quick else 10
    )
    label = f"{depth} layers of {width}x{width}, batch {batch}, float32"
    return {"label": label, "saved": saved, "timings": timings}


def render(per_example: dict[str, Any], checkpoint: dict[str, Any]) -> str:
    """The two tables as Markdown."""
    lines = ["## Per-example gradients (median per call; ratio: the loop's time / this)", ""]
    for label, timings in per_example.items():
        lines += [f"{label}:", "", "| contender | median | vs grad loop |", "| --- | --- | --- |"]
        base = timings.get("numpile grad loop")
        for name, timing in timings.items():
            if isinstance(timing, Exception):
                lines.append(f"| {name} | failed: {timing!r} | - |")
                continue
            ratio = base.median_s / timing.median_s if isinstance(base, Timing) else float("nan")
            lines.append(f"| {name} | {timing.median_s * 1e3:.3f} ms | {ratio:.1f}x |")
        lines.append("")
    lines += [f"## Checkpointing ({checkpoint['label']})", ""]
    lines += ["| | saved, default | saved, min-cut | step median |", "| --- | --- | --- | --- |"]
    for name in ("plain", "checkpoint"):
        saved = checkpoint["saved"][name]
        timing = checkpoint["timings"][name]
        step = f"{timing.median_s * 1e3:.2f} ms" if isinstance(timing, Timing) else repr(timing)
        lines.append(
            f"| {name} | {saved['default'] / 2**20:.2f} MiB | {saved['min_cut'] / 2**20:.2f} MiB "
            f"| {step} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run both measurements and print the tables."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.transforms")
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    options = parser.parse_args(argv)
    per_example = run_per_example(quick=options.quick)
    checkpoint = run_checkpoint(quick=options.quick)
    print(render(per_example, checkpoint))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
