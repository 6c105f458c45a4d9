"""C loop nests of scatter-accumulate kernels (`loop_ir.AccumulateStore`: `np.add.at`,
`np.bincount`'s weights, with their values, gathers included, computed in the same loop).

The kernel first stores the target's initial value into every element (a copy of the
`ufunc.at` target, zeros for `bincount`), then runs the value loop once, sequentially, in
C order, applying the ufunc at each data-read index: repeated indices accumulate in NumPy's
order, so float sums are bit-identical to NumPy's. The element written last stays in a
register while the index repeats (sorted or clustered indices, a CSR row): the loop's
critical path is then the ufunc itself, not a store and a reload of the same element. No
OpenMP region and no `ivdep` (two iterations may write one element). Indices are wrapped
and checked as gathers' are (`codegen/c/gather.py`), against the target's dims.

    >>> "scatter_nest" in __all__
    True
"""

from __future__ import annotations

from ...index import loop_var
from ...loop_ir import AccumulateStore, Store
from ..common import CodeBuffer, KernelContext
from .loop import LoopBody, loops
from .ops import c_type

__all__ = ["BINCOUNT_LENGTH_HELPERS", "bincount_length_call", "scatter_nest"]

BINCOUNT_LENGTH_HELPERS = r"""
/* The length of np.bincount(x, minlength=m) (codegen/c/accumulate.py): an array of that
   length (its values unset: only its length is read), or NULL with no error set when NumPy
   must count (another dtype or layout, a negative value: NumPy raises its ValueError).
   Out of line: inlined into the graph's `call`, its loops would not vectorize (kernel.py). */
__attribute__((noinline)) static PyObject *np_bincount_length(PyArrayObject *x, npy_intp minlength)
{
    int type = PyArray_TYPE(x);
    if (PyArray_NDIM(x) != 1 || (type != NPY_INT64 && type != NPY_INT32)
        || !PyArray_ISALIGNED(x) || !PyArray_ISNOTSWAPPED(x)) {
        return NULL;
    }
    npy_intp n = PyArray_DIM(x, 0), stride = PyArray_STRIDE(x, 0);
    const char *p = PyArray_BYTES(x);
    int64_t low = 0, high = -1;
    if (type == NPY_INT64 && stride == sizeof(int64_t)) {
        /* contiguous: a loop the compiler vectorizes (a reduction over a known stride) */
        const int64_t *q = (const int64_t *)p;
        for (npy_intp i = 0; i < n; i++) {
            low = q[i] < low ? q[i] : low;
            high = q[i] > high ? q[i] : high;
        }
    } else if (type == NPY_INT32 && stride == sizeof(int32_t)) {
        const int32_t *q = (const int32_t *)p;
        int32_t low32 = 0, high32 = -1;
        for (npy_intp i = 0; i < n; i++) {
            low32 = q[i] < low32 ? q[i] : low32;
            high32 = q[i] > high32 ? q[i] : high32;
        }
        low = low32;
        high = high32;
    } else if (type == NPY_INT64) {
        for (npy_intp i = 0; i < n; i++) {
            const int64_t v = *(const int64_t *)(p + i * stride);
            low = v < low ? v : low;
            high = v > high ? v : high;
        }
    } else {
        for (npy_intp i = 0; i < n; i++) {
            const int64_t v = *(const int32_t *)(p + i * stride);
            low = v < low ? v : low;
            high = v > high ? v : high;
        }
    }
    if (low < 0 || minlength < 0) { return NULL; }
    npy_intp length = (npy_intp)high + 1 > minlength ? (npy_intp)high + 1 : minlength;
    PyObject *result = PyArray_SimpleNew(1, &length, NPY_INTP);
    if (result == NULL) { PyErr_Clear(); }  /* NumPy tries, and raises its MemoryError */
    return result;
}
"""


def bincount_length_call(x: str, minlength: int) -> str:
    """The C expression of the length-only `bincount` step of `x` (an array expression).

    >>> bincount_length_call("a_rows", 8)
    'np_bincount_length(a_rows, 8)'
    """
    return f"np_bincount_length({x}, {minlength})"


def scatter_nest(ctx: KernelContext, buf: CodeBuffer) -> None:
    """The init loop over the target, then the sequential accumulate loop (sizes: the
    kernel's ranges, then the target's dims)."""
    fused = ctx.fused
    ndim = len(fused.ranges)
    target_sizes = ctx.sizes[ndim:]
    for store in fused.stores:
        assert isinstance(store, AccumulateStore)
        ys = tuple(loop_var(d) for d in range(len(store.target_shape)))
        buf.writeline(f"/* {store.buffer}: its initial value, then the scatter-accumulate */")
        with loops(buf, "x", list(target_sizes)):
            LoopBody(ctx, buf).store(Store(store.buffer, ys, store.init), False)
        with buf.block():
            buf.writeline("int64_t np_at = -1;  /* the element np_acc holds */")
            buf.writeline(f"{c_type(ctx.buffers[store.buffer].dtype)} np_acc = 0;")
            with loops(buf, "x", list(ctx.sizes[:ndim])):
                LoopBody(ctx, buf).accumulate(store, list(target_sizes))
            buf.writeline(f"if (np_at >= 0) {{ {store.buffer}[np_at] = np_acc; }}")
