"""The wrapper: one CPython extension module per graph that runs the whole program.

Its `call` function (METH_FASTCALL) takes the graph inputs, checks each
array's dtype and shape (cheap field reads), allocates results with
`PyArray_NewFromDescr` (NumPy's allocator, huge pages included), runs the
kernels, calls extern NumPy functions back through Python callables handed
over at load time, drops intermediates after their last use, and returns the
output leaves. A Python function rebuilds the output pytree only when it is
not a single array or a flat tuple of arrays.

    >>> generated = generate_module(schedule(program), InductorConfig())  # doctest: +SKIP
    >>> print(generated.source)  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from numpile_capture import (
    C_KERNEL_LOOP,
    C_LOOP,
    HOST_LOOP,
    OP_BY_OP,
    ArrayMeta,
    Node,
    contiguous_strides,
    extern_rows,
    gives_scalar,
    tree_flatten,
)

from ...config import InductorConfig
from ...index import c_size, free_symbols, is_symbol, replace_symbols, size_symbol
from ...launcher import GeneratedModule, extern_callable
from ...loop_ir import Buffer, BufferRef, ExternCall, dense_strides, has_data_index, loads_of
from ...loop_reports import noting_loops, report_loop, report_notes
from ...loops import kernels_take
from ...lowering.scatter import BINCOUNT_LENGTH
from ...scheduler import FusedKernel, Schedule
from ..common import CodeBuffer
from .accumulate import BINCOUNT_LENGTH_HELPERS, bincount_length_call
from .blas import BLAS_HELPERS, BLAS_LIBRARY_HELPERS, blas_operands
from .buffer_pool import MIN_POOLED_BYTES, extern_pool_test, write_pooled_alloc
from .extern_forms import FALLBACK, write_extern_form
from .gather import GATHER_GLOBALS
from .interrupts import INTERRUPT_GLOBALS, main_thread_init
from .kernel import kernel_signature, kernel_source
from .loop_body import NotScalarLoop
from .loop_function import LOOP_HELPERS, scalar_loop_function, zero_filled
from .loop_kernels import KERNEL_LOOP_HELPERS, NotKernelLoop, kernel_loop_function
from .ops import c_type
from .prelude import module_prelude
from .scatter import SCATTER_HELPERS, ScatterAt, scatter_operands
from .translation_units import ENTRY_POINTS
from .while_function import scalar_while_function

if TYPE_CHECKING:
    import sympy
else:
    from ...light_lowering import sympy  # imported on first use (see light_lowering)

log = logging.getLogger("numpile.inductor.wrapper")
perf_log = logging.getLogger("numpile.perf_hints")

# NOTE: a `call` function of more lines is built without optimization; the kernels and
# loop functions it calls keep -O3. GCC's time grows faster than a function's
# size: a 2,899-line `call` (162 nodes, 120 steps) took 9.6 CPU-s at -O3 and 3.6 with
# `call` alone at -O0 (docs/status.md, issue 23). The glue it would optimize is Python
# C-API calls and checks, a small part of such a graph's time.
UNOPTIMIZED_CALL_LINES = 600
_UNOPTIMIZED = """\
#if defined(__clang__)
__attribute__((optnone, noinline))
#elif defined(__GNUC__)
__attribute__((optimize("O0")))
#endif"""


# The definitions of the prelude's globals: in the module's entry-point unit only.
_PRELUDE_GLOBALS = "NP_HIDDEN _Thread_local int g_fp_flags = 0;"


_FP_NUMPY = """\
/* NP_FE_* bits as NumPy's error categories: divide 1, over 2, under 4, invalid 8. */
static int np_fp_numpy(int bits)
{
    return ((bits & NP_FE_DIVBYZERO) ? 1 : 0) | ((bits & NP_FE_OVERFLOW) ? 2 : 0)
        | ((bits & NP_FE_UNDERFLOW) ? 4 : 0) | ((bits & NP_FE_INVALID) ? 8 : 0);
}"""


_SCALAR_CHECK = """\
/* Whether `o` is a NumPy scalar of type number `typenum`, in native byte order. */
static int np_is_scalar_of(PyObject *o, int typenum)
{
    if (!PyArray_IsScalar(o, Generic)) {
        return 0;
    }
    PyArray_Descr *descr = PyArray_DescrFromScalar(o);
    if (descr == NULL) {
        PyErr_Clear();
        return 0;
    }
    const int same = descr->type_num == typenum && PyArray_ISNBO(descr->byteorder);
    Py_DECREF(descr);
    return same;
}"""


def _typenum(dtype: np.dtype[Any]) -> int:
    return int(dtype.num)


def _layout_mismatch(array: str, buf: Buffer, dims: dict[int, str]) -> list[str]:
    # C conditions under which `array` is not a native-order `buf.dtype` array of `buf.shape`;
    # `dims` holds the C spellings of the sizes to check (the others are checked elsewhere).
    conds = [
        f"PyArray_TYPE({array}) != {_typenum(buf.dtype)}",
        f"PyArray_NDIM({array}) != {len(buf.shape)}",
        f"!PyArray_ISNOTSWAPPED({array})",
    ]
    conds += [f"PyArray_DIMS({array})[{d}] != {size}" for d, size in dims.items()]
    return conds


def _symbol_var(symbol: sympy.Symbol) -> sympy.Symbol:
    # The C variable holding a size symbol's value (`sym_s0`: clear of the wrapper's names).
    return size_symbol(f"sym_{symbol}")


def size_bindings(
    placeholders: list[tuple[str, tuple[Any, ...]]],
) -> dict[sympy.Symbol, tuple[str, int]]:
    """Where each size symbol is read at call time: the first input dim that is that symbol.

    >>> s0 = sympy.Symbol("s0", integer=True, positive=True)
    >>> size_bindings([("x", (s0, 4)), ("y", (s0,))])
    {s0: ('x', 0)}
    """
    result: dict[sympy.Symbol, tuple[str, int]] = {}
    for name, shape in placeholders:
        for d, dim in enumerate(shape):
            if is_symbol(dim) and dim not in result:
                result[dim] = (name, d)
    return result


