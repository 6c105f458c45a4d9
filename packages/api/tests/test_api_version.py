"""Versions: each package's __version__ is its pyproject's, the six move in lockstep, siblings
pin the local copies, and the changelog's newest section is the version (honest versions)."""

from __future__ import annotations

import importlib
import pathlib
import re
import tomllib
from typing import Any

import numpile

ROOT = pathlib.Path(__file__).parents[3]
LAYERS = ("runtime", "guards", "capture", "autograd_aot", "inductor", "api")


def _project(layer: str) -> dict[str, Any]:
    path = ROOT / "packages" / layer / "pyproject.toml"
    project: dict[str, Any] = tomllib.loads(path.read_text())["project"]
    return project


def test_version_matches_pyproject() -> None:
    assert numpile.__version__ == _project("api")["version"]


def test_the_six_packages_share_one_version() -> None:
    versions = {layer: _project(layer)["version"] for layer in LAYERS}
    assert len(set(versions.values())) == 1, versions
    for layer in LAYERS:
        module = importlib.import_module("numpile" if layer == "api" else f"numpile_{layer}")
        assert module.__version__ == versions[layer], (layer, "reinstall the editable package?")


def test_siblings_are_pinned_to_the_local_minor_version() -> None:
    major, minor, _ = str(_project("api")["version"]).split(".")
    wanted = f">={major}.{minor},<{major}.{int(minor) + 1}"
    names = {str(_project(layer)["name"]) for layer in LAYERS}
    for layer in LAYERS:
        project = _project(layer)
        requirements = list(project.get("dependencies", []))
        for extra in project.get("optional-dependencies", {}).values():
            requirements += extra
        for requirement in requirements:
            name = re.split(r"[\[<>=]", requirement)[0]
            if name in names:
                assert requirement.endswith(wanted), (layer, requirement)


def test_the_changelog_s_newest_section_is_the_version() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text()
    newest = re.search(r"^## (\S+)", changelog, re.MULTILINE)
    assert newest is not None
    assert newest.group(1) == _project("api")["version"]


def test_metadata_names_the_license_file_s_license_and_no_guessed_urls() -> None:
    assert (ROOT / "LICENSE").read_text().startswith("BSD 3-Clause License")
    for layer in LAYERS:
        project = _project(layer)
        assert project["license"] == "BSD-3-Clause"
        assert "Typing :: Typed" in project["classifiers"]
        # No public home exists yet: a project URL would point at nothing. The docs
        # travel with the repository (docs/index.md) and each package's README.
        assert "urls" not in project, layer
