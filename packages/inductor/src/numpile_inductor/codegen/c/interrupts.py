"""Ctrl-C inside a long kernel: the C helpers that let a signal stop a kernel between chunks.

A kernel of at least `GIL_RELEASE_WORK` iterations runs without the GIL (the wrapper's
`write_released_gil_call` hands the released thread state to the kernel in `g_released`).
Python runs signal handlers only in the main thread and only with the GIL, so in the main
thread such a kernel runs its outermost loop in chunks of about `CHUNK_WORK` iterations, one
OpenMP region per chunk (`loop.parallel(chunk=...)`), and between chunks `np_poll` takes the
GIL back, runs the pending handlers (`PyErr_CheckSignals`) and releases it again. A handler
that raises (`KeyboardInterrupt`) stops the kernel: it returns `NP_INTERRUPTED`, the wrapper
sees the exception and fails the call (outputs are dropped; chunks already run have written
theirs, inputs are never written unless the program writes them). No Python API is called
without the GIL and none inside an OpenMP region. In other threads, and for kernels that keep
the GIL, a kernel is one chunk (the code of before).

    >>> "np_poll" in INTERRUPT_HELPERS
    True
"""

from __future__ import annotations

__all__ = ["CHUNK_WORK", "INTERRUPT_GLOBALS", "INTERRUPT_HELPERS", "main_thread_init"]

# NOTE: iterations of work per chunk: a few milliseconds of the cheapest elementwise loop
# on one core, and a GIL round trip (well under a microsecond without contention) per chunk.
CHUNK_WORK = 1 << 21

INTERRUPT_HELPERS = f"""
/* Ctrl-C inside long kernels (codegen/c/interrupts.py). */
#define NP_INTERRUPTED (1 << 30)
/* The thread state this thread released for the kernel it runs (NULL: it holds the GIL). */
extern NP_HIDDEN _Thread_local PyThreadState *g_released;
/* Python's main thread, the only one that runs signal handlers (set at module init). */
extern NP_HIDDEN unsigned long g_main_thread;
/* Rows of the outermost loop per chunk, for a kernel of `work` iterations over `rows` rows:
   all of them unless this thread released the GIL and can run signal handlers. */
static int64_t np_chunk_rows(int64_t work, int64_t rows)
{{
    if (g_released == NULL || rows <= 1 || work <= 2 * (int64_t){CHUNK_WORK}
        || PyThread_get_thread_ident() != g_main_thread) {{
        return rows;
    }}
    const int64_t per_row = work / rows;
    return per_row >= (int64_t){CHUNK_WORK} ? 1 : (int64_t){CHUNK_WORK} / per_row;
}}
/* Between chunks: run pending signal handlers with the GIL; 1 when one raised. */
static int np_poll(void)
{{
    PyEval_RestoreThread(g_released);
    const int failed = PyErr_CheckSignals() < 0;
    g_released = PyEval_SaveThread();
    NP_FP_CLEAR();  /* the handlers' own floating-point flags are not the kernel's */
    return failed;
}}
"""

# The definitions of the globals INTERRUPT_HELPERS declares: once per module, in the
# translation unit that holds its entry points (codegen/c/translation_units.py).
INTERRUPT_GLOBALS = """\
NP_HIDDEN _Thread_local PyThreadState *g_released = NULL;
NP_HIDDEN unsigned long g_main_thread = 0;"""


def main_thread_init() -> list[str]:
    """The module-init C lines that record Python's main thread in `g_main_thread`.

    >>> main_thread_init()[0]
    '{'
    """
    return [
        "{",
        '    PyObject *threading = PyImport_ImportModule("threading");',
        "    PyObject *main = threading == NULL ? NULL",
        '        : PyObject_CallMethod(threading, "main_thread", NULL);',
        '    PyObject *ident = main == NULL ? NULL : PyObject_GetAttrString(main, "ident");',
        "    if (ident != NULL) { g_main_thread = PyLong_AsUnsignedLong(ident); }",
        "    Py_XDECREF(ident);",
        "    Py_XDECREF(main);",
        "    Py_XDECREF(threading);",
        "    if (PyErr_Occurred()) { return NULL; }",
        "}",
    ]
