"""Every canonical op has a VJP rule or a documented exclusion, and each exclusion's reason holds.

The README shows the exclusion table as `no_vjp_table()` renders it; the test
keeps the two identical.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from numpile_autograd_aot import EXCLUDED_OPS, extern_no_grad, get_vjp, no_vjp_table
from numpile_capture import ArrayMeta, Op, OpKind, all_ops, extern_rows, get_op

_README = pathlib.Path(__file__).resolve().parent.parent / "README.md"
_FLOAT = ArrayMeta((3,), np.float64)


def _float_result_kinds(op: Op) -> set[str] | None:
    # The dtype kinds of the op's result on float64 inputs (one or two); None if it refuses.
    kinds: set[str] = set()
    for arity in (1, 2):
        try:
            meta = op.meta(*[_FLOAT] * arity)
        except (TypeError, ValueError):
            continue
        kinds.add(np.dtype(getattr(meta, "dtype", None) or meta.type).kind)  # type: ignore[union-attr]
    return kinds or None


def test_every_op_has_a_rule_or_an_exclusion() -> None:
    missing = [op.name for op in all_ops() if get_vjp(op) is None and op.name not in EXCLUDED_OPS]
    assert missing == [], f"ops with neither a VJP rule nor an exclusion: {missing}"


def test_excluded_ops_exist_and_have_no_rule() -> None:
    names = {op.name for op in all_ops()}
    assert [name for name in EXCLUDED_OPS if name not in names] == []
    assert [name for name in EXCLUDED_OPS if get_vjp(get_op(name)) is not None] == []


@pytest.mark.parametrize("name", list(EXCLUDED_OPS))
def test_exclusion_reason_holds(name: str) -> None:
    op = get_op(name)
    reason = EXCLUDED_OPS[name]
    if reason == "mutation":
        assert op.kind is OpKind.MUTATION
    elif reason == "creation from constants":
        assert op.kind is OpKind.CREATION
    elif reason == "loop structure":
        module = op.meta.__module__
        loop_modules = ("control_flow", "ops.loop_values", "ops.math_calls")
        assert module in tuple(f"numpile_capture.{name}" for name in loop_modules)
    elif reason == "integer or bool result":
        kinds = _float_result_kinds(op)
        assert kinds is not None and kinds <= set("biu"), kinds
    elif reason == "derivative needs digamma":
        assert op.meta.__module__ == "numpile_capture.ops.special"
    elif reason == "extern row without a rule":
        extern_modules = ("numpile_capture.ops.extern", "numpile_capture.ops.unbacked_broadcast")
        assert op.meta.__module__ in extern_modules
        assert extern_no_grad()[name]
    else:
        assert reason == "integer and bool inputs only"
        assert _float_result_kinds(op) is None


def test_differentiable_kinds_are_never_excluded() -> None:
    # A pointwise op with a float result on float inputs must have a rule, not an exclusion.
    for op in all_ops():
        # gamma and lgamma: their derivatives need digamma, an op numpile does not have yet.
        if (
            op.kind is OpKind.POINTWISE
            and EXCLUDED_OPS.get(op.name, "derivative needs digamma") != "derivative needs digamma"
        ):
            kinds = _float_result_kinds(op)
            assert kinds is None or not kinds & set("fc"), op.name


def test_readme_shows_the_generated_table() -> None:
    assert no_vjp_table() in _README.read_text()


def test_extern_rows_have_a_rule_exactly_when_they_give_no_reason() -> None:
    # A row's `no_grad` is "" exactly when autograd registered a rule for its op.
    wrong = [row.name for row in extern_rows() if (get_vjp(row.op) is None) != bool(row.no_grad)]
    assert wrong == []
