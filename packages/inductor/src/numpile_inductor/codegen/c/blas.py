"""Products through BLAS: a graph's `matmul` and `dot` call the BLAS NumPy loaded from C.

A float32 or float64 product whose operands BLAS can read in place (each matrix row- or
column-major with a leading dimension, vectors with a positive stride: transposes and
slices are transpose flags and leading dimensions, not copies) runs as `cblas_?gemm` or
`cblas_?gemv` of the library NumPy calls (`numpile_runtime.find_cpu_blas`), into an output
the wrapper allocates. A pointwise epilogue (bias, activation, scaling) then runs in place
on that output as one fused kernel (`wrapper._reusable_source`). Batched products loop over
their broadcast batch dims in C, one BLAS call per matrix. Everything else stays a NumPy
call, decided at run time per call: integer, bool and complex products (NumPy's own exact
loops), mixed dtypes, empty operands, negative or non-unit strides inside a row, unaligned
or byte-swapped data, any module where no ILP64 CBLAS was found, and a product whose BLAS
call raised a floating-point flag (NumPy computes it again and warns as eager does).

    >>> "np_blas_matmul" in BLAS_HELPERS, "np_blas_threads_enter" in BLAS_LIBRARY_HELPERS
    (True, True)
"""

from __future__ import annotations

import numpy as np

from ...loop_ir import Buffer, BufferRef, ExternCall

# Ops whose two-array form is a product BLAS computes. `dot` only for operands of at
# most two dims (beyond that its rule is not matmul's).
BLAS_PRODUCT_OPS = frozenset({"matmul", "dot"})
_BLAS_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))

BLAS_LIBRARY_HELPERS = r"""
/* Products through the BLAS NumPy loaded (numpile_runtime.cpu_blas): ILP64 CBLAS, every
   integer argument an int64. g_blas holds sgemm, dgemm, sgemv, dgemv, ssyrk, dsyrk, read
   once. */
typedef void (*np_dgemm_fn)(int, int, int, int64_t, int64_t, int64_t, double, const double *,
                            int64_t, const double *, int64_t, double, double *, int64_t);
typedef void (*np_sgemm_fn)(int, int, int, int64_t, int64_t, int64_t, float, const float *,
                            int64_t, const float *, int64_t, float, float *, int64_t);
typedef void (*np_dgemv_fn)(int, int, int64_t, int64_t, double, const double *, int64_t,
                            const double *, int64_t, double, double *, int64_t);
typedef void (*np_sgemv_fn)(int, int, int64_t, int64_t, float, const float *, int64_t,
                            const float *, int64_t, float, float *, int64_t);
typedef void (*np_dsyrk_fn)(int, int, int, int64_t, int64_t, double, const double *, int64_t,
                            double, double *, int64_t);
typedef void (*np_ssyrk_fn)(int, int, int, int64_t, int64_t, float, const float *, int64_t,
                            float, float *, int64_t);
enum { NP_ROW_MAJOR = 101, NP_NO_TRANS = 111, NP_TRANS = 112, NP_UPPER = 121 };
#define NP_BLAS_FUNCTIONS 6
static void *g_blas[NP_BLAS_FUNCTIONS] = {NULL, NULL, NULL, NULL, NULL, NULL};
static int g_blas_state = 0;  /* 0: not asked yet; 1: found; -1: none (NumPy runs products) */
typedef void (*np_blas_set_threads_fn)(int);
typedef int (*np_blas_get_threads_fn)(void);
static void *g_blas_threads[2] = {NULL, NULL};  /* OpenBLAS's set/get_num_threads, or NULL */
/* Multiply-adds below which OpenBLAS runs a call on one thread whatever its count. */
#define NP_BLAS_THREADED_WORK 65536.0

static void np_blas_find_threads(void)
{
    PyObject *module = PyImport_ImportModule("numpile_runtime.cpu_blas");
    if (module == NULL) { PyErr_Clear(); return; }
    PyObject *found = PyObject_CallMethod(module, "cpu_blas_thread_addresses", NULL);
    Py_DECREF(module);
    if (found == NULL) { PyErr_Clear(); return; }
    if (PyTuple_Check(found) && PyTuple_GET_SIZE(found) == 2) {
        void *set = PyLong_AsVoidPtr(PyTuple_GET_ITEM(found, 0));
        void *get = PyLong_AsVoidPtr(PyTuple_GET_ITEM(found, 1));
        if (PyErr_Occurred()) { PyErr_Clear(); }
        else if (set != NULL && get != NULL) { g_blas_threads[0] = set; g_blas_threads[1] = get; }
    }
    Py_DECREF(found);
}

static int np_blas_ready(void)
{
    if (g_blas_state != 0) { return g_blas_state > 0; }
    g_blas_state = -1;
    PyObject *module = PyImport_ImportModule("numpile_runtime.cpu_blas");
    if (module == NULL) { PyErr_Clear(); return 0; }
    PyObject *found = PyObject_CallMethod(module, "cpu_blas_addresses", NULL);
    Py_DECREF(module);
    if (found == NULL) { PyErr_Clear(); return 0; }
    if (PyTuple_Check(found) && PyTuple_GET_SIZE(found) == NP_BLAS_FUNCTIONS) {
        int ok = 1;
        for (int i = 0; i < NP_BLAS_FUNCTIONS; i++) {
            g_blas[i] = PyLong_AsVoidPtr(PyTuple_GET_ITEM(found, i));
            if (g_blas[i] == NULL) { PyErr_Clear(); ok = 0; }
        }
        g_blas_state = ok ? 1 : -1;
    }
    Py_DECREF(found);
    if (g_blas_state > 0) {
        np_blas_find_threads();
    }
    return g_blas_state > 0;
}

/* OpenBLAS threads by idle cores, as OpenMP's (codegen/c/threads.py): a BLAS call of
   `work` multiply-adds runs on the library's thread count less the cores other runnable
   tasks hold now, or on the count cpp.threads pinned (never more than the library's own).
   The previous count to give back to np_blas_threads_exit, or 0 when nothing changed:
   small calls (OpenBLAS runs them on one thread anyway), a library without the setter, an
   idle machine. */
static int np_blas_threads_enter(double work)
{
    if (work < NP_BLAS_THREADED_WORK || !np_blas_ready() || g_blas_threads[0] == NULL) {
        return 0;
    }
    const int before = ((np_blas_get_threads_fn)g_blas_threads[1])();
    int now = before;
    if (g_threads > 0) {
        now = g_threads < before ? g_threads : before;
    } else {
#if defined(_OPENMP) && defined(__linux__)
        now = np_idle_threads(before);
#endif
    }
    if (now == before || now < 1) { return 0; }
    ((np_blas_set_threads_fn)g_blas_threads[0])(now);
    return before;
}

static void np_blas_threads_exit(int before)
{
    if (before > 0) { ((np_blas_set_threads_fn)g_blas_threads[0])(before); }
}

"""

