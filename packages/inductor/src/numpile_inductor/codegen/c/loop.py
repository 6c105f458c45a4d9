"""The text of C loop nests: a loop body emitter and the loops around it.

`LoopBody` turns loop-IR stores into one C statement per scalar operation
(common subexpressions computed once); `loops` opens `for` loops over runtime
sizes and closes them, `parallel` parallelizes the outermost. All of them write
into a `CodeBuffer` at its current indentation.

    >>> buf = CodeBuffer()
    >>> with loops(buf, "x", ["n0", "n1"]):
    ...     buf.writeline("f(x0, x1);")
    >>> print(buf.getvalue())
    for (int64_t x0 = 0; x0 < n0; x0++) {
        for (int64_t x1 = 0; x1 < n1; x1++) {
            f(x0, x1);
        }
    }
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from ...index import c_offset, index_symbol, loop_var, replace_symbols
from ...loop_ir import AccumulateStore, Apply, Constant, Expr, Indirect, Load, ScalarArg, Store
from ..common import CodeBuffer, KernelContext
from .gather import indirect_index_lines
from .ops import c_expr, c_literal, c_type

if TYPE_CHECKING:
    import sympy
else:
    from ...light_lowering import sympy  # imported on first use (see light_lowering)


class LoopBody:
    """One loop body: CSE'd scalar statements for the stores of a kernel, written to `buf`.

    It addresses buffers with `ctx.strides` ((buffer, dim) -> element stride, a symbol
    or a constant); `locals` maps buffers held in registers to their C expressions.

        >>> ctx = KernelContext(None, {}, {}, [])  # doctest: +SKIP
        >>> LoopBody(ctx, CodeBuffer()).emit(Constant(1.5, np.dtype("float64")))  # doctest: +SKIP
        '((double)1.5)'
    """

    def __init__(self, ctx: KernelContext, buf: CodeBuffer) -> None:
        self.buffers = ctx.buffers
        self.strides = ctx.strides
        self.buf = buf
        self.locals: dict[str, str] = {}
        self.cache: dict[Any, str] = {}
        self.counter = 0

    def _tmp(self, dtype: np.dtype[Any], text: str) -> str:
        name = f"t{self.counter}"
        self.counter += 1
        self.buf.writeline(f"const {c_type(dtype)} {name} = {text};")
        return name

    def address(self, buffer: str, index: tuple[Any, ...]) -> str:
        """The C element offset of `buffer` at loop-IR index `index`."""
        strides = [self.strides[(buffer, dim)] for dim in range(len(index))]
        return c_offset(index, strides)

    def _gather_index(self, bound: Indirect) -> sympy.Symbol:
        # The checked C local holding a gather index (codegen/c/gather.py), once per body.
        key = ("indirect", bound)
        if key not in self.cache:
            value = self.emit(bound.value)
            name = f"gx{self.counter}"
            self.counter += 1
            self.buf.writelines(indirect_index_lines(name, value, bound.size, bound.axis))
            self.cache[key] = name
        return index_symbol(self.cache[key])

    def emit(self, expr: Expr) -> str:
        """The C expression of `expr`, its operations written as temporaries first."""
        key = expr
        if key in self.cache:
            return self.cache[key]
        if isinstance(expr, Load):
            if expr.buffer in self.locals:
                # the scheduler fuses no gather with its source's kernel
                assert not expr.indirect, f"a gather from register {expr.buffer}"
                return self.locals[expr.buffer]
            index = expr.index
            if expr.indirect:
                swap = {bound.symbol: self._gather_index(bound) for bound in expr.indirect}
                index = tuple(replace_symbols(i, swap) for i in index)
            text = self._tmp(expr.dtype, f"{expr.buffer}[{self.address(expr.buffer, index)}]")
        elif isinstance(expr, Constant):
            return c_literal(expr.value, expr.dtype)
        elif isinstance(expr, ScalarArg):
            return f"(({c_type(expr.dtype)}){expr.name})"
        else:
            assert isinstance(expr, Apply)
            args = [self.emit(arg) for arg in expr.args]
            dtypes = [arg.dtype for arg in expr.args]
            text = self._tmp(expr.dtype, c_expr(expr.fn, args, dtypes, expr.dtype))
        self.cache[key] = text
        return text

    def accumulate(self, store: AccumulateStore, sizes: list[str]) -> None:
        """Write scatter-accumulate `store`; `sizes` are the C names of its target's dims
        (what its gathered indices are checked against)."""
        value = self.emit(store.value)
        swap = {
            bound.symbol: self._gather_index(attrs.evolve(bound, size=sizes[bound.axis]))
            for bound in store.indirect
        }
        index = tuple(replace_symbols(i, swap) for i in store.index)
        address = self.address(store.buffer, index)
        dtype = self.buffers[store.buffer].dtype
        ct = c_type(dtype)
        # integers wrap as NumPy's do: the operation in the unsigned type of the same width
        wide = f"u{ct}" if dtype.kind == "i" else ct
        op = _ACCUMULATE_OPS[store.op]
        # The element last written stays in a register (np_acc at np_at) while the index
        # repeats: the same operations in the same order, without a store and a load per
        # element on the critical path (see accumulate.py).
        at = self._tmp(np.dtype(np.int64), address)
        with self.buf.block(f"if ({at} != np_at)"):
            self.buf.writeline(f"if (np_at >= 0) {{ {store.buffer}[np_at] = np_acc; }}")
            self.buf.writeline(f"np_at = {at};")
            self.buf.writeline(f"np_acc = {store.buffer}[{at}];")
        self.buf.writeline(f"np_acc = ({ct})(({wide})np_acc {op} ({wide}){value});")

    def store(self, store: Store, internal: bool) -> None:
        """Write `store`; an `internal` one only binds its value to the buffer's name."""
        value = self.emit(store.value)
        if not internal:
            addr = self.address(store.buffer, store.index)
            self.buf.writeline(f"{store.buffer}[{addr}] = {value};")
        self.locals[store.buffer] = value


