"""Matrix-vector products inside a loop body, in its C loop (`W @ H[i - 1]`).

An RNN-like recurrence, `H[i] = np.tanh(W @ H[i - 1] + b)`, multiplies a whole matrix
argument by a row of the body each iteration, with no kernel launch and no Python per
iteration. Its result is a 1-d value of the body (a `CVector` of `loop_vectors`):

- of float32 or float64: computed whole where the product stands, into a buffer of the
  function, by NumPy's own choice of call (`np_loop_?matvec`, NumPy's `DOUBLE_matmul`):
  the `?dot` of its BLAS for one output element, its plain loop (a sum from zero in order)
  for an empty or 1-long inner axis, an operand BLAS cannot take (a vector of stride <= 0,
  a matrix with no unit-stride axis) or a sum of no element, else `?gemv` with the very
  arguments NumPy passes: eager's bits, on any machine, since it is the same library;
- of integers: element `k` is an accumulator loop over the matrix's row `k` (or column
  `k`, for `v @ W`), written where the element is used (integer sums are exact in any
  order); a store whose target may overlap the matrix (a view of the array written)
  computes its value into a temporary first, as NumPy does.

Inner sizes are checked at run time (NumPy's `ValueError` when they differ). 1-d
arguments of the body (`+ b`) are row-sized operands where an element-wise op also takes a
1-d value of the body (elsewhere whole-argument work stays with the kernels).

    >>> writer.body(body, env)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from numpile_capture import ArrayMeta, Node

from . import loop_reductions  # its module: it may be importing this one (loop_body's tables)
from .loop_body import (
    _DEFAULT_HANDLER,
    _NODE_HANDLERS,
    CArray,
    CValue,
    Env,
    LoopWriter,
    NotScalarLoop,
)
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

PRODUCT_HELPERS = r"""
/* Matrix-vector products of a loop body (codegen/c/loop_products.py): NumPy's
   DOUBLE_matmul / FLOAT_matmul of an (m, n) matrix and an n-vector (strides in elements;
   `v @ W` is W's transpose times v), into `out` (m elements, contiguous). The ?gemv of
   the BLAS NumPy calls: [0] sgemv, [1] dgemv (ILP64), read once at the loop's entry. */
typedef void (*np_loop_dgemv_fn)(int, int, int64_t, int64_t, double, const double *, int64_t,
                                 const double *, int64_t, double, double *, int64_t);
typedef void (*np_loop_sgemv_fn)(int, int, int64_t, int64_t, float, const float *, int64_t,
                                 const float *, int64_t, float, float *, int64_t);
static void *g_loop_gemv[2] = {NULL, NULL};
static int g_loop_gemv_state = 0;  /* 0: not asked yet; 1: found; -1: none */

static int np_loop_gemv_ready(void)
{
    if (g_loop_gemv_state != 0) { return g_loop_gemv_state > 0; }
    g_loop_gemv_state = -1;
    if (!np_loop_dot_ready()) { return 0; }
    PyObject *module = PyImport_ImportModule("numpile_runtime.cpu_blas");
    if (module == NULL) { PyErr_Clear(); return 0; }
    PyObject *found = PyObject_CallMethod(module, "cpu_blas_addresses", NULL);
    Py_DECREF(module);
    if (found == NULL) { PyErr_Clear(); return 0; }
    if (PyTuple_Check(found) && PyTuple_GET_SIZE(found) == 6) {
        g_loop_gemv[0] = PyLong_AsVoidPtr(PyTuple_GET_ITEM(found, 2));
        g_loop_gemv[1] = PyLong_AsVoidPtr(PyTuple_GET_ITEM(found, 3));
        if (PyErr_Occurred()) { PyErr_Clear(); }
        else if (g_loop_gemv[0] != NULL && g_loop_gemv[1] != NULL) { g_loop_gemv_state = 1; }
    }
    Py_DECREF(found);
    return g_loop_gemv_state > 0;
}

/* NumPy's is_blasable2d in elements: the second axis contiguous, the first at least d2
   apart. */
static inline int np_loop_blasable(int64_t s1, int64_t s2, int64_t d2)
{
    return s2 == 1 && s1 >= d2;
}

enum { NP_LOOP_ROW_MAJOR = 101, NP_LOOP_COL_MAJOR = 102, NP_LOOP_TRANS = 112 };

