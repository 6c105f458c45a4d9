"""A caching allocator for large kernel outputs, as C source for a graph's module.

Memory-bound kernels on fresh outputs spend as long in page faults as in the
kernel: glibc maps every block over 32 MiB anew and the kernel zeroes each
page on first touch (the faults cost more than filling memory that is already
mapped; figures in docs/performance_notes.md). NumPy pays the same
on each temporary. `POOL_SOURCE` defines a NumPy memory handler (NEP 49,
`PyDataMem_Handler`) that keeps freed blocks of at least `MIN_POOLED_BYTES`
in a small free list and hands them out again for the next array of the same
size: a compiled function called in a loop, whose previous result the caller
dropped, writes into memory that is already mapped. Arrays remember their
handler, so a pooled array is freed back into the pool however it dies; its
`base` stays None and it owns its data, as a NumPy result does.

One pool serves the whole process: a small extension module holding it, built
(through the code cache) as idle work on the runtime's build queue, never on a
call's path; every graph module gets its handler capsule at load time, or when the
pool loads if it came first (`hand_pool`: until then it allocates with NumPy's
handler). The wrapper sets the handler around the
allocation of each large output or temporary (`write_pooled_alloc`), so a result
handed to the user is an ordinary NumPy array that owns its data; its block
returns to the pool only when the array (and every view of it) is dead. Around an
extern call (a NumPy function the module calls) it sets the handler only when the
result or an array argument is large (`extern_pool_test`): on small arrays setting it
costs more than the call.
`trim_buffer_pool()` (called by `numpile.reset()`) frees the cached blocks.

    >>> "numpile_pool_handler" in POOL_SOURCE
    True
"""

from __future__ import annotations

import logging
import types
import weakref
from collections.abc import Sequence
from typing import Any

import numpile_runtime as rt
from numpile_runtime import new_lock

from ..common import CodeBuffer

log = logging.getLogger("numpile.inductor.buffer_pool")

# Blocks below this go straight to malloc (glibc reuses them without faults anyway).
MIN_POOLED_BYTES = 1 << 20
# The most the free list of one module keeps: blocks, and bytes in all.
MAX_POOLED_BLOCKS = 8
MAX_POOLED_BYTES = 1 << 30
# An extern call runs with the pool as NumPy's handler only when its result (from the
# graph's meta) or an array argument has this many bytes: its temporaries scale with them,
# and one of MIN_POOLED_BYTES from arrays 16 times smaller is rare. Setting the handler
# around a call costs 0.5-4 us (a context variable set and reset, and NumPy allocating under
# a user handler), more than a small extern's own work.
MIN_EXTERN_POOLED_BYTES = MIN_POOLED_BYTES // 16

