"""Triton code generation for one fused kernel of the shared loop IR.

The same `FusedKernel`s the C backend compiles become `@triton.jit`
functions. A program instance handles a block of the flattened output
(`xindex`, masked by `xmask`); loop variables `x0, x1, ...` are recovered
from it by division and modulo, then every `Load`/`Store` index (sympy)
is printed as Python integer arithmetic over them and the buffers' element
strides, which are kernel arguments (Triton specializes strides equal to 1
on its own). A reduction kernel works on `[XBLOCK, RBLOCK]` tiles:
*persistent* (one tile covers the reduced extent, reduced once) when the row
fits in `max_rblock`, *looped* otherwise (an accumulator tile, combined
element-wise per step, reduced at the end). Scalar graph inputs arrive by
value, each parameter annotated with its dtype (`p_lr: "float64"`: without it
Triton would take a Python float as float32) and not specialized on its value;
with `TritonOptions.scalars_in_memory` (the CUDA-graph modes, loop bodies a loop graph
records) each arrives as a pointer to one element of that dtype instead (`p_lr_ptr`),
loaded once per program (`p_lr = tl.load(p_lr_ptr)`), so that a CUDA graph replays with
new values (`numpile_runtime.ScalarSlots`); `memory_scalars` says which (not the
`scalars_by_value` ones: a loop body's index, numbers extern calls read too).

    >>> print(kernel_source(fused, buffers, TritonOptions()).source)  # doctest: +SKIP
    @triton.jit
    def kernel0(p_in0, p_in0_s0, p_v1, p_v1_s0, xnumel, XBLOCK: tl.constexpr):
        ...
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from typing import Any

import attrs
import numpy as np
import sympy
from sympy.printing.str import StrPrinter

from numpile_capture import contiguous_strides

from ...config import TritonOptions
from ...loop_ir import (
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
from ...scheduler import FusedKernel
from ..common import CodeBuffer, supports
from ..memory_order import memory_order
from .ops import reduction_identity, tl_type, triton_expr, triton_literal


class TritonUnsupported(Exception):  # noqa: N818 - it names the event
    """A kernel uses an operation or dtype the Triton table lacks (complex, float16, ...)."""


@attrs.frozen
class TritonKernel:
    """One generated `@triton.jit` function and how to launch it.

    Arguments in order: for each of `buffers` its pointer then its strides of
    the dims in `stride_dims`, a zeroed int32 counter when `counter` (a split reduction
    finished by its last program, `codegen/triton/split.py`), each scalar by value
    (`scalar_value`) or, those named in `in_memory`, as a one-element array of its dtype,
    `xnumel`,
    `rnumel` (reductions), the `size_symbols` (sizes known only at run time,
    e.g. the length of a boolean-mask selection); constexprs `XBLOCK` (and
    `RBLOCK`). `xnumel`/`rnumel` are ints or sympy expressions over
    `size_symbols`. The grid is `ceil(xnumel / xblock)` programs.
    """

    name: str
    source: str
    buffers: tuple[str, ...]
    stride_dims: tuple[tuple[int, ...], ...]
    scalars: tuple[str, ...]
    xnumel: Any
    rnumel: Any
    xblock: int
    rblock: int
    num_warps: int
    is_reduction: bool
    origins: tuple[str, ...] = ()
    size_symbols: tuple[str, ...] = ()
    outer: bool = False  # a reduction whose loads are contiguous along the kept axes
    split: int = 1  # the first stage of a split reduction: chunks per row (codegen/triton/split.py)
    counter: bool = False  # takes a zeroed int32 counter after its buffers (a last-block finish)
    # Buffers only this kernel reads and writes, within one launch (a last-block finish's
    # partial results): the runner keeps them per stream (codegen/triton/scratch.py).
    scratch: tuple[str, ...] = ()
    rows: bool = False  # a row group's kernel (codegen/triton/rows.py): its own tiles and warps
    template: str = ""  # "mm": a matmul template, its blocks fixed in its source
    # The scalars taken as pointers to one element (`scalar_params`), the others by value.
    in_memory: tuple[str, ...] = ()
    # A row kernel over a run-time row length (codegen/triton/rows.py) takes a `PERSISTENT`
    # constexpr, which `fit_blocks` sets per launch: True, each row in one tile (`rblock`
    # covers it); False, looped. None: no such constexpr (the source is one or the other).
    persistent: bool | None = None

    @property
    def scalars_in_memory(self) -> bool:
        """Whether the kernel reads some of its scalars from memory."""
        return bool(self.in_memory)

    def grid(self, xnumel: int) -> tuple[int]:
        """Program instances for `xnumel` output elements (at least one)."""
        return (max(1, -(-xnumel // self.xblock)),)


def arg_kinds(kernel: TritonKernel) -> tuple[str, ...]:
    """What each positional argument of `kernel` is, for `numpile_runtime.TritonLauncher`:
    "ptr" per buffer, "int" per stride, size and element count, "scalar" per value
    ("ptr" for a scalar the kernel reads from memory).

    >>> k = TritonKernel("k", "", ("a",), ((0,),), ("lr", "i"), 8, 0, 8, 1, 4, False)
    >>> arg_kinds(k), arg_kinds(attrs.evolve(k, in_memory=("lr",)))[2:4]
    (('ptr', 'int', 'scalar', 'scalar', 'int'), ('ptr', 'scalar'))
    """
    kinds: list[str] = []
    for dims in kernel.stride_dims:
        kinds += ["ptr", *("int" for _ in dims)]
    if kernel.counter:
        kinds.append("ptr")
    kinds += ["ptr" if name in kernel.in_memory else "scalar" for name in kernel.scalars]
    kinds += ["int" for _ in kernel.size_symbols]
    kinds += ["int", "int"] if kernel.is_reduction else ["int"]
    return tuple(kinds)


def is_persistent(kernel: TritonKernel) -> bool:
    """Whether a launch of reduction `kernel` reduces each row in one tile: its `rblock`
    covers the row and must stay (tuning may change only rows per program and warps).

    >>> k = TritonKernel("k", "", (), (), (), 8, 100, 1, 128, 4, True)
    >>> is_persistent(k), is_persistent(attrs.evolve(k, rblock=64))
    (True, False)
    """
    if kernel.persistent is not None:
        return kernel.persistent
    return isinstance(kernel.rnumel, int) and kernel.rblock >= kernel.rnumel


def persistent_row_blocks(xnumel: Any, rnumel: int, options: TritonOptions) -> tuple[int, int, int]:
    """(XBLOCK, RBLOCK, warps) of a row kernel that keeps rows of `rnumel` elements in one
    tile: RBLOCK covers the row, rows per program fill `row_tile`, 8 warps from rows of
    2048 (one row per program was the faster on a GPU; docs/performance_notes.md).

    >>> persistent_row_blocks(4096, 1000, TritonOptions())
    (1, 1024, 4)
    """
    rblock = _next_pow2(rnumel)
    xblock = max(1, _pow2_at_most(xnumel, options.row_tile // rblock))
    return xblock, rblock, 8 if rblock >= 2048 else options.num_warps


def looped_row_blocks(rnumel: int, options: TritonOptions) -> tuple[int, int]:
    """(RBLOCK, warps) of a row kernel looped over rows of `rnumel` elements: tiles of up to
    `looped_rblock` elements with a warp per 512 of them (at most 16): long tiles with many
    warps stream a long row fastest (as fast as torch.compile's kernel; figures in
    docs/performance_notes.md).

    >>> looped_row_blocks(32768, TritonOptions()), looped_row_blocks(3000, TritonOptions())
    ((8192, 16), (4096, 8))
    """
    rblock = min(options.looped_rblock, _next_pow2(rnumel))
    return rblock, max(options.num_warps, min(16, rblock // 512))


def _next_pow2(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


class _IndexPrinter(StrPrinter):  # type: ignore[misc]
    def _print_FloorDiv(self, expr: Any) -> str:  # noqa: N802 - sympy's printer naming
        base, divisor = expr.args
        return f"(({self._print(base)}) // {self._print(divisor)})"

    def _print_ModularIndexing(self, expr: Any) -> str:  # noqa: N802
        base, divisor, modulus = expr.args
        inner = self._print(base)
        if divisor != 1:
            inner = f"({inner}) // {self._print(divisor)}"
        return f"(({inner}) % {self._print(modulus)})"


_PRINTER = _IndexPrinter()


def triton_index(expr: Any) -> str:
    """The Python/Triton spelling of an index expression (nonnegative floor division).

    >>> from numpile_inductor.index import ModularIndexing, loop_var
    >>> triton_index(ModularIndexing(loop_var(0), 4, 3) + 1)
    '(((x0) // 4) % 3) + 1'
    """
    text: str = _PRINTER.doprint(sympy.sympify(expr))
    return text


def _param(buffer: str) -> str:
    # Kernel parameter of a buffer: prefixed so no buffer name meets a generated local
    # (x0, xindex, mask, tmp3) or a module name (tl, triton).
    return f"p_{buffer}"


def _stride_symbol(buffer: str, dim: int) -> sympy.Symbol:
    return sympy.Symbol(f"{_param(buffer)}_s{dim}", integer=True)


def _is_loop_var(symbol: Any) -> bool:
    name = str(symbol)
    return name[:1] in ("x", "r") and name[1:].isdigit()


class _Body:
    # CSE'd statements of one kernel body, written to `buf`; `shape` is the tile shape
    # (source text) and `mask` the mask name that loads and stores use.
    def __init__(self, buffers: dict[str, Buffer], shape: str, mask: str, buf: CodeBuffer) -> None:
        self.buffers = buffers
        self.shape = shape
        self.mask = mask
        self.buf = buf
        self.cache: dict[Any, str] = {}
        self.locals: dict[str, str] = {}
        self.counter = 0
        self.eviction = ""  # loads' L2 eviction policy ("evict_last": read again soon)

    def _tmp(self, text: str) -> str:
        name = f"tmp{self.counter}"
        self.counter += 1
        self.buf.writeline(f"{name} = {text}")
        return name

    def address(self, buffer: str, index: tuple[Any, ...], *, tile: bool = False) -> str:
        # `tile`: the address must have the tile's shape (a store of a block value), even
        # when it does not depend on the loop variables (a 0-d output).
        shape = self.buffers[buffer].shape
        flat: Any = sympy.Integer(0)
        for dim, idx in enumerate(index):
            if shape[dim] != 1:
                flat = flat + sympy.sympify(idx) * _stride_symbol(buffer, dim)
        text = triton_index(sympy.expand(flat))
        if tile and not any(_is_loop_var(s) for s in sympy.sympify(flat).free_symbols):
            text = f"{text} + 0 * xindex"
        return text

    def emit(self, expr: Expr) -> str:
        if expr in self.cache:
            return self.cache[expr]
        if isinstance(expr, Load):
            if expr.indirect:
                raise TritonUnsupported(f"a gather (an index read from data) in {expr}")
            if expr.buffer in self.locals:
                return self.locals[expr.buffer]
            addr = self.address(expr.buffer, expr.index, tile=True)
            policy = f", eviction_policy={self.eviction!r}" if self.eviction else ""
            text = self._tmp(
                f"tl.load({_param(expr.buffer)} + ({addr}), mask={self.mask}, other=0{policy})"
            )
        elif isinstance(expr, Constant):
            return triton_literal(expr.value, expr.dtype, self.shape)
        elif isinstance(expr, ScalarArg):
            # A typed 0-d value on a GPU, a Python number under the interpreter: as a tile,
            # so that an expression of scalars alone (np.maximum(lr, 1e-4)) is one too.
            param = _param(expr.name)
            text = self._tmp(f"tl.full({self.shape}, {param}, {tl_type(expr.dtype)})")
        else:
            assert isinstance(expr, Apply)
            args = [self.emit(arg) for arg in expr.args]
            dtypes = [arg.dtype for arg in expr.args]
            text = self._tmp(triton_expr(expr.fn, args, dtypes, expr.dtype))
        self.cache[expr] = text
        return text

    def store(self, store: Store, internal: bool) -> None:
        value = self.emit(store.value)
        if not internal:
            addr = self.address(store.buffer, store.index, tile=True)
            pointer = f"{_param(store.buffer)} + ({addr})"
            self.buf.writeline(f"tl.store({pointer}, {value}, mask={self.mask})")
        self.locals[store.buffer] = value


def _check_supported(expr: Expr) -> None:
    if tl_type(expr.dtype) is None:
        raise TritonUnsupported(f"dtype {expr.dtype} in {expr}")
    if isinstance(expr, Apply):
        loop = expr.args[0].dtype if expr.args else expr.dtype
        if not supports(expr.fn, loop, backend="triton"):
            raise TritonUnsupported(f"{expr.fn} on {loop}")
        for arg in expr.args:
            _check_supported(arg)


def _signature(fused: FusedKernel, buffers: dict[str, Buffer]) -> tuple[list[str], list[str]]:
    names: dict[str, None] = {}
    scalars: dict[str, None] = {}

    def visit(expr: Expr) -> None:
        if isinstance(expr, Load):
            names.setdefault(expr.buffer, None)
        elif isinstance(expr, ScalarArg):
            scalars.setdefault(expr.name, None)
        elif isinstance(expr, Apply):
            for arg in expr.args:
                visit(arg)

    if fused.is_scatter:
        raise TritonUnsupported(f"a scatter-accumulate ({fused.name})")
    for store in fused.stores:
        _check_supported(store.value)
        visit(store.value)
        names.setdefault(store.buffer, None)
    used = [name for name in names if name not in fused.internal]
    for name in used:
        if tl_type(buffers[name].dtype) is None:
            raise TritonUnsupported(f"buffer {name} of dtype {buffers[name].dtype}")
    return used, list(scalars)


def _unflatten(
    buf: CodeBuffer,
    prefix: str,
    flat: str,
    ranges: tuple[Any, ...],
    order: tuple[int, ...] | None = None,
) -> None:
    # The loop variables of flat index `flat`, the last dim of `order` (outermost first; C
    # order by default) the fastest: consecutive lanes then touch consecutive elements of
    # arrays laid out in that order.
    dims = tuple(range(len(ranges))) if order is None else order
    lines = []
    step: Any = sympy.Integer(1)
    for dim in reversed(dims):
        size = sympy.sympify(ranges[dim])
        var = f"{prefix}{dim}"
        if size == 1:
            # Zero with the block's shape: an address of it alone is a block too, as
            # the block mask of its load needs.
            text = f"0 * {flat}"
        elif dim == dims[0]:
            text = f"{flat} // ({triton_index(step)})" if step != 1 else flat
        elif step == 1:
            text = f"{flat} % ({triton_index(size)})"
        else:
            text = f"({flat} // ({triton_index(step)})) % ({triton_index(size)})"
        lines.append(f"{var} = {text}")
        step = step * size
    buf.writelines(reversed(lines))


def _size_symbols(fused: FusedKernel) -> list[str]:
    # Free symbols of sizes and indices other than loop variables and strides, by name.
    found: set[str] = set()
    exprs: list[Any] = [*fused.ranges, *fused.reduction_ranges]
    for store in fused.stores:
        exprs += list(store.index)
        exprs += [i for load in loads_of(store.value) for i in load.index]
    for expr in exprs:
        for symbol in sympy.sympify(expr).free_symbols:
            if not _is_loop_var(symbol):
                found.add(str(symbol))
    return sorted(found)


def _pow2_at_most(n: Any, cap: int) -> int:
    # The block covering `n` elements, capped; sizes unknown until run time take the cap.
    if not isinstance(n, int | sympy.Integer):
        return cap
    return min(_next_pow2(int(n)), cap)


def kernel_source(
    fused: FusedKernel, buffers: dict[str, Buffer], options: TritonOptions
) -> TritonKernel:
    """The `@triton.jit` source of a pointwise or reduction kernel, and its launch facts.

    Row groups (`fused.parts`) become one kernel in `codegen/triton/rows.py`, or are generated
    part by part (`backend.generate_triton`).

    >>> kernel_source(fused, buffers, TritonOptions()).grid(4000)  # doctest: +SKIP
    (4,)
    """
    assert not fused.parts, "row groups are split into their parts before code generation"
    used, scalars = _signature(fused, buffers)
    in_memory = memory_scalars(scalars, options)
    stride_dims, params = buffer_params(used, buffers)
    params += scalar_params(scalars, buffers, in_memory=in_memory)
    symbols = _size_symbols(fused)
    params += symbols
    xnumel = _product(fused.ranges)
    rnumel = _product(fused.reduction_ranges) if fused.is_reduction else 0
    origins = fused.origins
    header = [jit_decorator(scalars, in_memory=in_memory)]
    code = CodeBuffer(level=1)
    write_scalar_loads(code, scalars, in_memory=in_memory)
    outer = False
    num_warps = options.num_warps
    if not fused.is_reduction:
        xblock = _pow2_at_most(xnumel, options.max_xblock)
        params += ["xnumel", "XBLOCK: tl.constexpr", "INDEX64: tl.constexpr"]
        header.append(f"def {fused.name}({', '.join(params)}):")
        _pointwise_body(fused, buffers, code)
        rblock = 1
    else:
        rblock = _pow2_at_most(rnumel, options.max_rblock)
        xblock = max(1, _pow2_at_most(xnumel, options.max_tile // rblock))
        params += ["xnumel", "rnumel", *REDUCTION_CONSTEXPRS]
        header.append(f"def {fused.name}({', '.join(params)}):")
        persistent = isinstance(rnumel, int) and _next_pow2(rnumel) <= options.max_rblock
        outer = not persistent and _outer_reduction(fused, buffers)
        if outer:
            xblock, rblock = _outer_blocks(xnumel, rnumel, options)
        elif not persistent:
            xblock = 1
            num_warps = looped_warps(xblock, rblock, options)
        _reduction_body(fused, buffers, code, persistent=persistent)
    note = f"    # {'reduction' if fused.is_reduction else 'pointwise'}"
    note += f" over {list(fused.ranges)}"
    if fused.is_reduction:
        note += f" x {list(fused.reduction_ranges)}"
    if origins:
        note += f"; fuses {', '.join(origins)}"
    source = "\n".join([*header, note, *code.lines]) + "\n"
    return TritonKernel(
        fused.name,
        source,
        tuple(used),
        stride_dims,
        tuple(scalars),
        xnumel,
        rnumel,
        xblock,
        rblock,
        num_warps,
        fused.is_reduction,
        origins,
        tuple(symbols),
        outer,
        in_memory=in_memory,
    )


def fit_blocks(
    kernel: TritonKernel, xnumel: int, rnumel: int, options: TritonOptions
) -> TritonKernel:
    """`kernel` with block sizes chosen for sizes known only at run time (dynamic shapes).

    Block sizes are constexprs of the launch, so a kernel compiled for `float32[s0]`
    gets small blocks for small arrays (a power of two: few Triton specializations).
    A row kernel over a run-time row length also gets its `PERSISTENT` branch here.

    >>> fit_blocks(kernel, 100, 0, TritonOptions()).xblock  # doctest: +SKIP
    128
    """
    if not kernel.is_reduction:
        return attrs.evolve(kernel, xblock=_pow2_at_most(xnumel, options.max_xblock))
    if kernel.persistent is not None:
        # A row kernel over a run-time row length: launched as the static kernel for this
        # length would be, persistent where the row fits in a tile, else looped.
        if _next_pow2(rnumel) > options.max_rblock:
            rblock, num_warps = looped_row_blocks(rnumel, options)
            return attrs.evolve(
                kernel, xblock=1, rblock=rblock, num_warps=num_warps, persistent=False
            )
        xblock, rblock, num_warps = persistent_row_blocks(xnumel, rnumel, options)
        return attrs.evolve(
            kernel, xblock=xblock, rblock=rblock, num_warps=num_warps, persistent=True
        )
    if kernel.outer:
        xblock, rblock = _outer_blocks(xnumel, rnumel, options)
        return attrs.evolve(kernel, xblock=xblock, rblock=rblock)
    rblock = _pow2_at_most(rnumel, options.max_rblock)
    if isinstance(kernel.rnumel, int):
        rblock = kernel.rblock  # static rows: the code may be persistent over this block
    if rblock < rnumel:  # looped: one row per program, as kernel_source does
        if kernel.rows and isinstance(kernel.rnumel, int):
            return kernel  # tiles and warps chosen for this row length (codegen/triton/rows.py)
        return attrs.evolve(
            kernel, xblock=1, rblock=rblock, num_warps=looped_warps(1, rblock, options)
        )
    tile = options.row_tile if kernel.rows else options.max_tile
    xblock = max(1, _pow2_at_most(xnumel, tile // rblock))
    return attrs.evolve(kernel, xblock=xblock, rblock=rblock)


def looped_warps(xblock: int, rblock: int, options: TritonOptions) -> int:
    """Warps for a looped reduction tile: one per 256 elements of it, from `num_warps` up
    to 8 (a 1 x 2048 tile gets 8, as torch's inductor gives its looped reductions).

    >>> looped_warps(1, 2048, TritonOptions()), looped_warps(1, 512, TritonOptions())
    (8, 4)
    """
    return max(options.num_warps, min(8, xblock * rblock // 256))


# Kept elements per program of an outer reduction: a warp's loads then cover whole cache
# lines of a row, and programs stay many enough to fill the device.
OUTER_XBLOCK = 16


def _outer_blocks(xnumel: Any, rnumel: Any, options: TritonOptions) -> tuple[int, int]:
    xblock = _pow2_at_most(xnumel, OUTER_XBLOCK)
    return xblock, _pow2_at_most(rnumel, max(1, options.max_tile // xblock))


def _outer_reduction(fused: FusedKernel, buffers: dict[str, Buffer]) -> bool:
    # Whether most loads of the reduction are contiguous along the kept (x) axes, as in a
    # sum over axis 0 of a C-ordered array: then the tile spans many kept elements and few
    # reduced ones.
    votes = 0
    for store in fused.stores:
        for load in loads_of(store.value):
            buf = buffers[load.buffer]
            strides = buf.example_strides or contiguous_strides(buf.shape)
            dims = [
                d
                for d, (n, s) in enumerate(zip(buf.shape, strides, strict=True))
                if isinstance(n, int) and isinstance(s, int) and n != 1 and s != 0
            ]
            if not dims or len(dims) != sum(1 for n in buf.shape if n != 1):
                continue
            reduced = {s.name for i in load.index for s in sympy.sympify(i).free_symbols}
            if not any(name.startswith("r") for name in reduced):
                continue  # the same element along the whole row (a keepdims row value)
            fastest = min(dims, key=lambda d: abs(strides[d]))
            names = {s.name for s in sympy.sympify(load.index[fastest]).free_symbols}
            if any(name.startswith("r") for name in names):
                votes -= 1
            elif any(name.startswith("x") for name in names):
                votes += 1
    return votes > 0


def _product(sizes: tuple[Any, ...]) -> Any:
    # An int when every size is one, else a sympy expression over the size symbols.
    if all(isinstance(size, int | sympy.Integer) for size in sizes):
        return math.prod(int(size) for size in sizes)
    return sympy.Mul(*sizes)


# Block sizes, and whether indices need 64 bits (`index64` decides at each launch).
# The parameter of a split reduction's counter of finished programs (codegen/triton/split.py).
COUNTER_PARAM = "finish_counter"
REDUCTION_CONSTEXPRS = ("XBLOCK: tl.constexpr", "RBLOCK: tl.constexpr", "INDEX64: tl.constexpr")


def write_xoffset(buf: CodeBuffer) -> None:
    """The first program index of a kernel: 32-bit, widened when INDEX64 (a constexpr) says
    an element offset may pass 2**31 - 1.

    >>> buf = CodeBuffer()
    >>> write_xoffset(buf)
    >>> buf.lines[0]
    'xoffset = tl.program_id(0) * XBLOCK'
    """
    buf.writeline("xoffset = tl.program_id(0) * XBLOCK")
    write_widen(buf, "xoffset")


def buffer_params(
    names: list[str], buffers: dict[str, Buffer]
) -> tuple[tuple[tuple[int, ...], ...], list[str]]:
    """Each buffer's stride dims (those of size other than 1) and the kernel parameters of
    all of them: a buffer's pointer, then its element stride along each such dim.

    >>> buffer_params(["x"], {"x": Buffer("x", (3, 1), np.dtype("float64"), "input")})
    (((0,),), ['p_x', 'p_x_s0'])
    """
    stride_dims = tuple(
        tuple(d for d, size in enumerate(buffers[name].shape) if size != 1) for name in names
    )
    params: list[str] = []
    for name, dims in zip(names, stride_dims, strict=True):
        params.append(_param(name))
        params += [f"{_param(name)}_s{d}" for d in dims]
    return stride_dims, params


def memory_scalars(scalars: Sequence[str], options: TritonOptions) -> tuple[str, ...]:
    """The scalars of a kernel it reads from memory: with `options.scalars_in_memory`, all
    but `options.scalars_by_value` (buffer names here: `generate_triton` resolves them);
    none without.

    >>> memory_scalars(["t", "i"], TritonOptions(scalars_in_memory=True, scalars_by_value=("i",)))
    ('t',)
    """
    if not options.scalars_in_memory:
        return ()
    return tuple(name for name in scalars if name not in options.scalars_by_value)


def scalar_params(
    scalars: list[str], buffers: dict[str, Buffer], *, in_memory: Collection[str] = ()
) -> list[str]:
    """Kernel parameters of scalar inputs, annotated with their dtype (Triton's name for it);
    those in `in_memory`: pointers to one element of that dtype (`write_scalar_loads` reads
    them).

    >>> lr = {n: Buffer(n, (), np.dtype("float64"), "scalar") for n in ("lr", "t")}
    >>> scalar_params(["lr", "t"], lr), scalar_params(["lr", "t"], lr, in_memory=("lr",))
    (['p_lr: "float64"', 'p_t: "float64"'], ['p_lr_ptr', 'p_t: "float64"'])
    """
    params = []
    for name in scalars:
        if name in in_memory:
            params.append(f"{_param(name)}_ptr")
        else:
            params.append(f'{_param(name)}: "{buffers[name].dtype.name}"')
    return params


def jit_decorator(scalars: list[str], *, in_memory: Collection[str] = ()) -> str:
    """`@triton.jit`, told not to specialize on scalar values (a step count would compile
    again when it reached 1 and at each multiple of 16); pointers to them need no telling.

    >>> jit_decorator(["t"]), jit_decorator(["t"], in_memory=("t",))
    ("@triton.jit(do_not_specialize=['p_t'])", '@triton.jit')
    """
    by_value = [_param(name) for name in scalars if name not in in_memory]
    if not by_value:
        return "@triton.jit"
    return f"@triton.jit(do_not_specialize={by_value!r})"


def write_scalar_loads(code: CodeBuffer, scalars: list[str], *, in_memory: Collection[str]) -> None:
    """Where scalars come from memory: load each once per program, under the name the
    kernel body reads (the by-value parameter's), so the body is the same either way.

    >>> code = CodeBuffer()
    >>> write_scalar_loads(code, ["lr", "i"], in_memory=("lr",))
    >>> code.lines
    ['p_lr = tl.load(p_lr_ptr)']
    """
    for name in scalars:
        if name in in_memory:
            code.writeline(f"{_param(name)} = tl.load({_param(name)}_ptr)")


def scalar_value(value: Any, dtype: np.dtype[Any]) -> int | float | bool:
    """The Python number a kernel takes for a scalar input of `dtype`.

    >>> scalar_value(np.float32(0.5), np.dtype("float64")), scalar_value(3, np.dtype("int64"))
    (0.5, 3)
    """
    if dtype.kind == "b":
        return bool(value)
    if dtype.kind in "iu":
        return int(value)
    return float(value)


def write_widen(buf: CodeBuffer, var: str) -> None:
    """Make index `var` 64-bit when the launch says INDEX64.

    >>> buf = CodeBuffer()
    >>> write_widen(buf, "rindex")
    >>> buf.lines[1]
    '    rindex = rindex.to(tl.int64)'
    """
    buf.writeline("if INDEX64:")
    with buf.indent():
        buf.writeline(f"{var} = {var}.to(tl.int64)")


def index64(xnumel: int, rnumel: int, spans: list[int]) -> bool:
    """Whether a launch needs 64-bit indices: an index or an element offset (`spans`: each
    buffer's largest offset from its first element) past 2**31 - 1.

    >>> index64(1024, 0, [1023]), index64(2**20, 2**12, [])
    (False, True)
    """
    limit = 2**31 - 1
    return xnumel * max(rnumel, 1) >= limit or (bool(spans) and max(spans) >= limit)


def _pointwise_body(fused: FusedKernel, buffers: dict[str, Buffer], buf: CodeBuffer) -> None:
    write_xoffset(buf)
    buf.writeline("xindex = xoffset + tl.arange(0, XBLOCK)")
    buf.writeline("xmask = xindex < xnumel")
    # The lanes walk the arrays in their memory order (`memory_order`), as C kernels loop.
    _unflatten(buf, "x", "xindex", fused.ranges, memory_order(fused, buffers))
    body = _Body(buffers, "[XBLOCK]", "xmask", buf)
    for store in fused.stores:
        assert isinstance(store, Store)
        body.store(store, store.buffer in fused.internal)


def _reduce_kind(store: ReductionStore) -> str:
    # Booleans reduce as any/all; everything else by its own type.
    if store.dtype.kind == "b":
        return "any" if store.reduction_type in ("sum", "max", "any") else "all"
    return store.reduction_type


def _combine(kind: str, dtype: np.dtype[Any], acc: str, value: str) -> str:
    if kind in ("sum",):
        return f"{acc} + {value}"
    if kind == "prod":
        return f"{acc} * {value}"
    if kind in ("max", "any"):
        return (
            f"_np_max_combine({acc}, {value})"
            if dtype.kind == "f"
            else f"tl.maximum({acc}, {value})"
        )
    return (
        f"_np_min_combine({acc}, {value})" if dtype.kind == "f" else f"tl.minimum({acc}, {value})"
    )


def _reduce(kind: str, dtype: np.dtype[Any], tile: str) -> str:
    if kind == "sum":
        return f"tl.sum({tile}, axis=1)"
    if kind == "prod":
        return f"tl.reduce({tile}, 1, _np_prod_combine)"
    if dtype.kind == "f":
        combine = "_np_max_combine" if kind == "max" else "_np_min_combine"
        return f"tl.reduce({tile}, 1, {combine})"
    return f"tl.max({tile}, axis=1)" if kind in ("max", "any") else f"tl.min({tile}, axis=1)"


def _acc_dtype(kind: str, dtype: np.dtype[Any]) -> np.dtype[Any]:
    return np.dtype("int32") if kind in ("any", "all") else dtype


def _reduction_body(
    fused: FusedKernel,
    buffers: dict[str, Buffer],
    buf: CodeBuffer,
    *,
    persistent: bool,
    split: SplitPlan | None = None,
) -> None:
    # `split`: the first stage of a split reduction (`codegen/triton/split.py`): x runs over
    # (row, chunk) pairs, each program reduces its chunks of the rows and stores the partial
    # results, in the accumulator's dtype.
    write_xoffset(buf)
    buf.writeline("xindex = xoffset + tl.arange(0, XBLOCK)[:, None]")
    buf.writeline("xmask = xindex < xnumel")
    if split is None:
        _unflatten(buf, "x", "xindex", fused.ranges)
    else:
        if split.rows:  # chunk-major: neighbouring lanes read neighbouring kept elements
            buf.writeline(f"xrow = xindex % {split.rows}")
            buf.writeline(f"xchunk = xindex // {split.rows}")
        else:
            buf.writeline(f"xrow = xindex // {split.chunks}")
            buf.writeline(f"xchunk = xindex % {split.chunks}")
        _unflatten(buf, "x", "xrow", fused.ranges)
        if not split.chunk:  # a run-time row length: whole tiles of an equal share of it
            buf.writeline(f"rchunk = tl.cdiv(tl.cdiv(rnumel, {split.chunks}), RBLOCK) * RBLOCK")
        chunk = str(split.chunk or "rchunk")
    stores = [store for store in fused.stores if isinstance(store, ReductionStore)]
    assert len(stores) == len(fused.stores)
    kinds = [_reduce_kind(store) for store in stores]
    accs = [f"acc{i}" for i in range(len(stores))]
    if not persistent:
        for acc, kind, store in zip(accs, kinds, stores, strict=True):
            dtype = _acc_dtype(kind, store.dtype)
            identity = reduction_identity(kind, dtype)
            buf.writeline(f"{acc} = {triton_literal(identity, dtype, '[XBLOCK, RBLOCK]')}")
    if split is not None:
        buf.writeline(f"for roffset in range(0, {chunk}, RBLOCK):")
    elif not persistent:
        buf.writeline("for roffset in range(0, rnumel, RBLOCK):")
    results = []
    with buf.indent(0 if persistent else 1):  # the loop over the row, unless persistent
        if split is not None:
            buf.writeline("rlocal = roffset + tl.arange(0, RBLOCK)[None, :]")
            buf.writeline(f"rindex = xchunk * {chunk} + rlocal")
        elif not persistent:
            buf.writeline("rindex = roffset + tl.arange(0, RBLOCK)[None, :]")
        else:
            buf.writeline("rindex = tl.arange(0, RBLOCK)[None, :]")
        write_widen(buf, "rindex")
        if split is not None:
            buf.writeline(f"rmask = (rlocal < {chunk}) & (rindex < rnumel)")
        else:
            buf.writeline("rmask = rindex < rnumel")
        buf.writeline("mask = xmask & rmask")
        _unflatten(buf, "r", "rindex", fused.reduction_ranges)
        body = _Body(buffers, "[XBLOCK, RBLOCK]", "mask", buf)
        values = []
        for kind, store in zip(kinds, stores, strict=True):
            value = body.emit(store.value)
            dtype = _acc_dtype(kind, store.dtype)
            ty = tl_type(dtype)
            value = f"({value} != 0).to({ty})" if kind in ("any", "all") else f"{value}.to({ty})"
            identity = triton_literal(reduction_identity(kind, dtype), dtype, "[XBLOCK, RBLOCK]")
            values.append(f"tl.where(mask, {value}, {identity})")
        for i, (acc, kind, store) in enumerate(zip(accs, kinds, stores, strict=True)):
            dtype = _acc_dtype(kind, store.dtype)
            if persistent:
                buf.writeline(f"val{i} = {values[i]}")
                tile = f"val{i}"
            else:
                buf.writeline(f"{acc} = {_combine(kind, dtype, acc, values[i])}")
                tile = acc
            results.append(_reduce(kind, dtype, tile))
    if split is not None:
        for i, partial in enumerate(split.partials):
            value = f"{results[i]}[:, None]"
            buf.writeline(f"tl.store({_param(partial)} + xindex, {value}, mask=xmask)")
        return
    write_results(buf, stores, results, buffers)


@attrs.frozen
class SplitPlan:
    """The first stage of a split reduction (`codegen/triton/split.py`): every row cut into `chunks`
    chunks of `chunk` elements (0: worked out in the kernel from the run-time row length),
    one partial result per (row, chunk) in each of `partials`.
    The pairs run row-major (`rows` = 0) or, for outer reductions, chunk-major (`rows` =
    the row count), and the partial buffers are laid out the same way.

    >>> SplitPlan(4, 2048, ("kernel0_partial0",)).rows
    0
    """

    chunks: int
    chunk: int
    partials: tuple[str, ...]
    rows: int = 0


def write_results(
    buf: CodeBuffer, stores: list[ReductionStore], results: list[str], buffers: dict[str, Buffer]
) -> None:
    """Finish each reduction (`results`: its reduced `[XBLOCK]` value, in the accumulator's
    dtype) and store it: any/all as bools, means divided, cast to the store's dtype, at the
    store's index over the x loop variables.

    >>> buf = CodeBuffer()
    >>> write_results(buf, [], [], {})
    >>> buf.lines
    []
    """
    out = _Body(buffers, "[XBLOCK, 1]", "xmask", buf)
    for i, store in enumerate(stores):
        kind = _reduce_kind(store)
        ty = tl_type(store.dtype)
        buf.writeline(f"res{i} = {results[i]}[:, None]")
        result = f"res{i}"
        if kind in ("any", "all"):
            result = f"({result} != 0)"
        elif store.divisor is not None:
            divisor = repr(float(store.divisor))
            divisor_tile = f"tl.full([XBLOCK, 1], {divisor}, tl.float64)"
            result = f"({result}.to(tl.float64) / {divisor_tile})"
        buf.writeline(f"out{i} = {result}.to({ty})")
        addr = out.address(store.buffer, store.index, tile=True)
        buf.writeline(f"tl.store({_param(store.buffer)} + ({addr}), out{i}, mask=xmask)")
