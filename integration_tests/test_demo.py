"""The README's demo command runs: `docs/demo.py` compiles its functions and checks them."""

from __future__ import annotations

import pathlib
import subprocess
import sys

DEMO = pathlib.Path(__file__).resolve().parents[1] / "docs" / "demo.py"


def test_the_demo_runs_and_matches_numpy() -> None:
    done = subprocess.run(
        [sys.executable, str(DEMO)], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "max |numpile - NumPy|" in done.stdout
