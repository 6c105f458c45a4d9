"""Triton's CUDA driver without PyTorch: device, stream and capability from CuPy.

Triton's CUDA driver asks PyTorch for the current device, the current stream
and the device's compute capability. Triton 3.6 imports torch when it makes
the driver, so without PyTorch installed no kernel launches; later versions
fall back to the device's default stream. numpile's kernels must run on
CuPy's current device and stream, with or without PyTorch in the process.

`CupyDriver` is Triton's CUDA driver (its binary loader and launcher) with
those questions answered by CuPy; `cuda_launch.use_cupy_driver()` makes it
Triton's active driver. This module imports triton and cupy: only a GPU run
imports it.

    >>> CupyDriver().get_current_target()  # doctest: +SKIP
    GPUTarget(backend='cuda', arch=90, warp_size=32)
"""

from __future__ import annotations

import cupy
from triton.backends.nvidia import driver as nvidia


def device_capability(device: int) -> tuple[int, int]:
    """(major, minor) compute capability of CUDA device `device`, as CuPy reports it.

    >>> device_capability(0)  # doctest: +SKIP
    (9, 0)
    """
    return divmod(int(cupy.cuda.Device(device).compute_capability), 10)


def current_stream(device: int | None = None) -> int:
    """The handle of CuPy's current stream (on the current device), where kernels launch.

    >>> current_stream() == cupy.cuda.get_current_stream().ptr  # doctest: +SKIP
    True
    """
    return int(cupy.cuda.get_current_stream().ptr)


class CupyDriver(nvidia.CudaDriver):  # type: ignore[misc]  # triton has no type hints
    """Triton's CUDA driver, following CuPy's current device and stream; never imports torch.

    >>> CupyDriver().get_current_stream(0)  # doctest: +SKIP
    0
    """

    def __init__(self) -> None:
        # Not CudaDriver.__init__: its base asks PyTorch for the four functions set here.
        self.utils = nvidia.CudaUtils()
        self.launcher_cls = nvidia.CudaLauncher
        self.get_current_device = cupy.cuda.runtime.getDevice
        self.set_current_device = cupy.cuda.runtime.setDevice
        self.get_current_stream = current_stream
        self.get_device_capability = device_capability

    @staticmethod
    def is_active() -> bool:
        """Usable whenever CuPy sees a CUDA device (this driver is only made then)."""
        return True
