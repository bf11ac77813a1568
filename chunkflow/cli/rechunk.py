"""``chunkflow rechunk``: new chunks (and dtype, codec, format) within a memory budget.

Every task reads whole source chunks and writes whole output chunks (shards); when no
such block fits ``--max-memory``, the job goes through an intermediate array in
``--temp`` (see :func:`chunkflow.rechunk`).

Examples
--------
>>> parse_chunks("64,-1,256"), parse_chunks("0=64")
((64, -1, 256), {0: 64})
>>> parse_region("10:20,:,5:")
(slice(10, 20, None), slice(None, None, None), slice(5, None, None))
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Iterator

import numpy as np

import chunkflow
from chunkflow.cli.cleanup import waited_for
from chunkflow.cli.copy import COMPRESSORS, parse_compressor
from chunkflow.cli.nodes import naming_source, open_array_at
from chunkflow.cli.options import (
    add_casting_option,
    add_compute_options,
    add_max_memory_option,
    add_renamed_option,
    naming_casting,
    parse_shape,
    progress_wanted,
    refuse_uncastable,
    storage_options,
)
from chunkflow.cli.resume import add_resume_option, kept_for_resume
from chunkflow.errors import MemoryPlanError, UsageError

__all__ = ["parse_chunks", "parse_region", "register", "run_rechunk"]


def parse_chunks(text: str) -> tuple[int, ...] | dict[int, int]:
    """``64,-1,256`` (one size per axis, ``-1`` the whole axis) or ``0=64,2=128``
    (some axes; the others keep the source's chunks)."""
    try:
        if "=" in text:
            pairs = (part.split("=") for part in text.split(","))
            return {int(axis): int(size) for axis, size in pairs}
        sizes = tuple(int(part) for part in text.replace("x", ",").split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a chunk shape; expected sizes such as 64,-1,256 (-1: the whole "
            "axis) or AXIS=SIZE pairs such as 0=64") from None
    if any(n < 1 and n != -1 for n in sizes):
        raise argparse.ArgumentTypeError(f"{text!r}: every size must be at least 1, or -1")
    return sizes


def parse_region(text: str) -> tuple[slice, ...]:
    """``START:STOP`` per axis, comma-separated (either end may be left out)."""
    region = []
    for part in text.split(","):
        start, colon, stop = part.partition(":")
        try:
            region.append(slice(int(start) if start.strip() else None,
                                int(stop) if stop.strip() else None) if colon else None)
        except ValueError:
            region.append(None)
        if region[-1] is None:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a region; expected START:STOP per axis, e.g. 0:64,:,100:")
    return tuple(region)  # type: ignore[arg-type]  # no None left: checked above


@contextlib.contextmanager
def _options_named() -> Iterator[None]:
    """A refused plan is the options' fault (exit code 2), told with their names."""
    try:
        yield
    except MemoryPlanError as err:
        text = str(err).replace("pass temp=", "pass --temp").replace("max_memory", "--max-memory")
        raise UsageError(text) from err



def _layout(array: chunkflow.Array) -> str:
    if array.shards is None:
        return f"chunks {array.chunks}"
    return f"shards {array.shards} of chunks {array.chunks}"


def run_rechunk(args: argparse.Namespace) -> int:
    """Rechunk ``args.src`` into a new array at ``args.dst``."""
    options = storage_options(args, args.src) or storage_options(args, args.dst)
    source = open_array_at(args.src, storage_options(args, args.src), cache=False)
    start = time.perf_counter()
    compressors = args.compressor if hasattr(args, "compressor") else ...
    try:
        dtype = np.dtype(args.dtype) if args.dtype else source.dtype
    except TypeError:
        raise UsageError(f"--dtype {args.dtype!r} is not a numpy dtype (e.g. uint16, <f4)"
                         ) from None
    refuse_uncastable(source.dtype, dtype, args.casting, f"--dtype {dtype}", "SRC's dtype")
    with kept_for_resume(args), waited_for(args.scheduler), naming_source(args.src), \
            _options_named(), naming_casting(dtype, "the values"):
        target = chunkflow.rechunk(
            source, args.chunks, args.dst, max_memory=args.max_memory, temp=args.temp,
            shards=args.shards, zarr_format=args.zarr_format, compressors=compressors,
            dtype=dtype, casting=args.casting, selection=args.selection,
            overwrite=args.overwrite, scheduler=args.scheduler,
            progress=progress_wanted(args), resume=args.resume, storage_options=options)
    seconds = time.perf_counter() - start
    print(f"rechunked {args.src} ({_layout(source)}) to {args.dst} (Zarr "
          f"v{target.zarr_format}, {_layout(target)}, {target.dtype}) in {seconds:.2f} s")
    return 0


def register(commands: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``rechunk`` to the command parser."""
    rechunk = commands.add_parser(
        "rechunk", parents=parents,
        help="rechunk an array within a memory budget (rechunker's algorithm)",
        description="Copy the array at SRC to a new array at DST with other chunks, each "
                    "task reading whole source chunks and writing whole DST chunks within "
                    "--max-memory per task; through an intermediate array in --temp "
                    "when no such task fits (the error says so before anything is written).",
    )
    rechunk.add_argument("src", metavar="SRC", help="the array to rechunk (folder, .zip or URL)")
    rechunk.add_argument("dst", metavar="DST", help="where to write the new array")
    rechunk.add_argument("--chunks", type=parse_chunks, required=True, metavar="N,N,...",
                         help="chunk shape of DST (-1: a whole axis), or AXIS=SIZE pairs "
                              "for some axes (inner chunks with --shards)")
    add_max_memory_option(
        rechunk, required=True,
        help="what one task may hold, e.g. '256 MiB' (a worker holds that per thread)")
    rechunk.add_argument("--temp", metavar="PATH",
                         help="where the intermediate array may go (a folder or URL)")
    rechunk.add_argument("--shards", type=parse_shape, metavar="N,N,...",
                         help="shard shape of DST (Zarr v3 sharding)")
    rechunk.add_argument("--zarr-format", type=int, choices=(2, 3), default=None,
                         help="Zarr format of DST (default: the source's; 3 with --shards)")
    add_renamed_option(rechunk, "--format", "--zarr-format", "zarr_format", type=int,
                       choices=(2, 3))
    rechunk.add_argument("--compressor", type=parse_compressor, default=argparse.SUPPRESS,
                         metavar="NAME[:LEVEL]", help=f"one of {COMPRESSORS} (default: the "
                                                      "source's)")
    rechunk.add_argument("--dtype", help="dtype of DST (default: the source's)")
    add_casting_option(rechunk)
    rechunk.add_argument("--selection", type=parse_region, metavar="START:STOP,...",
                         help="rechunk only this part of SRC")
    add_renamed_option(rechunk, "--region", "--selection", "selection", type=parse_region)
    rechunk.add_argument("--overwrite", action="store_true", help="replace an existing DST")
    add_resume_option(rechunk)
    add_compute_options(rechunk)
    rechunk.set_defaults(run=run_rechunk)
