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
from typing import Any

import attrs
import numpy as np

from numpile_capture import ArrayMeta, Node, tree_flatten

from .c_kernel import kernel_signature, kernel_source
from .c_ops import c_type, helper_definitions, vector_math_declarations
from .config import InductorConfig
from .launcher import GeneratedModule, extern_callable
from .loop_ir import Buffer, BufferRef, ExternCall
from .scheduler import FusedKernel, Schedule

log = logging.getLogger("numpile.inductor.wrapper")

# Ops whose 0-d results NumPy returns as 0-d arrays rather than scalars.
_ZERO_D_ARRAY_OPS = frozenset({"astype", "copy", "where", "broadcast_to", "reshape"})

_PRELUDE = """\
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <stdint.h>
#include <math.h>
#include <complex.h>
#ifdef _OPENMP
#include <omp.h>
#endif
"""


def _typenum(dtype: np.dtype[Any]) -> int:
    return int(dtype.num)


def _gives_scalar(node: Node) -> bool:
    # Whether NumPy returns this 0-d value as a scalar: ufuncs and reductions do; astype
    # keeps its input's kind (a scalar's astype is a scalar); the others give 0-d arrays.
    if node.op is None:
        return False
    if node.op.name == "astype" and node.inputs and isinstance(node.inputs[0], Node):
        return _gives_scalar(node.inputs[0])
    return node.op.name not in _ZERO_D_ARRAY_OPS


def _layout_mismatch(array: str, buf: Buffer) -> list[str]:
    # C conditions under which `array` is not a native-order `buf.dtype` array of `buf.shape`.
    conds = [
        f"PyArray_TYPE({array}) != {_typenum(buf.dtype)}",
        f"PyArray_NDIM({array}) != {len(buf.shape)}",
        f"!PyArray_ISNOTSWAPPED({array})",
    ]
    conds += [f"PyArray_DIMS({array})[{d}] != {size}" for d, size in enumerate(buf.shape)]
    return conds


