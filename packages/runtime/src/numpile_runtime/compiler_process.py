"""Compiler processes: started without `fork()`, so no other library's fork handlers run.

A compile often starts while the user's own threads run NumPy: tiered compilation builds
on a background thread while the first calls go on, and those calls multiply matrices
on OpenBLAS's threads. A `fork()` (what `subprocess` does when given a `preexec_fn`) runs
every `pthread_atfork` handler of the process in the forking thread, and OpenBLAS's
(`blas_thread_shutdown_`) stops its thread pool there: when a BLAS call of another thread
is still being worked on by a pool thread, the handler's join never returns (OpenBLAS
issues 2270 and 3111), and the process hangs with the forking thread holding the GIL. On a
2-core machine a demo multiplying small matrices while its compiles ran hung 3 runs of 3.

So the compiler is started the way `subprocess` starts a child without a `preexec_fn`
(`vfork()` then `exec`: no fork handler runs), and what the child used to set up for
itself is done another way:

- the parent-death signal (Linux's `PR_SET_PDEATHSIG`: a killed Python process leaves no
  compiler running for minutes) is set by util-linux's `setpriv --pdeathsig KILL`, which
  then execs the compiler (the signal survives `exec`); where `setpriv` is missing or
  lacks the option, the compiler runs without it (`death_signal_prefix()` is empty);
- a compiler of idle work is lowered to a low priority by the parent right after it
  started (`build_queue.low_priority` on its process group, which every process the
  driver starts joins).

    >>> process = start_compiler(["true"], idle=False)
    >>> process.wait()
    0
"""

from __future__ import annotations

import functools
import logging
import shutil
import subprocess
import sys

from .build_queue import low_priority

__all__ = ["death_signal_prefix", "start_compiler"]

log = logging.getLogger("numpile.runtime.build")


def start_compiler(command: list[str], *, idle: bool) -> subprocess.Popen[str]:
    """Start `command` in a session of its own, its output piped as text, without `fork()`;
    with the parent-death signal where the system can set it, niced when `idle`.

        >>> start_compiler(["echo", "hi"], idle=True).communicate()[0]
        'hi\\n'
    """
    process = subprocess.Popen(
        [*death_signal_prefix(), *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    if idle:
        low_priority(process.pid)
    return process


@functools.cache
def death_signal_prefix() -> tuple[str, ...]:
    """The words in front of a command that make it get SIGKILL when the thread that
    started it dies (`setpriv --pdeathsig KILL --`), or none where that is not possible.

        >>> death_signal_prefix() in ((), (shutil.which("setpriv"), "--pdeathsig", "KILL", "--"))
        True
    """
    if not sys.platform.startswith("linux"):
        return ()
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        log.debug("no setpriv on PATH: a killed process may leave its compiler running")
        return ()
    prefix = (setpriv, "--pdeathsig", "KILL", "--")
    try:
        done = subprocess.run([*prefix, "true"], capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ()
    if done.returncode != 0:
        log.debug("%s has no --pdeathsig: a killed process may leave its compiler running", setpriv)
        return ()
    return prefix
