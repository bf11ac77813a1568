"""``chunkflow convert``: TIFF, OME-TIFF, HDF5, raw and .npy files to sharded OME-Zarr
with its pyramid (:func:`chunkflow.convert`).

Every option is checked before the source is read (exit code 2, naming the option).

Examples
--------
>>> parse_scale("1,0.5,0.5"), parse_scale("x=0.5,y=0.5")
((1.0, 0.5, 0.5), {'x': 0.5, 'y': 0.5})
>>> parse_units("micrometer"), parse_units("x=nm,t=second")
({'z': 'micrometer', 'y': 'micrometer', 'x': 'micrometer'}, {'x': 'nm', 't': 'second'})
"""

from __future__ import annotations

import argparse
import contextlib
import re
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

import chunkflow
from chunkflow.cli.cleanup import removed_on_failure, waited_for
from chunkflow.cli.options import (
    add_compute_options,
    add_max_memory_option,
    parse_shape,
    progress_wanted,
    storage_options,
)
from chunkflow.cli.pyramid import parse_units as parse_axis_units
from chunkflow.cli.resume import add_resume_option
from chunkflow.errors import (
    ContainsArrayError,
    ContainsGroupError,
    InvalidArgumentError,
    MemoryPlanError,
    PyramidError,
    UsageError,
)
from chunkflow.graph.pyramid.downsample import METHODS
from chunkflow.metadata.ngff import resolve_axes

__all__ = ["check_options", "parse_scale", "parse_units", "register", "run_convert"]

# The library's keyword names in its messages that chunkflow.cli.words does not
# rewrite (it rewrites max_memory, overwrite=True, resume=True; chunks= and shards=
# before a space only).
_OPTIONS = {"scale=": "--scale ", "scale ": "--scale ", "levels=": "--levels ",
            "channel_names=": "--channel-names ", "zarr_format=": "--zarr-format ",
            "axes: ": "--axes: ", "dataset=": "--dataset ", "chunks=": "--chunks ",
            "shards=": "--shards ", "dtype=": "--dtype ", "offset=": "--offset ",
            "order=": "--order ", "shape=": "--shape "}


