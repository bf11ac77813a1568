"""A seeded mutation loop over valid v2 and v3 documents: opening a node and reading a
chunk either works or raises a chunkflow error; never a raw Python exception."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import numpy as np
import pytest

import chunkflow
from chunkflow.errors import ChunkflowError
from chunkflow.storage import MemoryStore

V3_ARRAY = {
    "zarr_format": 3, "node_type": "array", "shape": [6, 4], "data_type": "int16",
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [3, 2]}},
    "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
    "fill_value": 0, "attributes": {"units": "m"}, "dimension_names": ["y", "x"],
    "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
               {"name": "zstd", "configuration": {"level": 1, "checksum": False}}],
}
V2_ARRAY = {
    "zarr_format": 2, "shape": [6, 4], "chunks": [3, 2], "dtype": "<i2",
    "compressor": {"id": "zlib", "level": 1}, "fill_value": 0, "order": "C",
    "filters": None, "dimension_separator": ".",
}
V3_GROUP = {
    "zarr_format": 3, "node_type": "group", "attributes": {"a": 1},
    "consolidated_metadata": {"kind": "inline", "must_understand": False,
                              "metadata": {"x": V3_ARRAY}},
}
V2_CONSOLIDATED = {"zarr_consolidated_format": 1,
                   "metadata": {".zgroup": {"zarr_format": 2}, "x/.zarray": V2_ARRAY,
                                "x/.zattrs": {"units": "m"}}}

HOSTILE_VALUES: list[Any] = [
    None, True, -1, 0, 2**63, 10**30, 1.5, float("nan"), "", "x" * 300, "\u0000", [], [0],
    [-1, 2], [10**12], [[1]], {}, {"name": 5}, {"name": "bytes"}, "int16", "|O", "r16",
    [["a", "<i4"], ["a", "<f8"]], {"kind": "inline", "metadata": 5},
]


def _mutate(doc: Any, rng: random.Random, depth: int = 0) -> Any:
    """One random change somewhere in ``doc``: delete, replace or nest a key."""
    if isinstance(doc, dict) and doc and depth < 4 and rng.random() < 0.6:
        key = rng.choice(sorted(doc))
        choice = rng.random()
        if choice < 0.2:
            del doc[key]
        elif choice < 0.6:
            doc[key] = _mutate(doc[key], rng, depth + 1)
        else:
            doc[key] = copy.deepcopy(rng.choice(HOSTILE_VALUES))
        return doc
    if isinstance(doc, list) and doc and depth < 4 and rng.random() < 0.6:
        i = rng.randrange(len(doc))
        doc[i] = _mutate(doc[i], rng, depth + 1)
        return doc
    return copy.deepcopy(rng.choice(HOSTILE_VALUES))


def _stores(seed: int) -> list[tuple[str, MemoryStore]]:
    rng = random.Random(seed)
    out = []
    for label, name, doc in (("v3 array", "zarr.json", V3_ARRAY), ("v2 array", ".zarray", V2_ARRAY),
                             ("v3 group", "zarr.json", V3_GROUP)):
        store = MemoryStore()
        mutated = _mutate(copy.deepcopy(doc), rng)
        store[name] = json.dumps(mutated, allow_nan=True).encode()
        store["c/0/0" if name == "zarr.json" else "0.0"] = bytes(rng.randrange(256)
                                                                  for _ in range(rng.randrange(40)))
        out.append((label, store))
    store = MemoryStore()
    store[".zgroup"] = b'{"zarr_format": 2}'
    store[".zmetadata"] = json.dumps(_mutate(copy.deepcopy(V2_CONSOLIDATED), rng),
                                     allow_nan=True).encode()
    out.append(("v2 consolidated", store))
    return out


def _exercise(store: MemoryStore) -> None:
    node = chunkflow.open(store, mode="r")
    if isinstance(node, chunkflow.Array):
        _ = node[(0,) * node.ndim] if node.ndim else node[()]
        _ = node.info  # computed eagerly: building the report is the exercise
    else:
        list(node.keys())
        node.tree()
        for _, member in node.members():
            if isinstance(member, chunkflow.Array) and member.size:
                member[(0,) * member.ndim]


def _check(seed: int) -> None:
    for label, store in _stores(seed):
        try:
            _exercise(store)
        except ChunkflowError:
            pass
        except Exception as err:  # the failure to report, with what caused it
            docs = {k: store[k][:300] for k in store.list_prefix("") if "json" in k or ".z" in k}
            raise AssertionError(
                f"seed {seed}, {label}: raw {type(err).__name__}: {err}\n{docs}"
            ) from err


@pytest.mark.parametrize("block", range(10))
def test_mutated_documents_give_only_chunkflow_errors(block: int) -> None:
    for seed in range(block * 200, block * 200 + 200):
        _check(seed)


@pytest.mark.slow
def test_mutated_documents_many_seeds() -> None:
    for seed in range(2000, 12000):
        _check(seed)


def _v3(**changes: Any) -> bytes:
    return json.dumps({**V3_ARRAY, **changes}).encode()


HOSTILE_DOCUMENTS = {
    "JSON nested 100,000 deep": (
        "zarr.json", b'{"zarr_format": 3, "node_type": "group", "attributes": {"a": '
        + b"[" * 100_000 + b"]" * 100_000 + b"}}", "too deeply"),
    "a 5,000-digit integer": (
        "zarr.json", _v3().replace(b'"shape": [6, 4]', b'"shape": [' + b"9" * 5000 + b", 4]"),
        "number too long"),
    "duplicate structured field names": (
        ".zarray", json.dumps({**V2_ARRAY, "dtype": [["a", "<i4"], ["a", "<f8"]]}).encode(),
        "occurs more than once"),
    "raw_bytes of 2**40": ("zarr.json", _v3(data_type="r" + str(8 * 2**40)), "cannot be represented"),
    "consolidated_metadata.metadata = {'x': 5}": (
        "zarr.json", json.dumps({**V3_GROUP, "consolidated_metadata": {
            "kind": "inline", "must_understand": False, "metadata": {"x": 5}}}).encode(),
        "entry 'x' must be a zarr.json object"),
    "a chunk of 2**63 elements": (
        ".zarray", json.dumps({**V2_ARRAY, "chunks": [3, 2**63]}).encode(), "positive ints"),
}


@pytest.mark.parametrize("case", list(HOSTILE_DOCUMENTS))
def test_each_hostile_document_gets_a_named_chunkflow_error(case: str) -> None:
    name, data, message = HOSTILE_DOCUMENTS[case]
    store = MemoryStore()
    store[name] = data
    with pytest.raises(ChunkflowError, match=message) as info:
        _exercise(store)
    assert "'/'" in str(info.value)  # the node is named


def test_a_chunk_too_large_to_allocate_is_named_at_first_read() -> None:
    store = MemoryStore()
    store["zarr.json"] = _v3(shape=[10**12], chunk_grid={
        "name": "regular", "configuration": {"chunk_shape": [10**12]}}, dimension_names=None,
        codecs=[{"name": "bytes", "configuration": {"endian": "little"}}], data_type="uint8")
    store["c/0"] = b"abc"
    z = chunkflow.open(store, mode="r")
    with pytest.raises(MemoryError, match=r"'c/0'.*could not be allocated") as info:
        z[:1]
    assert isinstance(info.value, ChunkflowError)


def test_the_unmutated_documents_open() -> None:
    store = MemoryStore()
    store["zarr.json"] = json.dumps(V3_ARRAY).encode()
    assert chunkflow.open(store, mode="r")[:].sum() == 0
    assert np.all(chunkflow.open(store, mode="r")[:] == 0)
