"""Cache sharing and the cache cap, measured: compiles per Dask worker, the size after eviction.

Part 1 starts a `LocalCluster` of worker processes (default 4) on one fresh cache folder, runs
a compiled function on the first worker, then on each other worker, and prints each worker's
runtime counters: the first runs the C compiler, the others load what it built.

Part 2 caps a fresh cache (default 1 MB) and compiles distinct graphs until well past the cap,
then prints the cache's size and what was evicted.

    python -m benchmarks.cache_sharing --workers 4 --cap-mb 1

    >>> _megabytes(1024 * 1024)
    '1.00 MB'
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from typing import Any

import numpy as np


def _chain(x: Any) -> Any:
    return np.sin(x) * 2.0 + np.cos(x) ** 2


def _counters() -> dict[str, int]:
    import numpile_runtime

    return numpile_runtime.counters()


def _reset() -> None:
    import numpile_runtime

    numpile_runtime.reset_counters()


def _megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):.2f} MB"


def dask_workers(workers: int) -> None:
    """Part 1: compiler invocations per worker when workers share one cache folder."""
    import distributed

    import numpile

    chain = numpile.compile(_chain)
    started = time.perf_counter()
    with (
        distributed.LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        names = sorted(client.scheduler_info()["workers"])
        client.run(_reset)
        x = np.linspace(0.0, 1.0, 100_000)
        client.submit(chain, x, workers=names[:1], pure=False).result()
        for name in names[1:]:
            client.submit(chain, x, workers=[name], pure=False).result()
        seen = client.run(_counters)
    print(f"{workers} worker processes, one cache ({time.perf_counter() - started:.1f} s):")
    for order, name in enumerate(names):
        stats = seen[name]
        print(
            f"  worker {order + 1}: compiler invocations {stats.get('compiler_invocation', 0)}, "
            f"cache hits {stats.get('cache_hit', 0)}, "
            f"graph cache hits {stats.get('inductor_graph_cache_hit', 0)}, "
            f"modules loaded {stats.get('module_load', 0)}"
        )


def eviction(cap_mb: float) -> None:
    """Part 2: the cache's size after compiling past its cap."""
    import numpile
    import numpile_runtime as rt

    cache = rt.set_cache_dir(tempfile.mkdtemp(prefix="numpile-cap-"), max_bytes=int(cap_mb * 2**20))
    rt.reset_counters()
    x = np.ones(64)
    written = 0
    for k in range(40):
        # A distinct constant per function: a distinct graph, module and cache entry.
        scope: dict[str, Any] = {"np": np}
        exec(f"def f(x):\n    return np.sin(x) * {k + 2}.5 + {k}", scope)
        numpile.compile(scope["f"])(x)
        written = max(written, cache.info().size_bytes)
    info = cache.info()
    print(f"cache capped at {_megabytes(info.max_bytes)}, after 40 distinct compiles:")
    print(f"  size {_megabytes(info.size_bytes)} in {info.entry_count} entries")
    print(f"  largest size seen between compiles {_megabytes(written)}")
    print(f"  entries evicted {rt.counters().get('cache_evicted', 0)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--cap-mb", type=float, default=1.0)
    args = parser.parse_args()
    os.environ["NUMPILE_CACHE_DIR"] = tempfile.mkdtemp(prefix="numpile-dask-")
    dask_workers(args.workers)
    eviction(args.cap_mb)


if __name__ == "__main__":
    main()
