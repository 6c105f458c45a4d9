"""The README's demo command runs: `docs/demo.py` compiles its functions and checks them."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

DEMO = pathlib.Path(__file__).resolve().parents[1] / "docs" / "demo.py"


def test_the_demo_runs_and_matches_numpy() -> None:
    # As `nox -s demo` runs it (tiered: the conftest's NUMPILE_TIERED=0 is not the user's
    # setting), with fewer timing repeats.
    env = {key: value for key, value in os.environ.items() if key != "NUMPILE_TIERED"}
    env["NUMPILE_DEMO_QUICK"] = "1"
    done = subprocess.run(
        [sys.executable, str(DEMO)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert done.stdout.count("max |numpile - NumPy|") == 6
    # The loop at ten times the trip count: no capture, no recompile.
    assert re.search(r"100 sweeps of \d+ rows: .* 0 capture\(s\), 0 recompile\(s\)", done.stdout)
