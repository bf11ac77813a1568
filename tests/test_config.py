"""Tests of chunkflow.config: the settings, kept in dask.config under one name each."""

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
from chunkflow import config
from chunkflow.cache import get_cache
from chunkflow.config import DEFAULTS_FILE, SETTINGS
from chunkflow.config.resources import default_cache_bytes
from chunkflow.errors import ChunkflowError, SettingError, UnknownSettingError

ROOT = Path(__file__).resolve().parents[1]
MAX = "chunkflow.cache.max-bytes"
COMPRESSED = "chunkflow.cache.compressed-bytes"
ENABLED = "chunkflow.cache.enabled"
RECHECK = "chunkflow.cache.recheck-cached-data"
THREADS = "chunkflow.io.threads"
REQUESTS = "chunkflow.io.inflight-requests"
INFLIGHT = "chunkflow.io.inflight-bytes"
BACKEND = "chunkflow.io.object-backend"
FORMAT = "chunkflow.array.zarr-format"
DASK_ENV = ("DASK_CHUNKFLOW__CACHE__MAX_BYTES", "DASK_CHUNKFLOW__CACHE__COMPRESSED_BYTES",
            "DASK_CHUNKFLOW__CACHE__ENABLED", "DASK_CHUNKFLOW__CACHE__RECHECK_CACHED_DATA",
            "DASK_CHUNKFLOW__IO__THREADS", "DASK_CHUNKFLOW__IO__INFLIGHT_REQUESTS",
            "DASK_CHUNKFLOW__IO__INFLIGHT_BYTES")


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in DASK_ENV:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def fresh() -> dict[str, Any]:
    """A dask config as a new process would see it: defaults, YAML files, environment."""
    cfg: dict[str, Any] = {}
    dask.config.refresh(config=cfg)
    return cfg


def test_defaults(clean_env: pytest.MonkeyPatch) -> None:
    cfg = fresh()
    assert config.get(MAX, cfg) == default_cache_bytes()
    assert 0 < config.get(MAX, cfg) <= 2**30
    assert config.get(COMPRESSED, cfg) == 0
    assert config.get(ENABLED, cfg) is True
    assert config.get(RECHECK, cfg) == "open"


def test_package_exports_the_settings_module() -> None:
    assert chunkflow.config is config and config.__name__ == "chunkflow.config"
    assert SETTINGS == (MAX, COMPRESSED, ENABLED, RECHECK, THREADS, REQUESTS, INFLIGHT,
                        BACKEND, FORMAT)
    assert "config" not in chunkflow.cache.__all__  # one place for the settings
    assert set(chunkflow.cache.__all__) >= {"ChunkCache", "CacheStats", "get_cache", "cache_info"}


def test_set_applies_immediately_and_persists_without_with(clean_env: pytest.MonkeyPatch) -> None:
    cfg = fresh()
    config.set({MAX: 1234}, config=cfg)
    assert config.get(MAX, cfg) == 1234


def test_context_manager_restores_previous_values(clean_env: pytest.MonkeyPatch) -> None:
    cfg = fresh()
    before = config.get(MAX, cfg)
    with config.set({MAX: 100, ENABLED: False}, config=cfg):
        assert config.get(MAX, cfg) == 100 and config.get(ENABLED, cfg) is False
        with config.set({MAX: 200}, config=cfg):
            assert config.get(MAX, cfg) == 200
        assert config.get(MAX, cfg) == 100
    assert config.get(MAX, cfg) == before and config.get(ENABLED, cfg) is True


def test_context_manager_restores_after_an_error(clean_env: pytest.MonkeyPatch) -> None:
    cfg = fresh()
    with pytest.raises(RuntimeError), config.set({COMPRESSED: 10}, config=cfg):
        raise RuntimeError("boom")
    assert config.get(COMPRESSED, cfg) == 0


def test_keywords_spell_keys_as_dask_config_set_does() -> None:
    with config.set(chunkflow__cache__max_bytes="2 MiB", chunkflow__io__threads=3):
        assert config.get(MAX) == 2 * 2**20 and config.get(THREADS) == 3