POOL_SOURCE = f"""
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>

/* numpile buffer pool: a NEP 49 memory handler with a free list of large blocks.
   Each block starts with a 64-byte header holding its payload size (for realloc). */
#define NP_POOL_HEADER 64
#define NP_POOL_MIN ((size_t){MIN_POOLED_BYTES})
#define NP_POOL_SLOTS {MAX_POOLED_BLOCKS}
#define NP_POOL_MAX_BYTES ((size_t){MAX_POOLED_BYTES})

typedef struct {{
    void *block[NP_POOL_SLOTS];
    size_t size[NP_POOL_SLOTS];
    size_t cached;
    pthread_mutex_t lock;
}} np_pool_t;

static np_pool_t np_pool = {{{{0}}, {{0}}, 0, PTHREAD_MUTEX_INITIALIZER}};

static void *np_pool_fresh(size_t size)
{{
    void *block = NULL;
    if (posix_memalign(&block, NP_POOL_HEADER, NP_POOL_HEADER + size) != 0) {{
        return NULL;
    }}
#ifdef MADV_HUGEPAGE
    if (size >= ((size_t)4 << 20)) {{
        /* as NumPy's own allocator does: transparent huge pages for large arrays */
        uintptr_t start = ((uintptr_t)block + 4095) & ~(uintptr_t)4095;
        uintptr_t end = ((uintptr_t)block + NP_POOL_HEADER + size) & ~(uintptr_t)4095;
        if (end > start) {{
            madvise((void *)start, end - start, MADV_HUGEPAGE);
        }}
    }}
#endif
    *(size_t *)block = size;
    return (char *)block + NP_POOL_HEADER;
}}

static void *np_pool_malloc(void *ctx, size_t size)
{{
    (void)ctx;
    if (size < NP_POOL_MIN) {{
        size_t *block = malloc(NP_POOL_HEADER + (size ? size : 1));
        if (block == NULL) {{
            return NULL;
        }}
        *block = size;
        return (char *)block + NP_POOL_HEADER;
    }}
    pthread_mutex_lock(&np_pool.lock);
    for (int i = 0; i < NP_POOL_SLOTS; i++) {{
        /* exact sizes: a loop allocates the same shapes call after call */
        if (np_pool.block[i] != NULL && np_pool.size[i] == size) {{
            void *block = np_pool.block[i];
            np_pool.block[i] = NULL;
            np_pool.cached -= size;
            pthread_mutex_unlock(&np_pool.lock);
            return (char *)block + NP_POOL_HEADER;
        }}
    }}
    pthread_mutex_unlock(&np_pool.lock);
    return np_pool_fresh(size);
}}

static void np_pool_free(void *ctx, void *ptr, size_t size)
{{
    (void)ctx;
    (void)size;
    if (ptr == NULL) {{
        return;
    }}
    void *block = (char *)ptr - NP_POOL_HEADER;
    size_t own = *(size_t *)block;
    if (own >= NP_POOL_MIN) {{
        pthread_mutex_lock(&np_pool.lock);
        if (np_pool.cached + own <= NP_POOL_MAX_BYTES) {{
            for (int i = 0; i < NP_POOL_SLOTS; i++) {{
                if (np_pool.block[i] == NULL) {{
                    np_pool.block[i] = block;
                    np_pool.size[i] = own;
                    np_pool.cached += own;
                    pthread_mutex_unlock(&np_pool.lock);
                    return;
                }}
            }}
        }}
        pthread_mutex_unlock(&np_pool.lock);
    }}
    free(block);
}}

static void *np_pool_calloc(void *ctx, size_t count, size_t itemsize)
{{
    if (itemsize != 0 && count > ((size_t)-1 - NP_POOL_HEADER) / itemsize) {{
        return NULL;
    }}
    void *ptr = np_pool_malloc(ctx, count * itemsize);
    if (ptr != NULL) {{
        memset(ptr, 0, count * itemsize);
    }}
    return ptr;
}}

static void *np_pool_realloc(void *ctx, void *ptr, size_t size)
{{
    if (ptr == NULL) {{
        return np_pool_malloc(ctx, size);
    }}
    size_t own = *(size_t *)((char *)ptr - NP_POOL_HEADER);
    void *fresh = np_pool_malloc(ctx, size);
    if (fresh == NULL) {{
        return NULL;
    }}
    memcpy(fresh, ptr, own < size ? own : size);
    np_pool_free(ctx, ptr, own);
    return fresh;
}}

static PyDataMem_Handler np_pool_spec = {{
    "numpile_pool",
    1,
    {{NULL, np_pool_malloc, np_pool_calloc, np_pool_realloc, np_pool_free}},
}};

static PyObject *np_pool_capsule = NULL;

/* The pool's handler capsule (borrowed); NULL with an exception set on failure. */
static PyObject *numpile_pool_handler(void)
{{
    if (np_pool_capsule == NULL) {{
        np_pool_capsule = PyCapsule_New(&np_pool_spec, "mem_handler", NULL);
    }}
    return np_pool_capsule;
}}

/* Free every cached block; returns the bytes released. */
static size_t numpile_pool_trim(void)
{{
    size_t released = 0;
    pthread_mutex_lock(&np_pool.lock);
    for (int i = 0; i < NP_POOL_SLOTS; i++) {{
        if (np_pool.block[i] != NULL) {{
            free(np_pool.block[i]);
            released += np_pool.size[i];
            np_pool.block[i] = NULL;
        }}
    }}
    np_pool.cached = 0;
    pthread_mutex_unlock(&np_pool.lock);
    return released;
}}
"""


def write_pooled_alloc(
    code: CodeBuffer,
    target: str,
    alloc_expression: str,
    *,
    handler: str = "numpile_pool_handler()",
) -> None:
    """Write into `code` the C lines that run `target = alloc_expression;` with the pool as
    NumPy's handler.

    Setting the handler can fail (an exception set): `target` is then NULL.

    >>> code = CodeBuffer()
    >>> write_pooled_alloc(code, "o_v1", "PyArray_SimpleNew(1, dims, NPY_DOUBLE)")
    >>> code.lines[1]
    'o_v1 = np_prev == NULL ? NULL : PyArray_SimpleNew(1, dims, NPY_DOUBLE);'
    """
    code.writeline(f"PyObject *np_prev = PyDataMem_SetHandler({handler});")
    code.writeline(f"{target} = np_prev == NULL ? NULL : {alloc_expression};")
    with code.block("if (np_prev != NULL)"):
        code.writeline("Py_XDECREF(PyDataMem_SetHandler(np_prev));")
        code.writeline("Py_DECREF(np_prev);")


def extern_pool_test(arrays: Sequence[str], result_bytes: str | None) -> str:
    """The C condition under which an extern call runs with the pool (`g_pool`) as NumPy's
    handler: the pool is loaded, and the result's bytes (`result_bytes`, None when only the
    call tells them) or one of the `arrays` (PyObject * arguments) reach
    `MIN_EXTERN_POOLED_BYTES`. A result of unknown size always gets the pool.

    >>> extern_pool_test(["o_v0"], None)
    'g_pool != NULL'
    >>> extern_pool_test(["o_v0"], "(npy_intp)8 * 10")  # doctest: +NORMALIZE_WHITESPACE
    'g_pool != NULL && ((npy_intp)8 * 10 >= 65536 || (PyArray_Check(o_v0) &&
    PyArray_NBYTES((PyArrayObject *)o_v0) >= 65536))'
    """
    if result_bytes is None:
        return "g_pool != NULL"
    large = [f"{result_bytes} >= {MIN_EXTERN_POOLED_BYTES}"] + [
        f"(PyArray_Check({a}) && PyArray_NBYTES((PyArrayObject *){a}) >= {MIN_EXTERN_POOLED_BYTES})"
        for a in arrays
    ]
    return f"g_pool != NULL && ({' || '.join(large)})"


