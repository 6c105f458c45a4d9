"""numpile_autograd_aot: functionalization, VJP rules, the joint graph, partitioners, transforms.

>>> import numpy as np
>>> from numpile_autograd_aot import grad
>>> grad(lambda x: np.sum(x * x))(np.arange(3.0))
array([0., 2., 4.])
"""

from typing import TYPE_CHECKING, Any

from numpile_capture import register_backend_path
from numpile_runtime import distribution_version

from .backend import aot_eager as aot_eager
from .batching_table import BATCH_RULES as BATCH_RULES
from .batching_table import BatchContext as BatchContext
from .batching_table import batch_rule_ops as batch_rule_ops
from .batching_table import get_batch_rule as get_batch_rule
from .batching_table import register_batch_rule as register_batch_rule
from .checkpoint import checkpoint as checkpoint
from .config import AutogradConfig as AutogradConfig
from .config import Compiler as Compiler
from .config import Partitioner as Partitioner
from .config import config as config
from .config import resolve_compiler as resolve_compiler
from .config import resolve_partitioner as resolve_partitioner
from .config import run_graph_compiler as run_graph_compiler
from .custom_rule import CustomJvp as CustomJvp
from .custom_rule import CustomVjp as CustomVjp
from .custom_rule import custom_jvp as custom_jvp
from .custom_rule import custom_vjp as custom_vjp
from .detached_floats import DetachedFloatError as DetachedFloatError
from .forward_transforms import hessian as hessian
from .forward_transforms import jacfwd as jacfwd
from .forward_transforms import jacrev as jacrev
from .forward_transforms import jvp as jvp
from .forward_transforms import linearize as linearize
from .functionalization import FunctionalGraph as FunctionalGraph
from .functionalization import OutputAlias as OutputAlias
from .functionalization import functionalize as functionalize
from .functionalization import run_functionalized as run_functionalized
from .joint import JointGraph as JointGraph
from .joint import append_backward as append_backward
from .joint import build_joint as build_joint
from .joint import input_cotangent as input_cotangent
from .jvp_graph import JvpGraph as JvpGraph
from .jvp_graph import build_jvp as build_jvp
from .jvp_table import JVP_RULES as JVP_RULES
from .jvp_table import JvpContext as JvpContext
from .jvp_table import get_jvp as get_jvp
from .jvp_table import jvp_ops as jvp_ops
from .jvp_table import register_jvp as register_jvp
from .partition import Partition as Partition
from .partition import default_partition as default_partition
from .partition import min_cut_partition as min_cut_partition
from .partition import saved_bytes as saved_bytes
from .pytree import register_pytree_node as register_pytree_node
from .pytree import tree_flatten as tree_flatten
from .pytree import tree_map as tree_map
from .pytree import tree_structure as tree_structure
from .pytree import tree_unflatten as tree_unflatten
from .rule_table import RuleContext as RuleContext
from .rule_table import RuleTable as RuleTable
from .subgraph import eliminate_dead_code as eliminate_dead_code
from .subgraph import extract_graph as extract_graph
from .transforms import CaptureError as CaptureError
from .transforms import grad as grad
from .transforms import trace_joint as trace_joint
from .transforms import value_and_grad as value_and_grad
from .transforms import vjp as vjp
from .vjp_exclusions import EXCLUDED_OPS as EXCLUDED_OPS
from .vjp_exclusions import extern_no_grad as extern_no_grad
from .vjp_exclusions import no_vjp_table as no_vjp_table
from .vjp_table import VJP_RULES as VJP_RULES
from .vjp_table import VjpContext as VjpContext
from .vjp_table import get_vjp as get_vjp
from .vjp_table import register_vjp as register_vjp
from .vjp_table import vjp_ops as vjp_ops
from .vmap import vmap as vmap

# The package's backend, as its entry point names it: no metadata read to find it.
register_backend_path("aot_eager", "numpile_autograd_aot.backend:aot_eager")

if TYPE_CHECKING:
    from .pytree import PyTreeSpec as PyTreeSpec

    __version__: str
else:

    def __getattr__(name: str) -> Any:
        # `PyTreeSpec` is optree's class: optree is imported by its first use.
        if name == "PyTreeSpec":
            from . import pytree

            return pytree.PyTreeSpec
        # `__version__` reads the installed metadata when first asked (see `distribution`).
        if name == "__version__":
            return distribution_version("numpile-autograd-aot")
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BATCH_RULES",
    "AutogradConfig",
    "BatchContext",
    "CaptureError",
    "Compiler",
    "CustomJvp",
    "CustomVjp",
    "DetachedFloatError",
    "EXCLUDED_OPS",
    "FunctionalGraph",
    "JVP_RULES",
    "JointGraph",
    "JvpContext",
    "JvpGraph",
    "OutputAlias",
    "Partition",
    "Partitioner",
    "PyTreeSpec",
    "RuleContext",
    "RuleTable",
    "VJP_RULES",
    "VjpContext",
    "aot_eager",
    "append_backward",
    "batch_rule_ops",
    "build_joint",
    "build_jvp",
    "checkpoint",
    "config",
    "custom_jvp",
    "custom_vjp",
    "default_partition",
    "eliminate_dead_code",
    "extract_graph",
    "functionalize",
    "get_batch_rule",
    "get_jvp",
    "get_vjp",
    "grad",
    "hessian",
    "input_cotangent",
    "jacfwd",
    "jacrev",
    "jvp",
    "jvp_ops",
    "linearize",
    "min_cut_partition",
    "extern_no_grad",
    "no_vjp_table",
    "register_batch_rule",
    "register_jvp",
    "register_pytree_node",
    "register_vjp",
    "resolve_compiler",
    "resolve_partitioner",
    "run_functionalized",
    "run_graph_compiler",
    "saved_bytes",
    "trace_joint",
    "tree_flatten",
    "tree_map",
    "tree_structure",
    "tree_unflatten",
    "value_and_grad",
    "vjp",
    "vjp_ops",
    "vmap",
]
