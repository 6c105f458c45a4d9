"""The harness itself: the corpus is well formed, and every comparison catches what it should.

Each "wrong compiler" below breaks one NumPy guarantee; the harness must report it.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from harness import (
    PROGRAM_MODULES,
    THEMES,
    Inputs,
    Program,
    _compare_errors,
    count_by_theme,
    load_corpus,
    run_program,
    standin_compile,
)

PROGRAMS = load_corpus()


def _wrong(transform: Callable[[Any], Any]) -> Callable[..., Callable[..., Any]]:
    # A "compiler" that runs the function eagerly and then corrupts its result.
    def compile_(fn: Callable[..., Any], **_: object) -> Callable[..., Any]:
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            return transform(fn(*args, **kwargs))

        return run

    return compile_


def _prog(fn: Callable[..., Any], make: Callable[..., Any], **options: Any) -> Program:
    return Program("probe", "elementwise", fn, make, **options)


def _vec(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    return (rng.standard_normal(n),)


def test_corpus_has_enough_programs_in_every_theme() -> None:
    counts = count_by_theme(PROGRAMS)
    assert len(PROGRAMS) >= 160
    assert all(counts[theme] >= 10 for theme in THEMES), counts
    assert len(PROGRAM_MODULES) == len(THEMES)


def test_program_ids_are_unique() -> None:
    ids = [p.id for p in PROGRAMS]
    assert len(ids) == len(set(ids))


def test_standin_compiler_matches_every_program() -> None:
    # The corpus itself: every factory is deterministic and every valid program runs eagerly.
    failures = {p.id: run_program(p, standin_compile, "eager") for p in PROGRAMS}
    assert {k: v for k, v in failures.items() if v} == {}


def test_value_difference_of_one_ulp_is_caught_for_eager() -> None:
    prog = _prog(lambda x: x * 2.0, _vec)
    problems = run_program(prog, _wrong(lambda r: np.nextafter(r, np.inf)), "eager")
    assert problems and "values differ" in problems[0]


def test_one_ulp_is_tolerated_and_large_error_caught_for_other_backends() -> None:
    prog = _prog(lambda x: x * 2.0, _vec)
    assert run_program(prog, _wrong(lambda r: np.nextafter(r, np.inf)), "inductor") == []
    problems = run_program(prog, _wrong(lambda r: r * 1.001), "inductor")
    assert problems and "beyond rtol" in problems[0]


def test_dtype_difference_is_caught() -> None:
    prog = _prog(lambda x: x * 2.0, _vec)
    problems = run_program(prog, _wrong(lambda r: r.astype(np.float32)), "eager")
    assert "dtype float64 vs float32" in problems[0]


def test_numpy_scalar_versus_zero_d_array_is_caught() -> None:
    prog = _prog(lambda x: x.sum(), _vec)
    problems = run_program(prog, _wrong(np.asarray), "eager")
    assert "type float64 vs ndarray" in problems[0]


def test_container_type_is_caught() -> None:
    prog = _prog(lambda x: (x, x + 1), _vec)
    problems = run_program(prog, _wrong(list), "eager")
    assert "type tuple vs list" in problems[0]


def test_nan_position_and_signed_zero_are_caught() -> None:
    prog = _prog(lambda x: x * 0.0, lambda rng, n: (np.array([-1.0, 1.0, np.nan]),))
    problems = run_program(prog, _wrong(np.abs), "eager")
    assert "signed zeros differ" in problems[0]
    problems = run_program(prog, _wrong(lambda r: np.nan_to_num(r)), "inductor")
    assert "NaN positions differ" in problems[0]


def test_copy_instead_of_view_is_caught() -> None:
    prog = _prog(lambda x: x[::-1], _vec)
    problems = run_program(prog, _wrong(np.copy), "eager")
    assert any("aliasing of output with input.args[0]" in p for p in problems)


def test_wrong_view_geometry_is_caught() -> None:
    prog = _prog(lambda x: x[1:], lambda rng, n: (np.zeros(6),))
    compile_ = _wrong(lambda r: r.base[:-1])  # same values and memory, other offset
    problems = run_program(prog, compile_, "eager")
    assert any("byte offset 8" in p for p in problems)


def test_missing_input_mutation_is_caught() -> None:
    def mutate(x: np.ndarray) -> np.ndarray:
        x += 1.0
        return x

    def pure_compile(fn: Callable[..., Any], **_: object) -> Callable[..., Any]:
        return lambda x: fn(x.copy())

    problems = run_program(_prog(mutate, _vec), pure_compile, "eager")
    assert any(p.startswith("call 1 (compile): inputs after the call") for p in problems)
    assert any("aliasing" in p for p in problems)


def test_exception_type_and_message_are_compared() -> None:
    prog = _prog(lambda x: x + np.ones(x.shape[0] + 1), _vec, expect_error=True)

    def raise_(exception: BaseException) -> Callable[..., Callable[..., Any]]:
        def compile_(fn: Callable[..., Any], **_: object) -> Callable[..., Any]:
            def run(*args: Any) -> Any:
                raise exception

            return run

        return compile_

    assert (
        "compiled raised builtins.TypeError"
        in run_program(prog, raise_(TypeError("x")), "eager")[0]
    )
    assert "messages differ" in run_program(prog, raise_(ValueError("other")), "eager")[0]
    returned = run_program(prog, _wrong(lambda r: r), "eager")
    assert returned == []  # the stand-in re-raises NumPy's own error
    assert "returned normally" in run_program(prog, lambda fn, **_: np.negative, "eager")[0]


def test_resized_call_runs_only_when_shapes_change() -> None:
    seen: list[int] = []

    def record(x: np.ndarray) -> np.ndarray:
        seen.append(x.shape[0])
        return x

    run_program(_prog(record, _vec), standin_compile, "eager")
    assert seen == [4, 4, 4, 4, 7, 7]
    seen.clear()
    run_program(_prog(record, lambda rng, n: (np.ones(3),)), standin_compile, "eager")
    assert seen == [3, 3, 3, 3]


def test_non_deterministic_factory_is_rejected() -> None:
    counter = iter(range(100))
    prog = _prog(lambda x: x, lambda rng, n: (np.full(n, float(next(counter))),))
    with pytest.raises(AssertionError, match="not deterministic"):
        run_program(prog, standin_compile, "eager")


def test_factory_may_pass_keyword_arguments() -> None:
    prog = _prog(lambda x, *, k: x * k, lambda rng, n: Inputs((np.ones(n),), {"k": 2}))
    assert run_program(prog, standin_compile, "eager") == []
    problems = run_program(prog, _wrong(lambda r: r + 1), "eager")
    assert problems


def test_reused_output_buffer_is_caught() -> None:
    buffer = np.empty(4)

    def reusing_compile(fn: Callable[..., Any], **_: object) -> Callable[..., Any]:
        def run(x: np.ndarray) -> np.ndarray:
            np.multiply(x, 2.0, out=buffer)
            return buffer

        return run

    prog = _prog(lambda x: x * 2.0, lambda rng, n: (rng.standard_normal(4) + n,), sizes=(4, 5))
    problems = run_program(prog, reusing_compile, "eager")
    assert any("after all calls: output of call 1 changed" in p for p in problems)


def test_read_only_output_is_caught() -> None:
    def freeze(result: np.ndarray) -> np.ndarray:
        result.flags.writeable = False
        return result

    problems = run_program(_prog(lambda x: x + 1.0, _vec), _wrong(freeze), "eager")
    assert any("writeable is True eagerly, False compiled" in p for p in problems)


def test_result_baked_in_at_compile_time_is_caught() -> None:
    def memoizing_compile(fn: Callable[..., Any], **_: object) -> Callable[..., Any]:
        memo: list[Any] = []

        def run(x: np.ndarray) -> Any:
            if not memo:
                memo.append(fn(x))
            return memo[0]

        return run

    problems = run_program(_prog(lambda x: x * 2.0, _vec), memoizing_compile, "eager")
    assert any(p.startswith("call 2 (cache hit, new values): output") for p in problems)


def test_numpile_warning_logged_during_a_fullgraph_call_is_caught() -> None:
    def falling_back_compile(fn: Callable[..., Any], **_: object) -> Callable[..., Any]:
        def run(*args: Any) -> Any:
            logging.getLogger("numpile.capture").warning("capture crashed; running eagerly")
            return fn(*args)

        return run

    problems = run_program(_prog(lambda x: x + 1.0, _vec), falling_back_compile, "eager")
    assert any("numpile logged a warning: numpile.capture: capture crashed" in p for p in problems)
    graph_break = _prog(lambda x: x + 1.0, _vec, fullgraph=False)
    assert run_program(graph_break, falling_back_compile, "eager") == []


def test_on_cupy_only_a_builtin_base_of_numpys_exception_passes_for_it() -> None:
    # CuPy raises TypeError where NumPy raises UFuncTypeError: accepted on CuPy only;
    # Exception itself, another type, or the base class on the CPU are differences.
    a = np.zeros(2, int)
    with pytest.raises(TypeError) as caught:
        a += 1.5
    numpy_error = caught.value
    assert _compare_errors(numpy_error, TypeError("x"), check_message=False, base_type=True) == []
    for got, base_type in (
        (Exception("x"), True),
        (ValueError("x"), True),
        (TypeError("x"), False),
    ):
        assert _compare_errors(numpy_error, got, check_message=False, base_type=base_type)


def test_every_later_size_is_one_more_call() -> None:
    # A wrong answer at one trip count only (here: a loop run once, n=1) is caught only when
    # that size is called; a size repeating earlier shapes is not called again.
    seen: list[int] = []

    def wrong_once(fn: Callable[..., Any], **_: object) -> Callable[..., Any]:
        def run(x: np.ndarray) -> Any:
            seen.append(x.shape[0])
            return x + 3.0 if x.shape[0] == 1 else fn(x)

        return run

    prog = _prog(lambda x: x * 2.0, lambda rng, n: (np.ones(n),), sizes=(4, 1, 4, 0))
    problems = run_program(prog, wrong_once, "eager")
    assert seen == [4, 4, 1, 0]
    assert len(problems) == 1
    assert problems[0].startswith("call 3 (resized, n=1): output")
