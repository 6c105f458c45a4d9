"""The transforms through the façade: wrappers, guards of compiled transforms, errors.

`numpile.grad(f)` compiled with `numpile.compile` reads `f`'s globals through
the wrapper (`__wrapped__`), so rebinding one of them recompiles instead of
returning stale gradients.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import numpile

SCALE = 2.0


def _scaled_loss(w: Any) -> Any:
    return np.sum(np.sin(w) * SCALE)


def test_transform_wrappers_name_and_wrap_the_function() -> None:
    wrapper = numpile.value_and_grad(_scaled_loss)
    assert wrapper.__wrapped__ is _scaled_loss  # type: ignore[attr-defined]
    assert wrapper.__qualname__ == "value_and_grad(_scaled_loss)"
    assert numpile.grad(_scaled_loss).__name__ == "grad__scaled_loss"


def test_compiled_grad_recompiles_when_a_global_of_the_function_changes() -> None:
    global SCALE
    w = np.linspace(0.0, 1.0, 4)
    compiled = numpile.compile(numpile.grad(_scaled_loss), backend="eager", fullgraph=True)
    np.testing.assert_allclose(compiled(w), 2.0 * np.cos(w), rtol=1e-15)
    SCALE = 3.0
    try:
        np.testing.assert_allclose(compiled(w), 3.0 * np.cos(w), rtol=1e-15)
    finally:
        SCALE = 2.0


def test_compiled_grad_of_a_non_scalar_function_raises_like_eager() -> None:
    def vector(w: Any) -> Any:
        return np.sin(w)

    with pytest.raises(TypeError, match="needs a scalar float output"):
        numpile.grad(vector)(np.ones(2))
    with pytest.raises(TypeError, match="needs a scalar float output"):
        numpile.compile(numpile.grad(vector), backend="eager")(np.ones(2))


def test_vjp_function_made_inside_a_compiled_function_cannot_escape() -> None:
    def make(w: Any) -> Any:
        return numpile.vjp(lambda v: np.sin(v), w)

    _, pullback = numpile.compile(make, backend="eager")(np.ones(2))
    with pytest.raises(RuntimeError, match="can only be called inside it"):
        pullback(np.ones(2))
