"""The graph cache: what a warm process needs to run a graph without lowering it again.

A compiled graph is a generated extension module (its C source, built and kept by
`numpile_runtime`'s `CodeCache`) plus a few Python-side facts: the extern NumPy calls
the module calls back, how to rebuild the output pytree, and, for graphs with in-place
updates, the write-back epilogue of the functionalized graph. `GraphArtifact` holds
exactly those; it is stored as a tagged-JSON blob (`artifact_format`: data only, never
pickle, so a planted cache file cannot run code) under a key that hashes the graph's
printed form, the options that change code, the versions and code of the numpile
packages and the C toolchain. A warm process with a populated cache loads the blob and
the shared object and runs: no functionalization, lowering, scheduling, code generation
or compiler process.

    >>> key = graph_key(graph, InductorConfig())  # doctest: +SKIP
    >>> store_artifact(key, artifact)  # doctest: +SKIP
    >>> load_artifact(key) == artifact  # doctest: +SKIP
    True
"""

from __future__ import annotations

import hashlib
import logging
import sys
from typing import Any

import attrs
import numpy as np

from numpile_capture import (
    Graph,
    IndexArray,
    Op,
    ScalarSlot,
    TreeSpec,
    allowed_op_named,
    get_op,
)

from .artifact_format import ArtifactFormatError, decode_artifact, encode_artifact
from .config import InductorConfig
from .loop_ir import BufferRef, ExternCall
from .loop_reports import LoopNote

log = logging.getLogger("numpile.inductor.graph_cache")

# Bump when GraphArtifact or what it means changes: old entries are then never read.
_FORMAT = "numpile-inductor-graph-3"
_PACKAGES = (
    "numpile_runtime",
    "numpile_guards",
    "numpile_capture",
    "numpile_autograd_aot",
    "numpile_inductor",
)


@attrs.frozen
class ExternSpec:
    """An extern call without its callable: `op_name`'s NumPy implementation is looked up.

    `origin` is the position, among the compiled graph's nodes, of a node captured at the
    same source line (-1: none), so the call's NumPy warnings name that line.

    >>> ExternSpec("matmul", (), ()).callable_step("buf0").op_name
    'matmul'
    """

    op_name: str
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...]
    origin: int = -1

    @classmethod
    def of(cls, step: ExternCall, origin: int = -1) -> ExternSpec:
        """The spec of a scheduled extern call."""
        return cls(step.op_name, step.args, step.kwargs, origin)

    def callable_step(self, buffer: str) -> ExternCall:
        """An `ExternCall` again, with the op's implementation from the registry."""
        return ExternCall(buffer, self.op_name, _op(self.op_name).impl, self.args, self.kwargs)

    def stored(self, graph: Graph) -> ExternSpec:
        """This spec with each loop body it names as a `SubgraphRef` into `graph`."""
        bodies = _bodies(graph)
        return attrs.evolve(
            self,
            args=tuple(_storable(_as_ref(value, bodies)) for value in self.args),
            kwargs=tuple((name, _storable(_as_ref(value, bodies))) for name, value in self.kwargs),
        )

    def resolved(self, graph: Graph) -> ExternSpec:
        """This spec with each `SubgraphRef` replaced by the body it names in `graph`."""
        return attrs.evolve(
            self,
            args=tuple(_resolve(value, graph) for value in self.args),
            kwargs=tuple((name, _resolve(value, graph)) for name, value in self.kwargs),
        )


@attrs.frozen
class SubgraphRef:
    """A loop body (`for_loop`'s `body`, `cond`'s branches) named in an extern call.

    Bodies are graphs, which the artifact format does not hold: an artifact names
    parameter `param` of node number `node` of the graph it was compiled from. The graph
    at hand on a cache hit has the same bodies there, since the key hashes the graph with
    its bodies.

        >>> SubgraphRef(3, "body")
        SubgraphRef(node=3, param='body')
    """

    node: int
    param: str


def _bodies(graph: Graph) -> dict[int, SubgraphRef]:
    found: dict[int, SubgraphRef] = {}
    for position, node in enumerate(graph.nodes):
        for name, value in node.params:
            if isinstance(value, Graph):
                found.setdefault(id(value), SubgraphRef(position, name))
    return found


def _as_ref(value: Any, bodies: dict[int, SubgraphRef]) -> Any:
    # A body the graph does not hold stays a Graph: storing the artifact then fails (a
    # graph that is compiled but not cached), as any other value the format cannot hold.
    return bodies.get(id(value), value) if isinstance(value, Graph) else value


def _storable(value: Any) -> Any:
    # An index template's `ScalarSlot` keeps its position only: its sympy `expr` serves
    # capture's shape rules, never the run-time call.
    if isinstance(value, ScalarSlot):
        return ScalarSlot(value.position)
    if type(value) is tuple:
        return tuple(_storable(item) for item in value)
    if type(value) is slice:
        return slice(_storable(value.start), _storable(value.stop), _storable(value.step))
    return value


def _resolve(value: Any, graph: Graph) -> Any:
    if not isinstance(value, SubgraphRef):
        return value
    nodes = graph.nodes
    body = nodes[value.node].kwargs.get(value.param) if 0 <= value.node < len(nodes) else None
    if not isinstance(body, Graph):
        raise ArtifactFormatError(f"no loop body at node {value.node}, {value.param!r}")
    return body


