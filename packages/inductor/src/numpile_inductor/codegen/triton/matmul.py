"""Matmul as a Triton template: `tl.dot` tiles, the next pointwise kernel fused as epilogue.

An extern matmul step (one cuBLAS call) is one launch, and the pointwise
kernel after it (`relu(x @ w + b)`) another that reads the product back. The
template computes a `BLOCK_M x BLOCK_N` tile of the product per program
(`tl.dot` over `BLOCK_K` slices, IEEE float32 or float64 products: no TF32,
as NumPy's BLAS) and applies that kernel's body to the tile before storing:
one launch, the product never written unless something else reads it.

Which one runs is `TritonOptions.gemm_backends` (torch's
`max_autotune_gemm_backends`): "extern" (cuBLAS), "triton" (the template), or
both (the default on a GPU): the first call times the extern call against the
template in `gemm_tiles` of its tile shapes (`TILES`: `BLOCK_M x BLOCK_N x
BLOCK_K` and warps; the first shape by default, all five in max-autotune;
`MatmulChoice`), keeps the fastest and stores the choice in the code cache per
template source and device (`pick_backend`). Only 2-D float32 or float64
products of one dtype with static shapes get a template.

    >>> kernel = matmul_template(call, epilogue, buffers, keep_product=False, tile=0)
    ... # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Callable

import attrs
import sympy

import numpile_runtime as rt

from ...config import TritonOptions
from ...loop_ir import Buffer, BufferRef, ExternCall, Load, Store, loads_of
from ...scheduler import FusedKernel
from ..common import CodeBuffer
from .kernel import (
    TritonKernel,
    _Body,
    _param,
    _signature,
    buffer_params,
    jit_decorator,
    memory_scalars,
    scalar_params,
    write_scalar_loads,
)
from .ops import tl_type

log = logging.getLogger("numpile.inductor.triton")

# Tile shapes per dtype, (BLOCK_M, BLOCK_N, BLOCK_K, num_warps), the first the default;
# choosing by benchmark times them all. tl.dot needs 16 or more on each side.
TILES: dict[str, tuple[tuple[int, int, int, int], ...]] = {
    "float32": (
        (64, 64, 32, 4),
        (128, 64, 32, 4),
        (64, 128, 32, 4),
        (128, 128, 32, 8),
        (32, 32, 32, 4),
    ),
    "float64": (
        (32, 32, 16, 4),
        (64, 32, 16, 4),
        (32, 64, 16, 4),
        (64, 64, 16, 8),
        (16, 16, 16, 2),
    ),
}


@attrs.frozen
class MatmulChoice:
    """An extern matmul with its epilogue kernel, or the template that replaces both, in
    one of its tile shapes.

    `extern` holds the steps as the schedule has them; `templates` one kernel per shape.
    """

    extern: tuple[ExternCall | TritonKernel, ...]
    templates: tuple[TritonKernel, ...]

    @property
    def name(self) -> str:
        return self.templates[0].name

    @property
    def kernels(self) -> tuple[TritonKernel, ...]:
        """Every kernel of both variants (the module holds them all)."""
        return (*(k for k in self.extern if isinstance(k, TritonKernel)), *self.templates)


def choice_key(choice: MatmulChoice, device: str) -> str:
    """The code-cache key of the backend `max-autotune` chose for `choice` on `device`
    (the template's source names the shapes, dtypes and epilogue).

    >>> choice_key(choice, "NVIDIA H100 80GB HBM3")[:12]  # doctest: +SKIP
    'triton-gemm-'
    """
    text = json.dumps([[t.source for t in choice.templates], device])
    return "triton-gemm-" + hashlib.sha256(text.encode()).hexdigest()[:28]


def pick_backend(choice: MatmulChoice, time_variant: Callable[[int], float], device: str) -> int:
    """0 (extern) or 1 + the index of a template tile shape: stored on disk for `device`,
    else the fastest by `time_variant` (seconds; a template that raises, e.g. out of shared
    memory on this device, loses; a tie goes to cuBLAS), then stored.

    >>> pick_backend(choice, lambda i: [2.0, 1.0][i], "cpu")  # doctest: +SKIP
    1
    """
    key = choice_key(choice, device)
    variants = 1 + len(choice.templates)
    stored = rt.default_cache().get_bytes(key)
    if stored is not None and stored.isdigit() and int(stored) < variants:
        return int(stored)
    timings = []
    for index in range(variants):
        try:
            timings.append(time_variant(index))
        except Exception as error:
            if index == 0:
                raise  # the extern call's own error: NumPy's, from the user's line
            name = choice.templates[index - 1].name
            log.info("matmul template %s failed (%s); not chosen", name, error)
            timings.append(math.inf)
    best = min(range(variants), key=lambda i: (timings[i], i))
    log.info(
        "matmul %s: extern %.1f us, templates %s us -> %s",
        choice.name,
        timings[0] * 1e6,
        ", ".join(f"{t * 1e6:.1f}" for t in timings[1:]),
        "extern" if best == 0 else choice.templates[best - 1].name,
    )
    rt.default_cache().put_bytes(key, str(best).encode())
    return best


def template_operands(call: ExternCall, buffers: dict[str, Buffer]) -> tuple[Buffer, Buffer] | None:
    """The two operand buffers of `call` when the template can compute it, else None.

    >>> template_operands(call, buffers)  # doctest: +SKIP
    (Buffer(name='x', ...), Buffer(name='w', ...))
    """
    if call.op_name != "matmul" or call.kwargs or len(call.args) != 2:
        return None
    if not all(isinstance(arg, BufferRef) for arg in call.args):
        return None
    a, b = (buffers[arg.name] for arg in call.args)
    out = buffers[call.buffer]
    shapes = (a.shape, b.shape, out.shape)
    if any(len(shape) != 2 or not all(isinstance(d, int) for d in shape) for shape in shapes):
        return None
    if not a.dtype == b.dtype == out.dtype or out.dtype.name not in TILES:
        return None
    if tl_type(a.dtype) is None or a.shape[1] != b.shape[0] or 0 in (*a.shape, *b.shape):
        return None  # empty products stay extern calls
    return a, b


def fusable_epilogue(call: ExternCall, kernel: FusedKernel, buffers: dict[str, Buffer]) -> bool:
    """Whether pointwise `kernel` can run on the product's tiles: over the product's shape,
    reading the product only at its own element (x0, x1).

    >>> fusable_epilogue(call, kernel, buffers)  # doctest: +SKIP
    True
    """
    if kernel.is_reduction or kernel.parts or kernel.ranges != buffers[call.buffer].shape:
        return False
    reads = [
        load
        for store in kernel.stores
        for load in loads_of(store.value)
        if load.buffer == call.buffer
    ]
    if not reads or call.buffer in {store.buffer for store in kernel.stores}:
        return False
    return all([str(sympy.sympify(i)) for i in load.index] == ["x0", "x1"] for load in reads)


def matmul_template(
    call: ExternCall,
    epilogue: FusedKernel | None,
    buffers: dict[str, Buffer],
    *,
    keep_product: bool,
    tile: int = 0,
    options: TritonOptions | None = None,
) -> TritonKernel:
    """The template kernel for `call` (see `template_operands`), `epilogue` fused when given;
    `keep_product` also stores the product itself (a graph output, or read elsewhere);
    `tile` indexes the dtype's `TILES` (its name ends `_mm<tile>` past the first);
    `options`: which of the epilogue's scalars come as pointers (`memory_scalars`).

    >>> matmul_template(call, None, buffers, keep_product=True)
    ... # doctest: +SKIP
    """
    operands = template_operands(call, buffers)
    assert operands is not None
    a, b = operands
    m, k = a.shape
    n = b.shape[1]
    block_m, block_n, block_k, num_warps = TILES[a.dtype.name][tile]
    ty = tl_type(a.dtype)
    tile_shape = f"[{block_m}, {block_n}]"
    name = f"{epilogue.name if epilogue is not None else call.buffer}_mm{tile or ''}"
    stores: list[Store] = []
    scalars: list[str] = []
    used = [a.name, b.name]
    if epilogue is not None:
        epilogue_used, scalars = _signature(epilogue, buffers)
        used += [n_ for n_ in epilogue_used if n_ not in used and n_ != call.buffer]
        stores = [store for store in epilogue.stores if isinstance(store, Store)]
    if keep_product or epilogue is None:
        used.append(call.buffer)
    stride_dims, params = buffer_params(used, buffers)
    in_memory = memory_scalars(scalars, options or TritonOptions())
    params += scalar_params(scalars, buffers, in_memory=in_memory)
    params += ["xnumel", "XBLOCK: tl.constexpr", "INDEX64: tl.constexpr"]
    a_s = [f"{_param(a.name)}_s{d}" if a.shape[d] != 1 else "0" for d in (0, 1)]
    b_s = [f"{_param(b.name)}_s{d}" if b.shape[d] != 1 else "0" for d in (0, 1)]
    code = CodeBuffer()
    code.writelines(
        [jit_decorator(scalars, in_memory=in_memory), f"def {name}({', '.join(params)}):"]
    )
    with code.indent():
        fuses = f"; epilogue fuses {', '.join(epilogue.origins)}" if epilogue is not None else ""
        code.writeline(f"# matmul template [{m}, {k}] @ [{k}, {n}]{fuses}")
        write_scalar_loads(code, scalars, in_memory=in_memory)
        code.writeline("pid = tl.program_id(0)")
        code.writeline(
            f"rm = (pid // {-(-n // block_n)}) * {block_m} + tl.arange(0, {block_m})[:, None]"
        )
        code.writeline(
            f"rn = (pid % {-(-n // block_n)}) * {block_n} + tl.arange(0, {block_n})[None, :]"
        )
        code.writeline("if INDEX64:")
        code.writelines(["    rm = rm.to(tl.int64)", "    rn = rn.to(tl.int64)"])
        code.writeline(f"mask = (rm < {m}) & (rn < {n})")
        code.writeline(f"acc = tl.zeros({tile_shape}, {ty})")
        code.writeline(f"for koffset in range(0, {k}, {block_k}):")
        with code.indent():
            code.writeline(f"kr = koffset + tl.arange(0, {block_k})")
            code.writelines(["if INDEX64:", "    kr = kr.to(tl.int64)"])
            a_at = f"rm * {a_s[0]} + kr[None, :] * {a_s[1]}"
            code.writeline(
                f"a = tl.load({_param(a.name)} + ({a_at}), mask=(rm < {m}) & (kr[None, :] < {k}), "
                "other=0)"
            )
            b_at = f"kr[:, None] * {b_s[0]} + rn * {b_s[1]}"
            code.writeline(
                f"b = tl.load({_param(b.name)} + ({b_at}), mask=(kr[:, None] < {k}) & (rn < {n}), "
                "other=0)"
            )
            code.writeline(f'acc += tl.dot(a, b, input_precision="ieee", out_dtype={ty})')
        # The epilogue's loop variables as whole tiles: an address over one of them alone
        # (a bias row, a product with one row) still has the tile's shape.
        code.writelines(["x0 = rm + 0 * rn", "x1 = rn + 0 * rm", f"xindex = x0 * {n} + x1"])
        body = _Body(buffers, tile_shape, "mask", code)
        body.locals[call.buffer] = "acc"
        if keep_product or epilogue is None:
            here = (sympy.Symbol("x0", integer=True), sympy.Symbol("x1", integer=True))
            body.store(Store(call.buffer, here, Load(call.buffer, here, a.dtype)), False)
        for store in stores:
            assert epilogue is not None
            body.store(store, store.buffer in epilogue.internal)
    tiles = -(-m // block_m) * -(-n // block_n)
    return TritonKernel(
        name,
        code.getvalue() + "\n",
        tuple(used),
        stride_dims,
        tuple(scalars),
        tiles * block_m * block_n,  # one program per tile: grid = xnumel / XBLOCK
        0,
        block_m * block_n,
        1,
        num_warps,
        False,
        (call.node_name, *(epilogue.origins if epilogue is not None else ())),
        template="mm",
        in_memory=in_memory,
    )
