"""engine="chunkflow" against xarray's own zarr engine, on stores xarray and chunkflow write."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import warnings
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tomllib

xr = pytest.importorskip("xarray")
zarr = pytest.importorskip("zarr", minversion="3.1")
pd = pytest.importorskip("pandas")

from dask.blockwise import Blockwise  # noqa: E402

import chunkflow  # noqa: E402
from chunkflow.errors import MetadataError  # noqa: E402
from chunkflow.storage import MemoryStore  # noqa: E402
from chunkflow.xarray import ChunkflowBackendEntrypoint  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


class NoConsolidatedStore(zarr.storage.WrapperStore):  # type: ignore[misc]
    """A zarr-python wrapper store that holds no consolidated metadata (as xarray's
    tests build one)."""

    supports_consolidated_metadata = False

pytestmark = [
    # zarr-python's notes on v3 consolidated metadata and on fixed-length strings in v3.
    pytest.mark.filterwarnings("ignore:Consolidated metadata is currently not part"),
    pytest.mark.filterwarnings("ignore:The data type .* does not have a Zarr V3 specification"),
    # Both engines warn when consolidated=None finds no consolidated metadata (tested below).
    pytest.mark.filterwarnings("ignore:Failed to open Zarr store with consolidated:RuntimeWarning"),
]

#: Encoding entries both engines fill (codecs as zarr-python's codec objects in both).
ENCODING_KEYS = ("chunks", "preferred_chunks", "shards", "fill_value", "_FillValue",
                 "scale_factor", "add_offset", "dtype", "units", "calendar", "coordinates",
                 "compressors", "filters", "serializer")


def sample_dataset() -> Any:
    """Coordinates, a 2-D auxiliary coordinate, CF-packed data with missing values,
    datetime64 times, integers with a _FillValue, booleans, strings and a scalar."""
    rng = np.random.default_rng(0)
    temp = rng.normal(280, 5, size=(6, 10, 8))
    temp[0, 0, :3] = np.nan
    ds = xr.Dataset(
        {
            "temp": (("time", "y", "x"), temp, {"units": "K", "long_name": "temperature"}),
            "counts": (("y", "x"), np.arange(80, dtype="i4").reshape(10, 8)),
            "flag": (("x",), np.arange(8) % 3 == 0),
            "label": (("x",), np.array(list("abcdefgh"), dtype=object)),
            "offset": ((), 2.5, {"units": "m"}),  # 0-d
        },
        coords={
            "time": pd.date_range("2000-01-01", periods=6, freq="6h"),
            "y": np.linspace(-1.0, 1.0, 10),
            "x": np.arange(8) * 10,
            "lat": (("y", "x"), rng.random((10, 8))),
        },
        attrs={"title": "sample", "history": "written by xarray"},
    )
    ds["temp"].encoding = {"scale_factor": 0.01, "add_offset": 280.0, "dtype": "i2",
                           "_FillValue": -9999, "chunks": (2, 4, 3)}
    ds["counts"].encoding = {"_FillValue": -1, "chunks": (5, 4)}
    ds["counts"][0, 0] = -1  # a masked value
    return ds


def write(tmp_path: Path, zarr_format: int, consolidated: bool, **kwargs: Any) -> Path:
    path = tmp_path / f"v{zarr_format}-{consolidated}.zarr"
    kwargs.setdefault("mode", "w")
    sample_dataset().to_zarr(path, zarr_format=zarr_format, consolidated=consolidated, **kwargs)
    return path


def open_both(path: Path, consolidated: bool | None, chunks: Any) -> tuple[Any, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # zarr: "no consolidated metadata"
        by_zarr = xr.open_dataset(path, engine="zarr", consolidated=consolidated, chunks=chunks)
    ours = xr.open_dataset(path, engine=ChunkflowBackendEntrypoint, consolidated=consolidated,
                           chunks=chunks)
    return by_zarr, ours


def assert_same(by_zarr: Any, ours: Any) -> None:
    xr.testing.assert_identical(by_zarr.load(), ours.load())
    for name, variable in by_zarr.variables.items():
        expected = {k: variable.encoding[k] for k in ENCODING_KEYS if k in variable.encoding}
        got = {k: ours[name].encoding[k] for k in expected if k in ours[name].encoding}
        np.testing.assert_equal(got, expected, err_msg=f"encoding of {name}")


@pytest.mark.parametrize("chunks", [None, {}], ids=["lazy", "dask"])
@pytest.mark.parametrize("consolidated", [True, False])
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_same_dataset_as_zarr_engine(tmp_path: Path, zarr_format: int, consolidated: bool,
                                     chunks: Any) -> None:
    path = write(tmp_path, zarr_format, consolidated)
    by_zarr, ours = open_both(path, consolidated, chunks)
    assert ours.temp.dtype == np.float64 and np.isnan(ours.temp.values[0, 0, 0])
    assert ours.time.dtype.kind == "M" and int(ours.counts.isnull().sum()) == 1
    assert_same(by_zarr, ours)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_consolidated_none_uses_what_is_there(tmp_path: Path, zarr_format: int) -> None:
    for consolidated in (True, False):
        path = write(tmp_path, zarr_format, consolidated)
        by_zarr, _ = open_both(path, consolidated, None)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ours = xr.open_dataset(path, engine=ChunkflowBackendEntrypoint)
        assert_same(by_zarr, ours)
        # The zarr engine's warning, with its text, only when it fell back; attributed
        # to the caller (this file), not to chunkflow or xarray.
        fallbacks = [w for w in caught if issubclass(w.category, RuntimeWarning)
                     and "Failed to open Zarr store with consolidated" in str(w.message)]
        assert len(fallbacks) == (0 if consolidated else 1)
        assert all(w.filename == __file__ for w in fallbacks)


def test_consolidated_false_or_unsupported_does_not_warn(tmp_path: Path) -> None:
    path = write(tmp_path, 3, consolidated=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        xr.open_dataset(path, engine=ChunkflowBackendEntrypoint, consolidated=False)
        # A zarr-python store that holds no consolidated metadata says so: no warning,
        # whichever way it is opened (as xarray's NoConsolidatedMetadataSupportStore tests).
        inner = NoConsolidatedStore(zarr.storage.LocalStore(path, read_only=True))
        ds = xr.open_dataset(inner, engine=ChunkflowBackendEntrypoint)
        tree = xr.open_datatree(inner, engine=ChunkflowBackendEntrypoint)
        groups = xr.open_groups(inner, engine=ChunkflowBackendEntrypoint)
        root = xr.open_dataset(inner, engine=ChunkflowBackendEntrypoint, group="/")
    assert ds.temp.shape == tree["temp"].shape == groups["/"].temp.shape == root.temp.shape


def test_consolidated_true_requires_consolidated_metadata(tmp_path: Path) -> None:
    path = write(tmp_path, 3, consolidated=False)
    with pytest.raises(MetadataError, match="no consolidated metadata"):
        xr.open_dataset(path, engine=ChunkflowBackendEntrypoint, consolidated=True)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_dask_blocks_are_the_store_chunks(tmp_path: Path, zarr_format: int) -> None:
    path = write(tmp_path, zarr_format, consolidated=True)
    ds = xr.open_dataset(path, engine=ChunkflowBackendEntrypoint, chunks={})
    group = chunkflow.open_group(path, mode="r")
    for name in ("temp", "counts", "lat"):
        data = ds[name].data
        stored = group[name]
        expected = tuple(
            tuple(min(c, n - start) for start in range(0, n, c))
            for n, c in zip(stored.shape, stored.chunks)
        )
        assert data.chunks == expected, name
        # one layer of reads over the array (xarray's from_array: the array + a Blockwise)
        reads = [layer for layer in data.dask.layers.values() if isinstance(layer, Blockwise)]
        assert len(data.dask.layers) == 2 and len(reads) == 1
    # "auto" and explicit sizes keep whole chunks per block
    auto = xr.open_dataset(path, engine=ChunkflowBackendEntrypoint, chunks={"time": 4})
    assert auto.temp.chunks[0] == (4, 2)


def test_sharded_arrays_chunk_on_shards(tmp_path: Path) -> None:
    ds = xr.Dataset({"v": (("y", "x"), np.arange(64 * 48, dtype="f4").reshape(64, 48))})
    path = tmp_path / "sharded.zarr"
    ds.to_zarr(path, zarr_format=3, consolidated=False,
               encoding={"v": {"chunks": (8, 8), "shards": (32, 24)}})
    by_zarr, ours = open_both(path, False, {})
    xr.testing.assert_identical(by_zarr.load(), ours.load())
    assert ours.v.encoding["chunks"] == (8, 8) and ours.v.encoding["shards"] == (32, 24)
    assert ours.v.encoding["preferred_chunks"] == {"y": 32, "x": 24}
    for key in ("chunks", "shards"):  # as the zarr engine reports them
        assert ours.v.encoding[key] == by_zarr.v.encoding[key], key
    # preferred_chunks differ on purpose: the zarr engine prefers the inner chunk (8, 8),
    # chunkflow the shard it reads and writes whole.
    fresh = xr.open_dataset(path, engine=ChunkflowBackendEntrypoint, chunks={})
    assert fresh.v.data.chunks == ((32, 32), (24, 24))


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_lazy_indexing_matches_zarr_engine(tmp_path: Path, zarr_format: int) -> None:
    path = write(tmp_path, zarr_format, consolidated=True)
    by_zarr, ours = open_both(path, True, None)
    assert not isinstance(ours.temp.variable._data, np.ndarray)  # nothing read yet
    selections = [
        {"time": 1},
        {"y": slice(8, 1, -3), "x": slice(None, None, 2)},
        {"time": [5, 0, 2], "x": np.array([7, 1, 1, 4])},  # outer
        {"y": xr.DataArray([0, 9, 3], dims="p"), "x": xr.DataArray([7, 2, 5], dims="p")},
        {"time": -1, "y": [True] * 5 + [False] * 5},
    ]
    for selection in selections:
        xr.testing.assert_identical(by_zarr.isel(selection).load(),
                                    ours.isel(selection).load())


def test_chunkflow_written_groups(tmp_path: Path) -> None:
    values = np.arange(12 * 10, dtype="u2").reshape(12, 10)
    for zarr_format in (2, 3):
        path = tmp_path / f"cf{zarr_format}.zarr"
        root = chunkflow.open_group(path, mode="w", zarr_format=zarr_format,
                                    attributes={"origin": "chunkflow"})
        if zarr_format == 3:
            image = root.create_array("image", shape=values.shape, chunks=(5, 4), dtype="u2",
                                      dimension_names=("row", "col"), fill_value=7,
                                      attributes={"_FillValue": 0})
            axis = root.create_array("row", shape=(12,), chunks=(12,), dtype="f8",
                                     dimension_names=("row",))
        else:
            image = root.create_array("image", shape=values.shape, chunks=(5, 4), dtype="u2",
                                      fill_value=0,
                                      attributes={"_ARRAY_DIMENSIONS": ["row", "col"]})
            axis = root.create_array("row", shape=(12,), chunks=(12,), dtype="f8",
                                     fill_value=np.nan,
                                     attributes={"_ARRAY_DIMENSIONS": ["row"]})
        image[:] = values
        axis[:] = np.linspace(0, 1, 12)
        by_zarr, ours = open_both(path, False, {})
        assert ours.image.chunks == ((5, 5, 2), (4, 4, 2))
        assert_same(by_zarr, ours)
        assert ours.image.dims == ("row", "col") and "_ARRAY_DIMENSIONS" not in ours.image.attrs
        assert int(ours.image.isnull().sum()) == 1  # the 0 at [0, 0] is _FillValue
        assert not ours.row.isnull().any()
        assert ours.attrs == {"origin": "chunkflow"}


def test_opens_groups_stores_and_subgroups() -> None:
    store = MemoryStore()
    root = chunkflow.group(store)
    sub = root.create_group("sub")
    a = sub.create_array("a", shape=(4,), chunks=(2,), dtype="i4", dimension_names=("t",))
    a[:] = [1, 2, 3, 4]
    for source, group in ((store, "sub"), (root, "/sub"), (sub, None)):
        ds = xr.open_dataset(source, engine=ChunkflowBackendEntrypoint, group=group)
        assert ds.a.values.tolist() == [1, 2, 3, 4]
    # group= naming an array: a dataset of that one variable (engine="zarr" refuses).
    single = xr.open_dataset(sub, engine=ChunkflowBackendEntrypoint, group="a")
    assert list(single.data_vars) == ["a"] and single.a.dims == ("t",)
    assert single.a.values.tolist() == [1, 2, 3, 4]


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("as_mask", [None, False, True])
def test_fill_value_as_mask_as_zarr_engine(tmp_path: Path, zarr_format: int,
                                           as_mask: bool | None) -> None:
    """v2: the fill_value is the _FillValue whatever the option says (xarray writes a v2
    _FillValue there; the zarr engine ignores the option); mask_and_scale=False reads
    the stored values. v3: the fill_value masks only with use_zarr_fill_value_as_mask=True
    (the zarr engine ignores that option too, so it is compared without it)."""
    path = write(tmp_path, zarr_format, consolidated=False)
    for mask_and_scale in (True, False):
        options = dict(mask_and_scale=mask_and_scale, consolidated=False)
        ours = xr.open_dataset(path, engine=ChunkflowBackendEntrypoint,
                               use_zarr_fill_value_as_mask=as_mask, **options)
        if zarr_format == 3 and as_mask:  # the array's fill_value (0) is the _FillValue
            stored = chunkflow.open_array(str(path), mode="r", path="counts").fill_value
            where = ours.counts.encoding if mask_and_scale else ours.counts.attrs
            assert where["_FillValue"] == stored == 0
            continue
        by_zarr = xr.open_dataset(path, engine="zarr", use_zarr_fill_value_as_mask=as_mask,
                                  **options)
        assert_same(by_zarr, ours)
        masked = int(ours.counts.isnull().sum())
        assert masked == (1 if mask_and_scale else 0)
        if zarr_format == 2 and not mask_and_scale:
            assert ours.counts.attrs["_FillValue"] == -1 and int(ours.counts[0, 0]) == -1


def test_dimension_names_missing_or_conflicting() -> None:
    root = chunkflow.group(MemoryStore())
    root.create_array("a", shape=(3, 2), chunks=(3, 2), dtype="f4", dimension_names=("x", None))
    with pytest.raises(MetadataError, match=r"array 'a'.*dimension_names.*\['x', None\]"):
        xr.open_dataset(root, engine=ChunkflowBackendEntrypoint)
    # What xarray's zarr engine raises, with the phrase xarray's tests look for.
    with pytest.raises(KeyError, match="xarray to determine variable dimensions") as info:
        xr.open_dataset(root, engine=ChunkflowBackendEntrypoint)
    assert str(info.value).startswith("array 'a'")  # the message, not KeyError's repr
    root = chunkflow.group(MemoryStore())
    root.create_array("a", shape=(3,), chunks=(3,), dtype="f4", dimension_names=("x",))
    root.create_array("b", shape=(4,), chunks=(4,), dtype="f4", dimension_names=("x",))
    with pytest.raises(MetadataError, match="dimension 'x' has length 4"):
        xr.open_dataset(root, engine=ChunkflowBackendEntrypoint)
    v2 = chunkflow.open_group(MemoryStore(), mode="w", zarr_format=2)
    v2.create_array("a", shape=(3,), chunks=(3,), dtype="f4")
    with pytest.raises(MetadataError, match="_ARRAY_DIMENSIONS attribute"):
        xr.open_dataset(v2, engine=ChunkflowBackendEntrypoint)


def test_lazy_dataset_pickles_and_computes_in_processes(tmp_path: Path) -> None:
    path = write(tmp_path, 3, consolidated=True)
    ds = xr.open_dataset(path, engine=ChunkflowBackendEntrypoint, chunks={})
    expected = float(ds.temp.sum().compute(scheduler="sync"))
    restored = pickle.loads(pickle.dumps(ds))
    assert float(restored.temp.sum().compute(scheduler="sync")) == expected
    lazy = pickle.loads(pickle.dumps(xr.open_dataset(path, engine=ChunkflowBackendEntrypoint)))
    assert float(lazy.temp.sum()) == expected


def test_entry_point_declared() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    target = project["project"]["entry-points"]["xarray.backends"]["chunkflow"]
    module, _, name = target.partition(":")
    assert getattr(__import__(module, fromlist=[name]), name) is ChunkflowBackendEntrypoint


PROBE = """
import sys, warnings
import numpy as np, xarray as xr
from chunkflow.xarray import ChunkflowBackendEntrypoint
warnings.simplefilter("error")  # a duplicate or broken entry point warns
engines = xr.backends.list_engines()
assert isinstance(engines["chunkflow"], ChunkflowBackendEntrypoint), engines
ds = xr.Dataset({"v": (("y", "x"), np.arange(12.0).reshape(3, 4))})
ds.to_zarr(sys.argv[1], zarr_format=3, consolidated=False)
opened = xr.open_dataset(sys.argv[1], engine="chunkflow", chunks={}, consolidated=False)
xr.testing.assert_identical(opened.load(), ds)
print("ok")
"""


@pytest.mark.slow
def test_entry_point_from_pyproject_reaches_xarray(tmp_path: Path) -> None:
    """The pyproject's entry point, installed as package metadata, makes
    engine="chunkflow" work through xarray's own plugin discovery."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    points = project["project"]["entry-points"]["xarray.backends"]
    info = tmp_path / "site" / "chunkflow-0.1.0.dist-info"  # shadows an installed copy
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: chunkflow\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text(
        "[xarray.backends]\n" + "".join(f"{k} = {v}\n" for k, v in points.items()))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(info.parent), str(ROOT)])}
    done = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path / "probe.zarr")],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