class _Emitter:
    # Builds the body of the `call` function.

    def __init__(self, sched: Schedule, config: InductorConfig) -> None:
        self.sched = sched
        self.program = sched.program
        self.buffers = self.program.buffers
        self.config = config
        self.code = CodeBuffer()  # the `call` function
        self.statics: list[str] = []
        # Scalar loop functions: they set the buffer pool themselves where they call NumPy.
        self.self_pooled: set[str | None] = set()
        self.externs: list[Callable[..., Any]] = []
        self.has_strides: set[str] = set()
        self.kernel_buffers: set[str] = set()
        self.nodes = {node.name: node for node in sched.program.graph.nodes}
        self.last_step: dict[str, int] = {}
        self.step_index = 0
        # kernel name -> the buffers it may run on in place (no `restrict` on them)
        self.aliased: dict[str, frozenset[str]] = {}
        # By buffer name: an input whose name a node of the graph also has is `in_<name>`.
        self.bindings = size_bindings(
            [
                (name, tuple(self.buffers[name].shape))
                for name in self.program.inputs
                if self.buffers[name].kind == "input"
            ]
        )
        self.symbol_vars = {symbol: _symbol_var(symbol) for symbol in self.bindings}
        self.extern_ops = {
            step.buffer: step.op_name for step in sched.steps if isinstance(step, ExternCall)
        }
        # Positions among the externs of the `for_loop` calls that run as C loops.
        self.c_loops: list[int] = []
        # How many `for_loop` calls run as C loops of kernels (codegen/c/loop_kernels.py).
        self.kernel_loops = 0
        # Whether a product calls BLAS from C (codegen/c/blas.py): its helpers are emitted.
        self.blas_products = 0
        self.blas_helpers = False
        self.bincount_lengths = 0
        self.scatter_loops = 0
        self.stores_in_place = False
        # Whether an extern's 0-d result is checked as a NumPy scalar (`np_is_scalar_of`).
        self.scalar_checks = False

    def _may_run_parallel(self) -> bool:
        # Whether a kernel of the graph may reach the parallel threshold (a symbolic size
        # may), or a loop function written for the graph opens a region (a serial C loop
        # nest never does: its calls then make no thread decision, see `emit`).
        for step in self.sched.steps:
            if isinstance(step, FusedKernel):
                work = 1
                for dim in (*step.ranges, *step.reduction_ranges):
                    if not isinstance(dim, int):
                        return True
                    work *= dim
                if work >= self.config.parallel_threshold:
                    return True
        return any(_OPENS_REGION in text for text in self.statics)

    def emit(self) -> list[str]:
        graph = self.program.graph
        steps = self.sched.steps
        internal = {name for step in self.sched.kernels for name in step.internal}
        objects = [
            name
            for name, buf in self.buffers.items()
            if name not in internal and name not in self.program.inputs
        ]
        code = self.code
        start = len(code.lines)
        code.writeline(
            "static PyObject *call(PyObject *self, PyObject *const *args, Py_ssize_t nargs)"
        )
        with code.block():
            code.writelines(f"PyObject *o_{name} = NULL;" for name in objects)
            converted = [
                name
                for name, buf in self.buffers.items()
                if buf.kind in ("input", "extern") and c_type(buf.dtype) is not None
            ]
            code.writelines(
                f"PyObject *k_{name} = NULL;  /* {name} as an array, when it was not one */"
                for name in converted
            )
            code.writeline("PyObject *result = NULL;")
            n_inputs = len(graph.placeholders)
            with code.block(f"if (nargs != {n_inputs})"):
                code.writeline(
                    f'PyErr_Format(PyExc_TypeError, "compiled graph takes {n_inputs} inputs, '
                    'got %zd", nargs);'
                )
                code.writeline("return NULL;")
            code.writeline("int np_fp = 0;  /* the floating-point flags the kernels raised */")
            # NOTE: the thread decision goes here once the steps are written: they tell
            # whether the call may open a parallel region at all.
            threads_at = len(code.lines)
            for position, name in enumerate(self.program.inputs):
                self._emit_input(position, name)
            self._emit_sizes()
            last_use = self._last_uses(steps)
            self.last_step = {name: index for index, names in last_use.items() for name in names}
            for index, step in enumerate(steps):
                self.step_index = index
                if isinstance(step, FusedKernel):
                    self._emit_kernel(step)
                else:
                    self._emit_extern(step)
                for name in last_use.get(index, []):
                    if name in objects:
                        code.writeline(f"Py_CLEAR(o_{name});")
                    if name in converted:
                        code.writeline(f"Py_CLEAR(k_{name});")
            self._emit_outputs()
            parallel = self._may_run_parallel()
            code.lines[threads_at:threads_at] = _thread_decision(code.prefix, parallel=parallel)
            # Floating-point flags NumPy would warn about: the call fails with the error type
            # the caller chose (see set_fp_report), which runs the graph again op by op.
            code.writeline("g_fp_flags = np_fp;")
            with code.block("if (g_fp_error != NULL && (np_fp_numpy(np_fp) & g_fp_report))"):
                code.writeline("Py_CLEAR(result);")
                code.writeline("PyErr_SetNone(g_fp_error);")
            code.splice(["fail:"])
            code.writelines(f"Py_XDECREF(o_{name});" for name in objects)
            code.writelines(f"Py_XDECREF(k_{name});" for name in converted)
            if parallel:
                code.splice(["#ifdef _OPENMP"])
                code.writeline(
                    "if (threads_now != threads_before) { omp_set_num_threads(threads_before); }"
                )
                code.splice(["#endif"])
            code.writeline("return result;")
        if len(code.lines) - start > UNOPTIMIZED_CALL_LINES:
            code.lines[start:start] = _UNOPTIMIZED.splitlines()
        return [
            *self.statics,
            "",
            ENTRY_POINTS,
            _PRELUDE_GLOBALS,
            INTERRUPT_GLOBALS,
            GATHER_GLOBALS,
            "",
            *code.lines,
        ]

    def _last_uses(self, steps: list[FusedKernel | ExternCall]) -> dict[int, list[str]]:
        outputs = set(self.program.outputs.values())
        last: dict[str, int] = {}
        for index, step in enumerate(steps):
            for name in [*step.reads(), *step.writes()]:
                last[name] = index
        result: dict[int, list[str]] = {}
        for name, index in last.items():
            if name not in outputs:
                result.setdefault(index, []).append(name)
        return result

    def _emit_input(self, position: int, name: str) -> None:
        buf = self.buffers[name]
        code = self.code
        code.writeline(f"PyObject *o_{name} = args[{position}];")
        if buf.kind == "scalar":
            self._emit_scalar_input(position, name, buf)
            return
        if buf.kind != "input":
            return
        code.writeline(f"PyArrayObject *a_{name} = NULL;")
        code.writeline(f"if (PyArray_Check(o_{name})) {{")
        with code.indent():
            code.writeline(f"a_{name} = (PyArrayObject *)o_{name};")
        code.writeline(f"}} else if (PyArray_IsScalar(o_{name}, Generic)) {{")
        with code.indent():
            code.writeline(f"k_{name} = PyArray_FromScalar(o_{name}, NULL);")
            code.writeline(f"if (k_{name} == NULL) {{ goto fail; }}")
            code.writeline(f"a_{name} = (PyArrayObject *)k_{name};")
        code.writeline("}")
        static = {d: str(size) for d, size in enumerate(buf.shape) if isinstance(size, int)}
        conds = [f"a_{name} == NULL", *_layout_mismatch(f"a_{name}", buf, static)]
        with code.block(f"if ({' || '.join(conds)})"):
            code.writeline(
                f'PyErr_SetString(PyExc_TypeError, "compiled graph input {position} '
                f"({name}) must be a {buf.dtype.name} array of shape {buf.shape}; recompile for "
                'other inputs");'
            )
            code.writeline("goto fail;")
        self._emit_runtime_strides(name, buf)

    def _emit_scalar_input(self, position: int, name: str, buf: Buffer) -> None:
        # A scalar input by value: a Python float, int or bool (or the NumPy float64, int64
        # or bool_ that is one), else a NumPy scalar of exactly the buffer's dtype.
        code = self.code
        if buf.dtype.name == "float64":
            code.writeline(f"const double {name} = PyFloat_AsDouble(o_{name});")
        elif buf.dtype.name == "int64":
            code.writeline(f"const int64_t {name} = PyLong_AsLongLong(o_{name});")
        elif buf.dtype.name == "bool":
            code.writeline(f"const npy_bool {name} = (npy_bool)PyObject_IsTrue(o_{name});")
        elif c_type(buf.dtype) is not None:
            if not self.scalar_checks:
                self.statics.append(_SCALAR_CHECK)
            self.scalar_checks = True
            with code.block(f"if (!np_is_scalar_of(o_{name}, {_typenum(buf.dtype)}))"):
                code.writeline(
                    f'PyErr_SetString(PyExc_TypeError, "compiled graph input {position} '
                    f"({name}) must be a numpy.{buf.dtype.name} scalar; recompile for other "
                    'inputs");'
                )
                code.writeline("goto fail;")
            code.writeline(f"{c_type(buf.dtype)} {name};")
            code.writeline(f"PyArray_ScalarAsCtype(o_{name}, &{name});")
            return
        else:
            return
        code.writeline("if (PyErr_Occurred()) { goto fail; }")

    def c_dim(self, size: Any) -> str:
        """The C spelling of a size: an int, or an expression over the bound size symbols."""
        if isinstance(size, int):
            return str(size)
        spelled = replace_symbols(size, self.symbol_vars)
        bound = set(self.symbol_vars.values())
        missing = [s for s in free_symbols(spelled) if s not in bound]
        if missing:
            raise ValueError(f"size symbols {missing} are no bare dim of any graph input")
        return f"(npy_intp)({c_size(spelled)})"

    def _emit_sizes(self) -> None:
        # Bind each size symbol from its input dim, then check the inputs' other symbolic
        # dims against them: kernels index with these sizes, so a mismatch must not run.
        code = self.code
        for symbol, (name, d) in self.bindings.items():
            array = f"a_{name}" if self.buffers[name].kind == "input" else f"o_{name}"
            with code.block(
                f"if (!PyArray_Check((PyObject *){array}) || "
                f"PyArray_NDIM((PyArrayObject *){array}) <= {d})"
            ):
                code.writeline(
                    f'PyErr_SetString(PyExc_TypeError, "compiled graph input {name} must '
                    f'be an array of at least {d + 1} dims");'
                )
                code.writeline("goto fail;")
            code.writeline(
                f"const int64_t {self.symbol_vars[symbol]} = "
                f"PyArray_DIMS((PyArrayObject *){array})[{d}];"
            )
        for name in self.program.inputs:
            buf = self.buffers[name]
            if buf.kind != "input":
                continue
            for d, size in enumerate(buf.shape):
                if isinstance(size, int) or self.bindings.get(size) == (name, d):
                    continue
                with code.block(f"if (PyArray_DIMS(a_{name})[{d}] != {self.c_dim(size)})"):
                    code.writeline(
                        f'PyErr_Format(PyExc_ValueError, "compiled graph input {name}: '
                        f'dim {d} is %zd where the graph has {size} (shapes do not match)", '
                        f"(Py_ssize_t)PyArray_DIMS(a_{name})[{d}]);"
                    )
                    code.writeline("goto fail;")

    def _emit_runtime_strides(self, name: str, buf: Buffer) -> None:
        nd = len(buf.shape)
        self.code.writeline(f"int64_t {name}_st[{max(nd, 1)}];")
        self.code.writelines(
            f"{name}_st[{d}] = (int64_t)(PyArray_STRIDES(a_{name})[{d}] / {buf.dtype.itemsize});"
            for d in range(nd)
        )
        self.has_strides.add(name)

    def _reusable_source(self, step: FusedKernel, name: str) -> str | None:
        # An extern result this pointwise kernel may overwrite with `name` (an in-place
        # epilogue: matmul, then bias and relu into the matmul's own result). It must die
        # here, match `name`'s shape, dtype and C-contiguous layout, and be read only at
        # the element each iteration writes. The wrapper also checks at run time that it
        # holds the array's only reference and that the array owns contiguous data.
        if step.parts or step.is_reduction or self._output_strides(name) is not None:
            return None
        buf = self.buffers[name]
        if buf.example_strides != contiguous_strides(buf.shape):
            return None
        outside = [w for w in step.writes() if w not in step.internal]
        stores = [s for k in step.kernels for s in k.stores if s.buffer == name]
        if outside != [name] or len(stores) != 1:
            return None
        for src in step.reads():
            other = self.buffers[src]
            if (
                other.kind != "extern"
                or src not in self.extern_ops
                or other.shape != buf.shape
                or other.dtype != buf.dtype
                or self.last_step.get(src) != self.step_index
                or c_type(other.dtype) is None
            ):
                continue
            loads = [
                load
                for k in step.kernels
                for s in k.stores
                for load in loads_of(s.value)
                if load.buffer == src
            ]
            if all(load.index == stores[0].index for load in loads):
                return src
        return None

    def _emit_alloc(self, name: str, reuse: str | None = None) -> None:
        buf = self.buffers[name]
        nd = len(buf.shape)
        dims = ", ".join(self.c_dim(d) for d in buf.shape) or "0"
        strides = self._output_strides(name)
        code = self.code
        if reuse is not None:
            flags = "NPY_ARRAY_OWNDATA | NPY_ARRAY_WRITEABLE | NPY_ARRAY_C_CONTIGUOUS"
            code.writeline(
                f"if (k_{reuse} == NULL && Py_REFCNT(o_{reuse}) == 1 && "
                f"PyArray_BASE(a_{reuse}) == NULL && PyArray_CHKFLAGS(a_{reuse}, {flags})) {{"
            )
            with code.indent():
                code.writeline(f"o_{name} = Py_NewRef(o_{reuse});  /* written in place */")
            code.writeline("} else")
        with code.block():
            code.writeline(f"npy_intp dims[{max(nd, 1)}] = {{{dims}}};")
            nbytes = " * ".join(
                ["(npy_intp)" + str(buf.dtype.itemsize), *(f"dims[{d}]" for d in range(nd))]
            )
            stride_arg = "NULL"
            if strides is not None:
                size = buf.dtype.itemsize
                text = ", ".join(
                    str(s * size) if isinstance(s, int) else f"({self.c_dim(s)}) * {size}"
                    for s in strides
                )
                code.writeline(f"npy_intp bstrides[{max(nd, 1)}] = {{{text}}};")
                stride_arg = "bstrides"
            alloc = (
                "PyArray_NewFromDescr(&PyArray_Type, "
                f"PyArray_DescrFromType({_typenum(buf.dtype)}), {nd}, dims, {stride_arg}, "
                "NULL, 0, NULL)"
            )
            # Large blocks come from the buffer pool: memory of dead results, already faulted in.
            code.writeline(f"if (g_pool != NULL && {nbytes} >= {MIN_POOLED_BYTES}) {{")
            with code.indent():
                write_pooled_alloc(code, f"o_{name}", alloc, handler="g_pool")
            code.writeline("} else {")
            with code.indent():
                code.writeline(f"o_{name} = {alloc};")
            code.writeline("}")
        code.writeline(f"if (o_{name} == NULL) {{ goto fail; }}")
        elem = strides if strides is not None else buf.example_strides
        assert elem is not None
        values = ", ".join(self.c_dim(s) for s in elem) or "0"
        if all(isinstance(s, int) for s in elem):
            self.statics.append(f"static const int64_t {name}_st[{max(nd, 1)}] = {{{values}}};")
        else:  # strides over size symbols: known once the sizes are bound
            code.writeline(f"const int64_t {name}_st[{max(nd, 1)}] = {{{values}}};")

    def _output_strides(self, name: str) -> tuple[Any, ...] | None:
        # Outputs keep NumPy's layout when the meta says so: a dense permutation of the
        # axes (Fortran order, a transpose), its strides ints or products of size symbols.
        # Other kernel buffers keep the layout the lowering gave them (their node's).
        for node, buffer in self.program.outputs.items():
            if buffer != name or not isinstance(node.meta, ArrayMeta):
                continue
            if node.meta.strides is None:
                return None
            return dense_strides(self.buffers[name].shape, node.meta.strides)
        buf = self.buffers[name]
        example = buf.example_strides
        if buf.kind != "kernel" or example is None or example == contiguous_strides(buf.shape):
            return None
        return example if dense_strides(buf.shape, example) == example else None

    def _emit_kernel(self, step: FusedKernel) -> None:
        sig = kernel_signature(step, self.buffers)
        written = set(step.writes())
        for name in sig.buffers:
            if name in written:
                reuse = self._reusable_source(step, name)
                if reuse is not None:
                    self.aliased[step.name] = frozenset({name, reuse})
                self._emit_alloc(name, reuse)
                self.buffers[name] = attrs.evolve(
                    self.buffers[name],
                    example_strides=self._output_strides(name)
                    or self.buffers[name].example_strides,
                )
        args = [self.c_dim(size) for size in (*sig.sizes, *sig.symbols)]
        for name in sig.buffers:
            buf = self.buffers[name]
            ct = c_type(buf.dtype)
            array = f"a_{name}" if buf.kind in ("input", "extern") else f"(PyArrayObject *)o_{name}"
            args.append(f"({ct} *)PyArray_DATA({array})")
            args.append(f"{name}_st")
        args += list(sig.scalars)
        call = f"np_fp |= {step.name}({', '.join(args)});"
        work = [self.c_dim(size) for size in step.ranges + step.reduction_ranges]
        write_released_gil_call(self.code, call, work)
        if any(has_data_index(store) for store in step.stores):
            # a gather's index out of bounds (codegen/c/gather.py): NumPy's IndexError
            with self.code.block("if (np_fp & NP_BAD_INDEX)"):
                self.code.writeline("np_bad_index_error();")
                self.code.writeline("goto fail;")

    def _emit_extern(self, step: ExternCall) -> None:
        if step.op_name == "view_scatter_" and not self.stores_in_place:
            # The in-place scatters run last (reinplace.py); a flag NumPy would report fails
            # the call before them, so its op-by-op replay finds the inputs untouched.
            self.stores_in_place = True
            with self.code.block("if (g_fp_error != NULL && (np_fp_numpy(np_fp) & g_fp_report))"):
                self.code.writeline("g_fp_flags = np_fp;")
                self.code.writeline("PyErr_SetNone(g_fp_error);")
                self.code.writeline("goto fail;")
        index = len(self.externs)
        self.externs.append(extern_callable(step))
        refs = [arg.name for arg in step.args if isinstance(arg, BufferRef)]
        code = self.code
        # Small externs around kept loops (`x.shape[0]`, `n - 1`, `np.zeros_like(b)`) in C.
        arrays = [self._array(name) if self._has_array(name) else None for name in refs]
        dtype = self.buffers[step.buffer].dtype
        if write_extern_form(
            code, step.buffer, step.op_name, arrays, step.args, step.kwargs, dtype
        ):
            if step.op_name not in FALLBACK:
                self._after_extern(step)
                return
            code.writeline(f"if (o_{step.buffer} == NULL)  /* Python runs what C did not */")
        if step.op_name == "loop_output" and len(refs) == 1:
            # A loop's final values are a tuple (from C or from NumPy): one item of it.
            k = dict(step.kwargs)["index"]
            source = f"o_{refs[0]}"
            with code.block(
                f"if (PyTuple_Check({source}) && PyTuple_GET_SIZE({source}) > {k})", "} else"
            ):
                code.writeline(f"o_{step.buffer} = Py_NewRef(PyTuple_GET_ITEM({source}, {k}));")
        operands = blas_operands(step, self.buffers) if self.config.blas else None
        scatter = scatter_operands(step, self.buffers)
        if operands is not None:
            self._emit_blas_product(step.buffer, operands)
            code.writeline(f"if (o_{step.buffer} == NULL)  /* NumPy runs what BLAS did not */")
        elif scatter is not None:
            self._emit_scatter_at(step.buffer, scatter)
            code.writeline(f"if (o_{step.buffer} == NULL)  /* NumPy runs what C did not */")
        elif self._bincount_length(step):
            code.writeline(f"if (o_{step.buffer} == NULL)  /* NumPy counts what C did not */")
        with code.block():
            names = []
            scalars = []
            for i, name in enumerate(refs):
                if self._is_numpy_scalar(name):
                    # NumPy would have handed the extern a scalar, not a 0-d array
                    array = f"(PyArrayObject *)o_{name}"
                    code.writeline(
                        f"PyObject *s{i} = PyArray_ToScalar(PyArray_DATA({array}), {array});"
                    )
                    code.writeline(f"if (s{i} == NULL) {{ goto fail; }}")
                    names.append(f"s{i}")
                    scalars.append(f"s{i}")
                else:
                    names.append(f"o_{name}")
            argv = ", ".join(names) or "NULL"
            code.writeline(f"PyObject *argv[{max(len(refs), 1)}] = {{{argv}}};")
            extern = f"PyTuple_GET_ITEM(g_externs, {index})"
            loop = self._loop_function(step)
            # NumPy allocates a large extern's result and temporaries from the buffer pool
            # too (a scalar loop function sets the pool itself, where it calls NumPy: setting
            # it costs more than a short loop; so it does around a small extern).
            pooled = loop not in self.self_pooled
            if pooled:
                passed = [n for n in names if n not in scalars]
                test = extern_pool_test(passed, self._result_bytes(step.buffer))
                code.writeline(f"const int np_pooled = {test};")
                code.writeline(
                    "PyObject *np_prev = np_pooled ? PyDataMem_SetHandler(g_pool) : NULL;"
                )
                code.writeline("if (np_pooled && np_prev == NULL) { goto fail; }")
            if loop is not None:
                self.c_loops.append(index)
                code.writeline(f"o_{step.buffer} = {loop}(argv, {len(refs)}, {extern}, &np_fp);")
            elif step.op_name in BLAS_OPS:
                # NumPy's BLAS and LAPACK calls on OpenBLAS threads by idle cores too.
                self._need_blas_helpers()
                code.writeline("const int np_bt = np_blas_threads_enter(NP_BLAS_THREADED_WORK);")
                code.writeline(
                    f"o_{step.buffer} = PyObject_Vectorcall({extern}, argv, {len(refs)}, NULL);"
                )
                code.writeline("np_blas_threads_exit(np_bt);")
            else:
                code.writeline(
                    f"o_{step.buffer} = PyObject_Vectorcall({extern}, argv, {len(refs)}, NULL);"
                )
            if pooled:
                with code.block("if (np_prev != NULL)"):
                    code.writeline("PyObject *et, *ev, *tb;")
                    code.writeline("PyErr_Fetch(&et, &ev, &tb);")
                    code.writeline("Py_XDECREF(PyDataMem_SetHandler(np_prev));")
                    code.writeline("Py_DECREF(np_prev);")
                    code.writeline("PyErr_Restore(et, ev, tb);")
            code.writelines(f"Py_DECREF({s});" for s in scalars)
        code.writeline(f"if (o_{step.buffer} == NULL) {{ goto fail; }}")
        self._after_extern(step)

    def _result_bytes(self, name: str) -> str | None:
        # An extern result's bytes in C from its meta, before the call; None where the call
        # decides them (a size no graph input binds: np.unique, np.nonzero).
        buf = self.buffers[name]
        try:
            dims = [self.c_dim(size) for size in buf.shape]
        except ValueError:
            return None
        return " * ".join([f"(npy_intp){buf.dtype.itemsize}", *dims])

    def _after_extern(self, step: ExternCall) -> None:
        buf = self.buffers[step.buffer]
        if buf.kind == "extern" and c_type(buf.dtype) is not None:
            self._emit_extern_check(step.buffer, buf)

    def _emit_blas_product(self, name: str, operands: tuple[str, str]) -> None:
        # The product into an output allocated here, by BLAS from C when the operands'
        # layouts allow (checked per call); else o_<name> stays NULL and NumPy runs it.
        self._need_blas_helpers()
        if not self.blas_products:
            self.statics.append(BLAS_HELPERS)
        self.blas_products += 1
        buf = self.buffers[name]
        nd = len(buf.shape)
        dims = ", ".join(self.c_dim(d) for d in buf.shape)
        arrays = [
            f"a_{x}" if self.buffers[x].kind in ("input", "extern") else f"(PyArrayObject *)o_{x}"
            for x in operands
        ]
        nbytes = " * ".join(
            ["(npy_intp)" + str(buf.dtype.itemsize), *(f"dims[{d}]" for d in range(nd))]
        )
        alloc = (
            "PyArray_NewFromDescr(&PyArray_Type, "
            f"PyArray_DescrFromType({_typenum(buf.dtype)}), {nd}, dims, NULL, NULL, 0, NULL)"
        )
        code = self.code
        with code.block("if (np_blas_ready())"):
            code.writeline(f"npy_intp dims[{nd}] = {{{dims}}};")
            with code.block(f"if (g_pool != NULL && {nbytes} >= {MIN_POOLED_BYTES})", "} else {"):
                write_pooled_alloc(code, f"o_{name}", alloc, handler="g_pool")
            with code.indent():
                code.writeline(f"o_{name} = {alloc};")
            code.writeline("}")
            code.writeline(f"if (o_{name} == NULL) {{ goto fail; }}")
            call = f"np_blas_matmul({arrays[0]}, {arrays[1]}, (PyArrayObject *)o_{name})"
            with code.block(f"if (!{call})"):
                code.writeline(f"Py_CLEAR(o_{name});")

    def _bincount_length(self, step: ExternCall) -> bool:
        # The length-only count of a weighted bincount (lowering/scatter.py) in C: o_<name>
        # stays NULL when NumPy must count (checked per call).
        x = step.args[0] if step.args else None
        minlength = dict(step.kwargs).get("minlength", 0)
        if (
            step.op_name != "bincount"
            or not step.buffer.endswith(BINCOUNT_LENGTH)
            or not isinstance(x, BufferRef)
            or not self._has_array(x.name)
            or not isinstance(minlength, int)
        ):
            return False
        if not self.bincount_lengths:
            self.statics.append(BINCOUNT_LENGTH_HELPERS)
        self.bincount_lengths += 1
        call = bincount_length_call(self._array(x.name), minlength)
        self.code.writeline(f"o_{step.buffer} = {call};")
        return True

    def _need_blas_helpers(self) -> None:
        if not self.blas_helpers:
            self.statics.append(BLAS_LIBRARY_HELPERS)
        self.blas_helpers = True

    def _has_array(self, name: str) -> bool:
        # Whether buffer `name` is an array the call holds as a PyArrayObject (`_array`).
        buf = self.buffers[name]
        if buf.kind == "extern":
            return c_type(buf.dtype) is not None
        return buf.kind in ("input", "kernel")

    def _array(self, name: str) -> str:
        kind = self.buffers[name].kind
        return f"a_{name}" if kind in ("input", "extern") else f"(PyArrayObject *)o_{name}"

    def _emit_scatter_at(self, name: str, at: ScatterAt) -> None:
        # ufunc.at as a C loop into a copy of the target; o_<name> stays NULL when the
        # layouts or indices need NumPy (checked per call).
        if not self.scatter_loops:
            self.statics.append(SCATTER_HELPERS)
        self.scatter_loops += 1
        base, index = self._array(at.base), self._array(at.index)
        with self.code.block():
            if at.value is None:
                self.code.writeline(f"const {at.c_type} np_c = ({at.c_type}){at.constant};")
                value, constant = "NULL", "&np_c"
            else:
                value, constant = self._array(at.value), "NULL"
            self.code.writeline(
                f"o_{name} = np_scatter_at({at.op}, {base}, {index}, {value}, {constant});"
            )

    def _loop_function(self, step: ExternCall) -> str | None:
        # The C function that runs a `for_loop` step (see codegen/c/loop_body.py), or None
        # when its body needs NumPy (then the extern runs it per iteration).
        node = self.nodes.get(step.node_name)
        if step.op_name not in ("for_loop", "while_loop") or node is None:
            return None
        name = f"loop_{node.name}"
        # What the loop function notes about parts of the loop (a first iteration apart, a
        # run again with NumPy): kept only where the loop does run as that C function.
        with noting_loops() as notes:
            try:
                if step.op_name == "while_loop":
                    function = scalar_while_function(node, name)
                else:
                    zeroed = zero_filled(self.program.graph, node)
                    function = scalar_loop_function(node, name, zeroed=zeroed)
            except NotScalarLoop as reason:
                function = None
                scalar_reason = str(reason)
        if function is None:
            return self._kernel_loop_function(node, name, scalar_reason)
        report_loop(node, C_LOOP)
        report_notes(notes)
        if not self.c_loops:
            self.statics.append(LOOP_HELPERS)
        self.statics.append(function.source)
        self.self_pooled.add(name)
        return name

    def _kernel_loop_function(self, node: Node, name: str, scalar_reason: str) -> str | None:
        # A body of array work: its kernels called from a C loop (codegen/c/loop_kernels.py).
        threshold = self.config.parallel_threshold
        body = dict(node.params)["body"]
        if any(inner.op is not None and inner.op.name in BLAS_OPS for inner in body.nodes):
            # OpenBLAS's threads spin after each product in the body (see BLAS_OPS).
            threshold = max(threshold, AFTER_BLAS_PARALLEL_THRESHOLD)
        try:
            function = kernel_loop_function(node, name, parallel_threshold=threshold)
        except NotKernelLoop as reason:
            perf_log.info(
                "loop %s runs its body with NumPy per iteration (not as C): %s; %s",
                node.name,
                scalar_reason,
                reason,
            )
            tier = HOST_LOOP if kernels_take(body) else OP_BY_OP
            report_loop(
                node, tier, f"no C loop nest: {scalar_reason}; no C loop of kernels: {reason}"
            )
            return None
        report_loop(node, C_KERNEL_LOOP, f"no C loop nest: {scalar_reason}")
        if not self.c_loops:
            self.statics.append(LOOP_HELPERS)
        if not self.kernel_loops:
            self.statics.append(KERNEL_LOOP_HELPERS)
        self.kernel_loops += 1
        self.statics.extend(function.kernels)
        self.statics.append(function.source)
        return name

    def _emit_extern_check(self, name: str, buf: Buffer) -> None:
        code = self.code
        code.writeline(f"PyArrayObject *a_{name} = (PyArrayObject *)o_{name};")
        if buf.shape == () and not any(name in step.reads() for step in self.sched.steps):
            # A 0-d result no step reads (a returned value, say) may stay a NumPy scalar of
            # its dtype: no 0-d array is made only to read its dtype back.
            if not self.scalar_checks:
                self.statics.append(_SCALAR_CHECK)
            self.scalar_checks = True
            with code.block(f"if (!np_is_scalar_of(o_{name}, {_typenum(buf.dtype)}))"):
                self._emit_extern_layout_check(name, buf)
        else:
            self._emit_extern_layout_check(name, buf)
        self._emit_runtime_strides(name, buf)

    def _binds(self, size: Any) -> bool:
        # Whether the bound size variables spell `size` (its symbols, or it whole).
        bound = set(self.symbol_vars.values())
        return all(s in bound for s in free_symbols(replace_symbols(size, self.symbol_vars)))

    def _emit_extern_layout_check(self, name: str, buf: Buffer) -> None:
        code = self.code
        with code.block(f"if (!PyArray_Check(o_{name}))"):
            code.writeline(f"k_{name} = PyArray_FromAny(o_{name}, NULL, 0, 0, 0, NULL);")
            code.writeline(f"if (k_{name} == NULL) {{ goto fail; }}")
            code.writeline(f"a_{name} = (PyArrayObject *)k_{name};")
        # A dim over symbols no input binds is bound from the extern's result: a bare one (a
        # data-dependent size, e.g. of x[x > 0]) as its symbol, a compound one (`x[: i + 1]`
        # of a run-time int `r0`: `Max(0, Min(r0, s0))`) as the whole expression, which
        # `c_dim` spells wherever it occurs. Every other dim is checked.
        fresh = {
            d: size
            for d, size in enumerate(buf.shape)
            if not isinstance(size, int) and not self._binds(size)
        }
        for size in dict.fromkeys(fresh.values()):
            self.symbol_vars[size] = (
                _symbol_var(size)
                if is_symbol(size)
                else size_symbol(f"sym_dim{len(self.symbol_vars)}")
            )
        first = {size: d for d, size in reversed(fresh.items())}
        # Bound before the check, which may spell them (`zeros((n, n))` of a run-time `n`:
        # dim 1 is checked against the symbol dim 0 binds); -1 where the result has not
        # that dim, which the check then refuses.
        for size, d in first.items():
            code.writeline(
                f"const int64_t {self.symbol_vars[size]} = PyArray_NDIM(a_{name}) > {d} "
                f"? PyArray_DIMS(a_{name})[{d}] : -1;"
            )
        checked = {d: self.c_dim(size) for d, size in enumerate(buf.shape) if first.get(size) != d}
        conds = _layout_mismatch(f"a_{name}", buf, checked)
        with code.block(f"if ({' || '.join(conds)})"):
            code.writeline(
                f'PyErr_SetString(PyExc_RuntimeError, "extern call for {name} returned '
                f'an array other than its metadata ({buf.dtype.name}{list(buf.shape)})");'
            )
            code.writeline("goto fail;")

    def _emit_outputs(self) -> None:
        graph = self.program.graph
        leaves, _ = tree_flatten(graph.output)
        node_leaves = [leaf for leaf in leaves if isinstance(leaf, Node)]
        code = self.code
        items = [self._output_ref(node) for node in node_leaves]
        _, spec = tree_flatten(graph.output)
        if spec.kind == "leaf" and items:
            code.writeline(f"result = {items[0]};")
        else:
            code.writeline(f"result = PyTuple_New({len(items)});")
            code.writeline("if (result == NULL) { goto fail; }")
            code.writelines(
                f"PyTuple_SET_ITEM(result, {i}, {item});" for i, item in enumerate(items)
            )

    def _is_numpy_scalar(self, name: str) -> bool:
        # A 0-d kernel result that NumPy returns as a scalar (ufuncs and reductions do).
        buf = self.buffers[name]
        node = self.nodes.get(name)
        if buf.kind != "kernel" or buf.shape != () or node is None:
            return False
        return gives_scalar(node)

    def _output_ref(self, node: Node) -> str:
        name = self.program.outputs[node]
        buf = self.buffers[name]
        if buf.kind in ("input", "scalar"):
            return f"Py_NewRef(o_{name})"
        if self._is_numpy_scalar(name):
            return f"PyArray_Return((PyArrayObject *)Py_NewRef(o_{name}))"
        return f"Py_NewRef(o_{name})"