#define NP_LOOP_MATVEC(name, T, dot, gemv_fn, slot, one, zero)                             \
    static void name(int64_t m, int64_t n, const T *a, int64_t sm, int64_t sn, const T *x, \
                     int64_t incx, T *out)                                               \
    {                                                                                     \
        int c_order = np_loop_blasable(sm, sn, n);                                        \
        int blasable = c_order || np_loop_blasable(sn, sm, m);                            \
        if (m == 1 && n > 0) {                                                            \
            out[0] = dot(n, a, sn, x, incx);                                              \
            return;                                                                       \
        }                                                                                 \
        if (m > 1 && n > 1 && blasable && incx >= 1) {                                    \
            ((gemv_fn)g_loop_gemv[slot])(c_order ? NP_LOOP_COL_MAJOR : NP_LOOP_ROW_MAJOR,  \
                                         NP_LOOP_TRANS, n, m, one, a, c_order ? sm : sn,  \
                                         x, incx, zero, out, 1);                          \
            return;                                                                       \
        }                                                                                 \
        for (int64_t k = 0; k < m; k++) {                                                 \
            T sum = 0;                                                                    \
            for (int64_t j = 0; j < n; j++) { sum += a[k * sm + j * sn] * x[j * incx]; }  \
            out[k] = sum;                                                                 \
        }                                                                                 \
    }
NP_LOOP_MATVEC(np_loop_dmatvec, double, np_loop_ddot, np_loop_dgemv_fn, 1, 1.0, 0.0)
NP_LOOP_MATVEC(np_loop_smatvec, float, np_loop_sdot, np_loop_sgemv_fn, 0, 1.0f, 0.0f)
"""


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
    _check_inner_size(writer, matrix, vector, row_major)
    if meta.dtype.kind == "f":
        env[node] = _blas_product(writer, node, matrix, vector, row_major)
        return
    name = matrix.name
    inner, outer = ("1", "0") if row_major else ("0", "1")
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


def _check_inner_size(writer: LoopWriter, matrix: CArray, vector: CVector, row_major: bool) -> None:
    # NumPy's ValueError where the vector's length is not the matrix's inner size.
    inner = "1" if row_major else "0"
    buf = writer.buf
    buf.writeline(f"if ({matrix.name}_n{inner} != {vector.length}) {{")
    with buf.indent():
        operand, dim = (1, 0) if row_major else (0, 1)
        buf.writeline(
            f'PyErr_Format(PyExc_ValueError, "matmul: Input operand {operand} has a mismatch '
            f"in its core dimension {dim}, with gufunc signature (n?,k),(k,m?)->(n?,m?) "
            f'(size %lld is different from %lld)", (long long){vector.length}, '
            f"(long long){matrix.name}_n{inner});"
        )
        buf.writeline("goto fail;")
    buf.writeline("}")


def _blas_product(
    writer: LoopWriter, node: Node, matrix: CArray, vector: CVector, row_major: bool
) -> CVector:
    # The float product computed whole here, as NumPy's matmul computes it (PRODUCT_HELPERS),
    # into a buffer of the function: its elements are read from there, after any store.
    from numpile_runtime import find_cpu_blas  # the BLAS NumPy calls, found once

    meta = node.meta
    assert isinstance(meta, ArrayMeta)
    blas = find_cpu_blas()
    if blas is None or not all(blas.dot_addresses()):
        raise NotScalarLoop("a float matrix-vector product without NumPy's BLAS to call")
    if matrix.dtype != meta.dtype or vector.dtype != meta.dtype:
        raise NotScalarLoop("a float matrix-vector product that casts an operand")
    ready = "    if (!np_loop_gemv_ready()) { goto eager; }"  # before anything is written
    if ready not in writer.declarations:
        writer.declarations.append(ready)
    x, incx = loop_reductions._operand_memory(writer, vector, meta.dtype, copies=False)
    name = matrix.name
    # v @ W is W's transpose times v (NumPy's vector_matrix case swaps the same way).
    rows, columns = ("0", "1") if row_major else ("1", "0")
    ct = c_type(meta.dtype)
    out, capacity = writer.scratch()
    buf = writer.buf
    size = f"(int64_t)sizeof({ct}) * ({name}_n{rows} > 0 ? {name}_n{rows} : 1)"
    buf.writeline(f"if (!np_loop_reserve(&{out}, &{capacity}, {size})) {{ goto fail; }}")
    kind = "d" if meta.dtype == np.dtype(np.float64) else "s"
    buf.writeline(
        f"np_loop_{kind}matvec({name}_n{rows}, {name}_n{columns}, (const {ct} *){name}_d, "
        f"{name}_s{rows}, {name}_s{columns}, {x}, {incx}, ({ct} *){out});"
    )

    def element(k: str) -> CValue:
        return CValue(f"(({ct} *){out})[{k}]", meta.dtype)

    return CVector(f"{name}_n{rows}", meta.dtype, tuple(meta.shape), element, [],
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
