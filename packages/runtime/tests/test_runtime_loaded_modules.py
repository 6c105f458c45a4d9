"""The bound on loaded modules holds for modules in use: `make_evictable` lets the memo
unload a module its user still holds, never under a running call, and only on Linux.

Mappings are counted in /proc/self/maps.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

import numpile_runtime as rt
from numpile_runtime import extension_loader

linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="unloads and counts mappings in /proc/self/maps"
)

# A module whose `call(callback)` calls back into Python, then runs code of its own library
# before it returns: while the callback runs, the thread is inside the library.
_SOURCE = """#include <Python.h>
static PyObject *call(PyObject *self, PyObject *callback)
{
    PyObject *done = PyObject_CallNoArgs(callback);
    if (done == NULL) {
        return NULL;
    }
    Py_DECREF(done);
    volatile long total = 0;
    for (long i = 0; i < 1000; i++) {
        total += i;
    }
    return PyLong_FromLong(total + VALUE);
}
static PyMethodDef methods[] = {{"call", call, METH_O, ""}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "NAME", NULL, -1, methods};
PyMODINIT_FUNC PyInit_NAME(void) { return PyModule_Create(&def); }
"""


def _job(name: str, value: int) -> rt.BuildJob:
    source = _SOURCE.replace("NAME", name).replace("VALUE", str(value))
    return rt.BuildJob(source, name, numpy_headers=False)


def _mapped(path: str) -> bool:
    with open("/proc/self/maps", encoding="utf-8") as maps:
        return any(path in line for line in maps)


def _noop() -> None:
    return None


@linux_only
def test_a_module_in_use_is_unloaded_past_the_bound_once_its_user_lets_go() -> None:
    previous = rt.set_max_loaded_modules(2)
    try:
        (module,) = rt.build_many([_job("held", 1)])
        assert isinstance(module, types.ModuleType)
        path = str(module.__file__)
        held = {"call": module.call}  # what a user keeps: a function of the module
        evicted: list[str] = []

        def evict() -> None:
            evicted.append(path)
            held.clear()

        rt.make_evictable(module, evict)
        del module
        assert held["call"](_noop) == 499501
        rt.build_many([_job("other1", 2), _job("other2", 3)])  # `held` is least recent
        assert evicted == [path]
        assert not _mapped(path)
        compiled = rt.counters()["compiler_invocation"]
        (again,) = rt.build_many([_job("held", 1)])  # loads again: from the cache
        assert again.call(_noop) == 499501  # type: ignore[union-attr]
        assert rt.counters()["compiler_invocation"] == compiled
    finally:
        rt.set_max_loaded_modules(previous)


@linux_only
def test_a_module_the_memo_did_not_load_is_never_evicted() -> None:
    path = rt.compile_extension(_job("loose", 4).source, module_name="loose", numpy_headers=False)
    module = rt.load_extension(path, "loose")
    evicted: list[bool] = []
    previous = rt.set_max_loaded_modules(0)
    try:
        rt.make_evictable(module, lambda: evicted.append(True))
        rt.build_many([_job("other3", 5)])
        assert evicted == []
        assert module.call(_noop) == 499504
    finally:
        rt.set_max_loaded_modules(previous)


_INSIDE = """
import os, sys, threading
import numpile_runtime as rt
from numpile_runtime import extension_loader

source = sys.argv[1]
rt.set_max_loaded_modules(4)
job = rt.BuildJob(source.replace("NAME", "inside").replace("VALUE", "7"), "inside",
                  numpy_headers=False)
(module,) = rt.build_many([job])
path = module.__file__
held = {"call": module.call}
rt.make_evictable(module, held.clear)
handle = next(o.handle for o in extension_loader._OPEN.values() if o.path == path)
del module

entered, leave, results = threading.Event(), threading.Event(), []

def block():
    entered.set()
    leave.wait(60)

def run(call):
    results.append(call(block))

thread = threading.Thread(target=run, args=(held["call"],))
thread.start()
assert entered.wait(60)
# The thread is inside the library: evict every module (the bound 0 collects at once).
rt.set_max_loaded_modules(0)
assert held == {}, held
if os.environ.get("UNPROTECTED") == "1":
    extension_loader._close_handle(handle)  # what an unloader without reference counts does
with open("/proc/self/maps") as maps:
    print("mapped while inside:", any(path in line for line in maps), flush=True)
leave.set()
thread.join(60)
assert results == [499507], results
del thread
extension_loader.close_unused()
with open("/proc/self/maps") as maps:
    print("mapped after:", any(path in line for line in maps), flush=True)
"""


@linux_only
@pytest.mark.parametrize("unprotected", [False, True], ids=["loader", "without_refcounts"])
def test_a_module_evicted_while_a_thread_is_inside_it_is_unloaded_after_the_call(
    tmp_path: Path, unprotected: bool
) -> None:
    # A thread's running call holds the module's function, which holds the module: the
    # eviction drops every other reference, and the library is closed after the call
    # returns. Closing it at the eviction (case without_refcounts) kills the process.
    env = {**os.environ, "NUMPILE_CACHE_DIR": str(tmp_path / "child"), "UNPROTECTED": ""}
    if unprotected:
        env["UNPROTECTED"] = "1"
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_INSIDE), _SOURCE],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        check=False,
    )
    if unprotected:
        assert done.returncode in (-signal.SIGSEGV, -signal.SIGBUS), done.stderr
        return
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["mapped while inside: True", "mapped after: False"]


def test_elsewhere_than_linux_modules_in_use_stay_loaded_without_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # macOS and others load through CPython's importer and never unload (dlclose there does
    # not promise to unmap, and CPython keeps single-phase modules): the bound drops modules
    # from the memo but evicts none in use, and loading works.
    source = _job("elsewhere", 6).source
    path = rt.compile_extension(source, module_name="elsewhere", numpy_headers=False)
    jobs = [_job("elsewhere2", 8), _job("elsewhere3", 9)]
    rt.compile_many(jobs)  # built here: a compiler command for macOS differs
    monkeypatch.setattr(sys, "platform", "darwin")
    assert not extension_loader.can_unload()
    module = rt.load_extension(path, "elsewhere")  # CPython's importer
    evicted: list[bool] = []
    previous = rt.set_max_loaded_modules(0)
    try:
        (built,) = rt.build_many(jobs[:1])
        rt.make_evictable(built, lambda: evicted.append(True))
        rt.build_many(jobs[1:])
        rt.set_max_loaded_modules(0)
        assert evicted == []
        assert module.call(_noop) == 499506
        assert built.call(_noop) == 499508  # type: ignore[union-attr]
    finally:
        rt.set_max_loaded_modules(previous)
