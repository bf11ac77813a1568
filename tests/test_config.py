"""Tests of chunkflow.cache.config: the settings, kept in dask.config."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import dask
import dask.config
import numpy as np
import pytest

import chunkflow
import chunkflow.cache
from chunkflow.cache import Config, config, get_cache
from chunkflow.cache.config import DEFAULTS_FILE, default_cache_bytes
from chunkflow.errors import ChunkflowError, SettingError, UnknownSettingError

ROOT = Path(__file__).resolve().parents[1]
OLD_ENV = ("CHUNKFLOW_CACHE_MAX_BYTES", "CHUNKFLOW_CACHE_COMPRESSED_BYTES",
           "CHUNKFLOW_CACHE_ENABLED", "CHUNKFLOW_RECHECK_CACHED_DATA", "CHUNKFLOW_IO_THREADS")
DASK_ENV = ("DASK_CHUNKFLOW__CACHE__MAX_BYTES", "DASK_CHUNKFLOW__CACHE__COMPRESSED_BYTES",
            "DASK_CHUNKFLOW__CACHE__ENABLED", "DASK_CHUNKFLOW__CACHE__RECHECK_CACHED_DATA",
            "DASK_CHUNKFLOW__IO__THREADS")
ENV = OLD_ENV + DASK_ENV


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_defaults(clean_env: pytest.MonkeyPatch) -> None:
    cfg = Config()
    assert cfg.get("cache_max_bytes") == default_cache_bytes()
    assert 0 < cfg.get("cache_max_bytes") <= 2**30
    assert cfg.get("cache_compressed_bytes") == 0
    assert cfg.get("cache_enabled") is True


def test_package_exports_the_process_wide_instance() -> None:
    assert chunkflow.cache.config is config and isinstance(config, Config)
    assert chunkflow.config is config
    assert set(chunkflow.cache.__all__) >= {
        "Config", "config", "ChunkCache", "CacheStats", "get_cache", "cache_info"
    }


def test_set_applies_immediately_and_persists_without_with(clean_env: pytest.MonkeyPatch) -> None:
    cfg = Config()
    cfg.set(cache_max_bytes=1234)
    assert cfg.get("cache_max_bytes") == 1234


def test_context_manager_restores_previous_values(clean_env: pytest.MonkeyPatch) -> None:
    cfg = Config()
    before = cfg.get("cache_max_bytes")
    with cfg.set(cache_max_bytes=100, cache_enabled=False) as inside:
        assert inside is cfg
        assert cfg.get("cache_max_bytes") == 100 and cfg.get("cache_enabled") is False
        with cfg.set(cache_max_bytes=200):
            assert cfg.get("cache_max_bytes") == 200
        assert cfg.get("cache_max_bytes") == 100
    assert cfg.get("cache_max_bytes") == before and cfg.get("cache_enabled") is True


def test_context_manager_restores_after_an_error(clean_env: pytest.MonkeyPatch) -> None:
    cfg = Config()
    with pytest.raises(RuntimeError), cfg.set(cache_compressed_bytes=10):
        raise RuntimeError("boom")
    assert cfg.get("cache_compressed_bytes") == 0


def test_environment_variables(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("CHUNKFLOW_CACHE_MAX_BYTES", "123456")
    clean_env.setenv("CHUNKFLOW_CACHE_COMPRESSED_BYTES", "64 MiB")
    clean_env.setenv("CHUNKFLOW_CACHE_ENABLED", "false")
    cfg = Config()
    assert cfg.get("cache_max_bytes") == 123456
    assert cfg.get("cache_compressed_bytes") == 64 * 2**20
    assert cfg.get("cache_enabled") is False


@pytest.mark.parametrize(
    ("variable", "raw"),
    [("CHUNKFLOW_CACHE_MAX_BYTES", "lots"), ("CHUNKFLOW_CACHE_MAX_BYTES", "-5"),
     ("CHUNKFLOW_CACHE_ENABLED", "maybe")],
)
def test_bad_environment_variable_is_named(
    clean_env: pytest.MonkeyPatch, variable: str, raw: str
) -> None:
    clean_env.setenv(variable, raw)
    with pytest.raises(ValueError, match=variable) as info:
        Config()
    assert repr(raw) in str(info.value)


def test_unknown_setting_lists_the_known_ones() -> None:
    with pytest.raises(KeyError, match="cache_max_bytes.*cache_compressed_bytes.*cache_enabled"):
        config.get("cache_size")
    with pytest.raises(KeyError, match="'cache_size'"):
        config.set(cache_size=10)


@pytest.mark.parametrize(
    ("name", "value"),
    [("cache_max_bytes", -1), ("cache_max_bytes", 1.5), ("cache_max_bytes", "huge"),
     ("cache_max_bytes", None), ("cache_max_bytes", True), ("cache_compressed_bytes", [1]),
     ("cache_enabled", 2), ("cache_enabled", "perhaps"), ("cache_enabled", None),
     ("io_threads", 0), ("io_threads", "many"), ("io_threads", 2.5), ("io_threads", True)],
)
def test_bad_values_name_the_setting_and_value(name: str, value: object) -> None:
    before = repr(config)
    with pytest.raises(ValueError, match=name) as info:
        config.set(**{name: value})
    assert repr(value) in str(info.value)
    assert repr(config) == before  # nothing applied


def test_a_bad_value_applies_none_of_the_change() -> None:
    before = config.get("cache_max_bytes")
    with pytest.raises(ValueError):
        config.set(cache_max_bytes=before + 1, cache_enabled="perhaps")
    assert config.get("cache_max_bytes") == before


def test_accepted_spellings(clean_env: pytest.MonkeyPatch) -> None:
    cfg = Config()
    cfg.set(cache_max_bytes=np.int64(10), cache_compressed_bytes=1e6, cache_enabled="on")
    assert cfg.get("cache_max_bytes") == 10 and type(cfg.get("cache_max_bytes")) is int
    assert cfg.get("cache_compressed_bytes") == 1_000_000
    assert cfg.get("cache_enabled") is True
    cfg.set(cache_max_bytes="1.5 KiB", cache_enabled="0")
    assert cfg.get("cache_max_bytes") == 1536 and cfg.get("cache_enabled") is False


def test_repr_shows_current_values(clean_env: pytest.MonkeyPatch) -> None:
    cfg = Config()
    with cfg.set(cache_max_bytes=777):
        text = repr(cfg)
    assert text.startswith("Config(") and "cache_max_bytes=777" in text
    assert "cache_compressed_bytes=0" in text and "cache_enabled=True" in text


def test_concurrent_changes_and_reads(clean_env: pytest.MonkeyPatch) -> None:
    # Settings are process-wide: scoped changes made by several threads at once may
    # restore each other's values (as with dask.config), but every read sees a whole,
    # valid setting and nothing raises.
    cfg = Config()

    def work(seed: int) -> None:
        for i in range(500):
            with cfg.set(cache_compressed_bytes=seed * 1000 + i, cache_enabled=i % 2 == 0):
                assert isinstance(cfg.get("cache_compressed_bytes"), int)
                assert cfg.get("cache_enabled") in (True, False)
                repr(cfg)

    with ThreadPoolExecutor(4) as pool:
        for future in [pool.submit(work, seed) for seed in range(4)]:
            future.result()  # re-raises what a worker raised


# --- byte sizes and flags -------------------------------------------------------------

@pytest.mark.parametrize(
    ("text", "expected"),
    [("0", 0), ("1000", 1000), ("1e9", 10**9), ("10 kB", 10_000), ("2GiB", 2 * 2**30),
     ("3 b", 3), (" 4 MB ", 4 * 10**6), ("1.5 KiB", 1536)],
)
def test_byte_sizes_in_text(clean_env: pytest.MonkeyPatch, text: str, expected: int) -> None:
    cfg = Config()
    cfg.set(cache_compressed_bytes=text)
    assert cfg.get("cache_compressed_bytes") == expected
    assert type(cfg.get("cache_compressed_bytes")) is int


@pytest.mark.parametrize("text", ["", "MiB", "-1", "ten", "5 parsecs", "1e", "1e400", "auto"])
def test_byte_sizes_refused(text: str) -> None:
    # dask's parse_bytes reads "" and "MiB" as a unit and "-1" as -1; a budget may not.
    with pytest.raises(SettingError, match="cache_compressed_bytes.*bytes") as info:
        config.set(cache_compressed_bytes=text)
    assert repr(text) in str(info.value)


def test_cache_budget_auto_is_the_default_size(clean_env: pytest.MonkeyPatch) -> None:
    cfg = Config()
    cfg.set(cache_max_bytes=123)
    cfg.set(cache_max_bytes=" AUTO ")
    assert cfg.get("cache_max_bytes") == default_cache_bytes()


def test_flags_accept_zero_and_one(clean_env: pytest.MonkeyPatch) -> None:
    # DASK_CHUNKFLOW__CACHE__ENABLED=0 reaches chunkflow as the integer 0 (ast.literal_eval).
    cfg = Config()
    cfg.set(cache_enabled=0)
    assert cfg.get("cache_enabled") is False
    cfg.set(cache_enabled=np.int64(1))
    assert cfg.get("cache_enabled") is True


def test_errors_are_chunkflow_errors() -> None:
    with pytest.raises(SettingError) as bad:
        config.set(cache_enabled="perhaps")
    assert isinstance(bad.value, ChunkflowError) and isinstance(bad.value, ValueError)
    with pytest.raises(UnknownSettingError) as unknown:
        config.get("cache_size")
    assert isinstance(unknown.value, ChunkflowError) and isinstance(unknown.value, KeyError)


# --- the same settings through dask.config --------------------------------------------

KEYS = [
    ("cache_max_bytes", "chunkflow.cache.max-bytes", "1GiB", 2**30),
    ("cache_compressed_bytes", "chunkflow.cache.compressed-bytes", "64 MiB", 64 * 2**20),
    ("cache_enabled", "chunkflow.cache.enabled", False, False),
    ("recheck_cached_data", "chunkflow.cache.recheck-cached-data", 2.5, 2.5),
]


@pytest.mark.parametrize(("name", "key", "raw", "expected"), KEYS)
def test_dask_config_set_is_seen_by_chunkflow(name: str, key: str, raw: Any, expected: Any) -> None:
    before = config.get(name)
    with dask.config.set({key: raw}):
        assert config.get(name) == expected
    assert config.get(name) == before


@pytest.mark.parametrize(("name", "key", "raw", "expected"), KEYS)
def test_chunkflow_set_is_seen_by_dask(name: str, key: str, raw: Any, expected: Any) -> None:
    before = dask.config.get(key)
    with config.set(**{name: raw}):
        # dask holds the checked value, so workers receive it checked.
        assert dask.config.get(key) == expected
        assert dask.config.get(key.replace("-", "_")) == expected  # dask's other spelling
    assert dask.config.get(key) == before


def test_underscore_spelling_of_a_dask_key_is_the_same_setting() -> None:
    with dask.config.set({"chunkflow.cache.max_bytes": "3 MiB"}):
        assert config.get("cache_max_bytes") == 3 * 2**20


def test_process_wide_cache_follows_dask_config() -> None:
    before = get_cache().max_bytes
    with dask.config.set({"chunkflow.cache.max-bytes": "1 MiB",
                          "chunkflow.cache.compressed-bytes": "2 MiB"}):
        cache = get_cache()
        assert (cache.max_bytes, cache.compressed_max_bytes) == (2**20, 2 * 2**20)
    assert get_cache() is cache and get_cache().max_bytes == before


def test_cache_enabled_through_dask_config_reaches_arrays() -> None:
    z = chunkflow.zeros((4,), chunks=(2,), dtype="i4")
    with dask.config.set({"chunkflow.cache.enabled": False}):
        assert z.options.resolve_cache() is None
    assert z.options.resolve_cache() is get_cache()


def test_bad_value_in_dask_config_is_named_when_read() -> None:
    with dask.config.set({"chunkflow.cache.max-bytes": "lots"}):
        with pytest.raises(SettingError, match="'chunkflow.cache.max-bytes'") as info:
            config.get("cache_max_bytes")
        message = str(info.value)
        assert "'lots'" in message and "DASK_CHUNKFLOW__CACHE__MAX_BYTES" in message
        assert "cache_max_bytes" in message and "number of bytes" in message
        with pytest.raises(SettingError, match="max-bytes"):
            get_cache()  # never a cache of a guessed size
        assert "cache_max_bytes=<invalid 'lots'>" in repr(config)  # repr does not raise


def test_defaults_are_registered_with_dask(clean_env: pytest.MonkeyPatch) -> None:
    registered = [d for d in dask.config.defaults if "chunkflow" in d]
    assert registered and registered[-1]["chunkflow"]["cache"]["max-bytes"] == "auto"
    # A dask.config.refresh() (here into a fresh dict) keeps chunkflow's defaults.
    fresh: dict[str, Any] = {}
    dask.config.refresh(config=fresh)
    assert Config(fresh).get("cache_max_bytes") == default_cache_bytes()
    assert Config(fresh).get("recheck_cached_data") == "open"


def test_a_dask_config_without_chunkflow_keys_reads_the_built_in_defaults() -> None:
    assert Config({}).get("cache_enabled") is True
    assert Config({}).get("cache_max_bytes") == default_cache_bytes()
    assert "max-bytes: auto" in DEFAULTS_FILE.read_text()


# --- environment variables and precedence ---------------------------------------------

def test_dask_environment_variables(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("DASK_CHUNKFLOW__CACHE__MAX_BYTES", "1 MiB")
    clean_env.setenv("DASK_CHUNKFLOW__CACHE__COMPRESSED_BYTES", "4096")
    clean_env.setenv("DASK_CHUNKFLOW__CACHE__ENABLED", "0")
    clean_env.setenv("DASK_CHUNKFLOW__CACHE__RECHECK_CACHED_DATA", "false")
    cfg = Config()
    assert cfg.get("cache_max_bytes") == 2**20
    assert cfg.get("cache_compressed_bytes") == 4096
    assert cfg.get("cache_enabled") is False
    assert cfg.get("recheck_cached_data") is False


def test_dask_variable_wins_over_the_old_one(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("CHUNKFLOW_CACHE_MAX_BYTES", "1000")
    clean_env.setenv("CHUNKFLOW_CACHE_ENABLED", "false")
    clean_env.setenv("DASK_CHUNKFLOW__CACHE__MAX_BYTES", "2000")
    cfg = Config()
    assert cfg.get("cache_max_bytes") == 2000  # both set: the dask spelling
    assert cfg.get("cache_enabled") is False  # only the old one set: it still counts
    with cfg.set(cache_max_bytes=3000):  # a set beats both variables
        assert cfg.get("cache_max_bytes") == 3000


def test_bad_dask_environment_variable_is_named(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("DASK_CHUNKFLOW__CACHE__MAX_BYTES", "lots")
    with pytest.raises(SettingError, match="DASK_CHUNKFLOW__CACHE__MAX_BYTES") as info:
        Config()
    assert "'lots'" in str(info.value)


def _fresh_processes(code: str, *envs: dict[str, str]) -> list[subprocess.CompletedProcess[str]]:
    """Run ``code`` in one new interpreter per environment, all at once (imports are slow)."""
    environ = {k: v for k, v in os.environ.items() if k not in ENV}
    runs = [subprocess.Popen([sys.executable, "-c", code], env={**environ, **env}, cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for env in envs]
    results = []
    for run in runs:
        out, err = run.communicate(timeout=300)
        results.append(subprocess.CompletedProcess(run.args, run.returncode, out, err))
    return results


READ_ALL = """
import json, dask.config, chunkflow
print(json.dumps([chunkflow.config.get("cache_max_bytes"),
                  dask.config.get("chunkflow.cache.max-bytes"),
                  chunkflow.cache.get_cache().max_bytes]))
