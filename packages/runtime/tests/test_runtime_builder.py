from __future__ import annotations

import ctypes
import multiprocessing
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import numpile_runtime as rt
from numpile_runtime import builder

# A METH_FASTCALL extension over float64 arrays, in the shape of generated kernels:
# checks in C, then one loop (OpenMP-parallel when the toolchain has OpenMP).
KERNEL_MODULE = r"""
#define PY_SSIZE_T_CLEAN
#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#include <Python.h>
#include <numpy/arrayobject.h>

static int check(PyObject *obj, npy_intp n) {
    if (!PyArray_Check(obj) || PyArray_TYPE((PyArrayObject *)obj) != NPY_DOUBLE
        || !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)obj)
        || PyArray_SIZE((PyArrayObject *)obj) != n) {
        PyErr_SetString(PyExc_TypeError, "expected contiguous float64 arrays of one size");
        return 0;
    }
    return 1;
}

static PyObject *add(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "add(a, b, out) takes 3 arrays");
        return NULL;
    }
    npy_intp n = PyArray_Check(args[2]) ? PyArray_SIZE((PyArrayObject *)args[2]) : -1;
    for (int i = 0; i < 3; i++) if (!check(args[i], n)) return NULL;
    const double *a = PyArray_DATA((PyArrayObject *)args[0]);
    const double *b = PyArray_DATA((PyArrayObject *)args[1]);
    double *out = PyArray_DATA((PyArrayObject *)args[2]);
#pragma omp parallel for if (n > 100000)
    for (npy_intp i = 0; i < n; i++) out[i] = a[i] + b[i];
    Py_RETURN_NONE;
}

static PyObject *muladd(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "muladd(a, b, c, out) takes 4 arrays");
        return NULL;
    }
    npy_intp n = PyArray_Check(args[3]) ? PyArray_SIZE((PyArrayObject *)args[3]) : -1;
    for (int i = 0; i < 4; i++) if (!check(args[i], n)) return NULL;
    const double *a = PyArray_DATA((PyArrayObject *)args[0]);
    const double *b = PyArray_DATA((PyArrayObject *)args[1]);
    const double *c = PyArray_DATA((PyArrayObject *)args[2]);
    double *out = PyArray_DATA((PyArrayObject *)args[3]);
    for (npy_intp i = 0; i < n; i++) out[i] = a[i] * b[i] + c[i];
    Py_RETURN_NONE;
}

static PyObject *max_threads(PyObject *self, PyObject *unused) {
    int threads = 0;
#pragma omp parallel reduction(+:threads)
    threads += 1;
    return PyLong_FromLong(threads);
}

static PyMethodDef methods[] = {
    {"add", (PyCFunction)(void (*)(void))add, METH_FASTCALL, "out = a + b"},
    {"muladd", (PyCFunction)(void (*)(void))muladd, METH_FASTCALL, "out = a * b + c"},
    {"max_threads", max_threads, METH_NOARGS, "threads in a parallel region"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "kernels", NULL, -1, methods};

PyMODINIT_FUNC PyInit_kernels(void) {
    import_array();
    return PyModule_Create(&module);
}
"""

LIBRARY = r"""
#include <stdint.h>
int64_t scale(double *data, int64_t n, double factor) {
    for (int64_t i = 0; i < n; i++) data[i] *= factor;
    return n;
}
"""

CPP_MODULE = r"""
#include <Python.h>
template <typename T> static T twice(T x) { return x + x; }
static PyObject *doubled(PyObject *self, PyObject *arg) {
    return PyLong_FromLong(twice<long>(PyLong_AsLong(arg)));
}
static PyMethodDef methods[] = {{"doubled", doubled, METH_O, ""}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "cppmod", NULL, -1, methods};
PyMODINIT_FUNC PyInit_cppmod(void) { return PyModule_Create(&module); }
"""


