"""Every chunkflow writer run the same way into any output, and what zarr-python reads
of the result: shared by the tests of writers into zarr-python stores and Icechunk
sessions (tests/graph/test_out_stores.py, tests/graph/test_icechunk_writers.py).

Each writer reads small sources kept in a folder (which every worker of a cluster
reads), writes into ``out``, and :func:`check_values` compares what it wrote with numpy
and scipy. :func:`documents` gives every metadata document of the output's hierarchy
as zarr-python parses it, so two outputs compare document by document.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import zarr
from scipy import ndimage

import chunkflow
from tests.helpers.pyramid_reference import reference_levels

IMAGE = ((np.arange(128 * 96, dtype="u2").reshape(128, 96) * 37) % 1009).astype("u2")
CELLS = (IMAGE // 200).astype("u4")  # a label image: plateaus of 6 labels
MASK = (IMAGE % 7) > 3

#: Writers that take ``commit=`` (copy and copy_all do not: the user commits).
COMMITTING = ("pyramid", "map_chunks", "label", "segment", "rechunk", "to_chunkflow", "store")
WRITERS = (*COMMITTING, "copy", "copy_all")
#: Writers whose output needs a root group first (they write below it).
INTO_A_GROUP = ("store", "copy", "copy_all")


def smooth(block: np.ndarray) -> np.ndarray:
    return ndimage.uniform_filter(block, size=3, mode="reflect")


def components(window: np.ndarray) -> np.ndarray:
    return ndimage.label(window)[0]


class Sources:
    """The sources of every writer, in ``folder``."""

    def __init__(self, folder: Path) -> None:
        attrs = {"title": "the image", "nested": {"unit": "um", "scale": [0.5, 0.25]}}
        self.image = chunkflow.array(IMAGE, chunks=(16, 16), store=str(folder / "image.zarr"),
                                     attributes=attrs, dimension_names=["y", "x"])
        self.cells = chunkflow.array(CELLS, chunks=(16, 16), store=str(folder / "cells.zarr"))
        self.mask = chunkflow.array(MASK, chunks=(16, 16), store=str(folder / "mask.zarr"))
        tree = chunkflow.open_group(str(folder / "tree.zarr"), mode="w", zarr_format=3,
                                    attributes={"about": "a tree", "n": 3})
        tree.create_array("a", data=IMAGE, chunks=(32, 32), attributes={"kind": "image"})
        sub = tree.create_group("sub", attributes={"level": 1})
        sub.create_array("m", data=MASK, chunks=(64, 48), attributes={"kind": "mask"})
        self.tree = tree


def prepare(writer: str, store: Any) -> None:
    """What the output holds before ``writer`` runs (a zarr-python store or a path)."""
    if writer in INTO_A_GROUP:
        zarr.open_group(store, mode="w", zarr_format=3)
    if writer == "store":
        zarr.create_array(store, name="target", shape=IMAGE.shape, chunks=(32, 24),
                          dtype="u4", attributes={"mine": [1, 2]}, dimension_names=["y", "x"])


def run(writer: str, outs: Callable[[], Any], sources: Sources, scheduler: Any,
        commit: str | None = None) -> None:
    """Run ``writer`` into ``outs()``: the output as the user passes it (a new one for
    each job that commits: a committed Icechunk session writes no more)."""
    image = sources.image
    out = outs()
    commit = commit if writer in COMMITTING else None
    if writer == "pyramid":
        chunkflow.pyramid(image, out, chunks=(16, 16), max_memory="256 KiB",
                          scheduler=scheduler, commit=commit)
        chunkflow.pyramid(sources.cells, outs(), labels="cells", chunks=(16, 16),
                          max_memory="256 KiB", scheduler=scheduler, commit=commit)
    elif writer == "map_chunks":
        chunkflow.map_chunks(smooth, image, out=out, depth=1, blocks=(2, 2),
                             scheduler=scheduler, commit=commit)
    elif writer == "label":
        chunkflow.label(sources.mask, out, blocks=(2, 2), scheduler=scheduler, commit=commit)
    elif writer == "segment":
        chunkflow.segment(components, sources.mask, out, depth=1, blocks=(2, 2),
                          scheduler=scheduler, commit=commit)
    elif writer == "rechunk":
        chunkflow.rechunk(image, (64, 8), out, max_memory="64 MiB", scheduler=scheduler,
                          commit=commit)
    elif writer == "to_chunkflow":
        chunkflow.to_chunkflow(chunkflow.to_dask(image) + 1, out, path="g/new",
                               chunks=(24, 40), attributes={"made": "by to_chunkflow"},
                               dimension_names=["y", "x"], scheduler=scheduler,
                               commit=commit)
    elif writer == "store":  # into the array that exists there
        target = chunkflow.open_array(out, path="target")
        chunkflow.store(chunkflow.to_dask(image) * 2, target, scheduler=scheduler,
                        commit=commit)
    elif writer == "copy":
        chunkflow.copy(image, out, name="copied", scheduler=scheduler)
    else:
        assert writer == "copy_all"
        chunkflow.copy_all(sources.tree, out, scheduler=scheduler)


def documents(store: Any) -> dict[str, Any]:
    """Every metadata document of the hierarchy in ``store`` as zarr-python parses it,
    by node path ("/" for the root)."""
    root = zarr.open(store, mode="r")
    found = {"/": _document(root)}
    if isinstance(root, zarr.Array):
        return found
    for path, node in root.members(max_depth=None):
        found[path] = _document(node)
    return found


def _document(node: Any) -> dict[str, Any]:
    return json.loads(json.dumps(node.metadata.to_dict(), default=str))


def values(store: Any, found: dict[str, Any]) -> dict[str, np.ndarray]:
    """The values of every array of ``found`` (:func:`documents`), by path."""
    return {path: np.asarray(zarr.open_array(store, path="" if path == "/" else path,
                                             mode="r")[...])
            for path, document in found.items() if document["node_type"] == "array"}


def no_marks(found: dict[str, Any]) -> None:
    """No node is marked as the output of an unfinished job."""
    for path, document in found.items():
        assert "chunkflow_job" not in document.get("attributes", {}), path


def check_values(writer: str, found: dict[str, np.ndarray]) -> None:
    """What ``writer`` wrote, against numpy and scipy."""
    if writer == "pyramid":  # every level (each from the one before), image and labels
        levels = sorted(int(path) for path in found if path.isdigit())
        for number, level in enumerate(reference_levels(IMAGE, (2, 2), "mean", len(levels))):
            np.testing.assert_array_equal(found[str(number)], level, err_msg=f"level {number}")
        for number, level in enumerate(reference_levels(CELLS, (2, 2), "mode", len(levels))):
            np.testing.assert_array_equal(found[f"labels/cells/{number}"], level,
                                          err_msg=f"label level {number}")
    elif writer == "map_chunks":
        np.testing.assert_array_equal(found["/"], smooth(IMAGE))
    elif writer in ("label", "segment"):
        np.testing.assert_array_equal(found["/"], ndimage.label(MASK)[0])
    elif writer == "rechunk":
        np.testing.assert_array_equal(found["/"], IMAGE)
    elif writer == "to_chunkflow":
        np.testing.assert_array_equal(found["g/new"], IMAGE + 1)
    elif writer == "store":
        np.testing.assert_array_equal(found["target"], IMAGE.astype("u4") * 2)
    elif writer == "copy":
        np.testing.assert_array_equal(found["copied"], IMAGE)
    else:
        np.testing.assert_array_equal(found["a"], IMAGE)
        np.testing.assert_array_equal(found["sub/m"], MASK)


def difference(expected: dict[str, Any], found: dict[str, Any]) -> dict[str, Any]:
    """What differs between two :func:`documents`, by node: nodes missing or
    unexpected, and the entries that differ (mappings shown by their keys)."""
    different: dict[str, Any] = {}
    for path in sorted(expected.keys() | found.keys()):
        want, got = expected.get(path), found.get(path)
        if want == got:
            continue
        if want is None or got is None:
            different[path] = "missing" if got is None else "unexpected"
            continue
        different[path] = {key: _short(want.get(key), got.get(key))
                           for key in sorted(want.keys() | got.keys())
                           if want.get(key) != got.get(key)}
    return different


def _short(want: Any, got: Any) -> Any:
    if isinstance(want, dict) and isinstance(got, dict):
        return f"expected keys {sorted(want)}, found {sorted(got)}"
    return want, got
