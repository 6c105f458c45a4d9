"""numpile's benchmark suite, run with ``python -m benchmarks`` (or ``nox -s bench``).

Plain NumPy functions run under NumPy eager, numpile (inductor backend), numexpr and
``torch.compile``; every ratio is against NumPy measured in the same run, beside the
machine's STREAM-triad bandwidth. See ``benchmarks/README.md``.

Nothing heavy is imported here: the command line sets thread and cache variables first.
"""

import os

# NOTE: benchmarks time the compiled kernels from the first call on (a figure of a first
# call means compile + run), so graphs compile synchronously here unless the caller chose
# (`benchmarks.first_call` passes the option itself to measure both).
os.environ.setdefault("NUMPILE_TIERED", "0")
