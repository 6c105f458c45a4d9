"""1-d views of a loop program's arrays, read and written as tiles (`A[i, :j] @ A[:j, j]`).

A loop index is a bounded size symbol in the body's shapes, so a body may slice by it:
`L[i, :i] @ y[:i]`, `U[i, i + 1 :]`, `r[k - 1 :: -1]`, `D[i, :]`. Inside one Triton loop
program (`loop_program.py`) such work runs without a launch of its own:

- a view (`getitem_at` with one slice, or a whole trailing axis) is an offset, a stride and
  a length, kernel variables computed at run time by Python's own slice rules (clamping,
  negative starts and steps exactly as NumPy); its int indices are bounds-checked as
  element loads are (the error flag, then NumPy's `IndexError` from the op-by-op rerun);
- a NumPy op on views is computed tile by tile where it is used, through the same
  lowering as 0-d ops (Triton spells an op on a tile as on a 0-d value);
- `matmul` / `dot` of two 1-d values and `sum` of one loop over `_TILE`-element masked
  tiles (`tl.arange`), each reduced with `tl.sum` (`tile_sum`; NumPy's pairwise and BLAS sums round
  differently, within the usual tolerance); operands of different lengths raise the flag
  (NumPy's `ValueError` from the rerun);
- a store into a view (`y[:k] = y[:k] + a * y[k - 1 :: -1]`, `D[i, :] = ...`) writes each
  tile after reading all of it; a value longer than one tile that reads the array it
  stores into raises the flag (NumPy computes such a value into a temporary first).

Every store is followed by a barrier, so the threads of a tile see each other's writes.

    >>> "tile_sum" in loop_program_source(node, body).source  # doctest: +SKIP
    True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from numpile_capture import ArrayMeta, Node, OpKind, ScalarSlot

from .ops import tl_type, triton_literal

if TYPE_CHECKING:
    from .loop_program import Env, _Array, _ProgramWriter, _Scalar

__all__ = ["VIEW_HANDLERS", "pointwise_vector"]

# NOTE: elements of one tile: the loop program runs as one warp, 8 elements a thread; the
# loop benchmarks' rows (24 to 128 elements) are one tile each.
_TILE = 256


@attrs.define(eq=False)
class _View:
    # A 1-d view of an array argument: `length` elements from `offset`, `stride` apart
    # (kernel variables, in elements); `ok`: its int indices are in bounds; `key` names the
    # index it came from (equal keys: the same view).
    array: _Array
    offset: str
    stride: str
    length: str
    ok: str | None
    key: tuple[Any, ...]

    def mask(self, mask: str) -> str:
        # NOTE: `!= 0`: the interpreter takes a tile `&` a 0-d bool for no mask dtype.
        return mask if self.ok is None else f"(({mask}) & ({self.ok})) != 0"


@attrs.define(eq=False)
class _Vector:
    # A 1-d value: its length, dtype and metadata shape, `tile(offs, mask)` writing the
    # value at the int32 tile of positions `offs` (where `mask`), the views it reads, the
    # view it is (read when used, as NumPy's views are), and the store count when computed.
    length: str
    dtype: np.dtype[Any]
    shape: tuple[Any, ...]
    tile: Callable[[str, str], _Scalar]
    reads: list[_View]
    view: _View | None = None
    epoch: int | None = None


def _vector(writer: _ProgramWriter, env: Env, value: Any) -> _Vector | None:
    # Late import: loop_program imports this module at its bottom (it fills its table).
    from .loop_program import NotDeviceLoop

    found = env.get(value) if isinstance(value, Node) else None
    if not isinstance(found, _Vector):
        return None
    if found.epoch is not None and found.epoch != writer.stores and found.reads:
        raise NotDeviceLoop("a 1-d value used after a store it was computed before")
    return found


def _int_text(writer: _ProgramWriter, env: Env, value: Any) -> _Scalar:
    from .loop_program import NotDeviceLoop

    found = writer.operand(env, value)
    if found.dtype.kind not in "iu" or found.python is bool:
        raise NotDeviceLoop("a slice bound that is no int")
    return writer.define(np.dtype("int64"), f"{found.text}.to(tl.int64)")


def _clamped(writer: _ProgramWriter, value: str, size: str, low: str, high: str) -> str:
    # Python's slice.indices for one bound: a negative one counts from the end, then
    # clamped to [low, high].
    int64 = np.dtype("int64")
    wrapped = writer.define(int64, f"tl.where({value} < 0, {value} + {size}, {value})").text
    return writer.define(int64, f"tl.minimum(tl.maximum({wrapped}, {low}), {high})").text


def _slice_indices(
    writer: _ProgramWriter, start: str | None, stop: str | None, step: int, size: str
) -> tuple[str, str]:
    # The first index and the length of `[start:stop:step]` over `size` elements.
    int64 = np.dtype("int64")
    if step > 0:
        first = "0" if start is None else _clamped(writer, start, size, "0", size)
        last = size if stop is None else _clamped(writer, stop, size, "0", size)
        span = f"{last} - {first} + {step - 1}"
        length = f"tl.where({last} > {first}, ({span}) // {step}, 0)"
    else:
        top = f"{size} - 1"
        first = top if start is None else _clamped(writer, start, size, "-1", top)
        last = "-1" if stop is None else _clamped(writer, stop, size, "-1", top)
        length = f"tl.where({first} > {last}, ({first} - {last} - 1) // {-step} + 1, 0)"
    first_name = writer.define(int64, f"({first}) + tl.full([], 0, tl.int64)").text
    return first_name, writer.define(int64, f"({length}).to(tl.int64)").text


def _make_view(
    writer: _ProgramWriter, env: Env, array: _Array, scalars: tuple[Any, ...], template: Any
) -> _View:
    from .loop_program import NotDeviceLoop

    terms: list[str] = []
    masks: list[str] = []
    found: tuple[str, str] | None = None
    axis = 0
    for item in template:
        if item is None or item is Ellipsis or axis >= array.ndim:
            raise NotDeviceLoop(f"index item {item!r} in a loop program's view")
        size, stride = f"{array.name}_n{axis}", f"{array.name}_s{axis}"
        if isinstance(item, slice):
            if found is not None:
                raise NotDeviceLoop("a view of more than one dimension")
            if isinstance(item.step, ScalarSlot) or item.step == 0:
                raise NotDeviceLoop("a slice step computed at run time")
            step = 1 if item.step is None else int(item.step)
            bounds = [
                None if part is None else _bound(writer, env, part, scalars).text
                for part in (item.start, item.stop)
            ]
            first, length = _slice_indices(writer, bounds[0], bounds[1], step, size)
            terms.append(f"{first} * {stride}")
            found = (length, f"{step} * {stride}")
        else:
            value = _bound(writer, env, item, scalars)
            wrapped, ok = writer.checked_index(value, size)
            writer.buf.writeline(f"bad = bad | ({ok} == 0)")
            terms.append(f"{wrapped} * {stride}")
            masks.append(ok)
        axis += 1
    if found is None and array.ndim - axis == 1:
        found = (f"{array.name}_n{axis}", f"{array.name}_s{axis}")
    elif found is None or array.ndim != axis:
        raise NotDeviceLoop("a view that is not 1-d")
    int64 = np.dtype("int64")
    offset = writer.define(int64, f"{' + '.join(terms) or '0'} + tl.full([], 0, tl.int64)").text
    stride = writer.define(int64, f"{found[1]} + tl.full([], 0, tl.int64)").text
    ok_all = " & ".join(masks) if masks else None
    texts = tuple(writer.operand(env, value).text for value in scalars)
    return _View(array, offset, stride, found[0], ok_all, (array.name, repr(template), texts))


def _bound(writer: _ProgramWriter, env: Env, part: Any, scalars: tuple[Any, ...]) -> _Scalar:
    from .loop_program import NotDeviceLoop

    if isinstance(part, ScalarSlot):
        return _int_text(writer, env, scalars[part.position])
    if isinstance(part, int | np.integer) and not isinstance(part, bool):
        return _int_text(writer, env, int(part))
    raise NotDeviceLoop(f"index item {part!r} is not an int")


def _view_vector(writer: _ProgramWriter, view: _View, shape: tuple[Any, ...]) -> _Vector:
    dtype = view.array.dtype

    def tile(offs: str, mask: str) -> _Scalar:
        address = f"{view.array.name}_ptr + {view.offset} + {offs} * {view.stride}"
        return writer.define(dtype, f"tl.load({address}, mask={view.mask(mask)}, other=0)")

    return _Vector(view.length, dtype, shape, tile, [view], view)


def _getitem_at(writer: _ProgramWriter, node: Node, env: Env) -> None:
    from .loop_program import NotDeviceLoop, _Array

    array = env.get(node.inputs[0]) if isinstance(node.inputs[0], Node) else None
    meta = node.meta
    if not isinstance(array, _Array) or not isinstance(meta, ArrayMeta) or meta.ndim != 1:
        raise NotDeviceLoop(f"getitem_at gives {meta}, not a 1-d view of a loop argument")
    view = _make_view(writer, env, array, node.inputs[1:], dict(node.params)["index"])
    env[node] = _view_vector(writer, view, tuple(meta.shape))


def pointwise_vector(writer: _ProgramWriter, node: Node, env: Env) -> None:
    """A NumPy op of a loop program's body: on 0-d operands a 0-d value; with 1-d ones, a
    1-d value whose tile is the op on its operands' tiles."""
    from .loop_program import NotDeviceLoop, _pointwise, lowered_value

    vectors = [vector for vector in (_vector(writer, env, v) for v in node.inputs) if vector]
    meta = node.meta
    if not vectors:
        _pointwise(writer, node, env)
        return
    assert node.op is not None
    if node.op.kind != OpKind.POINTWISE or node.op.mutates:
        raise NotDeviceLoop(f"{node.op.name} on 1-d values")
    if not isinstance(meta, ArrayMeta) or meta.ndim != 1 or meta.dtype.kind == "b":
        raise NotDeviceLoop(f"{node.op.name} gives {meta}")
    if any(vector.shape != tuple(meta.shape) for vector in vectors):
        raise NotDeviceLoop("1-d operands that broadcast")

    def tile(offs: str, mask: str) -> _Scalar:
        local = dict(env)
        for value in node.input_nodes():
            vector = _vector(writer, env, value)
            if vector is not None:
                local[value] = vector.tile(offs, mask)
        return lowered_value(writer, node, local)

    reads = [view for vector in vectors for view in vector.reads]
    env[node] = _Vector(vectors[0].length, meta.dtype, tuple(meta.shape), tile, reads,
                        epoch=writer.stores)  # fmt: skip


