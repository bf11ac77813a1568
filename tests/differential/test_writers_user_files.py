"""Writers never touch a user's files: random folders of files and Zarr nodes, every
writer at a random place in them, with and without ``overwrite``.

The folders (:func:`chunkflow.testing.strategies.folder_trees`) hold files at random
paths (some named like chunk keys or metadata documents, with bytes that are not
Zarr) and Zarr nodes of either format and every chunk key layout, in groups and in
plain folders. Each writer goes to a random place (the root, a node, a folder of files,
a file, a new path), and the test predicts from the folder's own description, not from
chunkflow, what must happen:

- refused, with a chunkflow error, when a user's file is at, above or below that place,
  when an array would go where Zarr nodes no group holds are, or when a node is there
  and ``overwrite`` is false (and, for writers that create the groups above, when a
  plain folder above holds a file named like a node document); then every file and
  folder is exactly as before;
- otherwise written, and read back right (by zarr-python), and every file but those of
  the nodes replaced (the node there and those its groups hold) is byte-identical.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dask.array as da
import numpy as np
import pytest
from hypothesis import assume, event, example, given
from hypothesis import strategies as st

import chunkflow
from chunkflow.core.replacing import inspect_location
from chunkflow.errors import ChunkflowError, ForeignContentError
from chunkflow.storage import LocalStore
from chunkflow.testing import strategies as cst
from chunkflow.testing.strategies import FolderTree, NodeSpec
from tests.differential.conftest import budget
from tests.helpers.trees import files_kept, fingerprint

zarr = pytest.importorskip("zarr", minversion="3")

DATA = np.arange(1, 21, dtype="i4").reshape(4, 5)
ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Writer:
    """A writer at ``location`` below ``root``, and how to read its result back."""

    write: Callable[[Path, str, bool, Path], Any]  # root, location, overwrite, source
    expected: Callable[[], np.ndarray | None]  # an array's values; None: a group
    array: bool = True  # makes an array (else a group)
    always: bool = False  # replaces without being asked (mode="w", save)
    ancestors: bool = False  # writes into the root's store, creating the groups above
    zarr_format: int = 3  # of the groups it creates above
    member: bool = False  # a member of the group that holds the location


def _at(root: Path, location: str) -> str:
    return str(root / location) if location else str(root)


def _parent_group(root: Path, location: str) -> tuple[Any, str]:
    parent, _, name = location.rpartition("/")
    return chunkflow.open_group(_at(root, parent), mode="r+"), name


CREATION: dict[str, Writer] = {
    "create": Writer(lambda r, loc, ow, s: chunkflow.create(
        (4, 5), chunks=(2, 2), dtype="i4", fill_value=7, store=str(r), path=loc,
        overwrite=ow), lambda: np.full((4, 5), 7, "i4"), ancestors=True),
    "zeros": Writer(lambda r, loc, ow, s: chunkflow.zeros(
        (4, 5), chunks=(3, 3), dtype="i4", store=_at(r, loc), overwrite=ow, zarr_format=2,
        dimension_separator="/"), lambda: np.zeros((4, 5), "i4")),
    "array": Writer(lambda r, loc, ow, s: chunkflow.array(
        DATA, chunks=(2, 2), store=str(r), path=loc, overwrite=ow, zarr_format=2),
        lambda: DATA, ancestors=True, zarr_format=2),
    "create_array": Writer(lambda r, loc, ow, s: chunkflow.create_array(
        _at(r, loc), data=DATA, chunks=(1, 2), shards=(2, 4), overwrite=ow), lambda: DATA),
    "open_array(mode=w)": Writer(lambda r, loc, ow, s: chunkflow.open_array(
        str(r), mode="w", path=loc, shape=(4, 5), chunks=(4, 1), dtype="i4").set_basic_selection(
        ..., DATA), lambda: DATA, always=True, ancestors=True),
    "open_group(mode=w)": Writer(lambda r, loc, ow, s: chunkflow.open_group(
        _at(r, loc), mode="w", zarr_format=2), lambda: None, array=False, always=True),
    "save": Writer(lambda r, loc, ow, s: chunkflow.save(_at(r, loc), DATA), lambda: DATA,
                   always=True),
    "to_chunkflow": Writer(lambda r, loc, ow, s: chunkflow.to_chunkflow(
        da.from_array(DATA, chunks=(3, 3)), str(r), path=loc, overwrite=ow), lambda: DATA,
        ancestors=True),
    "Group.create_array": Writer(lambda r, loc, ow, s: (lambda g, n: g.create_array(
        n, data=DATA, chunks=(2, 2), overwrite=ow))(*_parent_group(r, loc)), lambda: DATA,
        member=True),
    "Group.create_group": Writer(lambda r, loc, ow, s: (lambda g, n: g.create_group(
        n, overwrite=ow))(*_parent_group(r, loc)), lambda: None, array=False, member=True),
    "Group.require_group(overwrite)": Writer(lambda r, loc, ow, s: (
        lambda g, n: g.require_group(n, overwrite=True))(*_parent_group(r, loc)),
        lambda: None, array=False, always=True, member=True),
    "copy": Writer(lambda r, loc, ow, s: (lambda g, n: chunkflow.copy(
        chunkflow.open(str(s), mode="r"), g, n, if_exists="replace" if ow else "raise"))(
        *_parent_group(r, loc)), lambda: DATA, member=True),
}

GRAPH: dict[str, Writer] = {
    "map_chunks": Writer(lambda r, loc, ow, s: chunkflow.map_chunks(
        np.negative, str(s), out=_at(r, loc), overwrite=ow, dtype="i4"), lambda: -DATA),
    "rechunk": Writer(lambda r, loc, ow, s: chunkflow.rechunk(
        str(s), (4, 2), _at(r, loc), max_memory="1 MiB", overwrite=ow), lambda: DATA),
    "pyramid": Writer(lambda r, loc, ow, s: chunkflow.pyramid(
        str(s), _at(r, loc), chunks=(2, 2), levels=2, overwrite=ow), lambda: DATA),
    "label": Writer(lambda r, loc, ow, s: chunkflow.label(
        str(s), _at(r, loc), overwrite=ow), lambda: _scipy().label(DATA)[0]),
}


@pytest.fixture(scope="module")
def source() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "source.zarr"
        chunkflow.array(DATA, chunks=(2, 3), store=str(path))
        yield path


def _member_location(draw: st.DrawFn, tree: FolderTree) -> str:
    groups = sorted(n.path for n in tree.nodes if n.kind == "group")
    assume(groups)
    parent = draw(st.sampled_from(groups))
    known = sorted(name for name in [*tree.files, *tree.folders(), *tree.node_paths]
                   if name.rpartition("/")[0] == parent and name != parent)
    name = draw(st.sampled_from([*known, f"{parent}/new" if parent else "new"]))
    return name


@st.composite
def cases(draw: st.DrawFn, writers: dict[str, Writer]) -> tuple[FolderTree, str, str, bool]:
    tree = draw(cst.folder_trees())
    name = draw(st.sampled_from(sorted(writers)))
    if writers[name].member:
        location = _member_location(draw, tree)
    else:
        location = draw(cst.tree_locations(tree))
    return tree, location, name, draw(st.booleans())


def _junk_above(tree: FolderTree, location: str, writer: Writer) -> bool:
    """Something in a plain folder above ``location`` where creating the groups above
    would read or write a group document: a file named like a node document (not
    Zarr, so refused), or a folder named as the group document to write."""
    parts = location.split("/") if location else []
    above = [a for a in ("/".join(parts[:i]) for i in range(len(parts)))
             if a not in tree.node_paths]
    document = "zarr.json" if writer.zarr_format == 3 else ".zgroup"
    return any(f"{a}/{doc}".lstrip("/") in tree.files for a in above
               for doc in ("zarr.json", ".zarray", ".zgroup")) or any(
        f"{a}/{document}".lstrip("/") in tree.folders() for a in above)


def _junk_at(tree: FolderTree, location: str) -> bool:
    """A file named like a node document at ``location``: a writer that opens what is
    there first says it is not valid metadata (a MetadataError) before it says so."""
    return any(f"{location}/{doc}".lstrip("/") in tree.files
               for doc in ("zarr.json", ".zarray", ".zgroup", ".zattrs"))


def refused(tree: FolderTree, location: str, writer: Writer, overwrite: bool) -> bool:
    """Whether the writer must refuse, from the folder's description alone."""
    if tree.foreign_below(location):
        return True
    if writer.array and tree.kept_below(location):
        return True
    if writer.ancestors and _junk_above(tree, location, writer):
        return True
    return location in tree.node_paths and not (overwrite or writer.always)


