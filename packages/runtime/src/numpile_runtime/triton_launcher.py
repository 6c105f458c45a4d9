"""Launching a `@triton.jit` function: Triton's `run` once per specialization, then directly.

Triton's `JITFunction.run` binds and specializes every argument on every
launch before it calls the compiled kernel's launcher: about 10 us of host time
per launch with Triton 3.6 (4.5 us of it specializing), on a kernel whose GPU
time may be 5 us; a direct launch here costs about 4 us (5 pointers, 6 ints).
numpile launches the same kernels call after call with arguments that differ
in their pointers only. `TritonLauncher` keeps, per specialization key, the
`CompiledKernel` that `run` returned, and later launches with that key call its
launcher itself, as `run` would. While a profiler has launch hooks installed
(Triton 3.6 keeps them as chains, empty by default), launches go through `run`.

The key holds the device (Triton loads a binary per device) and everything
Triton specializes a kernel on: each pointer's alignment (its address modulo
16), each integer argument's value (Triton specializes integers by type range,
divisibility by 16 and equality to 1; the value settles all three), the
constexprs (block sizes) and `num_warps`. Scalars passed by value are left
out: numpile annotates them with their type and lists them in
`do_not_specialize`. A launch with a new key goes through `run`, which
compiles or finds its cached binary, and records it.

`run` is always used under Triton's interpreter, when `triton.knobs` is
missing (Triton before 3.4), and, after one failed attempt, when the compiled
kernel's launcher does not take the arguments the way Triton 3.4+ passes them.

    >>> launcher = TritonLauncher(module.kernel0, ("ptr", "int", "int"))  # doctest: +SKIP
    >>> launcher([x, x.strides[0] // 4, x.size], 4, {"XBLOCK": 1024}, 4, stream)  # doctest: +SKIP
"""

from __future__ import annotations

import logging
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .cuda_launch import _DEVICE_ARRAY_TYPES, KernelArg, data_ptr

log = logging.getLogger("numpile.runtime.cuda")

_ARG_KINDS = ("ptr", "int", "scalar")


def _runtime_knobs() -> Any:
    # Triton's launch hooks (profilers) live in `triton.knobs.runtime` since 3.4.
    try:
        from triton import knobs
    except ImportError:
        return None
    return getattr(knobs, "runtime", None)


def _picker(keys: Sequence[Any]) -> Callable[[Any], tuple[Any, ...]]:
    # A function giving the items at `keys` of a sequence or mapping, as a tuple.
    if not keys:
        return lambda _: ()
    if len(keys) == 1:
        key = keys[0]
        return lambda items: (items[key],)
    return operator.itemgetter(*keys)


def _constexprs_follow(fn: Any, positional: int) -> bool:
    # Whether the function's parameters are `positional` runtime ones, then constexprs only:
    # the order in which direct launches pass them.
    params = getattr(fn, "params", None)
    if params is None:
        return True
    flags = [bool(getattr(p, "is_constexpr", False)) for p in params]
    return not any(flags[:positional]) and all(flags[positional:])


