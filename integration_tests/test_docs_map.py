"""Every `python` block of `docs/torch_compile_map.md` runs, each in a fresh namespace.

The page maps each name and behaviour of the seeds to numpile with an example; its asserts
are the documented outcomes. Blocks after a `<!-- needs: gpu -->` line run only where CuPy
sees a GPU.
"""

from __future__ import annotations

import pathlib
import re
import warnings
from collections.abc import Iterator

import pytest

import numpile
from numpile_capture.trace_rules import scoped_rules
from numpile_runtime import cupy_available

PAGE = pathlib.Path(__file__).parent.parent / "docs" / "torch_compile_map.md"
_BLOCK = re.compile(r"(<!-- needs: gpu -->\n)?```python\n(.*?)```", re.DOTALL)


def _blocks() -> list[tuple[int, bool, str]]:
    text = PAGE.read_text()
    found = []
    for match in _BLOCK.finditer(text):
        line = text.count("\n", 0, match.start(2)) + 1
        found.append((line, match.group(1) is not None, match.group(2)))
    return found


BLOCKS = _blocks()


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    numpile.reset()
    # Registrations a block makes (a polyfill, allowed functions) end with it.
    with scoped_rules(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield
    numpile.set_stance("default")
    numpile.reset()


def test_the_page_has_an_example_for_each_seed_section() -> None:
    assert len(BLOCKS) >= 15
    headings = re.findall(r"^## (.*)$", PAGE.read_text(), re.MULTILINE)
    assert [heading.split(" (")[0] for heading in headings] == [
        "set_stance",
        "torch.compile",
        "FAQ",
        "Compiler APIs",
    ]


@pytest.mark.parametrize(("line", "needs_gpu", "code"), BLOCKS, ids=[f"line{b[0]}" for b in BLOCKS])
def test_example_runs(line: int, needs_gpu: bool, code: str) -> None:
    if needs_gpu and not cupy_available():
        pytest.skip("needs CuPy and a GPU")
    namespace = {"__name__": f"torch_compile_map_line{line}"}
    exec(compile(code, f"{PAGE}:{line}", "exec"), namespace)
