"""What every code generator shares: the scalar-op vocabulary, dtype categories, op tables,
an indented code buffer and the kernel-emission context.

The lowering decides what becomes loop IR from this module alone (`supports`,
`kernel_dtype`), never from a backend: `SCALAR_OPS` lists, per dtype category, the
scalar operations an `Apply` may name. Each backend spells them in its own op table and
registers it here (`register_op_table`, at the bottom of its `ops.py`); a backend whose
table lacks an entry falls back as that backend decides (Triton runs such graphs
eagerly).

    >>> supports("sin", np.dtype("float32")), supports("sin", np.dtype("int64"))
    (True, False)
    >>> category(np.dtype("uint8"))
    'u'
    >>> buf = CodeBuffer()
    >>> buf.writeline("{")
    >>> with buf.indent():
    ...     buf.writeline("x = 1;")
    >>> buf.writeline("}")
    >>> print(buf.getvalue())
    {
        x = 1;
    }
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

if TYPE_CHECKING:
    from ..loop_ir import Buffer
    from ..scheduler import FusedKernel

# NOTE: dtype categories are NumPy's kinds: b bool, i signed int, u unsigned int, f float,
# c complex. Kernels handle these dtypes (in native byte order); others run as externs.
KERNEL_DTYPES: frozenset[str] = frozenset(
    (
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float32",
        "float64",
        "complex64",
        "complex128",
    )
)

_NATIVE = "<" if np.little_endian else ">"

_COMPARISONS = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")
_LOGICAL = ("logical_and", "logical_or", "logical_xor", "logical_not")
_ORDERING = ("maximum", "minimum", "fmax", "fmin")
_BITWISE = ("bitwise_and", "bitwise_or", "bitwise_xor", "invert", "bitwise_not")
# NumPy's shifts by a count outside [0, bits) give 0 (or -1 for a negative signed right shift).
_SHIFTS = ("left_shift", "right_shift")
_ARITHMETIC = ("add", "subtract", "multiply", "negative", "positive", "square", "absolute")
_DIVISION = ("floor_divide", "remainder", "mod")
SCALAR_MATH = ("scalar_add", "scalar_subtract", "scalar_multiply", "scalar_negative",
               "scalar_absolute")  # fmt: skip
"""NumPy's scalar math on integer NumPy scalars (`np.int8(100) * np.int8(2)`,
`-np.int8(-128)`): the ufuncs' values, and the overflow flag where the exact result does
not fit (NumPy warns "overflow encountered in scalar multiply"; integer arrays wrap
silently). The lowering names them for ops on NumPy scalars (`lowering/pointwise.py`)."""
FLOAT_SCALAR_MATH = ("scalar_power",)
"""NumPy's scalar math on float NumPy scalars that differs from the ufunc's loop:
`np.float64(x) ** y` calls libm's `pow` where `np.power` on arrays calls SVML's on AVX-512
machines (the last bit differs for most exponents); complex scalars' `scalar_multiply`
rounds each product where the array loop fuses them, and their `scalar_absolute` is libm's
`hypot` where the array loop's SIMD one differs in the last bit. The lowering names them for ops on
NumPy scalars only (`lowering/pointwise.py`)."""
_FLOAT_MATH = (
    "divide",
    "true_divide",
    "reciprocal",
    "fabs",
    "sqrt",
    "cbrt",
    "exp",
    "exp2",
    "expm1",
    "log",
    "log2",
    "log10",
    "log1p",
    "sin",
    "cos",
    "tan",
    "arcsin",
    "arccos",
    "arctan",
    "sinh",
    "cosh",
    "tanh",
    "arcsinh",
    "arccosh",
    "arctanh",
    "arctan2",
    "hypot",
    "power",
    "floor",
    "ceil",
    "trunc",
    "rint",
    "fmod",
    "copysign",
    "sign",
    "isnan",
    "isinf",
    "isfinite",
    "signbit",
    # scipy.special's functions that libm has (capture's ops/special.py)
    "erf",
    "erfc",
    "gamma",
    "lgamma",
)
_INTEGER_OPS = frozenset(
    (
        *_ARITHMETIC,
        *SCALAR_MATH,
        *_COMPARISONS,
        *_LOGICAL,
        *_ORDERING,
        *_BITWISE,
        *_SHIFTS,
        *_DIVISION,
        "sign",
    )
)

SCALAR_OPS: Mapping[str, frozenset[str]] = {
    "f": frozenset(
        (
            *_ARITHMETIC,
            *_COMPARISONS,
            *_LOGICAL,
            *_ORDERING,
            *_DIVISION,
            *_FLOAT_MATH,
            *FLOAT_SCALAR_MATH,
        )
    ),
    "i": _INTEGER_OPS,
    "u": _INTEGER_OPS,
    "b": frozenset((*_COMPARISONS, *_LOGICAL, *_ORDERING, *_BITWISE, "add", "multiply")),
    "c": frozenset(
        (
            "add",
            "subtract",
            "multiply",
            "negative",
            "positive",
            "conjugate",
            "conj",
            "equal",
            "not_equal",
            "divide",
            "true_divide",
            "scalar_multiply",
            "scalar_absolute",
            "exp",
            "log",
            "sqrt",
        )
    ),
}
"""The scalar operations of the loop IR (`Apply.fn`), per category of the loop dtype.