def _tiles(writer: _ProgramWriter, length: str) -> tuple[str, str]:
    # Opens `for` over the tiles of `length` elements: the tile's positions and mask.
    start, offs, mask = writer.fresh("k"), writer.fresh("offs"), writer.fresh("m")
    writer.buf.writeline(f"for {start} in range(0, {length}, {_TILE}):")
    writer.buf.level += 1
    writer.buf.writeline(f"{offs} = {start} + tl.arange(0, {_TILE})")
    writer.buf.writeline(f"{mask} = {offs} < {length}")
    return offs, mask


def _accumulate(
    writer: _ProgramWriter, node: Node, length: str, term: Callable[[str, str], str]
) -> _Scalar:
    # The sum of term(offs, mask) over the tiles of `length` elements, in the node's dtype.
    from .loop_program import NotDeviceLoop, _Scalar

    meta = node.meta
    if not isinstance(meta, ArrayMeta) or meta.shape != () or meta.dtype.kind not in "iuf":
        raise NotDeviceLoop(f"a reduction to {meta}")
    if tl_type(meta.dtype) is None:
        raise NotDeviceLoop(f"a reduction to {meta.dtype}")
    acc = writer.fresh("acc")
    writer.buf.writeline(f"{acc} = {triton_literal(0, meta.dtype, '[]')}")
    offs, mask = _tiles(writer, length)
    zero = triton_literal(0, meta.dtype, "[]")
    writer.buf.writeline(f"{acc} = {acc} + tile_sum(tl.where({mask}, {term(offs, mask)}, {zero}))")
    writer.buf.level -= 1
    return _Scalar(acc, meta.dtype)


