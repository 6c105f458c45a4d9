"""Options and modes: names, errors, trace output, graph diagrams, fast_math flags."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import numpile_runtime as rt
from numpile_capture import Graph, get_op, meta_of
from numpile_inductor import (
    InductorConfig,
    compile_graph,
    graph_dot,
    inductor,
    list_mode_options,
    list_options,
)


def _graph() -> tuple[Graph, np.ndarray]:
    a = np.linspace(-1, 1, 40).reshape(8, 5)
    g = Graph()
    p = g.placeholder("a", meta_of(a))
    g.output = g.call(get_op("sum"), g.call(get_op("multiply"), p, p), axis=(1,))
    return g, a


def test_list_options_names_the_cpu_options() -> None:
    names = list_options()
    for name in (
        "max_autotune",
        "epilogue_fusion",
        "fast_math",
        "trace.enabled",
        "trace.graph_diagram",
    ):
        assert name in names


def test_list_mode_options() -> None:
    modes = list_mode_options()
    assert modes["default"] == {}
    assert modes["max-autotune"] == {"max_autotune": True, "tiered": False}
    assert list_mode_options("max-autotune") == {"max_autotune": True, "tiered": False}
    with pytest.raises(ValueError, match="valid modes"):
        list_mode_options("fastest")


def test_modes_and_options_combine() -> None:
    assert InductorConfig.from_options(None, mode="max-autotune").max_autotune
    assert not InductorConfig.from_options(None).max_autotune
    assert not InductorConfig.from_options(None).fast_math
    assert InductorConfig.from_options(None).epilogue_fusion
    config = InductorConfig.from_options({"max_autotune": False}, mode="max-autotune")
    assert not config.max_autotune


def test_unknown_option_lists_the_valid_ones() -> None:
    graph, a = _graph()
    with pytest.raises(ValueError, match=r"unknown inductor option 'max_autotun'.*max_autotune"):
        inductor(graph, [a], options={"max_autotun": True})
    with pytest.raises(ValueError, match="unknown mode"):
        inductor(graph, [a], mode="turbo")


def test_option_of_the_wrong_type_is_an_error() -> None:
    with pytest.raises(TypeError, match=r"cpp\.parallel_threshold"):
        InductorConfig.from_options({"cpp.parallel_threshold": "big"})
    with pytest.raises(TypeError, match="fast_math"):
        InductorConfig.from_options({"fast_math": 1})


def test_trace_writes_graph_ir_code_and_diagram(tmp_path: Path, fresh_cache: Path) -> None:
    graph, _a = _graph()
    options = {"trace.enabled": True, "trace.debug_dir": str(tmp_path), "trace.graph_diagram": True}
    compiled = compile_graph(graph, options=options)
    (folder,) = tmp_path.glob("inductor_*")
    names = sorted(p.name for p in folder.iterdir())
    assert names == [
        "graph.dot",
        "graph.txt",
        "ir_post_fusion.txt",
        "ir_pre_fusion.txt",
        "output_code.c",
    ]
    assert (folder / "output_code.c").read_text().rstrip() == compiled.source.rstrip()
    assert "multiply" in (folder / "graph.txt").read_text()
    dot = (folder / "graph.dot").read_text()
    assert dot.startswith("digraph") and '"a" -> "v0"' in dot


def test_graph_diagram_alone_writes_the_dot_file(tmp_path: Path, fresh_cache: Path) -> None:
    graph, _a = _graph()
    compile_graph(graph, options={"trace.debug_dir": str(tmp_path), "trace.graph_diagram": True})
    (folder,) = tmp_path.glob("inductor_*")
    assert (folder / "graph.dot").exists()
    assert not (folder / "ir_pre_fusion.txt").exists()


def test_graph_dot_has_one_edge_per_use() -> None:
    graph, _ = _graph()
    dot = graph_dot(graph)
    assert dot.count("->") == 3  # a -> v0 twice collapses to one, v0 -> v1, v1 -> output
    assert dot.rstrip().endswith("}")


def test_fast_math_is_opt_in(fresh_cache: Path) -> None:
    graph, a = _graph()
    default = compile_graph(graph)
    fast = compile_graph(graph, options={"fast_math": True})
    assert "-fassociative-math" not in default.flags
    assert "-fassociative-math" in fast.flags
    np.testing.assert_allclose(fast.fn(a), (a * a).sum(axis=1), rtol=1e-13)
    # Loading the module left the process's floating point alone: NumPy keeps subnormals
    # (a module linked with -ffast-math turned on flush-to-zero for the loading thread).
    tiny = np.array([5e-324])
    assert (tiny * 1.0)[0] == 5e-324


def test_threads_option_gives_the_same_values(fresh_cache: Path) -> None:
    graph, a = _graph()
    options = {"cpp.threads": 1, "cpp.parallel_threshold": 1}
    got = compile_graph(graph, options=options).fn(a)
    np.testing.assert_allclose(got, (a * a).sum(axis=1), rtol=1e-15)


def test_config_key_text_is_unchanged_by_the_shared_config_base() -> None:
    # The text that goes into graph cache keys: the base's key() must give what the
    # inductor's own key() gave, so entries cached before the change stay valid. `blas`
    # came later: it changes the generated code, so it is part of the key.
    config = InductorConfig.from_options({"cpp.extra_flags": ["-g"], "trace.enabled": True})
    assert config.key() == (
        "max_autotune=False epilogue_fusion=True fast_math=False "
        "parallel_threshold=65536 threads=0 extra_flags=['-g'] blas=True"
    )
    assert isinstance(config, rt.LayerConfig)


def test_busy_cores_are_read_from_the_runnable_tasks(tmp_path: Path) -> None:
    # The helper every module carries (codegen/c/threads.py), built alone: the runnable
    # tasks other than the caller, and a thread count within [1, OpenMP's maximum].
    import ctypes
    import subprocess

    from numpile_inductor.codegen.c.threads import THREAD_HELPERS

    toolchain = rt.find_toolchain()
    if not toolchain.openmp_flags:
        pytest.skip("no OpenMP")
    source = tmp_path / "threads.c"
    source.write_text(
        "#include <stdint.h>\n#include <stdlib.h>\n#include <omp.h>\n"
        + THREAD_HELPERS
        + "int busy(const char *t) { return np_busy_tasks(t); }\n"
        + "int idle(int max) { return np_idle_threads(max); }\n"
    )
    library = tmp_path / "threads.so"
    command = [toolchain.cc, "-shared", "-fPIC", *toolchain.openmp_flags, str(source)]
    subprocess.run([*command, "-o", str(library)], check=True)
    helpers = ctypes.CDLL(str(library))
    assert helpers.busy(b"0.65 1.01 1.70 3/450 12345\n") == 2
    assert helpers.busy(b"7.10 6.90 5.80 1/812 99\n") == 0
    assert helpers.busy(b"garbage") == 0
    assert 1 <= helpers.idle(64) <= 64
    assert helpers.idle(1) == 1


def test_calls_take_idle_cores_unless_threads_are_given(fresh_cache: Path) -> None:
    graph, a = _graph()
    default = compile_graph(graph, options={"cpp.parallel_threshold": 1})
    pinned = compile_graph(graph, options={"cpp.threads": 2, "cpp.parallel_threshold": 1})
    assert "np_idle_threads(threads_before)" in default.source
    # Below the threshold no region starts: such a call does not read the busy cores.
    assert "np_idle_threads(threads_before)" not in compile_graph(graph).source
    for compiled in (default, pinned):
        np.testing.assert_allclose(compiled.fn(a), (a * a).sum(axis=1), rtol=1e-15)


def test_a_long_call_function_is_built_without_optimization(
    fresh_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GCC's time grows faster than a function's size: past UNOPTIMIZED_CALL_LINES the
    # graph's `call` glue is -O0 (its kernels keep -O3); a short one is optimized.
    from numpile_inductor.codegen.c import wrapper

    graph, a = _graph()
    short = Graph()
    short.output = short.call(get_op("sin"), short.placeholder("a", meta_of(a)))
    assert 'optimize("O0")' not in compile_graph(short).source
    monkeypatch.setattr(wrapper, "UNOPTIMIZED_CALL_LINES", 10)
    long = compile_graph(graph)
    assert 'optimize("O0")' in long.source
    np.testing.assert_allclose(long.fn(a), (a * a).sum(axis=1), rtol=1e-15)


def test_triton_options_compile_a_cpu_graph_of_the_same_function() -> None:
    # One function's graphs share its options; a graph of host values (a resume function
    # of 0-d values) compiles in C, where the Triton section's names have no effect.
    graph, a = _graph()
    fn = inductor(graph, [a], options={"loop_graphs": 0, "max_xblock": 256, "tiered": False})
    np.testing.assert_allclose(fn(a), (a * a).sum(axis=1))
    with pytest.raises(ValueError, match="gemm_backends takes 'extern' and/or 'triton'"):
        inductor(graph, [a], options={"gemm_backends": "cublas"})
    with pytest.raises(ValueError, match=r"unknown inductor option 'loop_graph'.*loop_graphs"):
        inductor(graph, [a], options={"loop_graph": 0})