def _read(root: Path, location: str, writer: Writer) -> None:
    """The result, read by zarr-python, against what the writer writes."""
    expected = writer.expected()
    node = zarr.open(store=zarr.storage.LocalStore(str(root)), path=location, mode="r")
    if expected is None:
        assert isinstance(node, zarr.Group)
        return
    if isinstance(node, zarr.Group):  # a pyramid: its full-resolution level
        node = node["0"]
    np.testing.assert_array_equal(node[...], expected)


def check(tree: FolderTree, location: str, name: str, overwrite: bool, source: Path,
          writers: dict[str, Writer]) -> None:
    writer = writers[name]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "tree"
        tree.write(root)
        before = fingerprint(root)
        must_refuse = refused(tree, location, writer, overwrite)
        event("refused" if must_refuse else "written")
        try:
            writer.write(root, location, overwrite, source)
        except ChunkflowError as err:
            assert must_refuse, f"{name} at {location!r} refused: {err}"
            if tree.foreign_below(location) and not _junk_at(tree, location):
                assert isinstance(err, ForeignContentError), err
            assert fingerprint(root) == before, f"{name} at {location!r} changed files"
            return
        assert not must_refuse, f"{name} at {location!r} (overwrite={overwrite}) wrote"
        after = fingerprint(root)
        changed = files_kept(before, after)
        allowed = tree.replaceable(location, [n for n, d in before.items() if d != "folder"])
        assert set(changed) <= allowed, f"{name} at {location!r} touched {changed}"
        _read(root, location, writer)
        left = inspect_location(LocalStore(str(root)), location)
        assert left.foreign == (), f"{name} at {location!r} left {left.foreign}"


