"""The CBLAS functions of the BLAS NumPy itself loaded, for generated code to call.

NumPy's wheels bundle OpenBLAS built with 64-bit integers (ILP64), its symbols renamed
with a `scipy_` prefix and a `64_` suffix (`scipy_cblas_dgemm64_`). A compiled graph calls
the same library NumPy calls, so a product runs at NumPy's BLAS speed and rounds as
NumPy's does. Only ILP64 symbols are taken (their integer width is known from the name);
where none is found (a NumPy built against another BLAS, another platform) `find_cpu_blas`
gives None and products run as NumPy calls.

    >>> blas = find_cpu_blas()
    >>> blas is None or blas.addresses()[1] != 0
    True
"""

from __future__ import annotations

import ctypes
import functools
import glob
import os
import sys

import attrs
import numpy as np  # importing it loads the BLAS it links, which is searched for below

# Name patterns of ILP64 CBLAS symbols, most specific first: NumPy >= 2 wheels (scipy-openblas),
# then an OpenBLAS built with INTERFACE64 and a symbol suffix.
_SYMBOL_PATTERNS = ("scipy_cblas_{}64_", "cblas_{}64_")
_FUNCTIONS = ("sgemm", "dgemm", "sgemv", "dgemv", "ssyrk", "dsyrk")
# The vector dot products NumPy's `dot`/`matmul` of two float vectors call (`?dot`).
_DOT_FUNCTIONS = ("sdot", "ddot")
# OpenBLAS's thread-count setter and getter, by the same renaming rules (scipy-openblas, an
# ILP64 OpenBLAS with a suffix, a plain OpenBLAS).
_THREAD_SYMBOLS = (
    ("scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_"),
    ("openblas_set_num_threads64_", "openblas_get_num_threads64_"),
    ("openblas_set_num_threads", "openblas_get_num_threads"),
)


@attrs.frozen
class CpuBlas:
    """Addresses of `cblas_?gemm`, `cblas_?gemv` and `cblas_?syrk` (single, then double
    precision; ILP64: every integer argument is an int64) in `library`.

        >>> CpuBlas("libopenblas.so", 1, 2, 3, 4, 5, 6).addresses()
        (1, 2, 3, 4, 5, 6)
    """

    library: str
    sgemm: int
    dgemm: int
    sgemv: int
    dgemv: int
    ssyrk: int
    dsyrk: int
    set_threads: int = 0
    get_threads: int = 0
    sdot: int = 0
    ddot: int = 0

    def addresses(self) -> tuple[int, ...]:
        """The function addresses, in the order generated code reads them."""
        return (self.sgemm, self.dgemm, self.sgemv, self.dgemv, self.ssyrk, self.dsyrk)

    def thread_addresses(self) -> tuple[int, int]:
        """`void set_num_threads(int)` and `int get_num_threads(void)` of the library, or
        zeros where it has none (a BLAS other than OpenBLAS): its thread count per call.

            >>> CpuBlas("libopenblas.so", 1, 2, 3, 4, 5, 6, 7, 8).thread_addresses()
            (7, 8)
        """
        return (self.set_threads, self.get_threads)

    def dot_addresses(self) -> tuple[int, int]:
        """`float cblas_sdot(n, x, incx, y, incy)` and `double cblas_ddot(...)` (ILP64), or
        zeros: what NumPy's dot of two float vectors calls.

            >>> CpuBlas("libopenblas.so", 1, 2, 3, 4, 5, 6, sdot=9, ddot=10).dot_addresses()
            (9, 10)
        """
        return (self.sdot, self.ddot)


def _numpy_blas_libraries() -> list[str]:
    # The libraries NumPy's extension loaded (Linux: /proc/self/maps), else its wheel's
    # bundled folder (numpy.libs on Linux, numpy/.dylibs on macOS).
    found: list[str] = []
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                path = line.split()[-1] if "/" in line else ""
                name = os.path.basename(path).lower()
                if "blas" in name and path not in found:
                    found.append(path)
    except OSError:
        pass
    base = os.path.dirname(os.path.dirname(np.__file__))
    for pattern in ("numpy.libs/*blas*", "numpy/.dylibs/*blas*"):
        for path in sorted(glob.glob(os.path.join(base, pattern))):
            if path not in found:
                found.append(path)
    return found


def _addresses(library: ctypes.CDLL, names: tuple[str, ...] = _FUNCTIONS) -> tuple[int, ...] | None:
    for pattern in _SYMBOL_PATTERNS:
        try:
            functions = [getattr(library, pattern.format(name)) for name in names]
        except AttributeError:
            continue
        return tuple(ctypes.cast(fn, ctypes.c_void_p).value or 0 for fn in functions)
    return None


def _thread_addresses(library: ctypes.CDLL) -> tuple[int, int]:
    for setter, getter in _THREAD_SYMBOLS:
        try:
            functions = (getattr(library, setter), getattr(library, getter))
        except AttributeError:
            continue
        found = tuple(ctypes.cast(fn, ctypes.c_void_p).value or 0 for fn in functions)
        if all(found):
            return found[0], found[1]
    return 0, 0


@functools.cache
def find_cpu_blas() -> CpuBlas | None:
    """The ILP64 CBLAS of the BLAS NumPy loaded, or None (then products run through NumPy).

    `NUMPILE_CPU_BLAS=0` (read on the first call) disables it.

        >>> find_cpu_blas() is None or find_cpu_blas().library.endswith((".so", ".dylib"))
        True
    """
    if os.environ.get("NUMPILE_CPU_BLAS", "1").strip() == "0" or sys.platform == "win32":
        return None
    for path in _numpy_blas_libraries():
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        found = _addresses(library)
        if found is not None and all(found):
            setter, getter = _thread_addresses(library)
            dots = _addresses(library, _DOT_FUNCTIONS) or (0, 0)
            return attrs.evolve(
                CpuBlas(path, *found),
                set_threads=setter,
                get_threads=getter,
                sdot=dots[0],
                ddot=dots[1],
            )
    return None


def cpu_blas_addresses() -> tuple[int, ...]:
    """The addresses `find_cpu_blas` gives, or zeros: what a generated module reads once,
    on its first product.

        >>> len(cpu_blas_addresses())
        6
    """
    blas = find_cpu_blas()
    return (0,) * len(_FUNCTIONS) if blas is None else blas.addresses()


def cpu_blas_thread_addresses() -> tuple[int, int]:
    """`CpuBlas.thread_addresses` of `find_cpu_blas`, or zeros: read once by a generated
    module that sets OpenBLAS's thread count per call (inductor's `codegen/c/blas.py`).

        >>> len(cpu_blas_thread_addresses())
        2
    """
    blas = find_cpu_blas()
    return (0, 0) if blas is None else blas.thread_addresses()


def cpu_blas_dot_addresses() -> tuple[int, int]:
    """`CpuBlas.dot_addresses` of `find_cpu_blas`, or zeros: read once by a generated loop
    function whose body takes the dot product of two float vectors (inductor's
    `codegen/c/loop_reductions.py`), so it rounds as NumPy's own call does.

        >>> len(cpu_blas_dot_addresses())
        2
    """
    blas = find_cpu_blas()
    return (0, 0) if blas is None else blas.dot_addresses()
