"""How a module's text is cut into a header and translation units (codegen/c/translation_units.py);
that split modules give NumPy's values is tested on real graphs (test_inductor_loop_strided_copy,
and test_inductor_cache in a second process)."""

from __future__ import annotations

import numpy as np
import pytest

import numpile_runtime as rt
from numpile_capture import Graph, get_op, meta_of
from numpile_inductor import compile_graph
from numpile_inductor.codegen.c.translation_units import (
    ENTRY_POINTS,
    PRELUDE_BEGIN,
    PRELUDE_END,
    ModuleUnits,
    split_module,
)

_PRELUDE = f"{PRELUDE_BEGIN}\n#include <stdint.h>\n{PRELUDE_END}\n"


def _module(statics: str) -> str:
    # A module in the wrapper's layout: prelude, statics, two noinline functions, entry points.
    body = "\n".join("    x += 1;" for _ in range(40))
    return f"""/* header comment */
{_PRELUDE}{statics}
static int helper(int x)
{{
    return x + 1;
}}
__attribute__((noinline))
static int big(int x)
{{
{body}
    return helper(x) + g_count;
}}
__attribute__((noinline)) static int other(int x)
{{
{body}
    return x;
}}
{ENTRY_POINTS}
static int call(int x)
{{
    return big(x) + other(x);
}}
"""


def test_noinline_functions_move_and_globals_are_shared() -> None:
    units = split_module(_module("static int g_count = 3;"), parts=2, min_lines=0)
    assert units.header == _PRELUDE
    first, second = units.sources
    # The global: defined once, with its value; declared in the other unit.
    assert "NP_HIDDEN int g_count = 3;" in first
    assert "extern NP_HIDDEN int g_count;" in second
    assert "g_count = 3" not in second
    # Each noinline function is defined in one unit and declared (hidden) in the other.
    for name in ("big", "other"):
        definitions = [u for u in units.sources if f"NP_HIDDEN int {name}(int x)\n{{" in u]
        declarations = [u for u in units.sources if f"NP_HIDDEN int {name}(int x);" in u]
        assert len(definitions) == 1 and len(declarations) == 1
    # The static helper is in both (each unit compiles what it uses); entry points in the first.
    assert all("static int helper(int x)" in unit for unit in units.sources)
    assert "static int call(int x)" in first and "call(" not in second


def test_one_unit_below_the_threshold_or_when_asked() -> None:
    source = _module("static int g_count = 3;")
    assert len(split_module(source, parts=2, min_lines=10_000).sources) == 1
    assert len(split_module(source, parts=1, min_lines=0).sources) == 1


def test_text_it_cannot_share_safely_stays_one_unit() -> None:
    # Two globals in one declaration, or a static of another shape: never split.
    for statics in ("static int g_count = 3, g_other = 4;", "static int (*g_fn)(int);"):
        units = split_module(_module(statics), parts=2, min_lines=0)
        assert len(units.sources) == 1
        assert units.header == _PRELUDE
    # No prelude markers: the source as it is.
    plain = "int f(void) { return 1; }\n"
    assert split_module(plain, parts=2, min_lines=0).sources == (plain,)


def test_a_module_is_cut_for_the_cores_free_and_keyed_by_its_whole_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # One unit when one core is free (another build claims the rest), two when two are; an
    # option's cut is what it asks, keyed by its units.
    from numpile_inductor import backend
    from numpile_inductor.config import InductorConfig

    source = _module("static int g_count = 3;").replace("    x += 1;", "    x += 1;\n" * 5)
    free = [1]
    monkeypatch.setattr(rt, "free_cores", lambda: free[0])
    one = backend._job("m", source, (), InductorConfig())
    free[0] = 2
    two = backend._job("m", source, (), InductorConfig())
    assert (len(one.more_sources), len(two.more_sources)) == (0, 1)
    assert one.unsplit == two.unsplit == source
    asked = backend._job("m", source, (), InductorConfig(translation_units=2))
    assert len(asked.more_sources) == 1 and asked.unsplit == ""


def test_a_split_the_compiler_rejects_is_built_as_one_unit(monkeypatch: pytest.MonkeyPatch) -> None:
    # Should the splitter cut a module where the compiler disagrees, the module is built
    # whole: a warning and a counter, never a failed compile.
    from numpile_inductor import backend

    real = backend.split_module

    def broken(source: str, *, parts: int, min_lines: int) -> ModuleUnits:
        units = real(source, parts=parts, min_lines=min_lines)
        if parts < 2:
            return units
        return ModuleUnits(units.header, (*units.sources, "this is not C;\n"))

    monkeypatch.setattr(backend, "split_module", broken)
    a = np.linspace(0.0, 1.0, 16)
    graph = Graph()
    x = graph.placeholder("a", meta_of(a))
    graph.output = graph.call(get_op("add"), graph.call(get_op("exp"), x), 1.0)
    rt.reset_counters()
    compiled = compile_graph(graph, options={"cpp.translation_units": 2, "graph_cache": False})
    np.testing.assert_allclose(compiled.fn(a), np.exp(a) + 1.0, rtol=1e-15)
    assert rt.counters()["inductor_split_fallback"] == 1
