"""The package's __version__ is the one its pyproject.toml declares (honest versions)."""

from __future__ import annotations

import pathlib
import tomllib

import numpile_capture


def test_version_matches_pyproject() -> None:
    pyproject = pathlib.Path(__file__).parents[1] / "pyproject.toml"
    declared = tomllib.loads(pyproject.read_text())["project"]["version"]
    assert numpile_capture.__version__ == declared
