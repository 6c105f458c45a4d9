"""Extern calls on CuPy arrays: CuPy where it computes what NumPy does, NumPy on the host otherwise.

An extern step (matmul, sort, concatenate, indexing, ...) runs its op's NumPy
implementation; on CuPy arrays NumPy dispatches to CuPy. That is right only
where CuPy implements the call and agrees with NumPy. `device_extern` wraps a
step so that on a GPU:

- NumPy array constants of the step and NumPy arrays it returns (creation ops,
  random draws from NumPy's generator) move to the device;
- integer-array indexing runs on the host: CuPy wraps out-of-bounds indices
  around where NumPy raises `IndexError`; so do `solve` and `inv`, which in
  CuPy return NaNs for a singular matrix where NumPy raises `LinAlgError`;
- a 2-D float matmul calls cuBLAS directly (`numpile_runtime.cublas_matmul`, without
  `cupy.matmul`'s host time around the same cuBLAS call);
- basic indexing by run-time ints (`x[i]`, `x[i, j] = v` in a loop body) that
  CuPy rejects raises NumPy's exception, found by running NumPy on stand-ins of
  the device arrays (their shapes and dtypes, no data): no device-to-host copy,
  so inside a CUDA graph capture the error ends the capture as it is;
- any other call CuPy rejects (a keyword it lacks, a function it does not
  implement, an error with its own wording) runs again in NumPy on host copies,
  so the result, or the exception, is NumPy's; a `numpile.perf_hints` line says
  so once. Mutating steps (barriers) are never run twice. Inside a capture the
  host copy raises instead (a copy to the host cannot be recorded).

    >>> call = device_extern(step)  # doctest: +SKIP
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np

import numpile_runtime as rt

from ...launcher import extern_callable
from ...loop_ir import ExternCall

perf_log = logging.getLogger("numpile.perf_hints")

# Ops whose arguments from this position on are index arrays.
_INDEX_ARRAYS_FROM = {"index": 1, "index_scatter": 2, "index_add": 2}
# Ops CuPy computes without NumPy's errors (singular matrices).
_HOST_OPS = frozenset({"solve", "inv"})
# Ops whose errors depend only on their arrays' shapes and dtypes and on their scalar
# arguments (basic indexing by run-time ints): NumPy raises the same on stand-ins.
_SHAPE_ERROR_OPS = frozenset({"getitem_at", "element_at", "setitem_at"})


def to_device(value: Any) -> Any:
    """`value` with every NumPy array in it (tuples and lists too) copied to the GPU.

    >>> to_device((np.ones(2), 3))  # doctest: +SKIP
    (array([1., 1.]), 3)
    """
    import cupy  # GPU mode only

    if isinstance(value, np.ndarray):
        if cupy.cuda.get_current_stream().is_capturing():
            # A captured upload replays from a staging buffer CuPy reuses: stale data.
            raise RuntimeError("a host array would be uploaded inside a CUDA graph capture")
        return cupy.asarray(value)
    if isinstance(value, tuple | list):
        return type(value)(to_device(v) for v in value)
    return value


def to_host(value: Any) -> Any:
    """`value` with every CuPy array in it (tuples and lists too) copied to the host.

    >>> to_host(3)
    3
    """
    if rt.is_device_array(value):
        import cupy  # GPU mode only

        if cupy.cuda.get_current_stream().is_capturing():
            # CUDA rejects a copy to pageable host memory in a capture and voids the capture.
            raise RuntimeError(
                "a device array would be copied to the host inside a CUDA graph capture"
            )
        return value.get()
    if isinstance(value, tuple | list):
        return type(value)(to_host(v) for v in value)
    return value


def numpy_error(fn: Callable[..., Any], values: tuple[Any, ...]) -> Exception | None:
    """The exception NumPy raises for `fn` on stand-ins of the device arrays among `values`
    (zero-strided NumPy arrays of their shapes and dtypes: no copy), or None where it raises
    none. Exact for calls whose errors depend on shapes, dtypes and scalars only.

    >>> numpy_error(lambda x, i: x[i], (np.zeros((4, 2)), 4))
    IndexError('index 4 is out of bounds for axis 0 with size 4')
    """
    try:
        fn(*(_stand_in(v) if rt.is_device_array(v) else v for v in values))
    except Exception as error:
        return error
    return None


def _stand_in(value: Any) -> np.ndarray[Any, Any]:
    # Writeable so that a store (`setitem_at`) meets NumPy's index checks, not a read-only error.
    zero = np.zeros(1, dtype=value.dtype)
    strides = (0,) * len(value.shape)
    return np.lib.stride_tricks.as_strided(zero, tuple(value.shape), strides, writeable=True)


def _needs_host(step: ExternCall, values: tuple[Any, ...]) -> bool:
    if step.op_name in _HOST_OPS:
        return True
    start = _INDEX_ARRAYS_FROM.get(step.op_name)
    if start is None:
        return False
    return any(rt.is_device_array(v) and v.dtype.kind in "iu" for v in values[start:])


def device_extern(step: ExternCall) -> Callable[..., Any]:
    """The callable a GPU run makes for `step` (see the module docstring).

    >>> device_extern(step)(x_gpu)  # doctest: +SKIP
    """
    fn = extern_callable(_constants_on_device(step))
    warned: list[bool] = []

    def on_host(values: tuple[Any, ...]) -> Any:
        return to_device(fn(*(to_host(v) for v in values)))

    direct_gemm = step.op_name == "matmul" and not step.kwargs and len(step.args) == 2

    def call(*values: Any) -> Any:
        if _needs_host(step, values):
            return on_host(values)
        if direct_gemm and all(rt.is_device_array(v) for v in values):
            product = rt.cublas_matmul(*values)  # None: not 2-D float operands cuBLAS reads
            if product is not None:
                return product
        try:
            return to_device(fn(*values))
        except Exception as error:
            if step.op_name in _SHAPE_ERROR_OPS:
                numpys = numpy_error(fn, values)
                if numpys is not None:
                    raise numpys from None
            if step.is_barrier:
                raise
            if not warned:
                warned.append(True)
                perf_log.info(
                    "extern %s (%s) runs in NumPy on the host: CuPy raised %s: %s",
                    step.op_name,
                    step.node_name,
                    type(error).__name__,
                    error,
                )
            return on_host(values)

    return call


def _constants_on_device(step: ExternCall) -> ExternCall:
    # NumPy array constants in a step's arguments, copied to the device once.
    if not any(isinstance(arg, np.ndarray) for arg in step.args):
        return step
    import attrs

    args = tuple(to_device(arg) if isinstance(arg, np.ndarray) else arg for arg in step.args)
    return attrs.evolve(step, args=args)