BLAS_HELPERS = r"""
/* How BLAS reads a rows x cols matrix with element strides rs, cs: 0 row-major, 1
   column-major (leading dimension *ld either way), -1 neither (NumPy runs the product). */
static int np_blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, int64_t *ld)
{
    int64_t rmin = rows > 1 ? rows : 1;
    int64_t cmin = cols > 1 ? cols : 1;
    if (cs == 1 || cols == 1) {
        int64_t l = rows == 1 ? cmin : rs;
        if (l >= cmin) { *ld = l; return 0; }
    }
    if (rs == 1 || rows == 1) {
        int64_t l = cols == 1 ? rmin : cs;
        if (l >= rmin) { *ld = l; return 1; }
    }
    return -1;
}

/* y (length ylen, contiguous) = op(A) x. beta is 0, so y is zeroed first: no BLAS then
   reads what the allocator left there (NaN * 0 is NaN). */
static void np_blas_gemv(int type, int trans, int64_t rows, int64_t cols, const char *a,
                         int64_t lda, const char *x, int64_t incx, char *y, int64_t ylen)
{
    if (type == NPY_DOUBLE) {
        memset(y, 0, (size_t)ylen * sizeof(double));
        ((np_dgemv_fn)g_blas[3])(NP_ROW_MAJOR, trans, rows, cols, 1.0, (const double *)a, lda,
                                 (const double *)x, incx, 0.0, (double *)y, 1);
    } else {
        memset(y, 0, (size_t)ylen * sizeof(float));
        ((np_sgemv_fn)g_blas[2])(NP_ROW_MAJOR, trans, rows, cols, 1.0f, (const float *)a, lda,
                                 (const float *)x, incx, 0.0f, (float *)y, 1);
    }
}

/* c (n x n, contiguous) = a @ a.T (trans NP_NO_TRANS; a is n x k row-major) or a.T @ a
   (NP_TRANS; a is k x n row-major): half a gemm's work, the upper triangle by syrk, then
   mirrored, as NumPy does for a product of a matrix and its own transpose. */
static void np_blas_syrk(int type, int trans, int64_t n, int64_t k, const char *a,
                         int64_t lda, char *c)
{
    if (type == NPY_DOUBLE) {
        double *out = (double *)c;
        ((np_dsyrk_fn)g_blas[5])(NP_ROW_MAJOR, NP_UPPER, trans, n, k, 1.0, (const double *)a,
                                 lda, 0.0, out, n);
        for (int64_t i = 0; i < n; i++) {
            for (int64_t j = i + 1; j < n; j++) { out[j * n + i] = out[i * n + j]; }
        }
    } else {
        float *out = (float *)c;
        ((np_ssyrk_fn)g_blas[4])(NP_ROW_MAJOR, NP_UPPER, trans, n, k, 1.0f, (const float *)a,
                                 lda, 0.0f, out, n);
        for (int64_t i = 0; i < n; i++) {
            for (int64_t j = i + 1; j < n; j++) { out[j * n + i] = out[i * n + j]; }
        }
    }
}

/* One product of the batch: matrix @ vector, vector @ matrix or matrix @ matrix. A matrix
   in column-major order is its transpose in row-major order, so it is passed transposed. */
static void np_blas_product(int type, int an, int bn, int la, int lb, int64_t m, int64_t n,
                            int64_t k, const char *a, int64_t lda, int64_t inca,
                            const char *b, int64_t ldb, int64_t incb, char *c)
{
    if (bn == 1) {
        if (la == 0) { np_blas_gemv(type, NP_NO_TRANS, m, k, a, lda, b, incb, c, m); }
        else { np_blas_gemv(type, NP_TRANS, k, m, a, lda, b, incb, c, m); }
    } else if (an == 1) {
        if (lb == 0) { np_blas_gemv(type, NP_TRANS, k, n, b, ldb, a, inca, c, n); }
        else { np_blas_gemv(type, NP_NO_TRANS, n, k, b, ldb, a, inca, c, n); }
    } else if (a == b && m == n && la != lb && lda == ldb) {
        /* b is a's transpose (one matrix read both ways): a @ a.T or a.T @ a */
        np_blas_syrk(type, la == 0 ? NP_NO_TRANS : NP_TRANS, m, k, a, lda, c);
    } else if (type == NPY_DOUBLE) {
        ((np_dgemm_fn)g_blas[1])(NP_ROW_MAJOR, la == 0 ? NP_NO_TRANS : NP_TRANS,
                                 lb == 0 ? NP_NO_TRANS : NP_TRANS, m, n, k, 1.0,
                                 (const double *)a, lda, (const double *)b, ldb, 0.0,
                                 (double *)c, n);
    } else {
        ((np_sgemm_fn)g_blas[0])(NP_ROW_MAJOR, la == 0 ? NP_NO_TRANS : NP_TRANS,
                                 lb == 0 ? NP_NO_TRANS : NP_TRANS, m, n, k, 1.0f,
                                 (const float *)a, lda, (const float *)b, ldb, 0.0f,
                                 (float *)c, n);
    }
}

#define NP_BLAS_MAXDIMS 32

/* out = a @ b (np.matmul's rules; out C-contiguous, allocated by the caller) through BLAS:
   1 when done, 0 when NumPy must run it (then out is garbage to drop). A product that
   raised a floating-point flag (inf or NaN inside, overflow) also gives 0: NumPy runs it
   again and warns from the user's line as eager does, with the same values. */
static int np_blas_matmul(PyArrayObject *a, PyArrayObject *b, PyArrayObject *out)
{
    int type = PyArray_TYPE(out);
    if ((type != NPY_DOUBLE && type != NPY_FLOAT) || PyArray_TYPE(a) != type
        || PyArray_TYPE(b) != type || !np_blas_ready()) {
        return 0;
    }
    if (!PyArray_ISALIGNED(a) || !PyArray_ISALIGNED(b) || !PyArray_ISNOTSWAPPED(a)
        || !PyArray_ISNOTSWAPPED(b) || !PyArray_IS_C_CONTIGUOUS(out)) {
        return 0;
    }
    int an = PyArray_NDIM(a), bn = PyArray_NDIM(b), on = PyArray_NDIM(out);
    if (an < 1 || bn < 1 || (an == 1 && bn == 1) || an > NP_BLAS_MAXDIMS
        || bn > NP_BLAS_MAXDIMS || on > NP_BLAS_MAXDIMS || PyArray_SIZE(out) == 0) {
        return 0;
    }
    int64_t item = (int64_t)PyArray_ITEMSIZE(out);
    const npy_intp *ad = PyArray_DIMS(a), *bd = PyArray_DIMS(b), *od = PyArray_DIMS(out);
    int64_t ast[NP_BLAS_MAXDIMS], bst[NP_BLAS_MAXDIMS];
    for (int d = 0; d < an; d++) {
        if (PyArray_STRIDES(a)[d] % item != 0) { return 0; }
        ast[d] = (int64_t)(PyArray_STRIDES(a)[d] / item);
    }
    for (int d = 0; d < bn; d++) {
        if (PyArray_STRIDES(b)[d] % item != 0) { return 0; }
        bst[d] = (int64_t)(PyArray_STRIDES(b)[d] / item);
    }
    int64_t m = an == 1 ? 1 : ad[an - 2], k = ad[an - 1], n = bn == 1 ? 1 : bd[bn - 1];
    if ((bn == 1 ? bd[0] : bd[bn - 2]) != k || m == 0 || n == 0 || k == 0) { return 0; }
    int ab = an > 2 ? an - 2 : 0, bb = bn > 2 ? bn - 2 : 0;
    int nb = on - (an == 1 ? 0 : 1) - (bn == 1 ? 0 : 1);
    if (nb < ab || nb < bb) { return 0; }
    int64_t step_a[NP_BLAS_MAXDIMS], step_b[NP_BLAS_MAXDIMS], count = 1;
    for (int d = 0; d < nb; d++) {
        int da = d - (nb - ab), db = d - (nb - bb);
        if ((da >= 0 && ad[da] != 1 && ad[da] != od[d])
            || (db >= 0 && bd[db] != 1 && bd[db] != od[d])) {
            return 0;
        }
        step_a[d] = (da >= 0 && ad[da] != 1) ? ast[da] : 0;
        step_b[d] = (db >= 0 && bd[db] != 1) ? bst[db] : 0;
        count *= od[d];
    }
    int64_t lda = 0, ldb = 0, inca = 1, incb = 1;
    int la = -1, lb = -1;
    if (an > 1) {
        la = np_blas_layout(m, k, ast[an - 2], ast[an - 1], &lda);
        if (la < 0) { return 0; }
    } else if (k > 1) {
        inca = ast[0];
        if (inca < 1) { return 0; }
    }
    if (bn > 1) {
        lb = np_blas_layout(k, n, bst[bn - 2], bst[bn - 1], &ldb);
        if (lb < 0) { return 0; }
    } else if (k > 1) {
        incb = bst[0];
        if (incb < 1) { return 0; }
    }
    if (count > 1 && an > 2 && la == 0) {
        /* a stack of row-major matrices laid one after the other, times one matrix or
           vector: one product of count * m rows (one BLAS call, one thread fork) */
        int one = 1;
        int64_t next = m * lda;
        for (int d = nb - 1; d >= 0 && one; d--) {
            one = step_b[d] == 0 && step_a[d] == next;
            next *= od[d];
        }
        if (one) {
            m *= count;
            count = 1;
        }
    }
    const char *pa = PyArray_BYTES(a), *pb = PyArray_BYTES(b);
    char *pc = PyArray_BYTES(out);
    const int threads = np_blas_threads_enter((double)count * (double)m * (double)n * (double)k);
    NP_FP_CLEAR();
    for (int64_t t = 0; t < count; t++) {
        int64_t oa = 0, ob = 0, rest = t;
        for (int d = nb - 1; d >= 0; d--) {
            int64_t i = rest % od[d];
            rest /= od[d];
            oa += i * step_a[d];
            ob += i * step_b[d];
        }
        np_blas_product(type, an, bn, la, lb, m, n, k, pa + oa * item, lda, inca,
                        pb + ob * item, ldb, incb, pc + t * m * n * item);
    }
    np_blas_threads_exit(threads);
    if (NP_FP_TEST()) {
        NP_FP_CLEAR();
        return 0;
    }
    return 1;
}
"""


def blas_operands(step: ExternCall, buffers: dict[str, Buffer]) -> tuple[str, str] | None:
    """The two operand buffers of an extern product BLAS may compute, or None.

    Compile-time conditions only (float32 or float64 throughout, arrays of at least one
    dim, not both vectors); strides and alignment are checked per call in C.

        >>> blas_operands(step, buffers)  # doctest: +SKIP
        ('A', 'x')
    """
    if step.op_name not in BLAS_PRODUCT_OPS or step.kwargs or len(step.args) != 2:
        return None
    if not all(isinstance(arg, BufferRef) for arg in step.args):
        return None
    a, b = (buffers[arg.name] for arg in step.args)
    result = buffers[step.buffer]
    if result.dtype not in _BLAS_DTYPES or a.dtype != result.dtype or b.dtype != result.dtype:
        return None
    if "scalar" in (a.kind, b.kind) or not a.shape or not b.shape:
        return None
    if len(a.shape) == 1 and len(b.shape) == 1:
        return None
    if step.op_name == "dot" and max(len(a.shape), len(b.shape)) > 2:
        return None
    return (a.name, b.name)
