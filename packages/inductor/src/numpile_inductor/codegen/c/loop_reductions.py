"""0-d reductions of the 1-d values of a loop body, inline in its C loop nest.

An outer loop body often reduces a slice bounded by its index to a scalar before its
element loops: `L[i, :i] @ y[:i]`, `np.abs(L[i, : i + 1]).max()`, `np.any(A[k + 1 : hi, k]
!= 0.0)`. Each is a C loop over the value's elements (a `CVector` of `loop_vectors`, its
elements computed where they are read), with NumPy's result bit for bit:

- `max` / `min` compare element by element (no FP flags: NaNs are tested first); where
  NumPy's answer hangs on the order its SIMD loop compares in (a NaN, whose payload it
  keeps, or zeros of both signs at the extremum) and on an empty value (NumPy's
  `ValueError`) the loop *bails* and runs with NumPy;
- `any` / `all` of any real dtype are ORs / ANDs of `x != 0` over every element (no early
  exit: the elements' own FP flags are raised as eager raises them);
- `matmul` / `dot` of two float32 or float64 vectors call the very `?dot` of the BLAS NumPy
  calls (`numpile_runtime.cpu_blas_dot_addresses`), as NumPy's `DOUBLE_dot` does: BLAS where
  both strides are positive (`0.0 + ddot(...)`), a plain sum from zero otherwise for `@`;
  `np.dot` first copies a vector of a negative stride contiguous, and so does this code. A
  computed or cast operand is written into a scratch buffer first (NumPy's temporary);
  integer products are accumulator loops (`loop_vectors._accumulate`);
- `sum` of a float vector is NumPy's pairwise sum (`np_loop_pairwise_d`: 0.0 plus it, on
  the view in place or the computed value's temporary); of an integer one, a plain sum.

    >>> "np_loop_dot" in REDUCTION_HELPERS
    True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numpile_capture import ArrayMeta, Node

from .loop_body import _NODE_HANDLERS, CValue, Env, LoopWriter, NotScalarLoop, _pointwise
from .loop_vectors import CVector, _accumulate, _vector
from .ops import c_expr, c_type

REDUCTION_HELPERS = r"""
/* Reductions of a loop body's 1-d values (codegen/c/loop_reductions.py). The ?dot of the
   BLAS NumPy calls: [0] sdot, [1] ddot (ILP64), read once at the loop's entry. */
typedef float (*np_loop_sdot_fn)(int64_t, const float *, int64_t, const float *, int64_t);
typedef double (*np_loop_ddot_fn)(int64_t, const double *, int64_t, const double *, int64_t);
static void *g_loop_dot[2] = {NULL, NULL};
static int g_loop_dot_state = 0;  /* 0: not asked yet; 1: found; -1: none */

static int np_loop_dot_ready(void)
{
    if (g_loop_dot_state != 0) { return g_loop_dot_state > 0; }
    g_loop_dot_state = -1;
    PyObject *module = PyImport_ImportModule("numpile_runtime.cpu_blas");
    if (module == NULL) { PyErr_Clear(); return 0; }
    PyObject *found = PyObject_CallMethod(module, "cpu_blas_dot_addresses", NULL);
    Py_DECREF(module);
    if (found == NULL) { PyErr_Clear(); return 0; }
    if (PyTuple_Check(found) && PyTuple_GET_SIZE(found) == 2) {
        g_loop_dot[0] = PyLong_AsVoidPtr(PyTuple_GET_ITEM(found, 0));
        g_loop_dot[1] = PyLong_AsVoidPtr(PyTuple_GET_ITEM(found, 1));
        if (PyErr_Occurred()) { PyErr_Clear(); }
        else if (g_loop_dot[0] != NULL && g_loop_dot[1] != NULL) { g_loop_dot_state = 1; }
    }
    Py_DECREF(found);
    return g_loop_dot_state > 0;
}

/* *buffer holding at least `bytes` (grown, never shrunk; freed by the loop's cleanup). */
static inline int np_loop_reserve(char **buffer, int64_t *capacity, int64_t bytes)
{
    if (bytes <= *capacity) { return 1; }
    char *grown = (char *)realloc(*buffer, (size_t)bytes);
    if (grown == NULL) { PyErr_NoMemory(); return 0; }
    *buffer = grown;
    *capacity = bytes;
    return 1;
}

/* NumPy's DOUBLE_dot / FLOAT_dot of n elements (strides in elements): BLAS's ?dot added to
   0.0 in double where both strides are positive, else a sum from zero in order. */