def test_unknown_setting_lists_the_known_ones() -> None:
    with pytest.raises(KeyError, match="max-bytes.*compressed-bytes.*enabled"):
        config.get("chunkflow.cache.size")
    with pytest.raises(KeyError, match="'chunkflow.cache.size'"):
        config.set({"chunkflow.cache.size": 10})


@pytest.mark.parametrize("name", ["cache_max_bytes", "cache_enabled", "io_threads",
                                  "recheck_cached_data", "cache.max-bytes"])
def test_the_second_names_are_gone(name: str) -> None:
    # One name per setting: the dask key. The short names of the old Config are unknown.
    with pytest.raises(UnknownSettingError, match=repr(name)):
        config.get(name)
    with pytest.raises(UnknownSettingError):
        config.set({name: 1})


@pytest.mark.parametrize(
    ("key", "value"),
    [(MAX, -1), (MAX, 1.5), (MAX, "huge"), (MAX, None), (MAX, True), (COMPRESSED, [1]),
     (ENABLED, 2), (ENABLED, "perhaps"), (ENABLED, None),
     (THREADS, 0), (THREADS, "many"), (THREADS, 2.5), (THREADS, True),
     (REQUESTS, 0), (REQUESTS, "lots"), (REQUESTS, 1.5), (INFLIGHT, -1), (INFLIGHT, "big")],
)
def test_bad_values_name_the_setting_and_value(key: str, value: object) -> None:
    before = config.values()
    with pytest.raises(ValueError, match=key) as info:
        config.set({key: value})
    assert repr(value) in str(info.value)
    assert config.values() == before  # nothing applied


def test_a_bad_value_applies_none_of_the_change() -> None:
    before = config.get(MAX)
    with pytest.raises(ValueError):
        config.set({MAX: before + 1, ENABLED: "perhaps"})
    assert config.get(MAX) == before


def test_accepted_spellings(clean_env: pytest.MonkeyPatch) -> None:
    cfg = fresh()
    config.set({MAX: np.int64(10), COMPRESSED: 1e6, ENABLED: "on"}, config=cfg)
    assert config.get(MAX, cfg) == 10 and type(config.get(MAX, cfg)) is int
    assert config.get(COMPRESSED, cfg) == 1_000_000
    assert config.get(ENABLED, cfg) is True
    config.set({MAX: "1.5 KiB", ENABLED: "0"}, config=cfg)
    assert config.get(MAX, cfg) == 1536 and config.get(ENABLED, cfg) is False


def test_values_shows_every_current_value(clean_env: pytest.MonkeyPatch) -> None:
    cfg = fresh()
    with config.set({MAX: 777}, config=cfg):
        shown = config.values(cfg)
    assert list(shown) == list(SETTINGS) and shown[MAX] == 777
    assert shown[COMPRESSED] == 0 and shown[ENABLED] is True


def test_concurrent_changes_and_reads(clean_env: pytest.MonkeyPatch) -> None:
    # Settings are process-wide: scoped changes made by several threads at once may
    # restore each other's values (as with dask.config), but every read sees a whole,
    # valid setting and nothing raises.
    cfg = fresh()

    def work(seed: int) -> None:
        for i in range(500):
            with config.set({COMPRESSED: seed * 1000 + i, ENABLED: i % 2 == 0}, config=cfg):
                assert isinstance(config.get(COMPRESSED, cfg), int)
                assert config.get(ENABLED, cfg) in (True, False)
                config.values(cfg)

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
    cfg = fresh()
    config.set({COMPRESSED: text}, config=cfg)
    assert config.get(COMPRESSED, cfg) == expected
    assert type(config.get(COMPRESSED, cfg)) is int


@pytest.mark.parametrize("text", ["", "MiB", "-1", "ten", "5 parsecs", "1e", "1e400", "auto"])
def test_byte_sizes_refused(text: str) -> None:
    # dask's parse_bytes reads "" and "MiB" as a unit and "-1" as -1; a budget may not.
    with pytest.raises(SettingError, match="cache.compressed-bytes.*bytes") as info:
        config.set({COMPRESSED: text})
    assert repr(text) in str(info.value)