def _returns(value: int, tag: str = "") -> str:
    return f"/* {tag} */ int value(void) {{ return {value}; }}\n"


def test_extension_adds_float64_arrays_like_numpy() -> None:
    kernels = rt.build_extension(KERNEL_MODULE, module_name="kernels")
    rng = np.random.default_rng(0)
    for n in (0, 1, 7, 1000, 300_000):
        a, b = rng.standard_normal(n), rng.standard_normal(n)
        out = np.empty(n)
        assert kernels.add(a, b, out) is None
        np.testing.assert_array_equal(out, a + b)
    with pytest.raises(TypeError, match="float64"):
        kernels.add(np.zeros(3, np.float32), np.zeros(3), np.zeros(3))
    with pytest.raises(TypeError, match="3 arrays"):
        kernels.add(np.zeros(3))
    assert "kernels" not in sys.modules


def test_no_fp_contraction_results_match_numpy_bit_for_bit() -> None:
    # With -march=native on an FMA machine, contraction would turn a*b+c into one
    # rounding; -ffp-contract=off keeps NumPy's two roundings.
    kernels = rt.build_extension(KERNEL_MODULE, module_name="kernels")
    rng = np.random.default_rng(1)
    a, b, c = (rng.standard_normal(100_000) for _ in range(3))
    out = np.empty_like(a)
    kernels.muladd(a, b, c, out)
    np.testing.assert_array_equal(out, a * b + c)


def test_openmp_is_on_when_the_toolchain_has_it() -> None:
    kernels = rt.build_extension(KERNEL_MODULE, module_name="kernels")
    threads = kernels.max_threads()
    if rt.find_toolchain().openmp_flags:
        assert threads >= 1
    else:
        assert threads == 1


def test_ctypes_library() -> None:
    library = rt.build_library(LIBRARY)
    library.scale.restype = ctypes.c_int64
    library.scale.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_double]
    data = np.arange(5, dtype=np.float64)
    assert library.scale(data.ctypes.data, data.size, 2.5) == 5
    np.testing.assert_array_equal(data, np.arange(5) * 2.5)


def test_cpp_extension() -> None:
    module = rt.build_extension(CPP_MODULE, module_name="cppmod", language="c++")
    assert module.doubled(21) == 42


def test_same_build_in_one_process_is_memoized() -> None:
    first = rt.build_extension(KERNEL_MODULE, module_name="kernels")
    invocations = rt.counters().get("compiler_invocation", 0)
    assert rt.build_extension(KERNEL_MODULE, module_name="kernels") is first
    assert rt.counters().get("compiler_invocation", 0) == invocations


def test_disk_cache_hit_skips_the_compiler() -> None:
    rt.find_toolchain()
    rt.reset_counters()
    first = rt.compile_library(_returns(1, "hit"))
    assert rt.counters()["compiler_invocation"] == 1
    assert rt.counters()["cache_miss"] == 1
    second = rt.compile_library(_returns(1, "hit"))
    assert second == first
    assert rt.counters()["compiler_invocation"] == 1
    assert rt.counters()["cache_hit"] == 1
    assert rt.compile_time_calls()["cpp_build"] == 1
    assert rt.load_library(second).value() == 1


def test_key_changes_with_source_flags_and_language() -> None:
    base = rt.compile_library(_returns(2, "key"))
    assert rt.compile_library(_returns(2, "key")) == base
    others = {
        rt.compile_library(_returns(3, "key")),
        rt.compile_library(_returns(2, "key"), extra_flags=["-DUNUSED=1"]),
        rt.compile_library(_returns(2, "key"), extra_flags=["-O1"]),
        rt.compile_library(_returns(2, "key"), language="c++"),
    }
    assert base not in others
    assert len(others) == 4


