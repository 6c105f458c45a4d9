"""pytest setup for capture's tests: the tests folder on sys.path for the modules they share,
and `fresh_dispatch`, the reset a test file asks for with
`pytestmark = pytest.mark.usefixtures("fresh_dispatch")`."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from numpile_capture import reset

# pytest runs with --import-mode=importlib, which does not put test folders on sys.path.
sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def fresh_dispatch() -> Iterator[None]:
    """No compiled entries, recompile counts or automatic-dynamic memory from other tests."""
    reset()
    yield
    reset()
