"""Side benchmarks picked by name with ``--only``: guards, dynamic, scalars.

Each runs and prints its own report when selected, and leaves the other patterns to the
main suite.

    >>> is_selected("dynamic", None), is_selected("dynamic", ["dyn*"]), is_selected("dynamic", [])
    (True, True, False)
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable


def is_selected(name: str, patterns: list[str] | None) -> bool:
    """Whether ``--only`` patterns select benchmark `name` (None: the full suite does; an
    empty list is what an earlier side benchmark left: nothing)."""
    return patterns is None or any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def run_if_selected(
    name: str, patterns: list[str] | None, report: Callable[[], str]
) -> list[str] | None:
    """Print `report()` when `name` is selected; the patterns left for the main suite.

    >>> run_if_selected("scalars", ["chain*"], lambda: "unused")
    ['chain*']
    """
    if not is_selected(name, patterns):
        return patterns
    print(report(), flush=True)
    if patterns is None:
        return None
    return [pattern for pattern in patterns if not fnmatch.fnmatchcase(name, pattern)]
