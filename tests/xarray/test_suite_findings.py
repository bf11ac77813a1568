"""engine="chunkflow" where xarray's own zarr tests found it differing from engine="zarr".

The fixes: async loading, zarr-python 3 ``Store`` objects, codecs in the
encoding, strings, folders named ``*.zip``, the errors and messages xarray relies on,
and the wrapper's shape that xarray's array-type checks inspect. The whole of
xarray's suite runs with ``python -m benchmarks.xarray_suite`` (see its README).
"""

from __future__ import annotations

import asyncio
import json
import threading
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

xr = pytest.importorskip("xarray")
zarr = pytest.importorskip("zarr", minversion="3.1")

import chunkflow  # noqa: E402
from chunkflow.errors import MetadataError, NodeNotFoundError  # noqa: E402
from chunkflow.storage import MemoryStore  # noqa: E402
from chunkflow.xarray import ChunkflowArrayWrapper, ChunkflowBackendEntrypoint  # noqa: E402

ENGINE = ChunkflowBackendEntrypoint
pytestmark = [
    pytest.mark.filterwarnings("ignore:Consolidated metadata is currently not part"),
    pytest.mark.filterwarnings("ignore:Failed to open Zarr store with consolidated:RuntimeWarning"),
]


def dataset() -> Any:
    rng = np.random.default_rng(1)
    return xr.Dataset(
        {"t": (("y", "x"), rng.normal(size=(6, 8))), "n": (("x",), np.arange(8, dtype="i2"))},
        coords={"x": np.arange(8) * 2.0},
        attrs={"title": "t"},
    )


# ------------------------------------------------------------------ load_async


class ThreadRecordingStore(MemoryStore):
    """A memory store that notes which threads read chunks."""

    def __init__(self) -> None:
        super().__init__()
        self.reader_threads: set[int] = set()

    def _get_many(self, keys: list[str]) -> dict[str, bytes]:
        if any("/c" in key for key in keys):
            self.reader_threads.add(threading.get_ident())
        return super()._get_many(keys)


def test_load_async_reads_off_the_event_loop() -> None:
    store = ThreadRecordingStore()
    root = chunkflow.group(store)
    for name in ("a", "b"):
        z = root.create_array(name, shape=(6, 8), chunks=(2, 4), dtype="f8",
                              dimension_names=("y", "x"))
        z[:] = np.arange(48).reshape(6, 8)
    expected = xr.open_dataset(store, engine=ENGINE, consolidated=False).load()

    async def load() -> tuple[Any, int]:
        ds = xr.open_dataset(store, engine=ENGINE, consolidated=False, chunk_cache=False)
        store.reader_threads.clear()
        loaded = await ds.load_async()
        return loaded, threading.get_ident()

    loaded, loop_thread = asyncio.run(load())
    xr.testing.assert_identical(loaded, expected)
    assert store.reader_threads and loop_thread not in store.reader_threads


SELECTIONS = {
    "basic-int": {"x": 2},
    "basic-slice": {"x": slice(1, 6, 2)},
    "outer": {"x": [5, 0, 3]},
    "vectorized": {"y": xr.Variable("points", [1, 4]), "x": xr.Variable("points", [0, 7])},
}


@pytest.mark.parametrize("selection", SELECTIONS, ids=str)
def test_load_async_of_selections(selection: str) -> None:
    """xarray's own async tests check these through zarr-python's async indexing; here
    the values, against the synchronous load."""
    store = zarr.storage.MemoryStore()
    dataset().to_zarr(store, zarr_format=3, consolidated=False)
    ds = xr.open_dataset(store, engine=ENGINE, consolidated=False)
    selected = ds.isel(SELECTIONS[selection])

    async def load() -> Any:
        return await asyncio.gather(selected.load_async(), selected["t"].load_async())

    whole, variable = asyncio.run(load())
    xr.testing.assert_identical(whole, selected.load())
    xr.testing.assert_identical(variable, selected["t"].load())


# ---------------------------------------------------------- zarr-python stores


def _zarr_stores(tmp_path: Path) -> dict[str, Any]:
    return {
        "memory": zarr.storage.MemoryStore(),
        "local": zarr.storage.LocalStore(tmp_path / "local.zarr"),
        "zip": zarr.storage.ZipStore(tmp_path / "data.zip", mode="w"),
        "fsspec": zarr.storage.FsspecStore.from_url(f"memory://xr-{tmp_path.name}/a.zarr"),
        "logging": zarr.storage.LoggingStore(zarr.storage.MemoryStore()),
        "dict": {},  # zarr-python wraps it and writes its Buffers into it
    }


@pytest.mark.parametrize("kind", ["memory", "local", "zip", "fsspec", "logging", "dict"])
@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.filterwarnings("ignore:Duplicate name:UserWarning")  # zarr-python rewrites zip members
def test_zarr_python_stores(tmp_path: Path, kind: str, zarr_format: int) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # fsspec's async wrapper note
        store = _zarr_stores(tmp_path)[kind]
    dataset().to_zarr(store, zarr_format=zarr_format, consolidated=True)
    if kind == "zip":  # zarr-python reads a zip file opened for reading only
        store.close()
        store = zarr.storage.ZipStore(tmp_path / "data.zip", mode="r")
    for chunks in (None, {}):
        by_zarr = xr.open_dataset(store, engine="zarr", chunks=chunks)
        ours = xr.open_dataset(store, engine=ENGINE, chunks=chunks)
        xr.testing.assert_identical(by_zarr.load(), ours.load())
    if kind == "zip":
        store.close()


