"""map_sharing: a few items of short work, the caller's thread taking a share."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import pytest

import chunkflow
from chunkflow.engine.pool import map_sharing, serial_io


def _threads(group: Sequence[int]) -> tuple[list[int], str]:
    return list(group), threading.current_thread().name


def test_the_caller_takes_the_first_group_and_the_pool_the_rest() -> None:
    with chunkflow.config.set({"chunkflow.io.threads": 2}):
        results = map_sharing(_threads, [1, 2, 3, 4])
    assert [group for group, _ in results] == [[1, 2], [3, 4]]  # one group per thread
    assert results[0][1] == threading.main_thread().name
    assert results[1][1].startswith("chunkflow-io")


def test_inline_when_serial_single_or_not_parallel() -> None:
    main = threading.main_thread().name
    with chunkflow.config.set({"chunkflow.io.threads": 2}):
        assert map_sharing(_threads, [1]) == [([1], main)]
        assert map_sharing(_threads, [1, 2], parallel=False) == [([1, 2], main)]
        with serial_io():
            assert map_sharing(_threads, [1, 2]) == [([1, 2], main)]
    assert map_sharing(_threads, []) == []


def test_an_error_in_the_callers_share_is_raised() -> None:
    def fail_first(group: Sequence[int]) -> None:
        if group[0] == 1:
            raise ValueError("first group")

    with chunkflow.config.set({"chunkflow.io.threads": 2}), \
            pytest.raises(ValueError, match="first group"):
        map_sharing(fail_first, [1, 2, 3, 4])


def test_windows_of_a_sharded_array_decode_their_inner_chunks_on_both_threads(
        monkeypatch: pytest.MonkeyPatch) -> None:
    z = chunkflow.create_array({}, shape=(512, 512), chunks=(256, 256), shards=(512, 512),
                               dtype="u4", cache=False)
    values = np.arange(512 * 512, dtype="u4").reshape(512, 512)
    z[...] = values
    stage = z._io.shards.stage
    seen: set[str] = set()
    decode = type(stage.inner).decode_into

    def recording(self: object, data: object, out: np.ndarray) -> None:
        seen.add(threading.current_thread().name)
        decode(self, data, out)

    monkeypatch.setattr(type(stage.inner), "decode_into", recording)
    with chunkflow.config.set({"chunkflow.io.threads": 2}):
        np.testing.assert_array_equal(z[100:400, 100:400], values[100:400, 100:400])
    assert threading.main_thread().name in seen and len(seen) == 2


def test_the_thread_setting_is_parsed_once_per_change(monkeypatch: pytest.MonkeyPatch) -> None:
    import dask

    from chunkflow.config.resources import usable_cores
    from chunkflow.engine import pool

    parsed: list[str] = []
    real = chunkflow.config.get

    def counting(key: str, *args: object) -> object:
        parsed.append(key)
        return real(key, *args)

    monkeypatch.setattr(pool.config, "get", counting)
    assert pool.io_threads() == usable_cores()  # "auto"
    parsed.clear()
    assert [pool.io_threads() for _ in range(5)] == [usable_cores()] * 5
    assert parsed == []
    with dask.config.set({"chunkflow.io.threads": 3}):
        assert pool.io_threads() == 3
        with dask.config.set({"chunkflow.io.threads": "5"}):  # a new value, parsed again
            assert pool.io_threads() == 5
        assert pool.io_threads() == 3
    assert pool.io_threads() == usable_cores() and parsed
