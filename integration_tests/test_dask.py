"""Compiled functions on a real Dask `LocalCluster` of worker processes (`numpile[dask]`).

`map_blocks`, `blockwise`, `delayed` and `Client.map` send compiled functions to worker
processes (pickled by value when defined in a test, by reference when importable); workers
share the on-disk cache, so a worker that runs a function after another compiled it loads
the kernels and runs no compiler.
"""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import numpile
import numpile_runtime

# NOTE: what runs on the workers is importable there (numpile_runtime's functions, the helper
# module on their PYTHONPATH) or pickled by value (functions defined inside a test): this
# test module itself is not importable in a worker process.
distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

WORKERS = 2
HELPER = textwrap.dedent(
    """
    import numpy as np
    import numpile

    @numpile.compile
    def scaled_tanh(x, scale):
        return np.tanh(x) * scale + 1.0
    """
)


@pytest.fixture
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    # Workers are spawned processes: they read the cache folder and the helper module's path
    # from the environment they inherit.
    cache = tmp_path_factory.mktemp("dask-cache")
    helpers = tmp_path_factory.mktemp("dask-helpers")
    (helpers / "numpile_dask_helper.py").write_text(HELPER)
    saved = {name: os.environ.get(name) for name in ("NUMPILE_CACHE_DIR", "PYTHONPATH")}
    os.environ["NUMPILE_CACHE_DIR"] = str(cache)
    os.environ["PYTHONPATH"] = os.pathsep.join([str(helpers), *filter(None, [saved["PYTHONPATH"]])])
    sys.path.insert(0, str(helpers))
    cluster = distributed.LocalCluster(
        n_workers=WORKERS, threads_per_worker=1, processes=True, dashboard_address=None
    )
    try:
        with distributed.Client(cluster) as connected:
            yield connected
    finally:
        cluster.close()
        sys.path.remove(str(helpers))
        sys.modules.pop("numpile_dask_helper", None)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _workers(client: Any) -> list[str]:
    return sorted(client.scheduler_info()["workers"])


def _a_second_worker_loads_what_the_first_compiled(client: Any) -> None:
    @numpile.compile
    def chain(x):
        return np.sin(x) * 2.0 + np.cos(x) ** 2

    first, *others = _workers(client)
    client.run(numpile_runtime.reset_counters)
    x = np.linspace(0.0, 1.0, 1000)
    expected = np.sin(x) * 2.0 + np.cos(x) ** 2
    np.testing.assert_allclose(client.submit(chain, x, workers=[first]).result(), expected)
    compiled_first = client.run(numpile_runtime.counters, workers=[first])[first]
    assert compiled_first.get("compiler_invocation", 0) >= 1
    for worker in others:
        result = client.submit(chain, x + 0.0, workers=[worker], pure=False).result()
        np.testing.assert_allclose(result, expected)
    for worker, seen in client.run(numpile_runtime.counters, workers=others).items():
        assert seen.get("compiler_invocation", 0) == 0, (worker, seen)
        assert seen.get("module_load", 0) >= 1, (worker, seen)


def _map_blocks_and_blockwise_run_compiled_functions_on_workers(client: Any) -> None:
    @numpile.compile
    def normalize(block):
        return (block - block.mean()) / (block.std() + 1.0)

    data = np.random.default_rng(0).standard_normal((60, 8))
    array = da.from_array(data, chunks=(15, 8))
    expected = np.concatenate([normalize.__wrapped__(data[i : i + 15]) for i in (0, 15, 30, 45)])
    np.testing.assert_allclose(array.map_blocks(normalize).compute(), expected, rtol=1e-12)
    via_blockwise = da.blockwise(normalize, "ij", array, "ij", dtype=data.dtype)
    np.testing.assert_allclose(via_blockwise.compute(), expected, rtol=1e-12)


def _delayed_and_client_map_with_an_importable_function(client: Any) -> None:
    import numpile_dask_helper

    fn = numpile_dask_helper.scaled_tanh
    inputs = [np.full(4, float(i)) for i in range(4)]
    mapped = client.gather(client.map(fn, inputs, scale=2.0))
    for got, x in zip(mapped, inputs, strict=True):
        np.testing.assert_allclose(got, np.tanh(x) * 2.0 + 1.0)
    lazy = dask.delayed(fn)(inputs[1], 3.0)
    np.testing.assert_allclose(lazy.compute(), np.tanh(inputs[1]) * 3.0 + 1.0)


def test_compiled_functions_on_a_local_cluster_of_processes(client: Any):
    # One test, so one cluster: pytest-xdist would start one per worker for separate tests.
    _a_second_worker_loads_what_the_first_compiled(client)
    _map_blocks_and_blockwise_run_compiled_functions_on_workers(client)
    _delayed_and_client_map_with_an_importable_function(client)
