"""The values a kept loop carries from one iteration to the next, and their types.

Each carried local (see `loop_locals`) is a placeholder of the body's graph whose
metadata comes from its value before the loop (`carried_metas`); a trace of the body
gives the values it has after one iteration, whose metadata joins the placeholders'
(`widen`: NEP 50, a Python scalar joins the NumPy scalar it becomes, a host 0-d value the
device value it becomes) until the types are a fixpoint. `graph_value` and `variable_of` go
between the tracer's variables and the graph's values.

    >>> widen({"s": ScalarMeta(float)}, [1])
    {'s': ScalarMeta(type=<class 'float'>)}
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from numpile_guards.symbolic import SymInt

from .graph import Graph, Node, gives_scalar
from .loop_bounds import size_node
from .loop_exit import LoopFallback
from .meta import ArrayMeta, ScalarMeta
from .op import get_op
from .variables import ArrayVar, ConstantVar, ScalarInputVar, ScalarNodeVar, Variable

if TYPE_CHECKING:
    from .frame import Frame
    from .tracer import Tracer

_SCALAR_TYPES = (bool, int, float, complex)


def carried_metas(
    frame: Frame, names: Iterable[str]
) -> tuple[dict[str, ArrayMeta | ScalarMeta], set[str]]:
    """The metadata of each carried local `names` starts with, and those of them that are
    scalars (NumPy or Python: a new value each iteration, not an array written in
    place); `LoopFallback` for a value no loop carries (a list, an object)."""
    locals_ = frame.state.locals
    metas: dict[str, ArrayMeta | ScalarMeta] = {}
    for name in names:
        meta = carried_meta(locals_[name])
        if meta is None:
            raise LoopFallback(f"it carries {locals_[name].describe()} in {name!r}")
        metas[name] = meta
    scalars = {name for name in metas if scalar_like(locals_[name])}
    return metas, scalars


def bind_carried(
    frame: Frame, body: Graph, metas: dict[str, ArrayMeta | ScalarMeta], scalars: set[str]
) -> None:
    """Bind each carried local to a new placeholder of `body` (a carried NumPy scalar
    through `carried_scalar`, so it stays a scalar in the trace)."""
    for name, meta in metas.items():
        placeholder = body.placeholder(name, meta)
        if name in scalars and isinstance(meta, ArrayMeta):
            placeholder = body.call(get_op("carried_scalar"), placeholder)
        frame.state.locals[name] = variable_of(placeholder)


def carried_meta(var: Variable) -> ArrayMeta | ScalarMeta | None:
    """The metadata a loop carries `var` with, or None for a value it cannot carry."""
    if isinstance(var, ArrayVar | ScalarNodeVar):
        return var.node.meta
    if isinstance(var, ScalarInputVar) and type(var.current) in _SCALAR_TYPES:
        return ScalarMeta(type(var.current))
    if isinstance(var, ConstantVar) and type(var.value) in _SCALAR_TYPES:
        return ScalarMeta(type(var.value))
    if isinstance(var, ConstantVar) and _is_numpy_number(var.value):
        return ArrayMeta((), var.value.dtype)  # `crc = np.uint32(0xFFFFFFFF)` before the loop
    if isinstance(var, ConstantVar) and isinstance(var.value, SymInt):
        return ScalarMeta(int)  # `i = n` of a size: its `dim` value (see graph_value)
    return None


def _is_numpy_number(value: Any) -> bool:
    # A NumPy scalar of a bool, integer, float or complex dtype: a 0-d value the loop carries.
    return isinstance(value, np.generic) and value.dtype.kind in "biufc"


def graph_value(var: Variable, tracer: Tracer | None = None) -> Any:
    """The graph input or constant standing for a scalar or array variable (a symbolic
    size computed from the inputs' shapes where `tracer` is given)."""
    if tracer is not None and isinstance(var, ConstantVar) and isinstance(var.value, SymInt):
        return size_node(tracer, var.value.expr)
    if isinstance(var, ArrayVar | ScalarNodeVar):
        return var.node
    if isinstance(var, ScalarInputVar):
        return var.node()
    if isinstance(var, ConstantVar) and type(var.value) in _SCALAR_TYPES:
        return var.value
    if isinstance(var, ConstantVar) and _is_numpy_number(var.value):
        return var.value
    raise LoopFallback(f"the loop makes {var.describe()}")


def variable_of(node: Node) -> Variable:
    """An array variable for an array node, a run-time scalar for a Python scalar node."""
    return ArrayVar(node) if isinstance(node.meta, ArrayMeta) else ScalarNodeVar(node)


def meta_of_value(value: Any) -> ArrayMeta | ScalarMeta:
    """The metadata of a graph value (a node, or a Python constant)."""
    if isinstance(value, Node):
        return value.meta
    return ScalarMeta(type(value))


def scalar_like(var: Variable) -> bool:
    # A NumPy or Python scalar (not a 0-d array): `s += v` on it makes a new value.
    if isinstance(var, ArrayVar):
        return var.meta.shape == () and gives_scalar(var.node)
    return True


def widen(
    metas: dict[str, ArrayMeta | ScalarMeta], results: list[Any]
) -> dict[str, ArrayMeta | ScalarMeta]:
    """`metas` joined with the metadata of the values one iteration gives (`results`)."""
    widened: dict[str, ArrayMeta | ScalarMeta] = {}
    for (name, before), value in zip(metas.items(), results, strict=True):
        after = meta_of_value(value)
        widened[name] = join_metas(name, _moved_to(before, after), after)
    return widened


def _moved_to(before: ArrayMeta | ScalarMeta, after: ArrayMeta | ScalarMeta) -> Any:
    # A host 0-d value that one iteration turns into a device one (`np.uint32 ^ data[i]` on
    # CuPy data gives a CuPy 0-d array, as eager CuPy does) is carried on the device: the
    # first iteration is traced on the host type (`peeled_first`), the rest on the device's.
    # One way only, as dtypes widen: a device value never widens back to the host.
    if not isinstance(before, ArrayMeta) or not isinstance(after, ArrayMeta):
        return before
    if before.shape != () or after.shape != () or before.device != "cpu":
        return before
    return attrs.evolve(before, device=after.device)


def join_metas(name: str, before: ArrayMeta | ScalarMeta, after: ArrayMeta | ScalarMeta) -> Any:
    """The metadata covering both `before` and `after` (a Python scalar joins the NumPy
    scalar it becomes); `LoopFallback` when none does (an array changing shape)."""
    if before == after:
        return before
    if isinstance(before, ScalarMeta) and isinstance(after, ScalarMeta):
        order = (bool, int, float, complex)
        if before.type in order and after.type in order:
            return max(before, after, key=lambda meta: order.index(meta.type))
        raise LoopFallback(f"{name!r} changes from {before} to {after} in the loop")
    if isinstance(after, ScalarMeta):
        raise LoopFallback(f"{name!r} changes from {before} to a Python {after} in the loop")
    if isinstance(before, ScalarMeta):
        if after.shape != ():
            raise LoopFallback(f"{name!r} changes from a Python {before} to {after}")
        return attrs.evolve(after, strides=None)
    if tuple(before.shape) != tuple(after.shape) or before.device != after.device:
        raise LoopFallback(f"the carried array {name!r} changes shape: {before} to {after}")
    strides = before.strides if before.strides == after.strides else None
    return attrs.evolve(after, strides=strides)
