"""The text of C loop nests: a loop body emitter and the loops around it.

`LoopBody` turns loop-IR stores into one C statement per scalar operation
(common subexpressions computed once); `loops` opens `for` loops over runtime
sizes, `close_loops` closes them, `parallel_open` / `parallel_close` parallelize the
outermost.

    >>> loops("x", ["n0", "n1"], "")[0][0]
    'for (int64_t x0 = 0; x0 < n0; x0++) {'
"""

from __future__ import annotations

from typing import Any

import numpy as np
import sympy

from ...index import c_index, loop_var
from ...loop_ir import Apply, Buffer, Constant, Expr, Load, ScalarArg, Store
from .ops import c_expr, c_literal, c_type


class LoopBody:
    """One loop body: CSE'd scalar statements for the stores of a kernel.

    `strides` maps (buffer, dim) to its element stride (a symbol or a constant);
    `locals_` maps buffers held in registers to their C expressions.

        >>> LoopBody({}, {}, {}, "    ").emit(Constant(1.5, np.dtype("float64")))
        '((double)1.5)'
    """

    def __init__(
        self,
        buffers: dict[str, Buffer],
        strides: dict[tuple[str, int], Any],
        locals_: dict[str, str],
        indent: str,
    ) -> None:
        self.buffers = buffers
        self.strides = strides
        self.locals = dict(locals_)
        self.lines: list[str] = []
        self.cache: dict[Any, str] = {}
        self.indent = indent
        self.counter = 0

    def _tmp(self, dtype: np.dtype[Any], text: str) -> str:
        name = f"t{self.counter}"
        self.counter += 1
        self.lines.append(f"{self.indent}const {c_type(dtype)} {name} = {text};")
        return name

    def address(self, buffer: str, index: tuple[Any, ...]) -> str:
        flat: Any = sympy.Integer(0)
        for dim, idx in enumerate(index):
            flat = flat + sympy.sympify(idx) * self.strides[(buffer, dim)]
        return c_index(sympy.expand(flat))

    def emit(self, expr: Expr) -> str:
        key = expr
        if key in self.cache:
            return self.cache[key]
        if isinstance(expr, Load):
            if expr.buffer in self.locals:
                return self.locals[expr.buffer]
            text = self._tmp(expr.dtype, f"{expr.buffer}[{self.address(expr.buffer, expr.index)}]")
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

    def store(self, store: Store, internal: bool) -> None:
        value = self.emit(store.value)
        if not internal:
            addr = self.address(store.buffer, store.index)
            self.lines.append(f"{self.indent}{store.buffer}[{addr}] = {value};")
        self.locals[store.buffer] = value


def loops(
    prefix: str, names: list[str], indent: str, first: int = 0, *, ivdep: bool = False
) -> tuple[list[str], str]:
    """`for` lines over `prefix{d} < names[d]` for d >= first, and the inner indent.

    `ivdep` puts `#pragma GCC ivdep` on the innermost loop: its iterations touch no element
    another iteration touches. Use it only when no buffer of the loop aliases another: it
    restores what `restrict` says, which GCC forgets in OpenMP-outlined loop bodies.

    >>> loops("r", ["n2"], "  ")
    (['  for (int64_t r0 = 0; r0 < n2; r0++) {'], '      ')
    >>> loops("x", ["n0"], "", ivdep=True)[0][0]
    '#pragma GCC ivdep'
    """
    lines = []
    for d in range(first, len(names)):
        var = loop_var(d, prefix)
        if ivdep and d == len(names) - 1:
            lines.append(f"{indent}#pragma GCC ivdep")
        lines.append(f"{indent}for (int64_t {var} = 0; {var} < {names[d]}; {var}++) {{")
        indent += "    "
    return lines, indent


def close_loops(indent: str, count: int) -> list[str]:
    """The closing braces of `count` loops opened at `indent`.

    >>> close_loops("", 2)
    ['    }', '}']
    """
    return [f"{indent}{'    ' * (count - 1 - d)}}}" for d in range(count)]


def size_names(count: int) -> list[str]:
    """The C names of a kernel's size arguments.

    >>> size_names(2)
    ['n0', 'n1']
    """
    return [f"n{i}" for i in range(count)]


def parallel_open(indent: str, collapse: int, threshold: int, *, simd: bool = False) -> list[str]:
    """Open an OpenMP parallel region, taken when `work >= threshold`, around a `for` over
    `collapse` loops; close it with `parallel_close`.

    Each thread clears its floating-point flags on entry and ORs them into the kernel's
    `np_fp` on exit (the region reduces `np_fp` with `|`). `simd` also marks the loop's
    iterations independent (the `ivdep` of `loops` for a loop that is both the parallel
    and the innermost one).

    >>> print("\\n".join(parallel_open("", 1, 10)))
    np_fp |= NP_FP_TEST();
    #pragma omp parallel if(work >= 10) reduction(|:np_fp)
    {
    NP_FP_CLEAR();
    #pragma omp for schedule(static) nowait
    >>> parallel_open("", 2, 10, simd=True)[-1]
    '#pragma omp for simd collapse(2) schedule(static) nowait'
    """
    clause = f" collapse({collapse})" if collapse > 1 else ""
    simd_clause = " simd" if simd else ""
    return [
        f"{indent}np_fp |= NP_FP_TEST();",
        f"{indent}#pragma omp parallel if(work >= {threshold}) reduction(|:np_fp)",
        f"{indent}{{",
        f"{indent}NP_FP_CLEAR();",
        f"{indent}#pragma omp for{simd_clause}{clause} schedule(static) nowait",
    ]


def parallel_close(indent: str) -> list[str]:
    """Close a region `parallel_open` opened: the thread's flags join `np_fp`.

    >>> parallel_close("")
    ['np_fp |= NP_FP_TEST();', '}']
    """
    return [f"{indent}np_fp |= NP_FP_TEST();", f"{indent}}}"]