# Cases the suite found or that the issue names (a regression corpus: never shrinks).
MYDOCS = FolderTree({"thesis/chapter1.tex": b"user:tex", "photos/cat.jpg": b"user:jpg",
                     "todo.txt": b"user:todo"}, ())
MIXED = FolderTree({"a": b"user:"}, (  # a v3 group in a v2 group: copy replaces it
    NodeSpec("", "group", {"zarr_format": 2}), NodeSpec("b", "group", {"zarr_format": 2}),
    NodeSpec("b/a", "group", {"zarr_format": 3})))
JUNK_FOLDER = FolderTree({"a": b"user:", "zarr.json/a": b"user:"}, ())  # no group doc fits
NESTED = FolderTree({"g/notes.txt": b"user:n"}, (
    NodeSpec("g", "group", {"zarr_format": 3}),
    NodeSpec("g/a", "array", {"zarr_format": 2, "chunk_key_encoding": {
        "name": "v2", "separator": "/"}}, DATA[:3, :3].astype("i2")),
    NodeSpec("g/plain/kept", "array", {"zarr_format": 3}, DATA[:2, :2].astype("i2"))))


@budget(40)
@given(case=cases(CREATION))
@example(case=(MYDOCS, "", "create", True))
@example(case=(MYDOCS, "thesis", "array", True))
@example(case=(MYDOCS, "new", "create", False))
@example(case=(NESTED, "g/a", "Group.create_array", True))
@example(case=(NESTED, "g", "open_group(mode=w)", True))
@example(case=(NESTED, "g/plain", "zeros", True))
@example(case=(NESTED, "g/notes.txt", "save", True))
@example(case=(MIXED, "b/a", "copy", True))
@example(case=(JUNK_FOLDER, "new", "create", False))
def test_creation_writers_touch_no_user_file(case: tuple[FolderTree, str, str, bool],
                                             source: Path) -> None:
    check(*case, source, CREATION)


@budget(16)
@given(case=cases(GRAPH))
@example(case=(MYDOCS, "", "map_chunks", True))
@example(case=(NESTED, "g", "pyramid", True))
@example(case=(NESTED, "g/a", "label", False))
def test_graph_writers_touch_no_user_file(case: tuple[FolderTree, str, str, bool],
                                          source: Path) -> None:
    check(*case, source, GRAPH)


def _filter(root: Path, location: str, overwrite: bool, source: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "chunkflow", "filter", str(source), _at(root, location),
         "--uniform", "3", *(["--overwrite"] if overwrite else [])],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    if done.returncode:
        assert done.stderr.startswith("chunkflow filter: error:"), done.stderr
        # refused as the library refuses; what is at DST, before any work (exit 2)
        foreign = "not part of a Zarr node" in done.stderr or "is a file, not" in done.stderr
        assert done.returncode == 2 if foreign else done.returncode in (1, 2), done.stderr
        raise (ForeignContentError if foreign else ChunkflowError)(done.stderr)


COMMAND = {"filter": Writer(lambda r, loc, ow, s: _filter(r, loc, ow, s), lambda: _uniform())}


def _scipy() -> Any:
    return pytest.importorskip("scipy.ndimage")


def _uniform() -> np.ndarray:
    # The command filters integers in float64 and rounds into the source's dtype.
    return np.rint(_scipy().uniform_filter(DATA.astype("f8"), 3)).astype(DATA.dtype)


@budget(1)
@given(case=cases(COMMAND))
@example(case=(MYDOCS, "", "filter", True))
def test_the_filter_command_touches_no_user_file(case: tuple[FolderTree, str, str, bool],
                                                 source: Path) -> None:
    check(*case, source, COMMAND)
