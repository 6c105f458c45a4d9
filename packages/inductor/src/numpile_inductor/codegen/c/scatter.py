"""`ufunc.at` as a C loop: the graph's `index_accumulate` (`np.add.at(out, index, values)`)
runs as a sequential scatter-accumulate in the generated C, not through NumPy.

An `index_accumulate` of `add`, `subtract` or `multiply` on a float64, float32, int64 or
int32 target, at one 1-D intp index array along axis 0, with a value of the target's dtype
(an array, or a constant the target's dtype holds exactly) copies the target C-contiguous
and applies the ufunc once per index, in index order: repeated indices accumulate in
NumPy's order, so float sums are bit-identical. Integers wrap as NumPy's do. Decided per
call in C, everything else stays NumPy's `ufunc.at`: a value laid out other than dense
(index dims then the target's inner dims), one row broadcast over the indices, or one
element; any index out of bounds (NumPy raises its IndexError, the target untouched); and
a loop that raised a floating-point flag (NumPy computes it again and warns as eager does).

    >>> "np_scatter_at" in SCATTER_HELPERS
    True
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from numpile_capture import IndexArray

from ...loop_ir import Buffer, BufferRef, ExternCall

__all__ = ["SCATTER_HELPERS", "ScatterAt", "scatter_operands"]

# NOTE: the ufuncs the loop applies, by the code the C switch reads.
SCATTER_UFUNCS: dict[str, int] = {"add": 0, "subtract": 1, "multiply": 2}
_C_TYPES: dict[np.dtype[Any], tuple[str, str]] = {
    np.dtype(np.float64): ("double", "double"),
    np.dtype(np.float32): ("float", "float"),
    np.dtype(np.int64): ("int64_t", "uint64_t"),
    np.dtype(np.int32): ("int32_t", "uint32_t"),
}

_LOOP = r"""
#define NP_AT_{name}(OP) \
    if (inner == 1 && vi == 0) {{ \
        const {t} c = v[0]; \
        for (npy_intp i = 0; i < n; i++) {{ \
            npy_intp r = *(const npy_intp *)(ip + i * is); \
            r += r < 0 ? rows : 0; \
            if ((npy_uintp)r >= (npy_uintp)rows) {{ return 0; }} \
            o[r] = ({t})(({u})o[r] OP ({u})c); \
        }} \
    }} else if (inner == 1) {{ \
        for (npy_intp i = 0; i < n; i++) {{ \
            npy_intp r = *(const npy_intp *)(ip + i * is); \
            r += r < 0 ? rows : 0; \
            if ((npy_uintp)r >= (npy_uintp)rows) {{ return 0; }} \
            o[r] = ({t})(({u})o[r] OP ({u})v[i * vi]); \
        }} \
    }} else {{ \
        for (npy_intp i = 0; i < n; i++) {{ \
            npy_intp r = *(const npy_intp *)(ip + i * is); \
            r += r < 0 ? rows : 0; \
            if ((npy_uintp)r >= (npy_uintp)rows) {{ return 0; }} \
            {t} *dst = o + r * inner; \
            const {t} *src = v + i * vi; \
            for (npy_intp j = 0; j < inner; j++) {{ \
                dst[j] = ({t})(({u})dst[j] OP ({u})src[j * vj]); \
            }} \
        }} \
    }}
/* 0 when an index is out of bounds (out is then partly written: the caller drops it). */
static int np_scatter_at_{name}(int op, char *out, npy_intp rows, npy_intp inner,
                                const char *ip, npy_intp is, npy_intp n, const {t} *v,
                                npy_intp vi, npy_intp vj)
{{
    {t} *o = ({t} *)out;
    if (op == 0) {{ NP_AT_{name}(+) }}
    else if (op == 1) {{ NP_AT_{name}(-) }}
    else {{ NP_AT_{name}(*) }}
    return 1;
}}
"""

SCATTER_HELPERS = (
    "\n/* ufunc.at as a C loop (codegen/c/scatter.py). */"
    + "".join(_LOOP.format(name=dtype.name, t=t, u=u) for dtype, (t, u) in _C_TYPES.items())
    + r"""
/* A C-contiguous copy of base with op applied at index (1-D intp, axis 0) in index order,
   or NULL with no error set when NumPy must run it (see codegen/c/scatter.py). value is
   NULL for a constant, which then points at a `constant` of base's type. */
