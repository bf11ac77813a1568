"""Text and notebook (HTML) reprs of arrays and groups: store URL, shards, members."""

from __future__ import annotations

from pathlib import Path

import chunkflow
from chunkflow.storage import LocalStore

BYTES = {"name": "bytes", "configuration": {"endian": "little"}}


def sharded(tmp_path: Path) -> chunkflow.Array:
    codecs = [{"name": "sharding_indexed",
               "configuration": {"chunk_shape": [4, 5], "codecs": [BYTES]}}]
    return chunkflow.create((16, 20), chunks=(8, 10), dtype="u2", codecs=codecs,
                            store=str(tmp_path / "s.zarr"))


def test_array_repr_shows_store_url(tmp_path: Path) -> None:
    a = chunkflow.create((6, 6), chunks=(3, 3), dtype="i4", store=str(tmp_path / "a.zarr"))
    url = LocalStore(tmp_path / "a.zarr").identity
    assert repr(a) == (f"<chunkflow.Array / shape=(6, 6) chunks=(3, 3) dtype=int32 "
                       f"zarr_format=3 store='{url}'>")


def test_sharded_array_repr_shows_shards_and_inner_chunks(tmp_path: Path) -> None:
    text = repr(sharded(tmp_path))
    assert "shards=(8, 10) inner_chunks=(4, 5)" in text
    assert "chunks=(8, 10)" not in text.replace("inner_chunks", "")


def test_group_repr_shows_store_url(tmp_path: Path) -> None:
    g = chunkflow.group(store=str(tmp_path / "g.zarr"))
    sub = g.create_group("sub")
    url = LocalStore(tmp_path / "g.zarr").identity
    assert repr(sub) == f"<chunkflow.Group /sub zarr_format=3 store='{url}'>"


def test_array_html_table(tmp_path: Path) -> None:
    a = chunkflow.create((6, 6), chunks=(3, 3), dtype="i4", fill_value=7,
                         store=str(tmp_path / "a.zarr"), path="x")
    a[:] = 1
    page = a._repr_html_()
    assert page.startswith("<table")
    for label, value in [("Path", "/x"), ("Shape", "(6, 6)"), ("Data type", "int32"),
                         ("Chunks", "(3, 3)"), ("Fill value", "7"), ("Zarr format", "3"),
                         ("Bytes", "144 B"), ("Bytes stored", str(a.nbytes_stored))]:
        assert f"<th style='text-align:left'>{label}</th><td style='text-align:left'>{value}" \
            in page, label
    assert LocalStore(tmp_path / "a.zarr").identity in page
    assert "Shards" not in page


def test_sharded_array_html_shows_shards_and_inner_chunks(tmp_path: Path) -> None:
    page = sharded(tmp_path)._repr_html_()
    assert "<th style='text-align:left'>Shards</th><td style='text-align:left'>(8, 10)" in page
    assert "<th style='text-align:left'>Inner chunks</th><td style='text-align:left'>(4, 5)" \
        in page
    assert "sharding_indexed(" in page


def test_v2_array_html_lists_compressor(tmp_path: Path) -> None:
    a = chunkflow.create((4,), chunks=(2,), dtype="f8", zarr_format=2,
                         compressor={"id": "zlib", "level": 1}, store=str(tmp_path / "v2"))
    page = a._repr_html_()
    assert "zlib(level=1)" in page and "<td style='text-align:left'>2</td>" in page


def test_html_escapes_names(tmp_path: Path) -> None:
    g = chunkflow.group(store=str(tmp_path / "g.zarr"))
    a = g.zeros("<b>", shape=(2,), dtype="u1")
    assert "&lt;b&gt;" in a._repr_html_() and "<b>" not in a._repr_html_().replace(
        "<b>chunkflow.Array</b>", "")
    assert "&lt;b&gt;" in g._repr_html_()


def test_group_html_lists_members_as_a_tree(tmp_path: Path) -> None:
    g = chunkflow.group(store=str(tmp_path / "g.zarr"))
    g.zeros("raw", shape=(10, 10), dtype="u2")
    g.create_group("labels").zeros("cells", shape=(10, 10), dtype="u4")
    page = g._repr_html_()
    assert "<td style='text-align:left'>2</td>" in page  # two members
    assert "<ul class='chunkflow-tree'>" in page
    for name in ("raw", "labels", "cells", "(10, 10) uint16", "(10, 10) uint32"):
        assert name in page


def test_stored_byte_count_only_where_listing_is_known_cheap() -> None:
    # A user mapping may be an fsspec mapper over S3: listing it on every display
    # would be slow, so only local folders, zip files and memory stores count bytes.
    mapped = chunkflow.create((4,), chunks=(2,), store={})
    assert "Bytes stored" not in mapped._repr_html_()
    assert "<th style='text-align:left'>Bytes</th>" in mapped._repr_html_()
    in_memory = chunkflow.create((4,), chunks=(2,), store="memory://repr-cheap")
    assert "Bytes stored" in in_memory._repr_html_()