def test_cache_budget_auto_is_the_default_size(clean_env: pytest.MonkeyPatch) -> None:
    cfg = fresh()
    config.set({MAX: 123}, config=cfg)
    config.set({MAX: " AUTO "}, config=cfg)
    assert config.get(MAX, cfg) == default_cache_bytes()


def test_flags_accept_zero_and_one(clean_env: pytest.MonkeyPatch) -> None:
    # DASK_CHUNKFLOW__CACHE__ENABLED=0 reaches chunkflow as the integer 0 (ast.literal_eval).
    cfg = fresh()
    config.set({ENABLED: 0}, config=cfg)
    assert config.get(ENABLED, cfg) is False
    config.set({ENABLED: np.int64(1)}, config=cfg)
    assert config.get(ENABLED, cfg) is True


def test_errors_are_chunkflow_errors() -> None:
    with pytest.raises(SettingError) as bad:
        config.set({ENABLED: "perhaps"})
    assert isinstance(bad.value, ChunkflowError) and isinstance(bad.value, ValueError)
    with pytest.raises(UnknownSettingError) as unknown:
        config.get("chunkflow.cache.size")
    assert isinstance(unknown.value, ChunkflowError) and isinstance(unknown.value, KeyError)


# --- the same settings through dask.config --------------------------------------------

KEYS = [(MAX, "1GiB", 2**30), (COMPRESSED, "64 MiB", 64 * 2**20), (ENABLED, False, False),
        (RECHECK, 2.5, 2.5)]


@pytest.mark.parametrize(("key", "raw", "expected"), KEYS)
def test_dask_config_set_is_seen_by_chunkflow(key: str, raw: Any, expected: Any) -> None:
    before = config.get(key)
    with dask.config.set({key: raw}):
        assert config.get(key) == expected
    assert config.get(key) == before


@pytest.mark.parametrize(("key", "raw", "expected"), KEYS)
def test_chunkflow_set_is_seen_by_dask(key: str, raw: Any, expected: Any) -> None:
    before = dask.config.get(key)
    with config.set({key: raw}):
        # dask holds the checked value, so workers receive it checked.
        assert dask.config.get(key) == expected
        assert dask.config.get(key.replace("-", "_")) == expected  # dask's other spelling
    assert dask.config.get(key) == before


def test_underscore_spelling_of_a_dask_key_is_the_same_setting() -> None:
    with dask.config.set({"chunkflow.cache.max_bytes": "3 MiB"}):
        assert config.get(MAX) == 3 * 2**20
    with config.set({"chunkflow.cache.max_bytes": "4 MiB"}):
        assert config.get(MAX) == dask.config.get(MAX) == 4 * 2**20


def test_process_wide_cache_follows_dask_config() -> None:
    before = get_cache().max_bytes
    with dask.config.set({MAX: "1 MiB", COMPRESSED: "2 MiB"}):
        cache = get_cache()
        assert (cache.max_bytes, cache.compressed_max_bytes) == (2**20, 2 * 2**20)
    assert get_cache() is cache and get_cache().max_bytes == before


def test_cache_enabled_through_dask_config_reaches_arrays() -> None:
    z = chunkflow.zeros((4,), chunks=(2,), dtype="i4")
    with dask.config.set({ENABLED: False}):
        assert z.options.resolve_cache() is None
    assert z.options.resolve_cache() is get_cache()


def test_bad_value_in_dask_config_is_named_when_read() -> None:
    with dask.config.set({MAX: "lots"}):
        with pytest.raises(SettingError, match="'chunkflow.cache.max-bytes'") as info:
            config.get(MAX)
        message = str(info.value)
        assert "'lots'" in message and "DASK_CHUNKFLOW__CACHE__MAX_BYTES" in message
        assert "number of bytes" in message
        with pytest.raises(SettingError, match="max-bytes"):
            get_cache()  # never a cache of a guessed size


def test_defaults_are_registered_with_dask(clean_env: pytest.MonkeyPatch) -> None:
    registered = [d for d in dask.config.defaults if "chunkflow" in d]
    assert registered and registered[-1]["chunkflow"]["cache"]["max-bytes"] == "auto"
    # A dask.config.refresh() (here into a fresh dict) keeps chunkflow's defaults.
    cfg = fresh()
    assert config.get(MAX, cfg) == default_cache_bytes()
    assert config.get(RECHECK, cfg) == "open"