_MODULE_NAME = "numpile_buffer_pool"

_MODULE_SOURCE = (
    """\
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <stdint.h>
"""
    + POOL_SOURCE
    + """
static PyObject *handler(PyObject *self, PyObject *unused)
{
    PyObject *capsule = numpile_pool_handler();
    return capsule == NULL ? NULL : Py_NewRef(capsule);
}

static PyObject *trim(PyObject *self, PyObject *unused)
{
    return PyLong_FromSize_t(numpile_pool_trim());
}

static PyObject *cached_bytes(PyObject *self, PyObject *unused)
{
    pthread_mutex_lock(&np_pool.lock);
    size_t cached = np_pool.cached;
    pthread_mutex_unlock(&np_pool.lock);
    return PyLong_FromSize_t(cached);
}

static PyMethodDef methods[] = {
    {"handler", handler, METH_NOARGS, "The pool's NEP 49 handler capsule."},
    {"trim", trim, METH_NOARGS, "Free the cached blocks; the bytes released."},
    {"cached_bytes", cached_bytes, METH_NOARGS, "Bytes held in the free list."},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "numpile_buffer_pool", NULL, -1,
                                       methods};

PyMODINIT_FUNC PyInit_numpile_buffer_pool(void)
{
    import_array();
    return PyModule_Create(&moduledef);
}
"""
)

# NOTE: the process-wide pool module, built on first use; None until then, False when it
# failed to build (allocation then goes through NumPy's own handler).
_POOL: list[Any] = []
_POOL_LOCK = new_lock()
# NOTE: a free list and a mutex around malloc: nothing for -O3 to speed up, and it builds in
# half the compiler time at -O1 (the last -O on the command line wins).
_POOL_FLAGS = ("-O1",)
# NOTE: graph modules loaded before the pool, handed its handler once it loads (weak: a
# module unloaded meanwhile is not kept); under `_HANDS_LOCK`, never held during a build.
_AWAITING: weakref.WeakSet[types.ModuleType] = weakref.WeakSet()
_HANDS_LOCK = new_lock()


def _pool_module() -> Any:
    with _POOL_LOCK:
        if not _POOL:
            try:
                _POOL.append(
                    rt.build_extension(
                        _MODULE_SOURCE, module_name=_MODULE_NAME, extra_flags=_POOL_FLAGS
                    )
                )
            except rt.BuildError as error:  # e.g. no pthread headers: plain allocation
                log.warning("the buffer pool did not build (%s); outputs use malloc", error)
                _POOL.append(None)
        return _POOL[0]


def start_pool_build() -> None:
    """Queue the pool module's build on the runtime's build queue (`rt.queue_build`), as
    idle work (after the builds a first call waits for, its compiler niced), unless it is
    built or queued. No module waits for it: `hand_pool` gives it to them once loaded.

    >>> start_pool_build()
    """
    if not _POOL:
        rt.queue_build("buffer pool", _load_and_hand_out, idle=True)


def hand_pool(module: types.ModuleType) -> None:
    """Give a graph's loaded module the pool's handler (`module.set_pool`): now if the pool
    is loaded, else once it is (its build queued; until then the module allocates with
    NumPy's handler). A first call never waits for the pool's compiler.

    >>> hand_pool(module)  # doctest: +SKIP
    """
    with _HANDS_LOCK:
        loaded = bool(_POOL)
        if not loaded:
            _AWAITING.add(module)
    if loaded:
        module.set_pool(None if _POOL[0] is None else _POOL[0].handler())
    else:
        start_pool_build()


def _load_and_hand_out() -> None:
    found = _pool_module()
    with _HANDS_LOCK:
        waiting = list(_AWAITING)
        _AWAITING.clear()
    if found is not None:
        for module in waiting:
            module.set_pool(found.handler())


def pool_handler() -> Any:
    """The pool's NEP 49 handler capsule, built now if it is not (tests; graph modules get
    it through `hand_pool`); None without one.

    >>> pool_handler() is not None  # doctest: +SKIP
    True
    """
    module = _pool_module()
    return None if module is None else module.handler()


def trim_buffer_pool() -> int:
    """Free every block the buffer pool caches; the bytes released (0 before any compile).

    Arrays still alive keep their memory; it is freed when they die.

    >>> trim_buffer_pool() >= 0
    True
    """
    module = _POOL[0] if _POOL else None
    return 0 if module is None else int(module.trim())


def buffer_pool_bytes() -> int:
    """Bytes the buffer pool holds for reuse (blocks of dead arrays).

    >>> buffer_pool_bytes() >= 0
    True
    """
    module = _POOL[0] if _POOL else None
    return 0 if module is None else int(module.cached_bytes())