# NOTE: the ufuncs a scatter-accumulate applies, as C operators.
_ACCUMULATE_OPS = {"add": "+", "subtract": "-", "multiply": "*"}


@contextlib.contextmanager
def loops(
    buf: CodeBuffer,
    prefix: str,
    names: list[str],
    first: int = 0,
    *,
    ivdep: bool = False,
    chunked: bool = False,
    order: Sequence[int] | None = None,
) -> Iterator[None]:
    """`for` loops over `prefix{d} < names[d]` for d >= first around the `with` block.

    `ivdep` puts `#pragma GCC ivdep` on the innermost loop: its iterations touch no element
    another iteration touches. Use it only when no buffer of the loop aliases another: it
    restores what `restrict` says, which GCC forgets in OpenMP-outlined loop bodies.
    `chunked` runs the first loop over the current chunk of a `parallel(chunk=...)` region.
    `order` opens the loops of those dims in that order, outermost first (memory order,
    `codegen/memory_order.py`); the loop of dim `d` is still `prefix{d} < names[d]`.

    >>> buf = CodeBuffer(level=1)
    >>> with loops(buf, "r", ["n2"], ivdep=True):
    ...     pass
    >>> buf.lines
    ['    #pragma GCC ivdep', '    for (int64_t r0 = 0; r0 < n2; r0++) {', '    }']
    """
    dims = list(order) if order is not None else list(range(first, len(names)))
    count = len(dims)
    for position, d in enumerate(dims):
        var = loop_var(d, prefix)
        if ivdep and position == count - 1:
            buf.writeline("#pragma GCC ivdep")
        low, high = (f"{var}_lo", f"{var}_hi") if chunked and position == 0 else ("0", names[d])
        buf.writeline(f"for (int64_t {var} = {low}; {var} < {high}; {var}++) {{")
        buf.level += 1
    try:
        yield
    finally:
        for _ in range(count):
            buf.level -= 1
            buf.writeline("}")


def size_names(count: int) -> list[str]:
    """The C names of a kernel's size arguments.

    >>> size_names(2)
    ['n0', 'n1']
    """
    return [f"n{i}" for i in range(count)]


