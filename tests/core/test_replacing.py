"""What a location holds: the keys of Zarr nodes told from everything else, on every
store backend, for every chunk key layout (written by chunkflow and by zarr-python),
and replacing deletes exactly the owned keys."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

import chunkflow
from chunkflow.core.replacing import inspect_location, refuse_foreign, write_node
from chunkflow.core.zarr_keys import array_layout
from chunkflow.errors import ForeignContentError
from chunkflow.storage import MemoryStore, Store

LAYOUTS: dict[str, dict[str, Any]] = {
    "v2 .": {"zarr_format": 2},
    "v2 /": {"zarr_format": 2, "chunk_key_encoding": {"name": "v2", "separator": "/"}},
    "v3 default /": {"zarr_format": 3},
    "v3 default .": {"zarr_format": 3, "chunk_key_encoding": {"name": "default",
                                                              "separator": "."}},
    "v3 v2 .": {"zarr_format": 3, "chunk_key_encoding": {"name": "v2", "separator": "."}},
    "v3 v2 /": {"zarr_format": 3, "chunk_key_encoding": {"name": "v2", "separator": "/"}},
    "v3 sharded": {"zarr_format": 3, "shards": (4, 6)},
}
# Keys below the array that look like chunks but are none of its own.
STRAYS = ["c/9/0", "9.0", "0.0.0", "c", "00.1", "c/0", "0/0/0", "-1.0", "notes.txt",
          "c/0/0/x", ".zgroup.bak"]


def _filled(store: Store, path: str, layout: dict[str, Any]) -> set[str]:
    data = np.arange(7 * 6, dtype="u2").reshape(7, 6) + 1
    chunkflow.create_array(store, name=path, data=data, chunks=(2, 3), **layout,
                           attributes={"a": 1})
    return set(store.list_prefix(path))


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_every_chunk_key_layout_is_owned_and_strays_are_foreign(make_store: Any,
                                                                layout: str) -> None:
    store = make_store()
    owned = _filled(store, "out", LAYOUTS[layout])
    # Just past the chunk grid: what an off-by-one would take for a chunk.
    doc = json.loads(store["out/zarr.json" if "out/zarr.json" in store else "out/.zarray"])
    found = array_layout(doc, doc["zarr_format"])
    assert found is not None and found.grid is not None
    edges = [found.encoding.encode((found.grid[0], 0)), found.encoding.encode((0, found.grid[1]))]
    strays: set[str] = set()
    for key in (f"out/{stray}" for stray in [*edges, *STRAYS]):
        # Only what a folder can hold too: no file "c" beside a folder "c".
        if not any(k == key or k.startswith(key + "/") or key.startswith(k + "/")
                   for k in owned | strays):
            strays.add(key)
    store.set_many(dict.fromkeys(strays, b"user data"))
    location = inspect_location(store, "out")
    assert location.kind == "array"
    assert set(location.owned) == owned and set(location.foreign) == strays
    whole = inspect_location(store, "")  # the root group created above it holds it
    assert whole.kind == "group" and set(whole.owned) == owned | {"zarr.json", ".zgroup"} & \
        set(store.list_prefix(""))
    assert set(whole.foreign) == strays
    if not store.supports_deletes:
        return
    store.delete_many([".zgroup", "zarr.json"])  # no root group: the array is no member
    whole = inspect_location(store, "")
    assert whole.kind is None and set(whole.kept) == owned and set(whole.foreign) == strays


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_replacing_deletes_exactly_the_owned_keys(make_store: Any, layout: str) -> None:
    store = make_store()
    if not store.supports_deletes:
        pytest.skip("a zip file cannot delete keys")
    owned = _filled(store, "g/out", LAYOUTS[layout])
    store["g/notes.txt"] = b"beside the node"
    store["other/file"] = b"elsewhere"
    before = set(store.list_prefix(""))
    write_node(store, "g/out", {"g/out/zarr.json": b'{"zarr_format": 3, "node_type": "group"}'},
               zarr_format=3, overwrite=True, what="test", array=False)
    assert set(store.list_prefix("")) == (before - owned) | {"g/out/zarr.json"}
    assert {"g/notes.txt", "other/file"} <= before - owned


def test_zarr_python_arrays_of_every_layout_are_owned() -> None:
    zarr = pytest.importorskip("zarr", minversion="3")
    from chunkflow.storage import make_store

    raw = zarr.storage.MemoryStore()
    root = zarr.open_group(raw, mode="w")
    data = np.arange(35, dtype="f4").reshape(5, 7)
    root.create_array("plain", data=data, chunks=(2, 3))
    root.create_array("sharded", data=data, chunks=(1, 2), shards=(2, 4))
    root.create_array("dotted", data=data, chunks=(2, 3),
                      chunk_key_encoding={"name": "default", "separator": "."})
    root.create_array("scalar", data=np.float32(3.5), chunks=())
    sub = root.create_group("sub")
    sub.create_array("v2like", data=data, chunks=(4, 4),
                     chunk_key_encoding={"name": "v2", "separator": "."})
    store = make_store(raw)
    location = inspect_location(store, "")
    everything = set(store.list_prefix(""))
    assert location.kind == "group" and set(location.owned) == everything
    assert "scalar/c" in everything and "sub/v2like/1.1" in everything
    assert location.foreign == () and location.kept == ()


def test_v2_hierarchy_of_zarr_python_2_layout_is_owned() -> None:
    store = MemoryStore()
    root = chunkflow.open_group(store, mode="w", zarr_format=2, attributes={"t": 1})
    root.array("a", np.arange(10), chunks=(3,))
    root.create_group("b").array("c", np.ones((2, 2)), chunks=(1, 1),
                                 dimension_separator="/")
    chunkflow.consolidate_metadata(store)
    location = inspect_location(store, "")
    assert ".zmetadata" in location.owned and ".zattrs" in location.owned
    assert set(location.owned) == set(store.list_prefix("")) and location.foreign == ()


def test_nodes_no_group_holds_are_kept_and_broken_documents_are_foreign() -> None:
    store = MemoryStore()
    root = chunkflow.open_group(store, path="g", mode="w")
    root.create_array("x", data=np.arange(4), chunks=(2,))
    chunkflow.create_array(store, name="g/plain/y", data=np.arange(3), chunks=(3,))
    del store["g/plain/zarr.json"]  # its folder is no group any more: y is held by none
    store.set_many({
        "g/broken/zarr.json": b"{not json",
        "g/x/.chunkflow-job/token/b0": b"",  # a job record beside the array
        "g/.chunkflow-job/token/b1": b"",
        "g/x/zarr.json.orig": b"{}",
        "g/empty/.zattrs": b"{}",
    })
    location = inspect_location(store, "g")
    assert set(location.owned) == {"g/zarr.json", "g/x/zarr.json", "g/x/c/0", "g/x/c/1",
                                   "g/x/.chunkflow-job/token/b0", "g/.chunkflow-job/token/b1"}
    assert set(location.kept) == {"g/plain/y/zarr.json", "g/plain/y/c/0"}
    assert set(location.foreign) == {"g/broken/zarr.json", "g/x/zarr.json.orig",
                                     "g/empty/.zattrs"}


def test_a_chunk_grid_chunkflow_cannot_read_still_names_its_keys() -> None:
    layout = array_layout({"shape": [5, 5], "chunk_grid": {"name": "rectilinear"},
                           "chunk_key_encoding": {"name": "default"}}, 3)
    assert layout is not None and layout.grid is None
    assert layout.holds("c/7/0") and not layout.holds("c/7")
    assert array_layout({"shape": [5], "chunks": [0]}, 2) is None
    assert array_layout({"shape": [5], "chunks": [2], "dimension_separator": "-"}, 2) is None


def test_refuse_foreign_names_a_few_keys_and_counts_the_rest() -> None:
    store = MemoryStore()
    store.set_many({f"out/file{i}.txt": b"" for i in range(8)})
    with pytest.raises(ForeignContentError, match=r"holds 8 keys .*'file0.txt'.* and 3 more"):
        refuse_foreign(store, "out", what="test")


def test_sorting_reads_each_node_document_once() -> None:
    from chunkflow.testing import CountingStore

    inner = MemoryStore()
    root = chunkflow.open_group(inner, mode="w")
    for name in "abc":
        root.create_array(name, data=np.arange(100), chunks=(1,))
    counting = CountingStore(inner)
    inspect_location(counting, "")
    # One listing, one batched read of the documents at the location, one of every
    # node document listed; no chunk is read.
    assert counting.counts.requests == 2 and counting.counts.calls["_list_prefix"] == 1
    assert all(key.endswith("zarr.json") for key in counting.counts.bytes_by_key)
