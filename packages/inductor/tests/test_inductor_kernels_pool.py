"""The buffer pool: large blocks come back for the next array of the same size."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

import numpile_runtime as rt
from numpile_inductor.codegen.c.buffer_pool import (
    MIN_POOLED_BYTES,
    POOL_SOURCE,
    write_pooled_alloc,
)
from numpile_inductor.codegen.common import CodeBuffer

_MODULE = "numpile_test_buffer_pool"

_TEMPLATE = """
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <stdint.h>
POOL
static PyObject *alloc(PyObject *self, PyObject *arg)
{
    npy_intp dims[1] = {(npy_intp)PyLong_AsSsize_t(arg)};
    PyObject *out = NULL;
    if (PyErr_Occurred()) { return NULL; }
    {
LINES
    }
    return out;
}
static PyObject *trim(PyObject *self, PyObject *unused)
{
    return PyLong_FromSize_t(numpile_pool_trim());
}
static PyMethodDef methods[] = {
    {"alloc", alloc, METH_O, "A pooled float64 array."},
    {"trim", trim, METH_NOARGS, "Release the cached blocks."},
    {NULL, NULL, 0, NULL}
};
static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "NAME", NULL, -1, methods};
PyMODINIT_FUNC PyInit_NAME(void)
{
    import_array();
    return PyModule_Create(&moduledef);
}
"""


@pytest.fixture(scope="module")
def pool() -> Any:
    code = CodeBuffer(level=2)
    write_pooled_alloc(code, "out", "PyArray_SimpleNew(1, dims, NPY_DOUBLE)")
    source = (
        _TEMPLATE.replace("POOL", POOL_SOURCE)
        .replace("LINES", code.getvalue())
        .replace("NAME", _MODULE)
    )
    try:
        return rt.build_extension(source, module_name=_MODULE)
    except rt.CompilerNotFoundError:
        pytest.skip("no C compiler")


def _handler_name(*array: np.ndarray) -> str:
    from numpy._core.multiarray import get_handler_name  # NumPy 2's home of the NEP 49 query

    return str(get_handler_name(*array))


def _address(array: np.ndarray) -> int:
    return int(array.__array_interface__["data"][0])


def test_a_dropped_block_is_handed_out_again(pool: Any) -> None:
    n = 2 * MIN_POOLED_BYTES // 8
    first = pool.alloc(n)
    address = _address(first)
    first[:] = 3.0
    del first
    second = pool.alloc(n)
    assert _address(second) == address
    assert second.flags.owndata and second.base is None and second.flags.c_contiguous
    other = pool.alloc(n)  # the block is taken: a fresh one
    assert _address(other) != address
    assert pool.trim() == 0
    del second, other
    assert pool.trim() == 2 * n * 8


def test_small_arrays_and_the_default_handler_are_untouched(pool: Any) -> None:
    small = pool.alloc(10)
    small[:] = np.arange(10)
    assert small.sum() == 45
    del small
    assert pool.trim() == 0
    # The handler is restored after each allocation: NumPy's own arrays are not pooled.
    assert _handler_name() == "default_allocator"
    plain = np.empty(MIN_POOLED_BYTES)
    assert _handler_name(plain) == "default_allocator"
    pooled = pool.alloc(MIN_POOLED_BYTES // 8)
    assert _handler_name(pooled) == "numpile_pool"


def test_resize_reallocates_through_the_pool_and_keeps_values(pool: Any) -> None:
    n = MIN_POOLED_BYTES // 8
    array = pool.alloc(n)
    array[:] = np.arange(n)
    array.resize(3 * n, refcheck=False)
    np.testing.assert_array_equal(array[:n], np.arange(n))
    assert (array[n:] == 0).all()
    array.resize(5, refcheck=False)
    np.testing.assert_array_equal(array, np.arange(5))
    del array
    pool.trim()


def test_the_pool_is_bounded(pool: Any) -> None:
    n = MIN_POOLED_BYTES // 8
    arrays = [pool.alloc(n) for _ in range(12)]
    del arrays
    assert pool.trim() == 8 * n * 8  # eight slots


@pytest.mark.skipif(sys.platform != "linux", reason="glibc mmap thresholds")
def test_pooled_arrays_behave_as_numpy_results(pool: Any) -> None:
    n = 3 * MIN_POOLED_BYTES // 8
    array = pool.alloc(n)
    array[:] = 1.5
    view = array[::2]
    del array
    assert view.base is not None and view.sum() == 1.5 * len(view)
    copy = view.copy()
    del view
    assert copy.sum() == 1.5 * len(copy)
    pool.trim()
