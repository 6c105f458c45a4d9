"""pytest setup for capture's tests: the tests folder on sys.path for the modules they share."""

from __future__ import annotations

import sys
from pathlib import Path

# pytest runs with --import-mode=importlib, which does not put test folders on sys.path.
sys.path.insert(0, str(Path(__file__).parent))
