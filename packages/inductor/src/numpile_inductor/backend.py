"""The `inductor` backend: graph in, compiled callable out.

Pipeline: look the graph up in the graph cache (a hit loads the built module and
runs: nothing below happens); functionalize graphs with in-place updates (a pure
graph plus a write-back epilogue, so kernels fuse across the updates); lower to loop
IR (decompositions and views included); fuse kernels; with `max_autotune`, time
thread counts and parallel thresholds; generate one C extension module (kernels +
wrapper); build it through numpile_runtime; store the result in the graph cache.
With tiering on (the default), a graph cache miss returns a `TieredGraph` at once: NumPy
runs the graph op by op while those steps run on a background worker.

    >>> fn = inductor(graph, [a, b])  # doctest: +SKIP
    >>> fn(a, b)  # same as run_graph(graph, [a, b])  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import functools
import logging
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

import numpile_runtime as rt
from numpile_capture import (
    OP_BY_OP,
    Graph,
    Node,
    SourceLine,
    body_runner,
    compiles_synchronously,
    has_loops,
    run_graph,
    sympy_sizes,
    written_inputs,
)
from numpile_capture import config as capture_config

from .artifact_format import ArtifactFormatError
from .codegen.c.autotune import AutotuneChoice, autotune
from .codegen.c.buffer_pool import hand_pool, start_pool_build
from .codegen.c.translation_units import MIN_SPLIT_LINES, split_module
from .config import InductorConfig
from .debug import debug_folder, graph_dot, write_debug_files
from .errstate import (
    called_from_line,
    extern_nodes,
    extern_origin,
    honouring_errstate,
    may_overflow_scalars,
    may_raise_float_flags,
)
from .graph_cache import (
    Epilogue,
    ExternSpec,
    GraphArtifact,
    graph_key,
    load_artifact,
    store_artifact,
)
from .launcher import GeneratedModule, extern_callables, output_rebuilder, with_epilogue
from .lazy_body import LazyBody
from .light_lowering import light_first
from .loop_reports import (
    LoopNote,
    counting_numpy_runs,
    line_of,
    located_at,
    loop_kind,
    noting_loops,
    record_notes,
    report_every_loop,
)
from .loops import NestedLoopCompiler, compile_loop_bodies
from .nested_loops import (
    NestedLoop,
    build_nested_loops,
    loops_to_build,
    nested_loop_runner,
    nested_while_runner,
)
from .no_compiler import op_by_op
from .pipeline import device_backend, functionalized, graph_device, lower_and_schedule
from .tiered_graph import TieredGraph

if TYPE_CHECKING:
    import types

    from .scheduler import Schedule

log = logging.getLogger("numpile.inductor")
output_code_log = logging.getLogger("numpile.inductor.output_code")

# GCC's default -ftrapping-math stays on: kernels report the floating-point flags they
# raise (NumPy's warnings come from them, see errstate.py), and -fno-trapping-math lets GCC
# fold or drop flag-raising operations (0.0 / 0.0 of an empty mean, say). Selects still
# vectorize: float orderings are quiet integer compares (c_ops), with no trap to keep.
# -fcommon: each translation unit of a module defines NumPy's API table without a value (see
# the prelude in codegen/c/wrapper.py); the linker merges them into one.
_FLAGS = (
    "-std=gnu11",
    "-fwrapv",
    "-fno-math-errno",
    "-fcommon",
    "-Wno-unused-variable",
)
# fast_math is opt-in: contraction into FMA and reassociation change NumPy's results.
# NOTE: -ffast-math's parts, not the flag itself: given at the link of a shared object, the
# flag makes GCC before 13 link crtfastmath.o, whose constructor turns on flush-to-zero and
# denormals-are-zero for the thread that loads the module: every later NumPy call of the
# process would flush subnormals.
_FAST_MATH_FLAGS = (
    "-fno-math-errno",
    "-ffinite-math-only",
    "-fno-rounding-math",
    "-fno-signaling-nans",
    "-fcx-limited-range",
    "-fexcess-precision=fast",
    "-fno-signed-zeros",
    "-fno-trapping-math",
    "-fassociative-math",
    "-freciprocal-math",
    "-ffp-contract=fast",
)
# NOTE: at most this many translation units per module: a unit costs a compiler process and
# its share of the link, and a module has only a few functions worth moving.
_MAX_UNITS = 4
# NOTE: the module name of the job `prepare` asks a precompiled header for: any C name will
# do (the header's key holds the command and the header, not the module's name or source).
_HEADER_JOB_NAME = "numpile_prelude"


class KernelCompileError(rt.BuildError):
    """The C compiler rejected code the inductor generated (a numpile bug).

    The message names the kept kernel source and prints the graph it came from;
    `graph` holds that graph's text.

        >>> err = KernelCompileError("failed", source_path="k.c", command=(), stderr="", graph="")
        >>> err.source_path
        'k.c'
    """

    def __init__(
        self, message: str, *, source_path: str, command: Sequence[str], stderr: str, graph: str
    ) -> None:
        super().__init__(message, source_path=source_path, command=command, stderr=stderr)
        self.graph = graph


@attrs.frozen
class CompiledGraph:
    """What the inductor made of a graph: the schedule, the module source and the callable.

    `schedule` is None when the module came from the graph cache (lowering was
    skipped); `kernel_count` and `extern_ops` are known either way. `functional` says
    whether the graph was functionalized; `autotuned` holds the max_autotune choice.

    >>> compiled = compile_graph(graph)  # doctest: +SKIP
    >>> compiled.kernel_count  # doctest: +SKIP
    1
    """

    schedule: Schedule | None
    generated: GeneratedModule
    fn: Callable[..., Any] = attrs.field(repr=False)
    kernel_count: int = 0
    extern_ops: tuple[str, ...] | list[str] = ()
    functional: bool = False
    cache_hit: bool = False
    autotuned: AutotuneChoice | None = None
    flags: tuple[str, ...] = ()
    # The bodies of the graph's loops that run as host loops (not as C): see `lazy_body`.
    host_loop_bodies: tuple[Graph, ...] = ()

    @property
    def source(self) -> str:
        return self.generated.source


def compile_graph(
    graph: Graph,
    *,
    options: Mapping[str, Any] | None = None,
    mode: str | None = None,
    example_inputs: Sequence[Any] | None = None,
) -> CompiledGraph:
    """Compile `graph` (through the graph cache); the full result for inspection.

    `example_inputs` are needed only by `max_autotune` (it times the graph on them).

    >>> compile_graph(graph).kernel_count  # doctest: +SKIP
    """
    config = InductorConfig.from_options(options, mode=mode)
    return _compile(graph, config, example_inputs, functionalize=True)


def inductor(
    graph: Graph,
    example_inputs: Sequence[Any],
    *,
    mode: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> Callable[..., Any]:
    """The inductor backend: a callable that evaluates `graph` like `run_graph`.

    It takes the graph inputs positionally. `mode` is "default" or "max-autotune"
    (see `list_mode_options`), `options` are inductor options (see `list_options`).
    Without a C compiler it runs the graph op by op with NumPy and warns once per
    process (`no_compiler`); with option `cpp.no_compiler="raise"` it raises
    `CompilerNotFoundError` naming what to install.

        >>> fn = inductor(graph, [np.ones(3)])  # doctest: +SKIP
    """
    device = graph_device(graph)
    if device != "cpu":  # CuPy inputs: the device's own code generator (Triton)
        compiled: Callable[..., Any] = device_backend(device)(
            sympy_sizes(graph), example_inputs, mode=mode, options=options
        )
        return compiled
    if any(_foreign_byte_order(node.meta) for node in graph.placeholders):
        # NOTE: kernels read native-order numbers only (a `>f8` input would be misread, and
        # its graph prints like a native one): NumPy runs the graph, op by op.
        log.info("a graph input is not in native byte order; running the graph with NumPy")
        report_every_loop(graph, OP_BY_OP, "an input is not in native byte order")
        numpy_graph = sympy_sizes(graph)
        return lambda *args: run_graph(numpy_graph, list(args))
    config = InductorConfig.from_options(options, mode=mode)

    # Loop bodies the C loop nest cannot take are compiled once each and run by a host
    # loop (see `loops`). Their mutation ops stay barriers: functionalizing a body would
    # copy each array it writes back per iteration (and drops the run-time index of its
    # `getitem_at` views).
    # A body is compiled once the graph's module shows that its loop runs as a host loop,
    # not as C (`lazy_body`): a loop of kernels called from C builds one module, not two.
    bodies: dict[int, LazyBody] = {}
    # The loops nested in bodies that run op by op, at any depth (in a body of a compiled
    # body too), each built with the module whose host loop runs that body.
    nested: dict[Graph, NestedLoop] = {}

    def compile_body(body: Graph) -> Callable[..., Any]:
        def build() -> Callable[..., Any]:
            compiled = _compile_with_nested_loops(body, config, None, nested, functionalize=False)
            _force_host_loops(compiled, bodies)
            build_nested_loops(compiled.host_loop_bodies, nested, _loops_built_together(config))
            return compiled.fn

        lazy = LazyBody(build, fallback=lambda: _op_by_op_body(body))
        bodies[id(body)] = lazy
        return lazy

    def compile_loops(inputs: Sequence[Any] | None) -> Callable[..., Any]:
        compiled_graph = compile_loop_bodies(
            graph, compile_body, compile_nested_loop=_nested_loops(config, nested)
        )
        # The loops nested in bodies that run op by op, built now (in the background when
        # tiered), not on their first run, in the middle of a call: the outermost with the
        # graph's module, any below them after.
        compiled = _compile_with_nested_loops(
            compiled_graph, config, inputs, nested, functionalize=True
        )
        _force_host_loops(compiled, bodies)
        build_nested_loops(compiled.host_loop_bodies, nested, _loops_built_together(config))
        return compiled.fn

    try:
        if has_loops(graph):
            if not config.tiered or config.trace_enabled or compiles_synchronously():
                return compile_loops(example_inputs)
            # NOTE: tiered without op by op: each iteration's ops would run from Python. The
            # calls before the switch run the function itself where the dispatcher lets them.
            cached_loops = _cached_loop_graph(graph, config)
            if cached_loops is not None:
                return cached_loops
            return _tiered(graph, config, lambda: compile_loops(None), numpy_tier=False)
        if config.tiered and not config.trace_enabled and not compiles_synchronously():
            # The graph cache is looked up here unless that needs a compiler probe first
            # (a fresh cache): the background build looks it up again anyway.
            cached = None
            if rt.known_toolchain() is not None:
                cached = _cached(graph, config, _key(graph, config, functionalize=True))
            if cached is not None:
                return cached.fn
            with rt.collector_paused():  # sympy's import, as in `_compile`
                graph = sympy_sizes(graph)  # the NumPy tier runs it until the build is done

            def build() -> Callable[..., Any]:
                return _compile(graph, config, None, functionalize=True).fn

            return _tiered(graph, config, build)
        return _compile(graph, config, example_inputs, functionalize=True).fn
    except rt.CompilerNotFoundError as error:
        if config.no_compiler == "raise":
            raise
        report_every_loop(graph, OP_BY_OP, "no C compiler was found")
        return op_by_op(sympy_sizes(graph), error)


def generated_source(
    graph: Graph, *, options: Mapping[str, Any] | None = None, light: bool = True
) -> str:
    """The C module source a graph cache miss generates for a CPU `graph`, without building,
    caching or autotuning it: lowered without sympy where it can be (`light`, see
    `light_lowering`), else with sympy sizes. Both ways give the same source; the loop
    bodies that would run as host loops are not compiled.

        >>> "PyInit_" in generated_source(graph)  # doctest: +SKIP
        True
    """
    config = attrs.evolve(InductorConfig.from_options(options), max_autotune=False)
    if has_loops(graph):
        graph = compile_loop_bodies(graph, _uncompiled_body)

    def generate(source: Graph, light: bool) -> _Generated:
        return _generate(source, config, None, "", contextlib.ExitStack(), functionalize=True)

    return light_first(generate, graph, convert=sympy_sizes, light=light).generated.source


def _uncompiled_body(body: Graph) -> Callable[..., Any]:
    # A loop body for `generated_source`: compiled (op by op) only if it were ever called.
    return LazyBody(lambda: _op_by_op_body(body), fallback=lambda: _op_by_op_body(body))


# A light capture's graph (numpile_capture's `graph_sizes`) is looked up in the graph cache
# as is: a hit runs without sympy; a miss lowers it light, or converts it (`_compile`).
inductor.takes_light_sizes = True  # type: ignore[attr-defined]


def prepare(*, mode: str | None = None, options: Mapping[str, Any] | None = None) -> None:
    """Start what a synchronous compile will need before its graph exists, on the runtime's
    build queue (`numpile_runtime.queue_build`): the C compiler's probe and the precompiled
    prelude every module includes (`prepare_header`: the first module of a fresh cache
    folder then compiles with it), one after the other on one core while capture runs on
    the other; then, as idle work, the buffer pool's module (`start_pool_build`: modules
    get it when it loads). The dispatcher calls it before capture (`prepare_backend`). A
    tiered compile builds in the background, and gets the probe alone
    (`prepare_toolchain`): its background build would otherwise probe the compiler after
    lowering and code generation, on the way to compiled code. Nothing waits for them and
    nothing fails for them: without a compiler they do nothing.

        >>> prepare(options={"tiered": True})
    """
    config = InductorConfig.from_options(options, mode=mode)
    if config.tiered and not config.trace_enabled:
        rt.prepare_toolchain()
        return
    rt.prepare_header(_header_job(_flags(config)))
    start_pool_build()


@functools.cache
def _header_job(flags: tuple[str, ...]) -> rt.BuildJob:
    # A module of no graph: its header is every module's prelude as `_job` cuts it out of
    # the wrapper's text, its command that of a module built with `flags`.
    from .codegen.c.prelude import module_prelude  # late: the C spellings, not at import

    return _job(_HEADER_JOB_NAME, module_prelude() + "\n", flags, InductorConfig())


inductor.prepare = prepare  # type: ignore[attr-defined]


class _BodyNotCachedError(Exception):
    pass


def _cached_loop_graph(graph: Graph, config: InductorConfig) -> Callable[..., Any] | None:
    # A loop graph from the graph cache, its host-loop bodies included; None on any miss
    # (or before the toolchain is known: the background build probes it).
    if rt.known_toolchain() is None:
        return None

    # A body that is not in the cache is a miss only if its loop runs as a host loop: the
    # body of a loop that runs as C was never compiled (see `lazy_body`).
    missing: dict[int, LazyBody] = {}

    def cached_body(body: Graph) -> Callable[..., Any]:
        found = _cached(body, config, _key(body, config, functionalize=False))
        if found is not None:
            if any(id(inner) in missing for inner in found.host_loop_bodies):
                raise _BodyNotCachedError
            return found.fn

        def build() -> Callable[..., Any]:
            return _compile(body, config, None, functionalize=False).fn

        lazy = LazyBody(build, fallback=lambda: _op_by_op_body(body))
        missing[id(body)] = lazy
        return lazy

    try:
        compiled_graph = compile_loop_bodies(
            graph, cached_body, compile_nested_loop=_nested_loops(config, {})
        )
    except _BodyNotCachedError:
        return None
    found = _cached(compiled_graph, config, _key(compiled_graph, config, functionalize=True))
    if found is None or any(id(body) in missing for body in found.host_loop_bodies):
        return None
    return found.fn


def _force_host_loops(compiled: CompiledGraph, bodies: dict[int, LazyBody]) -> None:
    # Compile the bodies of `compiled`'s host loops now, as part of the compile step.
    for body in compiled.host_loop_bodies:
        lazy = bodies.get(id(body))
        if lazy is not None:
            lazy.force()


def _nested_loops(config: InductorConfig, nested: dict[Graph, NestedLoop]) -> NestedLoopCompiler:
    # A loop nested in a body that runs op by op, as a module of that one loop (see
    # `nested_loops`), kept in `nested` by its body: compiled, or found in the graph cache,
    # with the module whose host loop runs that body (`_compile_with_nested_loops`), when
    # `build_nested_loops` finds it, or on its first run.
    def compile_graph(graph: Graph, line: SourceLine | None) -> tuple[Callable[..., Any], bool]:
        with located_at(line):  # the loop graph's node has no line of its own
            return _loop_module(_compile(graph, config, None, functionalize=False))

    def loop(node: Node, body: Graph) -> NestedLoop:
        line = line_of(node)
        found = nested[body] = NestedLoop(
            node, body, lambda graph: compile_graph(graph, line), line
        )
        return found

    return NestedLoopCompiler(
        for_loop=lambda node, body, fallback: nested_loop_runner(loop(node, body), fallback),
        while_loop=lambda node, body: nested_while_runner(loop(node, body)),
    )


def _loop_module(compiled: CompiledGraph) -> tuple[Callable[..., Any], bool]:
    # A nested loop's module and whether it runs the loop as C (no host loop left).
    return compiled.fn, not compiled.host_loop_bodies


# NOTE: a nested loop's module is a module of its own, built in the same `build_many` as the
# module whose host loop runs its body (a compiler process each, side by side, one wait),
# not a function of that module: the wrapper writes one graph per module, whose statics
# (externs, pool, threads, error report) and function names (`call`, `loop_v0`, kernels)
# would collide with a second graph's in one translation unit, and one library holding
# two modules' units would share their globals and be unloaded as one
# (`numpile_runtime`'s loader unloads a library per module).
def _compile_with_nested_loops(
    graph: Graph,
    config: InductorConfig,
    example_inputs: Sequence[Any] | None,
    nested: Mapping[Graph, NestedLoop],
    *,
    functionalize: bool,
) -> CompiledGraph:
    # `_compile`, with the outermost nested loops of the host loops its module leaves (known
    # once the module is generated) built in the same build, side by side.
    prepared = _prepare(graph, config, example_inputs, functionalize=functionalize)
    if isinstance(prepared, CompiledGraph):
        return prepared
    loops = loops_to_build(prepared.host_loop_bodies(), nested)
    (compiled,) = _build_with_loops([prepared], loops, config)
    if isinstance(compiled, Exception):
        raise compiled
    return compiled


def _loops_built_together(config: InductorConfig) -> Callable[[list[NestedLoop]], None]:
    # `build_nested_loops`' way of building the loops of one depth: in one build.
    def build_all(loops: list[NestedLoop]) -> None:
        _build_with_loops([], loops, config)

    return build_all


def _build_with_loops(
    prepared: list[_Prepared], loops: Sequence[NestedLoop], config: InductorConfig
) -> list[CompiledGraph | Exception]:
    # The modules of `prepared` and of `loops` (those not in the graph cache) in one build;
    # each loop gets its module (or its error: it then runs op by op with a warning).
    # Returns the compiled graphs of `prepared`.
    found: list[CompiledGraph | _Prepared | Exception] = []
    for loop in loops:
        try:
            assert loop.graph is not None  # a loop without one is built from the start
            with located_at(loop.line):  # the loop graph's node has no line
                prepared_loop = _prepare(loop.graph, config, None, functionalize=False)
            if isinstance(prepared_loop, _Prepared):
                prepared_loop = attrs.evolve(prepared_loop, line=loop.line)
            found.append(prepared_loop)
        except Exception as error:  # handed to the loop, which warns and runs op by op
            found.append(error)
    built = iter(_build_together([*prepared, *(f for f in found if isinstance(f, _Prepared))]))
    results = [next(built) for _ in prepared]
    for loop, item in zip(loops, found, strict=True):
        result = next(built) if isinstance(item, _Prepared) else item
        loop.build(functools.partial(_handed_over, result))
    return results


def _handed_over(
    result: CompiledGraph | Exception, graph: Graph
) -> tuple[Callable[..., Any], bool]:
    # A nested loop's compile that a batch did: its module, or its error raised.
    if isinstance(result, Exception):
        raise result
    return _loop_module(result)


def _op_by_op_body(body: Graph) -> Callable[..., Any]:
    runner = body_runner(sympy_sizes(body))
    return lambda *arguments: runner(arguments)


def _tiered(
    graph: Graph,
    config: InductorConfig,
    build: Callable[[], Callable[..., Any]],
    *,
    numpy_tier: bool = True,
) -> TieredGraph:
    # The graph cache missed: calls run op by op with NumPy (or the function eagerly, see
    # `TieredGraph`) while `build` runs on the background worker.
    def on_failure(error: BaseException) -> Callable[..., Any]:
        # As a synchronous compile fails: no compiler means op by op (or raise when asked);
        # another error raises from the call, or with suppress_errors is logged once and
        # the graph keeps running with NumPy. A loop graph whose calls ran the function
        # eagerly keeps doing so: a synchronous compile of a graph with symbolic sizes
        # would have been retried static by the dispatcher, which a late failure cannot do.
        if isinstance(error, rt.CompilerNotFoundError) and config.no_compiler != "raise":
            return op_by_op(graph, error)
        if tiered.eager_tier and isinstance(error, Exception):
            log.warning(
                "the background build of a loop graph failed (%s); its function keeps running "
                "eagerly",
                error,
            )
            return tiered.not_compiled
        if capture_config.suppress_errors and isinstance(error, Exception):
            log.warning(
                "the background build of a graph failed (%s); it keeps running op by op with "
                "NumPy (suppress_errors=True)",
                error,
            )
            return lambda *args: run_graph(graph, list(args))
        raise error

    rt.count("inductor_tiered_graph")
    tiered = TieredGraph(graph, build, on_failure, op_by_op=numpy_tier)
    return tiered


def _origin_line(graph: Graph, origin: int) -> SourceLine | None:
    # The line of `graph`'s node at position `origin` (see `ExternSpec.origin`).
    return graph.locations.get(graph.nodes[origin]) if 0 <= origin < len(graph.nodes) else None


def _foreign_byte_order(meta: Any) -> bool:
    dtype = getattr(meta, "dtype", None)
    return isinstance(dtype, np.dtype) and dtype.byteorder not in "=|"


def _compile(
    graph: Graph,
    config: InductorConfig,
    example_inputs: Sequence[Any] | None,
    *,
    functionalize: bool,
) -> CompiledGraph:
    prepared = _prepare(graph, config, example_inputs, functionalize=functionalize)
    if isinstance(prepared, CompiledGraph):
        return prepared
    (module,) = _build_prepared([prepared])
    return _finish_prepared(prepared, module)


@attrs.frozen
class _Prepared:
    # A graph cache miss lowered and generated, its module not built yet: several build
    # at once (`_build_together`).
    graph: Graph
    config: InductorConfig
    key: str
    artifact: GraphArtifact
    schedule: Schedule
    choice: AutotuneChoice | None
    c_loops: tuple[int, ...]
    # A nested loop's source line (its loop graph's node has none), for its loop reports.
    line: SourceLine | None = None

    def host_loop_bodies(self) -> tuple[Graph, ...]:
        specs = tuple(spec.resolved(self.graph) for spec in self.artifact.externs)
        return _host_loop_bodies(specs, set(self.c_loops))


def _prepare(
    graph: Graph,
    config: InductorConfig,
    example_inputs: Sequence[Any] | None,
    *,
    functionalize: bool,
) -> CompiledGraph | _Prepared:
    # The graph cache's module for `graph`, else its module generated (not built).
    # NOTE: the cyclic collector is paused while this compile runs Python (sympy's import,
    # lowering, code generation allocate much and free little), not while autotuning waits
    # for C builds that other threads run through (`numpile_runtime.collector_paused`).
    # `_build_prepared` pauses it again through the module's build: the builder runs the
    # collection it held off while the compiler works, rather than before the compiler starts.
    with contextlib.ExitStack() as paused:
        paused.enter_context(rt.collector_paused())
        # NOTE: the key names the toolchain. While the build queue probes the compiler (a
        # fresh cache folder's first compile), lowering and code generation run first, on
        # this core while the probe runs on the other, and the cache is asked once the
        # probe is done: a cache hit then wasted the lowering, which no fresh folder holds
        # anyway. Autotuning keys its variants, so it asks first.
        ask_first = config.max_autotune or rt.known_toolchain() is not None
        key = _key(graph, config, functionalize=functionalize) if ask_first else ""
        cached = _cached(graph, config, key) if ask_first else None
        if cached is not None:
            return cached
        if ask_first:
            rt.count("inductor_graph_cache_miss")

        # The loop notes of each generation that returned: the last is the one built (a
        # light try that needs sympy starts again, and its notes are dropped).
        attempts: list[list[LoopNote]] = []

        def generate(source: Graph, light: bool) -> _Generated:
            with noting_loops() as notes:
                generated = _generate(
                    source, config, example_inputs, key, paused, functionalize=functionalize
                )
            attempts.append(notes)
            return generated

        # A light capture's graph was good for the key (it prints as its sympy form) and
        # lowers without sympy where its sizes and indices are affine (`light_lowering`);
        # else, with max_autotune (which builds variants), or where sympy is loaded anyway
        # (no import to save), lowering takes sympy sizes.
        light = not config.max_autotune and "sympy" not in sys.modules
        done = light_first(generate, graph, convert=sympy_sizes, light=light)
        if not ask_first:
            key = _key(graph, config, functionalize=functionalize)
            cached = _cached(graph, config, key)
            if cached is not None:
                return cached
            rt.count("inductor_graph_cache_miss")
    graph, config, generated = done.graph, done.config, done.generated
    target, epilogue, sched = done.target, done.epilogue, done.schedule
    output_code_log.info("%s", generated.source)
    if config.trace_enabled or config.graph_diagram:
        files = {"output_code.c": generated.source}
        if config.trace_enabled:
            files["ir_pre_fusion.txt"] = str(sched.program)
            files["ir_post_fusion.txt"] = str(sched)
            if done.functional_text:
                files["functional_graph.txt"] = done.functional_text
        _write_debug(config, graph, generated.module_name, files)
    from .scheduler import FusedKernel  # loaded by the lowering above

    artifact = GraphArtifact(
        module_name=generated.module_name,
        source=generated.source,
        flags=_flags(config),
        externs=tuple(
            ExternSpec.of(step, extern_origin(graph, target, step.node_name)).stored(graph)
            for step in generated.extern_steps
        ),
        output_spec=generated.output_spec,
        output_slots=generated.output_slots,
        direct=generated.direct,
        threads=config.threads,
        epilogue=epilogue,
        kernel_count=len(sched.kernels),
        extern_ops=tuple(s.op_name for s in sched.steps if not isinstance(s, FusedKernel)),
        loop_notes=tuple(dict.fromkeys(attempts[-1] if attempts else ())),
    )
    return _Prepared(graph, config, key, artifact, sched, done.choice, generated.c_loops)


def _build_prepared(prepared: Sequence[_Prepared]) -> list[types.ModuleType]:
    # The modules of `prepared`, built at once (one `build_many`: a compiler process each,
    # side by side on the cores free) and loaded.
    artifacts = [(p.artifact, p.config) for p in prepared]
    jobs = [_job(a.module_name, a.source, a.flags, config) for a, config in artifacts]
    whole = [
        _job(a.module_name, a.source, a.flags, attrs.evolve(config, translation_units=1))
        for a, config in artifacts
    ]
    with rt.collector_paused():
        return _build_many(jobs, prepared[0].graph, whole)


def _finish_prepared(prepared: _Prepared, module: types.ModuleType) -> CompiledGraph:
    if prepared.config.graph_cache:
        store_artifact(prepared.key, prepared.artifact)
    with located_at(prepared.line) if prepared.line is not None else contextlib.nullcontext():
        return _finish(
            prepared.graph,
            prepared.config,
            prepared.artifact,
            module,
            prepared.schedule,
            cache_hit=False,
            autotuned=prepared.choice,
        )


def _build_together(prepared: Sequence[_Prepared]) -> list[CompiledGraph | Exception]:
    # `_build_prepared` and `_finish_prepared` of each, or the error of each that failed:
    # where one module of several fails, each is built on its own (the others come from the
    # code cache), so that its error names its graph.
    try:
        modules = _build_prepared(prepared) if prepared else []
    except Exception as error:
        if len(prepared) == 1:
            return [error]
        return [_built_alone(p) for p in prepared]
    return [_finish_prepared(p, m) for p, m in zip(prepared, modules, strict=True)]


def _built_alone(prepared: _Prepared) -> CompiledGraph | Exception:
    try:
        (module,) = _build_prepared([prepared])
    except Exception as error:  # handed to its caller: a nested loop's fails alone
        return error
    return _finish_prepared(prepared, module)


@attrs.frozen
class _Generated:
    # One lowering and code generation of a graph: what `_compile` builds and stores.
    graph: Graph
    config: InductorConfig
    target: Graph
    epilogue: Epilogue | None
    functional_text: str
    schedule: Schedule
    generated: GeneratedModule
    choice: AutotuneChoice | None


def _generate(
    graph: Graph,
    config: InductorConfig,
    example_inputs: Sequence[Any] | None,
    key: str,
    paused: contextlib.ExitStack,
    *,
    functionalize: bool,
) -> _Generated:
    # Lowering, autotuning and code generation of a graph the cache missed; it keeps no
    # state, so a light try that needs sympy starts again from the graph (`light_first`).
    # Late imports: the code generator is not loaded for a graph cache hit.
    from .codegen.c.wrapper import generate_module

    target, epilogue, functional_text = (
        functionalized(graph) if functionalize else (graph, None, "")
    )
    with rt.timed("inductor_lowering"):
        sched = lower_and_schedule(target)
    choice = None
    if config.max_autotune:
        paused.close()
        choice = _autotune(graph, target, sched, config, example_inputs, epilogue, key)
        if choice is not None:
            config = attrs.evolve(
                config, threads=choice.threads, parallel_threshold=choice.parallel_threshold
            )
        paused.enter_context(rt.collector_paused())
    if epilogue is not None and epilogue.mutated_inputs:
        # After autotuning: its timing runs must leave the example inputs untouched.
        from .reinplace import reinplace_scatters

        written = frozenset(sched.program.inputs[p] for p, _ in epilogue.mutated_inputs)
        sched = reinplace_scatters(sched, written)
    with rt.timed("inductor_codegen"):
        generated = generate_module(sched, config)
    return _Generated(graph, config, target, epilogue, functional_text, sched, generated, choice)


def _key(graph: Graph, config: InductorConfig, *, functionalize: bool) -> str:
    variant = "functional" if functionalize else "barrier"
    return graph_key(graph, config, _toolchain().identity, variant=variant)


def _cached(graph: Graph, config: InductorConfig, key: str) -> CompiledGraph | None:
    # The graph cache's built module for `graph` (under `key`), loaded; None on a miss.
    # trace.enabled lowers again so that the loop IR files can be written.
    if not config.graph_cache or config.trace_enabled:
        return None
    artifact = load_artifact(key)
    if artifact is None:
        return None
    try:
        module = _build(artifact.module_name, artifact.source, artifact.flags, graph, config)
    except rt.BuildError as error:  # e.g. a cache folder from another machine
        log.warning("graph cache entry %s does not build (%s); recompiling", key, error)
        return None
    log.debug("graph cache hit %s", key[:16])
    output_code_log.info("graph cache hit %s:\n%s", key[:16], artifact.source)
    if config.graph_diagram:
        _write_debug(config, graph, artifact.module_name, {"output_code.c": artifact.source})
    try:
        found = _finish(graph, config, artifact, module, None, cache_hit=True)
    except ArtifactFormatError as error:  # a loop body the graph does not have: a miss
        log.warning("graph cache entry %s does not fit its graph (%s)", key[:16], error)
        return None
    rt.count("inductor_graph_cache_hit")
    return found


def _finish(
    graph: Graph,
    config: InductorConfig,
    artifact: GraphArtifact,
    module: types.ModuleType,
    sched: Schedule | None,
    *,
    cache_hit: bool,
    autotuned: AutotuneChoice | None = None,
) -> CompiledGraph:
    # The callable of a built module: externs handed over, pytree rebuild, epilogue.
    c_loops = set(module.c_loops())
    record_notes(graph, artifact.loop_notes)
    specs = tuple(spec.resolved(graph) for spec in artifact.externs)
    steps = tuple(spec.callable_step("") for spec in specs)
    externs = tuple(
        called_from_line(graph, spec.origin, fn)
        for spec, fn in zip(specs, extern_callables(steps), strict=True)
    )
    # A C loop's extern runs only where the loop hands a call to NumPy: each such run counted.
    externs = tuple(
        counting_numpy_runs(fn, loop_kind(spec.op_name), _origin_line(graph, spec.origin))
        if index in c_loops
        else fn
        for index, (spec, fn) in enumerate(zip(specs, externs, strict=True))
    )
    generated = GeneratedModule(
        artifact.module_name,
        artifact.source,
        externs,
        artifact.output_spec,
        artifact.output_slots,
        artifact.direct,
        steps,
    )
    epilogue = artifact.epilogue

    @functools.cache
    def barrier() -> Callable[..., Any]:
        # Inputs that overlap in memory: the pure graph cannot model them.
        return _compile(graph, config, None, functionalize=False).fn

    def bind(loaded: types.ModuleType) -> Callable[..., Any]:
        # The graph's call over a loaded module, its statics set up (a module unloaded to
        # keep the bound on loaded libraries loads again with them zeroed).
        loaded.set_externs(externs)
        hand_pool(loaded)
        fn = output_rebuilder(generated, loaded.call)
        if epilogue is not None:
            fn = with_epilogue(fn, epilogue, barrier)
        return fn

    def reload() -> tuple[Callable[..., Any], types.ModuleType]:
        loaded = _build(artifact.module_name, artifact.source, artifact.flags, graph, config)
        rt.count("inductor_module_reload")
        return bind(loaded), loaded

    fn = bind(module)
    # A failed call may run again with NumPy when the kernels left the inputs untouched
    # (a loop that writes only the arrays the graph made leaves them so); where it wrote
    # some, a graph that may raise flags copies those first, to put them back.
    written = written_inputs(graph)
    replayable = artifact.epilogue is not None or written == ()
    may_raise_flags = may_overflow_scalars(graph) or may_raise_float_flags(graph)
    # Loops that run as C report their flags like kernels: their ops warn on a replay.
    warned = extern_nodes(
        graph,
        [(spec.op_name, spec.origin) for index, spec in enumerate(specs) if index not in c_loops],
    )
    fn = honouring_errstate(
        fn,
        graph,
        module,
        replayable=replayable,
        restorable=not replayable and may_raise_flags,
        written=written,
        externs=bool(artifact.externs),
        warned=warned,
        reload=reload,
    )
    return CompiledGraph(
        sched,
        generated,
        fn,
        kernel_count=artifact.kernel_count,
        extern_ops=list(artifact.extern_ops),
        functional=artifact.epilogue is not None,
        cache_hit=cache_hit,
        autotuned=autotuned,
        flags=artifact.flags,
        host_loop_bodies=_host_loop_bodies(specs, c_loops),
    )


def _host_loop_bodies(specs: Sequence[ExternSpec], c_loops: set[int]) -> tuple[Graph, ...]:
    # The bodies that the module's externs run from Python: all but the C loops'.
    return tuple(
        value
        for index, spec in enumerate(specs)
        if index not in c_loops
        for value in (*spec.args, *(v for _, v in spec.kwargs))
        if isinstance(value, Graph)
    )


def _autotune(
    graph: Graph,
    target: Graph,
    sched: Schedule,
    config: InductorConfig,
    example_inputs: Sequence[Any] | None,
    epilogue: Epilogue | None,
    key: str,
) -> AutotuneChoice | None:
    if example_inputs is None:
        log.info("max_autotune needs example inputs; using the default threads and threshold")
        return None
    if target is graph and any(node.op is not None and node.op.mutates for node in graph.nodes):
        log.info("max_autotune skipped: the graph mutates its inputs and was not functionalized")
        return None
    flags = _flags(config)
    from .codegen.c.wrapper import generate_module  # late: see _compile

    def build(thresholds: Sequence[int]) -> list[tuple[Callable[..., Any], Callable[[int], Any]]]:
        variants = [
            generate_module(sched, attrs.evolve(config, parallel_threshold=t, threads=0))
            for t in thresholds
        ]
        jobs = [_job(g.module_name, g.source, flags, config) for g in variants]
        one = attrs.evolve(config, translation_units=1)
        whole = [_job(g.module_name, g.source, flags, one) for g in variants]
        modules = _build_many(jobs, graph, whole)
        built: list[tuple[Callable[..., Any], Callable[[int], Any]]] = []
        for generated, module in zip(variants, modules, strict=True):
            assert not isinstance(module, type(None))
            module.set_externs(generated.externs)
            hand_pool(module)
            built.append((output_rebuilder(generated, module.call), module.set_threads))
        return built

    return autotune(build, config, example_inputs, key=key)


def _flags(config: InductorConfig) -> tuple[str, ...]:
    fast = _FAST_MATH_FLAGS if config.fast_math else ()
    return _FLAGS + fast + config.extra_flags


def _toolchain() -> rt.Toolchain:
    try:
        return rt.find_toolchain()
    except rt.CompilerNotFoundError as error:
        raise _no_compiler(error) from error


def _no_compiler(error: rt.CompilerNotFoundError) -> rt.CompilerNotFoundError:
    return rt.CompilerNotFoundError(
        f"the inductor backend compiles graphs to C and needs a C compiler: {error}. "
        "Without one, compile with backend='eager', set "
        "numpile.config.suppress_errors = True to run such functions eagerly with a warning, "
        "or unset NUMPILE_NO_COMPILER (option cpp.no_compiler) to run graphs op by op"
    )


def _build(
    module_name: str,
    source: str,
    flags: tuple[str, ...],
    graph: Graph,
    config: InductorConfig,
) -> types.ModuleType:
    job = _job(module_name, source, flags, config)
    whole = _job(module_name, source, flags, attrs.evolve(config, translation_units=1))
    (module,) = _build_many([job], graph, [whole])
    return module


def _job(
    module_name: str, source: str, flags: tuple[str, ...], config: InductorConfig
) -> rt.BuildJob:
    # The module as a precompiled prelude and translation units built at once: as many as
    # the option asks, else one per core free now (up to 4) where a unit gets enough lines
    # to gain; that cut is keyed by the module's text, so a later cut finds it in the cache.
    if config.translation_units > 0:
        units = split_module(source, parts=config.translation_units, min_lines=0)
        unsplit = ""
    else:
        parts = min(rt.free_cores(), _MAX_UNITS)
        units = split_module(source, parts=parts, min_lines=MIN_SPLIT_LINES)
        unsplit = source
    return rt.BuildJob(
        units.sources[0],
        module_name,
        "c",
        flags,
        header=units.header,
        more_sources=units.sources[1:],
        unsplit=unsplit,
    )


def _build_many(
    jobs: Sequence[rt.BuildJob], graph: Graph, whole: Sequence[rt.BuildJob] = ()
) -> list[types.ModuleType]:
    # `whole`: the same modules as one translation unit each, built where a split one fails.
    try:
        with rt.timed("inductor_build"):
            rt.find_toolchain()
            try:
                built = rt.build_many(jobs)
            except rt.BuildError as error:
                if not whole or not any(job.more_sources for job in jobs):
                    raise
                # A module cut where the compiler disagrees with the splitter: built whole.
                log.warning("a module split into translation units did not build (%s)", error)
                rt.count("inductor_split_fallback")
                built = rt.build_many(whole)
    except rt.CompilerNotFoundError as error:
        raise _no_compiler(error) from error
    except KernelCompileError:
        raise
    except rt.BuildError as error:
        raise _kernel_compile_error(error, graph) from error
    modules: list[types.ModuleType] = []
    for module in built:
        assert not isinstance(module, type(None)) and hasattr(module, "call")
        modules.append(module)  # type: ignore[arg-type]
    return modules


def _kernel_compile_error(error: rt.BuildError, graph: Graph) -> KernelCompileError:
    text = str(graph)
    graph_path = f"{error.source_path}.graph.txt"
    try:
        with open(graph_path, "w") as file:
            file.write(text + "\n")
    except OSError:
        graph_path = "(could not be written)"
    indented = "\n".join(f"    {line}" for line in text.splitlines())
    stderr = "\n".join(f"    {line}" for line in error.stderr.strip().splitlines()[:40])
    message = (
        "the C compiler rejected the code numpile's inductor generated for a graph; this is a "
        "numpile bug: please report it with the two files below (compile with "
        "backend='eager' meanwhile)\n"
        f"  kernel source: {error.source_path}\n"
        f"  graph: {graph_path}\n{indented}\n"
        f"  compiler output:\n{stderr}"
    )
    return KernelCompileError(
        message,
        source_path=error.source_path,
        command=error.command,
        stderr=error.stderr,
        graph=text,
    )


def _write_debug(
    config: InductorConfig, graph: Graph, module_name: str, files: dict[str, str]
) -> None:
    named = {"graph.txt": str(graph), **files}
    if config.graph_diagram:
        named["graph.dot"] = graph_dot(graph)
    write_debug_files(debug_folder(config.debug_dir, module_name), named)