# Extern ops that call BLAS/LAPACK. OpenBLAS's worker threads busy-wait for a while after
# each call, so an OpenMP kernel right behind one competes with them for the cores (on few
# cores, an order of magnitude more CPU time: docs/performance_notes.md). Kernels after such
# a call go parallel only above `AFTER_BLAS_PARALLEL_THRESHOLD` elements of work.
BLAS_OPS = frozenset(
    {"matmul", "matmul_", "dot", "vdot", "inner", "tensordot", "einsum", "inv", "solve", "det"}
)
# The extern-op table's LAPACK rows (np.linalg's decompositions and solvers, polyfit's lstsq).
BLAS_OPS |= frozenset(
    row.name for row in extern_rows() if row.name.startswith("linalg.") or row.name == "polyfit"
)
AFTER_BLAS_PARALLEL_THRESHOLD = 1 << 22


# NOTE: kernels of at least this many iterations run without the GIL (they touch no Python
# object), so other threads run meanwhile; smaller ones keep it, as NumPy's ufunc loops do
# below their threshold: handing the GIL over costs a switch interval when others wait.
GIL_RELEASE_WORK = 16384


# What a region's start looks like in generated C (kernels, loop functions, helpers).
_OPENS_REGION = "#pragma omp parallel"


def _thread_decision(prefix: str, *, parallel: bool) -> list[str]:
    # The lines at the top of `call` that set the OpenMP threads of a call that may open a
    # parallel region: `threads=N` as given, otherwise OpenMP's maximum less the busy cores
    # (threads.py). A call that opens none makes no decision: no `/proc/loadavg` read or
    # `sched_getaffinity` in the call after an idle spell.
    if not parallel:
        return []
    return [
        "#ifdef _OPENMP",
        f"{prefix}const int threads_before = omp_get_max_threads();",
        f"{prefix}const int threads_now = g_threads > 0 ? g_threads"
        " : np_idle_threads(threads_before);",
        f"{prefix}if (threads_now != threads_before) {{ omp_set_num_threads(threads_now); }}",
        "#endif",
    ]


