"""Guard and fetch code never spells a user's object as Python text.

A dict key or attribute name that is not a plain literal (an Enum member, a NaN,
a name with a dash, an object whose `__repr__` returns code) is looked up by
index or passed as a closure constant, so it works and nothing user-made runs.
"""

from __future__ import annotations

import enum
from typing import Any

import pytest

from numpile_guards import (
    AttrSource,
    Guard,
    GuardKind,
    ItemSource,
    LocalSource,
    compile_fetch,
    compile_guards,
    guard_failure,
)

D = LocalSource("d")
RAN: list[str] = []


class Color(enum.Enum):
    RED = 1


class Payload:
    # A key whose repr is code: if any numpile code parses it, RAN records it.
    def __hash__(self) -> int:
        return 1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Payload)

    def __repr__(self) -> str:
        return "__import__('numpile_guards').__dict__.setdefault('PWNED', RAN.append('ran'))"


class Multiline:
    def __repr__(self) -> str:
        return "x\nRAN.append('comment')"


NAN = float("nan")
KEYS: list[Any] = [Color.RED, NAN, Payload(), Multiline(), float("inf"), (1, Color.RED)]


@pytest.mark.parametrize("key", KEYS, ids=["enum", "nan", "payload", "multiline", "inf", "tuple"])
def test_item_guard_and_fetch_take_any_hashable_key(key: Any) -> None:
    RAN.clear()
    source = ItemSource(D, key)
    check = compile_guards([Guard(GuardKind.EQUALS_MATCH, source, 2.0)])
    assert check({"d": {key: 2.0}}, {}, None)
    assert not check({"d": {key: 3.0}}, {}, None)
    assert guard_failure(check.guards[0], {"d": {key: 2.0}}, {}, None) is None
    assert compile_fetch([source])({"d": {key: 5.0}}, {}, None) == (5.0,)
    assert source.get({"d": {key: 7.0}}, {}, None) == 7.0
    assert RAN == []


def test_constants_comment_never_breaks_out_of_its_line() -> None:
    RAN.clear()
    check = compile_guards([Guard(GuardKind.ID_MATCH, LocalSource("o"), Multiline())])
    assert "RAN.append" not in check.source
    assert RAN == []


@pytest.mark.parametrize("name", ["a-b", "class", "1x"])
def test_attribute_that_is_not_an_identifier(name: str) -> None:
    class Box:
        pass

    box = Box()
    setattr(box, name, 3.0)
    source = AttrSource(LocalSource("o"), name)
    check = compile_guards([Guard(GuardKind.EQUALS_MATCH, source, 3.0)])
    assert check({"o": box}, {}, None)
    assert compile_fetch([source])({"o": box}, {}, None) == (3.0,)
    assert source.get({"o": box}, {}, None) == 3.0