def test_a_build_keyed_by_its_unsplit_text_is_found_whatever_the_cut() -> None:
    # A module cut into as many units as cores were free is found again by a process that
    # cuts it otherwise (one unit here, two there).
    whole = "int one(void) { return 1; }\nint two(void) { return one() + 1; }\n"
    cut = rt.BuildJob(
        "int one(void);\nint two(void) { return one() + 1; }\n",
        more_sources=("int one(void) { return 1; }\n",),
        numpy_headers=False,
        unsplit=whole,
    )
    rt.find_toolchain()
    rt.reset_counters()
    (path,) = rt.compile_many([cut])
    assert rt.counters()["compiler_invocation"] == 3  # two units and the link
    (again,) = rt.compile_many([rt.BuildJob(whole, numpy_headers=False, unsplit=whole)])
    assert again == path
    assert rt.counters()["cache_hit"] == 1
    assert rt.counters()["compiler_invocation"] == 3
    assert rt.load_library(path).two() == 2
    assert rt.compile_many([rt.BuildJob(whole, numpy_headers=False)]) != [path]


def test_key_changes_with_module_name() -> None:
    source = KERNEL_MODULE + "\nPyMODINIT_FUNC PyInit_other(void) { return PyInit_kernels(); }\n"
    one = rt.compile_extension(source, module_name="kernels")
    two = rt.compile_extension(source, module_name="other")
    assert one != two
    assert rt.load_extension(two, "other").__name__ == "kernels"  # the def's name


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty", "sidecar"])
def test_corrupt_cached_object_is_rebuilt(damage: str) -> None:
    source = _returns(5, f"corrupt-{damage}")
    path = rt.compile_library(source)
    raw = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(raw[: len(raw) // 3])
    elif damage == "flip":
        middle = len(raw) // 2
        path.write_bytes(raw[:middle] + bytes([raw[middle] ^ 0xFF]) + raw[middle + 1 :])
    elif damage == "empty":
        path.write_bytes(b"")
    else:
        path.with_name(path.name + ".meta.json").write_text("{not json")
    rt.reset_counters()
    rebuilt = rt.compile_library(source)
    assert rebuilt == path
    assert rt.counters()["compiler_invocation"] == 1
    assert rt.counters()["cache_corrupt"] == 1
    assert rebuilt.read_bytes() == raw
    assert rt.load_library(rebuilt).value() == 5


def test_build_error_names_source_command_and_stderr() -> None:
    source = "int broken(void) { return missing_symbol_xyz; }\n"
    with pytest.raises(rt.BuildError) as info:
        rt.build_library(source)
    err = info.value
    message = str(err)
    assert err.source_path in message
    assert Path(err.source_path).read_text() == source
    assert "missing_symbol_xyz" in err.stderr
    assert "missing_symbol_xyz" in message
    assert "-ffp-contract=off" in err.command
    assert "-ffp-contract=off" in message
    assert "exited with status" in message
    # a failure is not cached: fixing nothing and retrying runs the compiler again
    rt.reset_counters()
    with pytest.raises(rt.BuildError):
        rt.build_library(source)
    assert rt.counters()["compiler_invocation"] == 1


def test_extension_build_error_names_the_module() -> None:
    with pytest.raises(rt.BuildError, match="extension module 'bad'"):
        rt.build_extension("#include <Python.h>\nsyntax error here", module_name="bad")


def test_invalid_arguments() -> None:
    with pytest.raises(ValueError, match="language"):
        rt.build_library(_returns(1), language="fortran")
    with pytest.raises(ValueError, match="C identifier"):
        rt.build_extension(KERNEL_MODULE, module_name="not-valid")
    with pytest.raises(TypeError, match="sequence of flags"):
        rt.build_library(_returns(1), extra_flags="-O2")


def test_build_many_compiles_in_parallel(monkeypatch: pytest.MonkeyPatch) -> None:
    running = 0
    peak = 0
    guard = threading.Lock()
    real_run = builder.run_compiler

    def counting_run(*args: Any, **kwargs: Any) -> Any:
        nonlocal running, peak
        with guard:
            running += 1
            peak = max(peak, running)
        try:
            return real_run(*args, **kwargs)
        finally:
            with guard:
                running -= 1

    monkeypatch.setattr(builder, "run_compiler", counting_run)
    rt.find_toolchain()
    rt.reset_counters()
    jobs = [rt.BuildJob(_returns(i, "many")) for i in range(4)]
    jobs.append(rt.BuildJob(_returns(2, "many")))  # a duplicate compiles once
    jobs.append(rt.BuildJob("/* many */" + KERNEL_MODULE, module_name="kernels"))
    results = rt.build_many(jobs)
    assert [lib.value() for lib in results[:5]] == [0, 1, 2, 3, 2]
    assert results[2] is results[4]
    assert isinstance(results[5], type(sys))
    assert rt.counters()["compiler_invocation"] == 5
    if (multiprocessing.cpu_count() or 1) >= 2:
        assert peak >= 2


def test_build_many_failure_keeps_the_good_builds() -> None:
    good = [rt.BuildJob(_returns(i, "partial")) for i in range(3)]
    bad = rt.BuildJob("int value(void) { return ; }", extra_flags=["-Werror"])
    with pytest.raises(rt.BuildError):
        rt.build_many([good[0], bad, good[1], good[2]])
    rt.reset_counters()
    assert [lib.value() for lib in rt.build_many(good)] == [0, 1, 2]
    assert rt.counters().get("compiler_invocation", 0) == 0


def test_missing_compiler(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CC", "/nonexistent/bin/gcc-404")
    with pytest.raises(rt.CompilerNotFoundError, match="gcc-404"):
        rt.build_library(_returns(9, "no-compiler"))


def _build_in_child(cache_dir: str, barrier: Any, queue: Any) -> None:
    # Runs in a spawned process: build the same kernel as its siblings, at once.
    import numpy as np

    import numpile_runtime as rt

    rt.set_cache_dir(cache_dir)
    rt.find_toolchain()
    rt.reset_counters()
    barrier.wait()
    kernels = rt.build_extension(KERNEL_MODULE, module_name="kernels")
    a = np.arange(10.0)
    out = np.empty_like(a)
    kernels.add(a, a, out)
    queue.put((out.tolist(), rt.counters().get("cache_miss", 0)))


def test_concurrent_processes_build_one_kernel_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Spawned children re-import this module by its pytest name (packages.runtime.tests...),
    # which needs the repository root on the sys.path they inherit.
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[3]))
    context = multiprocessing.get_context("spawn")
    workers = 3
    barrier = context.Barrier(workers)
    queue = context.Queue()
    cache_dir = str(tmp_path / "shared-cache")
    processes = [
        context.Process(target=_build_in_child, args=(cache_dir, barrier, queue))
        for _ in range(workers)
    ]
    for process in processes:
        process.start()
    results = [queue.get(timeout=120) for _ in processes]
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    assert all(out == [2.0 * i for i in range(10)] for out, _ in results)
    assert sum(misses for _, misses in results) == 1


def test_fresh_process_loads_from_disk_without_compiling(fresh_cache: rt.CodeCache) -> None:
    path = rt.compile_extension(KERNEL_MODULE, module_name="kernels")
    script = (
        "import numpy as np, numpile_runtime as rt\n"
        f"rt.set_cache_dir({str(fresh_cache.root)!r})\n"
        "rt.find_toolchain(); rt.reset_counters()\n"
        "k = rt.build_extension(KERNEL_MODULE, module_name='kernels')\n"
        "a = np.ones(4); o = np.empty(4); k.add(a, a, o)\n"
        "c = rt.counters()\n"
        "print(o.sum(), c.get('cache_hit'), c.get('cache_miss', 0), k.__file__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", f"KERNEL_MODULE = {KERNEL_MODULE!r}\n" + script],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stdout.split() == ["8.0", "1", "0", str(path)]
