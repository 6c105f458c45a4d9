"""What the first call of a compiled function imports: only what its capture needs.

A warm start (a new process whose caches hold the compiled code) still captures on its
first call, so every module that call imports counts against it. The machinery of graph
breaks (`break_runner`, `rebuild_steps`) waits for the first break.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

_CHILD = textwrap.dedent(
    """
    import sys
    import numpy as np
    from numpile_capture import compile_function

    def f(x):
        return np.sin(x) * 2.0 + 1.0

    compiled = compile_function(f, backend="eager")
    np.testing.assert_array_equal(compiled(np.ones(3)), f(np.ones(3)))
    print(" ".join(sorted(sys.modules)))

    def g(x):
        print("break")
        return x + 1

    compile_function(g, backend="eager")(np.ones(3))
    print(" ".join(sorted(sys.modules)))
    """
)


def test_a_call_without_a_break_leaves_the_break_machinery_unimported() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD], capture_output=True, text=True, check=True
    )
    lines = done.stdout.splitlines()
    without_break, with_break = set(lines[0].split()), set(lines[-1].split())
    assert "numpile_capture.graph_breaks" in without_break
    assert "numpile_capture.rebuild_steps" not in without_break
    assert "numpile_capture.break_runner" not in without_break
    assert "sympy" not in without_break
    assert {"numpile_capture.rebuild_steps", "numpile_capture.break_runner"} <= with_break
