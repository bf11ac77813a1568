"""The cache settings are parsed once per change, not once per read (and stay exact)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import dask
import numpy as np
import pytest

import chunkflow
import chunkflow.cache as cache_module
from chunkflow import config
from chunkflow.cache import default_cache, get_cache, recheck_setting


@pytest.fixture()
def parsed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The names of the settings parsed by chunkflow.cache while the test runs."""
    names: list[str] = []

    def counting(key: str, *args: Any) -> Any:
        names.append(key)
        return config.get(key, *args)

    monkeypatch.setattr(cache_module, "_setting", counting)
    yield names


def test_cached_reads_parse_no_setting(tmp_path: Any, parsed: list[str]) -> None:
    z = chunkflow.array(np.arange(64, dtype="u2").reshape(8, 8), chunks=(4, 4),
                        store=str(tmp_path / "a.zarr"))
    z[2:6, 2:6]  # the settings are parsed here at most
    parsed.clear()
    for _ in range(20):
        np.testing.assert_array_equal(z[2:6, 2:6], np.arange(64).reshape(8, 8)[2:6, 2:6])
    assert parsed == []


def test_every_change_is_followed(parsed: list[str]) -> None:
    cache = get_cache()
    with config.set({"chunkflow.cache.enabled": False}):
        assert default_cache() is None
    assert default_cache() is cache
    with config.set({"chunkflow.cache.recheck-cached-data": True}):
        assert recheck_setting() is True
        # Equal to True, yet one second: the very objects are compared, not their values.
        with dask.config.set({"chunkflow.cache.recheck-cached-data": 1}):
            assert recheck_setting() == 1.0 and recheck_setting() is not True
        assert recheck_setting() is True
    with config.set({"chunkflow.cache.max-bytes": 4096}):
        assert get_cache() is cache and cache.max_bytes == 4096
    assert get_cache().max_bytes == config.get("chunkflow.cache.max-bytes")
    assert parsed  # each change was parsed


def test_a_cache_resized_by_hand_returns_to_its_setting() -> None:
    cache = get_cache()
    budget = cache.max_bytes
    cache.resize(1000)
    assert get_cache().max_bytes == budget


def test_auto_budget_follows_a_worker_started_in_this_process() -> None:
    distributed = pytest.importorskip("distributed")
    budget = get_cache().max_bytes  # "auto", outside any worker: the default
    limit = 400 * 2**20
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  memory_limit=limit, dashboard_address=":0") as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        in_task = client.submit(lambda: get_cache().max_bytes, pure=False).result()
    assert in_task == limit // 8  # an eighth of the worker's memory
    assert get_cache().max_bytes == budget  # the worker is gone