def test_a_dask_config_without_chunkflow_keys_reads_the_built_in_defaults() -> None:
    assert config.get(ENABLED, {}) is True
    assert config.get(MAX, {}) == default_cache_bytes()
    assert "max-bytes: auto" in DEFAULTS_FILE.read_text()


# --- environment variables and precedence ---------------------------------------------

def test_dask_environment_variables(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("DASK_CHUNKFLOW__CACHE__MAX_BYTES", "1 MiB")
    clean_env.setenv("DASK_CHUNKFLOW__CACHE__COMPRESSED_BYTES", "4096")
    clean_env.setenv("DASK_CHUNKFLOW__CACHE__ENABLED", "0")
    clean_env.setenv("DASK_CHUNKFLOW__CACHE__RECHECK_CACHED_DATA", "false")
    cfg = fresh()
    assert config.get(MAX, cfg) == 2**20
    assert config.get(COMPRESSED, cfg) == 4096
    assert config.get(ENABLED, cfg) is False
    assert config.get(RECHECK, cfg) is False
    with config.set({MAX: 3000}, config=cfg):  # a set beats the variable
        assert config.get(MAX, cfg) == 3000


def test_bad_dask_environment_variable_is_named(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("DASK_CHUNKFLOW__CACHE__MAX_BYTES", "lots")
    with pytest.raises(SettingError, match="DASK_CHUNKFLOW__CACHE__MAX_BYTES") as info:
        config.values(fresh())
    assert "'lots'" in str(info.value)


def _fresh_processes(code: str, *envs: dict[str, str]) -> list[subprocess.CompletedProcess[str]]:
    """Run ``code`` in one new interpreter per environment, all at once (imports are slow)."""
    environ = {k: v for k, v in os.environ.items() if k not in DASK_ENV}
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
print(json.dumps([chunkflow.config.get("chunkflow.cache.max-bytes"),
                  dask.config.get("chunkflow.cache.max-bytes"),
                  chunkflow.cache.get_cache().max_bytes]))
"""


@pytest.mark.slow
def test_precedence_in_a_new_process() -> None:
    inherited = dask.config.serialize({"chunkflow": {"cache": {"max-bytes": 4096}}})
    runs = _fresh_processes(
        READ_ALL,
        {"DASK_CHUNKFLOW__CACHE__MAX_BYTES": "2 KiB"},
        {"DASK_INTERNAL_INHERIT_CONFIG": inherited},
    )
    assert all(run.returncode == 0 for run in runs), [run.stderr for run in runs]
    variable, from_parent = (json.loads(run.stdout) for run in runs)
    # dask's variable: seen by chunkflow, by dask (as written) and by the process-wide cache.
    assert variable == [2048, "2 KiB", 2048]
    # Config a Nanny hands to its worker process (dask's inherited config) wins over the
    # built-in default: the worker runs with its parent's setting.
    assert from_parent == [4096, 4096, 4096]


@pytest.mark.slow
def test_bad_dask_variable_fails_the_import_with_its_name() -> None:
    (run,) = _fresh_processes("import chunkflow", {"DASK_CHUNKFLOW__CACHE__ENABLED": "maybe"})
    assert run.returncode != 0
    assert "SettingError: setting 'chunkflow.cache.enabled'" in run.stderr
    assert "DASK_CHUNKFLOW__CACHE__ENABLED" in run.stderr and "'maybe'" in run.stderr


# --- settings travel as dask config does ----------------------------------------------

def _budget() -> int:
    return chunkflow.config.get(MAX)  # type: ignore[no-any-return]


def test_threads_see_a_with_block() -> None:
    with dask.config.set({MAX: "5 MiB"}):
        tasks = [dask.delayed(_budget)() for _ in range(4)]
        assert dask.compute(*tasks, scheduler="threads") == (5 * 2**20,) * 4
        with ThreadPoolExecutor(2) as pool:
            assert pool.submit(_budget).result() == 5 * 2**20


def _worker_view() -> tuple[int, bool, int]:
    return (chunkflow.config.get(MAX), chunkflow.config.get(ENABLED),
            chunkflow.cache.get_cache().max_bytes)


@pytest.mark.slow
def test_local_cluster_workers_receive_the_settings() -> None:
    distributed = pytest.importorskip("distributed")
    with chunkflow.config.set({MAX: "3 MiB", ENABLED: False}), \
            distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                     dashboard_address=":0") as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        assert list(client.run(_worker_view).values()) == [(3 * 2**20, False, 3 * 2**20)]
        assert client.submit(_worker_view, pure=False).result() == (3 * 2**20, False, 3 * 2**20)


def test_a_bare_number_in_a_dask_variable_is_seconds(clean_env: pytest.MonkeyPatch) -> None:
    # dask reads "0" as the integer 0: zero seconds (check every time). Documented.
    clean_env.setenv("DASK_CHUNKFLOW__CACHE__RECHECK_CACHED_DATA", "0")
    assert config.get(RECHECK, fresh()) == 0.0


def test_io_threads_setting_sizes_the_pool_and_follows_changes(
    clean_env: pytest.MonkeyPatch,
) -> None:
    from chunkflow.config.resources import usable_cores
    from chunkflow.engine import pool as parallel

    assert config.get(THREADS, fresh()) == usable_cores()  # "auto"
    clean_env.setenv("DASK_CHUNKFLOW__IO__THREADS", "7")
    assert config.get(THREADS, fresh()) == 7
    with chunkflow.config.set({THREADS: 3}):
        assert dask.config.get(THREADS) == 3
        assert parallel.io_threads() == 3
        assert parallel._get_pool()._max_workers == 3
    with dask.config.set({THREADS: "5"}):
        assert parallel._get_pool()._max_workers == 5
        z = chunkflow.array(np.arange(4096.0).reshape(64, 64), chunks=(8, 8), cache=False)
        assert float(z[...].sum()) == float(np.arange(4096.0).sum())
    assert parallel._get_pool()._max_workers == parallel.io_threads()


def test_auto_cache_budget_follows_a_worker_memory_limit() -> None:
    from chunkflow.cache.capacity import cache_bytes_for
    from chunkflow.config.resources import auto_cache_bytes, worker_memory_limit

    assert worker_memory_limit() is None  # the test process hosts no worker
    assert auto_cache_bytes() == default_cache_bytes() == config.get(MAX)
    assert auto_cache_bytes(400 * 2**20) == 50 * 2**20  # an eighth of a small worker
    assert auto_cache_bytes(2**40) == default_cache_bytes()  # never above the default
    assert cache_bytes_for(400 * 2**20) == 50 * 2**20
    assert cache_bytes_for(None) == default_cache_bytes()
    with config.set({MAX: "64 MiB"}):
        assert cache_bytes_for(400 * 2**20) == 64 * 2**20  # a set budget is kept
    with config.set({ENABLED: False}):
        assert cache_bytes_for(400 * 2**20) == 0


def test_object_backend_choices() -> None:
    assert config.get(BACKEND) == "auto"
    with config.set({BACKEND: "OBSTORE"}):
        assert config.get(BACKEND) == "obstore"
    with pytest.raises(SettingError, match="'auto', 'obstore' or 'fsspec'.*'boto'"):
        config.set({BACKEND: "boto"})


def test_zarr_format_setting_picks_the_format_of_new_nodes() -> None:
    import chunkflow

    assert chunkflow.zeros(3).zarr_format == 3
    with config.set({FORMAT: "2"}):
        assert config.get(FORMAT) == 2
        assert chunkflow.zeros(3).zarr_format == 2
        assert chunkflow.group().zarr_format == 2
        assert chunkflow.create_array(None, shape=(2,), dtype="u1").zarr_format == 2
        assert chunkflow.zeros(3, zarr_format=3).zarr_format == 3  # an argument wins
    with pytest.raises(chunkflow.errors.SettingError, match="must be 2 or 3"):
        config.set({FORMAT: 4})