static inline double np_loop_ddot(int64_t n, const double *x, int64_t incx, const double *y,
                                  int64_t incy)
{
    if (incx > 0 && incy > 0) {
        double sum = 0.;
        sum += ((np_loop_ddot_fn)g_loop_dot[1])(n, x, incx, y, incy);
        return sum;
    }
    double sum = 0.;
    for (int64_t k = 0; k < n; k++) { sum += x[k * incx] * y[k * incy]; }
    return sum;
}
static inline float np_loop_sdot(int64_t n, const float *x, int64_t incx, const float *y,
                                 int64_t incy)
{
    if (incx > 0 && incy > 0) {
        double sum = 0.;
        sum += ((np_loop_sdot_fn)g_loop_dot[0])(n, x, incx, y, incy);
        return (float)sum;
    }
    float sum = 0.f;
    for (int64_t k = 0; k < n; k++) { sum += x[k * incx] * y[k * incy]; }
    return sum;
}

/* NumPy's pairwise sum of n elements `s` apart (its DOUBLE_pairwise_sum / FLOAT_...): a
   plain sum from -0.0 below 8, eight partial sums up to 128, halves above. np.sum of a 1-d
   float array is 0.0 plus it. */
#define NP_LOOP_PAIRWISE(name, T)                                                        \
    static T name(const T *a, int64_t n, int64_t s)                                       \
    {                                                                                     \
        if (n < 8) {                                                                      \
            T res = -0.0;                                                                 \
            for (int64_t i = 0; i < n; i++) { res += a[i * s]; }                          \
            return res;                                                                   \
        }                                                                                 \
        if (n <= 128) {                                                                   \
            T r[8];                                                                       \
            for (int j = 0; j < 8; j++) { r[j] = a[j * s]; }                              \
            int64_t i = 8;                                                                \
            for (; i < n - (n % 8); i += 8) {                                             \
                for (int j = 0; j < 8; j++) { r[j] += a[(i + j) * s]; }                   \
            }                                                                             \
            T res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));    \
            for (; i < n; i++) { res += a[i * s]; }                                       \
            return res;                                                                   \
        }                                                                                 \
        int64_t n2 = n / 2;                                                               \
        n2 -= n2 % 8;                                                                     \
        return name(a, n2, s) + name(a + n2 * s, n - n2, s);                              \
    }
