"""TritonLauncher: Triton's `run` once per specialization key, the compiled kernel's launcher
directly after. Triton's JIT function and compiled kernel are stand-ins that record calls,
so this runs without triton and without a GPU.
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np
import pytest

import numpile_runtime as rt
from numpile_runtime import triton_launcher

_ARG_NAMES = ["p_a", "p_a_s0", "p_lr", "xnumel", "XBLOCK", "INDEX64"]
_KINDS = ("ptr", "int", "scalar", "int")


class _Compiled:
    # What JITFunction.run returns: a CompiledKernel with its launcher.
    function = "cufunction"
    packed_metadata = ("meta",)

    def __init__(self, launches: list[tuple[Any, ...]], fail: bool = False) -> None:
        self.launches = launches
        self.fail = fail

    def launch_metadata(self, grid: Any, stream: int, *args: Any) -> Any:
        return ("metadata", grid, stream)

    def run(self, *args: Any) -> None:
        if self.fail:
            raise TypeError("function takes exactly 14 arguments (15 given)")
        self.launches.append(args)


class _JitFunction:
    arg_names = _ARG_NAMES
    __name__ = "kernel0"

    def __init__(self, fail_direct: bool = False) -> None:
        self.runs: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
        self.launches: list[tuple[Any, ...]] = []
        self.fail_direct = fail_direct

    def run(self, *args: Any, **kwargs: Any) -> _Compiled:
        self.runs.append((args, kwargs))
        return _Compiled(self.launches, self.fail_direct)


@pytest.fixture
def hooks(monkeypatch: pytest.MonkeyPatch) -> types.SimpleNamespace:
    knobs = types.SimpleNamespace(launch_enter_hook=None, launch_exit_hook=None)
    monkeypatch.setattr(triton_launcher, "_runtime_knobs", lambda: knobs)
    return knobs


def _launch(launcher: rt.TritonLauncher, a: Any, lr: float, stream: int | None = 7) -> None:
    launcher([a, 1, lr, a.size], 2, {"INDEX64": False, "XBLOCK": 64}, 4, stream)


def test_first_launch_runs_through_triton_then_launches_directly(hooks: Any) -> None:
    fn = _JitFunction()
    launcher = rt.TritonLauncher(fn, _KINDS)
    a = np.zeros(128, np.float32)
    _launch(launcher, a, 0.5)
    ((args, kwargs),) = fn.runs
    assert isinstance(args[0], rt.KernelArg) and args[0].data_ptr() == a.ctypes.data
    assert args[1:] == (1, 0.5, 128)
    assert kwargs == {"grid": (2,), "warmup": False, "XBLOCK": 64, "INDEX64": False, "num_warps": 4}
    assert fn.launches == []
    b = np.zeros(128, np.float32)
    _launch(launcher, b, 0.25)  # another array, another scalar value: same key
    assert len(fn.runs) == 1
    (launch,) = fn.launches
    head = (2, 1, 1, 7, "cufunction", ("meta",), None, None, None)
    assert launch[:9] == head
    # positional arguments as ints, then the constexprs in the signature's order
    assert launch[9] == b.ctypes.data and launch[10:] == (1, 0.25, 128, 64, False)


def test_new_alignment_size_blocks_warps_or_device_go_through_triton_again(hooks: Any) -> None:
    fn = _JitFunction()
    launcher = rt.TritonLauncher(fn, _KINDS)
    buffer = np.zeros(1024, np.float32)
    aligned = buffer[:512]
    assert aligned.ctypes.data % 16 == 0
    _launch(launcher, aligned, 1.0)
    _launch(launcher, buffer[1:513], 1.0)  # 4 bytes off: Triton specializes alignment
    _launch(launcher, buffer[:511], 1.0)  # another size: Triton specializes ints
    launcher([aligned, 1, 1.0, 512], 2, {"XBLOCK": 128, "INDEX64": False}, 4, 7)
    launcher([aligned, 1, 1.0, 512], 2, {"XBLOCK": 64, "INDEX64": False}, 8, 7)
    assert len(fn.runs) == 5 and fn.launches == []
    _launch(launcher, buffer[1:513], 3.0)
    assert len(fn.runs) == 5 and len(fn.launches) == 1
    launcher([aligned, 1, 1.0, 512], 2, {"XBLOCK": 128, "INDEX64": False}, 4, 7, 1)  # device 1
    assert len(fn.runs) == 6 and len(fn.launches) == 1


def test_empty_hook_chains_launch_directly_and_a_profilers_hooks_go_through_triton(
    hooks: Any,
) -> None:
    fn = _JitFunction()
    launcher = rt.TritonLauncher(fn, _KINDS)
    a = np.zeros(16, np.float32)
    _launch(launcher, a, 1.0)
    hooks.launch_enter_hook = types.SimpleNamespace(calls=[])  # Triton 3.6's empty chain
    _launch(launcher, a, 1.0)
    assert len(fn.runs) == 1 and len(fn.launches) == 1
    assert fn.launches[0][6:9] == (None, None, None)
    hooks.launch_exit_hook = types.SimpleNamespace(calls=[print])  # a profiler's hook
    _launch(launcher, a, 1.0)
    assert len(fn.runs) == 2 and len(fn.launches) == 1


def test_a_launcher_that_rejects_the_arguments_falls_back_to_triton(hooks: Any) -> None:
    fn = _JitFunction(fail_direct=True)
    launcher = rt.TritonLauncher(fn, _KINDS)
    a = np.zeros(16, np.float32)
    for _ in range(3):
        _launch(launcher, a, 1.0)
    assert not launcher.launches_direct
    assert len(fn.runs) == 3  # the failed direct launch ran again through Triton


def test_a_compiled_kernel_without_tritons_launch_attributes_is_never_launched_directly(
    hooks: Any,
) -> None:
    fn = _JitFunction()
    fn.run = lambda *args, **kwargs: object()  # type: ignore[method-assign]
    launcher = rt.TritonLauncher(fn, _KINDS)
    _launch(launcher, np.zeros(16, np.float32), 1.0)
    assert not launcher.launches_direct and not launcher.compiled


def test_interpreter_and_missing_knobs_always_run_through_triton(
    monkeypatch: pytest.MonkeyPatch, hooks: Any
) -> None:
    fn = _JitFunction()
    launcher = rt.TritonLauncher(fn, _KINDS)
    a = np.zeros(16, np.float32)
    for _ in range(2):
        _launch(launcher, a, 1.0, stream=None)
    off = rt.TritonLauncher(fn, _KINDS, direct=False)  # TritonOptions.direct_launch=False
    for _ in range(2):
        _launch(off, a, 1.0)
    monkeypatch.setattr(triton_launcher, "_runtime_knobs", lambda: None)
    old = rt.TritonLauncher(fn, _KINDS)
    assert not old.launches_direct
    for _ in range(2):
        _launch(old, a, 1.0)
    assert len(fn.runs) == 6 and fn.launches == []


def test_no_direct_launches_unless_the_constexprs_come_last(hooks: Any) -> None:
    fn = _JitFunction()
    flags = [False, False, False, True, True, True]  # xnumel taken for a constexpr
    fn.params = [types.SimpleNamespace(is_constexpr=flag) for flag in flags]  # type: ignore[attr-defined]
    assert not rt.TritonLauncher(fn, _KINDS).launches_direct
    fn.params[3].is_constexpr = False  # type: ignore[attr-defined]
    assert rt.TritonLauncher(fn, _KINDS).launches_direct


def test_unknown_argument_kinds_raise() -> None:
    with pytest.raises(ValueError, match="argument kinds"):
        rt.TritonLauncher(_JitFunction(), ("ptr", "float"))
