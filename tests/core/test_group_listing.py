"""A group with members that cannot be opened still lists, shows its tree and info;
the others are named, with the reason, in a warning and in invalid_members()."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import chunkflow

PICKLED = {"zarr_format": 3, "node_type": "array", "shape": [2], "data_type": "string",
           "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
           "chunk_key_encoding": {"name": "default"}, "fill_value": "",
           "codecs": [{"name": "numcodecs.pickle"}]}


@pytest.fixture
def messy(tmp_path: Path) -> str:
    root = tmp_path / "g.zarr"
    g = chunkflow.group(str(root))
    g.create_array("ok", shape=(3,), chunks=(3,), dtype="u1")
    g.create_group("sub")
    for name, text in (("C:", '{"zarr_format": 3, "node_type": "group"}'),
                       ("a\\b", '{"zarr_format": 3, "node_type": "group"}'),
                       ("pickled", json.dumps(PICKLED)),
                       ("broken", "{not json")):
        os.makedirs(root / name)
        (root / name / "zarr.json").write_text(text)
    return str(root)


def test_listing_skips_and_names_what_cannot_be_opened(messy: str) -> None:
    g = chunkflow.open_group(messy, mode="r")
    with pytest.warns(UserWarning, match=r"skipped .*'C:'.*'a\\\\b'.*'broken'"):
        assert g.keys() == ["ok", "pickled", "sub"]
    with pytest.warns(UserWarning, match="pickle"):
        assert [name for name, _ in g.members()] == ["ok", "sub"]
    with pytest.warns(UserWarning):
        text = str(g.tree())
    assert "ok" in text and "sub" in text
    with pytest.warns(UserWarning):
        info = repr(g.info)
    assert "No. arrays  : 1" in info
    invalid = g.invalid_members()
    assert set(invalid) == {"C:", "a\\b", "pickled", "broken"}
    assert "allow_pickle" in invalid["pickled"] and "not valid JSON" in invalid["broken"]


def test_clean_groups_do_not_warn(tmp_path: Path) -> None:
    g = chunkflow.group(str(tmp_path / "clean.zarr"))
    g.create_array("x", shape=(2,), chunks=(2,), dtype="u1")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert g.keys() == ["x"] and g.invalid_members() == {}


# -- a store that cannot list is no empty group (issue 35, point 8) --------------------

def _served_group(folder: Path, zarr_format: int) -> Path:
    """An unconsolidated group written by chunkflow: an array and a subgroup."""
    import numpy as np

    root = chunkflow.open_group(str(folder / "g.zarr"), mode="w", zarr_format=zarr_format)
    a = root.create_array("a", shape=(4,), chunks=(2,), dtype="i2",
                          **({"dimension_names": ("x",)} if zarr_format == 3 else
                             {"attributes": {"_ARRAY_DIMENSIONS": ["x"]}}))
    a[:] = np.arange(1, 5)
    root.create_group("sub")
    return folder / "g.zarr"


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_a_server_that_cannot_list_folders_is_no_empty_group(tmp_path: Path,
                                                             zarr_format: int) -> None:
    import xarray as xr

    from chunkflow.errors import IncompleteListingError, UnlistableGroupError
    from tests.helpers.range_server import serve_ranges

    local = _served_group(tmp_path, zarr_format)
    with serve_ranges(tmp_path) as server:  # answers 404 for folders
        url = f"{server.url}/g.zarr"
        root = chunkflow.open_group(url, mode="r")
        for ask in (root.keys, lambda: list(root.members()), lambda: list(root.arrays()),
                    root.tree, lambda: root.info, lambda: len(root)):
            with pytest.raises(UnlistableGroupError, match=r"consolidate_metadata") as caught:
                ask()
            assert isinstance(caught.value, IncompleteListingError)  # and an OSError
        for consolidated in (None, False):
            with pytest.raises(UnlistableGroupError, match="cannot be listed"):
                xr.open_dataset(url, engine="chunkflow", consolidated=consolidated)
        with pytest.raises(UnlistableGroupError):
            xr.open_datatree(url, engine="chunkflow", consolidated=False)
        # Known paths need no listing.
        assert root["a"][:].tolist() == [1, 2, 3, 4]
        assert chunkflow.open_array(url, path="a", mode="r")[:].tolist() == [1, 2, 3, 4]
        assert "a" in root and "nothing" not in root
        # What the message says to do works: consolidate where the store lists.
        chunkflow.consolidate_metadata(str(local))
        assert chunkflow.open_group(url, mode="r").keys() == ["a", "sub"]
        ds = xr.open_dataset(url, engine="chunkflow")
        assert ds["a"].values.tolist() == [1, 2, 3, 4]
        with pytest.raises(IncompleteListingError):  # consolidated=False cannot list here
            xr.open_dataset(url, engine="chunkflow", consolidated=False)


def test_a_listing_that_raises_is_no_empty_group() -> None:
    from collections.abc import Iterator

    from chunkflow.errors import UnlistableGroupError
    from chunkflow.storage import MemoryStore

    class Refusing(MemoryStore):
        refuse = False

        def _list_prefix(self, prefix: str) -> Iterator[str]:
            if self.refuse:
                raise NotImplementedError("this backend does not list")
            return super()._list_prefix(prefix)

    store = Refusing()
    chunkflow.open_group(store, mode="w").create_array("a", shape=(2,), dtype="u1")
    store.refuse = True
    root = chunkflow.open_group(store, mode="r", use_consolidated=False)
    with pytest.raises(UnlistableGroupError, match="does not list"):
        root.keys()
    assert root["a"].shape == (2,)
