"""A 0-d extern result that no step reads stays the NumPy scalar NumPy returned.

The wrapper checks each extern's result against its metadata; a NumPy scalar of the
result's dtype passes as it is (no 0-d array is made to read its dtype back), and the
returned value is the scalar eager returns.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from numpile_capture import capture_function
from numpile_inductor import compile_graph


def crc8(data: Any) -> Any:
    crc = np.uint8(0xFF)
    for i in range(data.shape[0]):
        crc = crc ^ data[i]
        for _ in range(8):
            crc = (crc >> np.uint8(1)) ^ ((crc & np.uint8(1)) * np.uint8(0x8C))
    return crc ^ np.uint8(0xFF)


@pytest.mark.parametrize("n", [0, 1, 5])
def test_a_returned_scalar_of_a_loop_is_numpys_scalar(n: int) -> None:
    data = np.arange(3, 3 + n, dtype=np.uint8)
    graph = capture_function(crc8, (data,), {}).graph
    compiled = compile_graph(graph)
    assert "np_is_scalar_of(" in compiled.source
    got = compiled.fn(data)
    got = got[0] if isinstance(got, tuple) else got
    want = crc8(data)
    assert type(got) is type(want) and got == want
