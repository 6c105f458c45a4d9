"""What tests of compiled code check, shared by every layer's tests: a result that is
eager's (types, dtypes and values, item by item), and the ops a graph holds.

>>> assert_same_as_eager((1, np.float64(2.0)), (1, np.float64(2.0)))
>>> assert_same_as_eager(np.float32(1.0), np.float64(1.0))
Traceback (most recent call last):
...
AssertionError: got a float32, eager gave a float64
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .graph import Graph

__all__ = ["assert_same_as_eager", "op_names"]


def assert_same_as_eager(got: Any, want: Any) -> None:
    """Assert that `got` is what eager gave (`want`): the same type and dtype and equal
    values (NaN equal to NaN), item by item through tuples and lists. Raises AssertionError
    (also under `python -O`)."""
    if type(got) is not type(want):
        raise AssertionError(f"got a {type(got).__name__}, eager gave a {type(want).__name__}")
    if isinstance(want, tuple | list):
        if len(got) != len(want):
            raise AssertionError(f"got {len(got)} items, eager gave {len(want)}")
        for got_item, want_item in zip(got, want, strict=True):
            assert_same_as_eager(got_item, want_item)
        return
    got_array, want_array = np.asarray(got), np.asarray(want)
    if got_array.dtype != want_array.dtype:
        raise AssertionError(f"got dtype {got_array.dtype}, eager gave {want_array.dtype}")
    np.testing.assert_array_equal(got_array, want_array)


def op_names(graph: Graph) -> list[str]:
    """The names of the ops of `graph`'s nodes, in order (inputs and constants left out).

    >>> op_names(Graph())
    []
    """
    return [node.op.name for node in graph.nodes if node.op is not None]