`cast` and `where` apply to every kernel dtype besides these."""

_ANY_DTYPE_OPS = ("cast", "where")


def category(dtype: np.dtype[Any]) -> str:
    """The dtype category of `dtype` (NumPy's kind: b, i, u, f, c).

    >>> category(np.dtype("float32"))
    'f'
    """
    return dtype.kind


def kernel_dtype(dtype: np.dtype[Any]) -> bool:
    """Whether kernels handle `dtype` (one of `KERNEL_DTYPES`, in native byte order).

    >>> kernel_dtype(np.dtype("<f8")), kernel_dtype(np.dtype("float16"))
    (True, False)
    """
    if dtype.byteorder not in "=|" and dtype.byteorder != _NATIVE:
        return False
    return dtype.name in KERNEL_DTYPES


@attrs.frozen
class OpTable:
    """One backend's spelling of the scalar operations.

    `dtypes` are the dtype names its kernels handle; `spellings` maps a dtype category to
    the operations it spells there (each value a backend-specific spelling).

        >>> table = OpTable("text", frozenset({"float64"}), {"f": {"add": "+"}})
        >>> table.spells("add", np.dtype("float64")), table.spells("sub", np.dtype("float64"))
        (True, False)
    """

    backend: str
    dtypes: frozenset[str]
    spellings: Mapping[str, Mapping[str, Any]]

    def spells(self, fn: str, loop_dtype: np.dtype[Any]) -> bool:
        """Whether `fn` on loop dtype `loop_dtype` has a spelling in this table."""
        if not kernel_dtype(loop_dtype) or loop_dtype.name not in self.dtypes:
            return False
        if fn in _ANY_DTYPE_OPS:
            return True
        return fn in self.spellings.get(category(loop_dtype), {})


# NOTE: the registered op table of each backend ("c", "triton"), filled when a backend's
# `ops` module is imported; the lowering never reads it.
OP_TABLES: dict[str, OpTable] = {}


def register_op_table(table: OpTable) -> OpTable:
    """Register `table` as its backend's op table; it may spell only `SCALAR_OPS`.

    >>> register_op_table(OpTable("text", frozenset({"float64"}), {"f": {"add": "+"}}))
    OpTable(backend='text', dtypes=frozenset({'float64'}), spellings={'f': {'add': '+'}})
    >>> supports("add", np.dtype("float64"), backend="text")
    True
    >>> del OP_TABLES["text"]
    """
    for kind, ops in table.spellings.items():
        unknown = sorted(set(ops) - SCALAR_OPS.get(kind, frozenset()))
        if unknown:
            raise ValueError(
                f"the {table.backend} op table spells {unknown} for dtype category {kind!r}, "
                "which are not scalar ops of the loop IR: add them to codegen.common.SCALAR_OPS"
            )
    OP_TABLES[table.backend] = table
    return table


def supports(fn: str, loop_dtype: np.dtype[Any], backend: str | None = None) -> bool:
    """Whether scalar op `fn` with loop (input) dtype `loop_dtype` lowers to the loop IR,
    or, given `backend`, whether that backend's registered op table spells it.

    >>> supports("add", np.dtype("complex64")), supports("floor", np.dtype("complex64"))
    (True, False)
    """
    if backend is not None:
        return OP_TABLES[backend].spells(fn, loop_dtype)
    if not kernel_dtype(loop_dtype):
        return False
    if fn in _ANY_DTYPE_OPS:
        return True
    return fn in SCALAR_OPS.get(category(loop_dtype), frozenset())


class CodeBuffer:
    """Lines of generated code, each written at the buffer's current indentation.

    `with buf.indent():` nests one level (four spaces), `with buf.block(head):` writes a
    braced block; `splice` adds lines as they are (preprocessor lines and labels, text
    indented by another buffer).

        >>> buf = CodeBuffer(level=1)
        >>> buf.writeline("return 0;")
        >>> buf.lines
        ['    return 0;']
    """

    UNIT = "    "

    def __init__(self, *, level: int = 0) -> None:
        self.lines: list[str] = []
        self.level = level

    @property
    def prefix(self) -> str:
        """The indentation of the next line written."""
        return self.UNIT * self.level

    def writeline(self, line: str) -> None:
        """Add `line` at the current indentation."""
        self.lines.append(f"{self.prefix}{line}")

    def writelines(self, lines: Iterable[str]) -> None:
        """Add each of `lines` at the current indentation."""
        for line in lines:
            self.writeline(line)

    def splice(self, lines: Iterable[str]) -> None:
        """Add `lines` as they are, without indentation."""
        self.lines.extend(lines)

    @contextlib.contextmanager
    def indent(self, levels: int = 1) -> Iterator[None]:
        """Write the lines of the `with` block `levels` deeper."""
        self.level += levels
        try:
            yield
        finally:
            self.level -= levels

    @contextlib.contextmanager
    def block(self, head: str = "", close: str = "}") -> Iterator[None]:
        """Write `head {`, the `with` block's lines one level deeper, then `close`.

        >>> buf = CodeBuffer()
        >>> with buf.block("if (x == NULL)"):
        ...     buf.writeline("goto fail;")
        >>> buf.lines
        ['if (x == NULL) {', '    goto fail;', '}']
        """
        self.writeline(f"{head} {{" if head else "{")
        with self.indent():
            yield
        self.writeline(close)

    def getvalue(self) -> str:
        """The lines joined by newlines."""
        return "\n".join(self.lines)


@attrs.frozen
class KernelContext:
    """What every emitter of one kernel's loop nest needs, in one object.

    `fused` is the kernel (or the part of a row group) being emitted, `buffers` the
    program's buffers, `strides` each (buffer, dim)'s element stride (a symbol, or a
    constant in a specialized copy), `sizes` the names of the loop sizes (`x` dims, then
    `r` dims), `skip` how many outer `x` loops an enclosing nest already opened,
    `parallel_threshold` the work from which a parallel region is taken, `ivdep` whether
    no buffer aliases another (loop iterations are independent), `static_work` the
    kernel's work (the product of its sizes) when all of them are constants.

        >>> ctx = KernelContext(None, {}, {}, ["n0"], parallel_threshold=10)  # doctest: +SKIP
        >>> ctx.part(row_part, ["n0", "n2"], skip=1).skip  # doctest: +SKIP
        1
    """

    fused: FusedKernel
    buffers: Mapping[str, Buffer]
    strides: Mapping[tuple[str, int], Any]
    sizes: list[str]
    skip: int = 0
    parallel_threshold: int = 0
    ivdep: bool = False
    static_work: int | None = None

    def part(self, fused: FusedKernel, sizes: list[str], *, skip: int) -> KernelContext:
        """The context of `fused`, emitted inside this one's first `skip` loops."""
        return attrs.evolve(self, fused=fused, sizes=sizes, skip=skip)