def _op(name: str) -> Op:
    # A canonical op, or one made for an `allow_in_graph` function (those are not in
    # the op registry: they belong to the user's program, which registers them again).
    allowed = allowed_op_named(name)
    if allowed is not None:
        return allowed
    return get_op(name)


@attrs.frozen
class Epilogue:
    """The write-back of a functionalized graph (see `numpile_autograd_aot.functionalize`).

    The pure graph returns `num_outputs` user leaves, then the new values of mutated
    inputs: `mutated_inputs` pairs `(input position, output position)`; `output_aliases`
    are `(output, input, view chain)` for user outputs that are views of inputs.

        >>> Epilogue(TreeSpec("leaf"), 1, ((0, 1),), ()).mutated_inputs
        ((0, 1),)
    """

    output_spec: TreeSpec
    num_outputs: int
    mutated_inputs: tuple[tuple[int, int], ...]
    output_aliases: tuple[tuple[int, int, tuple[Any, ...]], ...]


@attrs.frozen
class GraphArtifact:
    """Everything a warm process needs to run a compiled graph (stored in the cache).

    >>> artifact.module_name  # doctest: +SKIP
    'numpile_graph_0123456789abcdef'
    """

    module_name: str
    source: str
    flags: tuple[str, ...]
    externs: tuple[ExternSpec, ...]
    output_spec: TreeSpec
    output_slots: tuple[tuple[bool, Any], ...]
    direct: bool
    threads: int
    epilogue: Epilogue | None
    kernel_count: int
    extern_ops: tuple[str, ...]
    # How the module runs the graph's loops (`loop_reports`), recorded again on a hit.
    loop_notes: tuple[LoopNote, ...] = ()


# The only classes a stored artifact may contain (see `artifact_format`).
_ARTIFACT_CLASSES: tuple[type, ...] = (
    GraphArtifact,
    ExternSpec,
    Epilogue,
    TreeSpec,
    BufferRef,
    IndexArray,
    ScalarSlot,
    SubgraphRef,
    LoopNote,
)


def graph_key(
    graph: Graph, config: InductorConfig, toolchain_identity: str, *, variant: str = ""
) -> str:
    """The cache key of `graph` compiled with `config` by the given toolchain.

    `variant` tells apart compiles of one graph that differ in how, not in options
    (the functionalized and the barrier form of a graph with in-place updates).

    >>> len(graph_key(graph, InductorConfig(), find_toolchain().identity))  # doctest: +SKIP
    64
    """
    digest = hashlib.sha256(_FORMAT.encode())
    for part in (
        graph.structural_hash(),
        config.key(),
        _code_fingerprint(),
        toolchain_identity,
        np.__version__,
        sys.implementation.cache_tag or "",
        variant,
    ):
        digest.update(b"\0")
        digest.update(part.encode())
    return digest.hexdigest()


def load_artifact(key: str) -> GraphArtifact | None:
    """The artifact stored under `key`, or None (absent, corrupt or unreadable).

    >>> load_artifact("0" * 64) is None  # doctest: +SKIP
    True
    """
    import numpile_runtime as rt

    try:
        data = rt.default_cache().get_bytes(f"graph-{key}")
    except OSError as error:  # an unusable cache is a miss
        log.warning("could not read graph cache entry %s: %s", key[:16], error)
        return None
    if data is None:
        return None
    try:
        artifact = decode_artifact(data, classes=_ARTIFACT_CLASSES)
    except ArtifactFormatError as error:  # any unreadable entry is a miss
        log.warning("ignoring an unreadable graph cache entry %s: %s", key[:16], error)
        return None
    if not isinstance(artifact, GraphArtifact):
        return None
    return artifact


def store_artifact(key: str, artifact: GraphArtifact) -> bool:
    """Store `artifact` under `key`; False when it cannot be serialized (then not cached).

    >>> store_artifact(key, artifact)  # doctest: +SKIP
    True
    """
    import numpile_runtime as rt

    try:
        data = encode_artifact(artifact, classes=_ARTIFACT_CLASSES)
    except ArtifactFormatError as error:  # params the format cannot hold: not cached
        log.debug("graph %s is not cached: %s", key[:16], error)
        return False
    try:
        rt.default_cache().put_bytes(f"graph-{key}", data)
    except OSError as error:  # an unusable cache: compiled, not cached
        log.warning("could not store graph cache entry %s: %s", key[:16], error)
        return False
    return True


def _code_fingerprint() -> str:
    # The code of the numpile packages below the inductor and of the inductor itself (a
    # changed generator or op rule must not reuse old modules), hashed once per state of
    # the files (`source_fingerprint`), not once per process. Their versions are not in
    # it: `__version__` reads the installed metadata, which a warm start does not import.
    import importlib.util

    import numpile_runtime as rt

    folders = []
    for name in _PACKAGES:
        # Found, not imported: a warm start need not import the autograd layer.
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            raise ImportError(f"numpile_inductor needs {name}, which cannot be found")
        folders.append(spec.submodule_search_locations[0])
    return rt.source_fingerprint(*folders)
