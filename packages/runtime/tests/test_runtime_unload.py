"""Kernel libraries are unloaded once nothing uses them, and the memo of loaded modules is
bounded (least recently used dropped first).

Mappings are counted in /proc/self/maps (Linux): CPython's own import machinery never
unloads an extension, so before numpile had its own loader every library stayed mapped.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

import numpile_runtime as rt
from numpile_runtime import extension_loader

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="counts mappings in /proc/self/maps"
)


def _source(name: str, value: int) -> str:
    return f"""#include <Python.h>
static PyObject *value(PyObject *self, PyObject *unused) {{ return PyLong_FromLong({value}); }}
static PyMethodDef methods[] = {{{{"value", value, METH_NOARGS, ""}}, {{NULL, NULL, 0, NULL}}}};
static struct PyModuleDef def = {{PyModuleDef_HEAD_INIT, "{name}", NULL, -1, methods}};
PyMODINIT_FUNC PyInit_{name}(void) {{ return PyModule_Create(&def); }}
"""


def _mappings(folder: Path) -> int:
    with open("/proc/self/maps", encoding="utf-8") as maps:
        return sum(1 for line in maps if str(folder) in line)


def test_five_hundred_libraries_are_unmapped_once_unused(tmp_path: Path) -> None:
    # 500 distinct libraries (copies of one build, each its own dlopen): mapped while their
    # modules live, unmapped after they die and the loader closes them.
    built = rt.compile_extension(_source("unit", 7), module_name="unit", numpy_headers=False)
    folder = tmp_path / "copies"
    folder.mkdir()
    paths = [folder / f"unit{i}.so" for i in range(500)]
    for path in paths:
        shutil.copyfile(built, path)
    modules = [rt.load_extension(path, "unit") for path in paths]
    assert [module.value() for module in modules] == [7] * 500
    per_library = _mappings(folder) / 500
    assert per_library >= 1
    del modules
    assert rt.release_modules() >= 500
    assert _mappings(folder) == 0


def test_a_library_in_use_stays_loaded_and_a_released_one_loads_again(tmp_path: Path) -> None:
    kept, dropped = rt.build_many(
        [
            rt.BuildJob(_source("kept", 1), "kept", numpy_headers=False),
            rt.BuildJob(_source("dropped", 2), "dropped", numpy_headers=False),
        ]
    )
    call = kept.value  # a function holds its module
    del kept, dropped
    rt.release_modules()
    assert call() == 1
    cache_folder = Path(rt.default_cache().root)
    assert _mappings(cache_folder) > 0
    (again,) = rt.build_many([rt.BuildJob(_source("dropped", 2), "dropped", numpy_headers=False)])
    assert again.value() == 2  # from the cache: no compiler run
    assert rt.counters()["compiler_invocation"] == 2


def test_the_memo_holds_at_most_the_bound_least_recently_used_dropped() -> None:
    previous = rt.set_max_loaded_modules(0)
    try:
        extension_loader.close_unused()  # what earlier tests left
        rt.set_max_loaded_modules(2)
        jobs = [rt.BuildJob(_source(f"m{i}", i), f"m{i}", numpy_headers=False) for i in range(5)]
        modules = rt.build_many(jobs)
        assert [m.value() for m in modules] == list(range(5))  # type: ignore[union-attr]
        before = extension_loader.open_library_count()
        del modules
        # The three least recently used are held by nothing: unloaded; the memo keeps two.
        assert extension_loader.close_unused() == 3
        assert extension_loader.open_library_count() == before - 3
        again = rt.build_many(jobs[3:])
        assert [m.value() for m in again] == [3, 4]  # type: ignore[union-attr]
        assert extension_loader.open_library_count() == before - 3
    finally:
        rt.set_max_loaded_modules(previous)


def test_close_unused_collects_garbage_only_while_a_library_is_open(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `numpile.reset()` lands here before every integration test: with no library open, a
    # collection (0.1-0.2 s of a large heap) could free nothing for it.
    collections: list[int] = []
    monkeypatch.setattr(extension_loader.gc, "collect", lambda: collections.append(1) or 0)
    monkeypatch.setattr(extension_loader, "open_library_count", lambda: 0)
    extension_loader.close_unused()
    assert collections == []
    monkeypatch.setattr(extension_loader, "open_library_count", lambda: 2)
    extension_loader.close_unused()
    assert collections == [1]
