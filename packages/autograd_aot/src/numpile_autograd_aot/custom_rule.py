"""Custom derivative rules: `custom_vjp` and `custom_jvp` functions the user differentiates.

A decorated function runs as itself when called; inside a captured function
(every transform captures, and so does `numpile.compile`) a call to it is one
opaque node, the op of an `allow_in_graph` function, whose VJP and JVP rules
are the user's:

- `custom_vjp(fn)` then `fn.defvjp(fwd, bwd)`: `fwd(*args) -> (out, residuals)`,
  `bwd(residuals, cotangent) -> one cotangent per argument` (as in JAX). The
  backward runs `fwd` again for the residuals (they are not saved across the
  graph boundary). Forward mode is refused with a clear error, as in JAX.
- `custom_jvp(fn)` then `fn.defjvp(jvp)`: `jvp(primals, tangents) -> (out,
  tangent_out)`, linear in `tangents`. Reverse mode transposes it: the VJP of
  `tangents -> jvp(primals, tangents)[1]`, computed by numpile's own `vjp`
  (so `jvp` must be capturable NumPy code).

The decorated function takes arrays (and constants) and returns one array
whose shape and dtype do not depend on the data, like `allow_in_graph`
functions.

    >>> import numpy as np
    >>> from numpile_autograd_aot import grad
    >>> @custom_vjp
    ... def clipped_sin(x):
    ...     return np.sin(x)
    >>> clipped_sin.defvjp(
    ...     lambda x: (np.sin(x), np.cos(x)), lambda cos, g: (np.clip(g * cos, -0.5, 0.5),)
    ... )
    >>> grad(lambda x: np.sum(clipped_sin(x)))(np.zeros(2))
    array([0.5, 0.5])
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from numpile_capture import (
    Node,
    Op,
    TransformCall,
    allowed_op,
    get_op,
    register_transform,
    tree_flatten,
)

from .jvp_table import JvpContext, register_function_jvp
from .vjp_table import VjpContext, register_function_vjp

__all__ = ["CustomJvp", "CustomVjp", "custom_jvp", "custom_vjp"]


class _CustomRule:
    # The part both decorators share: the function, its opaque op, the traced stand-in.
    kind = ""

    def __init__(self, fn: Callable[..., Any]) -> None:
        functools.update_wrapper(self, fn)
        self.fn = fn

        def primal(*args: Any, **kwargs: Any) -> Any:
            return fn(*args, **kwargs)

        primal.__module__ = getattr(fn, "__module__", None) or primal.__module__
        primal.__qualname__ = getattr(fn, "__qualname__", primal.__qualname__)
        self._primal = primal

        def traced(*args: Any, **kwargs: Any) -> Any:
            return self(*args, **kwargs)

        # Capture traces `traced` in place of this object (see numpile_capture.compiling);
        # its rule makes the call one node (the rule lives on the function: numpile.reset()
        # does not forget it).
        register_transform(traced, self._expand, f"{self.kind} function {primal.__qualname__}")
        self._numpile_original = traced

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def op(self) -> Op:
        """The opaque op a call becomes (made again after `numpile.reset()`), its rules set."""
        op = allowed_op(self._primal)
        self._register(op)
        return op

    def _register(self, op: Op) -> None:
        raise NotImplementedError

    def _expand(self, call: TransformCall) -> Any:
        leaves, _ = tree_flatten((call.args, call.kwargs))
        if any(not isinstance(leaf, Node | int | float | complex | bool | str) for leaf in leaves):
            names = sorted({type(leaf).__name__ for leaf in leaves})
            raise TypeError(
                f"{self.kind} function {self._primal.__qualname__} takes arrays and constants, "
                f"not {', '.join(names)}"
            )
        return call.graph.call(self.op(), *call.args, **call.kwargs)


class CustomVjp(_CustomRule):
    """A function with a user-given VJP; see the module docstring (made by `custom_vjp`)."""

    kind = "custom_vjp"

    def __init__(self, fn: Callable[..., Any]) -> None:
        super().__init__(fn)
        self.fwd: Callable[..., Any] | None = None
        self.bwd: Callable[..., Any] | None = None

    def defvjp(self, fwd: Callable[..., Any], bwd: Callable[..., Any]) -> None:
        """Set the rule: `fwd(*args) -> (out, residuals)`, `bwd(residuals, g) -> cotangents`.

        >>> f.defvjp(f_fwd, f_bwd)  # doctest: +SKIP
        """
        self.fwd = fwd
        self.bwd = bwd

    def _register(self, op: Op) -> None:
        register_function_vjp(op, self._vjp_rule)
        register_function_jvp(op, self._jvp_rule)

    def _vjp_rule(self, ctx: VjpContext) -> Sequence[Node | None]:
        if self.fwd is None or self.bwd is None:
            raise NotImplementedError(
                f"custom_vjp function {self._primal.__qualname__} has no rule yet: "
                "call its .defvjp(fwd, bwd) first"
            )
        backward = _backward_op(self, "vjp_bwd", self._backward)
        return [
            ctx.graph.call(backward, *ctx.inputs, ctx.cotangent, position=i, **ctx.params)
            if ctx.wants(i)
            else None
            for i in range(len(ctx.inputs))
        ]

    def _backward(self, *values: Any, position: int, **params: Any) -> Any:
        assert self.fwd is not None and self.bwd is not None
        primals, cotangent = values[:-1], values[-1]
        _, residuals = self.fwd(*primals, **params)
        cotangents = self.bwd(residuals, cotangent)
        if not isinstance(cotangents, tuple) or len(cotangents) != len(primals):
            raise TypeError(
                f"the bwd of custom_vjp function {self._primal.__qualname__} must return a "
                f"tuple of {len(primals)} cotangent(s), one per argument"
            )
        primal = np.asarray(primals[position])
        found = cotangents[position]
        if found is None:
            return np.zeros_like(primal)
        return np.broadcast_to(np.asarray(found, primal.dtype), primal.shape).copy()

    def _jvp_rule(self, ctx: JvpContext) -> Node | None:
        raise TypeError(
            f"cannot differentiate custom_vjp function {self._primal.__qualname__} in forward "
            "mode (jvp, jacfwd, hessian): give it a custom_jvp rule instead, which serves both "
            "modes"
        )


class CustomJvp(_CustomRule):
    """A function with a user-given JVP; see the module docstring (made by `custom_jvp`)."""

    kind = "custom_jvp"

    def __init__(self, fn: Callable[..., Any]) -> None:
        super().__init__(fn)
        self.jvp: Callable[..., Any] | None = None
        self._transposes: dict[tuple[Any, ...], Any] = {}

    def defjvp(self, jvp: Callable[..., Any]) -> None:
        """Set the rule: `jvp(primals, tangents) -> (out, tangent_out)`, linear in `tangents`.

        >>> f.defjvp(f_jvp)  # doctest: +SKIP
        """
        self.jvp = jvp
        self._transposes.clear()

    def _register(self, op: Op) -> None:
        register_function_jvp(op, self._jvp_rule)
        register_function_vjp(op, self._vjp_rule)

    def _rule(self) -> Callable[..., Any]:
        if self.jvp is None:
            raise NotImplementedError(
                f"custom_jvp function {self._primal.__qualname__} has no rule yet: "
                "call its .defjvp(jvp) first"
            )
        return self.jvp

    def _jvp_rule(self, ctx: JvpContext) -> Node | None:
        self._rule()
        if all(t is None for t in ctx.tangents):
            return None
        tangent_op = _backward_op(self, "jvp", self._tangent)
        tangents = [
            t if t is not None else ctx.graph.call(get_op("zeros_like"), value)
            for value, t in zip(ctx.inputs, ctx.tangents, strict=True)
        ]
        return ctx.graph.call(tangent_op, *ctx.inputs, *tangents, **ctx.params)

    def _tangent(self, *values: Any, **params: Any) -> Any:
        half = len(values) // 2
        _, tangent = self._rule()(tuple(values[:half]), tuple(values[half:]), **params)
        return np.asarray(tangent)

    def _vjp_rule(self, ctx: VjpContext) -> Sequence[Node | None]:
        self._rule()
        backward = _backward_op(self, "jvp_transposed", self._transposed)
        return [
            ctx.graph.call(backward, *ctx.inputs, ctx.cotangent, position=i, **ctx.params)
            if ctx.wants(i)
            else None
            for i in range(len(ctx.inputs))
        ]

    def _transposed(self, *values: Any, position: int, **params: Any) -> Any:
        # The VJP of the linear map `tangents -> jvp(primals, tangents)[1]`, by numpile's own
        # reverse mode (one cached transform per rule and params).
        from .transforms import linear_pullback  # late import: transforms imports this module

        primals, cotangent = tuple(values[:-1]), values[-1]
        rule = self._rule()
        key = tuple(sorted(params.items()))
        linear = self._transposes.get(key)
        if linear is None:

            def linear(primals: Any, tangents: Any) -> Any:
                return rule(primals, tangents, **params)[1]

            self._transposes[key] = linear
        found = linear_pullback(linear, primals, cotangent)[position]
        primal = np.asarray(primals[position])
        return np.asarray(found, primal.dtype) if found is not None else np.zeros_like(primal)


def custom_vjp(fn: Callable[..., Any]) -> CustomVjp:
    """`fn` with a VJP rule the user gives with `.defvjp(fwd, bwd)` (see the module docstring).

    >>> @custom_vjp
    ... def f(x):
    ...     return np.sin(x)
    >>> f.defvjp(lambda x: (np.sin(x), np.cos(x)), lambda cos, g: (g * cos,))
    """
    return CustomVjp(fn)


def custom_jvp(fn: Callable[..., Any]) -> CustomJvp:
    """`fn` with a JVP rule the user gives with `.defjvp(jvp)` (see the module docstring).

    >>> @custom_jvp
    ... def f(x):
    ...     return np.log1p(np.exp(x))
    >>> f.defjvp(lambda p, t: (f(*p), t[0] / (1 + np.exp(-p[0]))))
    """
    return CustomJvp(fn)


def _backward_op(owner: _CustomRule, role: str, impl: Callable[..., Any]) -> Op:
    # The op of one derivative of a custom rule: itself an allow_in_graph function, so it has
    # a name the inductor's graph cache finds (`allowed_op_named`).
    function = getattr(owner, f"_{role}_function", None)
    if function is None:

        def function(*args: Any, **kwargs: Any) -> Any:
            return impl(*args, **kwargs)

        function.__module__ = owner._primal.__module__
        function.__qualname__ = f"{owner._primal.__qualname__}.{role}"
        setattr(owner, f"_{role}_function", function)
    return allowed_op(function)
