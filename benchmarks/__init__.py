"""numpile's benchmark suite, run with ``python -m benchmarks`` (or ``nox -s bench``).

Plain NumPy functions run under NumPy eager, numpile (inductor backend), numexpr and
``torch.compile``; every ratio is against NumPy measured in the same run, beside the
machine's STREAM-triad bandwidth. See ``benchmarks/README.md``.

Nothing heavy is imported here: the command line sets thread and cache variables first.
"""