def write_released_gil_call(code: CodeBuffer, call: str, work: list[str]) -> None:
    """Write the C lines of a kernel `call` of `work` iterations (the product of `work`):
    without the GIL when it is long, then a check for pending signals (Ctrl-C interrupts the
    graph between kernels, before any output is visible: the call fails and drops them).
    The released thread state goes to the kernel in `g_released`, so a long kernel polls for
    signals between its chunks too (codegen/c/interrupts.py).

    >>> code = CodeBuffer()
    >>> write_released_gil_call(code, "f();", ["4"])
    >>> code.lines
    ['f();']
    >>> write_released_gil_call(code, "f();", ["n0", "n1"])
    >>> print("\\n".join(code.lines[1:]))
    {
        const int64_t np_work = (int64_t)(n0) * (int64_t)(n1);
        PyThreadState *np_save = np_work >= 16384 ? PyEval_SaveThread() : NULL;
        PyThreadState *np_outer = g_released;
        g_released = np_save;
        f();
        g_released = np_outer;
        if (np_save != NULL) {
            PyEval_RestoreThread(np_save);
            if (PyErr_Occurred() || PyErr_CheckSignals() < 0) { goto fail; }
        }
    }
    """
    constant = 1
    for size in work:
        if not size.lstrip("-").isdigit():
            break
        constant *= int(size)
    else:
        if constant < GIL_RELEASE_WORK:
            code.writeline(call)
            return
    product = " * ".join(f"(int64_t)({size})" for size in work) or "1"
    with code.block():
        code.writeline(f"const int64_t np_work = {product};")
        code.writeline(
            f"PyThreadState *np_save = np_work >= {GIL_RELEASE_WORK} ? PyEval_SaveThread() : NULL;"
        )
        # A signal handler run between chunks may call this module again: keep the outer
        # call's released state.
        code.writeline("PyThreadState *np_outer = g_released;")
        code.writeline("g_released = np_save;")
        code.writeline(call)
        code.writeline("g_released = np_outer;")
        with code.block("if (np_save != NULL)"):
            code.writeline("PyEval_RestoreThread(np_save);")
            # the kernel stopped between chunks for a handler's exception, or one is pending
            code.writeline("if (PyErr_Occurred() || PyErr_CheckSignals() < 0) { goto fail; }")