def test_engine_by_name(tmp_path: Path) -> None:
    """engine="chunkflow" in this process, once the installed package has the entry point."""
    points = metadata.entry_points(group="xarray.backends")
    if "chunkflow" not in points.names:
        pytest.skip("the installed chunkflow predates the xarray.backends entry point")
    path = write(tmp_path, 3, consolidated=True)
    by_zarr, _ = open_both(path, True, None)
    assert_same(by_zarr, xr.open_dataset(path, engine="chunkflow", chunks={}))


def test_chunk_cache_option(tmp_path: Path) -> None:
    path = write(tmp_path, 3, consolidated=False)
    before = chunkflow.cache_info()
    xr.open_dataset(path, engine=ChunkflowBackendEntrypoint, chunk_cache=False).load()
    after = chunkflow.cache_info()
    assert (after.hits, after.misses) == (before.hits, before.misses)
    own = chunkflow.ChunkCache(2**20)
    xr.open_dataset(path, engine=ChunkflowBackendEntrypoint, chunk_cache=own).load()
    assert own.stats.misses > 0 and own.stats.bytes > 0


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_datatree_matches_zarr_engine(tmp_path: Path, zarr_format: int) -> None:
    path = tmp_path / "tree.zarr"
    sample_dataset().to_zarr(path, zarr_format=zarr_format, consolidated=False, mode="w")
    inner = xr.Dataset({"w": (("z",), np.arange(5.0))}, attrs={"level": 2})
    inner.to_zarr(path, group="sub/inner", zarr_format=zarr_format, consolidated=False)
    xr.Dataset(attrs={"level": 1}).to_zarr(path, group="sub", zarr_format=zarr_format,
                                          mode="a", consolidated=True)
    for chunks in (None, {}):
        by_zarr = xr.open_datatree(path, engine="zarr", consolidated=False, chunks=chunks)
        ours = xr.open_datatree(path, engine=ChunkflowBackendEntrypoint, chunks=chunks)
        assert sorted(ours.groups) == ["/", "/sub", "/sub/inner"]
        xr.testing.assert_identical(by_zarr.load(), ours.load())
        ours.close()
    groups = xr.open_groups(path, engine=ChunkflowBackendEntrypoint, group="sub")
    assert sorted(groups) == ["/", "/inner"] and groups["/"].attrs == {"level": 1}


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_group_under_a_consolidated_root(tmp_path: Path, zarr_format: int) -> None:
    """to_zarr(group=...) consolidates at the root: the group opens through it."""
    path = tmp_path / "nested.zarr"
    sample_dataset().to_zarr(path, group="sub/deep", zarr_format=zarr_format,
                             consolidated=True)
    for consolidated in (True, None):
        by_zarr = xr.open_dataset(path, engine="zarr", group="sub/deep", consolidated=True)
        ours = xr.open_dataset(path, engine=ChunkflowBackendEntrypoint, group="sub/deep",
                               consolidated=consolidated)
        assert_same(by_zarr, ours)
    # group= naming an array: that variable alone, decoded as in the group's dataset.
    by_zarr = xr.open_dataset(path, engine="zarr", group="sub/deep", consolidated=True)
    temp = xr.open_dataset(path, engine=ChunkflowBackendEntrypoint, group="sub/deep/temp")
    assert list(temp.variables) == ["temp"] and temp.attrs == {}
    xr.testing.assert_identical(temp.temp, by_zarr.temp.drop_vars(list(by_zarr.temp.coords)))


