"""The labels a label job's first pass keeps for its write pass, and the gather that
numbers them (chunkflow.graph.labels.provisional, ranks.gather)."""

from __future__ import annotations

import numpy as np
import pytest

import chunkflow
from chunkflow.cache import ChunkCache
from chunkflow.graph.labels import provisional
from chunkflow.graph.labels.ranks import GATHER_STEP, gather


@pytest.mark.parametrize("size", [0, 1, GATHER_STEP - 1, GATHER_STEP, 3 * GATHER_STEP + 7])
@pytest.mark.parametrize("dtype", ["u2", "u4", "i4", "u8"])
def test_gather_equals_fancy_indexing(size: int, dtype: str) -> None:
    rng = np.random.default_rng(size)
    table = rng.integers(0, 2**32, 1000, dtype=np.uint64).astype(np.uint32)
    labels = rng.integers(0, 1000, size, dtype=np.int64).astype(dtype).reshape(-1, 1)
    got = gather(table, labels)
    assert got.dtype == table.dtype and got.shape == labels.shape
    np.testing.assert_array_equal(got, table[labels])


def test_kept_labels_are_taken_once_and_named_by_their_run() -> None:
    cache = ChunkCache(1 << 20)
    labels, rows = np.arange(6, dtype=np.uint32).reshape(2, 3), np.array([0, 0, 1])
    provisional.keep("a", (1, 2), labels, rows, cache=cache)
    assert provisional.take("b", (1, 2), cache=cache) is None  # another run's
    assert provisional.take("a", (2, 1), cache=cache) is None  # another block's
    kept = provisional.take("a", (1, 2), cache=cache)
    assert kept is not None
    np.testing.assert_array_equal(kept[0], labels)
    np.testing.assert_array_equal(kept[1], rows)
    assert provisional.take("a", (1, 2), cache=cache) is None  # taken: gone
    assert len(cache) == 0


def test_nothing_is_kept_without_a_run_or_a_cache_budget() -> None:
    cache = ChunkCache(1 << 20)
    provisional.keep(None, (0,), np.ones(4, np.uint32), np.zeros(1, np.int64), cache=cache)
    assert len(cache) == 0
    empty = ChunkCache(0)
    provisional.keep("a", (0,), np.ones(4, np.uint32), np.zeros(1, np.int64), cache=empty)
    assert len(empty) == 0
    with chunkflow.config.set({"chunkflow.cache.enabled": False}):
        provisional.keep("a", (0,), np.ones(4, np.uint32), np.zeros(1, np.int64))
        assert provisional.take("a", (0,)) is None


def test_what_a_resumed_job_skipped_is_dropped_at_the_end() -> None:
    cache = ChunkCache(1 << 20)
    for index in [(0, 0), (0, 1)]:
        provisional.keep("r", index, np.ones(4, np.uint32), np.zeros(1, np.int64), cache=cache)
    provisional.drop("r", [(0, 0), (0, 1), (1, 1)], cache=cache)
    assert len(cache) == 0


def test_a_label_job_leaves_nothing_in_the_process_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    from chunkflow.graph.labels import plan

    monkeypatch.setattr(plan, "new_run", lambda: "known-run")
    image = np.random.default_rng(3).random((30, 40)) > 0.5
    labels, _ = chunkflow.label(chunkflow.array(image, chunks=(8, 8)), chunkflow.MemoryStore(),
                                blocks=(1, 1))
    assert labels.shape == image.shape
    assert all(provisional.take("known-run", (i, j)) is None for i in range(4) for j in range(5))