def _kernels_after_blas(sched: Schedule) -> set[str]:
    # Names of the fused kernels that run after a BLAS extern call in this graph.
    seen = False
    names: set[str] = set()
    for step in sched.steps:
        if isinstance(step, ExternCall):
            seen = seen or step.op_name in BLAS_OPS
        elif seen:
            names.add(step.name)
    return names


def generate_module(sched: Schedule, config: InductorConfig) -> GeneratedModule:
    """The extension module source for a scheduled program.

    >>> generate_module(schedule(lower_graph(graph)), InductorConfig()).source  # doctest: +SKIP
    """
    program = sched.program
    emitter = _Emitter(sched, config)
    call_lines = emitter.emit()
    after_blas = _kernels_after_blas(sched)
    kernels = [
        kernel_source(
            step,
            emitter.buffers,
            parallel_threshold=(
                max(config.parallel_threshold, AFTER_BLAS_PARALLEL_THRESHOLD)
                if step.name in after_blas
                else config.parallel_threshold
            ),
            aliased=emitter.aliased.get(step.name, frozenset()),
        )
        for step in sched.kernels
    ]
    digest = hashlib.sha256(program.graph.structural_hash().encode())
    digest.update("\n".join(kernels + call_lines).encode())
    module_name = f"numpile_graph_{digest.hexdigest()[:16]}"
    header = [
        f"/* numpile inductor: generated for graph {program.graph.structural_hash()[:16]}",
        *[f" *   {line}" for line in str(program.graph).splitlines()],
        " * kernels:",
        *[f" *   {step.name} fuses {', '.join(step.origins)}" for step in sched.kernels],
        " */",
    ]
    c_loop_args = "".join(f", {i}" for i in emitter.c_loops)
    main_thread = "\n".join(f"    {line}" for line in main_thread_init())
    tail = f"""
static PyObject *set_threads(PyObject *self, PyObject *arg)
{{
    long threads = PyLong_AsLong(arg);
    if (threads == -1 && PyErr_Occurred()) {{
        return NULL;
    }}
    g_threads = (int)threads;
    Py_RETURN_NONE;
}}

static PyObject *set_externs(PyObject *self, PyObject *arg)
{{
    if (!PyTuple_Check(arg)) {{
        PyErr_SetString(PyExc_TypeError, "set_externs takes a tuple");
        return NULL;
    }}
    Py_XSETREF(g_externs, Py_NewRef(arg));
    Py_RETURN_NONE;
}}

static PyObject *set_pool(PyObject *self, PyObject *arg)
{{
    if (arg == Py_None) {{
        Py_CLEAR(g_pool);
    }} else {{
        Py_XSETREF(g_pool, Py_NewRef(arg));
    }}
    Py_RETURN_NONE;
}}

static PyObject *set_fp_report(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{{
    if (nargs != 2) {{
        PyErr_SetString(PyExc_TypeError, "set_fp_report takes a mask and an error type");
        return NULL;
    }}
    long mask = PyLong_AsLong(args[0]);
    if (mask == -1 && PyErr_Occurred()) {{
        return NULL;
    }}
    g_fp_report = (int)mask;
    Py_XSETREF(g_fp_error, Py_NewRef(args[1]));
    Py_RETURN_NONE;
}}

static PyObject *fp_flags(PyObject *self, PyObject *unused)
{{
    return PyLong_FromLong(np_fp_numpy(g_fp_flags));
}}

static PyObject *c_loops(PyObject *self, PyObject *unused)
{{
    return Py_BuildValue("({"i" * len(emitter.c_loops)})"{c_loop_args});
}}

static PyMethodDef methods[] = {{
    {{"call", (PyCFunction)(void (*)(void))call, METH_FASTCALL, "Run the compiled graph."}},
    {{"set_externs", set_externs, METH_O, "Hand over the extern callables."}},
    {{"set_pool", set_pool, METH_O, "The buffer pool's NEP 49 handler (None: malloc)."}},
    {{"set_threads", set_threads, METH_O, "OpenMP threads for the kernels (0: default)."}},
    {{"set_fp_report", (PyCFunction)(void (*)(void))set_fp_report, METH_FASTCALL,
      "Fail calls raising these categories (1 divide, 2 over, 4 under, 8 invalid)."}},
    {{"fp_flags", fp_flags, METH_NOARGS, "The NumPy error categories the last call raised."}},
    {{"c_loops", c_loops, METH_NOARGS, "Positions of the extern for_loops that run as C."}},
    {{NULL, NULL, 0, NULL}}
}};

/* Called by numpile's loader before it unloads this library (numpile_runtime's
   extension_loader): the Python objects the statics hold. */
__attribute__((visibility("default"))) void numpile_release(void)
{{
    Py_CLEAR(g_externs);
    Py_CLEAR(g_pool);
    Py_CLEAR(g_fp_error);
}}

static struct PyModuleDef moduledef = {{PyModuleDef_HEAD_INIT, "{module_name}", NULL, -1, methods}};

PyMODINIT_FUNC PyInit_{module_name}(void)
{{
    import_array();
{main_thread}
    return PyModule_Create(&moduledef);
}}
"""
    source = "\n".join(
        [
            *header,
            module_prelude(),
            "static PyObject *g_externs = NULL;",
            "static PyObject *g_pool = NULL;  /* the buffer pool's handler capsule */",
            f"static int g_threads = {config.threads};  /* OpenMP threads; 0: default */",
            "static int g_fp_report = 0;  /* NumPy error categories that fail a call */",
            "static PyObject *g_fp_error = NULL;  /* the error type they fail it with */",
            _FP_NUMPY,
            "",
            *kernels,
            "",
            *call_lines,
            tail,
        ]
    )
    leaves, spec = tree_flatten(program.graph.output)
    node_leaves = [leaf for leaf in leaves if isinstance(leaf, Node)]
    direct = (spec.kind == "leaf" and len(node_leaves) == 1) or (
        spec.kind == "tuple"
        and len(node_leaves) == len(leaves)
        and all(child.kind == "leaf" for child in spec.children)
    )
    slots = tuple((True, None) if isinstance(leaf, Node) else (False, leaf) for leaf in leaves)
    steps = tuple(step for step in sched.steps if isinstance(step, ExternCall))
    return GeneratedModule(
        module_name,
        source,
        tuple(emitter.externs),
        spec,
        slots,
        direct,
        steps,
        c_loops=tuple(emitter.c_loops),
    )