def parse_scale(text: str) -> tuple[float, ...] | dict[str, float]:
    """``1,0.5,0.5`` (one size per axis) or ``x=0.5,y=0.5`` (by axis name)."""
    try:
        if "=" in text:
            pairs = (part.split("=", 1) for part in text.split(","))
            scale: Any = {name.strip(): float(value) for name, value in pairs}
            values = tuple(scale.values())
        else:
            scale = values = tuple(float(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a scale; expected sizes such as 1,0.5,0.5 or x=0.5,y=0.5") from None
    if not all(np.isfinite(v) and v > 0 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r}: every size must be positive")
    return scale


def parse_units(text: str) -> dict[str, str]:
    """``micrometer`` (every space axis) or ``x=micrometer,t=second`` (by axis)."""
    if "=" not in text and "," not in text and text.strip():
        return {name: text.strip() for name in "zyx"}
    return parse_axis_units(text)


def check_options(args: argparse.Namespace) -> None:
    """Refuse options that cannot work together, before anything is read."""
    ndim = None
    if args.axes is not None:
        try:
            resolve_axes(args.axes, len(args.axes))
        except PyramidError as err:
            raise UsageError(f"--axes {args.axes}: {str(err).partition(': ')[2] or err}") from None
        ndim = len(args.axes)
    for flag, value in (("--chunks", args.chunks), ("--shards", args.shards),
                        ("--scale", args.scale if isinstance(args.scale, tuple) else None),
                        ("--shape", args.shape)):
        if value is not None and ndim is not None and len(value) != ndim:
            raise UsageError(f"{flag} gives {len(value)} sizes; --axes {args.axes} has {ndim}")
    if args.shards is not None and args.zarr_format == 2:
        raise UsageError("--shards needs --zarr-format 3: sharding is a Zarr v3 codec")
    if args.chunks and args.shards and (len(args.chunks) != len(args.shards) or any(
            s % c for s, c in zip(args.shards, args.chunks))):
        raise UsageError(f"--chunks {_shown(args.chunks)} must divide --shards "
                         f"{_shown(args.shards)} along every axis")
    if args.levels is not None and args.levels < 1:
        raise UsageError(f"--levels {args.levels}: give 1 or more")
    if args.resume and args.overwrite:
        raise UsageError("--resume continues DST and --overwrite replaces it; pass one of them")
    if args.dtype is not None:
        try:
            np.dtype(args.dtype)
        except TypeError:
            raise UsageError(f"--dtype {args.dtype!r} is not a numpy dtype (e.g. uint16, <f4)"
                             ) from None
    if args.shape is not None and args.dtype is None:
        raise UsageError("--shape needs --dtype: a raw file says neither")
    if (args.offset or args.order != "C") and args.shape is None:
        raise UsageError("--offset and --order describe a raw file; give its --shape and "
                         "--dtype too")
    if args.offset < 0:
        raise UsageError(f"--offset {args.offset}: give 0 or more bytes")


def _shown(shape: tuple[int, ...]) -> str:
    return ",".join(map(str, shape))


@contextlib.contextmanager
def options_named() -> Iterator[None]:
    """The library's refusals of arguments as usage errors naming the options."""
    try:
        yield
    except (InvalidArgumentError, PyramidError, MemoryPlanError, ContainsArrayError,
            ContainsGroupError) as err:
        text = str(err)
        for keyword, option in _OPTIONS.items():
            text = text.replace(keyword, option)
        # "shape=)" became "--shape )": no space before punctuation or a second space
        raise UsageError(re.sub(r" +([),;:]| )", r"\1", text)) from err


def run_convert(args: argparse.Namespace) -> int:
    """Convert ``args.src`` to an OME-Zarr image at ``args.dst``."""
    check_options(args)
    start = time.perf_counter()
    kwargs: dict[str, Any] = {
        "axes": args.axes, "scale": args.scale, "units": args.units,
        "channel_names": args.channel_names, "chunks": args.chunks, "shards": args.shards,
        "levels": args.levels, "method": args.method, "dataset": args.dataset,
        "stack_axis": args.stack_axis, "shape": args.shape, "dtype": args.dtype,
        "offset": args.offset, "order": args.order, "zarr_format": args.zarr_format,
        "overwrite": args.overwrite, "resume": args.resume, "max_memory": args.max_memory,
        "storage_options": storage_options(args, args.dst) or storage_options(args, args.src),
    }
    kept = (contextlib.nullcontext() if args.resume
            else removed_on_failure(args.dst, storage_options(args, args.dst)))
    with kept, waited_for(args.scheduler), options_named():
        levels = chunkflow.convert(args.src, args.dst, scheduler=args.scheduler,
                                   progress=progress_wanted(args), **kwargs)
    seconds = time.perf_counter() - start
    shapes = ", ".join(str(level.shape) for level in levels)
    print(f"{args.src} converted to {args.dst} (OME-Zarr, {len(levels)} levels, Zarr "
          f"v{levels[0].zarr_format}) in {seconds:.2f} s: {shapes}")
    return 0


def register(commands: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``convert`` to the command parser."""
    parser = commands.add_parser(
        "convert", parents=parents,
        help="TIFF, OME-TIFF, HDF5, raw or .npy files to sharded OME-Zarr with a pyramid",
        description="Convert IN (a TIFF or OME-TIFF file, a quoted glob or a folder of TIFF "
                    "files, FILE.h5::DATASET, a .npy file, a raw file with --shape and "
                    "--dtype, or a Zarr array) to an OME-Zarr image at OUT: sharded Zarr v3 "
                    "(NGFF 0.5) or Zarr v2 (NGFF 0.4), with its pyramid, in one job. Axes, "
                    "physical sizes, units and channel names come from the file (OME-XML) "
                    "unless given.",
    )
    parser.add_argument("src", metavar="IN", help="what to convert")
    parser.add_argument("dst", metavar="OUT", help="where to write the OME-Zarr image")
    parser.add_argument("--axes", default=None, metavar="NAMES",
                        help="axis names in order, such as tczyx (default: the file's)")
    parser.add_argument("--scale", type=parse_scale, default=None, metavar="SIZES",
                        help="physical size of a pixel: 1,0.5,0.5 or x=0.5,y=0.5 (default: "
                             "the file's, else 1)")
    parser.add_argument("--units", type=parse_units, default=None, metavar="UNITS",
                        help="micrometer (every space axis) or x=micrometer,t=second")
    parser.add_argument("--channel-names", type=lambda text: text.split(","), default=None,
                        metavar="NAME,...", help="one name per channel (default: the file's)")
    parser.add_argument("--chunks", type=parse_shape, default=None, metavar="N,N,...",
                        help="chunk shape of level 0 (inside the shards)")
    parser.add_argument("--shards", type=parse_shape, default=None, metavar="N,N,...",
                        help="shard shape of level 0 (Zarr v3)")
    parser.add_argument("--levels", type=int, default=None,
                        help="pyramid levels, level 0 included (default: until the image "
                             "fits in one chunk)")
    parser.add_argument("--method", choices=METHODS, default="mean",
                        help="how a level is made from the one before (default: mean)")
    parser.add_argument("--zarr-format", type=int, choices=(2, 3), default=3,
                        help="3 (sharded, NGFF 0.5; default) or 2 (NGFF 0.4)")
    parser.add_argument("--dataset", default=None,
                        help="the HDF5 dataset (or write IN as FILE.h5::DATASET)")
    parser.add_argument("--stack-axis", choices=("z", "t", "c"), default="z",
                        help="the axis TIFF files of a glob or folder are stacked along")
    parser.add_argument("--shape", type=parse_shape, default=None, metavar="N,N,...",
                        help="shape of a raw file")
    parser.add_argument("--dtype", default=None, help="dtype of a raw file (e.g. uint16, >f4)")
    parser.add_argument("--offset", type=int, default=0,
                        help="bytes before the values of a raw file")
    parser.add_argument("--order", choices=("C", "F"), default="C",
                        help="memory order of a raw file")
    add_max_memory_option(parser)
    parser.add_argument("--overwrite", action="store_true", help="replace an existing OUT")
    add_resume_option(parser)
    add_compute_options(parser)
    parser.set_defaults(run=run_convert, dst_metavar="OUT")
