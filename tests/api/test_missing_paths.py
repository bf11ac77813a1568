"""Opening a path that does not exist says so.

Every open function raises a :class:`~chunkflow.errors.NodeNotFoundError` (a
``FileNotFoundError``, what zarr-python users catch) whose message says the location
does not exist when nothing at all is stored there, and keeps naming the missing
documents when something is there but no node.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import chunkflow
from chunkflow.errors import ArrayNotFoundError, GroupNotFoundError, NodeNotFoundError
from chunkflow.storage import MemoryStore

OPENERS: dict[str, Callable[[Any], Any]] = {
    "open": lambda where: chunkflow.open(where, mode="r"),
    "open_array": lambda where: chunkflow.open_array(where, mode="r"),
    "open_group": lambda where: chunkflow.open_group(where, mode="r"),
    "open_group r+": lambda where: chunkflow.open_group(where, mode="r+"),
    "open_consolidated": lambda where: chunkflow.open_consolidated(where),
    "Group": lambda where: chunkflow.Group(where, read_only=True),
    "load": lambda where: chunkflow.load(where),
}


@pytest.mark.parametrize("opener", OPENERS, ids=str)
def test_missing_folder_does_not_exist(tmp_path: Path, opener: str) -> None:
    missing = tmp_path / "nope.zarr"
    with pytest.raises(FileNotFoundError) as info:
        OPENERS[opener](str(missing))
    assert isinstance(info.value, NodeNotFoundError)
    message = str(info.value)
    assert "does not exist" in message and str(missing) in message
    assert "no array or group" not in message
    assert not missing.exists()  # reading created nothing


def test_missing_group_path_names_the_path(tmp_path: Path) -> None:
    chunkflow.open_group(str(tmp_path / "data.zarr"), mode="w").create_group("a")
    with pytest.raises(GroupNotFoundError, match=r"path 'a/b' in .* does not exist"):
        chunkflow.open_group(str(tmp_path / "data.zarr"), mode="r", path="a/b")


def test_something_there_but_no_node_keeps_the_documents_message() -> None:
    store = MemoryStore()
    store["x/c/0"] = b"stray chunk"
    with pytest.raises(ArrayNotFoundError, match="found neither 'x/zarr.json' nor 'x/.zarray'"):
        chunkflow.open_array(store, mode="r", path="x")
    with pytest.raises(NodeNotFoundError, match="no array or group at path 'x'"):
        chunkflow.open(store, mode="r", path="x")


@pytest.mark.slow
def test_cli_info_says_the_path_does_not_exist(tmp_path: Path) -> None:
    repo = str(Path(chunkflow.__file__).resolve().parents[1])
    done = subprocess.run([sys.executable, "-m", "chunkflow", "info", "nope.zarr"],
                          cwd=tmp_path, capture_output=True, text=True,
                          env={"PYTHONPATH": repo, "PATH": "/usr/bin:/bin"})
    assert done.returncode != 0
    assert "nope.zarr" in done.stderr and "does not exist" in done.stderr
    assert not (tmp_path / "nope.zarr").exists()
