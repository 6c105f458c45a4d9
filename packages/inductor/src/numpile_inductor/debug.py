"""Debug output of a compile: the graph, the loop IR, the generated code, a Graphviz diagram.

`trace.enabled` (or NUMPILE_COMPILE_DEBUG=1) writes, under `trace.debug_dir`
(default `./numpile_debug`), one folder per compiled graph:

    inductor_<module name>/graph.txt            the captured graph
    inductor_<module name>/functional_graph.txt the pure graph and its write-back epilogue
    inductor_<module name>/ir_pre_fusion.txt    loop IR before fusion
    inductor_<module name>/ir_post_fusion.txt   the fused schedule
    inductor_<module name>/output_code.c        the generated extension module (C backend)
    inductor_triton_<hash>/output_code.py       the generated Triton module (Triton backend)
    inductor_<module name>/graph.dot            with trace.graph_diagram

`graph_dot` writes the Graphviz text itself, so no external program is needed
(`dot -Tsvg graph.dot` renders it).

    >>> print(graph_dot(graph))  # doctest: +SKIP
    digraph numpile_graph {
      ...
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from numpile_capture import Graph, Node, tree_flatten

log = logging.getLogger("numpile.inductor.debug")


def debug_folder(debug_dir: str | None, module_name: str) -> Path:
    """The folder under `debug_dir` (`trace.debug_dir`) for the graph built as `module_name`.

    >>> debug_folder("/tmp/d", "m").as_posix()
    '/tmp/d/inductor_m'
    """
    root = Path(debug_dir or os.path.join(os.getcwd(), "numpile_debug"))
    return root / f"inductor_{module_name}"


def write_debug_files(folder: Path, files: dict[str, str]) -> None:
    """Write `files` (name -> text) into `folder`, creating it.

    >>> write_debug_files(Path("/tmp/numpile_doctest"), {"a.txt": "hi"})
    """
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text if text.endswith("\n") else text + "\n")
    log.info("inductor debug output in %s", folder)


def graph_dot(graph: Graph) -> str:
    """The graph as Graphviz dot text: one box per node, one edge per use.

    >>> from numpile_capture import ArrayMeta
    >>> import numpy as np
    >>> g = Graph()
    >>> x = g.placeholder("x", ArrayMeta((3,), np.dtype("float64")))
    >>> g.output = x
    >>> "x" in graph_dot(g)
    True
    """
    lines = [
        "digraph numpile_graph {",
        "  rankdir=TB;",
        '  node [shape=box, fontname="monospace"];',
    ]
    for node in graph.nodes:
        if node.op is None:
            label = f"{node.name}\\n{_escape(str(node.meta))}"
            lines.append(f'  "{node.name}" [label="{label}", shape=ellipse];')
            continue
        label = f"{node.name} = {node.op.name}\\n{_escape(str(node.meta))}"
        lines.append(f'  "{node.name}" [label="{label}"];')
        for value in _used_nodes(node):
            lines.append(f'  "{value.name}" -> "{node.name}";')
    leaves, _ = tree_flatten(graph.output)
    lines.append('  "output" [shape=doublecircle];')
    for position, leaf in enumerate(leaves):
        if isinstance(leaf, Node):
            lines.append(f'  "{leaf.name}" -> "output" [label="{position}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def _used_nodes(node: Node) -> list[Node]:
    # Nodes among the inputs, nested containers included, each once, in order.
    seen: dict[str, Node] = {}
    leaves, _ = tree_flatten(tuple(node.inputs))
    for leaf in leaves:
        if isinstance(leaf, Node):
            seen.setdefault(leaf.name, leaf)
    return list(seen.values())


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')
