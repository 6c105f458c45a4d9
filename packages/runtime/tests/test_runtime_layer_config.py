"""The shared config base: scoped patches restore fields, unknown names fail, keys are stable."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any, ClassVar

import attrs
import pytest

import numpile_runtime as rt
from numpile_runtime import LayerConfig


def _double(x: Any) -> Any:
    return 2 * x


@attrs.define
class _Mutable(LayerConfig):
    threads: int = 0
    flags: tuple[str, ...] = ()
    hook: Any = None
    debug_dir: str | None = None
    KEY_EXCLUDES: ClassVar[frozenset[str]] = frozenset({"debug_dir"})


@attrs.frozen
class _Frozen(LayerConfig):
    fast: bool = False


def test_patch_sets_fields_inside_the_block_and_restores_them_after() -> None:
    config = _Mutable()
    with config.patch(threads=4, flags=("-O2",)) as patched:
        assert patched is config
        assert (config.threads, config.flags) == (4, ("-O2",))
    assert (config.threads, config.flags) == (0, ())


def test_patch_restores_fields_when_the_block_raises() -> None:
    config = _Mutable()
    with pytest.raises(RuntimeError), config.patch(threads=3):
        raise RuntimeError("boom")
    assert config.threads == 0


def test_patch_rejects_unknown_fields_before_changing_anything() -> None:
    config = _Mutable()
    with (
        pytest.raises(AttributeError, match="_Mutable has no field"),
        config.patch(threads=2, no_such_field=1),
    ):
        pass
    assert config.threads == 0
    with pytest.raises(AttributeError, match="no field"), config.patch(key=1):
        pass  # a method is not a field


def test_a_frozen_config_cannot_be_patched() -> None:
    with pytest.raises(attrs.exceptions.FrozenInstanceError), _Frozen().patch(fast=True):
        pass


def test_key_lists_fields_in_order_without_the_excluded_ones() -> None:
    assert _Mutable().key() == "threads=0 flags=[] hook=None"
    assert _Mutable(debug_dir="/tmp/a").key() == _Mutable(debug_dir="/tmp/b").key()
    assert _Mutable(threads=2).key() != _Mutable().key()
    assert _Frozen(fast=True).key() == "fast=True"


def test_key_names_callables_instead_of_their_addresses() -> None:
    key = _Mutable(hook=_double).key()
    assert key.endswith("._double")
    assert "0x" not in key
    assert _Mutable(flags=("-O2", "-g")).key() == "threads=0 flags=['-O2', '-g'] hook=None"


def test_a_class_that_is_not_attrs_is_refused() -> None:
    class Plain(LayerConfig):
        pass

    with pytest.raises(TypeError, match="attrs class"):
        Plain().key()


def test_importing_the_runtime_sets_openmp_defaults_the_user_did_not_set() -> None:
    assert rt.OPENMP_DEFAULTS == {"OMP_WAIT_POLICY": "PASSIVE"}
    code = "import os, numpile_runtime; print(os.environ.get('OMP_WAIT_POLICY'))"
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    unset = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert unset.stdout.strip() == "PASSIVE"
    env["OMP_WAIT_POLICY"] = "ACTIVE"
    user = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert user.stdout.strip() == "ACTIVE"
