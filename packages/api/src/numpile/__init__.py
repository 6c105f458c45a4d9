"""numpile: a just-in-time compiler for plain NumPy programs.

The public surface, re-exported from the layers below (nothing lives here):

    >>> import numpy as np, numpile
    >>> @numpile.compile
    ... def f(x):
    ...     return np.sin(x) * 2 + 1
    >>> f(np.zeros(3))  # doctest: +SKIP
    array([1., 1., 1.])
"""

from __future__ import annotations

from numpile_autograd_aot import grad as grad
from numpile_autograd_aot import value_and_grad as value_and_grad
from numpile_autograd_aot import vjp as vjp
from numpile_capture import Unsupported as Unsupported
from numpile_capture import compile_function as compile
from numpile_capture import config as config
from numpile_capture import explain as explain
from numpile_capture import is_compiling as is_compiling
from numpile_capture import list_backends as list_backends
from numpile_capture import register_backend as register_backend
from numpile_capture import reset as reset
from numpile_capture import set_stance as set_stance

__version__ = "0.1.0"

# The full stack compiles with the inductor by default; numpile_capture alone knows only "eager".
config.default_backend = "inductor"

__all__ = [
    "Unsupported",
    "compile",
    "config",
    "explain",
    "grad",
    "is_compiling",
    "list_backends",
    "register_backend",
    "reset",
    "set_stance",
    "value_and_grad",
    "vjp",
]
