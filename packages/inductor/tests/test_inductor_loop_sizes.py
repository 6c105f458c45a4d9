"""Loop bodies with symbolic sizes: a body input renamed in the program (`in_v0`, because a
node of the body is also named `v0`) still binds the size symbols it carries."""

from __future__ import annotations

from typing import Any

import numpy as np

from numpile_capture import capture_function
from numpile_capture.dynamic_shapes import DynamicPolicy, capturing_with
from numpile_inductor import inductor


def floyd_warshall(D: Any) -> Any:
    D = D.copy()
    n = D.shape[0]
    for k in range(n):
        for i in range(n):
            D[i, :] = np.minimum(D[i, :], D[i, k] + D[k, :])
    return D


def test_symbolic_body_input_renamed_in_the_program_binds_its_size() -> None:
    rng = np.random.default_rng(3)
    D = rng.uniform(1.0, 10.0, (6, 6))
    with capturing_with(DynamicPolicy(True)):
        graph = capture_function(floyd_warshall, (D,), {}).graph
    assert "float64[s0, s0]" in str(graph)
    fn = inductor(graph, [D])
    for n in (6, 9, 2):
        other = rng.uniform(1.0, 10.0, (n, n))
        np.testing.assert_array_equal(fn(other), floyd_warshall(other))
