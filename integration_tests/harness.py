"""The differential harness: run a NumPy program eagerly and compiled, and compare everything.

A *program* is an ordinary Python function that uses NumPy, registered with an input factory::

    from harness import program

    @program("elementwise", lambda rng, n: (rng.standard_normal((n, 3)),))
    def sin_plus_one(x):
        return np.sin(x) + 1.0

``run_program(prog, compile_fn, backend)`` then builds two independent copies of the inputs, runs
``prog.fn`` eagerly on one and ``compile_fn(prog.fn, backend=backend, fullgraph=...)`` on the
other, and compares: output structure and leaf types, array values (bit-exact for the ``eager``
backend, NaN positions and signed zeros included; within a documented tolerance for other
backends), dtypes, shapes, the inputs afterwards (in-place effects), aliasing between outputs and
inputs (``np.shares_memory`` and identity, and the exact view geometry when they alias), and
raised exceptions (type and message). The compiled function is called twice with the same shapes
(the second call should hit the cache) and once more with other shapes when the factory makes them
(a recompile, or a hit of a dynamic-shape entry).

Copies are made by calling the deterministic factory again with the same seed rather than with
``copy.deepcopy``: a deep copy of a negative-stride or non-contiguous view is contiguous, and two
arguments that view one buffer would stop sharing it. The harness checks that the factory really
is deterministic (same values, dtypes, shapes and strides each time).
"""

from __future__ import annotations

import functools
import logging
import os
import re
import sys
import traceback
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import numpy as np

logger = logging.getLogger("numpile.integration_tests")

Factory = Callable[[np.random.Generator, int], Any]
CompileFn = Callable[..., Callable[..., Any]]

#: Every registered program, in registration order (the program modules append to it on import).
PROGRAMS: list[Program] = []

#: The themes, in the order the corpus reports them; a program's theme must be one of these.
THEMES: tuple[str, ...] = (
    "elementwise",
    "broadcasting",
    "reductions",
    "views",
    "creation",
    "joins",
    "linalg",
    "dtypes",
    "special_inputs",
    "python",
    "scalars",
    "invalid",
    "loops",
    "unseen_loops",
    "library",
    "data_dependent",
    "scatter",
    "unseen_arrays",
)

#: Modules that hold the programs, imported by ``load_corpus``.
PROGRAM_MODULES: tuple[str, ...] = tuple(f"programs_{theme}" for theme in THEMES)

# Tolerances used for backends other than "eager" (which must be bit-exact), keyed by the kind of
# float (complex uses its component's). A fused or reordered reduction, a vectorized libm (glibc's
# libmvec is within 4 ulp) or FMA contraction moves the last bits; these bounds still catch a
# wrong index, a wrong dtype round trip or a dropped term. Integers and bools are always exact.
INEXACT_TOLERANCE: dict[str, tuple[float, float]] = {
    "float16": (1e-3, 1e-3),
    "float32": (1e-5, 1e-6),
    "float64": (1e-7, 1e-10),
    "longdouble": (1e-7, 1e-10),
}

_NUMPY_FP_WARNING = re.compile(
    r"(invalid value|divide by zero|overflow) encountered|Mean of empty slice|Degrees of freedom"
)


@attrs.frozen
class Inputs:
    """Positional and keyword arguments made by a factory.

    A factory may return a plain tuple (positional arguments only) or an ``Inputs``:

    >>> Inputs((np.ones(3),), {"axis": 0}).kwargs
    {'axis': 0}
    """

    args: tuple[Any, ...]
    kwargs: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class Program:
    """One corpus entry: a NumPy function, its input factory and how to compare it.

    ``sizes`` are the values of ``n`` passed to the factory: the first for the first two calls,
    each later one for one resized call (skipped when it produces the shapes of an earlier
    call). ``rtol``/``atol`` override ``INEXACT_TOLERANCE`` for non-eager backends.
    ``expect_error`` marks an invalid program: eager must raise, and compiled must raise the
    same type (and message unless ``check_message`` is false). ``slow`` marks the program's
    tests with the ``slow`` pytest marker (``-m "not slow"`` leaves them out).

    >>> Program("p", "views", lambda x: x.T, lambda rng, n: (np.ones((n, 2)),)).sizes
    (4, 7)
    """

    name: str
    theme: str
    fn: Callable[..., Any]
    make_inputs: Factory
    sizes: tuple[int, ...] = (4, 7)
    fullgraph: bool = True
    rtol: float | None = None
    atol: float | None = None
    expect_error: bool = False
    check_message: bool = True
    slow: bool = False

    @property
    def id(self) -> str:
        """``theme/name``, the pytest id.

        >>> Program("p", "views", abs, lambda rng, n: ()).id
        'views/p'
        """
        return f"{self.theme}/{self.name}"

    def inputs(self, n: int, seed: int = 0) -> Inputs:
        """A fresh copy of the inputs for size ``n`` (the factory run on a fresh seeded rng).

        >>> Program("p", "views", abs, lambda rng, n: (n,)).inputs(3).args
        (3,)
        """
        made = self.make_inputs(np.random.default_rng(seed), n)
        if isinstance(made, Inputs):
            return made
        if not isinstance(made, tuple):
            raise TypeError(f"factory of {self.id} must return a tuple or Inputs, got {made!r}")
        return Inputs(made)


