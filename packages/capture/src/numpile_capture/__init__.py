"""numpile_capture: the graph IR, the canonical op set, and bytecode capture."""

from .graph import Graph as Graph
from .graph import Node as Node
from .interpreter import run_graph as run_graph
from .meta import ArrayMeta as ArrayMeta
from .meta import ScalarMeta as ScalarMeta
from .meta import contiguous_strides as contiguous_strides
from .meta import meta_of as meta_of
from .op import Op as Op
from .op import OpKind as OpKind
from .op import all_ops as all_ops
from .op import get_op as get_op
from .op import register_op as register_op
from .pytree import TreeSpec as TreeSpec
from .pytree import tree_flatten as tree_flatten
from .pytree import tree_map as tree_map
from .pytree import tree_unflatten as tree_unflatten

__version__ = "0.1.0"

__all__ = [
    "ArrayMeta",
    "Graph",
    "Node",
    "Op",
    "OpKind",
    "ScalarMeta",
    "TreeSpec",
    "all_ops",
    "contiguous_strides",
    "get_op",
    "meta_of",
    "register_op",
    "run_graph",
    "tree_flatten",
    "tree_map",
    "tree_unflatten",
]
