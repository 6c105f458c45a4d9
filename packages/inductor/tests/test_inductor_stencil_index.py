"""Views as index arithmetic (issue 24): compiled programs of slices, views of views,
negative steps, transposes, reshapes of slices, broadcasts and symbolic sizes against NumPy,
and the form of a stencil's indices (affine, no division) and its vectorized inner loops.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from vectorization_report import vectorized_lines

from numpile_capture import compile_function

Array = np.ndarray[Any, Any]


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _compiled(fn: Callable[..., Any], tmp_path: Path, **kwargs: Any) -> Callable[..., Any]:
    options = {"trace.enabled": True, "trace.debug_dir": str(tmp_path / "debug")}
    return compile_function(fn, backend="inductor", options=options, **kwargs)


def _check(fn: Callable[..., Any], tmp_path: Path, *args: Any, **kwargs: Any) -> None:
    got = _compiled(fn, tmp_path, **kwargs)(*args)
    np.testing.assert_allclose(got, fn(*args), rtol=1e-13, atol=0)


def _ir(tmp_path: Path) -> str:
    return "\n".join(p.read_text() for p in sorted(tmp_path.glob("debug/*/ir_post_fusion.txt")))


def views_of_views(a: Array) -> Array:
    return a[1:-1, 2:][::2, 1:] * 2.0 + a[2:, 3:][::2, :]


def negative_steps(a: Array) -> Array:
    return a[::-1, 1:-1] - a[:, ::-1][:, 1:-1] + a[-2::-2, 2:][:, ::-1].sum()


def transposes(a: Array, b: Array) -> Array:
    return a.T[1:, :-1] + b[:-1, 1:].T[::-1]


def reshape_of_slices(a: Array) -> Array:
    rows = a[1:-1].reshape(-1)[3:31]
    return (
        rows * 2.0
        + a[1:-1].reshape(-1, 3)[1:-1, ::2].reshape(-1)
        + a.reshape(8, 9)[1::2].T.reshape(-1)[:28]
    )


def broadcast_slices(a: Array, b: Array) -> Array:
    return a[1:-1, None, :] * b[None, 1:, 2:] + a[:-2, None, :]


def jacobi_3d(a: Array) -> Array:
    return (
        a[2:, 1:-1, 1:-1]
        + a[:-2, 1:-1, 1:-1]
        + a[1:-1, 2:, 1:-1]
        + a[1:-1, :-2, 1:-1]
        + a[1:-1, 1:-1, 2:]
        + a[1:-1, 1:-1, :-2]
    ) / 6.0


def limited_laplacian(a: Array) -> Array:
    lap = 4.0 * a[1:-1, 1:-1] - (a[2:, 1:-1] + a[:-2, 1:-1] + a[1:-1, 2:] + a[1:-1, :-2])
    flux = lap[1:, :] - lap[:-1, :]
    limited = np.where(flux * (a[2:-1, 1:-1] - a[1:-2, 1:-1]) > 0, 0.0, flux)
    return limited[1:, 1:-1] - limited[:-1, 1:-1]


def test_views_of_views(tmp_path: Path) -> None:
    _check(views_of_views, tmp_path, _rng().random((9, 11)))


def test_negative_steps(tmp_path: Path) -> None:
    _check(negative_steps, tmp_path, _rng().random((7, 8)))


def test_transposes(tmp_path: Path) -> None:
    rng = _rng()
    _check(transposes, tmp_path, rng.random((5, 6)), rng.random((5, 6)))


def test_reshapes_of_slices(tmp_path: Path) -> None:
    _check(reshape_of_slices, tmp_path, _rng().random((6, 12)))


def test_broadcast_slices(tmp_path: Path) -> None:
    rng = _rng()
    _check(broadcast_slices, tmp_path, rng.random((6, 5)), rng.random((4, 7)))


def test_slices_of_symbolic_sizes(tmp_path: Path) -> None:
    fn = _compiled(jacobi_3d, tmp_path, dynamic=True)
    for shape in [(5, 6, 7), (8, 4, 9)]:
        a = _rng().random(shape)
        np.testing.assert_allclose(fn(a), jacobi_3d(a), rtol=1e-13, atol=0)


@pytest.mark.parametrize(
    ("fn", "shapes"),
    [
        (views_of_views, [[(9, 8)], [(12, 7)]]),
        (negative_steps, [[(9, 8)], [(6, 11)]]),
        (broadcast_slices, [[(6, 5), (4, 7)], [(9, 3), (5, 5)]]),
        (jacobi_3d, [[(5, 6, 7)], [(8, 4, 9)]]),
    ],
)
def test_slices_of_symbolic_sizes_are_index_arithmetic(
    fn: Callable[..., Any], shapes: list[list[tuple[int, ...]]], tmp_path: Path
) -> None:
    # Under symbolic sizes each slice's start is an expression of them (`a[s0 - x0 - 1]`),
    # not a view NumPy computes before the kernel.
    compiled = _compiled(fn, tmp_path, dynamic=True)
    for arg_shapes in shapes:
        args = [_rng().random(shape) for shape in arg_shapes]
        np.testing.assert_allclose(compiled(*args), fn(*args), rtol=1e-13, atol=0)
    ir = _ir(tmp_path)
    assert "s0" in ir and "kernel" in ir, ir
    assert "extern getitem" not in ir, ir


def every_other_from_one(x: Array) -> Array:
    return x[1:2:2] * 2.0


def clamped_start(x: Array) -> Array:
    return x[-6:-4:3] * 2.0


# `x[1:2:2]` is one element; by its length alone it could start at 1 or at 0 (to a stop of
# 2), so the lowering refused it. `x[-6:-4:3]` is one element at size 5 (from 0: -6 clamps)
# and at sizes from 6 (from s0 - 6): by its length alone the lowering took s0 - 6 for both,
# before the array at size 5, and the two graphs printed alike (one cache key). Capture
# records where each starts.
@pytest.mark.parametrize(
    ("fn", "sizes", "loads"),
    [
        (every_other_from_one, (4, 7, 10), ["x[2*x0 + 1]"]),
        (clamped_start, (5, 8, 9), ["x[3*x0]", "x[s0 + 3*x0 - 6]"]),
    ],
)
def test_slices_start_where_capture_resolved_them(
    fn: Callable[..., Any], sizes: tuple[int, ...], loads: list[str], tmp_path: Path
) -> None:
    compiled = _compiled(fn, tmp_path, dynamic=True)
    for size in sizes:
        x = _rng().random(size)
        np.testing.assert_array_equal(compiled(x), fn(x))
    ir = _ir(tmp_path)
    assert all(load in ir for load in loads), ir
    assert "extern getitem" not in ir, ir


def test_non_contiguous_inputs_take_the_generic_strides(tmp_path: Path) -> None:
    a = _rng().random((10, 12, 14))
    fn = _compiled(jacobi_3d, tmp_path)
    np.testing.assert_allclose(fn(a), jacobi_3d(a), rtol=1e-13, atol=0)
    view = a[::2, :, ::-1]
    np.testing.assert_allclose(fn(view), jacobi_3d(view), rtol=1e-13, atol=0)


def test_stencil_indices_are_affine(tmp_path: Path) -> None:
    a = _rng().random((12, 11))
    fn = _compiled(limited_laplacian, tmp_path)
    np.testing.assert_allclose(fn(a), limited_laplacian(a), rtol=1e-13, atol=0)
    ir = _ir(tmp_path)
    assert "kernel" in ir
    assert "FloorDiv" not in ir and "ModularIndexing" not in ir, ir
    # a slice of an intermediate reads it at a shifted index, nothing more
    assert re.search(r"\[x0 \+ 1, x1 \+ 1\]", ir), ir


def _fast_kernel_lines(source: str) -> dict[str, tuple[int, int]]:
    # Line spans (1-based) of each kernel's fast copy (the one the unit-stride test selects).
    spans: dict[str, tuple[int, int]] = {}
    lines = source.splitlines()
    for number, line in enumerate(lines, start=1):
        found = re.match(r"static int (kernel\d+)\(", line)
        if found:
            end = next(i for i in range(number, len(lines) + 1) if lines[i - 1] == "}")
            spans[found.group(1)] = (number, end)
    return spans


def _innermost_loop(lines: list[str], first: int, last: int) -> tuple[int, str, list[str]]:
    # The last `for` of a span: its line number, its variable and its body's lines.
    number = max(i for i in range(first, last + 1) if "for (int64_t" in lines[i - 1])
    var = re.search(r"for \(int64_t (\w+) =", lines[number - 1])
    assert var is not None
    indent = len(lines[number - 1]) - len(lines[number - 1].lstrip())
    body = []
    for line in lines[number:last]:
        if line.strip() == "}" and len(line) - len(line.lstrip()) == indent:
            break
        body.append(line)
    return number, var.group(1), body


@pytest.mark.skipif(shutil.which("gcc") is None, reason="the report is GCC's")
def test_stencil_inner_loops_are_unit_stride_and_vectorize(tmp_path: Path) -> None:
    a = _rng().random((16, 16, 16))
    fn = _compiled(jacobi_3d, tmp_path)
    np.testing.assert_allclose(fn(a), jacobi_3d(a), rtol=1e-13, atol=0)
    [source_path] = list(tmp_path.glob("debug/*/output_code.c"))
    vectorized = vectorized_lines(source_path, tmp_path)
    lines = source_path.read_text().splitlines()
    spans = _fast_kernel_lines(source_path.read_text())
    assert spans
    for name, (first, last) in spans.items():
        number, var, body = _innermost_loop(lines, first, last)
        # GCC vectorizes gathers too (AVX2/AVX-512, or element by element): the report says
        # the loop vectorized, the addresses say its loads are contiguous.
        assert number in vectorized, (name, number, sorted(vectorized))
        addresses = [a for line in body for a in re.findall(r"\w+\[([^\]]+)\]", line)]
        assert addresses, body
        for address in addresses:
            assert "/" not in address and "%" not in address, (name, address)
            assert not re.search(rf"\*{var}\b|\b{var}\*", address), (name, address)


def fdtd_update(ex: Array, ey: Array, hz: Array) -> None:
    ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
    ex[:, 1:] = ex[:, 1:] - 0.5 * (hz[:, 1:] - hz[:, :-1])
    hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])


def test_in_place_slice_updates_scatter_once(tmp_path: Path) -> None:
    rng = _rng()
    inputs = [rng.random((9, 7)) for _ in range(3)]
    want = [a.copy() for a in inputs]
    got = [a.copy() for a in inputs]
    fdtd_update(*want)
    _compiled(fdtd_update, tmp_path)(*got)
    for w, g in zip(want, got, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=0)
    # `x[i] -= y` is an in-place subtract and a setitem of the same region: one scatter
    assert _ir(tmp_path).count("extern view_scatter") == 3, _ir(tmp_path)
