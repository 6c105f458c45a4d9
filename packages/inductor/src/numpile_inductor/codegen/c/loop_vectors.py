"""Inline C loops for the small 1-d array work of a loop body (`A[i, :j] @ A[:j, j]`).

A loop index is a bounded size symbol in the body's shapes (capture's `loop_index`), so a
body may slice by it: `A[i, :j]`, `x[i:]`, `r[k - 1 :: -1]`. Such work runs inside the
loop function as plain C loops, without a kernel launch or an allocation per iteration:

- a view (`getitem_at` with one slice, or whole trailing axis) is an offset, a stride and
  a length in C locals, from Python's own slice rules at run time (`np_loop_slice`):
  clamping and negative starts exactly as NumPy, whatever capture could prove; its int
  indices are bounds-checked as element loads are (NumPy's `IndexError`);
- NumPy ops on views are computed element by element where they are used (a `CVector`
  whose `element` emits one element's C), through the same lowering as 0-d ops;
- reductions of a vector to a 0-d value (`@`, `max`, `any`, `sum`) are loops of their
  own (`loop_reductions`);
- a store into a view (`x[i:] = ...`, `A[i, k:] -= f * A[k, k:]`) is one loop, unless the
  value reads memory that overlaps the destination other than element by element: then
  NumPy computes the value into a temporary first, and so does this code (a buffer per
  store, allocated once at entry at the largest length the view can have).

    >>> writer.body(body, env)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from numpile_capture import ArrayMeta, Node, OpKind, ScalarSlot, get_op

from .loop_body import (
    _DEFAULT_HANDLER,
    _NODE_HANDLERS,
    CArray,
    CValue,
    Env,
    LoopWriter,
    NotScalarLoop,
    _pointwise,
    _setitem_at,
    check_in_range,
)
from .ops import c_expr, c_type

VECTOR_HELPERS = r"""
/* Inline slice loops (codegen/c/loop_vectors.py). Python's slice.indices(size): the
   first index into *first and the length returned. */
static inline int64_t np_loop_slice(int has_start, int64_t start, int has_stop, int64_t stop,
                                    int64_t step, int64_t size, int64_t *first)
{
    if (step > 0) {
        if (!has_start) { start = 0; }
        else if (start < 0) { start += size; if (start < 0) { start = 0; } }
        else if (start > size) { start = size; }
        if (!has_stop) { stop = size; }
        else if (stop < 0) { stop += size; if (stop < 0) { stop = 0; } }
        else if (stop > size) { stop = size; }
        *first = start;
        return stop > start ? (stop - start + step - 1) / step : 0;
    }
    if (!has_start) { start = size - 1; }
    else if (start < 0) { start += size; if (start < 0) { start = -1; } }
    else if (start >= size) { start = size - 1; }
    if (!has_stop) { stop = -1; }
    else if (stop < 0) { stop += size; if (stop < 0) { stop = -1; } }
    else if (stop >= size) { stop = size - 1; }
    *first = start;
    return start > stop ? (start - stop - 1) / (-step) + 1 : 0;
}
/* Whether a read of n elements at `r` (stride rs bytes) can meet a write of m at `w`
   (stride ws) other than element k against element k. */
