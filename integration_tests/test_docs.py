"""Every Python code block of the documentation runs: the blocks of one page in order, in one
fresh process, as a reader would paste them. A block after the comment
`<!-- docs-test: skip (reason) -->` is skipped, and the reason is reported."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
_BLOCK = re.compile(
    r"(?P<skip><!-- docs-test: skip \((?P<reason>[^)]*)\) -->\n)?```python\n(?P<code>.*?)```",
    re.S,
)


# NOTE: pages whose code is checked by a test of its own (excerpts of the code base, or
# examples run one by one), so they are not run here as one script.
CHECKED_ELSEWHERE = {
    "architecture.md": "packages/api/tests/test_api_docs.py",
    "adding_an_op.md": "packages/api/tests/test_api_docs.py",
    "torch_compile_map.md": "integration_tests/test_docs_map.py",
}
# Pages that need an optional extra: the module that must import.
NEEDS = {"dask.md": "distributed"}


def _pages() -> list[Path]:
    return sorted(
        path
        for path in DOCS.rglob("*.md")
        if "```python" in path.read_text()
        and path.relative_to(DOCS).as_posix() not in CHECKED_ELSEWHERE
    )


def _blocks(page: Path) -> tuple[list[str], list[str]]:
    run, skipped = [], []
    for match in _BLOCK.finditer(page.read_text()):
        if match["skip"]:
            skipped.append(match["reason"])
        else:
            run.append(match["code"])
    return run, skipped


def test_the_pages_with_code_are_found() -> None:
    names = {page.relative_to(DOCS).as_posix() for page in _pages()}
    assert {"tutorials/first-steps.md", "tutorials/graph-breaks.md", "dask.md"} <= names


@pytest.mark.parametrize("page", _pages(), ids=lambda page: page.relative_to(DOCS).as_posix())
def test_code_blocks_run(page: Path, tmp_path: Path) -> None:
    needed = NEEDS.get(page.relative_to(DOCS).as_posix())
    if needed is not None:
        pytest.importorskip(needed)
    run, skipped = _blocks(page)
    if not run:
        pytest.skip(f"every block skipped: {'; '.join(skipped)}")
    script = tmp_path / "page.py"
    # One module, the blocks in page order; `__name__` is not "__main__" so a page's
    # `if __name__ == "__main__":` program (a cluster) is defined but not started.
    script.write_text("\n\n".join(run))
    env = {**os.environ, "PYTHONWARNINGS": "ignore::DeprecationWarning"}
    done = subprocess.run(
        [sys.executable, "-c", f"import runpy; runpy.run_path({str(script)!r})"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"{page.name}:\n{done.stdout}\n{done.stderr}"