"""


@pytest.mark.slow
def test_precedence_in_a_new_process() -> None:
    inherited = dask.config.serialize({"chunkflow": {"cache": {"max-bytes": 4096}}})
    runs = _fresh_processes(
        READ_ALL,
        {"CHUNKFLOW_CACHE_MAX_BYTES": "1 KiB"},
        {"CHUNKFLOW_CACHE_MAX_BYTES": "1 KiB", "DASK_CHUNKFLOW__CACHE__MAX_BYTES": "2 KiB"},
        {"CHUNKFLOW_CACHE_MAX_BYTES": "1 KiB", "DASK_INTERNAL_INHERIT_CONFIG": inherited},
    )
    assert all(run.returncode == 0 for run in runs), [run.stderr for run in runs]
    old_alone, both, from_parent = (json.loads(run.stdout) for run in runs)
    # The old variable alone: seen by chunkflow, by dask and by the process-wide cache.
    assert old_alone == [1024, 1024, 1024]
    # Both variables: dask's spelling wins.
    assert both == [2048, "2 KiB", 2048]
    # Config a Nanny hands to its worker process (dask's inherited config) wins over the
    # old variable that the worker inherits too: the worker runs with its parent's setting.
    assert from_parent == [4096, 4096, 4096]


@pytest.mark.slow
def test_bad_old_variable_fails_the_import_with_its_name() -> None:
    (run,) = _fresh_processes("import chunkflow", {"CHUNKFLOW_CACHE_ENABLED": "maybe"})
    assert run.returncode != 0
    assert "SettingError: environment variable CHUNKFLOW_CACHE_ENABLED='maybe'" in run.stderr


# --- settings travel as dask config does ----------------------------------------------

def _budget() -> int:
    return chunkflow.config.get("cache_max_bytes")  # type: ignore[no-any-return]


def test_threads_see_a_with_block() -> None:
    with dask.config.set({"chunkflow.cache.max-bytes": "5 MiB"}):
        tasks = [dask.delayed(_budget)() for _ in range(4)]
        assert dask.compute(*tasks, scheduler="threads") == (5 * 2**20,) * 4
        with ThreadPoolExecutor(2) as pool:
            assert pool.submit(_budget).result() == 5 * 2**20


def _worker_view() -> tuple[int, bool, int]:
    return (chunkflow.config.get("cache_max_bytes"), chunkflow.config.get("cache_enabled"),
            chunkflow.cache.get_cache().max_bytes)


@pytest.mark.slow
def test_local_cluster_workers_receive_the_settings() -> None:
    distributed = pytest.importorskip("distributed")
    with chunkflow.config.set(cache_max_bytes="3 MiB", cache_enabled=False), \
            distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                     dashboard_address=":0") as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        assert list(client.run(_worker_view).values()) == [(3 * 2**20, False, 3 * 2**20)]
        assert client.submit(_worker_view, pure=False).result() == (3 * 2**20, False, 3 * 2**20)


def test_a_bare_number_in_a_dask_variable_is_seconds(clean_env: pytest.MonkeyPatch) -> None:
    # dask reads "0" as the integer 0: zero seconds (check every time), unlike the old
    # variable, where "0" is False (never check). Documented; the safer of the two.
    clean_env.setenv("DASK_CHUNKFLOW__CACHE__RECHECK_CACHED_DATA", "0")
    assert Config().get("recheck_cached_data") == 0.0
    clean_env.delenv("DASK_CHUNKFLOW__CACHE__RECHECK_CACHED_DATA")
    clean_env.setenv("CHUNKFLOW_RECHECK_CACHED_DATA", "0")
    assert Config().get("recheck_cached_data") is False


def test_io_threads_setting_sizes_the_pool_and_follows_changes(
    clean_env: pytest.MonkeyPatch,
) -> None:
    from chunkflow.engine import pool as parallel
    from chunkflow.cache.config import usable_cores

    assert Config().get("io_threads") == usable_cores()  # "auto"
    clean_env.setenv("CHUNKFLOW_IO_THREADS", "7")
    assert Config().get("io_threads") == 7  # the old variable still works
    with chunkflow.config.set(io_threads=3):
        assert dask.config.get("chunkflow.io.threads") == 3
        assert parallel.io_threads() == 3
        assert parallel._get_pool()._max_workers == 3
    with dask.config.set({"chunkflow.io.threads": "5"}):
        assert parallel._get_pool()._max_workers == 5
        z = chunkflow.array(np.arange(4096.0).reshape(64, 64), chunks=(8, 8), cache=False)
        assert float(z[...].sum()) == float(np.arange(4096.0).sum())
    assert parallel._get_pool()._max_workers == parallel.io_threads()


def test_auto_cache_budget_follows_a_worker_memory_limit() -> None:
    from chunkflow.cache.config import (
        auto_cache_bytes,
        cache_bytes_for,
        default_cache_bytes,
        worker_memory_limit,
    )

    assert worker_memory_limit() is None  # the test process hosts no worker
    assert auto_cache_bytes() == default_cache_bytes() == config.get("cache_max_bytes")
    assert auto_cache_bytes(400 * 2**20) == 50 * 2**20  # an eighth of a small worker
    assert auto_cache_bytes(2**40) == default_cache_bytes()  # never above the default
    assert cache_bytes_for(400 * 2**20) == 50 * 2**20
    assert cache_bytes_for(None) == default_cache_bytes()
    with config.set(cache_max_bytes="64 MiB"):
        assert cache_bytes_for(400 * 2**20) == 64 * 2**20  # a set budget is kept
    with config.set(cache_enabled=False):
        assert cache_bytes_for(400 * 2**20) == 0
