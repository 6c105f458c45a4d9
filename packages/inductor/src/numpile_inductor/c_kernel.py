"""C code generation for one fused kernel: a loop nest over runtime sizes and strides.

A kernel takes its loop sizes, then for each buffer a pointer and its element
strides, then its scalar inputs, all as arguments (nothing about shapes is
baked in but reshape divisors). Strides that are 0 or 1 in the example inputs
are specialized in a fast copy of the loop nest, chosen by one runtime test,
so contiguous inner loops vectorize; the generic copy takes any strides
(negative, zero, non-contiguous). The outer loops run under
`#pragma omp parallel for ... if(work >= threshold)`.

    >>> print(kernel_source(fused, buffers, parallel_threshold=65536))  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
import sympy

from .c_ops import c_expr, c_literal, c_type
from .index import c_index, loop_var
from .loop_ir import (
    Apply,
    Buffer,
    Constant,
    Expr,
    Load,
    ReductionStore,
    ScalarArg,
    Store,
    loads_of,
)
from .scheduler import FusedKernel

_BLOCK = 128
_LANES = 8


@attrs.frozen
class KernelSignature:
    """What the wrapper passes: sizes, then (pointer, strides) per buffer, then scalars."""

    name: str
    sizes: tuple[int, ...]
    buffers: tuple[str, ...]
    scalars: tuple[str, ...]


def _stride_symbol(buffer: str, dim: int) -> sympy.Symbol:
    return sympy.Symbol(f"{buffer}_s{dim}", integer=True)


class _Body:
    # One loop body: CSE'd scalar statements for the stores of a kernel.

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


def kernel_signature(fused: FusedKernel, buffers: dict[str, Buffer]) -> KernelSignature:
    """The argument list of `fused`'s C function.

    >>> kernel_signature(fused, buffers).buffers  # doctest: +SKIP
    ('a', 'b', 'v2')
    """
    names: dict[str, None] = {}
    scalars: dict[str, None] = {}
    for kernel in fused.kernels:
        for store in kernel.stores:
            for name in _buffer_reads(store.value, scalars):
                names.setdefault(name, None)
            names.setdefault(store.buffer, None)
    used = tuple(name for name in names if name not in fused.internal)
    return KernelSignature(fused.name, fused.ranges + fused.reduction_ranges, used, tuple(scalars))


def _buffer_reads(expr: Expr, scalars: dict[str, None]) -> list[str]:
    if isinstance(expr, Load):
        return [expr.buffer]
    if isinstance(expr, ScalarArg):
        scalars[expr.name] = None
        return []
    if isinstance(expr, Apply):
        return [name for arg in expr.args for name in _buffer_reads(arg, scalars)]
    return []


def kernel_source(
    fused: FusedKernel, buffers: dict[str, Buffer], *, parallel_threshold: int
) -> str:
    """The C definition of `fused` (a `static void` function).

    >>> "#pragma omp parallel for" in kernel_source(fused, buffers, parallel_threshold=1)
    ... # doctest: +SKIP
    """
    sig = kernel_signature(fused, buffers)
    params = [f"const int64_t n{i}" for i in range(len(sig.sizes))]
    header: list[str] = []
    fast: dict[tuple[str, int], Any] = {}
    generic: dict[tuple[str, int], Any] = {}
    checks: list[str] = []
    for name in sig.buffers:
        buf = buffers[name]
        ct = c_type(buf.dtype)
        qualifier = "" if name in fused.writes() else "const "
        params.append(f"{qualifier}{ct} *restrict {name}")
        params.append(f"const int64_t *restrict {name}_st")
        example = buf.example_strides
        for dim in range(len(buf.shape)):
            symbol = _stride_symbol(name, dim)
            header.append(f"    const int64_t {symbol} = {name}_st[{dim}];")
            generic[(name, dim)] = symbol
            fast[(name, dim)] = symbol
            if example is not None and example[dim] in (0, 1) and buf.shape[dim] != 1:
                fast[(name, dim)] = sympy.Integer(example[dim])
                checks.append(f"{symbol} == {example[dim]}")
            elif buf.shape[dim] == 1:
                fast[(name, dim)] = sympy.Integer(0)
                generic[(name, dim)] = sympy.Integer(0)
    for name in sig.scalars:
        params.append(f"const {c_type(buffers[name].dtype)} {name}")
    param_text = ", ".join(params) or "void"
    work = " * ".join(f"n{i}" for i in range(len(sig.sizes))) or "1"
    prologue = [*header, f"    const int64_t work = {work};", "    (void)work;"]
    nest = _pointwise_nest
    if fused.is_reduction:
        nest = _outer_reduction_nest if _prefers_outer(fused, buffers) else _reduction_nest
    if not checks:
        lines = [f"static void {fused.name}({param_text})", "{", *prologue]
        lines += nest(fused, buffers, generic, parallel_threshold, "    ")
        return "\n".join([*lines, "}"])
    # The generic copy is not vectorized: strided gathers cost GCC most of its compile
    # time and gain little; the fast copy (unit and zero strides) is what vectorizes.
    lines = [_NO_VECTORIZE, f"static void {fused.name}_generic({param_text})", "{", *prologue]
    lines += nest(fused, buffers, generic, parallel_threshold, "    ")
    lines += ["}", f"static void {fused.name}({param_text})", "{", *prologue]
    call_args = [p.rsplit(" ", 1)[-1].lstrip("*") for p in params]
    lines.append(f"    if (!({' && '.join(checks)})) {{")
    lines.append(f"        {fused.name}_generic({', '.join(call_args)});")
    lines.append("        return;")
    lines.append("    }")
    lines += nest(fused, buffers, fast, parallel_threshold, "    ")
    return "\n".join([*lines, "}"])


_NO_VECTORIZE = '__attribute__((optimize("no-tree-vectorize", "no-unroll-loops")))'


def _loops(count: int, prefix: str, size_offset: int, indent: str) -> tuple[list[str], str]:
    lines = []
    for d in range(count):
        var = loop_var(d, prefix)
        lines.append(f"{indent}for (int64_t {var} = 0; {var} < n{size_offset + d}; {var}++) {{")
        indent += "    "
    return lines, indent


def _pragma(indent: str, collapse: int, threshold: int) -> str:
    clause = f" collapse({collapse})" if collapse > 1 else ""
    return f"{indent}#pragma omp parallel for{clause} schedule(static) if(work >= {threshold})"


def _pointwise_nest(
    fused: FusedKernel,
    buffers: dict[str, Buffer],
    strides: dict[tuple[str, int], Any],
    threshold: int,
    indent: str,
) -> list[str]:
    ndim = len(fused.ranges)
    lines: list[str] = []
    if ndim:
        lines.append(_pragma(indent, max(1, ndim - 1), threshold))
    loops, inner = _loops(ndim, "x", 0, indent)
    lines += loops
    body = _Body(buffers, strides, {}, inner)
    for kernel in fused.kernels:
        for store in kernel.stores:
            assert isinstance(store, Store)
            body.store(store, store.buffer in fused.internal)
    lines += body.lines
    lines += [f"{indent}{'    ' * (ndim - 1 - d)}}}" for d in range(ndim)]
    return lines


_INIT = {"sum": "0", "prod": "1", "any": "0", "all": "1"}


def _init(store: ReductionStore) -> str:
    ct = c_type(store.dtype)
    if store.reduction_type in _INIT:
        return f"(({ct}){_INIT[store.reduction_type]})"
    high = store.reduction_type == "min"
    if store.dtype.kind == "f":
        return f"(({ct}){'' if high else '-'}INFINITY)"
    if store.dtype.kind == "b":
        return "1" if high else "0"
    info = np.iinfo(store.dtype)
    return c_literal(info.max if high else info.min, store.dtype)


def _combine(store: ReductionStore, acc: str, value: str) -> str:
    ct = c_type(store.dtype)
    kind = store.reduction_type
    if kind == "sum":
        return (
            f"{acc} = {acc} + {value};" if store.dtype.kind != "b" else f"{acc} = {acc} || {value};"
        )
    if kind == "prod":
        if store.dtype.kind == "b":
            return f"{acc} = {acc} && {value};"
        return f"{acc} = ({ct})({acc} * {value});"
    if kind == "any":
        return f"{acc} = {acc} || {value};"
    if kind == "all":
        return f"{acc} = {acc} && {value};"
    fn = "maximum" if kind == "max" else "minimum"
    return f"{acc} = {c_expr(fn, [acc, value], [store.dtype] * 2, store.dtype)};"


def _is_pairwise(store: ReductionStore) -> bool:
    return store.reduction_type == "sum" and store.dtype.kind in "fc"


def _finalize(store: ReductionStore, acc: str) -> str:
    if store.divisor is None:
        return acc
    ct = c_type(store.dtype)
    divisor = repr(float(store.divisor))
    if store.dtype.kind == "f":
        return f"(({ct})((double){acc} / {divisor}))"
    return f"(({ct})({acc} / {divisor}))"


def _reduction_nest(
    fused: FusedKernel,
    buffers: dict[str, Buffer],
    strides: dict[tuple[str, int], Any],
    threshold: int,
    indent: str,
) -> list[str]:
    rstores = [store for store in fused.stores if isinstance(store, ReductionStore)]
    assert len(rstores) == len(fused.stores)
    ndim, rdim = len(fused.ranges), len(fused.reduction_ranges)
    lines: list[str] = []
    if ndim:
        lines.append(_pragma(indent, ndim, threshold))
    loops, inner = _loops(ndim, "x", 0, indent)
    lines += loops
    accs = [f"acc{i}" for i in range(len(rstores))]
    for acc, store in zip(accs, rstores, strict=True):
        lines.append(f"{inner}{c_type(store.dtype)} {acc} = {_init(store)};")
    pairwise = rdim > 0 and any(_is_pairwise(store) for store in rstores)
    if rdim == 0:
        body = _Body(buffers, strides, {}, inner)
        for acc, store in zip(accs, rstores, strict=True):
            lines_value = body.emit(store.value)
            body.lines.append(f"{inner}{_combine(store, acc, lines_value)}")
        lines += body.lines
    elif not pairwise:
        rloops, rinner = _loops(rdim, "r", ndim, inner)
        lines += rloops
        body = _Body(buffers, strides, {}, rinner)
        for acc, store in zip(accs, rstores, strict=True):
            value = body.emit(store.value)
            body.lines.append(f"{rinner}{_combine(store, acc, value)}")
        lines += body.lines
        lines += [f"{inner}{'    ' * (rdim - 1 - d)}}}" for d in range(rdim)]
    else:
        lines += _pairwise_rows(rstores, accs, buffers, strides, ndim, rdim, inner)
    for acc, store in zip(accs, rstores, strict=True):
        body = _Body(buffers, strides, {}, inner)
        addr = body.address(store.buffer, store.index)
        lines.append(f"{inner}{store.buffer}[{addr}] = {_finalize(store, acc)};")
    lines += [f"{indent}{'    ' * (ndim - 1 - d)}}}" for d in range(ndim)]
    return lines


def _pairwise_rows(
    stores: list[ReductionStore],
    accs: list[str],
    buffers: dict[str, Buffer],
    strides: dict[tuple[str, int], Any],
    ndim: int,
    rdim: int,
    indent: str,
) -> list[str]:
    # Outer reduction loops run in order; the innermost one is summed blockwise: 8 lanes
    # over blocks of 128, block sums merged as a binary counter (a pairwise tree).
    lines: list[str] = []
    outer, inner = _loops(rdim - 1, "r", ndim, indent)
    lines += outer
    last = loop_var(rdim - 1, "r")
    size = f"n{ndim + rdim - 1}"
    pw = [i for i, store in enumerate(stores) if _is_pairwise(store)]
    for i in pw:
        ct = c_type(stores[i].dtype)
        lines.append(f"{inner}{ct} stk{i}[64];")
    lines.append(f"{inner}int sp = 0;")
    lines.append(f"{inner}int64_t blocks = 0;")
    lines.append(f"{inner}for (int64_t rb = 0; rb < {size}; rb += {_BLOCK}) {{")
    blk = inner + "    "
    lines.append(f"{blk}const int64_t re = rb + {_BLOCK} < {size} ? rb + {_BLOCK} : {size};")
    for i in pw:
        ct = c_type(stores[i].dtype)
        zeros = ", ".join(["0"] * _LANES)
        lines.append(f"{blk}{ct} p{i}[{_LANES}] = {{{zeros}}};")
    lines.append(f"{blk}int64_t rk = rb;")
    lines.append(f"{blk}for (; rk + {_LANES} <= re; rk += {_LANES}) {{")
    lane = blk + "        "
    lines.append(f"{blk}    for (int j = 0; j < {_LANES}; j++) {{")
    lines.append(f"{lane}const int64_t {last} = rk + j;")
    lines += _accumulate(stores, accs, buffers, strides, lane, lambda i: f"p{i}[j]")
    lines.append(f"{blk}    }}")
    lines.append(f"{blk}}}")
    for i in pw:
        ct = c_type(stores[i].dtype)
        p = [f"p{i}[{k}]" for k in range(_LANES)]
        tree = f"(({p[0]} + {p[1]}) + ({p[2]} + {p[3]})) + (({p[4]} + {p[5]}) + ({p[6]} + {p[7]}))"
        lines.append(f"{blk}{ct} bs{i} = {tree};")
    lines.append(f"{blk}for (; rk < re; rk++) {{")
    tail = blk + "    "
    lines.append(f"{tail}const int64_t {last} = rk;")
    lines += _accumulate(stores, accs, buffers, strides, tail, lambda i: f"bs{i}")
    lines.append(f"{blk}}}")
    lines.append(f"{blk}int64_t carry = blocks;")
    lines.append(f"{blk}int depth = sp;")
    lines.append(f"{blk}while (carry & 1) {{")
    lines.append(f"{blk}    depth--;")
    for i in pw:
        lines.append(f"{blk}    bs{i} = stk{i}[depth] + bs{i};")
    lines.append(f"{blk}    carry >>= 1;")
    lines.append(f"{blk}}}")
    for i in pw:
        lines.append(f"{blk}stk{i}[depth] = bs{i};")
    lines.append(f"{blk}sp = depth + 1;")
    lines.append(f"{blk}blocks++;")
    lines.append(f"{inner}}}")
    for i in pw:
        ct = c_type(stores[i].dtype)
        lines.append(f"{inner}if (sp > 0) {{")
        lines.append(f"{inner}    {ct} row{i} = stk{i}[sp - 1];")
        lines.append(
            f"{inner}    for (int q = sp - 2; q >= 0; q--) {{ row{i} = stk{i}[q] + row{i}; }}"
        )
        lines.append(f"{inner}    {accs[i]} = {accs[i]} + row{i};")
        lines.append(f"{inner}}}")
    lines += [f"{indent}{'    ' * (rdim - 2 - d)}}}" for d in range(rdim - 1)]
    return lines


def _accumulate(
    stores: list[ReductionStore],
    accs: list[str],
    buffers: dict[str, Buffer],
    strides: dict[tuple[str, int], Any],
    indent: str,
    target: Any,
) -> list[str]:
    body = _Body(buffers, strides, {}, indent)
    for i, (acc, store) in enumerate(zip(accs, stores, strict=True)):
        value = body.emit(store.value)
        if _is_pairwise(store):
            body.lines.append(f"{indent}{target(i)} += {value};")
        else:
            body.lines.append(f"{indent}{_combine(store, acc, value)}")
    return body.lines


_COLUMN_BLOCK = 512


def _prefers_outer(fused: FusedKernel, buffers: dict[str, Buffer]) -> bool:
    # Reducing over an outer axis of a row-major input (e.g. sum(axis=0)): walking the
    # reduced axis innermost would stride through memory. With the example layouts, prefer
    # accumulating whole rows when some load is contiguous along the last output dim and
    # none is contiguous along the last reduced dim.
    if not fused.ranges or not fused.reduction_ranges:
        return False
    x_last = loop_var(len(fused.ranges) - 1)
    r_last = loop_var(len(fused.reduction_ranges) - 1, "r")
    along_x = False
    for store in fused.stores:
        for load in loads_of(store.value):
            example = buffers[load.buffer].example_strides
            if example is None:
                return False
            address = sum(
                (sympy.sympify(i) * s for i, s in zip(load.index, example, strict=True)),
                sympy.Integer(0),
            )
            coef_x, coef_r = sympy.diff(address, x_last), sympy.diff(address, r_last)
            if coef_r in (1, -1):
                return False
            along_x = along_x or coef_x in (1, -1)
    return along_x


def _outer_reduction_nest(
    fused: FusedKernel,
    buffers: dict[str, Buffer],
    strides: dict[tuple[str, int], Any],
    threshold: int,
    indent: str,
) -> list[str]:
    # Accumulate straight into the output, a block of columns at a time, walking the
    # reduced axes outside the last output axis. Sums run in the reduced axes' order,
    # as NumPy's own outer-axis reductions do.
    rstores = [store for store in fused.stores if isinstance(store, ReductionStore)]
    ndim, rdim = len(fused.ranges), len(fused.reduction_ranges)
    last = loop_var(ndim - 1)
    size = f"n{ndim - 1}"
    lines = [_pragma(indent, ndim, threshold)]
    outer, inner = _loops(ndim - 1, "x", 0, indent)
    lines += outer
    lines.append(f"{inner}for (int64_t xb = 0; xb < {size}; xb += {_COLUMN_BLOCK}) {{")
    blk = inner + "    "
    lines.append(
        f"{blk}const int64_t xe = xb + {_COLUMN_BLOCK} < {size} ? xb + {_COLUMN_BLOCK} : {size};"
    )
    addr = _Body(buffers, strides, {}, blk)
    targets = [f"{s.buffer}[{addr.address(s.buffer, s.index)}]" for s in rstores]
    column = f"for (int64_t {last} = xb; {last} < xe; {last}++) {{"
    lines.append(f"{blk}{column}")
    lines += [f"{blk}    {t} = {_init(s)};" for t, s in zip(targets, rstores, strict=True)]
    lines.append(f"{blk}}}")
    rloops, rinner = _loops(rdim, "r", ndim, blk)
    lines += rloops
    lines.append(f"{rinner}{column}")
    body = _Body(buffers, strides, {}, rinner + "    ")
    for target, store in zip(targets, rstores, strict=True):
        value = body.emit(store.value)
        body.lines.append(f"{rinner}    {_combine(store, target, value)}")
    lines += body.lines
    lines.append(f"{rinner}}}")
    lines += [f"{blk}{'    ' * (rdim - 1 - d)}}}" for d in range(rdim)]
    if any(store.divisor is not None for store in rstores):
        lines.append(f"{blk}{column}")
        for target, store in zip(targets, rstores, strict=True):
            if store.divisor is not None:
                lines.append(f"{blk}    {target} = {_finalize(store, target)};")
        lines.append(f"{blk}}}")
    lines.append(f"{inner}}}")
    lines += [f"{indent}{'    ' * (ndim - 2 - d)}}}" for d in range(ndim - 1)]
    return lines
