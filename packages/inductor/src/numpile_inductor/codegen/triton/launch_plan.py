"""A kernel's launch plan: what every launch of it takes, settled when its module is compiled.

A compiled call launches the same kernels call after call with arrays that differ in their
addresses only (guards keep their shapes and dtypes). `TritonRunner` (`runner.py`) makes a
`LaunchPlan` per kernel of its module once, and per launch reads it instead of asking the
kernel and the buffer tables again: which buffers the kernel takes and how (`BufferSlot`:
its strides passed, whether a value found for it is checked, the shape and dtype it is
allocated with), the element counts when they are static, and the launcher. A `ReadyLaunch`
is the rest of a launch, made from the kernel configuration that runs (the module's, one
fitted to run-time sizes, or a tuned one): its grid and constexprs, kept for the next launch
of the same configuration.

    >>> kernel = TritonKernel("k", "", ("a",), ((0,),), (), 64, 0, 64, 1, 4, False)
    >>> buffers = {"a": Buffer("a", (64,), np.dtype("float32"), "input")}
    >>> launcher = rt.TritonLauncher(None, ("ptr", "int", "int"))
    >>> LaunchPlan.of(kernel, buffers, launcher, checked=set(), dynamic=set()).numels
    (64, 0)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

import numpile_runtime as rt

from ...loop_ir import Buffer
from ..memory_order import allocation_axes
from .kernel import TritonKernel


@attrs.frozen
class BufferSlot:
    """How a launch takes one of its kernel's buffers.

    `dims`: the axes whose element strides follow its pointer; `checked`: whether a value
    found for it may need converting (extern results, constants, every buffer under the
    interpreter); `shape`: its static shape, None where run-time sizes decide it; `axes`:
    the memory order of a kernel buffer NumPy lays out other than in C order (its node's
    layout, `allocation_axes`), outermost first, None for C order.

    >>> BufferSlot("buf0", (0,), False, (4,), np.dtype("float32")).shape
    (4,)
    """

    name: str
    dims: tuple[int, ...]
    checked: bool
    shape: tuple[int, ...] | None
    dtype: np.dtype[Any]
    axes: tuple[int, ...] | None = None

    def allocate(self, xp: Any, shape: tuple[int, ...]) -> Any:
        """A fresh array of `shape` in this slot's memory order (NumPy or CuPy `xp`).

        >>> slot = BufferSlot("buf0", (0, 1), False, (2, 3), np.dtype("float64"), (1, 0))
        >>> slot.allocate(np, (2, 3)).strides  # Fortran order
        (8, 16)
        """
        if self.axes is None:
            return xp.empty(shape, dtype=self.dtype)
        permuted = xp.empty(tuple(shape[axis] for axis in self.axes), dtype=self.dtype)
        return permuted.transpose(tuple(int(axis) for axis in np.argsort(self.axes)))


@attrs.frozen
class LaunchPlan:
    """What each launch of `kernel` takes, in the order it takes it (see the module docstring).

    `numels` are the static (xnumel, rnumel) of the kernel (rnumel 0 for a pointwise kernel),
    None where run-time sizes decide them.

    >>> k = TritonKernel("k", "", ("a",), ((0,),), (), 64, 0, 64, 1, 4, False)
    >>> a = Buffer("a", (64,), np.dtype("float32"), "input")
    >>> launcher = rt.TritonLauncher(None, ("ptr", "int", "int"))
    >>> LaunchPlan.of(k, {"a": a}, launcher, checked={"a"}, dynamic=set()).slots[0].checked
    True
    """

    kernel: TritonKernel
    launcher: rt.TritonLauncher
    slots: tuple[BufferSlot, ...]
    numels: tuple[int, int] | None

    @classmethod
    def of(
        cls,
        kernel: TritonKernel,
        buffers: Mapping[str, Buffer],
        launcher: rt.TritonLauncher,
        *,
        checked: set[str],
        dynamic: set[str],
    ) -> LaunchPlan:
        """The plan of `kernel`, whose buffers are described in `buffers`; `checked` and
        `dynamic` name the buffers checked per launch and those with run-time sizes."""
        slots = tuple(
            BufferSlot(
                name,
                dims,
                name in checked,
                None if name in dynamic else tuple(buffers[name].shape),
                buffers[name].dtype,
                _kernel_axes(buffers[name]),
            )
            for name, dims in zip(kernel.buffers, kernel.stride_dims, strict=True)
        )
        rnumel = kernel.rnumel if kernel.is_reduction else 0
        static = isinstance(kernel.xnumel, int) and isinstance(kernel.rnumel, int)
        return cls(kernel, launcher, slots, (kernel.xnumel, rnumel) if static else None)


def _kernel_axes(buf: Buffer) -> tuple[int, ...] | None:
    # A kernel buffer's memory order (its node's layout); other kinds are never allocated.
    return allocation_axes(buf.shape, buf.example_strides) if buf.kind == "kernel" else None


@attrs.frozen
class ReadyLaunch:
    """A kernel configuration's launch at `xnumel` elements: its grid and constexprs.

    `kernel` is the configuration (held, so `is` tells it apart from another), `wide`
    whether the launch takes 64-bit indices.

    >>> k = TritonKernel("k", "", ("a",), ((0,),), (), 1000, 0, 128, 1, 4, False)
    >>> ReadyLaunch(k, False, 1000, 8, {"XBLOCK": 128, "INDEX64": False}).grid
    8
    """

    kernel: TritonKernel
    wide: bool
    xnumel: int
    grid: int
    constexprs: dict[str, Any]
