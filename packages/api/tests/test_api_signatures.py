"""A snapshot of numpile's public surface: changing it must be deliberate (update here)."""

from __future__ import annotations

import inspect

import numpile

EXPECTED_ALL = [
    "CompileProfiler",
    "DetachedFloatError",
    "NoCompilerWarning",
    "NumpilePerformanceWarning",
    "Unsupported",
    "allow_in_graph",
    "checkpoint",
    "compile",
    "compile_times",
    "config",
    "custom_jvp",
    "custom_vjp",
    "disable",
    "disallow_in_graph",
    "explain",
    "grad",
    "graph_break",
    "hessian",
    "is_compiling",
    "is_dynamo_compiling",
    "is_exporting",
    "jacfwd",
    "jacrev",
    "jvp",
    "keep_array_guards_unsafe",
    "linearize",
    "list_backends",
    "list_mode_options",
    "list_options",
    "mark_dynamic",
    "mark_static",
    "register_backend",
    "register_pytree_node",
    "reset",
    "set_logs",
    "set_stance",
    "skip_all_guards_unsafe",
    "skip_guard_on_globals_unsafe",
    "substitute_in_graph",
    "value_and_grad",
    "vjp",
    "vmap",
    "wait_for_compiles",
    "wrap_numpy",
]

EXPECTED_SIGNATURES = {
    "Unsupported": "(reason: 'str', filename: 'str | None' = None, lineno: 'int | None' = None)",
    "compile": (
        "(model: 'Callable[..., Any] | None' = None, *, fullgraph: 'bool' = False, "
        "dynamic: 'bool | None' = None, backend: 'str | BackendFn | None' = None, "
        "mode: 'str | None' = None, options: 'dict[str, Any] | None' = None, "
        "disable: 'bool' = False, device: 'str | None' = None) -> 'Any'"
    ),
    "explain": "(fn: 'Callable[..., Any]') -> 'Callable[..., ExplainOutput]'",
    "grad": (
        "(fn: 'Callable[..., Any]', argnums: 'int | Sequence[int]' = 0, has_aux: 'bool' = False, "
        "*, compiler: 'str | Compiler | None' = None, "
        "partitioner: 'str | Partitioner | None' = None) -> 'Callable[..., Any]'"
    ),
    "value_and_grad": (
        "(fn: 'Callable[..., Any]', argnums: 'int | Sequence[int]' = 0, has_aux: 'bool' = False, "
        "*, compiler: 'str | Compiler | None' = None, "
        "partitioner: 'str | Partitioner | None' = None) -> 'Callable[..., Any]'"
    ),
    "vjp": (
        "(fn: 'Callable[..., Any]', *primals: 'Any', has_aux: 'bool' = False, "
        "compiler: 'str | Compiler | None' = None, "
        "partitioner: 'str | Partitioner | None' = None) -> 'Any'"
    ),
    "is_compiling": "() -> 'bool'",
    "is_dynamo_compiling": "() -> 'bool'",
    "is_exporting": "() -> 'bool'",
    "wrap_numpy": "(fn: '_F') -> '_F'",
    "allow_in_graph": "(fn: '_F') -> '_F'",
    "disable": (
        "(fn: 'Callable[..., Any] | None' = None, recursive: 'bool' = True, *, "
        "reason: 'str | None' = None) -> 'Any'"
    ),
    "disallow_in_graph": "(fn: '_F') -> '_F'",
    "graph_break": "() -> 'None'",
    "substitute_in_graph": (
        "(original_fn: 'Callable[..., Any]', *, can_constant_fold_through: 'bool' = False, "
        "skip_signature_check: 'bool' = False) "
        "-> 'Callable[[Callable[..., Any]], Callable[..., Any]]'"
    ),
    "list_backends": (
        "(exclude_tags: 'Iterable[str] | None' = ('debug', 'experimental')) -> 'list[str]'"
    ),
    "list_mode_options": "(mode: 'str | None' = None) -> 'dict[str, Any]'",
    "list_options": "() -> 'list[str]'",
    "register_backend": (
        "(compiler_fn: 'BackendFn | None' = None, name: 'str | None' = None, "
        "tags: 'Sequence[str]' = ()) -> 'BackendFn | Callable[[BackendFn], BackendFn]'"
    ),
    "reset": "() -> 'None'",
    "wait_for_compiles": "(timeout: 'float | None' = None) -> 'bool'",
    "set_stance": (
        "(stance: 'str' = 'default', *, skip_guard_eval_unsafe: 'bool' = False, "
        "force_backend: 'str | BackendFn | None' = None) -> 'None'"
    ),
    "CompileProfiler": "() -> 'None'",
    "compile_times": "(repr: \"Literal['str', 'csv']\" = 'str') -> 'str'",
    "set_logs": "(spec: 'str') -> 'None'",
    "mark_dynamic": (
        "(x: 'Any', dim: 'int', *, min: 'int | None' = None, max: 'int | None' = None) -> 'None'"
    ),
    "mark_static": "(x: 'Any', dim: 'int') -> 'None'",
    "keep_array_guards_unsafe": "(entries: 'list[GuardFilterEntry]') -> 'list[bool]'",
    "skip_all_guards_unsafe": "(entries: 'list[GuardFilterEntry]') -> 'list[bool]'",
    "skip_guard_on_globals_unsafe": "(entries: 'list[GuardFilterEntry]') -> 'list[bool]'",
    "custom_jvp": "(fn: 'Callable[..., Any]') -> 'CustomJvp'",
    "custom_vjp": "(fn: 'Callable[..., Any]') -> 'CustomVjp'",
    "hessian": (
        "(fn: 'Callable[..., Any]', argnums: 'int | Sequence[int]' = 0, *, "
        "compiler: 'str | Compiler | None' = None) -> 'Callable[..., Any]'"
    ),
    "jacfwd": (
        "(fn: 'Callable[..., Any]', argnums: 'int | Sequence[int]' = 0, *, "
        "compiler: 'str | Compiler | None' = None) -> 'Callable[..., Any]'"
    ),
    "jacrev": (
        "(fn: 'Callable[..., Any]', argnums: 'int | Sequence[int]' = 0, *, "
        "compiler: 'str | Compiler | None' = None) -> 'Callable[..., Any]'"
    ),
    "jvp": (
        "(fn: 'Callable[..., Any]', primals: 'Sequence[Any]', tangents: 'Sequence[Any]', "
        "*, compiler: 'str | Compiler | None' = None, "
        "partitioner: 'str | Partitioner | None' = None) -> 'tuple[Any, Any]'"
    ),
    "linearize": (
        "(fn: 'Callable[..., Any]', *primals: 'Any', "
        "compiler: 'str | Compiler | None' = None, "
        "partitioner: 'str | Partitioner | None' = None) -> 'tuple[Any, Callable[..., "
        "Any]]'"
    ),
    "register_pytree_node": (
        "(cls: 'type', flatten: 'Callable[[Any], tuple[Iterable[Any], Any]]', "
        "unflatten: 'Callable[[Any, Iterable[Any]], Any]') -> 'type'"
    ),
    "vmap": (
        "(fn: 'Callable[..., Any]', in_axes: 'Axes' = 0, out_axes: 'Axes' = 0, *, "
        "backend: 'str | None' = None) -> 'Callable[..., Any]'"
    ),
    "checkpoint": "(fn: 'Callable[..., Any]') -> 'Callable[..., Any]'",
}

