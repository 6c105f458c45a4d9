"""What a call of a graph with a C loop costs around the loop's work: `x.shape[0]` is read in C
(no Python call), the wrapper leaves NumPy's allocator alone around a scalar loop function
(which sets the buffer pool itself where it calls NumPy: its snapshots and its run with
NumPy), and a nest of scalar work polls for signals once per `POLL_WORK` iterations of its
loops, inner ones included, not at every outer iteration: between chunks of its outer loop
where every iteration does the same known work, else through a work counter."""

from __future__ import annotations

import gc
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from crc_programs import crc32

from numpile_capture import compile_function
from numpile_inductor import buffer_pool_bytes, trim_buffer_pool
from numpile_inductor.codegen.c.buffer_pool import MIN_POOLED_BYTES
from numpile_inductor.codegen.c.loop_body import POLL_WORK
from numpile_inductor.codegen.c.loop_function import LOOP_FUNCTION


def _compiled(fn: Callable[..., Any], tmp_path: Path) -> Any:
    # `fn` compiled with symbolic sizes, its generated C written under tmp_path.
    options = {"trace.enabled": True, "trace.debug_dir": str(tmp_path / "debug")}
    return compile_function(fn, backend="inductor", options=options, dynamic=True)


def _loop_source(tmp_path: Path) -> str:
    # The C of the graph compiled last (folders are named by graph hash, so by write time).
    paths = sorted(tmp_path.glob("debug/*/output_code.c"), key=lambda p: p.stat().st_mtime_ns)
    sources = [p.read_text() for p in paths]
    found = [source for source in sources if "loop_v" in source]
    assert found, "no C loop function"
    return found[-1]


def _total(x: Any) -> Any:
    s = 0.0
    for i in range(x.shape[0]):
        s = s + x[i] * x[i]
    return s


def _column_total(A: Any) -> Any:
    B = A * 2.0  # a kernel's result: its dims are read in C too
    s = 0.0
    for i in range(B.shape[1]):
        s = s + B[0, i]
    return s


def test_shape_reads_that_bound_loops_run_as_c(tmp_path: Path, python_calls: Any) -> None:
    cases = [
        (_total, [np.arange(7.0), np.arange(5.0)[::-1], np.arange(9.0)]),
        (_column_total, [np.arange(12.0).reshape(3, 4), np.arange(10.0).reshape(2, 5)]),
    ]
    for k, (fn, inputs) in enumerate(cases):
        compiled = _compiled(fn, tmp_path / str(k))
        for x in inputs:
            compiled(x)  # compiles (once for the sizes, dynamic)
            got, called = python_calls(compiled, x)
            assert got == fn(x)
            assert type(got) is type(fn(x))
            assert "_dim_impl" not in called, called
        assert "PyArray_DIMS(" in _loop_source(tmp_path / str(k))


def test_the_wrapper_sets_no_allocator_around_a_scalar_loop_function(tmp_path: Path) -> None:
    assert _compiled(_total, tmp_path)(np.arange(7.0)) == _total(np.arange(7.0))
    lines = _loop_source(tmp_path).splitlines()
    calls = [k for k, line in enumerate(lines) if "= loop_v" in line and "(argv" in line]
    assert calls
    for k in calls:
        assert not any("PyDataMem_SetHandler" in line for line in lines[k - 3 : k + 3])


def _overflowing(x: Any, n: int) -> Any:
    # A Python int that leaves int64 after ~40 steps: the C loop bails, restores x from its
    # snapshot and runs with NumPy.
    c = 7
    for i in range(n):
        c = c * 3
        x[i] = x[i] + 1.0
    return c


