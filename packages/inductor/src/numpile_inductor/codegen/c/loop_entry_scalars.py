"""Whether a loop's first iteration computes on a Python entry scalar as its body would.

`t = 1.1` before `for i in range(n): y[i] = t * z[i]; t = x[i]` carries a Python float
into the loop and an `np.float64` out of each iteration. The body graph is typed for the
carried float64; the first iteration's graph (`first`) for the Python float, weak under
NEP 50. A C loop may run the body from the start, on the entry converted to the carried
dtype, only where both typings compute the same: here they do not, a float32 `z[i]`
gives a float32 product on the Python float and a float64 one on the float64.

`computes_either_way` walks `first` from the entry's placeholder and accepts each node
reading it (or a value computed from it) only where NumPy's own rules give the same:

- a NumPy pointwise op whose result meta (its op's meta rule) and whose operands' common
  dtype (`np.result_type`, NEP 50, which says where a comparison computes) are the same
  with the entry's Python type as with the carried dtype; where no operand is a NumPy
  value and a Python operator may stand for the op (`t * 2.0`, not `np.cos(t)`), its
  result is a Python scalar in eager where the operator was
  Python's and a NumPy one where it was NumPy's (the graph does not say which): it is
  followed as the entry is, but may not leave the graph or reach Python's operators;
- a store of it into an array of exactly the carried dtype (a Python int that a narrower
  integer array cannot hold raises where an int64 wraps; a float NaN into ints raises);
- Python's `+ - *` giving a Python float, where the carried dtype is float64: the same
  IEEE double operation (`/` raises ZeroDivisionError where NumPy gives inf; Python ints
  do not wrap), its result then followed as the entry is.

- a `cond` whose branches compute on it so (not one it decides): its results computed
  from it are followed as the entry is.

- an inner loop taking it as a carried local it retypes (`typed_if_ran`): whether it ran
  decides the local's type from there on (`loop_flag_typings`, the loop's ran flags).

- an integer index into an array (`seen[cur]`, `nxt[cur] = v`), and `int()` / `float()` of
  it (`python_number`): a Python int and a NumPy integer of one value pick the same
  element and give the same Python number.

Anything else (another inner loop, Python int arithmetic, `/`) makes the first
iteration run apart, on its own types.

    >>> computes_either_way(first, first.placeholders[1], np.dtype("float64"))  # doctest: +SKIP
    False
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import numpy as np

from numpile_capture import ArrayMeta, Graph, Node, OpKind, ScalarMeta

__all__ = ["computes_either_way"]

# NOTE: Python's operators whose float result NumPy's float64 op computes bit for bit.
_EXACT_FLOAT_OPERATORS = frozenset({"add", "sub", "mul"})
# NOTE: the NumPy ops a Python operator on Python scalars alone may stand for (`t * 2.0`,
# `abs(t)`, `t ** 2` as square): Python's gives a Python scalar, NumPy's a NumPy one.
_OPERATOR_FORMS = frozenset(
    {
        *("add", "subtract", "multiply", "divide", "floor_divide", "remainder", "power"),
        *("bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"),
        *("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"),
        *("negative", "positive", "invert", "absolute", "square", "reciprocal", "sqrt"),
    }
)
# NOTE: the ops that would pass a value along as it is (not a NumPy op computing on it).
_PASSING = frozenset({"carried_scalar", "py_binary", "cond", "for_loop", "while_loop"})
# NOTE: the ops reading one element of an array at run-time indices (their inputs after
# the array): a Python int and an np.int64 of one value pick the same element.
_INDEXING = frozenset({"element_at", "getitem_at"})
# NOTE: each loop op -> the position of its first carried value among its inputs.
_LOOPS = {"for_loop": 3, "while_loop": 1}
# NOTE: a Python scalar of each type as NumPy's promotion weighs it (weak under NEP 50, but
# a bool, which is NumPy's own bool): a stand-in value for `np.result_type`.
_PYTHON_STAND_INS: dict[type, Any] = {bool: False, int: 0, float: 0.0, complex: 0j}
# NOTE: the Python scalar type each carried dtype holds exactly (the entry's type).
_EXACT_PYTHON: dict[np.dtype[Any], type] = {
    np.dtype("bool"): bool,
    np.dtype("int64"): int,
    np.dtype("float64"): float,
    np.dtype("complex128"): complex,
}


def computes_either_way(
    graph: Graph, entry: Node, dtype: np.dtype[Any], python: type | None = None
) -> bool:
    """Whether `graph` computes the same on its value `entry` (a Python scalar of type
    `python`; None: the type `entry`'s meta states, else the one `dtype` holds exactly) as
    on that value converted to a 0-d NumPy value of `dtype`, the type a loop body carries
    it as: each node reading it gives the same values either way.

    >>> computes_either_way(first, first.placeholders[1], np.dtype("float64"))  # doctest: +SKIP
    True
    """
    if python is None:
        meta = entry.meta
        python = meta.type if isinstance(meta, ScalarMeta) else _EXACT_PYTHON.get(dtype)
    if python not in _PYTHON_STAND_INS:
        return False
    return _weak_outputs(graph, {entry: ArrayMeta((), dtype)}, python) is not None


def _weak_outputs(
    graph: Graph, strong: dict[Node, ArrayMeta], python: type
) -> dict[int, ArrayMeta] | None:
    # The outputs of `graph` computed from its values `strong` as Python scalars (each
    # with its meta as a NumPy value), where every node reading one computes the same
    # either way; None where one does not.
    strong = dict(strong)
    conds: dict[Node, dict[int, ArrayMeta]] = {}
    # Values a NumPy op computed from Python scalars alone: a Python scalar or a NumPy one
    # in eager (Python's `t * 2.0`, or `np.multiply`: the graph does not say which).
    either: set[Node] = set()
    for node in graph.nodes:
        if node.op is None:
            continue
        if node.op.name == "loop_output" and node.inputs[0] in conds:
            kept = conds[node.inputs[0]].get(dict(node.params)["index"])
            if kept is not None:
                strong[node] = kept
            continue
        if not any(_is_in(value, strong) for value in node.inputs):
            continue
        if any(_is_in(value, either) for value in node.inputs) and node.op.name in _PASSING:
            return None  # it would pass along a Python or a NumPy scalar
        if node.op.name == "carried_scalar":  # the same value as a 0-d one
            strong[node] = strong[node.inputs[0]]
        elif node.op.name == "py_binary":
            if not _exact_float_arithmetic(node, strong):
                return None
            strong[node] = ArrayMeta((), np.dtype("float64"))
        elif node.op.name == "setitem_at":
            if not _stores_exactly(node, strong):
                return None
        elif node.op.name in _INDEXING:
            if not _indexes_only(node, strong):
                return None
        elif node.op.name == "python_number":
            pass  # `int(v)` / `float(v)`: the same Python number of the same value
        elif node.op.name in _LOOPS:
            if _retyped_by(node, strong):
                continue
            held = _inner_for_outputs(node, strong, python)
            if held is None:
                return None
            conds[node] = held
        elif node.op.name == "cond":
            held = _cond_outputs(node, strong, python)
            if held is None:
                return None
            conds[node] = held
        elif node.op.kind is not OpKind.POINTWISE or not _same_either_way(node, strong, python):
            return None
        elif node.op.name in _OPERATOR_FORMS and not any(
            _is_numpy(value, strong) for value in node.inputs
        ):
            assert isinstance(node.meta, ArrayMeta)  # (`_same_either_way`)
            if _EXACT_PYTHON.get(node.meta.dtype) is not python:
                return None
            strong[node] = node.meta  # weighed as the entry is, by the ops that read it
            either.add(node)
    outputs = graph.output if isinstance(graph.output, tuple) else (graph.output,)
    if any(_is_in(value, either) for value in outputs):
        return None
    return {k: strong[value] for k, value in enumerate(outputs) if _is_in(value, strong)}


def _is_numpy(value: Any, strong: dict[Node, ArrayMeta]) -> bool:
    # Whether operand `value` is a NumPy value in eager (not a Python scalar, not one of
    # `strong`, which may still be the entry's Python scalar).
    if isinstance(value, Node):
        return not _is_in(value, strong) and isinstance(value.meta, ArrayMeta)
    return isinstance(value, np.generic)


def _retyped_by(loop: Node, strong: dict[Node, ArrayMeta]) -> bool:
    # Whether inner loop `loop` takes the Python scalars (`strong`) only as carried locals
    # it retypes (`typed_if_ran`): the run-time flag of whether it ran decides their type
    # from there on, and the loop's own first iteration on them is loop_flag_typings' to
    # check, as in any iteration.
    assert loop.op is not None
    params = dict(loop.params)
    start = _LOOPS[loop.op.name]
    placeholders = params["body"].placeholders
    offset = 1 if loop.op.name == "for_loop" else 0
    for position, value in enumerate(loop.inputs):
        if not _is_in(value, strong):
            continue
        k = position - start
        if not 0 <= k < params["carried"]:
            return False
        if placeholders[offset + k].name not in params.get("typed_if_ran", ()):
            return False
    return True


def _inner_for_outputs(
    loop: Node, strong: dict[Node, ArrayMeta], python: type
) -> dict[int, ArrayMeta] | None:
    # The final carried values of inner `for_loop` `loop` computed from the Python scalars
    # (`strong`) it takes as carried locals, where its body computes on them the same
    # either way (`s += a[r, c]` on a Python float `s`); None for a `while_loop`, a scalar
    # it takes otherwise (a bound, an invariant) or a body that computes otherwise.
    assert loop.op is not None
    if loop.op.name != "for_loop":
        return None
    params = dict(loop.params)
    start = _LOOPS["for_loop"]
    body: Graph = params["body"]
    seeds: dict[Node, ArrayMeta] = {}
    for position, value in enumerate(loop.inputs):
        if not _is_in(value, strong):
            continue
        k = position - start
        if not 0 <= k < params["carried"]:
            return None
        seeds[body.placeholders[1 + k]] = strong[value]
    return _weak_outputs(body, seeds, python)


def _cond_outputs(
    node: Node, strong: dict[Node, ArrayMeta], python: type
) -> dict[int, ArrayMeta] | None:
    # The results of `cond` node `node` that a branch computes from the Python scalars
    # (`strong`), each of one meta as a NumPy value whichever branch runs; None where a
    # branch computes otherwise on them, or where they decide which branch runs.
    if _is_in(node.inputs[0], strong):
        return None
    params = dict(node.params)
    held: dict[int, ArrayMeta] = {}
    for branch in (params["then_branch"], params["else_branch"]):
        pairs = zip(branch.placeholders, node.inputs[1:], strict=True)
        seeds = {
            placeholder: strong[value] for placeholder, value in pairs if _is_in(value, strong)
        }
        kept = _weak_outputs(branch, seeds, python)
        if kept is None:
            return None
        for k, meta in kept.items():
            if held.setdefault(k, meta) != meta:
                return None
    return held


def _is_in(value: Any, strong: Collection[Node]) -> bool:
    return isinstance(value, Node) and value in strong


def _exact_float_arithmetic(node: Node, strong: dict[Node, ArrayMeta]) -> bool:
    # Python `+ - *` giving a Python float, on values carried as float64 (or int64: an int
    # converts to the nearest double either way) and plain Python numbers.
    if dict(node.params).get("operator") not in _EXACT_FLOAT_OPERATORS:
        return False
    if node.meta != ScalarMeta(float):
        return False
    for value in node.inputs:
        if _is_in(value, strong):
            if strong[value].dtype not in (np.dtype("float64"), np.dtype("int64")):
                return False
        elif isinstance(value, Node) and not isinstance(value.meta, ScalarMeta):
            return False
    return True


def _stores_exactly(node: Node, strong: dict[Node, ArrayMeta]) -> bool:
    # A store into an array at indices (`_is_index`) of the value, if it is one, into an
    # array of exactly its carried dtype.
    target, value, *indices = node.inputs
    if not all(_is_index(index, strong) for index in indices) or _is_in(target, strong):
        return False
    if not _is_in(value, strong):
        return True
    meta = getattr(target, "meta", None)
    return isinstance(meta, ArrayMeta) and meta.dtype == strong[value].dtype


def _indexes_only(node: Node, strong: dict[Node, ArrayMeta]) -> bool:
    # A read of one element at indices (`_is_index`), of an array that is none of `strong`.
    array, *indices = node.inputs
    return not _is_in(array, strong) and all(_is_index(index, strong) for index in indices)


def _is_index(value: Any, strong: dict[Node, ArrayMeta]) -> bool:
    # An index operand that picks the same element either way: not one of `strong`, or an
    # integer one (a Python int and a NumPy integer of one value index alike).
    return not _is_in(value, strong) or strong[value].dtype.kind in "iu"


def _same_either_way(node: Node, strong: dict[Node, ArrayMeta], python: type) -> bool:
    # A NumPy op giving the same result meta, computed in the same dtype, on the Python
    # scalars as on their carried 0-d values.
    assert node.op is not None
    if not isinstance(node.meta, ArrayMeta):
        return False
    metas = [strong[value] if _is_in(value, strong) else _meta(value) for value in node.inputs]
    try:
        meta = node.op.meta(*metas, **dict(node.params))
        weak = np.result_type(*(_weak(value, strong, python) for value in node.inputs))
        carried = np.result_type(*(_promoted(meta) for meta in metas))
    except (TypeError, ValueError):
        return False
    return meta == node.meta and weak == carried


def _weak(value: Any, strong: dict[Node, ArrayMeta], python: type) -> Any:
    # An operand as `np.result_type` weighs it while the entry is still a Python scalar
    # of type `python`: a value computed from the entry that capture typed as a NumPy
    # value (a `cond` result that may be the entry itself, its 0-d `carried_scalar` form)
    # is that Python scalar still; a Python `+ - *` result is the float its meta says.
    if _is_in(value, strong) and not isinstance(_meta(value), ScalarMeta):
        return _PYTHON_STAND_INS[python]
    return _promoted(value)


def _meta(value: Any) -> Any:
    return value.meta if isinstance(value, Node) else value


def _promoted(value: Any) -> Any:
    # An operand as `np.result_type` weighs it: a dtype, or a Python scalar (weak).
    meta = _meta(value)
    if isinstance(meta, ArrayMeta):
        return meta.dtype
    if isinstance(meta, ScalarMeta):
        if meta.type not in _PYTHON_STAND_INS:
            raise TypeError(f"a Python {meta.type.__name__} operand")
        return _PYTHON_STAND_INS[meta.type]
    if isinstance(meta, np.generic):
        return meta.dtype
    if isinstance(meta, bool | int | float | complex):
        return meta
    raise TypeError(f"an operand {meta!r} NumPy's promotion does not weigh")
