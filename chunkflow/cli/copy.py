"""``chunkflow copy``: convert formats, rechunk, shard and recompress, block by block.

The copy goes in slabs along the first axis (about ``SLAB_BYTES`` each, ending on the
new array's chunk rows). Each slab is read as a dask array whose blocks fall on the
source's chunks, and :func:`chunkflow.store` regroups them onto the new array's chunk
(shard) grid, so every output chunk is written once, wholly, and memory stays near one
slab whatever the array's size. The copy keeps the shape, dtype, fill value and
attributes; v2 filters and v3 codecs other than the compressor are not carried over.

Examples
--------
>>> parse_compressor("zstd:5")
Zstd(level=5)
>>> parse_compressor("none") is None
True
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import numcodecs

import chunkflow
from chunkflow.api.unfinished import UNFINISHED_CHOICES, carry_unfinished, check_copy_source
from chunkflow.cli.cleanup import waited_for
from chunkflow.cli.nodes import create_at, naming_source, open_array_at
from chunkflow.cli.options import (
    add_compute_options,
    add_renamed_option,
    parse_shape,
    progress_wanted,
    storage_options,
)
from chunkflow.cli.resume import add_resume_option, kept_for_resume, resumed_or_created
from chunkflow.codecs.normalize import to_v3_codec
from chunkflow.errors import ChunkflowError, UnfinishedSourceError, UsageError
from chunkflow.jobs import job_identity, open_job, without_mark

__all__ = ["parse_compressor", "register", "run_copy"]

# Source blocks of about this size, in slabs of about SLAB_BYTES: memory stays near a
# slab and a few blocks whatever the array's size.
BLOCK_BYTES = "8 MiB"
SLAB_BYTES = 64 * 2**20
COMPRESSORS = "none, zstd[:LEVEL], blosc[:CNAME[:LEVEL]], gzip[:LEVEL], lz4"


def parse_compressor(text: str) -> numcodecs.abc.Codec | None:
    """``none``, ``zstd:5``, ``blosc:lz4:5``, ``gzip:6`` or ``lz4`` as a numcodecs codec."""
    name, *params = text.lower().split(":")
    try:
        codec = _compressor(name, params)
    except ValueError:
        codec = False
    if codec is False:
        raise argparse.ArgumentTypeError(f"{text!r} is not a compressor; expected {COMPRESSORS}")
    if codec is not None:
        try:  # a bad level or cname is told here, naming the option, not when writing
            to_v3_codec(codec, itemsize=1)
        except ChunkflowError as err:
            raise argparse.ArgumentTypeError(f"{text!r}: {err}") from None
    return codec


def _compressor(name: str, params: list[str]) -> numcodecs.abc.Codec | None | bool:
    """The codec ``name`` with ``params``; ``False`` when there is no such compressor."""
    if name == "none" and not params:
        return None
    if name == "zstd" and len(params) <= 1:
        return numcodecs.Zstd(level=int(params[0]) if params else 3)
    if name == "gzip" and len(params) <= 1:
        return numcodecs.GZip(level=int(params[0]) if params else 5)
    if name == "lz4" and len(params) <= 1:
        return numcodecs.LZ4(acceleration=int(params[0]) if params else 1)
    if name == "blosc" and len(params) <= 2:
        cname = params[0] if params else "lz4"
        level = int(params[1]) if len(params) > 1 else 5
        return numcodecs.Blosc(cname=cname, clevel=level, shuffle=numcodecs.Blosc.SHUFFLE)
    return False


def _sharding_codecs(inner: tuple[int, ...], compressor: Any) -> list[dict[str, Any]]:
    inner_codecs: list[Any] = [{"name": "bytes", "configuration": {"endian": "little"}}]
    if compressor is not None:
        inner_codecs.append(compressor)
    return [{"name": "sharding_indexed",
             "configuration": {"chunk_shape": list(inner), "codecs": inner_codecs}}]


def _target_format(args: argparse.Namespace, source: chunkflow.Array) -> int:
    if args.shards and args.zarr_format == 2:
        raise UsageError("--shards needs --zarr-format 3: sharding is a Zarr v3 codec")
    return args.zarr_format or (3 if args.shards else source.zarr_format)


def _check_shapes(args: argparse.Namespace, ndim: int) -> None:
    for flag, shape in (("--chunks", args.chunks), ("--shards", args.shards)):
        if shape is not None and len(shape) != ndim:
            raise UsageError(f"{flag} {','.join(map(str, shape))} has {len(shape)} "
                             f"dimensions; the source has {ndim}")
    if args.chunks and args.shards and any(s % c for s, c in zip(args.shards, args.chunks)):
        raise UsageError(f"--chunks {args.chunks} must divide --shards {args.shards}")


def create_target(args: argparse.Namespace, source: chunkflow.Array, *,
                  in_memory: bool = False) -> chunkflow.Array:
    """The new array at ``args.dst`` (``in_memory``: in memory, the template
    ``--resume`` compares an unfinished DST with) with ``source``'s shape, dtype and
    attributes."""
    _check_shapes(args, source.ndim)
    zarr_format = _target_format(args, source)
    # --compressor none gives None, so "not given" is the attribute's absence.
    given = hasattr(args, "compressor")
    compressor = args.compressor if given else source.compressor
    kwargs: dict[str, Any] = {}
    chunks = args.chunks or source.write_chunks
    if args.shards:
        # Default inner chunks: the source's where they divide the shard, else the
        # largest size that does (sharding needs inner chunks that tile the shard).
        inner = args.chunks or tuple(math.gcd(c, s) for c, s in zip(source.chunks, args.shards))
        kwargs["codecs"] = _sharding_codecs(inner, compressor)
        chunks = args.shards
    elif given:
        kwargs["compressor"] = compressor
    if source.fill_value is not None:
        kwargs["fill_value"] = source.fill_value
    attributes = without_mark(dict(source.attrs))
    if in_memory:
        return chunkflow.create(source.shape, chunks=chunks, dtype=source.dtype,
                                zarr_format=zarr_format, **kwargs)
    return create_at(
        args.dst, source.shape, chunks=chunks, dtype=source.dtype,
        overwrite=args.overwrite, zarr_format=zarr_format, attributes=attributes,
        cache=False, storage_options=storage_options(args, args.dst), **kwargs,
    )


def slabs(shape: tuple[int, ...], chunk_rows: int, itemsize: int,
          budget: int = SLAB_BYTES) -> list[slice]:
    """Ranges along the first axis, each whole rows of the target's chunks, near
    ``budget`` bytes (at least one row of chunks).

    Examples
    --------
    >>> slabs((10, 4), chunk_rows=3, itemsize=1, budget=25)
    [slice(0, 6, None), slice(6, 10, None)]
    """
    row_bytes = max(itemsize * math.prod(shape[1:]), 1)
    rows = max(chunk_rows, budget // row_bytes // chunk_rows * chunk_rows)
    return [slice(top, min(top + rows, shape[0])) for top in range(0, shape[0], rows)]


def copy_data(source: chunkflow.Array, target: chunkflow.Array, scheduler: str,
              progress: bool, resume: bool = False) -> None:
    """Copy the values slab by slab.

    One dask graph over the whole array lets the scheduler read far ahead of the
    writes when the chunk grids differ (measured: 190 MB held for a 256 MiB copy), so
    each slab is its own graph; slabs end on the target's chunk rows, so no two write
    one chunk. With ``resume`` each finished slab is recorded in the target (one job
    of slabs, see :mod:`chunkflow.jobs`) and slabs an earlier run recorded are
    skipped.
    """
    if source.ndim == 0:
        target[...] = source[...]
        return
    rest = tuple(slice(0, n) for n in source.shape[1:])
    parts = slabs(source.shape, target.write_chunks[0], source.dtype.itemsize, SLAB_BYTES)
    job = open_job(target, (len(parts),), resume=resume, identity=lambda: job_identity(
        target, plan={"slab plan": str([(r.start, r.stop) for r in parts])}, sources=[source]))
    if job is not None and job.n_done and progress:
        print(f"chunkflow copy: resuming, {job.n_done} of {job.total} slabs done before "
              "(skipped)", file=sys.stderr)
    driving = job.driving() if job is not None else contextlib.nullcontext()
    with _slab_bar(len(parts), progress) as advance, driving:
        for i, rows in enumerate(parts):
            if job is None or not job.is_done((i,)):
                blocks = chunkflow.to_dask(source, (rows, *rest), blocks=BLOCK_BYTES)
                # One slab: the library's bar counts its blocks; several: a bar of slabs.
                chunkflow.store(blocks, target, (rows, *rest), scheduler=scheduler,
                                progress=progress and len(parts) == 1)
                if job is not None:
                    job.commit((i,))
            advance()
    if job is not None:
        job.finish(target)


@contextlib.contextmanager
def _slab_bar(total: int, enabled: bool) -> Iterator[Callable[[], None]]:
    try:
        from tqdm import tqdm
    except ImportError:
        enabled = False
    if not enabled or total < 2:
        yield lambda: None
        return
    bar = tqdm(total=total, unit="slab", desc="chunkflow copy", file=sys.stderr)
    def tick() -> None:
        bar.update(1)

    try:
        yield tick
    finally:
        bar.close()


def _layout(array: chunkflow.Array) -> str:
    if array.shards is None:
        return f"chunks {array.chunks}"
    return f"shards {array.shards} of chunks {array.chunks}"


def _check_finished(source: chunkflow.Array, args: argparse.Namespace) -> None:
    """Refuse an unfinished job's output as SRC unless ``--unfinished copy`` (before
    anything is created), in the command's words."""
    try:
        check_copy_source(source, args.unfinished, repr(args.src))
    except UnfinishedSourceError as error:
        text = str(error).replace("rerun it with resume=True", "rerun it with --resume")
        raise UnfinishedSourceError(
            text.replace("pass unfinished='copy'", "pass --unfinished copy")) from None


