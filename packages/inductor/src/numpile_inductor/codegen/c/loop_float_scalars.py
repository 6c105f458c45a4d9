"""Python float arithmetic of a loop body as float64 0-d NumPy ops, for loops of kernels.

A body that steps a Python float beside its arrays (rk4's `t += h`, `np.sin(t + 0.5 * h)`)
holds `py_binary` nodes: Python operators on Python scalars, which the lowering leaves
extern calls returning Python objects. A C loop of kernels (`loop_kernels`) runs no
Python per iteration, so it takes the body with those nodes rewritten as NumPy's
`add`, `subtract`, `multiply` and `divide` on 0-d float64 values: the kernels then read
the results as any 0-d value, and the carried float stays a C double between iterations.

Only what gives eager's values exactly is rewritten: `+ - *` on Python floats (and ints
among them, converted as Python converts them) are IEEE double operations in both; `/`
only by a non-zero constant (Python raises ZeroDivisionError where NumPy gives inf). A
Python float meets NumPy values as a weak scalar (NEP 50) where a float64 0-d value is a
strong one: every node is rebuilt through its meta rule, and a body where a rewritten
value would change another node's dtype or shape (`x32 * (t + h)` would become float64)
is refused (`ValueError`; the loop then stays on the host loop).

    >>> retype_python_floats(body)  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from numpile_capture import ArrayMeta, Graph, Node, ScalarMeta, get_op, tree_map

__all__ = ["retype_python_floats"]

# NOTE: Python's binary operators on floats -> the NumPy op computing the same IEEE double.
_NUMPY_FORMS = {"add": "add", "sub": "subtract", "mul": "multiply", "truediv": "divide"}


def retype_python_floats(body: Graph) -> Graph:
    """`body` with its exact Python float arithmetic as float64 0-d NumPy ops (a new
    graph; `body` itself when it has none); raises `ValueError` where the rewrite would
    change a type eager computes."""
    if not any(_float_arithmetic(node) for node in body.nodes):
        return body
    graph = Graph()
    copies: dict[Node, Node] = {}
    for node in body.nodes:
        if node.op is None:
            copies[node] = graph.placeholder(node.name, node.meta)
            continue
        inputs = tuple(copies[v] if isinstance(v, Node) else v for v in node.inputs)
        if _float_arithmetic(node):
            operator = dict(node.params)["operator"]
            copies[node] = graph.call(get_op(_NUMPY_FORMS[operator]), *inputs)
            continue
        # The op's meta rule on the new operands must give what eager gives; the node
        # keeps its own meta (with what capture recorded on it: a view's `starts`).
        params = dict(node.params)
        meta = node.op.meta(*(v.meta if isinstance(v, Node) else v for v in inputs), **params)
        if _type_of(meta) != _type_of(node.meta):
            raise ValueError(
                f"a Python float whose float64 form changes {node.op.name}'s type "
                f"({node.meta} -> {meta})"
            )
        copies[node] = graph.add_node(node.op, inputs, params, node.meta)
    graph.output = tree_map(lambda v: copies[v] if isinstance(v, Node) else v, body.output)
    return graph


def _type_of(meta: Any) -> Any:
    # What eager's type of a value is: a Python scalar type, or a dtype and a shape.
    if isinstance(meta, ArrayMeta):
        return (meta.dtype, tuple(meta.shape))
    return meta


def _float_arithmetic(node: Node) -> bool:
    # A `py_binary` giving a Python float that NumPy's float64 op computes bit for bit.
    if node.op is None or node.op.name != "py_binary":
        return False
    if not (isinstance(node.meta, ScalarMeta) and node.meta.type is float):
        return False
    operator = dict(node.params)["operator"]
    if operator not in _NUMPY_FORMS:
        return False
    if operator == "truediv":
        divisor = node.inputs[1]
        if isinstance(divisor, Node | bool) or divisor == 0:
            return False
    return all(_number(value) for value in node.inputs)


def _number(value: Any) -> bool:
    # A Python float (an input or a rewritten result), a Python int input (the loop
    # index: a C int64 converted as Python converts it), or such a constant; no bools.
    if isinstance(value, Node):
        meta = value.meta
        if not isinstance(meta, ScalarMeta):
            return False
        if meta.type is int:
            return value.op is None
        return meta.type is float and (value.op is None or _float_arithmetic(value))
    return isinstance(value, int | float) and not isinstance(value, bool)