@contextlib.contextmanager
def parallel(
    buf: CodeBuffer,
    collapse: int,
    threshold: int,
    *,
    simd: bool = False,
    enabled: bool = True,
    chunk: str | None = None,
    chunk_dim: int = 0,
    work: int | None = None,
) -> Iterator[None]:
    """An OpenMP parallel region, taken when `work >= threshold`, around the `with` block,
    whose first statement is a `for` over `collapse` loops (none when not `enabled`).

    Each thread clears its floating-point flags on entry and ORs them into the kernel's
    `np_fp` on exit (the region reduces `np_fp` with `|`). `simd` also marks the loop's
    iterations independent (the `ivdep` of `loops` for a loop that is both the parallel
    and the innermost one).

    Below the threshold the block runs as a plain serial copy, outside any region: an
    OpenMP region costs its team's set-up even when its `if` clause is false (a third of
    a microsecond with libgomp, more than a small kernel's whole work). `work`, the
    kernel's work when its sizes are constants, leaves only the copy that runs.

    `chunk` (the size of the outermost loop, that of dim `chunk_dim`, which must then be
    opened with `loops(..., chunked=True)`) runs that loop in chunks of rows, one region
    per chunk, polling for signals between chunks (`np_chunk_rows` and `np_poll`, see
    codegen/c/interrupts.py): Ctrl-C stops a long kernel within a chunk. The kernel then
    returns `NP_INTERRUPTED` with the exception set; earlier chunks' outputs stay written.

    >>> buf = CodeBuffer()
    >>> with parallel(buf, 1, 10):
    ...     buf.writeline("for (;;) {}")
    >>> print(buf.getvalue())
    np_fp |= NP_FP_TEST();
    if (work >= 10) {
        #pragma omp parallel reduction(|:np_fp)
        {
        NP_FP_CLEAR();
        #pragma omp for schedule(static) nowait
        for (;;) {}
        np_fp |= NP_FP_TEST();
        }
    } else {
        for (;;) {}
        np_fp |= NP_FP_TEST();
    }
    >>> buf = CodeBuffer()
    >>> with parallel(buf, 2, 10, simd=True, work=100):
    ...     pass
    >>> buf.lines[-3]
    '#pragma omp for simd collapse(2) schedule(static) nowait'
    >>> buf = CodeBuffer()
    >>> with parallel(buf, 1, 10, simd=True, work=8):
    ...     buf.writeline("for (;;) {}")
    >>> buf.lines
    ['#pragma omp simd', 'for (;;) {}', 'np_fp |= NP_FP_TEST();']
    """
    if not enabled:
        yield
        return
    clause = f" collapse({collapse})" if collapse > 1 else ""
    simd_clause = " simd" if simd else ""
    if chunk is not None:
        buf.writelines(_chunk_header(loop_var(chunk_dim), chunk))
    start = len(buf.lines)
    yield
    # The block's lines, already indented: moved into the copies written below.
    body = buf.lines[start:]
    del buf.lines[start:]
    region: list[str | list[str]] = [
        "#pragma omp parallel reduction(|:np_fp)",
        "{",
        "NP_FP_CLEAR();",
        f"#pragma omp for{simd_clause}{clause} schedule(static) nowait",
        body,
        "np_fp |= NP_FP_TEST();",
        "}",
    ]
    # A lone loop keeps its iterations independent in the serial copy too (`omp simd`).
    pragma = ["#pragma omp simd"] if simd and collapse == 1 else []
    serial: list[str | list[str]] = [*pragma, body, "np_fp |= NP_FP_TEST();"]
    if work is not None and work < threshold:
        _write(buf, serial)
    elif work is not None:
        _write(buf, ["np_fp |= NP_FP_TEST();", *region])
    else:
        _write(buf, ["np_fp |= NP_FP_TEST();", f"if (work >= {threshold}) {{"])
        with buf.indent():
            _write(buf, region, 1)
        buf.writeline("} else {")
        with buf.indent():
            _write(buf, serial, 1)
        buf.writeline("}")
    if chunk is not None:
        buf.writelines(_chunk_footer(loop_var(chunk_dim), chunk))


def _write(buf: CodeBuffer, lines: list[str | list[str]], deeper: int = 0) -> None:
    # Strings at the buffer's indentation; a list holds lines the buffer wrote already, at
    # `deeper` levels less than it is at now.
    for line in lines:
        if isinstance(line, str):
            buf.writeline(line)
        else:
            buf.splice(CodeBuffer.UNIT * deeper + text for text in line)


@contextlib.contextmanager
def sequential_chunks(buf: CodeBuffer, var: str, size: str, *, align: int = 1) -> Iterator[None]:
    """The loop of `var` over `size`, run in chunks with a poll for signals between them,
    outside any parallel region (a reduction over every element runs in one thread).

    The `with` block opens `var`'s own loop over `{var}_lo` to `{var}_hi` (`loops(...,
    chunked=True)`, or by hand). Iterations run in the same order as one loop would run them,
    with the same accumulators, so results are the same to the bit. A chunk is about
    `CHUNK_WORK` iterations of the kernel's `work`, rounded up to a multiple of `align` (the
    block size of a pairwise sum, whose blocks so stay the same).

    >>> buf = CodeBuffer()
    >>> with sequential_chunks(buf, "r0", "n0"):
    ...     buf.writeline("for (int64_t r0 = r0_lo; r0 < r0_hi; r0++) {}")
    >>> buf.lines[-3]
    'np_fp |= NP_FP_TEST();'
    """
    buf.writelines(_chunk_header(var, size, align))
    yield
    # `np_poll` clears the floating-point flags: keep the ones this thread raised so far.
    buf.writeline("np_fp |= NP_FP_TEST();")
    buf.writelines(_chunk_footer(var, size))


def _chunk_header(var: str, size: str, align: int = 1) -> list[str]:
    rows = f"np_chunk_rows(work, {size})"
    if align > 1:
        rows = f"({rows} + {align - 1}) / {align} * {align}"
    return [
        f"const int64_t {var}_rows = {rows};",
        f"for (int64_t {var}_lo = 0; {var}_lo < {size}; {var}_lo += {var}_rows) {{",
        f"const int64_t {var}_hi = {size} - {var}_lo > {var}_rows ? "
        f"{var}_lo + {var}_rows : {size};",
    ]


def _chunk_footer(var: str, size: str) -> list[str]:
    return [f"if ({var}_hi < {size} && np_poll()) {{ return NP_INTERRUPTED; }}", "}"]