# ----------------------------------------------------------- codecs, strings


def _encodings(zarr_format: int) -> dict[str, Any]:
    import numcodecs

    if zarr_format == 2:
        return {"t": {"compressors": (numcodecs.Blosc(cname="zstd", clevel=3, shuffle=2),),
                      "filters": (numcodecs.Delta(dtype="<f8"),)},
                "n": {"compressors": (numcodecs.Zlib(level=4),)}}
    return {"t": {"compressors": (zarr.codecs.BloscCodec(cname="lz4", clevel=5,
                                                         shuffle="bitshuffle", typesize=8),),
                  "serializer": zarr.codecs.BytesCodec(endian="big")},
            "n": {"compressors": (zarr.codecs.GzipCodec(level=2),),
                  "filters": (zarr.codecs.TransposeCodec(order=(0,)),)}}


def _codec_documents(path: Path, zarr_format: int) -> dict[str, Any]:
    """Each array's stored codec description, as the metadata documents hold it."""
    found = {}
    for name in ("t", "n"):
        if zarr_format == 2:
            doc = json.loads((path / name / ".zarray").read_text())
            found[name] = (doc["compressor"], doc["filters"])
        else:
            found[name] = json.loads((path / name / "zarr.json").read_text())["codecs"]
    return found


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_codecs_survive_read_then_to_zarr(tmp_path: Path, zarr_format: int) -> None:
    source, copy = tmp_path / "source.zarr", tmp_path / "copy.zarr"
    dataset().to_zarr(source, zarr_format=zarr_format, encoding=_encodings(zarr_format),
                      consolidated=False)
    by_zarr = xr.open_dataset(source, engine="zarr", consolidated=False)
    ours = xr.open_dataset(source, engine=ENGINE, consolidated=False)
    for name in ("t", "n"):
        for key in ("compressors", "filters", "serializer"):
            assert (key in ours[name].encoding) == (key in by_zarr[name].encoding), key
            if key in by_zarr[name].encoding:
                assert ours[name].encoding[key] == by_zarr[name].encoding[key], (name, key)
    ours.to_zarr(copy, zarr_format=zarr_format, consolidated=False)
    assert _codec_documents(copy, zarr_format) == _codec_documents(source, zarr_format)


def test_string_dtype_as_zarr_engine(tmp_path: Path) -> None:
    strings = np.array(["ab", "cdef", ""], dtype=np.dtypes.StringDType())
    objects = np.array(["x", "yy", "z"], dtype=object)
    ds = xr.Dataset({"s": (("i",), strings), "o": (("i",), objects)})
    for zarr_format in (2, 3):
        path = tmp_path / f"s{zarr_format}.zarr"
        ds.to_zarr(path, zarr_format=zarr_format, consolidated=False)
        by_zarr = xr.open_dataset(path, engine="zarr", consolidated=False)
        ours = xr.open_dataset(path, engine=ENGINE, consolidated=False)
        assert ours["o"].dtype == np.dtypes.StringDType()  # vlen-utf8, v2 and v3
        for name in ("s", "o"):
            assert ours[name].dtype == by_zarr[name].dtype
            assert ours[name].encoding["dtype"] == by_zarr[name].encoding["dtype"]
            assert ours[name][1].values == by_zarr[name][1].values  # a scalar read
        xr.testing.assert_identical(by_zarr.load(), ours.load())


# ------------------------------------------------------- paths, errors, shape


def test_folder_named_zip_is_a_folder(tmp_path: Path) -> None:
    path = tmp_path / "data.zarr.zip"
    dataset().to_zarr(str(path), mode="w", consolidated=False)  # zarr-python: a folder
    assert path.is_dir()
    ours = xr.open_dataset(str(path), engine=ENGINE, consolidated=False)
    xr.testing.assert_identical(xr.open_dataset(str(path), engine="zarr", consolidated=False),
                                ours)
    assert chunkflow.open_group(str(path), mode="r")["t"].shape == (6, 8)


def test_missing_store_does_not_exist(tmp_path: Path) -> None:
    missing = tmp_path / "missing.zarr"
    for open_ in (lambda: xr.open_dataset(missing, engine=ENGINE),
                  lambda: xr.open_dataset(str(missing), engine=ENGINE, chunks={}),
                  lambda: xr.open_datatree(missing, engine=ENGINE)):
        with pytest.raises(FileNotFoundError, match="does not exist") as info:
            open_()
        assert isinstance(info.value, NodeNotFoundError) and str(missing) in str(info.value)
    assert not missing.exists()


def test_missing_dimension_names_raise_key_error(tmp_path: Path) -> None:
    root = zarr.open_group(tmp_path / "tmp.zarr", mode="w")
    root.create_array("bar", shape=(3, 5), dtype=np.float32)
    with pytest.raises(KeyError, match="xarray to determine variable dimensions") as info:
        xr.open_dataset(tmp_path / "tmp.zarr", engine=ENGINE, consolidated=False)
    assert isinstance(info.value, MetadataError)


def test_wrapper_hides_the_array_from_xarray() -> None:
    """xarray takes an ``array`` attribute for something to look into (its array-type
    checks after indexing): the chunkflow array is behind get_array()."""
    z = chunkflow.array(np.arange(6), chunks=(2,))
    wrapper = ChunkflowArrayWrapper(z)
    assert not hasattr(wrapper, "array") and wrapper.get_array() is z
