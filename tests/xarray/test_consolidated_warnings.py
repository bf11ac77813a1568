"""The consolidated-metadata fallback warning: none for what chunkflow writes (single
arrays, OME-Zarr images) nor for stores that cannot hold consolidated metadata the user
writes (read-only stores, zip files, HTTP URLs); as engine="zarr" for the rest.

Each "none" is checked with warnings turned into errors: any RuntimeWarning or
UserWarning about consolidated metadata (or any other warning) fails the test.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import pytest

xr = pytest.importorskip("xarray")
zarr = pytest.importorskip("zarr", minversion="3.1")

import chunkflow  # noqa: E402
from chunkflow.errors import UnlistableGroupError  # noqa: E402
from chunkflow.storage import LocalStore, ZipStore  # noqa: E402
from tests.helpers.range_server import serve_ranges  # noqa: E402

FALLBACK = "Failed to open Zarr store with consolidated metadata"
URL_OPTIONS = {"storage_options": {"auto_mkdir": True}}


def no_warning(open_: Any, source: Any, **kwargs: Any) -> Any:
    """``open_(source, engine="chunkflow", ...)`` with every warning an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = open_(source, engine="chunkflow", **kwargs)
    if hasattr(result, "subtree"):
        result.load()  # the tree's variables read too
    return result


def warns_fallback(open_: Any, source: Any, **kwargs: Any) -> Any:
    with pytest.warns(RuntimeWarning, match=FALLBACK):
        return open_(source, engine="chunkflow", **kwargs)


def xarray_group(path: Path | Any, zarr_format: int = 3) -> None:
    """A dataset xarray writes without consolidated metadata (the zarr engine warns)."""
    ds = xr.Dataset({"t": (("y", "x"), np.arange(12.0).reshape(3, 4))}, attrs={"a": 1})
    ds.to_zarr(path, consolidated=False, zarr_format=zarr_format, mode="w")


