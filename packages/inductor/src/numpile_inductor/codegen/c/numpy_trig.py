"""NumPy's float32 sine and cosine, spelled in C.

Where NumPy's SIMD loop computes float32 `sin`/`cos` (x86 with AVX2 and FMA3 or AVX-512, Arm
with NEON: numpy/_core/src/umath/loops_trigonometric.dispatch.cpp), its values are not
libm's `sinf`/`cosf`: a Cody-Waite reduction by pi/2 and minimax polynomials in fused
multiply-adds, libm only past the reduction's range. They differ from libm in the last bit
for about one float in six, enough to change a loop that iterates `x = np.cos(x)` until it
stops moving. `NP_SINCOS_F32` is that computation, one element at a time; the C op table
calls it wherever `numpy_computes_sincos_f32()` says NumPy does (checked bit for bit
against NumPy on 25 million floats, NaN, infinities, signed zeros and both range limits).

    >>> "np_sincos_f32" in NP_SINCOS_F32
    True
"""

from __future__ import annotations

import functools
import importlib
import platform

__all__ = ["NP_SINCOS_F32", "numpy_computes_sincos_f32", "sincos_f32_call"]

NP_SINCOS_F32 = r"""
/* NumPy's float32 sin (want_cos 0) and cos (1): see codegen/c/numpy_trig.py. Branch-free,
   so that GCC vectorizes it (libm's part through libmvec): every element takes libm's value
   and the polynomial's (of 0 past the range, as NumPy, so that no flag is raised there),
   and keeps the one NumPy takes. NaN is libm's, as in NumPy. */
static inline float np_sincos_f32(float x, int want_cos)
{
    float limit = want_cos ? 71476.0625f : 117435.992f;
    float big = want_cos ? cosf(x) : sinf(x);
    int small = fabsf(x) <= limit;
    float xr = small ? x : 0.0f;
    float q = fmaf(xr, 0x1.45f306p-1f, 0x1.800000p+23f) - 0x1.800000p+23f;
    float r = fmaf(q, -0x1.921fb0p+00f, xr);
    r = fmaf(q, -0x1.5110b4p-22f, r);
    r = fmaf(q, -0x1.846988p-48f, r);
    float r2 = r * r;
    float c = fmaf(0x1.98e616p-16f, r2, -0x1.6c06dcp-10f);
    c = fmaf(c, r2, 0x1.55553cp-05f);
    c = fmaf(c, r2, -0x1.000000p-01f);
    c = fmaf(c, r2, 0x1.000000p+00f);
    float s = fmaf(0x1.7d3bbcp-19f, r2, -0x1.a06bbap-13f);
    s = fmaf(s, r2, 0x1.11119ap-07f);
    s = fmaf(s, r2, -0x1.555556p-03f);
    s = fmaf(s, r2, 0.0f);
    s = fmaf(s, r, r);
    int quadrant = (int)q + want_cos; /* q is a whole number already */
    float out = (quadrant & 1) == 0 ? s : c;
    out = (quadrant & 2) == 2 ? 0.0f - out : out;
    return small ? out : big;
}
"""


@functools.cache
def numpy_computes_sincos_f32() -> bool:
    """Whether this machine's NumPy computes float32 sin and cos with its SIMD loop (the
    polynomials of `NP_SINCOS_F32`) rather than with libm.

    >>> isinstance(numpy_computes_sincos_f32(), bool)
    True
    """
    try:
        umath = importlib.import_module("numpy._core._multiarray_umath")
    except ImportError:  # NumPy 1.x
        umath = importlib.import_module("numpy.core._multiarray_umath")
    features: dict[str, bool] = getattr(umath, "__cpu_features__", {})
    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64", "i386", "i686"):
        avx2_fma = bool(features.get("AVX2")) and bool(features.get("FMA3"))
        return avx2_fma or bool(features.get("AVX512_SKX"))
    if machine in ("aarch64", "arm64"):
        return bool(features.get("ASIMD"))
    return False


def sincos_f32_call(name: str, arg: str) -> str:
    """The C expression of float32 `name` ("sin" or "cos") of `arg`, as NumPy computes it.

    >>> sincos_f32_call("cos", "x") in ("np_sincos_f32(x, 1)", "cosf(x)")
    True
    """
    if numpy_computes_sincos_f32():
        return f"np_sincos_f32({arg}, {int(name == 'cos')})"
    return f"{name}f({arg})"