def test_a_bailing_loop_takes_its_snapshot_from_the_buffer_pool(tmp_path: Path) -> None:
    x = np.zeros(MIN_POOLED_BYTES // 8 * 2)
    compiled = _compiled(_overflowing, tmp_path)
    assert compiled(x.copy(), 3) == _overflowing(x.copy(), 3)
    assert "np_loop_snapshot(" in _loop_source(tmp_path)
    trim_buffer_pool()
    mine, eager = x.copy(), x.copy()
    assert compiled(mine, 50) == _overflowing(eager, 50)
    np.testing.assert_array_equal(mine, eager)
    gc.collect()
    assert buffer_pool_bytes() >= x.nbytes  # the snapshot's block, back in the pool
    trim_buffer_pool()


def _escape_counts(cr: Any) -> Any:
    counts = np.zeros(cr.shape[0], dtype=np.int64)
    for p in range(cr.shape[0]):
        z = 0.0
        k = 0
        while k < 16 and z * z <= 4.0:
            z = z * z + cr[p]
            k += 1
        counts[p] = k
    return counts


def _row_sums(A: Any) -> Any:
    out = np.zeros(A.shape[0])
    for i in range(A.shape[0]):
        s = 0.0
        for j in range(A.shape[1]):
            s = s + A[i, j]
        out[i] = s
    return out


def test_a_scalar_nest_polls_for_signals_by_its_work(tmp_path: Path) -> None:
    cases = [
        (_escape_counts, np.linspace(-2.0, 0.5, 9)),
        (_row_sums, np.arange(12.0).reshape(3, 4)),
    ]
    for k, (fn, x) in enumerate(cases):
        np.testing.assert_array_equal(_compiled(fn, tmp_path / str(k))(x), fn(x))
        lines = _loop_source(tmp_path / str(k)).splitlines()
        polls = [n for n, line in enumerate(lines) if "PyErr_CheckSignals() < 0) { goto" in line]
        assert polls
        for n in polls:  # each poll under the work counter's test, none per iteration
            assert f">= {POLL_WORK}u" in lines[n - 2], lines[n - 3 : n + 1]
        source = "\n".join(lines)
        assert re.search(
            r"ticks\d+ \+= hi\d+ >= lo\d+" if fn is _row_sums else r"\+\+ticks\d+;", source
        )


# The head of an outer loop run in chunks between polls (loop_body's _chunked_head).
_CHUNKS = re.compile(r"\s*for \(int64_t chunk\d+ = ")


def _mix_up(x: Any, n: int) -> Any:
    # An order-sensitive fold (a rotate and an xor) over every third element, forwards.
    h = np.uint64(7)
    for i in range(0, n, 3):
        h = (h << np.uint64(5)) ^ (h >> np.uint64(59)) ^ x[i]
    return h


def _mix_down(x: Any, n: int) -> Any:
    # The same fold backwards by twos from n - 1, with a store per iteration.
    h = np.uint64(7)
    for i in range(n - 1, -1, -2):
        h = (h << np.uint64(5)) ^ (h >> np.uint64(59)) ^ x[i]
        x[i] = h
    return h


def _reads_past_the_end(x: Any, out: Any, n: int) -> Any:
    # Running sums (a carried value: the loop stays serial), reading one past the end at n.
    s = np.int64(0)
    for i in range(n):
        s = s + x[i + 1]
        out[i] = s
    return out


def test_a_nest_of_known_work_polls_between_chunks_of_its_outer_loop(tmp_path: Path) -> None:
    data = np.random.default_rng(3).integers(0, 256, 1500).astype(np.uint32)
    compiled = _compiled(crc32, tmp_path)
    for n in (0, 1, 454, 455, 456, 1500):  # chunks of POLL_WORK // 9 bytes (8 bits + 1)
        assert compiled(data[:n]) == crc32(data[:n])
    source = _loop_source(tmp_path)
    assert "ticks" not in source
    assert f"((int64_t){POLL_WORK // 9}LL)" in source
    lines = source.splitlines()
    polls = [n for n, line in enumerate(lines) if "PyErr_CheckSignals() < 0) { goto" in line]
    assert polls
    for n in polls:  # the first statement of each chunk
        assert _CHUNKS.match(lines[n - 1]), lines[n - 1]


def test_chunked_outer_loops_run_each_iteration_once_in_order(tmp_path: Path) -> None:
    x = np.random.default_rng(4).integers(0, 2**63, 3 * POLL_WORK + 7, dtype=np.uint64)
    for k, fn in enumerate((_mix_up, _mix_down)):
        compiled = _compiled(fn, tmp_path / str(k))
        for n in (0, 1, 2, 3 * POLL_WORK - 1, 3 * POLL_WORK, 3 * POLL_WORK + 1, x.shape[0]):
            mine, eager = x.copy(), x.copy()
            got, want = compiled(mine, n), fn(eager, n)
            assert got == want and type(got) is type(want), (fn.__name__, n)
            np.testing.assert_array_equal(mine, eager)
        assert _CHUNKS.search(_loop_source(tmp_path / str(k)))


def test_a_chunked_loop_raises_index_error_with_the_earlier_writes(tmp_path: Path) -> None:
    x = np.arange(POLL_WORK + 10, dtype=np.int64)
    compiled = _compiled(_reads_past_the_end, tmp_path)
    out = np.zeros_like(x)
    np.testing.assert_array_equal(compiled(x, out, 5), _reads_past_the_end(x, out.copy(), 5))
    mine, eager = np.zeros_like(x), np.zeros_like(x)
    with pytest.raises(IndexError) as got:
        compiled(x, mine, x.shape[0])
    with pytest.raises(IndexError) as want:
        _reads_past_the_end(x, eager, x.shape[0])
    assert str(got.value) == str(want.value)
    np.testing.assert_array_equal(mine, eager)
    assert _CHUNKS.search(_loop_source(tmp_path))


def _escape_steps(cr: Any, ci: Any, limit: int) -> Any:
    # An escape-time loop whose `while` may stop at any step (the limit or the escape test).
    counts = np.zeros(cr.shape[0], dtype=np.int64)
    for p in range(cr.shape[0]):
        zr = 0.0
        zi = 0.0
        k = 0
        while k < limit and zr * zr + zi * zi <= 4.0:
            zr, zi = zr * zr - zi * zi + cr[p], 2.0 * zr * zi + ci[p]
            k += 1
        counts[p] = k
    return counts


def test_a_loop_function_is_built_with_gcc_loop_unrolling(tmp_path: Path) -> None:
    # The unrolled `while` has an exit test per copy of its body: every step count from 0 to
    # the limit, at limits around any unrolling factor, gives eager's counts.
    rng = np.random.default_rng(5)
    cr, ci = rng.uniform(-2.0, 0.6, 400), rng.uniform(-1.2, 1.2, 400)
    compiled = _compiled(_escape_steps, tmp_path)
    for limit in (0, 1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 64):
        got, want = compiled(cr, ci, limit), _escape_steps(cr, ci, limit)
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype
    assert len(set(_escape_steps(cr, ci, 64).tolist())) > 20  # exits at many steps
    source = _loop_source(tmp_path)
    assert re.search(re.escape(LOOP_FUNCTION) + r" (NP_HIDDEN|static) PyObject \*loop_v", source)
