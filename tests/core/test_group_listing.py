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
