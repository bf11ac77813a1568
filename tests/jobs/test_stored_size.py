"""A large source's stored size on an object store: listings split along its folders,
the same total as one listing."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import chunkflow
from chunkflow.jobs import stored_size as stored_size_module
from chunkflow.jobs.stored_size import stored_bytes
from chunkflow.storage import MemoryStore

# Names of a store's keys: nested folders of a few names, some keys beside folders
# (zarr.json next to c/), some folders deeper than the split descends.
_names = st.sampled_from(["c", "0", "1", "12", "zarr.json", ".zattrs", "x"])
_keys = st.lists(st.lists(_names, min_size=1, max_size=6).map("/".join), max_size=40)


class _Remote(MemoryStore):
    """A memory store that says it is latency bound, so the split applies, and counts
    the requests a split makes."""

    latency_bound = True

    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter[str] = Counter()

    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        self.calls["list_dir"] += 1
        return super().list_dir(prefix)

    def getsize(self, key: str) -> int:
        self.calls["getsize"] += 1
        return super().getsize(key)

    def getsize_prefix(self, prefix: str) -> int:
        self.calls["getsize_prefix"] += 1
        return super().getsize_prefix(prefix)


class _Source:
    """The two things :func:`stored_bytes` asks of an array."""

    def __init__(self, store: Any, path: str, nshards: int) -> None:
        self.store, self.path, self.nshards = store, path, nshards


@settings(max_examples=150, deadline=None)
@given(keys=_keys, sizes=st.data(), path=st.sampled_from(["", "img", "a/b"]))
def test_a_split_listing_counts_every_key_once(keys: list[str], sizes: st.DataObject,
                                               path: str) -> None:
    inner = _Remote()
    for key in keys:
        # A key that is also a folder of another key cannot exist in a folder store.
        if any(other.startswith(key + "/") for other in keys):
            continue
        inner[f"{path}/{key}" if path else key] = b"x" * sizes.draw(st.integers(0, 50))
    inner["elsewhere/c/0"] = b"not below the path"
    source = _Source(inner, path, stored_size_module.SPLIT_FROM_OBJECTS)
    assert stored_bytes(source) == MemoryStore.getsize_prefix(inner, path)


def test_a_large_source_is_listed_folder_by_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stored_size_module, "SPLIT_FROM_OBJECTS", 16)
    store = _Remote()
    z = chunkflow.array(np.arange(64 * 64, dtype="u2").reshape(64, 64), chunks=(8, 8),
                        store=store, path="img")
    store.calls.clear()
    assert stored_bytes(z) == MemoryStore.getsize_prefix(store, "img") > z.nbytes // 10
    # The root (zarr.json asked by size), c/, and each of its 8 row folders: a level
    # of 8 chunks, listed whole, never asked key by key.
    assert store.calls == {"list_dir": 10, "getsize": 1, "getsize_prefix": 8}, store.calls


def test_a_small_or_local_source_is_one_listing(tmp_path: Any) -> None:
    z = chunkflow.array(np.zeros((64, 64), dtype="u1"), chunks=(8, 8),
                        store=str(tmp_path / "a.zarr"))
    assert stored_bytes(z) == z.store.getsize_prefix("")


@pytest.mark.s3
def test_a_split_listing_on_s3_matches_one_listing(
    s3_server: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stored_size_module, "SPLIT_FROM_OBJECTS", 1)
    url = "s3://chunkflow-test/stored-size.zarr"
    z = chunkflow.create_array(url, shape=(40, 40), chunks=(8, 8), dtype="u2",
                               storage_options=s3_server, overwrite=True)
    z[:] = np.arange(1600, dtype="u2").reshape(40, 40)
    assert z.store.latency_bound
    assert stored_bytes(z) == z.store.getsize_prefix("") > 0
