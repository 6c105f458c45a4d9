"""NUMPILE_LOGS channels: parsing, levels, the stderr handler, the environment at import."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from numpile_runtime import LOG_CHANNELS, set_logs


@pytest.fixture(autouse=True)
def _logs_off() -> Iterator[None]:
    yield
    set_logs("")


def _level(name: str) -> int:
    return logging.getLogger(name).level


def test_plain_plus_and_minus_set_info_debug_and_error() -> None:
    set_logs("guards, +capture,-inductor")
    assert _level("numpile.guards") == logging.INFO
    assert _level("numpile.capture") == logging.DEBUG
    assert _level("numpile.inductor") == logging.ERROR
    assert _level("numpile.recompiles") == logging.NOTSET


def test_a_new_spec_replaces_the_previous_one_and_empty_turns_all_off() -> None:
    set_logs("guards,recompiles")
    set_logs("dynamic")
    assert _level("numpile.guards") == logging.NOTSET
    assert _level("numpile.dynamic") == logging.INFO
    set_logs("")
    assert _level("numpile.dynamic") == logging.NOTSET
    assert not logging.getLogger("numpile").handlers


def test_unknown_channel_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown numpile log channel 'guard'.*recompiles"):
        set_logs("guard")


def test_channels_cover_the_issue_list() -> None:
    wanted = ["graph_breaks", "guards", "recompiles", "output_code", "dynamic", "perf_hints"]
    assert all(name in LOG_CHANNELS for name in wanted)
    assert LOG_CHANNELS["recompiles"] == ("numpile.recompiles",)
    assert "numpile.dynamic" in LOG_CHANNELS["dynamic"]


def _run(env_value: str, code: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, NUMPILE_LOGS=env_value)
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )


def test_environment_switches_channels_on_at_import() -> None:
    code = (
        "import logging, numpile_runtime\n"
        "logging.getLogger('numpile.recompiles').info('seen')\n"
        "logging.getLogger('numpile.recompiles').debug('hidden')\n"
        "logging.getLogger('numpile.guards').debug('verbose')\n"
    )
    result = _run("recompiles,+guards", code)
    assert result.returncode == 0, result.stderr
    assert "[numpile.recompiles] INFO seen" in result.stderr
    assert "hidden" not in result.stderr
    assert "[numpile.guards] DEBUG verbose" in result.stderr


def test_bad_environment_value_warns_and_import_still_works() -> None:
    result = _run("nonsense", "import numpile_runtime; print('ok')")
    assert result.returncode == 0
    assert result.stdout.strip() == "ok"
    assert "NUMPILE_LOGS='nonsense' ignored" in result.stderr