EXPECTED_CONFIG_FIELDS = {
    "cache_size_limit": 8,
    "default_backend": None,
    "suppress_errors": False,
    "verbose": False,
    "automatic_dynamic_shapes": True,
    "duck_shape": True,
    "specialize_int": False,
    "specialize_float": False,
    "performance_warnings": True,
    "small_loops_in_python": True,
    "dynamic_loop_arrays": False,
}


def test_all_is_the_snapshot() -> None:
    assert sorted(numpile.__all__) == EXPECTED_ALL
    for name in numpile.__all__:
        assert hasattr(numpile, name)


def test_public_signatures_are_the_snapshot() -> None:
    actual = {name: str(inspect.signature(getattr(numpile, name))) for name in EXPECTED_SIGNATURES}
    assert actual == EXPECTED_SIGNATURES


def test_config_fields_are_the_snapshot() -> None:
    import attrs

    defaults = {field.name: field.default for field in attrs.fields(type(numpile.config))}
    assert defaults == EXPECTED_CONFIG_FIELDS


def test_public_names_have_docstrings_with_an_example() -> None:
    names = ("compile", "list_backends", "register_backend", "set_stance")
    names += ("allow_in_graph", "disable", "disallow_in_graph", "graph_break")
    names += ("substitute_in_graph", "wrap_numpy", "is_dynamo_compiling", "is_exporting")
    for name in names:
        doc = inspect.getdoc(getattr(numpile, name)) or ""
        assert ">>>" in doc, name


def test_compile_reset_is_reset() -> None:
    # The seeds spell it `torch.compile.reset()`.
    assert numpile.compile.reset is numpile.reset


def test_the_full_stack_compiles_with_the_inductor_by_default() -> None:
    # The default comes from the entry points installed (numpile_inductor's), not from an
    # assignment when numpile is imported.
    assert numpile.config.default_backend is None
    assert "inductor" in numpile.list_backends()
    compiled = numpile.compile(lambda x: x + 1)
    assert compiled.backend == "inductor"  # type: ignore[attr-defined]