class TritonLauncher:
    """Launches one `@triton.jit` function; see the module docstring.

    `kinds` says what each positional argument is: "ptr" (an array, passed as its
    first element's address), "int" (a size or stride) or "scalar" (a number
    passed by value, not specialized). `direct=False` always launches through `run`.

    >>> TritonLauncher(None, ("ptr", "int")).launches_direct
    False
    """

    def __init__(self, fn: Any, kinds: Sequence[str], *, direct: bool = True) -> None:
        unknown = set(kinds) - set(_ARG_KINDS)
        if unknown:
            raise ValueError(f"argument kinds must be {_ARG_KINDS}, not {sorted(unknown)}")
        self.fn = fn
        self.kinds = tuple(kinds)
        self.pointers = tuple(i for i, kind in enumerate(kinds) if kind == "ptr")
        self.ints = tuple(i for i, kind in enumerate(kinds) if kind == "int")
        self._pick_ints = _picker(self.ints)
        names = getattr(fn, "arg_names", None)
        # Constexprs (keywords of the launch) follow the positional arguments.
        self.keywords = tuple(names[len(kinds) :]) if names else ()
        self._pick_blocks = _picker(self.keywords)
        self.knobs: Any = _runtime_knobs() if names else None
        self.launches_direct = (
            direct and self.knobs is not None and _constexprs_follow(fn, len(kinds))
        )
        self.compiled: dict[tuple[Any, ...], Any] = {}

    def __call__(
        self,
        args: Sequence[Any],
        grid: int,
        constexprs: Mapping[str, Any],
        num_warps: int,
        stream: int | None,
        device: int = 0,
    ) -> None:
        """Launch `grid` programs of the kernel on `stream` (None: Triton's interpreter) of
        CUDA device `device` (the current one: where Triton compiles and loads binaries)."""
        if stream is None or not self.launches_direct or self._hooked():
            self._run(args, grid, constexprs, num_warps)
            return
        try:
            blocks = self._pick_blocks(constexprs)
        except KeyError:  # keywords the signature does not end with
            blocks = ()
        # One pass over the pointers: each array's address in `raw`, and the alignments
        # (each address modulo 16) packed four bits apiece into one int of the key.
        raw = list(args)
        alignments = 0
        for i in self.pointers:
            array = raw[i]
            address = raw[i] = (
                array.data.ptr if type(array) in _DEVICE_ARRAY_TYPES else data_ptr(array)
            )
            alignments = alignments << 4 | address & 15
        key = (device, blocks, num_warps, alignments, self._pick_ints(args))
        binary = self.compiled.get(key)
        if binary is None:
            if len(blocks) != len(constexprs):  # keywords the signature does not end with
                self.launches_direct = False
            kernel = self._run(args, grid, constexprs, num_warps)
            if kernel is not None and self.launches_direct:
                self._record(key, kernel)
            return
        launch, function, metadata_pack = binary
        raw += blocks
        try:  # no launch metadata, no hooks: `_hooked` sent hooked launches through `run`
            launch(grid, 1, 1, stream, function, metadata_pack, None, None, None, *raw)
        except TypeError as error:  # the launcher parses its arguments before launching
            self._give_up(error)
            self._run(args, grid, constexprs, num_warps)

    def _record(self, key: tuple[Any, ...], kernel: Any) -> None:
        # The compiled kernel and what a launch hands its launcher (Triton 3.4+ names).
        try:
            binary = (kernel.run, kernel.function, kernel.packed_metadata)
        except AttributeError as error:
            self._give_up(error)
            return
        self.compiled[key] = binary

    def _hooked(self) -> bool:
        # Whether a profiler added launch hooks: those launches go through `run`, which
        # makes the launch metadata the hooks read from its own arguments. Triton 3.6 keeps
        # its hooks as chains, empty unless a profiler added one; earlier, a callable or None.
        knobs = self.knobs
        for hook in (knobs.launch_enter_hook, knobs.launch_exit_hook):
            if hook is not None:
                calls = getattr(hook, "calls", None)
                if calls is None or calls:
                    return True
        return False

    def _give_up(self, error: Exception) -> None:
        log.info("direct Triton launches disabled for %s: %s", self._name(), error)
        self.launches_direct = False
        self.compiled.clear()

    def _run(
        self, args: Sequence[Any], grid: int, constexprs: Mapping[str, Any], num_warps: int
    ) -> Any:
        # Triton's own path: binds, specializes, compiles if needed, launches.
        wrapped = [
            KernelArg(arg) if kind == "ptr" else arg
            for arg, kind in zip(args, self.kinds, strict=True)
        ]
        return self.fn.run(*wrapped, grid=(grid,), warmup=False, **constexprs, num_warps=num_warps)

    def _name(self) -> str:
        return str(getattr(self.fn, "__name__", self.fn))