def _as(writer: _ProgramWriter, value: _Scalar, dtype: np.dtype[Any]) -> str:
    return value.text if value.dtype == dtype else f"{value.text}.to({tl_type(dtype)})"


def _matmul(writer: _ProgramWriter, node: Node, env: Env) -> None:
    from .loop_program import NotDeviceLoop

    meta = node.meta
    if len(node.inputs) != 2 or any(v is not None for _, v in node.params):
        raise NotDeviceLoop("a matmul with options, or of other than two values")
    left, right = (_vector(writer, env, value) for value in node.inputs)
    if left is None or right is None or not isinstance(meta, ArrayMeta):
        raise NotDeviceLoop("a matmul that is no dot product of two 1-d values")
    dtype = meta.dtype
    writer.buf.writeline(f"bad = bad | ({left.length} != {right.length})")

    def term(offs: str, mask: str) -> str:
        a = _as(writer, left.tile(offs, mask), dtype)
        b = _as(writer, right.tile(offs, mask), dtype)
        return f"{a} * {b}"

    env[node] = _accumulate(writer, node, left.length, term)


def _sum(writer: _ProgramWriter, node: Node, env: Env) -> None:
    from .loop_program import NotDeviceLoop, _pointwise

    vector = _vector(writer, env, node.inputs[0]) if node.inputs else None
    if vector is None:
        _pointwise(writer, node, env)
        return
    params = dict(node.params)
    if params.get("axis") not in (None, 0, (0,)) or params.get("keepdims") or len(node.inputs) > 1:
        raise NotDeviceLoop("a sum with options")
    meta = node.meta
    assert isinstance(meta, ArrayMeta)
    dtype = meta.dtype
    env[node] = _accumulate(
        writer, node, vector.length, lambda offs, mask: _as(writer, vector.tile(offs, mask), dtype)
    )


