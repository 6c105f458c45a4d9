"""numpile_inductor: lowering to loop IR, fusion, and C/OpenMP code generation.

>>> from numpile_inductor import inductor
>>> fn = inductor(graph, example_inputs)  # doctest: +SKIP
"""

from .backend import CompiledGraph as CompiledGraph
from .backend import compile_graph as compile_graph
from .backend import inductor as inductor
from .config import InductorConfig as InductorConfig
from .config import list_options as list_options
from .decompositions import DECOMPOSITIONS as DECOMPOSITIONS
from .lowering import LOWERINGS as LOWERINGS
from .lowering import lower_graph as lower_graph
from .lowering import register_lowering as register_lowering
from .scheduler import schedule as schedule

__version__ = "0.1.0"

__all__ = [
    "DECOMPOSITIONS",
    "LOWERINGS",
    "CompiledGraph",
    "InductorConfig",
    "compile_graph",
    "inductor",
    "list_options",
    "lower_graph",
    "register_lowering",
    "schedule",
]
