"""CRC programs the inductor's loop tests compile: bit-by-bit, branch-free CRCs.

A CRC of any integer width (`crc`: the register after the last item, as the known-bits
rewrite sees it) and zlib's CRC-32 (`crc32`). Each is a plain NumPy function that
numpile compiles and eager Python runs to compare. `benchmarks/loops.py` keeps its own
crc32: the benchmarks never import tests.

    >>> hex(int(crc32(np.frombuffer(b"123456789", np.uint8).astype(np.uint32))))
    '0xcbf43926'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def crc(dtype: Any, poly: int, init: int) -> Callable[[Any], Any]:
    """The CRC with polynomial `poly` (reflected) and initial register `init` over a 1-d
    array of `dtype` holding one byte per item: the register after the last one.

    >>> hex(int(crc(np.uint8, 0x8C, 0x00)(np.array([1], np.uint8))))  # CRC-8/MAXIM
    '0x5e'
    """

    def crc_register(data: Any) -> Any:
        c = dtype(init)
        p = dtype(poly)
        one = dtype(1)
        for i in range(data.shape[0]):
            c = c ^ data[i]
            for _ in range(8):
                c = (c >> one) ^ ((c & one) * p)
        return c

    return crc_register


_CRC32_REGISTER = crc(np.uint32, 0xEDB88320, 0xFFFFFFFF)


def crc32(data: Any) -> Any:
    """zlib's CRC-32 (`zlib.crc32`) of the bytes held in a uint32 array, one per item."""
    return _CRC32_REGISTER(data) ^ np.uint32(0xFFFFFFFF)