def _store(writer: _ProgramWriter, target: _View, value: _Vector | _Scalar) -> None:
    # target[k] = value[k], tile by tile: each tile read whole before it is stored.
    from .loop_program import NotDeviceLoop

    array = target.array
    array.written = True
    if isinstance(value, _Vector):
        if value.view is not None and value.view.key == target.key:
            return  # `y[:k] = y[:k]`
        if value.dtype.kind == "c" and array.dtype.kind != "c":
            raise NotDeviceLoop("a complex value stored into a real array (NumPy warns)")
        writer.buf.writeline(f"bad = bad | ({value.length} != {target.length})")
        same = [read for read in value.reads if read.array is array and read.key != target.key]
        if same:  # NumPy's temporary: one tile is its own
            writer.buf.writeline(f"bad = bad | ({target.length} > {_TILE})")
    offs, mask = _tiles(writer, target.length)
    item = value.tile(offs, mask) if isinstance(value, _Vector) else value
    stored = writer.cast(item, array.dtype).text
    writer.buf.writeline("tl.debug_barrier()")
    address = f"{array.name}_ptr + {target.offset} + {offs} * {target.stride}"
    writer.buf.writeline(f"tl.store({address}, {stored}, mask={target.mask(mask)})")
    writer.buf.level -= 1
    writer.stored()


def _setitem_at(writer: _ProgramWriter, node: Node, env: Env) -> None:
    # `x[i] = v` (an element, loop_program's own) or `x[:k] = value` (a view).
    from .loop_program import NotDeviceLoop, _Array
    from .loop_program import _setitem_at as element_store

    array = env.get(node.inputs[0]) if isinstance(node.inputs[0], Node) else None
    template = dict(node.params)["index"]
    if not isinstance(array, _Array):
        raise NotDeviceLoop("a store into a value that is no loop argument")
    if not any(isinstance(item, slice) for item in template) and len(template) == array.ndim:
        element_store(writer, node, env)
        return
    target = _make_view(writer, env, array, node.inputs[2:], template)
    vector = _vector(writer, env, node.inputs[1])
    if vector is None:
        scalar = writer.operand(env, node.inputs[1])
        if scalar.python is int and array.dtype.kind in "iu" and array.dtype != np.int64:
            raise NotDeviceLoop("a Python int stored into a narrower integer array")
        _store(writer, target, scalar)
    else:
        _store(writer, target, vector)
    env[node] = array


VIEW_HANDLERS: dict[str, Callable[[_ProgramWriter, Node, Env], None]] = {
    "getitem_at": _getitem_at,
    "setitem_at": _setitem_at,
    "matmul": _matmul,
    "dot": _matmul,
    "sum": _sum,
}
