"""Facts about the machine a benchmark run happened on, and its STREAM-triad bandwidth.

Every figure of the suite is read beside these: the CPU, the cores, the load while it ran,
and the memory bandwidth a tight loop reaches (STREAM triad ``a[i] = b[i] + s * c[i]``),
which is the ceiling for every memory-bound workload.

    >>> facts = collect_facts(threads=2)
    >>> facts.logical_cores >= 1
    True
"""

from __future__ import annotations

import logging
import os
import platform
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import attrs
import numpy as np

_log = logging.getLogger("numpile.benchmarks")

# STREAM convention: a triad moves 3 arrays of doubles (2 reads, 1 write); the write-allocate
# read of `a` that the hardware also does is not counted.
_TRIAD_ARRAYS = 3
_DOUBLE_BYTES = 8

# A standalone C program: the thread count comes from OMP_NUM_THREADS in its environment, so
# each count is a fresh process. The first repetition warms the pages and is not reported.
_STREAM_C = r"""
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    long n = atol(argv[1]);
    int reps = atoi(argv[2]);
    double *a = malloc(sizeof(double) * n);
    double *b = malloc(sizeof(double) * n);
    double *c = malloc(sizeof(double) * n);
    if (!a || !b || !c) return 2;
    double s = 3.0;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) { a[i] = 0.0; b[i] = 1.0; c[i] = 2.0; }
    printf("threads %d\n", omp_get_max_threads());
    for (int r = 0; r < reps; r++) {
        double t0 = omp_get_wtime();
#pragma omp parallel for schedule(static)
        for (long i = 0; i < n; i++) a[i] = b[i] + s * c[i];
        double t1 = omp_get_wtime();
        printf("seconds %.9f\n", t1 - t0);
    }
    if (a[n / 2] != 7.0) { fprintf(stderr, "triad result wrong\n"); return 3; }
    free(a); free(b); free(c);
    return 0;
}
"""


@attrs.frozen
class StreamResult:
    """STREAM-triad bandwidth measured with one thread count.

    ``best_gbps`` is the STREAM convention (best repetition); ``median_gbps`` is beside it
    because the suite reports medians everywhere else.

    ``when`` says whether it ran before the workloads (``start``) or after them (``end``):
    the suite measures both and takes the better as the machine's ceiling, since load from
    elsewhere can only lower a bandwidth.

        >>> StreamResult("c-openmp", 2, 20_000_000, 31.0, 29.5).best_gbps
        31.0
    """

    method: str
    threads: int
    elements: int
    best_gbps: float
    median_gbps: float
    when: str = "start"


@attrs.frozen
class MachineFacts:
    """What the run happened on: CPU, cores, load, library versions.

    >>> collect_facts(threads=1).python.count(".") >= 1
    True
    """

    host: str
    cpu_model: str
    logical_cores: int
    usable_cores: int
    l3_cache: str
    threads: int
    load_average: tuple[float, float, float]
    python: str
    numpy: str
    platform: str
    compiler: str
    started_at: str


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _l3_cache() -> str:
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            if (index / "level").read_text().strip() == "3":
                return (index / "size").read_text().strip()
        except OSError:
            continue
    return "unknown"


def _compiler_version() -> str:
    gcc = shutil.which("gcc")
    if gcc is None:
        return "none"
    done = subprocess.run([gcc, "--version"], capture_output=True, text=True, check=False)
    return done.stdout.splitlines()[0] if done.stdout else "gcc (version unknown)"


def collect_facts(*, threads: int) -> MachineFacts:
    """Describe this machine and process; ``threads`` is the thread count the run uses.

    >>> collect_facts(threads=2).threads
    2
    """
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 0
    load = os.getloadavg()
    return MachineFacts(
        host=socket.gethostname(),
        cpu_model=_cpu_model(),
        logical_cores=os.cpu_count() or 1,
        usable_cores=usable or (os.cpu_count() or 1),
        l3_cache=_l3_cache(),
        threads=threads,
        load_average=(load[0], load[1], load[2]),
        python=platform.python_version(),
        numpy=np.__version__,
        platform=platform.platform(),
        compiler=_compiler_version(),
        started_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    )