def program(
    theme: str,
    inputs: Factory,
    *,
    sizes: tuple[int, ...] = (4, 7),
    fullgraph: bool = True,
    rtol: float | None = None,
    atol: float | None = None,
    expect_error: bool = False,
    check_message: bool = True,
    slow: bool = False,
    name: str | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated function as a corpus program and return it unchanged.

    >>> @program("elementwise", lambda rng, n: (rng.standard_normal(n),), name="doc_example")
    ... def twice(x):
    ...     return x * 2
    >>> PROGRAMS.pop().name
    'doc_example'
    """
    if theme not in THEMES:
        raise ValueError(f"unknown theme {theme!r}; expected one of {THEMES}")

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        entry = Program(
            name=name or fn.__name__,
            theme=theme,
            fn=fn,
            make_inputs=inputs,
            sizes=sizes,
            fullgraph=fullgraph,
            rtol=rtol,
            atol=atol,
            expect_error=expect_error,
            check_message=check_message,
            slow=slow,
        )
        if any(p.id == entry.id for p in PROGRAMS):
            raise ValueError(f"program {entry.id} registered twice")
        PROGRAMS.append(entry)
        return fn

    return register


def loop_inputs(name: str, n: int) -> tuple[Any, ...]:
    """Fresh inputs (arrays copied) of the loops-theme program `name` at size `n`."""
    import programs_loops  # late: the corpus modules register into this one

    fn = getattr(programs_loops, name)
    (prog,) = [p for p in PROGRAMS if p.fn is fn and p.theme == "loops"]
    inputs = prog.make_inputs(np.random.default_rng(n), n)
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in inputs)


def compile_kept_loop(name: str) -> Callable[..., Any]:
    """The loops-theme program `name` compiled whole (`fullgraph`, `dynamic`), after checking
    that `explain` keeps every loop of it and finds no graph break."""
    import programs_loops  # late: as in `loop_inputs`

    import numpile

    fn = getattr(programs_loops, name)
    out = numpile.explain(fn)(*loop_inputs(name, 7))
    assert out.loops_not_kept == ()
    assert out.graph_break_count == 0
    compiled: Callable[..., Any] = numpile.compile(fn, fullgraph=True, dynamic=True)
    return compiled


def per_iteration_hints(records: list[logging.LogRecord]) -> list[str]:
    """The performance hints among `records` that say a loop body ran with NumPy per
    iteration (a loop not run as C)."""
    return [r.getMessage() for r in records if "per iteration" in r.getMessage()]


def load_corpus() -> list[Program]:
    """Import every program module once and return the registry.

    >>> len(load_corpus()) >= 160
    True
    """
    import importlib

    for module in PROGRAM_MODULES:
        importlib.import_module(module)
    return PROGRAMS


# ---------------------------------------------------------------------------------------------
# Running


@attrs.frozen
class Outcome:
    """What one call did: its result or its exception, and the inputs afterwards.

    >>> Outcome(result=1, error=None, inputs=Inputs(())).raised
    False
    """

    result: Any
    error: BaseException | None
    inputs: Inputs
    warnings: tuple[str, ...] = ()
    numpy_warnings: tuple[str, ...] = ()

    @property
    def raised(self) -> bool:
        """Whether the call raised.

        >>> Outcome(None, ValueError("x"), Inputs(())).raised
        True
        """
        return self.error is not None


def call(fn: Callable[..., Any], inputs: Inputs) -> Outcome:
    """Call ``fn`` on ``inputs``; keep its result or exception and the (maybe mutated) inputs.

    NumPy's floating-point RuntimeWarnings are recorded (every one, with its line), not shown.

    >>> call(lambda x: x + 1, Inputs((1,))).result
    2
    >>> call(lambda x: x / 0.0, Inputs((np.ones(2),))).numpy_warnings[0]
    'RuntimeWarning: divide by zero encountered in divide (line 1)'
    """
    recorder = _LogRecorder()
    numpile_logger = logging.getLogger("numpile")
    numpile_logger.addHandler(recorder)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result = fn(*inputs.args, **inputs.kwargs)
            except Exception as error:
                result, failure = None, error
                if os.environ.get("NUMPILE_CORPUS_TRACEBACK") == "1":
                    traceback.print_exception(error, file=sys.stderr)
            else:
                failure = None
    finally:
        numpile_logger.removeHandler(recorder)
    return Outcome(result, failure, inputs, tuple(recorder.messages), _numpy_warnings(caught))


def call_on_gpu(fn: Callable[..., Any], inputs: Inputs) -> Outcome:
    """`call`, with every NumPy array of the inputs on the GPU (a CuPy array of the same
    layout), and everything brought back as NumPy arrays for the comparison.

    What the call did to the device copies is what it did to the inputs: results that
    are inputs or views of them come back as the inputs or views of their memory, writes
    into inputs are copied back, and lists and dicts of the inputs are updated in place.
    Inputs CuPy cannot hold (object or non-native byte-order arrays) keep every array of
    the call on the host. Needs CuPy and a GPU (``NUMPILE_CORPUS_DEVICE=cupy``).
    """
    import numpile_runtime as rt

    arrays = [leaf for _, leaf in _leaves(inputs) if isinstance(leaf, np.ndarray)]
    if not all(a.dtype.isnative and a.dtype.kind in "biufc" for a in arrays):
        return call(fn, inputs)
    copies = rt.upload(arrays)  # in `_leaves` order, which `upload` below walks again
    devices = iter(copies)

    def upload(value: Any) -> Any:
        if isinstance(value, np.ndarray):
            return next(devices).device
        return _map_in_place(value, upload)

    on_device = Inputs(upload(list(inputs.args)), upload(dict(inputs.kwargs)))
    outcome = call(fn, Inputs(tuple(on_device.args), on_device.kwargs))
    for copy in copies:
        copy.write_back()
    fresh: dict[int, Any] = {}

    def download(value: Any) -> Any:
        if rt.is_device_array(value):
            return rt.download(value, copies, fresh)
        return _map_in_place(value, download)

    for value in (*on_device.args, *on_device.kwargs.values()):
        download(value)  # lists and dicts of the inputs, in place
    result = download(outcome.result)
    return attrs.evolve(outcome, result=result, inputs=inputs)


def _map_in_place(value: Any, fn: Callable[[Any], Any]) -> Any:
    # Lists and dicts are updated in place (the caller may hold them), tuples rebuilt.
    if isinstance(value, list):
        value[:] = [fn(v) for v in value]
    elif isinstance(value, dict):
        for key in list(value):
            value[key] = fn(value[key])
    elif isinstance(value, tuple):
        return (
            type(value)(*(fn(v) for v in value))
            if hasattr(value, "_fields")
            else tuple(fn(v) for v in value)
        )
    return value


# Programs whose eager code, run on CuPy arrays, does what CuPy does rather than what NumPy
# does (CuPy's documented differences), or that mix in host arrays CuPy rejects. The corpus
# run on CuPy arrays skips them; they run compiled on the GPU from NumPy inputs instead.
CUPY_DIFFERS = {
    "breaks/errstate_raise_caught_in_try": "CuPy ignores np.errstate: nothing raises",
    "breaks/errstate_raises_on_division_by_zero": "CuPy ignores np.errstate: nothing raises",
    "breaks/integer_negative_power_caught": "CuPy computes integers to negative powers",
    "breaks/fancy_index_out_of_bounds_caught": "CuPy wraps out-of-bounds indices (eager code)",
    "breaks/fancy_assignment_out_of_bounds_caught": "CuPy wraps out-of-bounds indices",
    "breaks/nanargmax_of_all_nan_row_caught": "CuPy's nanargmax does not raise on all-NaN rows",
    "breaks/numpy_generator_inside": "mixes NumPy's generator's host arrays with CuPy arrays",
    "breaks/read_global_array_after_break": "mixes a global host array with CuPy arrays",
    "breaks/inv_of_singular_matrix_caught": "CuPy's inv does not raise on a singular matrix",
}
# Differences of numpile's own GPU kernels from NumPy, known and not yet fixed: on a GPU the
# corpus expects these programs to differ, and fails once one matches (remove it then).
GPU_KNOWN = {
    "special_inputs/negative_zero_sum_and_max": "Triton's tl.sum of -0.0s gives +0.0",
}


def corpus_device() -> str:
    """Where compiled calls get their arrays: ``"cpu"``, or ``"cupy"`` (the GPU) when
    ``NUMPILE_CORPUS_DEVICE=cupy``.

    >>> corpus_device() in ("cpu", "cupy")
    True
    """
    return os.environ.get("NUMPILE_CORPUS_DEVICE", "cpu")


def _numpy_warnings(caught: list[warnings.WarningMessage]) -> tuple[str, ...]:
    # NumPy's floating-point warnings. Those of ufunc loops ("... encountered in ...") name
    # the line that called the ufunc, which compiled code must name too. NumPy's Python-level
    # ones ("Mean of empty slice") count wrapper frames (stacklevel), which differ between
    # `x.mean()` and `np.mean(x)`; only their text is compared.
    texts = []
    for item in caught:
        text = str(item.message)
        if issubclass(item.category, RuntimeWarning) and _NUMPY_FP_WARNING.search(text):
            line = f" (line {item.lineno})" if " encountered in " in text else ""
            texts.append(f"{item.category.__name__}: {text}{line}")
    return tuple(texts)


class _LogRecorder(logging.Handler):
    # Warnings that numpile's loggers emit during a compiled call: a capture that crashed and
    # silently fell back to eager logs one, which a fullgraph program must never do.
    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(f"{record.name}: {record.getMessage()}")


def run_program(prog: Program, compile_fn: CompileFn, backend: str) -> list[str]:
    """Run ``prog`` eagerly and compiled (three calls); return every difference found.

    An empty list means compiled matched eager on every call.

    >>> prog = Program("p", "views", lambda x: x.T, lambda rng, n: (np.ones((n, 2)),))
    >>> run_program(prog, lambda fn, **kw: fn, "eager")
    []
    """
    compiled = compile_fn(prog.fn, backend=backend, fullgraph=prog.fullgraph)
    # GPU kernels follow CuPy, which gives no floating-point warnings: only CPU backends
    # must give NumPy's.
    on_gpu = corpus_device() == "cupy"
    comparison = _Comparison(
        exact=backend == "eager" and not on_gpu,
        rtol=prog.rtol,
        atol=prog.atol,
        warnings=backend != "triton" and not on_gpu,
        cupy=on_gpu,
    )
    call_compiled = call_on_gpu if on_gpu else call
    problems: list[tuple[str, str]] = []
    first: tuple[Outcome, Outcome] | None = None
    for label, n, seed in _call_plan(prog):
        eager_inputs = prog.inputs(n, seed)
        compiled_inputs = prog.inputs(n, seed)
        _check_deterministic(prog, eager_inputs, compiled_inputs)
        eager = call(prog.fn, eager_inputs)
        if prog.expect_error and not eager.raised:
            raise AssertionError(f"{prog.id} is marked expect_error but eager did not raise")
        if not prog.expect_error and eager.raised:
            raise AssertionError(f"{prog.id} raised eagerly: {eager.error!r}") from eager.error
        got = call_compiled(compiled, compiled_inputs)
        problems += [(label, p) for p in compare_outcomes(eager, got, comparison, prog)]
        first = first or (eager, got)
    if first is not None and not first[0].raised and not first[1].raised:
        # A compiled function must not hand out a buffer it reuses: call 1's result must be
        # untouched by the later calls.
        later = compare_trees(first[0].result, first[1].result, comparison)
        problems += [("after all calls", f"output of call 1 changed{p}") for p in later]
    return _group_by_text(problems)


def _group_by_text(problems: list[tuple[str, str]]) -> list[str]:
    # The same difference on every call is reported once, naming the calls.
    labels: dict[str, list[str]] = {}
    for label, text in problems:
        labels.setdefault(text, []).append(label)
    return [f"{', '.join(where)}: {text}" for text, where in labels.items()]


def _check_deterministic(prog: Program, one: Inputs, two: Inputs) -> None:
    differences = compare_trees(one, two, _Comparison(exact=True))
    if differences or _layout(one) != _layout(two):
        raise AssertionError(f"factory of {prog.id} is not deterministic: {differences}")


def _layout(inputs: Inputs) -> list[Any]:
    arrays = _array_leaves(inputs)
    own = [(a.strides, a.flags.writeable) for _, a in arrays]
    shared = [[_relation(a, b)[0] for _, b in arrays] for _, a in arrays]
    return [own, shared]


def _call_plan(prog: Program) -> list[tuple[str, int, int]]:
    # (label, n, seed): call 2 has the shapes of call 1 but other values (seed 1), so a cache hit
    # that baked in call 1's data, or a reused output buffer, shows up. Each later size is one
    # more call, skipped when its shapes are those of an earlier call.
    first = prog.sizes[0]
    plan = [("call 1 (compile)", first, 0), ("call 2 (cache hit, new values)", first, 1)]
    seen = [_shapes(prog.inputs(first))]
    for n in prog.sizes[1:]:
        shapes = _shapes(prog.inputs(n))
        if shapes in seen:
            continue
        seen.append(shapes)
        plan.append((f"call {len(plan) + 1} (resized, n={n})", n, len(plan)))
    return plan


def _shapes(inputs: Inputs) -> list[Any]:
    return [getattr(leaf, "shape", type(leaf)) for _, leaf in _leaves(inputs)]


# ---------------------------------------------------------------------------------------------
# Comparing


@attrs.frozen
class _Comparison:
    exact: bool
    rtol: float | None = None
    atol: float | None = None
    warnings: bool = True  # compare NumPy's floating-point warnings
    # The compiled call ran on CuPy arrays: CuPy gives 0-d arrays where NumPy gives scalars,
    # has no read-only arrays, and words its errors its own way.
    cupy: bool = False

    def tolerance(self, dtype: np.dtype[Any]) -> tuple[float, float]:
        component = np.empty(0, dtype).real.dtype
        name = "longdouble" if component == np.longdouble else component.name
        rtol, atol = INEXACT_TOLERANCE.get(name, (0.0, 0.0))
        return (rtol if self.rtol is None else self.rtol, atol if self.atol is None else self.atol)


def compare_outcomes(
    eager: Outcome, got: Outcome, comparison: _Comparison, prog: Program
) -> list[str]:
    """Differences between an eager and a compiled call (results, errors, inputs, aliasing)."""
    problems: list[str] = []
    if prog.fullgraph:
        problems += [f"numpile logged a warning: {message}" for message in got.warnings]
    if eager.raised or got.raised:
        check_message = prog.check_message and not comparison.cupy
        problems += _compare_errors(
            eager.error, got.error, check_message=check_message, base_type=comparison.cupy
        )
    if comparison.warnings and eager.numpy_warnings != got.numpy_warnings:
        problems.append(f"NumPy warnings differ: {eager.numpy_warnings} vs {got.numpy_warnings}")
    else:
        problems += [f"output{p}" for p in compare_trees(eager.result, got.result, comparison)]
        problems += _compare_aliasing(eager, got, writeable=not comparison.cupy)
        if comparison.exact:
            problems += _compare_fresh_layout(eager, got)
    problems += [
        f"inputs after the call{p}" for p in compare_trees(eager.inputs, got.inputs, comparison)
    ]
    return problems


def _compare_errors(
    eager: BaseException | None,
    got: BaseException | None,
    *,
    check_message: bool,
    base_type: bool = False,
) -> list[str]:
    # `base_type`: a built-in base class of NumPy's exception other than Exception will do
    # (CuPy raises TypeError where NumPy raises its subclass UFuncTypeError).
    if eager is None:
        return [f"compiled raised {_describe_error(got)} but eager returned normally"]
    if got is None:
        return [f"eager raised {_describe_error(eager)} but compiled returned normally"]
    builtin_base = (
        type(got).__module__ == "builtins"
        and type(got) is not Exception
        and isinstance(eager, type(got))
    )
    same = type(eager) is type(got) or (base_type and builtin_base)
    if not same:
        return [f"eager raised {_describe_error(eager)}, compiled raised {_describe_error(got)}"]
    if check_message and str(eager) != str(got):
        return [f"same {type(eager).__name__}, messages differ: {str(eager)!r} vs {str(got)!r}"]
    return []


def _describe_error(error: BaseException | None) -> str:
    if error is None:
        return "nothing"
    return f"{type(error).__module__}.{type(error).__qualname__}({str(error)!r})"


def _leaves(tree: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(tree, Inputs):
        yield from _leaves(tree.args, f"{path}.args")
        yield from _leaves(tree.kwargs, f"{path}.kwargs")
    elif isinstance(tree, tuple | list):
        for i, item in enumerate(tree):
            yield from _leaves(item, f"{path}[{i}]")
    elif isinstance(tree, dict):
        for key, item in tree.items():
            yield from _leaves(item, f"{path}[{key!r}]")
    else:
        yield path, tree


def compare_trees(eager: Any, got: Any, comparison: _Comparison, path: str = "") -> list[str]:
    """Differences between two pytrees of containers, arrays and scalars (`` at path: why``).

    >>> compare_trees((np.float64(1.0),), (np.array(1.0),), _Comparison(exact=True))
    ['[0]: type float64 vs ndarray']
    """
    where = path or " (top level)"
    if isinstance(eager, Inputs) and isinstance(got, Inputs):
        return compare_trees(eager.args, got.args, comparison, f"{path}.args") + compare_trees(
            eager.kwargs, got.kwargs, comparison, f"{path}.kwargs"
        )
    zero_d = isinstance(got, np.ndarray) and got.ndim == 0
    if comparison.cupy and isinstance(eager, np.generic) and zero_d:
        got = got[()]
    if type(eager) is not type(got):
        return [f"{where}: type {type(eager).__name__} vs {type(got).__name__}"]
    if isinstance(eager, tuple | list):
        if len(eager) != len(got):
            return [f"{where}: length {len(eager)} vs {len(got)}"]
        problems: list[str] = []
        for i, (a, b) in enumerate(zip(eager, got, strict=True)):
            problems += compare_trees(a, b, comparison, f"{path}[{i}]")
        return problems
    if isinstance(eager, dict):
        if list(eager) != list(got):
            return [f"{where}: keys {list(eager)} vs {list(got)}"]
        problems = []
        for key in eager:
            problems += compare_trees(eager[key], got[key], comparison, f"{path}[{key!r}]")
        return problems
    if isinstance(eager, np.ndarray | np.generic):
        return [f"{where}: {p}" for p in _compare_arrays(eager, got, comparison)]
    if isinstance(eager, bool | int | str | type(None)):
        return [] if eager == got else [f"{where}: {eager!r} vs {got!r}"]
    if isinstance(eager, float | complex):
        same = _compare_arrays(np.asarray(eager), np.asarray(got), comparison)
        return [f"{where}: {eager!r} vs {got!r}"] if same else []
    if isinstance(eager, np.random.Generator):
        # Two generators match when their states do (a compiled draw advances it as eager).
        same_state = eager.bit_generator.state == got.bit_generator.state
        return [] if same_state else [f"{where}: the generators' states differ"]
    return [] if eager == got else [f"{where}: {eager!r} vs {got!r}"]


def _compare_arrays(eager: Any, got: Any, comparison: _Comparison) -> list[str]:
    a = np.asarray(eager)
    b = np.asarray(got)
    if a.dtype != b.dtype:
        return [f"dtype {a.dtype} vs {b.dtype}"]
    if a.shape != b.shape:
        return [f"shape {a.shape} vs {b.shape}"]
    if a.size == 0:
        return []
    if a.dtype.kind in "fc":
        parts = [(a.real, b.real), (a.imag, b.imag)] if a.dtype.kind == "c" else [(a, b)]
        for x, y in parts:
            problem = _compare_floats(x, y, comparison)
            if problem:
                return [problem]
        return []
    if np.array_equal(a, b):
        return []
    return [f"values differ at {_first_difference(a, b)}"]


def _compare_floats(
    a: np.ndarray[Any, Any], b: np.ndarray[Any, Any], comparison: _Comparison
) -> str:
    nan_a = np.isnan(a)
    if not np.array_equal(nan_a, np.isnan(b)):
        return f"NaN positions differ at {_first_difference(nan_a, np.isnan(b))}"
    zero = (a == 0) & (b == 0)
    if not np.array_equal(np.signbit(a)[zero], np.signbit(b)[zero]):
        return "signed zeros differ (-0.0 vs 0.0)"
    if comparison.exact:
        if np.array_equal(a, b, equal_nan=True):
            return ""
        return f"values differ at {_first_difference(a, b)}"
    rtol, atol = comparison.tolerance(a.dtype)
    finite = ~nan_a
    x = a[finite].astype(np.float64)
    y = b[finite].astype(np.float64)
    if not np.array_equal(np.isinf(x), np.isinf(y)) or not np.array_equal(
        x[np.isinf(x)], y[np.isinf(y)]
    ):
        return "inf positions differ"
    with np.errstate(invalid="ignore"):  # inf - inf at matching infinities
        ok = np.isinf(x) | (np.abs(x - y) <= atol + rtol * np.abs(x))
    if ok.all():
        return ""
    worst = int(np.argmax(np.where(ok, 0.0, np.abs(x - y))))
    return (
        f"values differ beyond rtol={rtol}, atol={atol}: {x[worst]!r} vs {y[worst]!r} "
        f"({int((~ok).sum())} of {ok.size} elements)"
    )


def _first_difference(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> str:
    if a.ndim == 0:
        return f"(): {a[()]!r} vs {b[()]!r}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        differ = a != b
        if a.dtype.kind in "fc":
            differ &= ~(np.isnan(a) & np.isnan(b))
    index = tuple(int(i) for i in np.argwhere(differ)[0]) if differ.any() else ()
    return f"{index}: {a[index]!r} vs {b[index]!r}"


def _array_leaves(tree: Any) -> list[tuple[str, np.ndarray[Any, Any]]]:
    return [(path, leaf) for path, leaf in _leaves(tree) if isinstance(leaf, np.ndarray)]


def _address(array: np.ndarray[Any, Any]) -> int:
    return int(array.__array_interface__["data"][0])


def _relation(x: np.ndarray[Any, Any], y: np.ndarray[Any, Any]) -> tuple[Any, ...]:
    # Identity, memory overlap, and when they overlap the exact view geometry (offset, strides).
    if x is y:
        return ("is",)
    if not np.shares_memory(x, y):
        return ("disjoint",)
    return ("shares memory", _address(x) - _address(y), x.strides)


def _compare_aliasing(eager: Outcome, got: Outcome, *, writeable: bool = True) -> list[str]:
    problems: list[str] = []
    eager_out = _array_leaves(eager.result)
    got_out = _array_leaves(got.result)
    eager_in = _array_leaves(eager.inputs)
    got_in = _array_leaves(got.inputs)
    if len(eager_out) != len(got_out) or len(eager_in) != len(got_in):
        return []  # already reported as a structure difference
    for (out_path, e_out), (_, g_out) in zip(eager_out, got_out, strict=True):
        if writeable and e_out.flags.writeable != g_out.flags.writeable:
            problems.append(
                f"output{out_path} writeable is {e_out.flags.writeable} eagerly, "
                f"{g_out.flags.writeable} compiled"
            )
        for (in_path, e_in), (_, g_in) in zip(eager_in, got_in, strict=True):
            want = _relation(e_out, e_in)
            have = _relation(g_out, g_in)
            if want != have:
                problems.append(
                    f"aliasing of output{out_path or ''} with input{in_path}: "
                    f"eager {_say(want)}, compiled {_say(have)}"
                )
    for i, (path_i, e_i) in enumerate(eager_out):
        for j in range(i + 1, len(eager_out)):
            path_j, e_j = eager_out[j]
            want = _relation(e_i, e_j)
            have = _relation(got_out[i][1], got_out[j][1])
            if want != have:
                problems.append(
                    f"aliasing of output{path_i} with output{path_j}: "
                    f"eager {_say(want)}, compiled {_say(have)}"
                )
    return problems


def _say(relation: tuple[Any, ...]) -> str:
    if relation[0] == "shares memory":
        return f"shares memory (byte offset {relation[1]}, strides {relation[2]})"
    return str(relation[0])


def _compare_fresh_layout(eager: Outcome, got: Outcome) -> list[str]:
    # With the eager backend the graph runs the same NumPy calls, so fresh outputs keep NumPy's
    # memory order (C or Fortran) too; other backends may choose their own layout.
    problems: list[str] = []
    eager_out = _array_leaves(eager.result)
    got_out = _array_leaves(got.result)
    if len(eager_out) != len(got_out):
        return []
    for (path, a), (_, b) in zip(eager_out, got_out, strict=True):
        if a.ndim < 2 or a.size <= 1 or a.shape != b.shape:
            continue
        flags_a = (a.flags.c_contiguous, a.flags.f_contiguous)
        flags_b = (b.flags.c_contiguous, b.flags.f_contiguous)
        if flags_a != flags_b:
            problems.append(f"output{path} layout (C, F contiguous) {flags_a} vs {flags_b}")
    return problems


def standin_compile(
    fn: Callable[..., Any], *, backend: object = "eager", fullgraph: bool = False, **_: object
) -> Callable[..., Any]:
    """A compile that compiles nothing, to check the corpus itself without the real stack.

    >>> standin_compile(abs, backend="eager")(-2)
    2
    """

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return run


def examples(count: int) -> int:
    """How many examples a hypothesis test of generated programs draws: `count`, scaled by
    ``NUMPILE_EXAMPLES_FRACTION`` (CI's runs on 3.12 and 3.13 draw a third).

    >>> examples(30) if "NUMPILE_EXAMPLES_FRACTION" not in os.environ else 30
    30
    """
    fraction = float(os.environ.get("NUMPILE_EXAMPLES_FRACTION", "1"))
    return max(1, round(count * fraction))


def skip_unless_chosen(backend: str) -> None:
    """Skip a test of generated programs on `backend` when ``NUMPILE_CORPUS_BACKENDS`` leaves
    it out (on 3.12 and 3.13 CI runs them through capture alone, as it runs the corpus).

    >>> skip_unless_chosen("eager") if "eager" in corpus_backends() else None
    """
    chosen = [name for name in os.environ.get("NUMPILE_CORPUS_BACKENDS", "").split(",") if name]
    if chosen and backend not in chosen:
        import pytest

        pytest.skip(f"NUMPILE_CORPUS_BACKENDS={','.join(chosen)} leaves out {backend}")


def corpus_backends() -> list[str]:
    """``["eager"]``, plus ``"inductor"`` when ``numpile.list_backends()`` lists it.

    >>> corpus_backends()[0]
    'eager'
    """
    import numpile  # late: the registry and comparisons do not need the stack

    backends = ["eager"]
    list_backends = getattr(numpile, "list_backends", None)
    if list_backends is not None and "inductor" in list_backends():
        backends.append("inductor")
    # NUMPILE_CORPUS_BACKENDS=triton (nox -s tests-triton-interpret) runs only those backends.
    chosen = [name for name in os.environ.get("NUMPILE_CORPUS_BACKENDS", "").split(",") if name]
    return chosen or backends


def count_by_theme(programs: list[Program]) -> dict[str, int]:
    """How many programs each theme has, in ``THEMES`` order.

    >>> count_by_theme([])["views"]
    0
    """
    return {theme: sum(p.theme == theme for p in programs) for theme in THEMES}


# ---------------------------------------------------------------------------------------------
# Graph-breaking programs (issue 4): the "breaks" theme, and how many breaks explain() reports.

#: For each graph-breaking program's id, the number of graph breaks ``numpile.explain`` reports
#: when it runs the program once on the inputs of call 1 (``programs_breaks.py`` says how breaks
#: are counted).
EXPECTED_BREAKS: dict[str, int] = {}

THEMES = (*THEMES, "breaks")
PROGRAM_MODULES = (*PROGRAM_MODULES, "programs_breaks")


def breaking_program(
    inputs: Factory,
    *,
    expected_breaks: int,
    sizes: tuple[int, ...] = (4, 7),
    rtol: float | None = None,
    atol: float | None = None,
    expect_error: bool = False,
    name: str | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a program that graph-breaks: theme "breaks", compiled with ``fullgraph=False``.

    ``expected_breaks`` is recorded in ``EXPECTED_BREAKS`` under the program's id.

    >>> @breaking_program(lambda rng, n: (np.ones(n),), expected_breaks=1, name="doc_break")
    ... def shout(x):
    ...     print("hi")
    ...     return x
    >>> EXPECTED_BREAKS.pop(PROGRAMS.pop().id)
    1
    """
    if expected_breaks < 0:
        raise ValueError(f"expected_breaks must be >= 0, got {expected_breaks}")
    register = program(
        "breaks",
        inputs,
        sizes=sizes,
        fullgraph=False,
        rtol=rtol,
        atol=atol,
        expect_error=expect_error,
        name=name,
    )

    def record(fn: Callable[..., Any]) -> Callable[..., Any]:
        register(fn)
        EXPECTED_BREAKS[PROGRAMS[-1].id] = expected_breaks
        return fn

    return record
