"""Every public function that takes a location accepts ``storage_options`` and works
with them against S3 (a moto server on 127.0.0.1, a custom endpoint).

The test walks the public API (``chunkflow.__all__`` and ``chunkflow.reductions``): a
callable whose signature names a location (``store``, ``source``, ``dest``, ``url``...)
or forwards keywords (``**kwargs``, where ``store=`` may go) must appear in
:data:`CALLS`, which calls it against S3 with the credentials in ``storage_options``
only, or in :data:`NO_URL` with the reason it takes no URL. A new public function
that fits neither fails :func:`test_every_location_taking_function_is_covered`.
"""

from __future__ import annotations

import inspect
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import dask.array as da
import numpy as np
import pytest

import chunkflow

pytestmark = pytest.mark.s3

# Parameter names that hold a location (a path, URL, store or mapping).
LOCATION_PARAMETERS = {"store", "source", "sources", "dest", "url", "url_or_store", "out",
                       "root", "path", "targets"}

# Public callables that take no URL, and why.
NO_URL: dict[str, str] = {
    "ChunkCache": "an in-process cache",
    "DistributedSynchronizer": "locks on a dask scheduler",
    "LocalStore": "a local folder by definition (URLs make an FsspecStore)",
    "DirectoryStore": "zarr-python 2's name for LocalStore: a local folder by definition",
    "LRUStoreCache": "a second handle on a store already made (make_store takes the URL)",
    "N5Store": "refuses N5 by name; opens nothing",
    "SQLiteStore": "a database file on a local disk (SQLite locks need one)",
    "ZipStore": "a local zip file by definition (zip::s3://... URLs make an FsspecStore)",
    "MappingStore": "wraps a mapping object",
    "MemoryStore": "in-process memory",
    "ProcessSynchronizer": "lock files on a file system the processes share",
    "Store": "the abstract store",
    "ThreadSynchronizer": "in-process locks",
    "Tree": "renders an open node",
    "tree": "renders an open node",
    "cache_info": "in-process counters",
    "get_cache": "the in-process cache",
    "compute": "runs dask collections (**kwargs go to dask.compute)",
}


def public_callables() -> dict[str, Callable[..., Any]]:
    """Every public callable, by name (``reductions.mean`` for the reductions module's)."""
    found: dict[str, Callable[..., Any]] = {}
    for module, prefix in ((chunkflow, ""), (chunkflow.reductions, "reductions.")):
        # sum, min and max are public but stay out of __all__ (they would hide builtins).
        extra = chunkflow.reductions.OPERATIONS if prefix else ()
        for name in dict.fromkeys([*module.__all__, *extra]):
            obj = getattr(module, name)
            if isinstance(obj, type) and issubclass(obj, BaseException):
                continue  # errors and warnings take a message
            if callable(obj) and not inspect.ismodule(obj):
                if prefix and getattr(chunkflow, name, None) is obj:
                    continue  # the same function as chunkflow's, listed once
                found[prefix + name] = obj
    return found


def may_take_a_location(func: Callable[..., Any]) -> bool:
    try:
        parameters = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False
    return bool(LOCATION_PARAMETERS & set(parameters)) or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())


# ----------------------------------------------------------------- the calls

DATA = np.arange(96, dtype="f4").reshape(8, 12)


