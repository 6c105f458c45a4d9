"""Loops with array-sized bodies as C: the body's fused kernels called from one C loop.

A `for_loop` whose body does array work (a time-stepped stencil, particle steps) is
scheduled like any graph: lowered, its stores into inputs made kernels (`loop_stores`),
fused. Its kernels become C functions of the graph's module, and one C function runs the
loop, calling them with their sizes, pointers and strides (the loop index is a scalar
argument): no Python per iteration, and each kernel keeps its own OpenMP threshold, so
no parallel region opens per iteration unless that kernel's work is above it.

Memory: intermediates and extern results are allocated once, before the loop. A carried
array the body computes anew (`pos = pos + dt * vel`) has two buffers used in turn (the
body reads one and writes the other: no copy per iteration); one it updates in place
(`pos += ...`, `B[1:-1] = ...`) is written where it lies, as eager writes it. A ufunc the
kernels do not compute (float `power`, kept NumPy's for bit-identical results) is called
through NumPy's C API into its preallocated result (`out=`).

The function has the signature of `loop_function`'s and runs the loop with NumPy (its
`eager` argument, the host loop) when the arguments are not what the body was compiled
for, or when arrays it writes share memory with any other argument. What it cannot take
raises `NotKernelLoop` at code generation (the loop then stays on the host loop).

    >>> kernel_loop_function(node, "loop_v2", parallel_threshold=65536).kernels  # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from numpile_capture import (
    ArrayMeta,
    Graph,
    Node,
    ScalarMeta,
    ScalarSlot,
    has_loops,
    mentions_loop_symbol,
)

from ...index import c_size, free_symbols, is_symbol, replace_symbols, size_symbol
from ...loop_ir import Buffer, BufferRef, ExternCall, Store, loads_of
from ...scheduler import FusedKernel, schedule
from .kernel import kernel_signature, kernel_source
from .loop_float_scalars import retype_python_floats
from .loop_function import OUT_OF_LINE
from .loop_stores import recorded_starts, stores_as_kernels
from .ops import c_literal, c_type

if TYPE_CHECKING:
    import sympy
else:
    from ...light_lowering import sympy  # imported on first use (see light_lowering)


class NotKernelLoop(Exception):  # noqa: N818 - it names the event
    """The loop's body holds something its C loop of kernels cannot run (the reason)."""


@attrs.frozen
class KernelLoop:
    """The C of one loop function (`source`) and of the body's kernels it calls."""

    name: str
    source: str
    kernels: tuple[str, ...]


KERNEL_LOOP_HELPERS = r"""
/* Loops of kernels (codegen/c/loop_kernels.py): whether two arrays' memory may overlap. */
static int np_kl_extent(PyArrayObject *a, char **lo, char **hi)
{
    char *low = PyArray_BYTES(a), *high = PyArray_BYTES(a);
    for (int d = 0; d < PyArray_NDIM(a); d++) {
        npy_intp n = PyArray_DIMS(a)[d], s = PyArray_STRIDES(a)[d];
        if (n == 0) { return 0; }
        if (s < 0) { low += (n - 1) * s; } else { high += (n - 1) * s; }
    }
    *lo = low;
    *hi = high + PyArray_ITEMSIZE(a);
    return 1;
}
static int np_kl_overlap(PyArrayObject *a, PyArrayObject *b)
{
    char *alo, *ahi, *blo, *bhi;
    if (!np_kl_extent(a, &alo, &ahi) || !np_kl_extent(b, &blo, &bhi)) { return 0; }
    return alo < bhi && blo < ahi;
}
"""


# Extern steps read as pointers into an argument at the loop index (`_check_rows`): a row
# (`A[i]`, `for row in A`) and an element (`r[i]`, `for c in coeffs`: a 0-d view).
_VIEWS_AT = ("getitem_at", "element_at")

# Python scalars a body takes as kernel scalar arguments: C type, check, conversion.
_SCALARS: dict[type, tuple[str, str, str]] = {
    float: ("double", "PyFloat_CheckExact({o})", "PyFloat_AS_DOUBLE({o})"),
    bool: ("npy_bool", "PyBool_Check({o})", "(npy_bool)({o} == Py_True)"),
}


