"""The Triton runner: the Python that runs a generated module's steps on one call's arrays.

`compile_triton` (`codegen/triton/backend.py`) generates and loads a graph's module;
a `TritonRunner` is the callable it returns (or wraps, with an epilogue or CUDA graphs).
Per call it takes the inputs by a plan made at compile time, binds run-time sizes
(`codegen/triton/sizes.py`), stages the numbers kernels read from memory, takes
split-reduction scratch (`codegen/triton/scratch.py`), launches each kernel (its blocks
fitted to run-time sizes, tuned where the options ask), runs extern calls, and rebuilds
the outputs. Where the arrays live decides how:

- CuPy inputs: kernels on CuPy's current stream, CuPy outputs;
- NumPy inputs on a GPU machine: copied to the device once, results copied back;
- NumPy inputs under `TRITON_INTERPRET=1`: kernels run in Triton's interpreter
  on the arrays' own memory (how CPU-only machines test the generated code);
- NumPy and CuPy arrays mixed: a `ValueError` naming the inputs.

    >>> compile_triton(graph).fn(cupy.ones(3))  # a TritonRunner  # doctest: +SKIP
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

import numpile_runtime as rt
from numpile_capture import Node, gives_scalar, tree_flatten, tree_unflatten, writeable

from ...config import TritonOptions
from ...launcher import extern_callable
from ...loop_ir import Buffer, BufferRef, ExternCall
from .autotune import (
    REDUCTION_BUDGET_S,
    REDUCTION_WORTH_S,
    cache_key,
    load_choice,
    reduction_candidates,
    reduction_key,
    shape_class,
    tune,
)
from .externs import device_extern, to_device
from .kernel import TritonKernel, arg_kinds, fit_blocks, index64, scalar_value
from .launch_plan import LaunchPlan, ReadyLaunch
from .matmul import MatmulChoice, pick_backend
from .scratch import KernelScratch
from .sizes import RunTimeShape, SizeBinding

if TYPE_CHECKING:
    from .backend import TritonModule

# Fitted kernels and launch constexprs kept per runner: a caller cycling through more run-time
# sizes than this fits them again (correct, slower).
_KEPT_FITS = 1024


def _is_array(value: Any) -> bool:
    if type(value) in _ARRAY_TYPES:
        return True
    if isinstance(value, np.ndarray) or rt.is_device_array(value):
        _ARRAY_TYPES.add(type(value))
        return True
    return False


_ARRAY_TYPES: set[type] = {np.ndarray}  # NumPy's and CuPy's array classes, once seen


# Where one call's kernels launch: CuPy's current stream handle (None: the interpreter), its
# device, and whether the stream is capturing a CUDA graph (asked only of modules with
# split-kernel scratch). Read once per call, not per launch.
_Where = tuple[int | None, int, bool]
_INTERPRETED: _Where = (None, 0, False)

# How `_run` takes an input (`_input_kind`).
_AS_IS, _BY_VALUE, _AS_ARRAY = 0, 1, 2


def _input_kind(buf: Buffer) -> int:
    if buf.kind == "scalar" and buf.dtype != np.dtype("O"):
        return _BY_VALUE
    return _AS_ARRAY if buf.kind == "input" else _AS_IS


class TritonRunner:
    """Runs a generated module's steps on one call's arrays: `compile_triton`'s callable.

    `loaded` is the module's Python module (`numpile_runtime.load_triton_module`), `mode`
    the Triton status mode ("gpu" or "interpret"); `writes_inputs` turns tuning off (it
    launches a kernel many times) and copies mutated NumPy inputs back from the device.

    >>> runner = TritonRunner(module, program, loaded, "interpret", options)  # doctest: +SKIP
    >>> runner(np.ones(3))  # doctest: +SKIP
    """

    def __init__(
        self,
        module: TritonModule,
        program: Any,
        loaded: Any,
        mode: str,
        options: TritonOptions,
        *,
        writes_inputs: bool = False,
    ) -> None:
        self.module = module
        self.program = program
        self.mode = mode
        self.writes_inputs = writes_inputs
        self.launchers = {
            k.name: rt.TritonLauncher(
                getattr(loaded, k.name), arg_kinds(k), direct=options.direct_launch
            )
            for k in module.kernels
        }
        make_extern = extern_callable if mode == "interpret" else device_extern
        flat = [
            part
            for step in module.steps
            for part in (step.extern if isinstance(step, MatmulChoice) else (step,))
        ]
        self.externs = {
            id(step): make_extern(step) for step in flat if isinstance(step, ExternCall)
        }
        self.chosen: dict[int, tuple[ExternCall | TritonKernel, ...]] = {}
        self.buffers = program.buffers
        self.inputs: list[str] = program.inputs
        leaves, spec = tree_flatten(program.graph.output)
        self.output_spec = spec
        self.one_leaf = spec.kind == "leaf"  # a graph returning one value, not a tuple of one
        self.scalar_outputs = {
            name for node, name in program.outputs.items() if self._gives_numpy_scalar(node, name)
        }
        # 0-d results NumPy gives as scalars, whoever computes them (CuPy gives 0-d arrays),
        # and views NumPy makes read-only (CuPy has no read-only arrays).
        outputs = program.outputs.items()
        self.scalar_nodes = {name for node, name in outputs if gives_scalar(node)}
        self.read_only = {name for node, name in outputs if writeable(node) is False}
        # Per buffer: whether its shape has run-time sizes to bind, and whether a value found
        # in it may need converting before a kernel reads it (extern results, constants;
        # inputs are guarded and kernel buffers are allocated here, except interpreted).
        self.dynamic = {
            name
            for name, buf in self.buffers.items()
            if not all(isinstance(d, int) for d in buf.shape)
        }
        self.checked = {
            name
            for name, buf in self.buffers.items()
            if mode == "interpret" or buf.kind not in ("input", "kernel")
        }
        # Per kernel: what each launch takes (`launch_plan.py`); the module's steps with each
        # kernel replaced by its plan; and per kernel the latest launch's grid and constexprs.
        self.plans = {
            k.name: LaunchPlan.of(
                k, self.buffers, self.launchers[k.name], checked=self.checked, dynamic=self.dynamic
            )
            for k in module.kernels
        }
        self.steps: tuple[LaunchPlan | ExternCall | MatmulChoice, ...] = tuple(
            self.plans[step.name] if isinstance(step, TritonKernel) else step
            for step in module.steps
        )
        self.ready: dict[str, ReadyLaunch] = {}
        # Per buffer of a static shape allocated here: the layout of its allocations.
        self.fresh_layouts: dict[str, _Layout] = {}
        self.blocks = {
            k.name: {
                "XBLOCK": k.xblock,
                **({"RBLOCK": k.rblock} if k.is_reduction else {}),
                "INDEX64": False,
                **({"PERSISTENT": k.persistent} if k.persistent is not None else {}),
            }
            for k in module.kernels
        }
        self.static_shapes = {
            name: tuple(buf.shape) for name, buf in self.buffers.items() if name not in self.dynamic
        }
        # Per call of a body with run-time sizes (a loop's iteration): ints only, no sympy.
        self.bindings = {name: SizeBinding.of(self.buffers[name].shape) for name in self.dynamic}
        self.run_time_shapes = {
            name: RunTimeShape.of(self.buffers[name].shape) for name in self.dynamic
        }
        self.run_time_numels = {
            k.name: RunTimeShape.of((k.xnumel, k.rnumel if k.is_reduction else 0))
            for k in module.kernels
            if self.plans[k.name].numels is None
        }
        # Kernels with blocks fitted to run-time sizes, and the constexprs of a launch, per
        # (kernel, sizes): made once, not per launch.
        self.fitted: dict[tuple[int, int, int], TritonKernel] = {}
        self.launch_blocks: dict[tuple[Any, ...], dict[str, Any]] = {}
        self.options = options
        # Tuning launches a kernel many times: only where that cannot write an input twice.
        self.autotune = options.autotune and not writes_inputs
        self.tune_reductions = options.autotune_reductions and not self.autotune
        self.tune_reductions = self.tune_reductions and not writes_inputs
        self.tuned: dict[tuple[str, Any], TritonKernel] = {}
        self.chosen_static: dict[str, TritonKernel] = {}  # reductions of static sizes
        # Counters and partials of split reductions finished by their last program, per
        # kernel and stream (codegen/triton/scratch.py); each CUDA graph records its own.
        self.scratch = KernelScratch()
        self.scratch_shapes = {
            k.name: tuple((tuple(self.buffers[b].shape), self.buffers[b].dtype) for b in k.scratch)
            for k in module.kernels
            if k.counter
        }
        # Per input, how `_run` takes it: 0 as it is, 1 a number kernels take by value, 2 an
        # input a NumPy scalar may stand for (read as a 0-d array); and whether it binds sizes.
        self.input_plan = tuple(
            (name, _input_kind(self.buffers[name]), name in self.dynamic) for name in self.inputs
        )
        # Per output leaf: its buffer, the name of its object form (a NumPy scalar input
        # returned as it is), and whether it is given as a NumPy scalar, on each path.
        self.output_plan = tuple(
            (leaf, "", "", False, False, False)
            if not isinstance(leaf, Node)
            else (
                leaf,
                program.outputs[leaf],
                f"{program.outputs[leaf]}@obj",
                program.outputs[leaf] in self.scalar_nodes,
                program.outputs[leaf] in self.read_only,
                program.outputs[leaf] in self.scalar_outputs,
            )
            for leaf in leaves
        )
        # Scalar inputs the kernels read from memory (`scalars_in_memory`), and where a call
        # that passes them as numbers puts them: a slot buffer per stream (one copy per call,
        # ordered after the kernels that read the last call's), `"<name>@ptr"` in `env`.
        read = {name for kernel in module.kernels for name in kernel.in_memory}
        self.memory_scalars = tuple(name for name in self.inputs if name in read)
        self.slots: dict[tuple[str, ...], rt.ScalarSlots] = {}
        self.slot_buffers: dict[tuple[tuple[str, ...], int], Any] = {}
        self.cupy: Any = None  # the module, once a GPU call imported it

    def _gives_numpy_scalar(self, node: Node, name: str) -> bool:
        buf = self.buffers[name]
        return buf.kind == "kernel" and buf.shape == () and gives_scalar(node)

    def __call__(self, *args: Any) -> Any:
        on_host = on_device = False
        for arg in args:
            if isinstance(arg, np.ndarray):
                on_host = True
            elif rt.is_device_array(arg):
                on_device = True
        if on_host and on_device:
            raise ValueError(
                "a compiled call got NumPy and CuPy arrays together; move every array to one "
                "device (cupy.asarray / cupy.asnumpy) before the call"
            )
        if self.mode == "interpret":
            if on_device:
                raise ValueError("CuPy arrays cannot run under TRITON_INTERPRET=1")
            return self._run(np, args)
        device = self.cupy
        if device is None:
            import cupy  # GPU mode: triton_status() found CuPy and a device

            rt.use_cupy_driver()  # once per process
            device = self.cupy = cupy
        if on_device:
            return self._run(device, args)
        done = rt.upload([a for a in args if isinstance(a, np.ndarray)])
        devices = iter(done)
        moved = tuple(next(devices).device if isinstance(a, np.ndarray) else a for a in args)
        fresh: dict[int, Any] = {}
        result = self._run(device, moved, download=lambda value: rt.download(value, done, fresh))
        if self.writes_inputs:
            for upload in done:
                upload.write_back()
        return result

    def _run(
        self, xp: Any, args: tuple[Any, ...], download: Callable[[Any], Any] | None = None
    ) -> Any:
        env: dict[str, Any] = {}
        sizes: dict[str, int] = {}
        for (name, kind, binds), value in zip(self.input_plan, args, strict=True):
            if kind == _AS_ARRAY and type(value) not in _ARRAY_TYPES and not _is_array(value):
                env[name] = xp.asarray(value)  # a NumPy scalar read as a 0-d array
                env[f"{name}@obj"] = value
            else:
                env[name] = value
            if binds and kind == _AS_ARRAY:
                self.bindings[name].bind(env[name], sizes)  # dynamic shapes: s0, s1, ...
        if self.memory_scalars:
            self._stage_scalars(xp, env)
        where = _INTERPRETED if xp is np else self._where(xp)
        for step in self.steps:
            if isinstance(step, LaunchPlan):
                self._launch(xp, step, env, sizes, where)
            elif isinstance(step, MatmulChoice):
                for part in self._choose(xp, step, env, sizes, where):
                    self._step(xp, part, env, sizes, where)
            else:
                self._step(xp, step, env, sizes, where)
        return self._outputs(env, download)

    def _stage_scalars(self, xp: Any, env: dict[str, Any]) -> None:
        # The numbers of this call the kernels read from memory, written there (a CUDA-graph
        # runner hands those it replays with as 0-d arrays over its own slot buffer).
        names = tuple(name for name in self.memory_scalars if not _is_array(env[name]))
        if not names:
            return
        slots = self.slots.get(names)
        if slots is None:
            slots = self.slots[names] = rt.ScalarSlots([self.buffers[n].dtype for n in names])
        values = [env[name] for name in names]
        if xp is np:
            device = slots.allocate(np)  # the interpreter's kernels run before the call returns
            slots.write(values, device, None)
        else:
            stream = xp.cuda.get_current_stream()
            if stream.is_capturing():
                # Numbers a graph is keyed by (an extern call reads them too): in the graph's
                # own memory, set by kernels it records (it cannot record a pageable copy).
                device = slots.allocate(xp)
                for view, value in zip(slots.views(device), values, strict=True):
                    view.fill(value)
            else:
                device = self.slot_buffers.get((names, stream.ptr))
                if device is None:
                    device = self.slot_buffers[(names, stream.ptr)] = slots.allocate(xp)
                slots.write(values, device, stream)
        for name, view in zip(names, slots.views(device), strict=True):
            env[f"{name}@ptr"] = view

    def _where(self, cupy: Any) -> _Where:
        # CuPy's current stream and device, once per call: where this call's kernels launch;
        # and, for split kernels' scratch, whether the stream is capturing a CUDA graph.
        stream = cupy.cuda.get_current_stream()
        capturing = bool(self.scratch_shapes) and stream.is_capturing()
        return int(stream.ptr), int(cupy.cuda.runtime.getDevice()), capturing

    def _step(
        self,
        xp: Any,
        step: ExternCall | TritonKernel,
        env: dict[str, Any],
        sizes: dict[str, int],
        where: _Where,
    ) -> None:
        if not isinstance(step, ExternCall):
            self._launch(xp, self.plans[step.name], env, sizes, where)
            return
        values = [
            self._extern_arg(env, ref.name) for ref in step.args if isinstance(ref, BufferRef)
        ]
        result = self.externs[id(step)](*values)
        if xp is not np:
            result = _exact_dtype(result, self.buffers[step.buffer].dtype)
        env[step.buffer] = result
        if step.buffer in self.dynamic:
            self.bindings[step.buffer].bind(result, sizes)

    def _choose(
        self,
        xp: Any,
        choice: MatmulChoice,
        env: dict[str, Any],
        sizes: dict[str, int],
        where: _Where,
    ) -> tuple[ExternCall | TritonKernel, ...]:
        # gemm_backends with both: the extern call (and its epilogue kernel) or the template
        # in one of its tile shapes, by pick_backend (timed on this first call's arrays).
        known = self.chosen.get(id(choice))
        if known is not None:
            return known
        variants = (choice.extern, *((template,) for template in choice.templates))

        def time_variant(index: int) -> float:
            def run() -> None:
                for part in variants[index]:
                    self._step(xp, part, env, sizes, where)

            return _time(xp, run)

        device = "interpreter" if xp is np else _device_name()
        best = variants[pick_backend(choice, time_variant, device)]
        self.chosen[id(choice)] = best
        return best

    def _extern_arg(self, env: dict[str, Any], name: str) -> Any:
        value = env[name]
        if name in self.scalar_outputs or (
            self.buffers[name].kind == "kernel" and self.buffers[name].shape == ()
        ):
            return value[()] if isinstance(value, np.ndarray) else value
        return env.get(f"{name}@obj", value)

    def _launch(
        self,
        xp: Any,
        plan: LaunchPlan,
        env: dict[str, Any],
        sizes: dict[str, int],
        where: _Where,
    ) -> None:
        kernel = plan.kernel
        call_args: list[Any] = []
        spans: list[int] = []  # each buffer's largest element offset, for `index64`
        if kernel.counter:
            *partials, counter = self.scratch.take(
                xp,
                kernel.name,
                self.scratch_shapes[kernel.name],
                where[0],
                where[1],
                capturing=where[2],
            )
            env.update(zip(kernel.scratch, partials, strict=True))
        for slot in plan.slots:
            name = slot.name
            array = env.get(name)
            layout = None
            if array is None:
                # Laid out as NumPy lays the buffer's node out (order='K').
                if slot.shape is None:
                    array = slot.allocate(xp, self.run_time_shapes[name].at(sizes))
                else:
                    # Every allocation of a static shape has the layout of the first.
                    array = slot.allocate(xp, slot.shape)
                    layout = self.fresh_layouts.get(name)
                    if layout is None:
                        layout = self.fresh_layouts[name] = _layout(array)
                env[name] = array
            elif slot.checked:
                if xp is not np and isinstance(array, np.ndarray):
                    array = env[name] = to_device(array)  # a host constant
                array = _as_kernel_array(xp, array, self.buffers[name], self._shape(name, sizes))
            call_args.append(array)
            dims = slot.dims
            if dims:
                if layout is None:
                    layout = _layout(array)
                call_args += [layout.strides[d] for d in dims]
                spans.append(layout.span)
        if kernel.counter:
            call_args.append(counter)
        in_memory = kernel.in_memory
        for name in kernel.scalars:
            if name in in_memory:
                call_args.append(env.get(f"{name}@ptr", env[name]))
            else:
                call_args.append(scalar_value(env[name], self.buffers[name].dtype))
        if kernel.size_symbols:
            call_args += [sizes[name] for name in kernel.size_symbols]
        numels = plan.numels
        if numels is None:
            xnumel, rnumel = self.run_time_numels[kernel.name].at(sizes)
        else:
            xnumel, rnumel = numels
        if xnumel == 0:
            return  # no output elements: every store is masked by xindex < xnumel
        call_args.append(xnumel)
        if kernel.is_reduction:
            call_args.append(rnumel)
        if numels is None:
            kernel = self._fitted(kernel, xnumel, rnumel)
        wide = index64(xnumel // kernel.split, rnumel, spans)
        if self.autotune and not kernel.template:
            kernel = self._tuned(xp, kernel, call_args, xnumel, wide, where)
        elif self.tune_reductions and kernel.is_reduction and not kernel.template:
            chosen = self.chosen_static.get(kernel.name) if numels is not None else None
            if chosen is None:
                chosen = self._tuned_reduction(xp, kernel, call_args, (xnumel, rnumel), wide, where)
                if numels is not None:
                    # Static element counts: one shape class, so one choice for every call.
                    self.chosen_static[kernel.name] = chosen
            kernel = chosen
        self._call(kernel, call_args, xnumel, wide, where)

    def _shape(self, name: str, sizes: dict[str, int]) -> tuple[int, ...]:
        static = self.static_shapes.get(name)
        return self.run_time_shapes[name].at(sizes) if static is None else static

    def _fitted(self, kernel: TritonKernel, xnumel: int, rnumel: int) -> TritonKernel:
        key = (id(kernel), xnumel, rnumel)  # `kernel` is one of the module's: alive as long
        fitted = self.fitted.get(key)
        if fitted is None:
            if len(self.fitted) >= _KEPT_FITS:
                self.fitted.clear()
            fitted = self.fitted[key] = fit_blocks(kernel, xnumel, rnumel, self.options)
        return fitted

    def _call(
        self, kernel: TritonKernel, call_args: list[Any], xnumel: int, wide: bool, where: _Where
    ) -> None:
        ready = self.ready.get(kernel.name)
        if (
            ready is None
            or ready.kernel is not kernel
            or ready.wide != wide
            or ready.xnumel != xnumel
        ):
            ready = self.ready[kernel.name] = self._ready(kernel, xnumel, wide)
        launch = self.launchers[kernel.name]
        if self.mode != "interpret":
            launch(call_args, ready.grid, ready.constexprs, kernel.num_warps, where[0], where[1])
            return
        with np.errstate(all="ignore"):  # masked-off lanes of the interpreter compute garbage
            launch(call_args, ready.grid, ready.constexprs, kernel.num_warps, None)

    def _ready(self, kernel: TritonKernel, xnumel: int, wide: bool) -> ReadyLaunch:
        # The grid and constexprs of a launch of this configuration, made once per change of
        # configuration or element count, not per launch.
        blocks = self.blocks[kernel.name]
        if (
            blocks["INDEX64"] is not wide
            or blocks["XBLOCK"] != kernel.xblock
            or blocks.get("RBLOCK", kernel.rblock) != kernel.rblock
            or blocks.get("PERSISTENT") is not kernel.persistent
        ):
            # Run-time sizes, tuned, wide: the constexprs made once per such launch.
            key = (kernel.name, kernel.xblock, kernel.rblock, kernel.persistent, wide)
            blocks = self.launch_blocks.get(key) or self._blocks(key, kernel, wide)
        grid = max(1, -(-xnumel // kernel.xblock))  # kernel.grid(xnumel), without its tuple
        return ReadyLaunch(kernel, wide, xnumel, grid, blocks)

    def _blocks(self, key: tuple[Any, ...], kernel: TritonKernel, wide: bool) -> dict[str, Any]:
        blocks: dict[str, Any] = {"XBLOCK": kernel.xblock, "INDEX64": wide}
        if kernel.is_reduction:
            blocks["RBLOCK"] = kernel.rblock
        if kernel.persistent is not None:
            blocks["PERSISTENT"] = kernel.persistent
        if len(self.launch_blocks) >= _KEPT_FITS:
            self.launch_blocks.clear()
        self.launch_blocks[key] = blocks
        return blocks

    def _tuned(
        self,
        xp: Any,
        kernel: TritonKernel,
        call_args: list[Any],
        xnumel: int,
        wide: bool,
        where: _Where,
    ) -> TritonKernel:
        # max-autotune: the fastest launch configuration for these argument sizes.
        signature = tuple(
            (a.dtype.name, tuple(a.shape), tuple(a.strides)) if _is_array(a) else a
            for a in call_args
        )
        known = self.tuned.get((kernel.name, signature))
        if known is not None:
            return known
        device = "interpreter" if xp is np else _device_name()

        def time_launch(candidate: TritonKernel) -> float:
            return _time(xp, lambda: self._call(candidate, call_args, xnumel, wide, where))

        best = tune(kernel, time_launch, cache_key(kernel, signature, device))
        self.tuned[(kernel.name, signature)] = best
        return best

    def _tuned_reduction(
        self,
        xp: Any,
        kernel: TritonKernel,
        call_args: list[Any],
        numels: tuple[int, int],
        wide: bool,
        where: _Where,
    ) -> TritonKernel:
        # The default mode: a few configurations of a reduction, once per shape class; the
        # interpreter times nothing, but takes a stored choice (how tests see the cache).
        sizes = shape_class(*numels)
        known = self.tuned.get((kernel.name, sizes))
        if known is not None:
            return known
        dtypes = tuple(a.dtype.name for a in call_args if _is_array(a))
        device = "interpreter" if xp is np else _device_name()
        key = reduction_key(kernel, numels, dtypes, wide, device)
        if xp is np:
            best = load_choice(key, kernel) or kernel
        else:

            def time_launch(candidate: TritonKernel) -> float:
                return _time(xp, lambda: self._call(candidate, call_args, numels[0], wide, where))

            choices = reduction_candidates(kernel)
            best = tune(
                kernel,
                time_launch,
                key,
                choices=choices,
                budget_s=REDUCTION_BUDGET_S,
                worth_s=REDUCTION_WORTH_S,
            )
        self.tuned[(kernel.name, sizes)] = best
        return best

    def _outputs(self, env: dict[str, Any], download: Callable[[Any], Any] | None) -> Any:
        # `download` (NumPy inputs on a GPU) brings each result back to the host.
        leaves = []
        for leaf, name, obj, scalar_node, read_only, scalar_output in self.output_plan:
            if not name:
                leaves.append(leaf)
                continue
            value = env.get(obj, env[name])
            if download is not None:
                value = download(value)
                scalar = scalar_node
                if read_only and isinstance(value, np.ndarray):
                    value.flags.writeable = False
            else:
                scalar = scalar_output
            if scalar and isinstance(value, np.ndarray) and value.ndim == 0:
                value = value[()]
            leaves.append(value)
        if self.one_leaf:
            return leaves[0]
        return tree_unflatten(self.output_spec, leaves)


def _exact_dtype(value: Any, dtype: np.dtype[Any]) -> Any:
    # CuPy may give an equal dtype of another scalar type (longlong for int64): NumPy's own.
    if rt.is_device_array(value) and value.dtype == dtype and value.dtype.char != dtype.char:
        return value.view(dtype)
    return value


@attrs.frozen
class _Layout:
    # An array's element strides and its largest element offset from its first element.
    strides: tuple[int, ...]
    span: int


_LAYOUTS: dict[tuple[Any, ...], _Layout] = {}  # (shape, byte strides, itemsize) -> _Layout


def _layout(array: Any) -> _Layout:
    # Arrays of a compiled call keep their shapes and strides from call to call (guards).
    itemsize = array.itemsize
    key = (array.shape, array.strides, itemsize)
    known = _LAYOUTS.get(key)
    if known is not None:
        return known
    low, high = rt.byte_extent(array)
    layout = _Layout(tuple(s // itemsize for s in array.strides), (high - low) // itemsize - 1)
    if len(_LAYOUTS) < 4096:
        _LAYOUTS[key] = layout
    return layout


def _device_name() -> str:
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    return str(props["name"].decode())


def _time(xp: Any, launch: Callable[[], None], repeat: int = 3) -> float:
    # Seconds per launch: CUDA events on a GPU, the wall clock under the interpreter.
    if xp is np:
        start = time.perf_counter()
        launch()
        return time.perf_counter() - start
    launch()  # compile this configuration outside the timing
    start_event, stop_event = xp.cuda.Event(), xp.cuda.Event()
    start_event.record()
    for _ in range(repeat):
        launch()
    stop_event.record()
    stop_event.synchronize()
    return float(xp.cuda.get_elapsed_time(start_event, stop_event)) / 1e3 / repeat


def _as_kernel_array(xp: Any, value: Any, buf: Buffer, shape: tuple[int, ...]) -> Any:
    # What a kernel may read as `buf`: an array of exactly its dtype (native byte order) and
    # shape. Extern calls may return NumPy scalars, Python numbers or other dtypes.
    dtype = buf.dtype if xp is np else buf.dtype.newbyteorder("=")  # CuPy: native order
    ready = _is_array(value) and value.dtype == dtype
    array = value if ready else xp.asarray(value, dtype=dtype)
    if tuple(array.shape) != shape:
        raise RuntimeError(
            f"extern call for {buf.name} returned shape {tuple(array.shape)}, "
            f"not its metadata's {buf.dtype.name}{list(buf.shape)}"
        )
    return array