class S3:
    """URLs in a fresh folder of the moto bucket, and the options that reach it."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options
        self.root = f"s3://chunkflow-test/{uuid.uuid4().hex}"
        self.source = self.url("source.zarr")
        chunkflow.array(DATA, chunks=(3, 5), store=self.source, storage_options=options)
        self.group = self.url("group.zarr")
        g = chunkflow.group(self.group, storage_options=options)
        g.create_array("x", shape=DATA.shape, dtype=DATA.dtype, chunks=(4, 4))[...] = DATA

    def url(self, name: str | None = None) -> str:
        return f"{self.root}/{name or uuid.uuid4().hex}.zarr"

    def opened(self, url: str) -> Any:
        return chunkflow.open(url, mode="r", storage_options=self.options)


def _same(values: Any, expected: Any = DATA) -> None:
    np.testing.assert_array_equal(np.asarray(values), expected)


def _created(s3: S3, make: Callable[[str], Any], fill: float) -> None:
    url = s3.url()
    make(url)
    _same(s3.opened(url)[...], np.full(DATA.shape, fill, DATA.dtype))


def _reduction(name: str) -> Callable[[S3], None]:
    def call(s3: S3) -> None:
        function = getattr(chunkflow.reductions, name)
        _same(function(s3.source, storage_options=s3.options, scheduler="threads"),
              getattr(np, name)(DATA))
    return call


def _order(name: str, *args: Any) -> Callable[[S3], None]:
    def call(s3: S3) -> None:
        got = getattr(chunkflow, name)(s3.source, *args, storage_options=s3.options)
        np.testing.assert_array_equal(got, getattr(np, name)(DATA, *args))
    return call


def _copy_store(s3: S3) -> None:
    dest = s3.url()
    chunkflow.copy_store(s3.source, dest, storage_options=s3.options)
    _same(s3.opened(dest)[...])


def _consolidate(s3: S3) -> None:
    chunkflow.consolidate_metadata(s3.group, storage_options=s3.options)
    _same(chunkflow.open_consolidated(s3.group, storage_options=s3.options)["x"][...])


def _copy(s3: S3) -> None:
    dest = s3.url()
    chunkflow.copy(s3.opened(s3.source), dest, "y", storage_options=s3.options)
    _same(s3.opened(dest + "/y")[...])


def _store(s3: S3) -> None:
    out = s3.url()
    chunkflow.zeros(DATA.shape, chunks=(5, 5), dtype=DATA.dtype, store=out,
                    storage_options=s3.options)
    chunkflow.store(da.from_array(DATA, chunks=4), out, storage_options=s3.options,
                    scheduler="threads")
    _same(s3.opened(out)[...])


def _copy_all(s3: S3) -> None:
    dest = s3.url()
    chunkflow.copy_all(s3.opened(s3.group), dest, storage_options=s3.options)
    _same(s3.opened(dest + "/x")[...])


def _map_chunks(s3: S3) -> None:
    out = s3.url()
    chunkflow.map_chunks(np.negative, s3.source, out=out, storage_options=s3.options,
                         scheduler="threads")
    _same(s3.opened(out)[...], -DATA)


def _rechunk(s3: S3) -> None:
    out = s3.url()
    chunkflow.rechunk(s3.source, (8, 2), out, max_memory="1 MiB", storage_options=s3.options)
    assert s3.opened(out).chunks == (8, 2)
    _same(s3.opened(out)[...])


def _pyramid(s3: S3) -> None:
    out = s3.url()
    levels = chunkflow.pyramid(s3.source, out, storage_options=s3.options, scheduler="threads")
    assert len(levels) > 1
    image = chunkflow.open_group(out, mode="r", storage_options=s3.options)
    _same(image["0"][...])
    _same(image["1"][...], DATA.reshape(4, 2, 6, 2).mean(axis=(1, 3)))


def _convert(s3: S3) -> None:
    out = s3.url()
    levels = chunkflow.convert(s3.source, out, storage_options=s3.options, scheduler="threads")
    image = chunkflow.open_group(out, mode="r", storage_options=s3.options)
    assert len(levels) >= 1
    _same(image["0"][...])


def _label(s3: S3) -> None:
    from scipy import ndimage

    out = s3.url()
    _, count = chunkflow.label(s3.source, out, storage_options=s3.options, scheduler="threads")
    expected, n = ndimage.label(DATA)
    assert count == n
    _same(s3.opened(out)[...], expected)


def _measure(s3: S3) -> None:
    labels = s3.url()
    chunkflow.array((DATA > 40).astype("u1") + (DATA > 80), chunks=(3, 5), store=labels,
                    storage_options=s3.options)
    table = chunkflow.measure(labels, s3.source, properties=["label", "area", "intensity_max"],
                              storage_options=s3.options)
    assert table["area"].tolist() == [40.0, 15.0] and table["intensity_max"].tolist() == [80, 95]


def _segment(s3: S3) -> None:
    from scipy import ndimage

    out = s3.url()
    chunkflow.segment(_threshold_labels, s3.source, out, depth=1, storage_options=s3.options,
                      scheduler="threads")
    _same(s3.opened(out)[...], ndimage.label(DATA > 40)[0])


def _threshold_labels(block: np.ndarray) -> np.ndarray:
    from scipy import ndimage

    return ndimage.label(block > 40)[0]


def _save_load(s3: S3, save: Callable[..., Any], *args: Any) -> None:
    url = s3.url()
    save(url, *args, storage_options=s3.options)
    loaded = chunkflow.load(url, storage_options=s3.options)
    _same(loaded if isinstance(loaded, np.ndarray) else loaded["arr_0"])


CALLS: dict[str, Callable[[S3], None]] = {
    "Array": lambda s3: _same(chunkflow.Array(s3.source, storage_options=s3.options)[...]),
    "Group": lambda s3: _same(chunkflow.Group(s3.group, storage_options=s3.options)["x"][...]),
    "FsspecStore": lambda s3: _same(chunkflow.open(
        chunkflow.FsspecStore(s3.source, storage_options=s3.options), mode="r")[...]),
    "array": lambda s3: _same(chunkflow.array(
        DATA, store=s3.url(), storage_options=s3.options)[...]),
    "create": lambda s3: _created(s3, lambda u: chunkflow.create(
        DATA.shape, chunks=5, dtype="f4", fill_value=2, store=u, storage_options=s3.options), 2),
    "create_array": lambda s3: _created(s3, lambda u: chunkflow.create_array(
        u, shape=DATA.shape, dtype="f4", fill_value=3, storage_options=s3.options), 3),
    "create_group": lambda s3: chunkflow.create_group(s3.url(), storage_options=s3.options)
    .create_array("a", shape=(2,), dtype="u1"),
    "group": lambda s3: chunkflow.group(s3.url(), storage_options=s3.options)
    .create_array("a", shape=(2,), dtype="u1"),
    "empty": lambda s3: chunkflow.empty(DATA.shape, store=s3.url(), storage_options=s3.options),
    "zeros": lambda s3: _created(s3, lambda u: chunkflow.zeros(
        DATA.shape, dtype="f4", store=u, storage_options=s3.options), 0),
    "ones": lambda s3: _created(s3, lambda u: chunkflow.ones(
        DATA.shape, dtype="f4", store=u, storage_options=s3.options), 1),
    "full": lambda s3: _created(s3, lambda u: chunkflow.full(
        DATA.shape, 4, dtype="f4", store=u, storage_options=s3.options), 4),
    "empty_like": lambda s3: chunkflow.empty_like(DATA, store=s3.url(),
                                                  storage_options=s3.options),
    "zeros_like": lambda s3: _created(s3, lambda u: chunkflow.zeros_like(
        DATA, store=u, storage_options=s3.options), 0),
    "ones_like": lambda s3: _created(s3, lambda u: chunkflow.ones_like(
        DATA, store=u, storage_options=s3.options), 1),
    "full_like": lambda s3: _created(s3, lambda u: chunkflow.full_like(
        DATA, 5, store=u, storage_options=s3.options), 5),
    "open_like": lambda s3: _created(s3, lambda u: chunkflow.open_like(
        DATA, u, mode="w", fill_value=6, storage_options=s3.options), 6),
    "from_array": lambda s3: _same(chunkflow.from_array(
        s3.url(), data=DATA, storage_options=s3.options)[...]),
    "open": lambda s3: _same(chunkflow.open(s3.source, mode="r",
                                            storage_options=s3.options)[...]),
    "open_array": lambda s3: _same(chunkflow.open_array(s3.source, mode="r",
                                                        storage_options=s3.options)[...]),
    "open_group": lambda s3: _same(chunkflow.open_group(s3.group, mode="r",
                                                        storage_options=s3.options)["x"][...]),
    "open_consolidated": _consolidate,
    "consolidate_metadata": _consolidate,
    "load": lambda s3: _same(chunkflow.load(s3.source, storage_options=s3.options)),
    "save": lambda s3: _save_load(s3, chunkflow.save, DATA),
    "save_array": lambda s3: _save_load(s3, chunkflow.save_array, DATA),
    "save_group": lambda s3: _save_load(s3, chunkflow.save_group, DATA),
    "copy": _copy,
    "copy_all": _copy_all,
    "copy_store": _copy_store,
    "map_chunks": _map_chunks,
    "rechunk": _rechunk,
    "pyramid": _pyramid,
    "convert": _convert,
    "label": _label,
    "measure": _measure,
    "segment": _segment,
    "summarize_chunks": lambda s3: _same(chunkflow.summarize_chunks(
        np.sum, s3.source, dtype="f8", storage_options=s3.options, scheduler="threads").sum(),
        DATA.sum()),
    "store": _store,
    "to_chunkflow": lambda s3: _same(chunkflow.to_chunkflow(
        da.from_array(DATA, chunks=4), s3.url(), storage_options=s3.options)[...]),
    "to_dask": lambda s3: _same(chunkflow.to_dask(s3.source, storage_options=s3.options)),
    "reduce": lambda s3: _same(chunkflow.reduce(s3.source, ("mean",), scheduler="threads",
                                                storage_options=s3.options)["mean"], DATA.mean()),
    "histogram": lambda s3: _same(chunkflow.histogram(
        s3.source, bins=5, storage_options=s3.options)[0], np.histogram(DATA, bins=5)[0]),
    "percentile": _order("percentile", [5, 50]),
    "nanpercentile": _order("nanpercentile", 37.5),
    "quantile": _order("quantile", [0.1, 1]),
    "nanquantile": _order("nanquantile", 0.5),
    "median": _order("median"),
    "nanmedian": _order("nanmedian"),
    **{f"reductions.{op}": _reduction(op) for op in chunkflow.reductions.OPERATIONS},
}


@pytest.fixture
def s3(s3_server: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Iterator[S3]:
    """The bucket, reachable only through storage_options: no AWS variable or file."""
    import os

    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    yield S3(s3_server)


def test_every_location_taking_function_is_covered() -> None:
    covered = set(CALLS) | set(NO_URL)
    missing = sorted(name for name, func in public_callables().items()
                     if may_take_a_location(func) and name not in covered)
    assert not missing, f"public functions taking a location, without a call here: {missing}"
    assert not set(CALLS) - set(public_callables()), "CALLS names a function that is not public"


@pytest.mark.parametrize("name", sorted(n for n, f in public_callables().items()
                                        if may_take_a_location(f) and n not in NO_URL))
def test_accepts_storage_options(name: str) -> None:
    parameters = inspect.signature(public_callables()[name]).parameters
    assert "storage_options" in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()), name


@pytest.mark.parametrize("name", sorted(CALLS))
def test_works_on_s3_with_options_only(name: str, s3: S3) -> None:
    CALLS[name](s3)


def test_credentials_come_from_the_options_only(s3: S3) -> None:
    # The same endpoint without the key and secret: nothing in the environment supplies
    # them, so the read fails (the NoCredentialsError, now from a missing option).
    endpoint_only = {k: v for k, v in s3.options.items() if k not in ("key", "secret")}
    with pytest.raises(Exception, match="[Cc]redentials"):
        chunkflow.reduce(s3.source, ("mean",), scheduler="threads",
                         storage_options=endpoint_only)