def _build_stream(workdir: Path) -> Path | None:
    gcc = shutil.which("gcc")
    if gcc is None:
        _log.warning("gcc not found: STREAM triad falls back to NumPy (one thread)")
        return None
    source = workdir / "stream_triad.c"
    binary = workdir / "stream_triad"
    source.write_text(_STREAM_C)
    command = [gcc, "-O3", "-march=native", "-fopenmp", str(source), "-o", str(binary)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        _log.warning("STREAM triad did not compile: %s", done.stderr.strip()[:500])
        return None
    return binary


def _run_stream(binary: Path, *, threads: int, elements: int, reps: int) -> StreamResult | None:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    command = [str(binary), str(elements), str(reps)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        _log.warning("STREAM triad failed with %d threads: %s", threads, done.stderr.strip())
        return None
    seconds = [float(line.split()[1]) for line in done.stdout.splitlines() if "seconds" in line]
    timed = seconds[1:] or seconds
    moved = _TRIAD_ARRAYS * _DOUBLE_BYTES * elements
    return StreamResult(
        method="c-openmp",
        threads=threads,
        elements=elements,
        best_gbps=moved / min(timed) / 1e9,
        median_gbps=moved / float(np.median(timed)) / 1e9,
    )


def _numpy_triad(*, elements: int, reps: int) -> StreamResult:
    # Two passes (multiply, then add) with preallocated outputs; bytes counted as STREAM does,
    # so this is what NumPy reaches for a triad written without temporaries.
    b = np.ones(elements)
    c = np.full(elements, 2.0)
    a = np.zeros(elements)
    seconds = []
    for _ in range(reps):
        start = time.perf_counter()
        np.multiply(c, 3.0, out=a)
        np.add(a, b, out=a)
        seconds.append(time.perf_counter() - start)
    timed = seconds[1:] or seconds
    moved = _TRIAD_ARRAYS * _DOUBLE_BYTES * elements
    return StreamResult(
        method="numpy-out",
        threads=1,
        elements=elements,
        best_gbps=moved / min(timed) / 1e9,
        median_gbps=moved / float(np.median(timed)) / 1e9,
    )


def measure_stream(
    *, thread_counts: list[int], elements: int, reps: int, when: str = "start"
) -> list[StreamResult]:
    """STREAM triad with a compiled OpenMP loop per thread count, plus NumPy's own triad.

    Each thread count runs in a fresh process with ``OMP_NUM_THREADS`` set. Without gcc only
    the NumPy line is returned.

        >>> [r.method for r in measure_stream(thread_counts=[1], elements=10**6, reps=3)]
        ['c-openmp', 'numpy-out']
    """
    results: list[StreamResult] = []
    with tempfile.TemporaryDirectory(prefix="numpile-stream-") as workdir:
        binary = _build_stream(Path(workdir))
        if binary is not None:
            for threads in thread_counts:
                result = _run_stream(binary, threads=threads, elements=elements, reps=reps)
                if result is not None:
                    results.append(result)
    results.append(_numpy_triad(elements=elements, reps=reps))
    return [attrs.evolve(result, when=when) for result in results]


def stream_ceiling(results: list[StreamResult], *, threads: int) -> float | None:
    """The best compiled-loop STREAM bandwidth (GB/s) at ``threads``, else the nearest below.

    >>> stream_ceiling([StreamResult("c-openmp", 1, 10, 20.0, 19.0)], threads=2)
    20.0
    """
    compiled = [r for r in results if r.method == "c-openmp" and r.threads <= threads]
    if not compiled:
        return None
    nearest = max(r.threads for r in compiled)
    return max(r.best_gbps for r in compiled if r.threads == nearest)