def test_urls_and_zip_files(tmp_path: Path) -> None:
    url = f"memory://chunkflow-xarray/{tmp_path.name}.zarr"
    sample_dataset().to_zarr(url, zarr_format=3, consolidated=True)
    by_zarr = xr.open_dataset(url, engine="zarr", consolidated=True)
    assert_same(by_zarr, xr.open_dataset(url, engine=ChunkflowBackendEntrypoint, chunks={}))
    folder = write(tmp_path, 2, consolidated=True)
    zipped = tmp_path / "data.zip"
    dest = chunkflow.ZipStore(zipped, mode="w")
    chunkflow.copy_store(chunkflow.LocalStore(folder), dest)
    dest.close()
    ds = xr.open_dataset(zipped, engine=ChunkflowBackendEntrypoint)
    assert_same(xr.open_dataset(folder, engine="zarr", consolidated=True), ds)
    ds.close()


@pytest.mark.slow
def test_chunkflow_imports_without_xarray() -> None:
    code = (
        "import sys; sys.modules['xarray'] = None\n"  # as if xarray were not installed
        "import chunkflow\n"
        "try:\n"
        "    import chunkflow.xarray\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "chunkflow.xarray needs xarray" in done.stdout


def test_mode_is_read_only(tmp_path: Path) -> None:
    path = write(tmp_path, 2, consolidated=True)
    assert "temp" in xr.open_dataset(path, engine=ChunkflowBackendEntrypoint, mode="r")
    with pytest.raises(ValueError, match="only reads: mode must be 'r', got 'a'"):
        xr.open_dataset(path, engine=ChunkflowBackendEntrypoint, mode="a")


def test_v3_fill_value_attribute_forms() -> None:
    """xarray writes a float _FillValue as Base64; other writers put a number."""
    root = chunkflow.group(MemoryStore())
    for name, fill in (("b64", "AAAAAAAA8L8="), ("number", -1.0)):  # both mean -1.0
        a = root.create_array(name, shape=(3,), chunks=(3,), dtype="f8",
                              dimension_names=("x",), attributes={"_FillValue": fill})
        a[:] = [1.0, -1.0, 2.0]
    ds = xr.open_dataset(root, engine=ChunkflowBackendEntrypoint)
    for name in ("b64", "number"):
        assert np.isnan(ds[name].values[1]) and ds[name].encoding["_FillValue"] == -1.0
    root.create_array("bad", shape=(3,), chunks=(3,), dtype="f8", dimension_names=("x",),
                      attributes={"_FillValue": "not base64!"})
    with pytest.raises(MetadataError, match="array 'bad': cannot decode the _FillValue"):
        xr.open_dataset(root, engine=ChunkflowBackendEntrypoint)
