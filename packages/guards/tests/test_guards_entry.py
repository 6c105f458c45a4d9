"""compile_entry: one function that checks an entry's guards over its parameters and calls it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from numpile_guards import (
    ArraySpec,
    AttrSource,
    EntryParameters,
    ExpressionSource,
    GlobalSource,
    Guard,
    GuardKind,
    ItemSource,
    LocalSource,
    ShapeGuard,
    compile_entry,
    compile_guards,
    fusable,
)

MISS = object()
X, Y = LocalSource("x"), LocalSource("y")


def _array_guard(source: LocalSource, shape: tuple[int | None, ...]) -> Guard:
    strides = tuple(None if size is None else 8 for size in shape)
    spec = ArraySpec(np.ndarray, np.dtype("float64"), shape, strides)
    return Guard(GuardKind.ARRAY_MATCH, source, spec)


def _enter(guards: list[Guard], inputs: list[Any], text: str = "x, y", **kw: Any) -> Any:
    params = EntryParameters(text, tuple(name.split("=")[0] for name in text.split(", ")))
    return compile_entry(guards, inputs, params, run=lambda *a: a, miss=MISS, G=kw, F=None)


def test_the_entry_agrees_with_the_check_and_fetch_it_fuses() -> None:
    relation = ShapeGuard(None, "L['x'].shape[0] == L['y'].shape[0]")
    guards = [
        _array_guard(X, (None,)),
        _array_guard(Y, (None,)),
        Guard(GuardKind.SHAPE_RELATION, ExpressionSource(relation.text), relation),
        Guard(GuardKind.EQUALS_MATCH, GlobalSource("k"), 3),
    ]
    size = ItemSource(AttrSource(X, "shape"), 0)
    inputs = [X, Y, size, ExpressionSource("L['x'].shape[0] * 2")]
    enter = _enter(guards, inputs, k=3)
    check = compile_guards(guards)
    assert "L" not in enter.source.replace("L =", "")  # no dict of the arguments
    for x, y in ((np.zeros(3), np.zeros(3)), (np.zeros(3), np.zeros(4)), (np.zeros(2), 1.0)):
        got = enter(x, y)
        if check({"x": x, "y": y}, {"k": 3}, None):
            assert got[0] is x and got[1] is y and got[2:] == (x.shape[0], 2 * x.shape[0])
        else:
            assert got is MISS


def test_a_guard_that_raises_is_a_miss_and_the_call_raises_through() -> None:
    guards = [Guard(GuardKind.EQUALS_MATCH, AttrSource(X, "missing"), 1)]
    assert _enter(guards, [X])(np.zeros(1), None) is MISS

    def boom(*args: Any) -> Any:
        raise KeyError("from the compiled code")

    params = EntryParameters("x", ("x",))
    enter = compile_entry([], [X], params, run=boom, miss=MISS, G={}, F=None)
    with pytest.raises(KeyError, match="from the compiled code"):
        enter(1)


def test_an_unknown_text_over_l_reads_a_dict_of_the_arguments() -> None:
    # A text this rewrite leaves alone (a key spelled with double quotes) still works.
    source = ExpressionSource('L["x"] + 1')
    enter = _enter([], [source], text="x")
    assert "L = {" in enter.source
    assert enter(2) == (3,)


@pytest.mark.parametrize("name", ["L", "G", "F", "len", "type", "_c0", "_v3", "_ok", "_miss"])
def test_parameters_that_clash_with_generated_names_are_refused(name: str) -> None:
    params = EntryParameters(f"x, {name}", ("x", name))
    assert not fusable(params)
    with pytest.raises(ValueError, match="clash"):
        compile_entry([], [X], params, run=print, miss=MISS, G={}, F=None)


@pytest.mark.parametrize("name", ["_run", "_miss", "G", "_c0", "_d", "KEYS"])
def test_an_entry_named_like_a_name_it_reads_is_renamed(name: str) -> None:
    guards = [Guard(GuardKind.TYPE_MATCH, X, int)]
    params = EntryParameters("x", ("x",), namespace={"_d": ()})
    enter = compile_entry(
        guards, [X], params, run=lambda x: x + 1, miss=MISS, G={}, F=None, name=name
    )
    assert enter(1) == 2
    assert enter(1.0) is MISS
