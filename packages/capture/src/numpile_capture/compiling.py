"""Whether the code running now is being captured: `is_compiling`.

The tracer folds a call to `is_compiling()` to the constant True, so code can
take a different path when compiled; run eagerly, the call returns False.

    >>> is_compiling()
    False
"""

from __future__ import annotations


def is_compiling() -> bool:
    """False when run eagerly; True inside a captured (compiled) region.

    >>> is_compiling()
    False
    """
    return False