def run_copy(args: argparse.Namespace) -> int:
    """Copy ``args.src`` to a new array at ``args.dst``."""
    source = open_array_at(args.src, storage_options(args, args.src), cache=False)
    _check_finished(source, args)
    start = time.perf_counter()
    with kept_for_resume(args):
        target = resumed_or_created(
            args, lambda location: create_target(args, source, in_memory=location is None))
        with waited_for(args.scheduler), naming_source(args.src):
            copy_data(source, target, args.scheduler, progress_wanted(args), args.resume)
        carry_unfinished(source, target)  # --unfinished copy: the copy is unfinished too
    seconds = time.perf_counter() - start
    print(f"copied {args.src} (Zarr v{source.zarr_format}, {_layout(source)}) to "
          f"{args.dst} (Zarr v{target.zarr_format}, {_layout(target)}) in {seconds:.2f} s")
    return 0


def register(commands: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``copy`` to the command parser."""
    copy = commands.add_parser(
        "copy", parents=parents,
        help="copy an array chunk by chunk: convert v2/v3, rechunk, shard, recompress",
        description="Copy the array at SRC to a new array at DST, block by block in "
                    "bounded memory. Unless told otherwise the copy keeps the source's "
                    "format, chunks and compressor.",
    )
    copy.add_argument("src", metavar="SRC", help="the array to copy (folder, .zip or URL)")
    copy.add_argument("dst", metavar="DST", help="where to write the copy")
    copy.add_argument("--zarr-format", type=int, choices=(2, 3), default=None,
                      help="Zarr format of the copy (default: the source's)")
    add_renamed_option(copy, "--format", "--zarr-format", "zarr_format", type=int,
                       choices=(2, 3))
    copy.add_argument("--chunks", type=parse_shape, metavar="N,N,...",
                      help="chunk shape of the copy (inside shards with --shards)")
    copy.add_argument("--shards", type=parse_shape, metavar="N,N,...",
                      help="shard shape (Zarr v3 sharding_indexed codec)")
    copy.add_argument("--compressor", type=parse_compressor, default=argparse.SUPPRESS,
                      metavar="NAME[:LEVEL]", help=f"one of {COMPRESSORS} (default: the source's)")
    copy.add_argument("--overwrite", action="store_true", help="replace an existing DST")
    copy.add_argument("--unfinished", choices=UNFINISHED_CHOICES, default="raise",
                      help="SRC is an unfinished job's output: refuse (raise, the default) "
                           "or copy it as it is and mark the copy unfinished (copy)")
    add_resume_option(copy)
    add_compute_options(copy)
    copy.set_defaults(run=run_copy)
