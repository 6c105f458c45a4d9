"""Triton launching: loading generated kernel modules, and the arguments kernels take.

A Triton kernel takes pointer arguments as objects with `data_ptr()` and a
`dtype` (PyTorch tensors in Triton's own examples). numpile has no PyTorch:
`kernel_arg` wraps a CuPy array (GPU launches) or a NumPy array (Triton's CPU
interpreter, `TRITON_INTERPRET=1`) in a small adapter that presents exactly
what the launcher and the interpreter read. Triton and CuPy are optional:
this module imports without them, and `triton_status()` says what is missing.

    >>> import numpy as np
    >>> kernel_arg(np.zeros(3, np.float32)).dtype
    'float32'
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import sys
import types
from typing import Any

import attrs
import numpy as np

from .code_cache import default_cache

log = logging.getLogger("numpile.runtime.cuda")


@attrs.frozen
class TritonStatus:
    """What this process can do with Triton: run kernels on a GPU, interpreted, or not at all.

    `mode` is "gpu", "interpret" or "unavailable"; `reason` says why when not "gpu".

    >>> triton_status().mode in ("gpu", "interpret", "unavailable")
    True
    """

    mode: str
    reason: str = ""


def _has_module(name: str) -> bool:
    if name in sys.modules:
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


_DEVICE_ARRAY_TYPES: set[type] = set()  # CuPy's ndarray classes, once seen


def is_device_array(value: Any) -> bool:
    """Whether `value` is a CuPy ndarray (a GPU array), recognized by type without importing CuPy.

    >>> is_device_array(np.zeros(3))
    False
    """
    cls = type(value)
    if cls in _DEVICE_ARRAY_TYPES:
        return True
    if cls is np.ndarray or cls.__name__ != "ndarray":
        return False
    if cls.__module__.partition(".")[0] != "cupy":
        return False
    _DEVICE_ARRAY_TYPES.add(cls)
    return True


def interpreting() -> bool:
    """Whether Triton kernels run under Triton's CPU interpreter (`TRITON_INTERPRET=1`).

    >>> isinstance(interpreting(), bool)
    True
    """
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def cupy_available() -> bool:
    """Whether CuPy is installed and sees at least one CUDA device.

    >>> isinstance(cupy_available(), bool)
    True
    """
    if not _has_module("cupy"):
        return False
    try:
        import cupy  # optional dependency: only imported when installed

        return int(cupy.cuda.runtime.getDeviceCount()) > 0
    except Exception as error:
        log.debug("cupy present but no usable device: %s", error)
        return False


def triton_status() -> TritonStatus:
    """How Triton kernels can run in this process.

    >>> triton_status().mode != "gpu" or cupy_available()
    True
    """
    if not _has_module("triton"):
        return TritonStatus("unavailable", "triton is not installed (pip install triton)")
    if interpreting():
        return TritonStatus("interpret", "TRITON_INTERPRET=1: kernels run on the CPU")
    if not cupy_available():
        return TritonStatus(
            "unavailable",
            "no CUDA device usable through CuPy (pip install cupy-cuda12x on a GPU machine);"
            " set TRITON_INTERPRET=1 to run kernels on the CPU interpreter",
        )
    return TritonStatus("gpu")


class _HostStorage:
    # What the interpreter asks of a tensor's storage: the memory is already on the host,
    # so "copy to the CPU" and "copy back" are the identity.
    def __init__(self, array: np.ndarray[Any, Any]) -> None:
        self._array = array

    def data_ptr(self) -> int:
        return int(self._array.ctypes.data)

    def cpu(self) -> _HostStorage:
        return self

    def copy_(self, other: Any) -> _HostStorage:
        return self


class KernelArg:
    """An array as a Triton pointer argument: `data_ptr()` and a `dtype` name.

    For NumPy memory it also answers the few storage questions Triton's
    interpreter asks before and after a launch (the memory is the host's).

    >>> KernelArg(np.zeros(2, np.int64)).dtype
    'int64'
    """

    __slots__ = ("_ptr", "array", "dtype")

    def __init__(self, array: Any) -> None:
        self._ptr = data_ptr(array)
        self.array = array
        dtype = array.dtype
        name = _DTYPE_NAMES.get(dtype)
        if name is None:
            name = _DTYPE_NAMES[dtype] = np.dtype(dtype).name
        self.dtype = name

    def data_ptr(self) -> int:
        return self._ptr

    # -- the interpreter's view of a host tensor -------------------------------------------
    def untyped_storage(self) -> _HostStorage:
        return _HostStorage(self.array)

    def storage_offset(self) -> int:
        return 0

    def size(self) -> tuple[int, ...]:
        return tuple(self.array.shape)

    def stride(self) -> tuple[int, ...]:
        return tuple(self.array.strides)

    def new_empty(self, *args: Any, **kwargs: Any) -> KernelArg:
        return self

    def set_(self, *args: Any) -> KernelArg:
        return self

    def copy_(self, other: Any) -> KernelArg:
        return self

    def __repr__(self) -> str:
        return f"KernelArg({self.dtype}{list(self.array.shape)} @ {self._ptr:#x})"


_DTYPE_NAMES: dict[Any, str] = {}  # dtype -> its name (the `name` property is slow)


def data_ptr(array: Any) -> int:
    """The address of a NumPy or CuPy array's first element.

    >>> a = np.zeros(4); data_ptr(a[1:]) - data_ptr(a)
    8
    """
    if type(array) in _DEVICE_ARRAY_TYPES:
        return int(array.data.ptr)
    if isinstance(array, np.ndarray):
        return int(array.ctypes.data)
    data = getattr(array, "data", None)
    ptr = getattr(data, "ptr", None)  # cupy.ndarray.data is a MemoryPointer
    if ptr is None:
        raise TypeError(f"not an array Triton can read: {type(array).__name__}")
    return int(ptr)


def kernel_arg(array: Any) -> KernelArg:
    """Wrap a NumPy or CuPy array as a Triton pointer argument (its first element).

    >>> kernel_arg(np.ones((2, 2))).size()
    (2, 2)
    """
    return KernelArg(array)


def load_triton_module(source: str, *, name_hint: str = "triton_kernels") -> types.ModuleType:
    """Write generated Triton source into the code cache and import it as a module.

    Triton reads a kernel's source from its file, so the module is a real file;
    its name is content-hashed, so equal sources share one file.

        >>> load_triton_module("X = 1\\n").X
        1
    """
    digest = hashlib.sha256(source.encode()).hexdigest()[:24]
    key = f"{digest}_{name_hint}"
    module_name = f"_numpile_triton_{key}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    path = default_cache().write_text(key, ".py", source, kind="triton")
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load generated Triton module {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    log.debug("loaded Triton module %s from %s", module_name, path)
    return module


_driver_installed: list[bool] = []  # once per process


def use_cupy_driver() -> None:
    """Make Triton compile for CuPy's current device and launch on its current stream.

    Installs `triton_driver.CupyDriver` as Triton's active driver, so kernels
    launch without PyTorch (Triton's own CUDA driver asks PyTorch for the device
    and stream) and follow CuPy's current stream, CUDA-graph captures included.
    Process-wide: other Triton kernels in the process launch on CuPy's current
    stream too. Needs triton and cupy; a no-op under the interpreter.

        >>> use_cupy_driver()  # doctest: +SKIP
    """
    if _driver_installed or interpreting():
        return
    from triton.runtime import driver

    from .triton_driver import CupyDriver  # imports triton and cupy

    driver.set_active(CupyDriver())
    _driver_installed.append(True)
    log.debug("Triton's active driver: CupyDriver (CuPy's current device and stream)")
