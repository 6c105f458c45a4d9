"""pytest setup for the api tests: compiled calls run the compiled kernels from the first call."""

from __future__ import annotations

import os

# Tests compare compiled kernels with NumPy: no call may run NumPy op by op while the build
# runs in the background (tiering, the default).
os.environ["NUMPILE_TIERED"] = "0"
