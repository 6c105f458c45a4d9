"""The prelude: the text every generated C module starts with, the same for every graph.

Python's and NumPy's headers, the floating-point flag macros, and the helpers every module
may call (interrupt checks, gathers, threads, vector math, size arithmetic). Because it is
the same for every graph, it is the header a module's translation units include
(`translation_units.split_module` cuts it out between `PRELUDE_BEGIN` and `PRELUDE_END`) and
the runtime precompiles; and because it needs no graph (nor sympy: this module imports
only text), the backend asks for its precompiled copy before capture has made a graph
(`backend.prepare`).

    >>> module_prelude().startswith(PRELUDE_BEGIN)
    True
"""

from __future__ import annotations

import functools

from .gather import GATHER_HELPERS
from .interrupts import INTERRUPT_HELPERS
from .ops import helper_definitions, vector_math_declarations
from .threads import THREAD_HELPERS
from .translation_units import PRELUDE_BEGIN, PRELUDE_END

__all__ = ["SIZE_HELPERS", "module_prelude"]

_PRELUDE = """\
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
/* A module may be built from several translation units (codegen/c/translation_units.py):
   what they share is NP_HIDDEN, global to the library and invisible outside it. NumPy's
   API table too: import_array() in the first unit fills the one every unit reads (each
   unit's header defines it without a value, which -fcommon merges). */
#define NP_HIDDEN __attribute__((visibility("hidden")))
/* Loop functions (LOOP_FUNCTION) prefer 256-bit vectors on x86 GCC, as clang does: on an
   AVX-512 core a 512-bit op in flight turns off port 1's vector unit, and an in-order
   scalar add chain (`s += x[i] * x[i]`, kept in the source's order) fed from a 512-bit
   body waits behind its lane shuffles (1.7x the add latency). Kernels keep 512 bits. */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 8 \
    && (defined(__x86_64__) || defined(__i386__))
#define NP_LOOP_TUNE __attribute__((target("prefer-vector-width=256")))
#else
#define NP_LOOP_TUNE
#endif
#define PY_ARRAY_UNIQUE_SYMBOL np_array_api
#include <numpy/arrayobject.h>
#include <stdint.h>
#include <math.h>
#include <complex.h>
#ifdef _OPENMP
#include <omp.h>
#endif
/* Floating-point exception flags, gathered per kernel and thread: NP_FP_CLEAR() clears
   the calling thread's flags, NP_FP_TEST() reads them (divide, overflow, underflow,
   invalid), NP_FP_RAISE(bit) sets one (integer division by zero, say). */
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define NP_FE_INVALID 0x01
#define NP_FE_DIVBYZERO 0x04
#define NP_FE_OVERFLOW 0x08
#define NP_FE_UNDERFLOW 0x10
#define NP_FP_CLEAR() _mm_setcsr(_mm_getcsr() & ~0x3Fu)
#define NP_FP_TEST() ((int)(_mm_getcsr() & 0x1Du))
#define NP_FP_RAISE(bit) _mm_setcsr(_mm_getcsr() | (bit))
#else
#include <fenv.h>
#define NP_FE_INVALID FE_INVALID
#define NP_FE_DIVBYZERO FE_DIVBYZERO
#define NP_FE_OVERFLOW FE_OVERFLOW
#define NP_FE_UNDERFLOW FE_UNDERFLOW
#define NP_FP_CLEAR() feclearexcept(FE_ALL_EXCEPT)
#define NP_FP_TEST() fetestexcept(FE_INVALID | FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW)
#define NP_FP_RAISE(bit) feraiseexcept(bit)
#endif
/* The flags the kernels of this thread's last call raised (NP_FE_* bits). */
extern NP_HIDDEN _Thread_local int g_fp_flags;
"""

# NOTE: the C definitions of the helpers `index.c_size` spells sizes with (exact int64
# floor division, modulo, max and min).
SIZE_HELPERS = """\
static inline int64_t np_floordiv_i64(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline int64_t np_mod_i64(int64_t a, int64_t b) { return a - b * np_floordiv_i64(a, b); }
static inline int64_t np_max_i64(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t np_min_i64(int64_t a, int64_t b) { return a < b ? a : b; }
"""


@functools.cache
def module_prelude() -> str:
    """The text every generated module starts with, after its header comment: the same for
    every graph, so it is the precompiled header of a module's translation units.

    >>> "#include <Python.h>" in module_prelude()
    True
    """
    return "\n".join(
        [
            PRELUDE_BEGIN,
            _PRELUDE,
            INTERRUPT_HELPERS,
            GATHER_HELPERS,
            THREAD_HELPERS,
            vector_math_declarations(),
            helper_definitions(),
            SIZE_HELPERS,
            PRELUDE_END,
        ]
    )
