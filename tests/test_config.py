"""Tests of chunkflow.cache.config: the process-wide settings."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import chunkflow
import chunkflow.cache
from chunkflow.cache import Config, config
from chunkflow.cache.config import default_cache_bytes, parse_bytes

ENV = ("CHUNKFLOW_CACHE_MAX_BYTES", "CHUNKFLOW_CACHE_COMPRESSED_BYTES", "CHUNKFLOW_CACHE_ENABLED")


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
     ("cache_enabled", 2), ("cache_enabled", "perhaps"), ("cache_enabled", None)],
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


@pytest.mark.parametrize(
    ("text", "expected"),
    [("0", 0), ("1000", 1000), ("1e9", 10**9), ("10 kB", 10_000), ("2GiB", 2 * 2**30),
     ("3 b", 3), (" 4 MB ", 4 * 10**6)],
)
def test_parse_bytes(text: str, expected: int) -> None:
    assert parse_bytes(text) == expected


@pytest.mark.parametrize("text", ["", "-1", "ten", "5 parsecs", "1e"])
def test_parse_bytes_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="bytes"):
        parse_bytes(text)


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
