"""NamedTuple inputs: a field read by name is the item at its position (a graph input)."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from numpile_capture import capture_function


class Params(NamedTuple):
    w: Any
    b: Any


def test_a_field_of_a_namedtuple_input_is_a_graph_input() -> None:
    params = Params(np.ones(3), np.zeros(3))
    result = capture_function(lambda p, x: (x * p.w + p.b,), (params, np.ones(3)), {})
    names = [source.name for source in result.input_sources]
    assert "L['p'][0]" in names
    assert "L['p'][1]" in names
    assert "unsupported" not in str(result.graph)
