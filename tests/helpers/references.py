"""Virtual references for the tests: a NetCDF4 file written with h5netcdf (through
xarray), and kerchunk's references to it as a dict, a JSON file and Parquet."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

xr = pytest.importorskip("xarray")
pytest.importorskip("h5netcdf")
kerchunk_hdf = pytest.importorskip("kerchunk.hdf")

__all__ = ["KINDS", "json_references", "netcdf_dataset", "parquet_references", "references",
           "storage_options", "write_netcdf"]

#: The forms of references the tests open: in memory, a JSON file, Parquet.
KINDS = ["dict", "json", "parquet"]


def netcdf_dataset() -> Any:
    """A dataset with coordinates, attributes, a compressed float variable and an
    uncompressed integer one, chunked so that every variable has several chunks."""
    rng = np.random.default_rng(7)
    return xr.Dataset(
        {"temp": (("time", "y", "x"), rng.normal(size=(4, 12, 10)).astype("f4"), {"units": "K"}),
         "mask": (("y", "x"), (rng.random((12, 10)) > 0.5).astype("i1"))},
        coords={"x": np.arange(10.0), "y": np.arange(12) * 2, "time": np.arange(4)},
        attrs={"title": "virtual"},
    )


def write_netcdf(path: Path) -> Path:
    encoding = {"temp": {"chunksizes": (1, 6, 5), "zlib": True},
                "mask": {"chunksizes": (6, 10)}}
    netcdf_dataset().to_netcdf(path, engine="h5netcdf", encoding=encoding)
    return path


def references(url: str) -> dict[str, Any]:
    """kerchunk's references to the HDF5 file at ``url`` (no inlined chunks: every
    chunk is a byte range of the file)."""
    return kerchunk_hdf.SingleHdf5ToZarr(url, inline_threshold=0).translate()


def json_references(refs: dict[str, Any], path: Path) -> Path:
    path.write_text(json.dumps(refs))
    return path


def parquet_references(refs: dict[str, Any], path: Path) -> Path:
    """The references as Parquet (fsspec's LazyReferenceMapper format)."""
    pytest.importorskip("fastparquet")
    from kerchunk.df import refs_to_dataframe

    refs_to_dataframe(refs, str(path))
    return path


def storage_options(kind: str, netcdf: Path) -> dict[str, Any]:
    """``storage_options`` of a ``reference://`` store over ``netcdf``, its references
    in the form ``kind`` (one of :data:`KINDS`), written beside it."""
    refs = references(str(netcdf))
    if kind == "dict":
        return {"fo": refs}
    if kind == "json":
        return {"fo": str(json_references(refs, netcdf.parent / "refs.json"))}
    return {"fo": str(parquet_references(refs, netcdf.parent / "refs.parq")),
            "remote_protocol": "file"}