def kernel_loop_function(node: Node, name: str, *, parallel_threshold: int) -> KernelLoop:
    """The C function `name` running `for_loop` node `node` by calling its body's kernels
    (raises `NotKernelLoop`); same C signature as `loop_function.scalar_loop_function`'s.
    """
    if node.op is None or node.op.name != "for_loop":
        raise NotKernelLoop("a while loop of array work (only for loops call kernels)")
    params = dict(node.params)
    body: Graph = params["body"]
    carried: int = params["carried"]
    first = params.get("first")
    if first is not None and not _same_computation(first, body):
        raise NotKernelLoop("the first iteration runs on other types than the body")
    if params.get("breaks"):
        raise NotKernelLoop("a body that breaks")
    if has_loops(body):
        raise NotKernelLoop("a nested loop or a condition in the body")
    for inner in body.nodes:
        if isinstance(inner.meta, ArrayMeta) and mentions_loop_symbol(inner.meta.shape):
            raise NotKernelLoop("a shape that depends on the loop index")
    try:
        body = retype_python_floats(body)
    except ValueError as reason:
        raise NotKernelLoop(str(reason)) from reason
    # Late import: lowering registers every op's lowering on import.
    from ...lowering import lower_graph

    # A body's gathers stay extern calls (its stores are rewritten by loop_stores.py).
    program = lower_graph(body, data_indices=False)
    stores = stores_as_kernels(program, recorded_starts(body))
    renamed = stores.renamed
    # Inputs count as outputs: a store into one is never kept in registers only.
    outputs = {node: renamed.get(name, name) for node, name in program.outputs.items()}
    outputs.update(zip(body.placeholders, program.inputs, strict=True))
    named_views = set(outputs.values()) | {
        name for step in stores.steps if isinstance(step, ExternCall) for name in step.reads()
    }
    if named_views & stores.views:
        raise NotKernelLoop("a view of an input that the body returns or hands to NumPy")
    program = attrs.evolve(program, steps=stores.steps, outputs=outputs, buffers=stores.buffers)
    sched = schedule(program, keep=frozenset(stores.written_rows))
    inputs = set(program.inputs)
    split = [
        part
        for step in sched.steps
        for part in (_split_after_stores(step, inputs) if isinstance(step, FusedKernel) else [step])
    ]
    kernels = [
        attrs.evolve(step, name=f"{name}_k{k}")
        for k, step in enumerate(s for s in split if isinstance(s, FusedKernel))
    ]
    named = iter(kernels)
    ordered = [next(named) if isinstance(s, FusedKernel) else s for s in split]
    writer = _Writer(node, body, carried, program, renamed, name, stores.written_rows)
    return writer.write(ordered, parallel_threshold)


def _same_computation(first: Graph, body: Graph) -> bool:
    # Whether the first iteration's graph is the body's on arguments of the same kinds
    # (array arguments of other strides: the kernels read any strides).
    def kinds(graph: Graph) -> list[Any]:
        return [
            (meta.dtype, tuple(meta.shape)) if isinstance(meta, ArrayMeta) else meta
            for meta in (node.meta for node in graph.placeholders)
        ]

    def ops(graph: Graph) -> list[str]:
        return str(graph).splitlines()[1:]

    return kinds(first) == kinds(body) and ops(first) == ops(body)


def _ufunc_name(step: ExternCall) -> str | None:
    # The NumPy ufunc (by its name in `numpy`) a pure extern step calls, or None.
    impl = step.impl
    if step.is_barrier or step.kwargs or not isinstance(impl, np.ufunc) or impl.nout != 1:
        return None
    if getattr(np, impl.__name__, None) is not impl:
        return None
    if len(step.args) != impl.nin:
        return None
    for arg in step.args:
        if not isinstance(arg, BufferRef) and (
            isinstance(arg, bool) or not isinstance(arg, int | float)
        ):
            return None
    return str(impl.__name__)


def _split_after_stores(fused: FusedKernel, inputs: set[str]) -> list[FusedKernel]:
    # Stores into inputs inside one fused nest must read what NumPy reads:
    # - a kernel fused after one that stores into an input reads that input from memory
    #   (`pos += dt * vel; vel -= dt * pos`: one nest would reuse the `pos` it loaded
    #   before the store);
    # - a store into an input that kernels before it in the nest read at other elements
    #   (`A[1:] = A[:-1] + 1`) must wait for the whole value (NumPy computes it first).
    # Such a kernel starts a fused kernel of its own; what crosses the cut gets memory.
    if fused.parts:
        # A row group runs each row's parts in turn: a part storing into an input would
        # let the next rows read it written. Its parts run one after the other instead
        # (what they handed each other per row gets memory).
        if not any(name in inputs for name in fused.writes()):
            return [fused]
        return [piece for part in fused.parts for piece in _split_after_stores(part, inputs)]
    if fused.is_reduction:
        return [fused]
    groups: list[list[Any]] = [[]]
    stored: set[str] = set()
    loaded: dict[str, set[Any]] = {}
    for kernel in fused.kernels:
        targets = {s.buffer: s.index for s in kernel.stores if s.buffer in inputs}
        before = any(loaded.get(name, set()) - {index} for name, index in targets.items())
        if before or stored & set(kernel.reads()):
            groups.append([])
            stored = set()
            loaded = {}
        groups[-1].append(kernel)
        for store in kernel.stores:
            for load in loads_of(store.value):
                loaded.setdefault(load.buffer, set()).add(load.index)
        stored |= set(targets)
    if len(groups) == 1:
        return [fused]
    reads = [{name for kernel in group for name in kernel.reads()} for group in groups]
    result = []
    for k, group in enumerate(groups):
        writes = {name for kernel in group for name in kernel.writes()}
        others = set().union(*(r for j, r in enumerate(reads) if j != k))
        internal = frozenset(n for n in fused.internal if n in writes and n not in others)
        result.append(
            attrs.evolve(fused, name=f"{fused.name}_{k}", kernels=tuple(group), internal=internal)
        )
    return result