class _Emitter:
    # Builds the body of the `call` function.

    def __init__(self, sched: Schedule, config: InductorConfig) -> None:
        self.sched = sched
        self.program = sched.program
        self.buffers = self.program.buffers
        self.config = config
        self.lines: list[str] = []
        self.statics: list[str] = []
        self.externs: list[Callable[..., Any]] = []
        self.has_strides: set[str] = set()
        self.kernel_buffers: set[str] = set()
        self.nodes = {node.name: node for node in sched.program.graph.nodes}

    def emit(self) -> list[str]:
        graph = self.program.graph
        steps = self.sched.steps
        internal = {name for step in self.sched.kernels for name in step.internal}
        objects = [
            name
            for name, buf in self.buffers.items()
            if name not in internal and name not in self.program.inputs
        ]
        out = self.lines
        out.append("static PyObject *call(PyObject *self, PyObject *const *args, Py_ssize_t nargs)")
        out.append("{")
        for name in objects:
            out.append(f"    PyObject *o_{name} = NULL;")
        converted = [
            name
            for name, buf in self.buffers.items()
            if buf.kind in ("input", "extern") and c_type(buf.dtype) is not None
        ]
        for name in converted:
            out.append(
                f"    PyObject *k_{name} = NULL;  /* {name} as an array, when it was not one */"
            )
        out.append("    PyObject *result = NULL;")
        n_inputs = len(graph.placeholders)
        out.append(f"    if (nargs != {n_inputs}) {{")
        out.append(
            f'        PyErr_Format(PyExc_TypeError, "compiled graph takes {n_inputs} inputs, '
            'got %zd", nargs);'
        )
        out.append("        return NULL;")
        out.append("    }")
        out.append("#ifdef _OPENMP")
        out.append("    int threads_before = 0;")
        out.append("    if (g_threads > 0) {")
        out.append("        threads_before = omp_get_max_threads();")
        out.append("        omp_set_num_threads(g_threads);")
        out.append("    }")
        out.append("#endif")
        for position, name in enumerate(self.program.inputs):
            self._emit_input(position, name)
        last_use = self._last_uses(steps)
        for index, step in enumerate(steps):
            if isinstance(step, FusedKernel):
                self._emit_kernel(step)
            else:
                self._emit_extern(step)
            for name in last_use.get(index, []):
                if name in objects:
                    out.append(f"    Py_CLEAR(o_{name});")
                if name in converted:
                    out.append(f"    Py_CLEAR(k_{name});")
        self._emit_outputs()
        out.append("fail:")
        for name in objects:
            out.append(f"    Py_XDECREF(o_{name});")
        for name in converted:
            out.append(f"    Py_XDECREF(k_{name});")
        out.append("#ifdef _OPENMP")
        out.append("    if (g_threads > 0) { omp_set_num_threads(threads_before); }")
        out.append("#endif")
        out.append("    return result;")
        out.append("}")
        return [*self.statics, "", *out]

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
        out = self.lines
        out.append(f"    PyObject *o_{name} = args[{position}];")
        if buf.kind == "scalar":
            if buf.dtype.kind == "f":
                out.append(f"    const double {name} = PyFloat_AsDouble(o_{name});")
            elif buf.dtype.kind == "i":
                out.append(f"    const int64_t {name} = PyLong_AsLongLong(o_{name});")
            elif buf.dtype.kind == "b":
                out.append(f"    const npy_bool {name} = (npy_bool)PyObject_IsTrue(o_{name});")
            else:
                return
            out.append("    if (PyErr_Occurred()) { goto fail; }")
            return
        if buf.kind != "input":
            return
        out.append(f"    PyArrayObject *a_{name} = NULL;")
        out.append(f"    if (PyArray_Check(o_{name})) {{")
        out.append(f"        a_{name} = (PyArrayObject *)o_{name};")
        out.append(f"    }} else if (PyArray_IsScalar(o_{name}, Generic)) {{")
        out.append(f"        k_{name} = PyArray_FromScalar(o_{name}, NULL);")
        out.append(f"        if (k_{name} == NULL) {{ goto fail; }}")
        out.append(f"        a_{name} = (PyArrayObject *)k_{name};")
        out.append("    }")
        conds = [f"a_{name} == NULL", *_layout_mismatch(f"a_{name}", buf)]
        out.append(f"    if ({' || '.join(conds)}) {{")
        out.append(
            f'        PyErr_SetString(PyExc_TypeError, "compiled graph input {position} '
            f"({name}) must be a {buf.dtype.name} array of shape {buf.shape}; recompile for "
            'other inputs");'
        )
        out.append("        goto fail;")
        out.append("    }")
        self._emit_runtime_strides(name, buf)

    def _emit_runtime_strides(self, name: str, buf: Buffer) -> None:
        nd = len(buf.shape)
        out = self.lines
        out.append(f"    int64_t {name}_st[{max(nd, 1)}];")
        for d in range(nd):
            out.append(
                f"    {name}_st[{d}] = (int64_t)(PyArray_STRIDES(a_{name})[{d}] / "
                f"{buf.dtype.itemsize});"
            )
        self.has_strides.add(name)

    def _emit_alloc(self, name: str) -> None:
        buf = self.buffers[name]
        nd = len(buf.shape)
        dims = ", ".join(str(d) for d in buf.shape) or "0"
        strides = self._output_strides(name)
        out = self.lines
        out.append("    {")
        out.append(f"        npy_intp dims[{max(nd, 1)}] = {{{dims}}};")
        stride_arg = "NULL"
        if strides is not None:
            text = ", ".join(str(s * buf.dtype.itemsize) for s in strides)
            out.append(f"        npy_intp bstrides[{max(nd, 1)}] = {{{text}}};")
            stride_arg = "bstrides"
        out.append(
            f"        o_{name} = PyArray_NewFromDescr(&PyArray_Type, "
            f"PyArray_DescrFromType({_typenum(buf.dtype)}), {nd}, dims, {stride_arg}, "
            "NULL, 0, NULL);"
        )
        out.append("    }")
        out.append(f"    if (o_{name} == NULL) {{ goto fail; }}")
        elem = strides if strides is not None else buf.example_strides
        assert elem is not None
        values = ", ".join(str(s) for s in elem) or "0"
        self.statics.append(f"static const int64_t {name}_st[{max(nd, 1)}] = {{{values}}};")

    def _output_strides(self, name: str) -> tuple[int, ...] | None:
        # Outputs keep NumPy's K-order layout when the meta says so (a dense permutation).
        for node, buffer in self.program.outputs.items():
            if buffer != name or not isinstance(node.meta, ArrayMeta):
                continue
            strides = node.meta.strides
            shape = self.buffers[name].shape
            if strides is None or any(not isinstance(s, int) for s in strides):
                return None
            order = sorted(range(len(shape)), key=lambda d: -abs(strides[d]))
            expected = 1
            dense = {}
            for d in reversed(order):
                dense[d] = expected
                expected *= shape[d]
            if all(strides[d] == dense[d] or shape[d] <= 1 for d in range(len(shape))):
                return tuple(int(s) if shape[d] > 1 else dense[d] for d, s in enumerate(strides))
        return None

    def _emit_kernel(self, step: FusedKernel) -> None:
        sig = kernel_signature(step, self.buffers)
        written = set(step.writes())
        for name in sig.buffers:
            if name in written:
                self._emit_alloc(name)
                self.buffers[name] = attrs.evolve(
                    self.buffers[name],
                    example_strides=self._output_strides(name)
                    or self.buffers[name].example_strides,
                )
        args = [str(size) for size in sig.sizes]
        for name in sig.buffers:
            buf = self.buffers[name]
            ct = c_type(buf.dtype)
            array = f"a_{name}" if buf.kind in ("input", "extern") else f"(PyArrayObject *)o_{name}"
            args.append(f"({ct} *)PyArray_DATA({array})")
            args.append(f"{name}_st")
        args += list(sig.scalars)
        self.lines.append(f"    {step.name}({', '.join(args)});")

    def _emit_extern(self, step: ExternCall) -> None:
        index = len(self.externs)
        self.externs.append(extern_callable(step))
        refs = [arg.name for arg in step.args if isinstance(arg, BufferRef)]
        out = self.lines
        out.append("    {")
        names = []
        scalars = []
        for i, name in enumerate(refs):
            if self._is_numpy_scalar(name):
                # NumPy would have handed the extern a scalar, not a 0-d array
                array = f"(PyArrayObject *)o_{name}"
                out.append(
                    f"        PyObject *s{i} = PyArray_ToScalar(PyArray_DATA({array}), {array});"
                )
                out.append(f"        if (s{i} == NULL) {{ goto fail; }}")
                names.append(f"s{i}")
                scalars.append(f"s{i}")
            else:
                names.append(f"o_{name}")
        argv = ", ".join(names) or "NULL"
        out.append(f"        PyObject *argv[{max(len(refs), 1)}] = {{{argv}}};")
        out.append(
            f"        o_{step.buffer} = PyObject_Vectorcall(PyTuple_GET_ITEM(g_externs, {index}), "
            f"argv, {len(refs)}, NULL);"
        )
        out += [f"        Py_DECREF({s});" for s in scalars]
        out.append("    }")
        out.append(f"    if (o_{step.buffer} == NULL) {{ goto fail; }}")
        buf = self.buffers[step.buffer]
        if buf.kind == "extern" and c_type(buf.dtype) is not None:
            self._emit_extern_check(step.buffer, buf)

    def _emit_extern_check(self, name: str, buf: Buffer) -> None:
        out = self.lines
        out.append(f"    PyArrayObject *a_{name} = (PyArrayObject *)o_{name};")
        out.append(f"    if (!PyArray_Check(o_{name})) {{")
        out.append(f"        k_{name} = PyArray_FromAny(o_{name}, NULL, 0, 0, 0, NULL);")
        out.append(f"        if (k_{name} == NULL) {{ goto fail; }}")
        out.append(f"        a_{name} = (PyArrayObject *)k_{name};")
        out.append("    }")
        conds = _layout_mismatch(f"a_{name}", buf)
        out.append(f"    if ({' || '.join(conds)}) {{")
        out.append(
            f'        PyErr_SetString(PyExc_RuntimeError, "extern call for {name} returned '
            f'an array other than its metadata ({buf.dtype.name}{list(buf.shape)})");'
        )
        out.append("        goto fail;")
        out.append("    }")
        self._emit_runtime_strides(name, buf)

    def _emit_outputs(self) -> None:
        graph = self.program.graph
        leaves, _ = tree_flatten(graph.output)
        node_leaves = [leaf for leaf in leaves if isinstance(leaf, Node)]
        out = self.lines
        items = [self._output_ref(node) for node in node_leaves]
        _, spec = tree_flatten(graph.output)
        if spec.kind == "leaf" and items:
            out.append(f"    result = {items[0]};")
        else:
            out.append(f"    result = PyTuple_New({len(items)});")
            out.append("    if (result == NULL) { goto fail; }")
            for i, item in enumerate(items):
                out.append(f"    PyTuple_SET_ITEM(result, {i}, {item});")

    def _is_numpy_scalar(self, name: str) -> bool:
        # A 0-d kernel result that NumPy returns as a scalar (ufuncs and reductions do).
        buf = self.buffers[name]
        node = self.nodes.get(name)
        if buf.kind != "kernel" or buf.shape != () or node is None:
            return False
        return _gives_scalar(node)

    def _output_ref(self, node: Node) -> str:
        name = self.program.outputs[node]
        buf = self.buffers[name]
        if buf.kind in ("input", "scalar"):
            return f"Py_NewRef(o_{name})"
        if self._is_numpy_scalar(name):
            return f"PyArray_Return((PyArrayObject *)Py_NewRef(o_{name}))"
        return f"Py_NewRef(o_{name})"