static PyObject *np_scatter_at(int op, PyArrayObject *base, PyArrayObject *index,
                               PyArrayObject *value, const void *constant)
{
    int type = PyArray_TYPE(base);
    int nd = PyArray_NDIM(base);
    npy_intp rows = PyArray_DIM(base, 0);
    npy_intp inner = 1;
    for (int d = 1; d < nd; d++) { inner *= PyArray_DIM(base, d); }
    if (PyArray_NDIM(index) != 1 || PyArray_TYPE(index) != NPY_INTP
        || !PyArray_ISALIGNED(index) || !PyArray_ISNOTSWAPPED(index)
        || PyArray_STRIDE(index, 0) % (npy_intp)sizeof(npy_intp) != 0) {
        return NULL;
    }
    npy_intp n = PyArray_DIM(index, 0), is = PyArray_STRIDE(index, 0);
    const char *ip = PyArray_BYTES(index);
    const void *v = constant;
    npy_intp vi = 0, vj = 0;
    if (value != NULL) {
        if (PyArray_TYPE(value) != type || !PyArray_IS_C_CONTIGUOUS(value)
            || !PyArray_ISALIGNED(value) || !PyArray_ISNOTSWAPPED(value)) {
            return NULL;
        }
        int vn = PyArray_NDIM(value);
        npy_intp *vd = PyArray_DIMS(value);
        int dense = vn == nd && vd[0] == n, row = vn == nd - 1;
        for (int d = 1; d < nd; d++) {
            dense = dense && vd[d] == PyArray_DIM(base, d);
            row = row && vd[d - 1] == PyArray_DIM(base, d);
        }
        if (PyArray_SIZE(value) == 1 && vn <= nd) {
            vi = 0; vj = 0;
        } else if (dense) {
            vi = inner; vj = 1;
        } else if (row) {
            vi = 0; vj = 1;
        } else {
            return NULL;
        }
        v = PyArray_DATA(value);
    }
    PyObject *out = PyArray_NewCopy(base, NPY_CORDER);
    if (out == NULL) { PyErr_Clear(); return NULL; }
    char *o = PyArray_BYTES((PyArrayObject *)out);
    NP_FP_CLEAR();
    int done = 0;
    switch (type) {
    case NPY_DOUBLE: done = np_scatter_at_float64(op, o, rows, inner, ip, is, n, v, vi, vj); break;
    case NPY_FLOAT: done = np_scatter_at_float32(op, o, rows, inner, ip, is, n, v, vi, vj); break;
    case NPY_INT64: done = np_scatter_at_int64(op, o, rows, inner, ip, is, n, v, vi, vj); break;
    case NPY_INT32: done = np_scatter_at_int32(op, o, rows, inner, ip, is, n, v, vi, vj); break;
    default: break;
    }
    if (!done || NP_FP_TEST()) {
        NP_FP_CLEAR();
        Py_DECREF(out);
        return NULL;
    }
    return out;
}
"""
)


@attrs.frozen
class ScatterAt:
    """What the C loop of one `index_accumulate` step reads: the ufunc's code, the buffers
    of the target and the index, and the value's buffer or constant (a C literal)."""

    op: int
    base: str
    index: str
    value: str | None
    constant: str | None
    c_type: str


def _constant(value: Any, dtype: np.dtype[Any]) -> str | None:
    # A Python number as a C literal of the target's type, when the type holds it exactly
    # and NumPy's weak-scalar rule keeps the loop in that type.
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if dtype.kind == "f":
        if not np.isfinite(value) or float(dtype.type(value)) != float(value):
            return None
        return repr(float(value))
    if isinstance(value, float):
        return None
    info = np.iinfo(dtype)
    return f"{value}LL" if info.min <= value <= info.max else None


def scatter_operands(step: ExternCall, buffers: dict[str, Buffer]) -> ScatterAt | None:
    """The operands of an `index_accumulate` step the C loop may run, or None.

    Compile-time conditions only; layouts and index bounds are checked per call in C.

        >>> scatter_operands(step, buffers)  # doctest: +SKIP
        ScatterAt(op=0, base='buf0', index='arg1', value='buf2', constant=None, c_type='double')
    """
    kwargs = dict(step.kwargs)
    op = SCATTER_UFUNCS.get(kwargs.get("ufunc", ""))
    if step.op_name != "index_accumulate" or op is None or len(step.args) != 3:
        return None
    if kwargs.get("index") != (IndexArray(0),) or kwargs.get("nnz") is not None:
        return None
    base_ref, value, index_ref = step.args
    if not (isinstance(base_ref, BufferRef) and isinstance(index_ref, BufferRef)):
        return None
    base, index = buffers[base_ref.name], buffers[index_ref.name]
    types = _C_TYPES.get(base.dtype)
    if types is None or not base.shape or "scalar" in (base.kind, index.kind):
        return None
    if index.dtype != np.dtype(np.intp) or len(index.shape) != 1:
        return None
    if isinstance(value, BufferRef):
        held = buffers[value.name]
        if held.dtype != base.dtype or held.kind == "scalar":
            return None
        return ScatterAt(op, base.name, index.name, held.name, None, types[0])
    constant = _constant(value, base.dtype)
    if constant is None:
        return None
    return ScatterAt(op, base.name, index.name, None, constant, types[0])
