"""The canonical op set, one module per family; importing this registers them all.

Every op is also an attribute of this package, so other layers can write
`ops.sin` in their tables (`@register_lowering(ops.sin, ops.cos)`).

    >>> from numpile_capture import ops
    >>> ops.sin.kind
    <OpKind.POINTWISE: 'pointwise'>
"""

from __future__ import annotations

from ..op import Op, get_op
from . import creation as creation
from . import extern as extern
from . import indexing as indexing
from . import join as join
from . import linalg as linalg
from . import loop_values as loop_values
from . import math_calls as math_calls
from . import mutation as mutation
from . import ordering as ordering
from . import pointwise as pointwise
from . import reduction as reduction
from . import scatter as scatter
from . import special as special
from . import ufunc_at as ufunc_at
from . import unbacked_broadcast as unbacked_broadcast
from . import view as view

__all__ = [
    "creation",
    "extern",
    "indexing",
    "join",
    "linalg",
    "loop_values",
    "math_calls",
    "mutation",
    "ordering",
    "pointwise",
    "reduction",
    "scatter",
    "special",
    "ufunc_at",
    "unbacked_broadcast",
    "view",
]


from .. import control_flow as control_flow


def __getattr__(name: str) -> Op:
    # `ops.<name>` reads the registry, so every registered op is reachable by name.
    try:
        return get_op(name)
    except KeyError:
        raise AttributeError(f"no op named {name!r}") from None
