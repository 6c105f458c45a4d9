"""Matrix-vector products inside a loop body as inline C loops (`W @ H[i - 1]`).

An RNN-like recurrence, `H[i] = np.tanh(W @ H[i - 1] + b)`, multiplies a whole matrix
argument by a row of the body each iteration. Its result is a 1-d value of the body (a
`CVector` of `loop_vectors`) whose element `k` is an accumulator loop over the matrix's
row `k` (or column `k`, for `v @ W`), written where the element is used: the store
`H[i] = ...` is then one loop over `k` with the product's dot inside, no kernel launch,
no allocation and no Python per iteration.

The product reads the whole matrix: a store whose target may overlap it (a matrix that is
a view of the array written) computes its value into a temporary first, as NumPy does.
Its inner sizes are checked at run time (NumPy's `ValueError` when they differ). 1-d
arguments of the body (`+ b`) are row-sized operands where an element-wise op also takes a
1-d value of the body (elsewhere whole-argument work stays with the kernels).

    >>> writer.body(body, env)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from numpile_capture import ArrayMeta, Node

from . import loop_reductions  # its module: it may be importing this one (loop_body's tables)
from .loop_body import _DEFAULT_HANDLER, _NODE_HANDLERS, CArray, Env, LoopWriter, NotScalarLoop
from .loop_vectors import (
    CVector,
    CView,
    _accumulate,
    _make_view,
    _vector,
    _view_vector,
)
from .ops import c_type

Handler = Callable[[LoopWriter, Node, Env], None]


def as_vector(writer: LoopWriter, env: Env, value: Any) -> CVector | None:
    """The 1-d value `value` stands for: a value of the body, or a whole 1-d argument
    (viewed here, at its use), else None."""
    found = _vector(writer, env, value)
    if found is not None:
        return found
    array = env.get(value) if isinstance(value, Node) else None
    if isinstance(array, CArray) and array.ndim == 1 and isinstance(value, Node):
        meta = value.meta
        assert isinstance(meta, ArrayMeta)
        view = _make_view(writer, env, array, (), (slice(None),))
        return _view_vector(view, tuple(meta.shape))
    return None


def _matrix_region(writer: LoopWriter, matrix: CArray) -> CView:
    # The memory a 2-d argument spans, as one run of elements (for overlap tests only).
    name = matrix.name
    offset, length = writer.fresh("moff"), writer.fresh("mlen")
    low = " + ".join(f"({name}_s{d} < 0 ? ({name}_n{d} - 1) * {name}_s{d} : 0)" for d in (0, 1))
    span = " + ".join(
        f"({name}_s{d} < 0 ? -{name}_s{d} : {name}_s{d}) * ({name}_n{d} - 1)" for d in (0, 1)
    )
    writer.buf.writeline(f"const int64_t {offset} = {low};")
    writer.buf.writeline(
        f"const int64_t {length} = ({name}_n0 > 0 && {name}_n1 > 0) ? {span} + 1 : 0;"
    )
    return CView(matrix, offset, "1", length, (name, "whole"))


def _matmul(writer: LoopWriter, node: Node, env: Env) -> None:
    left, right = (env.get(v) if isinstance(v, Node) else None for v in node.inputs[:2])
    meta = node.meta
    plain = len(node.inputs) == 2 and all(value is None for _, value in node.params)
    if not plain or not isinstance(meta, ArrayMeta) or meta.ndim != 1:
        loop_reductions.dot_product(writer, node, env)
        return
    if isinstance(left, CArray) and left.ndim == 2:
        matrix, vector, row_major = left, as_vector(writer, env, node.inputs[1]), True
    elif isinstance(right, CArray) and right.ndim == 2:
        matrix, vector, row_major = right, as_vector(writer, env, node.inputs[0]), False
    else:
        raise NotScalarLoop("a matmul that is no dot product or matrix-vector product")
    if vector is None:
        raise NotScalarLoop("a matrix-vector product of no 1-d value")
    ct = c_type(meta.dtype)
    if ct is None or meta.dtype.kind not in "iuf":
        raise NotScalarLoop(f"a matrix-vector product giving {meta.dtype}")
    name = matrix.name
    inner, outer = ("1", "0") if row_major else ("0", "1")
    buf = writer.buf
    buf.writeline(f"if ({name}_n{inner} != {vector.length}) {{")
    with buf.indent():
        operand, dim = (1, 0) if row_major else (0, 1)
        buf.writeline(
            f'PyErr_Format(PyExc_ValueError, "matmul: Input operand {operand} has a mismatch '
            f"in its core dimension {dim}, with gufunc signature (n?,k),(k,m?)->(n?,m?) "
            f'(size %lld is different from %lld)", (long long){vector.length}, '
            f"(long long){name}_n{inner});"
        )
        buf.writeline("goto fail;")
    buf.writeline("}")
    region = _matrix_region(writer, matrix)
    length = f"{name}_n{outer}"
    vec = vector

    def element(k: str) -> Any:
        def term(j: str) -> str:
            at = f"{k} * {name}_s{outer} + {j} * {name}_s{inner}"
            return f"({ct}){name}_d[{at}] * ({ct}){vec.element(j).text}"

        return _accumulate(writer, node, vec.length, term)

    reads = [*vector.reads, region]
    env[node] = CVector(length, meta.dtype, tuple(meta.shape), element, reads,
                        epoch=writer.stores)  # fmt: skip


def _with_argument_rows(handler: Handler) -> Handler:
    # An element-wise op of whole 1-d arguments (`+ b`, `0.5 * b`), alone or with 1-d
    # values of the body: each argument as a view, so all are taken element by element.
    def run(writer: LoopWriter, node: Node, env: Env) -> None:
        rows = [
            value
            for value in node.input_nodes()
            if isinstance(env.get(value), CArray) and env[value].ndim == 1
        ]
        meta = node.meta
        if not rows or not isinstance(meta, ArrayMeta) or meta.ndim != 1:
            handler(writer, node, env)
            return
        local = dict(env)
        for value in rows:
            local[value] = as_vector(writer, env, value)
        handler(writer, node, local)
        env[node] = local[node]

    return run


_NODE_HANDLERS["matmul"] = _matmul
_DEFAULT_HANDLER[0] = _with_argument_rows(_DEFAULT_HANDLER[0])
