"""The peers of bench_zarrs: zarr-python 3 (its default codec pipeline and zarrs'),
tensorstore, and dask over zarr-python, as zarrs/zarr_benchmarks runs them.

Each function is what one fresh child process times (see ``zarrs_child.py``); its
spelling follows the suite's scripts (``src/zarr_benchmarks/*_benchmark_*.py``):

- zarr-python reads with ``async.concurrency`` 10, chunk by chunk through
  ``AsyncArray.getitem`` under an ``asyncio.Semaphore(concurrency)`` (a plain loop at
  concurrency 1), and round trips with ``out[:] = source[:]``;
- zarrs is zarr-python with the suite's ``codec_pipeline`` settings
  (``zarrs.ZarrsCodecPipeline``);
- dask runs ``da.from_zarr(path, chunks=shards)``: ``.compute()``, a no-op delayed per
  block on the threaded scheduler with ``num_workers=concurrency``, and
  ``da.to_zarr`` for the round trip;
- tensorstore reads with ``ts.open`` (no cache pool), chunk by chunk as asyncio tasks
  under a semaphore, and round trips in transactions of one chunk per core.

One change from the suite: a round trip writes into an array with the source's
metadata (``zarr.json`` copied before timing), for every implementation. The suite
creates zarr-python's output with ``chunks=dataset.chunks`` and the source's codecs,
which for the sharded dataset makes 64^3 shards of one inner chunk each, and dask's
with zarr's default codecs.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from typing import Any

Region = tuple[slice, ...]
Keep = Callable[[Region, Any], None]

ZARR_SETTINGS = {"async.concurrency": 10}
ZARRS_SETTINGS = {
    "threading.num_workers": None,
    "array.write_empty_chunks": False,
    "codec_pipeline": {
        "batch_size": 1,
        "path": "zarrs.ZarrsCodecPipeline",
        "validate_checksums": True,
        "store_empty_chunks": False,
        "chunk_concurrent_minimum": 4,
        "chunk_concurrent_maximum": None,
    },
}


def configure_zarr(kind: str) -> None:
    """zarr-python's settings as the suite's script for ``kind`` sets them."""
    import zarr

    if kind.startswith("zarrs"):
        import zarrs  # noqa: F401  (registers the pipeline)

        zarr.config.set(ZARRS_SETTINGS)
    elif kind == "zarr-dask":
        zarr.config.set({"async.concurrency": None})
    else:
        zarr.config.set(ZARR_SETTINGS)


# ------------------------------------------------------------------ zarr-python


def zarr_read_all(path: str) -> Any:
    import zarr

    return zarr.open_array(path, mode="r")[:]


def zarr_read_regions(path: str, regions: Sequence[Region], concurrency: int,
                      keep: Keep) -> None:
    import zarr
    from zarr.storage import LocalStore

    dataset = zarr.open(store=LocalStore(path, read_only=True), mode="r")
    if concurrency == 1:
        for region in regions:
            keep(region, dataset[region])
        return

    async def limited() -> None:
        semaphore = asyncio.Semaphore(concurrency)

        async def read(region: Region) -> None:
            async with semaphore:
                keep(region, await dataset._async_array.getitem(region))

        async with asyncio.TaskGroup() as group:
            for region in regions:
                group.create_task(read(region))

    asyncio.run(limited())


def zarr_roundtrip(path: str, out: str) -> None:
    import zarr

    target = zarr.open_array(out, mode="r+")
    target[:] = zarr.open_array(path, mode="r")[:]


# ------------------------------------------------------------------------- dask


def _from_zarr(path: str) -> Any:
    import dask.array as da
    import zarr

    z = zarr.open_array(path, mode="r")
    return da.from_zarr(path, chunks=z.shards)


def dask_read_blocks(x: Any, concurrency: int, keep: Callable[[Any], None]) -> None:
    """The suite's chunk-by-chunk dask read: a no-op delayed per block."""
    import dask

    @dask.delayed
    def read_chunk(chunk: Any) -> None:
        keep(chunk)

    with dask.config.set(scheduler="threads", num_workers=concurrency):
        dask.compute([read_chunk(block) for block in x.to_delayed().ravel()])


def zarr_dask_read_all(path: str) -> Any:
    return _from_zarr(path).compute()


def zarr_dask_read_blocks(path: str, concurrency: int, keep: Callable[[Any], None]) -> None:
    dask_read_blocks(_from_zarr(path), concurrency, keep)


def zarr_dask_roundtrip(path: str, out: str) -> None:
    import dask.array as da
    import zarr

    da.to_zarr(_from_zarr(path), zarr.open_array(out, mode="r+"))


# ------------------------------------------------------------------ tensorstore


def _ts_open(path: str, **extra: Any) -> Any:
    import tensorstore as ts

    return ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": path},
                    **extra}).result()


def ts_read_all(path: str) -> Any:
    return _ts_open(path).read().result()


def ts_read_regions(path: str, regions: Sequence[Region], concurrency: int,
                    keep: Keep) -> None:
    dataset = _ts_open(path)
    if concurrency == 1:
        for region in regions:
            keep(region, dataset[region].read().result())
        return

    async def limited() -> None:
        semaphore = asyncio.Semaphore(concurrency)

        async def read(region: Region) -> None:
            async with semaphore:
                keep(region, await dataset[region].read())

        async with asyncio.TaskGroup() as group:
            for region in regions:
                group.create_task(read(region))

    asyncio.run(limited())


def ts_roundtrip(path: str, out: str, regions: Sequence[Region]) -> None:
    import tensorstore as ts

    dataset = _ts_open(path)
    target = _ts_open(out)
    per = os.cpu_count() or 1
    for batch in (regions[i:i + per] for i in range(0, len(regions), per)):
        with ts.Transaction() as txn:
            for region in batch:
                target.with_transaction(txn)[region] = dataset[region]
