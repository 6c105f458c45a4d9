"""The documentation in docs/ stays true: its links lead to files in the repository, the
dotted names it gives import, its excerpts are still in their files, and its examples run."""

from __future__ import annotations

import doctest
import importlib
import pathlib
import re
import tomllib

import pytest

ROOT = pathlib.Path(__file__).parents[3]
DOCS = ROOT / "docs"
PAGES = ("index.md", "architecture.md", "adding_an_op.md")

_LINK = re.compile(r"\]\(([^)\s]+)\)")
_DOTTED_NAME = re.compile(r"`(numpile(?:_[a-z_]+)?(?:\.[A-Za-z_]\w*)+)`")
_EXCERPT = re.compile(r"```python\n# excerpt: (\S+)\n(.*?)```", re.DOTALL)


def _text(page: str) -> str:
    return (DOCS / page).read_text()


def _entry_point_groups() -> set[str]:
    # `numpile.backends` names an entry-point group, not a module.
    groups: set[str] = set()
    for pyproject in ROOT.glob("packages/*/pyproject.toml"):
        project = tomllib.loads(pyproject.read_text())["project"]
        groups.update(project.get("entry-points", {}))
    return groups


@pytest.mark.parametrize("page", PAGES)
def test_links_lead_to_files_in_the_repository(page: str) -> None:
    links = [link for link in _LINK.findall(_text(page)) if "://" not in link]
    assert links, page
    for link in links:
        path = link.split("#")[0]
        if not path:
            continue
        target = (DOCS / path).resolve()
        assert target.is_relative_to(ROOT.resolve()), (page, link)
        assert target.exists(), (page, link)


def test_the_index_points_to_the_architecture_and_nothing_outside_the_repository() -> None:
    index = _text("index.md")
    assert "architecture.md" in index and "adding_an_op.md" in index
    assert "shared/" not in index and "steering" not in index


@pytest.mark.parametrize("page", ["architecture.md", "adding_an_op.md"])
def test_dotted_names_import(page: str) -> None:
    names = sorted(set(_DOTTED_NAME.findall(_text(page))) - _entry_point_groups())
    assert names, page
    for name in names:
        parts = name.split(".")
        for split in range(len(parts), 0, -1):
            try:
                found: object = importlib.import_module(".".join(parts[:split]))
            except ImportError:
                continue
            for attribute in parts[split:]:
                assert hasattr(found, attribute), (page, name)
                found = getattr(found, attribute)
            break
        else:
            pytest.fail(f"{page}: {name} does not import")


def test_excerpts_are_still_in_their_files() -> None:
    excerpts = _EXCERPT.findall(_text("adding_an_op.md"))
    assert len(excerpts) >= 4
    for path, excerpt in excerpts:
        assert excerpt.strip("\n") in (ROOT / path).read_text(), path


@pytest.mark.parametrize("page", ["adding_an_op.md"])
def test_examples_run(page: str) -> None:
    parser = doctest.DocTestParser()
    test = parser.get_doctest(_text(page), {}, page, str(DOCS / page), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    result = runner.run(test)
    assert result.attempted >= 10
    assert result.failed == 0