def generate_module(sched: Schedule, config: InductorConfig) -> GeneratedModule:
    """The extension module source for a scheduled program.

    >>> generate_module(schedule(lower_graph(graph)), InductorConfig()).source  # doctest: +SKIP
    """
    program = sched.program
    emitter = _Emitter(sched, config)
    call_lines = emitter.emit()
    kernels = [
        kernel_source(step, emitter.buffers, parallel_threshold=config.parallel_threshold)
        for step in sched.kernels
    ]
    digest = hashlib.sha256(program.graph.structural_hash().encode())
    digest.update("\n".join(kernels + call_lines).encode())
    module_name = f"numpile_graph_{digest.hexdigest()[:16]}"
    header = [
        f"/* numpile inductor: generated for graph {program.graph.structural_hash()[:16]}",
        *[f" *   {line}" for line in str(program.graph).splitlines()],
        " * kernels:",
        *[
            f" *   {step.name} fuses {', '.join(o for k in step.kernels for o in k.origins)}"
            for step in sched.kernels
        ],
        " */",
    ]
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

static PyMethodDef methods[] = {{
    {{"call", (PyCFunction)(void (*)(void))call, METH_FASTCALL, "Run the compiled graph."}},
    {{"set_externs", set_externs, METH_O, "Hand over the extern callables."}},
    {{"set_threads", set_threads, METH_O, "OpenMP threads for the kernels (0: default)."}},
    {{NULL, NULL, 0, NULL}}
}};

static struct PyModuleDef moduledef = {{PyModuleDef_HEAD_INIT, "{module_name}", NULL, -1, methods}};

PyMODINIT_FUNC PyInit_{module_name}(void)
{{
    import_array();
    return PyModule_Create(&moduledef);
}}
"""
    source = "\n".join(
        [
            *header,
            _PRELUDE,
            vector_math_declarations(),
            helper_definitions(),
            "static PyObject *g_externs = NULL;",
            f"static int g_threads = {config.threads};  /* OpenMP threads; 0: default */",
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
    return GeneratedModule(module_name, source, tuple(emitter.externs), spec, slots, direct, steps)