def pyramid(path: Path, zarr_format: int) -> Path:
    image = np.arange(2 * 16 * 16, dtype="u2").reshape(2, 16, 16)
    chunkflow.pyramid(chunkflow.array(image, chunks=(1, 8, 8)), path, levels=2, axes="cyx",
                      zarr_format=zarr_format, scheduler="sync")
    chunkflow.pyramid(chunkflow.array((image[0] > 100).astype("u1"), chunks=(8, 8)), path,
                      labels="mask", levels=2, zarr_format=zarr_format, scheduler="sync")
    return path


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_what_chunkflow_writes_opens_without_warning(tmp_path: Path, zarr_format: int) -> None:
    """Pyramids (OME-Zarr images, labels) and single arrays, by path and file:// URL,
    through open_dataset, open_datatree and open_groups; engine="zarr" warns on the
    same pyramid."""
    image = pyramid(tmp_path / "image.zarr", zarr_format)
    single = tmp_path / "single.zarr"
    chunkflow.array(np.arange(6.0), chunks=(2,), store=single, zarr_format=zarr_format)
    for source, options in ((image, {}), (f"file://{image}", URL_OPTIONS)):
        no_warning(xr.open_datatree, source, **options)
        no_warning(xr.open_groups, source, **options)
        no_warning(xr.open_dataset, source, drop_variables=["1"], **options)
        for group in ("labels", "labels/mask", "0", "labels/mask/1"):
            no_warning(xr.open_dataset, source, group=group, drop_variables=["1"], **options)
    for source, options in ((single, {}), (f"file://{single}", URL_OPTIONS)):
        assert no_warning(xr.open_dataset, source, **options).single.values.tolist() == [
            0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
        no_warning(xr.open_datatree, source, **options)
    with pytest.warns(RuntimeWarning, match=FALLBACK), pytest.raises((ValueError, KeyError)):
        # It warns, then refuses the levels (v3: conflicting sizes; v2: no dimension names).
        xr.open_datatree(image, engine="zarr")


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_writable_stores_warn_as_the_zarr_engine(tmp_path: Path, zarr_format: int) -> None:
    """A group without consolidated metadata in a folder, a file:// URL or a writable
    zarr-python store: the warning, as engine="zarr" gives it (xarray's own suite
    checks the same)."""
    path = tmp_path / "data.zarr"
    xarray_group(path, zarr_format)
    with pytest.warns(RuntimeWarning, match=FALLBACK):
        xr.open_dataset(path, engine="zarr")
    warns_fallback(xr.open_dataset, path)
    warns_fallback(xr.open_dataset, f"file://{path}", **URL_OPTIONS)
    warns_fallback(xr.open_datatree, path)
    warns_fallback(xr.open_dataset, zarr.storage.LocalStore(path))
    assert no_warning(xr.open_dataset, path, consolidated=False).attrs == {"a": 1}


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_read_only_stores_do_not_warn(tmp_path: Path, zarr_format: int,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Store objects opened read-only (chunkflow's, zarr-python's, a StorePath of one,
    a read-only mapping) and a folder the user cannot write."""
    path = tmp_path / "data.zarr"
    xarray_group(path, zarr_format)
    expected = xr.open_dataset(path, engine="zarr", consolidated=False)
    read_only = zarr.storage.LocalStore(path, read_only=True)
    files = MappingProxyType({f.relative_to(path).as_posix(): f.read_bytes()
                              for f in path.rglob("*") if f.is_file()})
    for source in (LocalStore(path, read_only=True), read_only,
                   zarr.storage.StorePath(read_only), _memory_copy(zarr_format), files):
        xr.testing.assert_identical(no_warning(xr.open_dataset, source), expected)
    # A folder without write permission (root can write anywhere: os.access stands in).
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: (
        False if Path(p) == path and mode == os.W_OK else real_access(p, mode, **kw)))
    xr.testing.assert_identical(no_warning(xr.open_dataset, path), expected)
    monkeypatch.setattr(os, "access", real_access)
    warns_fallback(xr.open_dataset, path)


def _memory_copy(zarr_format: int) -> Any:
    """The group written into a zarr-python MemoryStore, opened read-only."""
    store = zarr.storage.MemoryStore()
    xarray_group(store, zarr_format)
    return store.with_read_only(True)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_zip_files_do_not_warn(tmp_path: Path, zarr_format: int) -> None:
    """A zip file (its central directory lists it whole: consolidated metadata would
    save nothing), as a path, chunkflow's ZipStore or zarr-python's."""
    zipped = tmp_path / "data.zip"
    with zarr.storage.ZipStore(zipped, mode="w") as store:
        xarray_group(store, zarr_format)
    expected = xr.open_dataset(zarr.storage.ZipStore(zipped, mode="r"), engine="zarr",
                               consolidated=False)
    for source in (zipped, ZipStore(zipped, mode="r"), zarr.storage.ZipStore(zipped, mode="r"),
                   f"zip::file://{zipped}"):
        xr.testing.assert_identical(no_warning(xr.open_dataset, source), expected)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``tmp_path`` over HTTP with folder listings (Python's http.server)."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(tmp_path)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", tmp_path
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_http_urls_do_not_warn(served: tuple[str, Path], zarr_format: int) -> None:
    """Over HTTP (a server that lists folders): an xarray group without consolidated
    metadata (engine="zarr" warns), a pyramid, a single array."""
    url, folder = served
    xarray_group(folder / "data.zarr", zarr_format)
    pyramid(folder / "image.zarr", zarr_format)
    chunkflow.array(np.arange(4), chunks=(2,), store=folder / "one.zarr", zarr_format=zarr_format)
    with pytest.warns(RuntimeWarning, match=FALLBACK):
        theirs = xr.open_dataset(f"{url}/data.zarr", engine="zarr")
    xr.testing.assert_identical(no_warning(xr.open_dataset, f"{url}/data.zarr"), theirs)
    tree = no_warning(xr.open_datatree, f"{url}/image.zarr")
    assert sorted(tree.children) == ["0", "1", "labels"]
    assert no_warning(xr.open_dataset, f"{url}/one.zarr").one.values.tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_http_without_listing(tmp_path: Path, zarr_format: int) -> None:
    """A server that cannot list folders: a single array opens (no warning); an
    OME-Zarr pyramid opens the members its metadata names, the same tree as from the
    folder; another group without consolidated metadata raises UnlistableGroupError (a
    dataset without its variables would be wrong), and with it opens without warning."""
    chunkflow.array(np.arange(4), chunks=(2,), store=tmp_path / "one.zarr")
    image = pyramid(tmp_path / "image.zarr", zarr_format)
    xarray_group(tmp_path / "data.zarr", zarr_format)
    shutil.copytree(tmp_path / "data.zarr", tmp_path / "consolidated.zarr")
    zarr.consolidate_metadata(str(tmp_path / "consolidated.zarr"))
    with serve_ranges(tmp_path) as server:
        assert no_warning(xr.open_dataset, f"{server.url}/one.zarr").one.values.tolist() == [
            0, 1, 2, 3]
        served = no_warning(xr.open_datatree, f"{server.url}/image.zarr")
        local = no_warning(xr.open_datatree, image)
        assert [node.path for node in served.subtree] == [node.path for node in local.subtree]
        xr.testing.assert_identical(served, local)
        labels = no_warning(xr.open_dataset, f"{server.url}/image.zarr", group="labels/mask",
                            drop_variables=["1"])
        assert labels["0"].dims == ("y", "x")
        with pytest.raises(UnlistableGroupError):
            no_warning(xr.open_dataset, f"{server.url}/data.zarr")
        no_warning(xr.open_dataset, f"{server.url}/consolidated.zarr")