def _all_stores(fused: FusedKernel) -> list[Any]:
    stores = list(fused.stores)
    for part in fused.parts:
        stores += _all_stores(part)
    return stores


def _check_in_place(fused: FusedKernel, inputs: set[str]) -> None:
    # A fused kernel that writes an input must read it only at the element it writes in
    # the same iteration (else later elements would read values written before them,
    # where NumPy computes the whole value first).
    stores = _all_stores(fused)
    written = {s.buffer: s.index for s in stores if s.buffer in inputs}
    for store in stores:
        if store.buffer in written and not isinstance(store, Store):
            raise NotKernelLoop("a reduction into an input")
        if store.buffer in written and store.index != written[store.buffer]:
            raise NotKernelLoop("two stores into one input at other elements")
        for load in loads_of(store.value):
            if load.buffer in written and load.index != written[load.buffer]:
                raise NotKernelLoop("a kernel that reads an input it writes at other elements")
        if (fused.parts or fused.is_reduction) and store.buffer in written:
            raise NotKernelLoop("a store into an input in a reduction kernel")


class _Writer:
    # Writes one loop function.

    def __init__(
        self,
        node: Node,
        body: Graph,
        carried: int,
        program: Any,
        renamed: dict[str, str],
        name: str,
        written_rows: dict[str, str],
    ) -> None:
        self.node = node
        self.body = body
        self.carried = carried
        self.program = program
        self.buffers: dict[str, Buffer] = dict(program.buffers)
        self.renamed = renamed
        self.name = name
        self.written_rows = written_rows  # row view -> the input it is a row of
        self.entry: list[str] = []
        self.symbols: dict[sympy.Symbol, str] = {}
        self.arrays: list[str] = []  # input array buffers (C: a_<name>, d_<name>, st_<name>)
        self.argv: dict[str, int] = {}  # input buffer -> argv position
        self.values: set[str] = set()  # 0-d invariants read by value (C: v_<name>, d_<name>)

    def write(self, steps: list[FusedKernel | ExternCall], threshold: int) -> KernelLoop:
        inputs = set(self.program.inputs)
        rows = {s.buffer: s for s in steps if isinstance(s, ExternCall) and s.op_name in _VIEWS_AT}
        for step in steps:
            if isinstance(step, FusedKernel):
                _check_in_place(step, inputs)
            elif step.buffer not in rows and _ufunc_name(step) is None:
                raise NotKernelLoop(f"an extern {step.op_name} in the body")
        self._unpack_inputs()
        self._check_rows(rows, steps)
        ufuncs = [s for s in steps if isinstance(s, ExternCall) and s.buffer not in rows]
        bounds = [self._bound(value) for value in self.node.inputs[:3]]
        outputs = self._carried_outputs()
        written_inputs = sorted(
            {
                name
                for step in steps
                for name in step.writes()
                if name in inputs and isinstance(step, FusedKernel)
            }
            | set(self.written_rows.values())
        )
        if self.values.intersection(written_inputs):
            raise NotKernelLoop("a store into a 0-d invariant")
        local = self._local_buffers(steps, inputs)
        doubled = [out for kind, out in outputs if kind == "fresh"]
        floats = [(k, out) for k, (kind, out) in enumerate(outputs) if kind == "float"]
        kernel_sources = tuple(
            kernel_source(step, self.buffers, parallel_threshold=threshold)
            for step in steps
            if isinstance(step, FusedKernel)
        )
        lines = [
            f"{OUT_OF_LINE} static PyObject *{self.name}(PyObject *const *argv, Py_ssize_t argc, "
            "PyObject *eager, int *np_fp)",
            "{",
            "    PyObject *result = NULL;",
            "    PyObject *np_ufuncs = NULL;",
            *(f"    PyObject *o_{b} = NULL;" for b in local if b not in doubled),
            *(f"    PyObject *o_{b}[2] = {{NULL, NULL}};" for b in doubled),
            *(f"    PyObject *u_{s.buffer} = NULL;" for s in ufuncs),
            *self.entry,
        ]
        start, stop, stride = bounds
        for array in written_inputs:
            lines.append(f"    if (!PyArray_ISWRITEABLE(a_{array})) {{ goto eager; }}")
            for other in self.arrays:
                if other != array:
                    lines.append(f"    if (np_kl_overlap(a_{array}, a_{other})) {{ goto eager; }}")
        lines += [
            f"    if ({stride} == 0) {{ goto eager; }}",
            f"    const int64_t trips = {stride} > 0"
            f" ? ({stop} > {start} ? ({stop} - {start} + {stride} - 1) / {stride} : 0)"
            f" : ({start} > {stop} ? ({start} - {stop} - {stride} - 1) / (-{stride}) : 0);",
            "    if (trips == 0) {",
            f"        result = PyTuple_New({self.carried});",
            "        if (result == NULL) { goto fail; }",
            *(
                line
                for k in range(self.carried)
                for line in _set_item(k, self._initial(k), "        ")
            ),
            "        goto done;",
            "    }",
        ]
        for buffer in local:
            copies = [f"o_{buffer}[0]", f"o_{buffer}[1]"] if buffer in doubled else [f"o_{buffer}"]
            for target in copies:
                lines += self._alloc(target, self.buffers[buffer])
        if ufuncs:
            lines.append('    np_ufuncs = PyImport_ImportModule("numpy");')
            lines.append("    if (np_ufuncs == NULL) { goto fail; }")
            for s in ufuncs:
                lines.append(
                    f'    u_{s.buffer} = PyObject_GetAttrString(np_ufuncs, "{_ufunc_name(s)}");'
                )
                lines.append(f"    if (u_{s.buffer} == NULL) {{ goto fail; }}")
        lines.append("    for (int64_t np_t = 0; np_t < trips; np_t++) {")
        lines.append(f"        const int64_t np_i = {start} + np_t * {stride};")
        lines.append("        (void)np_i;")
        for buffer in local:
            lines += self._bind_local(buffer, doubled)
        for item in steps:
            if isinstance(item, FusedKernel):
                lines.append(f"        *np_fp |= {self._kernel_call(item)};")
            elif item.buffer in rows:
                lines += self._row_view(item)
            else:
                lines += self._ufunc_call(item, doubled)
        # The carried arrays of the next iteration: computed anew or swapped.
        for k, out in floats:
            lines.append(f"        sc_{self.program.inputs[1 + k]} = *d_{out};")
        moved = [
            (k, kind, out) for k, (kind, out) in enumerate(outputs) if kind in ("fresh", "carried")
        ]
        for k, kind, out in moved:
            value = f"o_{out}[np_t & 1]" if kind == "fresh" else f"a_{out}"
            lines.append(f"        PyArrayObject *np_next{k} = (PyArrayObject *){value};")
        for k, _, _ in moved:
            own = self.program.inputs[1 + k]
            lines.append(f"        a_{own} = np_next{k};")
            lines += self._bind_array(own, "        ")
        # Ctrl-C stops the loop between iterations (one flag read; the GIL stays held).
        lines.append("        if (PyErr_CheckSignals() < 0) { goto fail; }")
        lines.append("    }")
        lines.append(f"    result = PyTuple_New({self.carried});")
        lines.append("    if (result == NULL) { goto fail; }")
        for k in range(self.carried):
            own = self.program.inputs[1 + k]
            if self.buffers[own].kind != "scalar":
                lines.append(f"    PyTuple_SET_ITEM(result, {k}, Py_NewRef((PyObject *)a_{own}));")
                continue
            value = self._initial(k) if outputs[k][0] == "same" else f"PyFloat_FromDouble(sc_{own})"
            lines += _set_item(k, value, "    ")
        lines += [
            "    goto done;",
            "eager:",
            "    result = PyObject_Vectorcall(eager, argv, argc, NULL);",
            "    goto done;",
            "fail:",
            "    result = NULL;",
            "done:",
            "    Py_XDECREF(np_ufuncs);",
            *(f"    Py_XDECREF(u_{s.buffer});" for s in ufuncs),
            *(f"    Py_XDECREF(o_{b});" for b in local if b not in doubled),
            *(f"    Py_XDECREF(o_{b}[0]); Py_XDECREF(o_{b}[1]);" for b in doubled),
            "    return result;",
            "}",
        ]
        return KernelLoop(self.name, "\n".join(lines), kernel_sources)

    # -- arguments ----------------------------------------------------------------------

    def _position(self, position: int) -> int:
        # The argv slot of the node's input `position` (its graph-value inputs, in order).
        return sum(isinstance(v, Node) for v in self.node.inputs[:position])

    def _unpack_inputs(self) -> None:
        placeholders = self.body.placeholders
        names = self.program.inputs
        index = names[0]
        if self.buffers[index].kind != "scalar":
            raise NotKernelLoop("an index that is no Python int")
        for k in range(1, len(placeholders)):
            value = self.node.inputs[3 + k - 1]
            buffer = self.buffers[names[k]]
            meta = placeholders[k].meta
            if isinstance(meta, ScalarMeta) and meta.type is float and k <= self.carried:
                self._unpack_carried_float(buffer, value)
                continue
            if not isinstance(value, Node):
                raise NotKernelLoop("a constant carried value or invariant")
            slot = self._position(3 + k - 1)
            arg = f"argv[{slot}]"
            self.argv[buffer.name] = slot
            if isinstance(meta, ScalarMeta):
                if meta.type not in _SCALARS or k <= self.carried:
                    raise NotKernelLoop(f"a {meta.type.__name__} argument")
                ct, check, convert = _SCALARS[meta.type]
                self.entry.append(f"    if (!{check.format(o=arg)}) {{ goto eager; }}")
                self.entry.append(f"    const {ct} sc_{buffer.name} = {convert.format(o=arg)};")
                continue
            if not isinstance(meta, ArrayMeta) or buffer.kind != "input":
                raise NotKernelLoop(f"an argument {meta}")
            if c_type(buffer.dtype) is None:
                raise NotKernelLoop(f"an array of {buffer.dtype}")
            if not buffer.shape and k > self.carried:
                self._unpack_value(buffer, arg)
            elif buffer.shape:
                self._unpack_array(buffer, arg)
            else:
                raise NotKernelLoop(f"a carried 0-d value {meta}")
        # Every size symbol a kernel uses must be bound from an argument's dims.
        for buf in self.buffers.values():
            for dim in buf.shape:
                if not free_symbols(dim) <= set(self.symbols):
                    raise NotKernelLoop(f"a size {dim} no argument binds")

    def _unpack_carried_float(self, buffer: Buffer, value: Any) -> None:
        # A carried Python float (`t += h`): a C double the kernels take by value, set
        # anew after each iteration (see `_carried_outputs`), boxed at the end.
        if isinstance(value, Node):
            slot = self._position(self.node.inputs.index(value))
            self.argv[buffer.name] = slot
            arg = f"argv[{slot}]"
            self.entry.append(f"    if (!PyFloat_CheckExact({arg})) {{ goto eager; }}")
            self.entry.append(f"    double sc_{buffer.name} = PyFloat_AS_DOUBLE({arg});")
        elif isinstance(value, float):
            literal = c_literal(value, np.dtype("float64"))
            self.entry.append(f"    double sc_{buffer.name} = {literal};")
        else:
            raise NotKernelLoop(f"a carried float that starts as {value!r}")

    def _unpack_value(self, buffer: Buffer, arg: str) -> None:
        # A 0-d invariant (a NumPy scalar input, `x = x + dt * x`): its value read once into a
        # local the kernels read through their pointer to it, as they read a 0-d array.
        ct = c_type(buffer.dtype)
        self.values.add(buffer.name)
        self.entry.append(f"    {ct} v_{buffer.name};")
        self.entry.append(
            f"    if (!np_loop_value({arg}, {int(buffer.dtype.num)}, &v_{buffer.name})) "
            "{ goto eager; }"
        )
        self.entry.append(f"    const {ct} *d_{buffer.name} = &v_{buffer.name};")
        self.entry.append(f"    const int64_t *st_{buffer.name} = NULL;")

    def _unpack_array(self, buffer: Buffer, arg: str) -> None:
        a = f"a_{buffer.name}"
        self.arrays.append(buffer.name)
        typenum = int(buffer.dtype.num)
        itemsize = buffer.dtype.itemsize
        entry = self.entry
        entry.append(f"    if (!PyArray_Check({arg})) {{ goto eager; }}")
        entry.append(f"    PyArrayObject *{a} = (PyArrayObject *){arg};")
        conds = [
            f"PyArray_TYPE({a}) != {typenum}",
            f"PyArray_NDIM({a}) != {len(buffer.shape)}",
            f"!PyArray_ISNOTSWAPPED({a})",
            f"!PyArray_ISALIGNED({a})",
            *(f"PyArray_STRIDES({a})[{d}] % {itemsize} != 0" for d in range(len(buffer.shape))),
        ]
        entry.append(f"    if ({' || '.join(conds)}) {{ goto eager; }}")
        for d, dim in enumerate(buffer.shape):
            actual = f"(int64_t)PyArray_DIMS({a})[{d}]"
            if is_symbol(dim) and dim not in self.symbols:
                self.symbols[dim] = f"sym_{dim}"
                entry.append(f"    const int64_t sym_{dim} = {actual};")
            else:
                entry.append(f"    if ({actual} != {self._size(dim)}) {{ goto eager; }}")
        nd = len(buffer.shape)
        entry.append(f"    {c_type(buffer.dtype)} *d_{buffer.name};")
        entry.append(f"    int64_t st_{buffer.name}[{nd}];")
        entry += self._bind_array(buffer.name, "    ")

    def _bind_array(self, name: str, indent: str) -> list[str]:
        # Data pointer and element strides of input array `name` from a_<name>.
        buffer = self.buffers[name]
        lines = [f"{indent}d_{name} = ({c_type(buffer.dtype)} *)PyArray_DATA(a_{name});"]
        lines += [
            f"{indent}st_{name}[{d}] = (int64_t)(PyArray_STRIDES(a_{name})[{d}] / "
            f"{buffer.dtype.itemsize});"
            for d in range(len(buffer.shape))
        ]
        return lines

    def _bound(self, value: Any) -> str:
        if isinstance(value, Node):
            if not (isinstance(value.meta, ScalarMeta) and value.meta.type is int):
                raise NotKernelLoop("a loop bound that is no Python int")
            name = f"np_bound{len(self.entry)}"
            slot = self._position(self.node.inputs.index(value))
            self.entry.append(f"    int64_t {name};")
            self.entry.append(f"    if (!np_loop_int(argv[{slot}], &{name})) {{ goto eager; }}")
            return name
        if isinstance(value, bool) or not isinstance(value, int) or abs(value) > 2**60:
            raise NotKernelLoop("a loop bound that is no Python int")
        return f"(int64_t){value}LL"

    def _size(self, dim: Any) -> str:
        if isinstance(dim, int):
            return f"(int64_t){dim}"
        names = {s: size_symbol(v) for s, v in self.symbols.items()}
        return f"(int64_t)({c_size(replace_symbols(dim, names))})"

    def _initial(self, k: int) -> str:
        value = self.node.inputs[3 + k]
        if not isinstance(value, Node):
            # A carried float constant (`_unpack_carried_float`): its C double boxed.
            return f"PyFloat_FromDouble(sc_{self.program.inputs[1 + k]})"
        return f"Py_NewRef(argv[{self._position(3 + k)}])"

    # -- carried values and local buffers -----------------------------------------------

    def _carried_outputs(self) -> list[tuple[str, str]]:
        # Per carried value: ("same", input) when the body leaves the object it got (maybe
        # written in place), ("fresh", buffer) when it computes a new array of its shape,
        # ("float", buffer) when a carried Python float's next value is the 0-d buffer.
        outputs = self.body.output if isinstance(self.body.output, tuple) else (self.body.output,)
        if len(outputs) != self.carried:
            raise NotKernelLoop("a body with outputs other than its carried values")
        result: list[tuple[str, str]] = []
        fresh: set[str] = set()
        for k, out in enumerate(outputs):
            own = self.program.inputs[1 + k]
            if not isinstance(out, Node) or out not in self.program.outputs:
                raise NotKernelLoop("a carried output that is no node")
            buffer = self.program.outputs[out]
            buffer = self.renamed.get(buffer, buffer)
            if buffer == own:
                result.append(("same", own))
                continue
            if self.buffers[own].kind == "scalar":
                buf = self.buffers[buffer]
                if buf.kind != "kernel" or buf.shape != () or buf.dtype != np.dtype("float64"):
                    raise NotKernelLoop("a carried float the body neither computes nor keeps")
                result.append(("float", buffer))
                continue
            if buffer in self.program.inputs[1 : 1 + self.carried]:
                result.append(("carried", buffer))  # `u, v = v, u`
                continue
            buf = self.buffers[buffer]
            mine = self.buffers[own]
            if buf.kind != "kernel" or buffer in fresh:
                raise NotKernelLoop("a carried array the body neither computes nor keeps")
            if buf.shape != mine.shape or buf.dtype != mine.dtype:
                raise NotKernelLoop("a carried array whose shape or dtype changes")
            fresh.add(buffer)
            result.append(("fresh", buffer))
        kinds = {kind for kind, _ in result}
        if {"carried", "fresh"} <= kinds:
            # A swapped slot could hold the buffer the next iteration writes.
            raise NotKernelLoop("carried arrays both swapped and computed anew")
        return result

    def _local_buffers(self, steps: list[FusedKernel | ExternCall], inputs: set[str]) -> list[str]:
        # Buffers the kernels and ufunc calls write that are not inputs or registers.
        names: dict[str, None] = {}
        for step in steps:
            if isinstance(step, ExternCall) and step.op_name in _VIEWS_AT:
                continue  # a view of an argument (see _row_view)
            internal = step.internal if isinstance(step, FusedKernel) else frozenset()
            for name in step.writes():
                if name in inputs or name in internal or name in self.written_rows:
                    continue
                buf = self.buffers[name]
                if c_type(buf.dtype) is None:
                    raise NotKernelLoop(f"a result of {buf.dtype}")
                # Allocated C-contiguous, as kernels expect of their own buffers.
                shape = buf.shape
                strides = _contiguous(shape)
                self.buffers[name] = attrs.evolve(buf, kind="kernel", example_strides=strides)
                names[name] = None
        return list(names)

    def _alloc(self, target: str, buffer: Buffer) -> list[str]:
        nd = len(buffer.shape)
        dims = ", ".join(f"(npy_intp){self._size(d)}" for d in buffer.shape) or "0"
        return [
            "    {",
            f"        npy_intp dims[{max(nd, 1)}] = {{{dims}}};",
            f"        {target} = PyArray_SimpleNew({nd}, dims, {int(buffer.dtype.num)});",
            "    }",
            f"    if ({target} == NULL) {{ goto fail; }}",
        ]

    def _bind_local(self, name: str, doubled: list[str]) -> list[str]:
        buffer = self.buffers[name]
        nd = len(buffer.shape)
        ct = c_type(buffer.dtype)
        obj = f"o_{name}[np_t & 1]" if name in doubled else f"o_{name}"
        strides = ", ".join(self._size(s) for s in _contiguous(buffer.shape)) or "0"
        return [
            f"        {ct} *d_{name} = ({ct} *)PyArray_DATA((PyArrayObject *){obj});",
            f"        const int64_t st_{name}[{max(nd, 1)}] = {{{strides}}};",
        ]

    # -- views by the loop index --------------------------------------------------------

    def _check_rows(self, rows: dict[str, ExternCall], steps: list[Any]) -> None:
        # `xs[i]`, `A[i, 1:]`, `r[i]`: views of a read-only argument at the loop index (an
        # element as a 0-d view), passed to the kernels as a pointer moved per iteration
        # (no copy, no NumPy call). A row a
        # kernel stores into (`stack[i] = h`, `written_rows`) is one too: its argument is
        # written through such rows only, and read only as `_check_written_row` allows.
        if not rows:
            return
        written = {name for step in steps for name in step.writes() if name not in rows}
        handed = {
            name
            for step in steps
            if isinstance(step, ExternCall) and step.buffer not in rows
            for name in step.reads()
        }
        outputs = set(self.program.outputs.values())
        index = self.program.inputs[0]
        stored_rows = {rows[name].args[0] for name in self.written_rows if name in rows}
        for name, step in rows.items():
            base = step.args[0]
            scalars = step.args[1:]
            if not isinstance(base, BufferRef) or base.name not in self.arrays:
                raise NotKernelLoop("a view by the index of no argument")
            if step.op_name == "element_at" and base in stored_rows:
                # NumPy copies the element when the body reads it: a pointer would see a
                # later store through a row of the same iteration (a row view would too,
                # as NumPy's does, so `_check_written_row` lets rows through).
                raise NotKernelLoop("an element by the index of an array the body writes")
            if name in self.written_rows:
                self._check_written_row(name, base.name, rows, steps)
            elif base.name in written or name in written:
                raise NotKernelLoop("a view by the index of an array the body writes")
            if name in handed or name in outputs:
                raise NotKernelLoop("a view by the index that NumPy or the caller gets")
            if any(not (isinstance(v, BufferRef) and v.name == index) for v in scalars):
                raise NotKernelLoop("a view at another run-time int than the loop index")
            self._row_items(step)  # raises for what the pointer arithmetic does not cover
            buf = self.buffers[name]
            self.buffers[name] = attrs.evolve(
                buf, kind="input", example_strides=_contiguous(buf.shape)
            )
            ct = c_type(buf.dtype)
            self.entry.append(f"    {ct} *d_{name} = NULL;")
            self.entry.append(f"    int64_t st_{name}[{max(len(buf.shape), 1)}] = {{0}};")

    def _check_written_row(
        self, name: str, base: str, rows: dict[str, ExternCall], steps: list[Any]
    ) -> None:
        # Stores through rows are the only writes of their argument, and the body reads it
        # only through views by the index that show the elements a store writes (`total[i]
        # += ct`: the same memory), before that store or in the kernel storing at the same
        # element: no kernel then reads an element another one wrote out of NumPy's order
        # (each row view is a barrier, so the stores run in the body's order).
        write = rows[name]
        same = {other for other, step in rows.items() if step.args[0] == BufferRef(base)}
        for other in same - set(self.written_rows):
            if rows[other].args != write.args or rows[other].kwargs != write.kwargs:
                raise NotKernelLoop("views by the index of an array the body writes elsewhere")
        after = False
        for step in steps:
            if step is write:
                after = True
            if isinstance(step, ExternCall) and step.buffer in rows:
                continue
            if base in step.reads() or base in step.writes() or name in step.reads():
                raise NotKernelLoop("an array the body stores a row of and reads")
            if after and same & set(step.reads()) and not _reads_where_stored(step, same):
                raise NotKernelLoop("a row read after a store into it at other elements")

    def _row_items(self, step: ExternCall) -> list[Any]:
        index = dict(step.kwargs).get("index")
        base = step.args[0]
        assert isinstance(base, BufferRef)
        shape = self.buffers[base.name].shape
        if not isinstance(index, tuple) or len(index) > len(shape):
            raise NotKernelLoop("a view by the index with another index")
        items = [*index, *(slice(None),) * (len(shape) - len(index))]
        for item, size in zip(items, shape, strict=True):
            if isinstance(item, ScalarSlot):
                if item.position != 0:
                    raise NotKernelLoop("a view at two run-time ints")
            elif isinstance(item, slice):
                parts = (item.start, item.stop, item.step)
                if any(not (p is None or isinstance(p, int)) for p in parts):
                    raise NotKernelLoop("a view by the index with run-time slice bounds")
                if not isinstance(size, int) and item != slice(None):
                    raise NotKernelLoop("a sliced axis of symbolic size")
            elif isinstance(item, bool) or not isinstance(item, int):
                raise NotKernelLoop("a view by the index with None or an Ellipsis")
        return items

    def _row_view(self, step: ExternCall) -> list[str]:
        # The view's pointer and strides at this iteration's index, checked as NumPy does
        # (IndexError, with the writes before it kept).
        base = step.args[0]
        assert isinstance(base, BufferRef)
        name = step.buffer
        shape = self.buffers[base.name].shape
        lines = ["        {", "            int64_t np_r;", "            int64_t np_off = 0;"]
        out = 0
        for axis, (item, size) in enumerate(zip(self._row_items(step), shape, strict=True)):
            dim = f"(int64_t)PyArray_DIMS(a_{base.name})[{axis}]"
            if isinstance(item, ScalarSlot | int):
                value = "np_i" if isinstance(item, ScalarSlot) else f"(int64_t){item}LL"
                lines.append(
                    f"            if (!np_loop_index({value}, {dim}, {axis}, &np_r)) "
                    "{ goto fail; }"
                )
                lines.append(f"            np_off += np_r * st_{base.name}[{axis}];")
                continue
            start, _, stride = item.indices(size if isinstance(size, int) else 1)
            if item == slice(None):
                start, stride = 0, 1
            lines.append(f"            np_off += (int64_t){start} * st_{base.name}[{axis}];")
            lines.append(
                f"            st_{name}[{out}] = (int64_t){stride} * st_{base.name}[{axis}];"
            )
            out += 1
        lines.append(f"            d_{name} = d_{base.name} + np_off;")
        lines.append("        }")
        return lines

    # -- the body ------------------------------------------------------------------------

    def _kernel_call(self, fused: FusedKernel) -> str:
        sig = kernel_signature(fused, self.buffers)
        args = [self._size(size) for size in (*sig.sizes, *sig.symbols)]
        for name in sig.buffers:
            args.append(f"d_{name}")
            args.append(f"st_{name}")
        for scalar in sig.scalars:
            args.append("np_i" if scalar == self.program.inputs[0] else f"sc_{scalar}")
        return f"{fused.name}({', '.join(args)})"

    def _ufunc_call(self, step: ExternCall, doubled: list[str]) -> list[str]:
        inputs = set(self.program.inputs)
        values: list[str] = []
        owned: list[str] = []
        lines = ["        {"]
        for k, arg in enumerate(step.args):
            if isinstance(arg, BufferRef):
                name = arg.name
                buf = self.buffers[name]
                if buf.kind == "scalar":
                    raise NotKernelLoop("a ufunc of a scalar argument")
                if name in self.values:
                    values.append(f"argv[{self.argv[name]}]")
                elif name in inputs:
                    values.append(f"(PyObject *)a_{name}")
                elif name in doubled:
                    values.append(f"o_{name}[np_t & 1]")
                else:
                    values.append(f"o_{name}")
                continue
            box = (
                f"PyFloat_FromDouble({float(arg)!r})"
                if isinstance(arg, float)
                else f"PyLong_FromLongLong({int(arg)}LL)"
            )
            lines.append(f"            PyObject *np_c{k} = {box};")
            lines.append(f"            if (np_c{k} == NULL) {{ goto fail; }}")
            values.append(f"np_c{k}")
            owned.append(f"np_c{k}")
        out = f"o_{step.buffer}[np_t & 1]" if step.buffer in doubled else f"o_{step.buffer}"
        values.append(out)
        lines.append(f"            PyObject *np_args[{len(values)}] = {{{', '.join(values)}}};")
        lines.append('            PyObject *np_kw = Py_BuildValue("(s)", "out");')
        lines.append("            PyObject *np_r = np_kw == NULL ? NULL : PyObject_Vectorcall(")
        lines.append(f"                u_{step.buffer}, np_args, {len(values) - 1}, np_kw);")
        lines.append("            Py_XDECREF(np_kw);")
        lines += [f"            Py_DECREF({o});" for o in owned]
        lines.append("            if (np_r == NULL) { goto fail; }")
        lines.append("            Py_DECREF(np_r);")
        lines.append("        }")
        return lines


def _set_item(k: int, value: str, indent: str) -> list[str]:
    # result[k] = the new reference `value` (a box that may fail: the call fails).
    return [
        f"{indent}{{",
        f"{indent}    PyObject *np_box = {value};",
        f"{indent}    if (np_box == NULL) {{ Py_CLEAR(result); goto fail; }}",
        f"{indent}    PyTuple_SET_ITEM(result, {k}, np_box);",
        f"{indent}}}",
    ]


def _reads_where_stored(step: Any, rows: set[str]) -> bool:
    # Whether kernel `step` reads `rows` only where it stores into one of them, at the
    # element it stores (`total[i] = total[i] + ct` as one kernel).
    if not isinstance(step, FusedKernel):
        return False
    for store in _all_stores(step):
        for load in loads_of(store.value):
            if load.buffer in rows and (store.buffer not in rows or load.index != store.index):
                return False
    return True


def _contiguous(shape: tuple[Any, ...]) -> tuple[Any, ...]:
    strides: list[Any] = []
    step: Any = 1
    for dim in reversed(shape):
        strides.append(step)
        step = step * dim
    return tuple(reversed(strides))
