"""codegen.common: the scalar-op vocabulary against each backend's op table, the registry,
the code buffer, and the lowering's independence from every backend."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from numpile_inductor.codegen.c import ops as c_ops
from numpile_inductor.codegen.common import (
    KERNEL_DTYPES,
    OP_TABLES,
    SCALAR_OPS,
    CodeBuffer,
    OpTable,
    kernel_dtype,
    register_op_table,
    supports,
)
from numpile_inductor.codegen.triton import ops as triton_ops

_DTYPES = [
    np.dtype(name)
    for name in (*sorted(KERNEL_DTYPES), "float16", ">f8", "datetime64[s]", "object", "U3")
]
_NAMES = sorted(set().union(*SCALAR_OPS.values()) | {"cast", "where", "no_such_op"})


def test_the_c_table_spells_exactly_the_vocabulary() -> None:
    table = OP_TABLES["c"]
    assert table is c_ops.OP_TABLE
    assert table.dtypes == KERNEL_DTYPES
    assert {kind: frozenset(ops) for kind, ops in table.spellings.items()} == dict(SCALAR_OPS)


def test_the_triton_table_spells_the_vocabulary_but_complex() -> None:
    table = OP_TABLES["triton"]
    assert table is triton_ops.OP_TABLE
    assert table.dtypes == KERNEL_DTYPES - {"complex64", "complex128"}
    expected = {kind: ops for kind, ops in SCALAR_OPS.items() if kind != "c"}
    assert {kind: frozenset(ops) for kind, ops in table.spellings.items()} == expected


@pytest.mark.parametrize("dtype", _DTYPES, ids=str)
def test_the_lowering_accepts_what_the_c_backend_spells(dtype: np.dtype) -> None:
    assert [supports(name, dtype) for name in _NAMES] == [
        supports(name, dtype, backend="c") for name in _NAMES
    ]


def test_supports_by_dtype_category() -> None:
    assert supports("sin", np.dtype("float32"))
    assert not supports("sin", np.dtype("int64"))
    assert supports("bitwise_and", np.dtype("uint8"))
    assert not supports("bitwise_and", np.dtype("float64"))
    assert supports("where", np.dtype("complex128"))
    assert not supports("add", np.dtype("float16"))
    assert not supports("add", np.dtype(">f8" if np.little_endian else "<f8"))
    assert not supports("add", np.dtype("complex64"), backend="triton")
    assert not kernel_dtype(np.dtype("datetime64[s]"))


def test_an_op_table_may_spell_only_scalar_ops() -> None:
    with pytest.raises(ValueError, match=r"\['digamma'\].*SCALAR_OPS"):
        register_op_table(OpTable("bad", frozenset({"float64"}), {"f": {"digamma": "psi"}}))
    assert "bad" not in OP_TABLES


def test_code_buffer_indents_nested_blocks() -> None:
    buf = CodeBuffer(level=1)
    buf.writeline("for (;;) {")
    with buf.indent():
        buf.writeline("x++;")
        buf.splice(["#pragma omp barrier"])
        with buf.indent(2):
            buf.writelines(["a;", "b;"])
    buf.writeline("}")
    assert buf.getvalue() == (
        "    for (;;) {\n        x++;\n#pragma omp barrier\n"
        "                a;\n                b;\n    }"
    )
    assert buf.level == 1


def test_lowering_a_graph_loads_no_op_table() -> None:
    # The package's façade loads the C backend's buffer pool and autotuner (cheap, no op
    # table); lowering and scheduling a graph must load no backend's spellings.
    script = textwrap.dedent(
        """
        import sys
        import numpy as np
        from numpile_capture import Graph, get_op, meta_of
        from numpile_inductor.pipeline import lower_and_schedule
        a = np.ones((4, 3))
        g = Graph()
        p = g.placeholder("a", meta_of(a))
        g.output = g.call(get_op("sum"), g.call(get_op("sin"), p), axis=1)
        assert len(lower_and_schedule(g).kernels) == 1
        print(sorted(m for m in sys.modules if m.startswith("numpile_inductor.codegen.")))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    loaded = eval(done.stdout)  # a printed list of module names
    assert "numpile_inductor.codegen.common" in loaded
    assert not [m for m in loaded if m.startswith("numpile_inductor.codegen.triton")]
    assert not {"numpile_inductor.codegen.c.ops", "numpile_inductor.codegen.c.kernel"} & set(loaded)