NP_LOOP_PAIRWISE(np_loop_pairwise_d, double)
NP_LOOP_PAIRWISE(np_loop_pairwise_s, float)
"""


# -- max and min ----------------------------------------------------------------------------


def _plain_reduction(node: Node, env: Env, writer: LoopWriter) -> CVector | None:
    # The 1-d operand of a whole-value reduction without options (None: a 0-d operand).
    vector = _vector(writer, env, node.inputs[0]) if node.inputs else None
    if vector is None:
        return None
    params = dict(node.params)
    options = {key: value for key, value in params.items() if key not in ("axis", "keepdims")}
    if params.get("axis") not in (None, 0, (0,)) or params.get("keepdims") or options:
        raise NotScalarLoop(f"{node.name}: a reduction with options")
    if len(node.inputs) > 1 or vector.dtype.kind not in "biuf":
        raise NotScalarLoop(f"{node.name}: a reduction of {vector.dtype}")
    return vector


def _extremum(writer: LoopWriter, node: Node, env: Env) -> None:
    vector = _plain_reduction(node, env, writer)
    if vector is None:
        _pointwise(writer, node, env)
        return
    assert node.op is not None
    meta = node.meta
    assert isinstance(meta, ArrayMeta)
    ct = c_type(meta.dtype)
    better = ">" if node.op.name == "max" else "<"
    buf = writer.buf
    acc, k = writer.fresh("ext"), writer.fresh("k")
    writer.bails = True
    buf.writeline(f"if ({vector.length} <= 0) {{ goto bail; }}  /* NumPy's ValueError */")
    if meta.dtype.kind != "f":
        first = vector.element("0")
        buf.writeline(f"{ct} {acc} = ({ct}){first.text};")
        buf.writeline(f"for (int64_t {k} = 1; {k} < {vector.length}; {k}++) {{")
        with buf.indent():
            item = vector.element(k)
            buf.writeline(f"if (({ct}){item.text} {better} {acc}) {{ {acc} = ({ct}){item.text}; }}")
        buf.writeline("}")
        env[node] = CValue(acc, meta.dtype)
        return
    # Floats: from the infinity every value beats; a NaN or zeros of both signs at the
    # extremum bail (NumPy's choice among them follows its SIMD loop's order).
    start = "-INFINITY" if better == ">" else "INFINITY"
    nan = writer.fresh("nan")
    buf.writeline(f"{ct} {acc} = ({ct}){start};")
    buf.writeline(f"int {nan} = 0;")
    buf.writeline(f"for (int64_t {k} = 0; {k} < {vector.length}; {k}++) {{")
    with buf.indent():
        x = writer.define(meta.dtype, f"({ct}){vector.element(k).text}", "x")
        buf.writeline(f"if (isnan({x})) {{ {nan} = 1; }}")
        buf.writeline(f"else if ({x} {better} {acc}) {{ {acc} = {x}; }}")
    buf.writeline("}")
    buf.writeline(f"if ({nan}) {{ goto bail; }}")
    buf.writeline(f"if ({acc} == 0) {{")
    with buf.indent():
        j = writer.fresh("k")
        buf.writeline(f"for (int64_t {j} = 0; {j} < {vector.length}; {j}++) {{")
        with buf.indent():
            y = writer.define(meta.dtype, f"({ct}){vector.element(j).text}", "x")
            buf.writeline(f"if ({y} == 0 && signbit({y}) != signbit({acc})) {{ goto bail; }}")
        buf.writeline("}")
    buf.writeline("}")
    env[node] = CValue(acc, meta.dtype)


# -- any and all ----------------------------------------------------------------------------


def _truth(writer: LoopWriter, node: Node, env: Env) -> None:
    vector = _plain_reduction(node, env, writer)
    if vector is None:
        _pointwise(writer, node, env)
        return
    assert node.op is not None
    meta = node.meta
    assert isinstance(meta, ArrayMeta)
    every = node.op.name == "all"
    acc, k = writer.fresh("truth"), writer.fresh("k")
    buf = writer.buf
    buf.writeline(f"npy_bool {acc} = {int(every)};")
    buf.writeline(f"for (int64_t {k} = 0; {k} < {vector.length}; {k}++) {{")
    with buf.indent():
        item = vector.element(k)
        test = c_expr("cast", [item.text], [item.dtype], np.dtype(bool))
        buf.writeline(f"{acc} {'&=' if every else '|='} {test};")
    buf.writeline("}")
    env[node] = CValue(acc, meta.dtype)


# -- dot products ---------------------------------------------------------------------------


def dot_product(writer: LoopWriter, node: Node, env: Env) -> None:
    """`matmul` or `dot` of two 1-d values of a loop body, as NumPy computes it."""
    vectors = [_vector(writer, env, value) for value in node.inputs]
    meta = node.meta
    if len(vectors) != 2 or not isinstance(meta, ArrayMeta) or meta.shape != ():
        raise NotScalarLoop("a matmul that is no dot product of two 1-d values")
    left, right = vectors
    if left is None or right is None or any(value is not None for _, value in node.params):
        raise NotScalarLoop("a matmul that is no dot product of two 1-d values")
    if meta.dtype in _FLOATS:
        env[node] = _blas_dot(writer, node, left, right)
        return
    ct = c_type(meta.dtype)

    def term(k: str) -> str:
        a, b = left.element(k), right.element(k)
        return f"({ct}){a.text} * ({ct}){b.text}"

    env[node] = _accumulate(writer, node, left.length, term)


def _blas_dot(writer: LoopWriter, node: Node, left: CVector, right: CVector) -> CValue:
    # NumPy's DOUBLE_dot / FLOAT_dot on the operands as NumPy hands them over.
    from numpile_runtime import find_cpu_blas  # the BLAS NumPy calls, found once

    blas = find_cpu_blas()
    if blas is None or not all(blas.dot_addresses()):
        raise NotScalarLoop("a float dot product without NumPy's BLAS to call")
    meta = node.meta
    assert isinstance(meta, ArrayMeta) and node.op is not None
    ready = "    if (!np_loop_dot_ready()) { goto eager; }"  # before anything is written
    if ready not in writer.declarations:
        writer.declarations.append(ready)
    if left.shape != right.shape:  # capture did not prove them equal: NumPy's ValueError
        writer.buf.writeline(f"if ({left.length} != {right.length}) {{ goto bail; }}")
        writer.bails = True
    copies = node.op.name == "dot"  # np.dot copies a vector of a bad stride first
    operands = [
        _operand_memory(writer, vector, meta.dtype, copies=copies) for vector in (left, right)
    ]
    (x, incx), (y, incy) = operands
    kind = "d" if meta.dtype == np.dtype(np.float64) else "s"
    return CValue(
        writer.define(meta.dtype, f"np_loop_{kind}dot({left.length}, {x}, {incx}, {y}, {incy})"),
        meta.dtype,
    )


def _operand_memory(
    writer: LoopWriter, vector: CVector, dtype: np.dtype[Any], *, copies: bool
) -> tuple[str, str]:
    # The C pointer and element stride a reduction reads `vector` through, as NumPy holds
    # it: a view of `dtype` in place; else (a computed or cast value, or for np.dot a view
    # of a negative stride, or a zero one over several elements) its elements in a scratch
    # buffer (NumPy's temporary).
    ct = c_type(dtype)
    buf = writer.buf
    view = vector.view
    if view is not None and vector.dtype == dtype and not copies:
        return f"(const {ct} *)&{view.address('0')}", view.stride
    scratch, capacity = writer.scratch()
    pointer, stride = writer.fresh("dp"), writer.fresh("inc")
    buf.writeline(f"const {ct} *{pointer};")
    buf.writeline(f"int64_t {stride};")
    if view is not None and vector.dtype == dtype:
        buf.writeline(f"if ({view.stride} > 0 || ({view.stride} == 0 && {vector.length} <= 1)) {{")
        with buf.indent():
            buf.writeline(f"{pointer} = (const {ct} *)&{view.address('0')};")
            buf.writeline(f"{stride} = {view.stride};")
        buf.writeline("} else {")
        with buf.indent():
            _fill_scratch(writer, vector, dtype, scratch, capacity, pointer, stride)
        buf.writeline("}")
    else:
        _fill_scratch(writer, vector, dtype, scratch, capacity, pointer, stride)
    return pointer, stride


def _fill_scratch(
    writer: LoopWriter,
    vector: CVector,
    dtype: np.dtype[Any],
    scratch: str,
    capacity: str,
    pointer: str,
    stride: str,
) -> None:
    ct = c_type(dtype)
    buf = writer.buf
    size = f"(int64_t)sizeof({ct}) * ({vector.length} > 0 ? {vector.length} : 1)"
    buf.writeline(f"if (!np_loop_reserve(&{scratch}, &{capacity}, {size})) {{ goto fail; }}")
    k = writer.fresh("k")
    buf.writeline(f"for (int64_t {k} = 0; {k} < {vector.length}; {k}++) {{")
    with buf.indent():
        item = vector.element(k)
        cast = c_expr("cast", [item.text], [item.dtype], dtype)
        buf.writeline(f"(({ct} *){scratch})[{k}] = {cast};")
    buf.writeline("}")
    buf.writeline(f"{pointer} = (const {ct} *){scratch};")
    buf.writeline(f"{stride} = 1;")


# -- sum ------------------------------------------------------------------------------------


def _sum(writer: LoopWriter, node: Node, env: Env) -> None:
    vector = _vector(writer, env, node.inputs[0]) if node.inputs else None
    if vector is None:
        _pointwise(writer, node, env)
        return
    params = dict(node.params)
    if params.get("axis") not in (None, 0, (0,)) or params.get("keepdims") or len(node.inputs) > 1:
        raise NotScalarLoop("a sum with options")
    meta = node.meta
    assert isinstance(meta, ArrayMeta)
    ct = c_type(meta.dtype)
    if meta.dtype in _FLOATS:
        # NumPy's pairwise sum, on the value as NumPy holds it (a view in place, else its
        # temporary); a cast on the way (`dtype=`) is cast in buffered chunks by NumPy.
        if vector.dtype != meta.dtype:
            raise NotScalarLoop("a float sum that casts its operand")
        pointer, stride = _operand_memory(writer, vector, meta.dtype, copies=False)
        kind = "d" if meta.dtype == np.dtype(np.float64) else "s"
        total = f"({ct})0.0 + np_loop_pairwise_{kind}({pointer}, {vector.length}, {stride})"
        env[node] = CValue(writer.define(meta.dtype, total), meta.dtype)
        return

    def term(k: str) -> str:
        return f"({ct}){vector.element(k).text}"

    env[node] = _accumulate(writer, node, vector.length, term)


_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


# `matmul` is loop_products' (matrix-vector products), which hands dot products here.
_NODE_HANDLERS["dot"] = dot_product
_NODE_HANDLERS["sum"] = _sum
_NODE_HANDLERS["max"] = _extremum
_NODE_HANDLERS["min"] = _extremum
_NODE_HANDLERS["any"] = _truth
_NODE_HANDLERS["all"] = _truth
