"""Detached floats: `float(v)` of a traced value on a differentiated path is an error.

`float(x.sum())` inside a compiled function is a `python_number` node: a Python float,
which carries no gradient (as torch's `.item()`). Where a differentiated output depends on
a differentiated input through such a float (`x * float(x.sum())`), the gradient would
silently miss that path, so `grad`/`vjp` raise `DetachedFloatError` naming the `float()`
call's line instead, as JAX raises a ConcretizationTypeError (so does `math.sqrt(v)`,
a `math_call`: a Python float of `v`). `int(v)` is piecewise
constant (its gradient is zero almost everywhere): a path through it is no error, nor is a
float that no differentiated output depends on (a printed loss, a branch condition).

    >>> detached_float(node, active)  # doctest: +SKIP
    v3 = python_number(v2, kind=<class 'float'>)
"""

from __future__ import annotations

from collections.abc import Collection

from numpile_capture import Graph, Node, ScalarMeta

__all__ = ["DetachedFloatError", "detached_float", "detached_float_error"]


class DetachedFloatError(TypeError):
    """A differentiated output depends on a differentiated input through `float()` of a
    traced value, which carries no gradient (the message names the line).

    >>> issubclass(DetachedFloatError, TypeError)
    True
    """


def detached_float(value: Node, active: Collection[Node]) -> Node | None:
    """The `float()` (`python_number` of kind float) that makes the Python scalar `value`
    depend on a differentiated input, or None (`value` is an array, or depends on one
    only through `int()`, a comparison or nothing). `active`: the nodes that depend on a
    differentiated input.

    >>> detached_float(v, active)  # doctest: +SKIP
    """
    pending = [value]
    seen: set[Node] = set()
    while pending:
        node = pending.pop()
        if node in seen or node not in active or not isinstance(node.meta, ScalarMeta):
            continue
        seen.add(node)
        if node.op is None:
            continue
        if node.op.name == "loop_output":
            found = _detached_in_body(node, active)
            if found is not None:
                return found
        if node.op.name == "python_number":
            if node.kwargs["kind"] is float and node.meta.type is float:
                return node
            continue  # int(): piecewise constant, no gradient lost
        if node.op.name == "math_call" and _of_arrays(node, active):
            # `math.sqrt(x[i])`: math's Python float of a 0-d array is a float() of it.
            if node.meta.type is float:
                return node
            continue  # floor()/ceil() are piecewise constant, isnan() & co. truth values
        if node.meta.type is not bool:  # a comparison's truth value carries none either
            pending.extend(node.input_nodes())
    return None


def _detached_in_body(output: Node, active: Collection[Node]) -> Node | None:
    # The `float()` inside the body (or first iteration) of the `for_loop` that `output`
    # (a `loop_output`) reads, which makes its carried value depend on a differentiated
    # input: `s = s + float(x[i])` (the sum's gradient would silently miss it).
    (loop,) = output.input_nodes()
    if loop.op is None or loop.op.name != "for_loop":
        return None
    params = dict(loop.params)
    k = output.kwargs["index"]
    for body in (params.get("first"), params["body"]):
        if not isinstance(body, Graph):
            continue
        outputs = body.output if isinstance(body.output, tuple) else (body.output,)
        if k >= len(outputs) or not isinstance(outputs[k], Node):
            continue
        found = detached_float(outputs[k], _active_in_body(loop, body, params["carried"], active))
        if found is not None:
            return found
    return None


def _active_in_body(loop: Node, body: Graph, carried: int, active: Collection[Node]) -> set[Node]:
    # The nodes of a for_loop's `body` that depend on a differentiated input: its carried
    # values (each iteration may have made them so) and the invariants that are `active`
    # outside (placeholder j > 0 is the loop's input 2 + j).
    inputs = loop.inputs
    seeds = {
        place
        for j, place in enumerate(body.placeholders)
        if j > 0 and (j <= carried or (isinstance(inputs[2 + j], Node) and inputs[2 + j] in active))
    }
    found = set(seeds)
    for node in body.nodes:
        if any(value in found for value in node.input_nodes()):
            found.add(node)
    return found


def _of_arrays(node: Node, active: Collection[Node]) -> bool:
    # Whether a differentiated array value reaches `node` as an input.
    return any(not isinstance(i.meta, ScalarMeta) and i in active for i in node.input_nodes())


def detached_float_error(graph: Graph, conversion: Node, user: Node) -> DetachedFloatError:
    """The error for a gradient that would pass through `conversion` (a `float()`) to
    reach `user`'s output.

    >>> str(detached_float_error(graph, conversion, user))  # doctest: +SKIP
    """
    line = graph.locations.get(conversion) or graph.locations.get(user)
    where = f" at {line.filename}:{line.lineno}" if line is not None else ""
    return DetachedFloatError(
        f"cannot differentiate through float() of a traced value{where} "
        f"(`{conversion.format()}`, used by `{user.format()}`): a Python float carries no "
        "gradient, so this path would be silently dropped; keep the value an array "
        "(x.sum() instead of float(x.sum())), or compute it outside the differentiated "
        "function and pass it in as an argument that is not differentiated"
    )