static inline int np_loop_overlap(const char *r, int64_t n, int64_t rs, const char *w,
                                  int64_t m, int64_t ws, int64_t itemsize)
{
    if (n <= 0 || m <= 0 || (r == w && rs == ws)) { return 0; }
    const char *r_lo = rs >= 0 ? r : r + (n - 1) * rs;
    const char *r_hi = (rs >= 0 ? r + (n - 1) * rs : r) + itemsize;
    const char *w_lo = ws >= 0 ? w : w + (m - 1) * ws;
    const char *w_hi = (ws >= 0 ? w + (m - 1) * ws : w) + itemsize;
    return r_lo < w_hi && w_lo < r_hi;
}
"""


@attrs.define(eq=False)
class CView:
    """A 1-d view of a loop argument: `length` elements from `offset`, `stride` apart (C
    locals, in elements); `key` names the index it came from (equal keys: the same view)."""

    array: CArray
    offset: str
    stride: str
    length: str
    key: tuple[Any, ...]

    def address(self, k: str) -> str:
        return f"{self.array.name}_d[{self.offset} + {k} * {self.stride}]"

    def pointer(self) -> str:
        return f"(const char *)&{self.array.name}_d[{self.offset}]"


@attrs.define(eq=False)
class CVector:
    """A 1-d value of a loop body: its length (C), dtype, metadata shape, the C of element
    `k` (`element(k)`, written where it is called), the views it reads, and whether it is
    a view (read when used, as NumPy's views are) or a value computed before `epoch`."""

    length: str
    dtype: np.dtype[Any]
    shape: tuple[Any, ...]
    element: Callable[[str], CValue]
    reads: list[CView]
    view: CView | None = None
    epoch: int | None = None


def _vector(writer: LoopWriter, env: Env, value: Any) -> CVector | None:
    found = env.get(value) if isinstance(value, Node) else None
    if not isinstance(found, CVector):
        return None
    if found.epoch is not None and found.epoch != writer.stores and found.reads:
        raise NotScalarLoop("a 1-d value used after a write it was computed before")
    return found


# -- views ----------------------------------------------------------------------------------


def _slice_part(writer: LoopWriter, env: Env, part: Any, scalars: tuple[Any, ...]) -> str:
    if isinstance(part, ScalarSlot):
        value = writer.operand(env, scalars[part.position])
        if value.python not in (int, bool) and value.dtype.kind not in "iu":
            raise NotScalarLoop("a slice bound that is no int")
        return f"(int64_t){value.text}"
    return f"{int(part)}LL"


def _make_view(
    writer: LoopWriter, env: Env, array: CArray, scalars: tuple[Any, ...], template: Any
) -> CView:
    # The C locals of array[template] when it is a 1-d view, after NumPy's bounds checks.
    offset = writer.fresh("off")
    writer.buf.writeline(f"int64_t {offset} = 0;")
    axis = 0
    found: tuple[str, str] | None = None
    for item in template:
        if item is None or item is Ellipsis or axis >= array.ndim:
            raise NotScalarLoop(f"index item {item!r} in a loop's view")
        if isinstance(item, slice):
            if found is not None:
                raise NotScalarLoop("a view of more than one dimension")
            step = item.step
            if isinstance(step, ScalarSlot) or step == 0:
                raise NotScalarLoop("a slice step computed at run time")
            step = 1 if step is None else int(step)
            start = "0" if item.start is None else _slice_part(writer, env, item.start, scalars)
            stop = "0" if item.stop is None else _slice_part(writer, env, item.stop, scalars)
            first, length = writer.fresh("first"), writer.fresh("len")
            writer.buf.writeline(f"int64_t {first};")
            writer.buf.writeline(
                f"const int64_t {length} = np_loop_slice({int(item.start is not None)}, "
                f"{start}, {int(item.stop is not None)}, {stop}, {step}LL, "
                f"{array.name}_n{axis}, &{first});"
            )
            writer.buf.writeline(f"{offset} += {first} * {array.name}_s{axis};")
            found = (length, f"({step}LL * {array.name}_s{axis})")
        else:
            if isinstance(item, ScalarSlot):
                value = writer.operand(env, scalars[item.position])
            else:
                value = writer.operand(env, int(item))
            if value.python not in (int, bool) and value.dtype.kind not in "iu":
                raise NotScalarLoop("a non-integer index")
            size = f"{array.name}_n{axis}"
            if writer.hoisted(value, size):
                writer.buf.writeline(f"{offset} += (int64_t){value.text} * {array.name}_s{axis};")
            else:
                name = writer.fresh("ix")
                writer.buf.writeline(f"int64_t {name};")
                writer.buf.writeline(
                    f"if (!np_loop_index((int64_t){value.text}, {size}, {axis}, &{name})) "
                    "{ goto fail; }"
                )
                writer.buf.writeline(f"{offset} += {name} * {array.name}_s{axis};")
        axis += 1
    remaining = array.ndim - axis
    if found is None and remaining == 1:
        found = (f"{array.name}_n{axis}", f"{array.name}_s{axis}")
    elif found is None or remaining != 0:
        raise NotScalarLoop("a view that is not 1-d")
    length, stride = found
    texts = tuple(writer.operand(env, value).text for value in scalars)
    return CView(array, offset, stride, length, (array.name, repr(template), texts))


def _view_vector(view: CView, shape: tuple[Any, ...]) -> CVector:
    dtype = view.array.dtype

    def element(k: str) -> CValue:
        return CValue(view.address(k), dtype)

    return CVector(view.length, dtype, shape, element, [view], view)


def _getitem_at(writer: LoopWriter, node: Node, env: Env) -> None:
    array = env.get(node.inputs[0])
    meta = node.meta
    if not isinstance(array, CArray) or not isinstance(meta, ArrayMeta) or meta.ndim != 1:
        raise NotScalarLoop("a view that is no 1-d view of a loop argument")
    template = dict(node.params)["index"]
    view = _make_view(writer, env, array, node.inputs[1:], template)
    env[node] = _view_vector(view, tuple(meta.shape))


# -- element-wise ops -----------------------------------------------------------------------


def _element_env(writer: LoopWriter, node: Node, env: Env, k: str) -> Env:
    # `env` with each 1-d operand of `node` bound to its element k (written now).
    local = dict(env)
    for value in node.input_nodes():
        vector = _vector(writer, env, value)
        if vector is not None:
            local[value] = vector.element(k)
    return local


def _operands(writer: LoopWriter, node: Node, env: Env) -> list[CVector]:
    vectors = [v for v in (_vector(writer, env, value) for value in node.inputs) if v]
    meta = node.meta
    if vectors and isinstance(meta, ArrayMeta):
        for vector in vectors:
            if vector.shape != tuple(meta.shape):
                raise NotScalarLoop("1-d operands that broadcast")
    return vectors


def _any_pointwise(writer: LoopWriter, node: Node, env: Env) -> None:
    assert node.op is not None
    vectors = _operands(writer, node, env)
    meta = node.meta
    if not vectors and isinstance(meta, ArrayMeta) and meta.shape == ():
        _pointwise(writer, node, env)
        return
    if node.op.kind != OpKind.POINTWISE or node.op.mutates:
        raise NotScalarLoop(f"{node.op.name} on 1-d values")
    if not vectors or not isinstance(meta, ArrayMeta) or meta.ndim != 1:
        raise NotScalarLoop(f"{node.op.name} gives {meta}")

    def element(k: str) -> CValue:
        return writer.pointwise(node, _element_env(writer, node, env, k), elementwise=True)

    reads = [view for vector in vectors for view in vector.reads]
    env[node] = CVector(vectors[0].length, meta.dtype, tuple(meta.shape), element, reads,
                        epoch=writer.stores)  # fmt: skip


def _in_place(writer: LoopWriter, node: Node, env: Env) -> None:
    # `v -= t` on a view v: the op's value (in its own dtype, as NumPy computes it), cast
    # and stored back into v element by element.
    assert node.op is not None
    target = _vector(writer, env, node.inputs[0])
    if isinstance(env.get(node.inputs[0]), CArray):  # `out += row` on a 1-d argument
        meta = node.meta
        assert isinstance(meta, ArrayMeta)
        view = _subview(writer, env, node.inputs[0], (slice(None),))
        target = _view_vector(view, tuple(meta.shape))
    if target is None or target.view is None:
        raise NotScalarLoop(f"{node.op.name} on a value that is no view of a loop argument")
    base = get_op(node.op.name[:-1])
    metas = [value.meta if isinstance(value, Node) else value for value in node.inputs]
    try:
        meta = base.meta(*metas, **dict(node.params))
    except Exception as reason:
        raise NotScalarLoop(f"{node.op.name}: {reason}") from None
    pure = Node(node.name, base, node.inputs, node.params, meta)
    _operands(writer, pure, env)

    def element(k: str) -> CValue:
        return writer.pointwise(pure, _element_env(writer, pure, env, k), elementwise=True)

    reads = [view for value in node.inputs for view in _reads(writer, env, value)]
    value = CVector(target.length, target.dtype, target.shape, element, reads)
    _store(writer, target.view, value)
    env[node] = env[node.inputs[0]]


def _reads(writer: LoopWriter, env: Env, value: Any) -> list[CView]:
    vector = _vector(writer, env, value)
    return [] if vector is None else vector.reads


# -- reductions -----------------------------------------------------------------------------


def _accumulate(writer: LoopWriter, node: Node, length: str, term: Callable[[str], str]) -> CValue:
    # A sequential sum of term(k) over k < length, in the node's dtype.
    meta = node.meta
    assert isinstance(meta, ArrayMeta)
    ct = c_type(meta.dtype)
    if ct is None or meta.dtype.kind not in "iuf":
        raise NotScalarLoop(f"a reduction to {meta.dtype}")
    acc, k = writer.fresh("acc"), writer.fresh("k")
    buf = writer.buf
    if meta.dtype.kind != "f":  # exact: one accumulator
        buf.writeline(f"{ct} {acc} = 0;")
        buf.writeline(f"for (int64_t {k} = 0; {k} < {length}; {k}++) {{")
        with buf.indent():
            buf.writeline(f"{acc} += {term(k)};")
        buf.writeline("}")
        return CValue(acc, meta.dtype)
    # Floats: _LANES partial sums, so the adds do not wait on each other (BLAS's dot and
    # NumPy's pairwise sum split the sum too; the order differs from both).
    parts = [f"{acc}_{lane}" for lane in range(_LANES)]
    buf.writeline(f"{ct} {' = 0, '.join(parts)} = 0;")
    buf.writeline(f"int64_t {k} = 0;")
    buf.writeline(f"for (; {k} + {_LANES} <= {length}; {k} += {_LANES}) {{")
    with buf.indent():
        for lane, part in enumerate(parts):
            buf.writeline(f"{part} += {term(f'({k} + {lane})')};")
    buf.writeline("}")
    buf.writeline(f"for (; {k} < {length}; {k}++) {{")
    with buf.indent():
        buf.writeline(f"{parts[0]} += {term(k)};")
    buf.writeline("}")
    while len(parts) > 1:  # a pairwise tree of the partial sums
        parts = [f"({a} + {b})" for a, b in zip(parts[::2], parts[1::2], strict=True)]
    buf.writeline(f"const {ct} {acc} = {parts[0]};")
    return CValue(acc, meta.dtype)


# NOTE: the partial sums of a float reduction (a power of two, for the pairwise tree):
# independent adds in flight instead of one chain of dependent ones.
_LANES = 8


# -- stores ---------------------------------------------------------------------------------


def _store(writer: LoopWriter, target: CView, value: CVector | CValue) -> None:
    # target[k] = value[k] for every k, through a temporary where the value may read
    # memory the store overwrites (NumPy's result for overlapping reads and writes).
    dtype = target.array.dtype
    target.array.written = True
    if isinstance(value, CVector) and value.view is not None and value.view.key == target.key:
        return  # `A[i, j:] = v` where v is that very view (an in-place op's result)
    reads = value.reads if isinstance(value, CVector) else []
    buf = writer.buf

    def element(k: str) -> str:
        item = value.element(k) if isinstance(value, CVector) else value
        return c_expr("cast", [item.text], [item.dtype], dtype)

    def loop(assign: Callable[[str], str]) -> None:
        k = writer.fresh("k")
        buf.writeline(f"for (int64_t {k} = 0; {k} < {target.length}; {k}++) {{")
        with buf.indent():
            buf.writeline(assign(k))
        buf.writeline("}")

    if not reads:
        loop(lambda k: f"{target.address(k)} = {element(k)};")
        return
    itemsize = dtype.itemsize
    overlap = " || ".join(
        f"np_loop_overlap({read.pointer()}, {read.length}, {read.stride} * "
        f"{read.array.dtype.itemsize}, {target.pointer()}, {target.length}, "
        f"{target.stride} * {itemsize}, {itemsize})"
        for read in reads
    )
    temp = _temporary(writer, target)
    buf.writeline(f"if ({overlap}) {{")
    with buf.indent():
        loop(lambda k: f"{temp}[{k}] = {element(k)};")
        loop(lambda k: f"{target.address(k)} = {temp}[{k}];")
    buf.writeline("} else {")
    with buf.indent():
        loop(lambda k: f"{target.address(k)} = {element(k)};")
    buf.writeline("}")


def _temporary(writer: LoopWriter, target: CView) -> str:
    # A buffer for one store's value, allocated once at the function's entry at the largest
    # length a 1-d view of the target array has (its largest dimension).
    array = target.array
    ct = c_type(array.dtype)
    name = writer.fresh("tmp")
    size = f"{array.name}_n0"
    for d in range(1, array.ndim):
        size = f"({size} > {array.name}_n{d} ? {size} : {array.name}_n{d})"
    writer.prelude.append(f"    {ct} *{name} = NULL;")
    writer.declarations.append(f"    {name} = ({ct} *)malloc(sizeof({ct}) * (size_t)({size} + 1));")
    writer.declarations.append(f"    if ({name} == NULL) {{ PyErr_NoMemory(); goto fail; }}")
    writer.cleanup.append(f"    free({name});")
    writer.shares_scratch = True  # one buffer for every iteration: no OpenMP threads
    return name


def _setitem_view(writer: LoopWriter, node: Node, env: Env) -> None:
    array = env.get(node.inputs[0])
    template = dict(node.params)["index"]
    if not isinstance(array, CArray):
        raise NotScalarLoop("a store into a value that is no loop argument")
    ints = [item for item in template if not isinstance(item, slice)]
    if len(ints) == len(template) == array.ndim and None not in ints and Ellipsis not in ints:
        _setitem_at(writer, node, env)
        return
    target = _make_view(writer, env, array, node.inputs[2:], template)
    _store_value(writer, env, target, node.inputs[1])
    env[node] = array


def _subview(writer: LoopWriter, env: Env, value: Any, index: Any) -> CView:
    # A constant basic index of a 1-d view (`row[::-1]`) or of a 1-d loop argument.
    array = env.get(value) if isinstance(value, Node) else None
    if isinstance(array, CArray):
        return _make_view(writer, env, array, (), index)
    vector = _vector(writer, env, value)
    if vector is None or vector.view is None:
        raise NotScalarLoop("a view of a value that is no view of a loop argument")
    parent = vector.view
    items = tuple(index) if isinstance(index, tuple) else (index,)
    if len(items) != 1 or not isinstance(items[0], slice):
        raise NotScalarLoop(f"index {index!r} of a 1-d view")
    item = items[0]
    parts = (item.start, item.stop, item.step)
    if not all(part is None or isinstance(part, int) for part in parts) or item.step == 0:
        raise NotScalarLoop(f"index {index!r} of a 1-d view")
    step = 1 if item.step is None else item.step
    first, length, offset = writer.fresh("first"), writer.fresh("len"), writer.fresh("off")
    writer.buf.writeline(f"int64_t {first};")
    writer.buf.writeline(
        f"const int64_t {length} = np_loop_slice({int(item.start is not None)}, "
        f"{item.start or 0}LL, {int(item.stop is not None)}, {item.stop or 0}LL, {step}LL, "
        f"{parent.length}, &{first});"
    )
    writer.buf.writeline(f"const int64_t {offset} = {parent.offset} + {first} * {parent.stride};")
    stride = f"({step}LL * {parent.stride})"
    return CView(parent.array, offset, stride, length, (parent.key, repr(items)))


def _getitem(writer: LoopWriter, node: Node, env: Env) -> None:
    meta = node.meta
    if not isinstance(meta, ArrayMeta) or meta.ndim != 1:
        raise NotScalarLoop(f"getitem giving {meta} in a loop body")
    if isinstance(env.get(node.inputs[0]), CArray):
        # A constant slice of a whole argument (`u[1:-1]` of a time-stepped stencil) is
        # array-sized work: it stays with the kernels (the extern path).
        raise NotScalarLoop("array-sized work on a whole loop argument")
    view = _subview(writer, env, node.inputs[0], dict(node.params)["index"])
    env[node] = _view_vector(view, tuple(meta.shape))


def _setitem(writer: LoopWriter, node: Node, env: Env) -> None:
    # `row[:] = value` into a view (or a 1-d loop argument) with a constant index.
    target = _subview(writer, env, node.inputs[0], dict(node.params)["index"])
    _store_value(writer, env, target, node.inputs[1])
    env[node] = env[node.inputs[0]]


def _copyto(writer: LoopWriter, node: Node, env: Env) -> None:
    # `np.add(out, row, out=out)`: the value stored into `out` (same_kind casting checked).
    if set(dict(node.params)) - {"casting"} or len(node.inputs) != 2:
        raise NotScalarLoop("copyto with a where= mask")
    target = _subview(writer, env, node.inputs[0], (slice(None),))
    _store_value(writer, env, target, node.inputs[1])
    env[node] = env[node.inputs[0]]


def _store_value(writer: LoopWriter, env: Env, target: CView, value: Any) -> None:
    vector = _vector(writer, env, value)
    array = target.array
    if vector is not None:
        if vector.dtype.kind == "c" and array.dtype.kind != "c":
            raise NotScalarLoop("a complex value stored into a real array (NumPy warns)")
        _store(writer, target, vector)
        return
    scalar = writer.operand(env, value)
    if scalar.python is int and array.dtype.kind in "iu":
        check_in_range(writer, scalar, array.dtype)  # `row[:] = c` into int8
    if scalar.dtype.kind == "c" and array.dtype.kind != "c":
        raise NotScalarLoop("a complex value stored into a real array (NumPy warns)")
    _store(writer, target, scalar)


_NODE_HANDLERS["getitem"] = _getitem
_NODE_HANDLERS["setitem"] = _setitem
_NODE_HANDLERS["copyto"] = _copyto
_NODE_HANDLERS["getitem_at"] = _getitem_at
_NODE_HANDLERS["setitem_at"] = _setitem_view
for _name in ("add", "subtract", "multiply", "divide", "true_divide", "minimum", "maximum",
              "power", "floor_divide"):  # fmt: skip
    _NODE_HANDLERS[f"{_name}_"] = _in_place
_DEFAULT_HANDLER[0] = _any_pointwise
