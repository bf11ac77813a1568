"""``chunkflow pyramid``: an OME-Zarr multiscale image (or label image) from an array.

Examples
--------
>>> parse_factors("2"), parse_factors("1,2,2"), parse_factors("z=1")
(2, (1, 2, 2), {'z': 1})
>>> parse_units("x=micrometer,t=second")
{'x': 'micrometer', 't': 'second'}
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Iterator
from typing import Any

import chunkflow
from chunkflow.cli.cleanup import waited_for
from chunkflow.cli.nodes import naming_source, open_array_at
from chunkflow.cli.options import (
    add_compute_options,
    add_max_memory_option,
    parse_shape,
    progress_wanted,
    storage_options,
)
from chunkflow.cli.resume import add_resume_option, kept_for_resume
from chunkflow.errors import ContainsArrayError, ContainsGroupError, MemoryPlanError, PyramidError, UsageError
from chunkflow.graph.pyramid.downsample import METHODS

__all__ = ["options_named", "parse_factors", "parse_units", "register", "run_pyramid"]


def parse_factors(text: str) -> int | tuple[int, ...] | dict[str, int]:
    """``2`` (every space axis), ``1,2,2`` (one per axis) or ``z=1,y=2`` (by axis)."""
    try:
        if "=" in text:
            pairs = (part.split("=", 1) for part in text.split(","))
            return {name.strip(): int(value) for name, value in pairs}
        values = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a factor; expected 2, 1,2,2 or z=1,y=2,x=2") from None
    return values[0] if len(values) == 1 else values


def parse_units(text: str) -> dict[str, str]:
    """``x=micrometer,y=micrometer,t=second``: a unit per axis name."""
    units = {}
    for part in text.split(","):
        name, sep, unit = part.partition("=")
        if not sep or not name.strip() or not unit.strip():
            raise argparse.ArgumentTypeError(f"{text!r} is not AXIS=UNIT,... "
                                             "(e.g. x=micrometer,y=micrometer)")
        units[name.strip()] = unit.strip()
    return units


@contextlib.contextmanager
def options_named() -> Iterator[None]:
    """Arguments that do not fit the image are usage errors (exit code 2), and an
    output that exists asks for ``--overwrite``."""
    try:
        yield
    except (PyramidError, MemoryPlanError) as err:
        raise UsageError(str(err)) from err
    except (ContainsArrayError, ContainsGroupError) as err:
        raise UsageError(str(err).replace("pass overwrite=True", "pass --overwrite")) from err


def run_pyramid(args: argparse.Namespace) -> int:
    """Write the pyramid of ``args.src`` at ``args.dst``."""
    source = open_array_at(args.src, storage_options(args, args.src), cache=False)
    start = time.perf_counter()
    kwargs: dict[str, Any] = {
        "levels": args.levels, "factors": args.factors, "method": args.method,
        "axes": args.axes, "units": args.units, "chunks": args.chunks,
        "zarr_format": args.zarr_format, "labels": args.labels, "overwrite": args.overwrite,
        "max_memory": args.max_memory, "storage_options": storage_options(args, args.dst),
        "resume": args.resume,
    }
    with kept_for_resume(args):
        with waited_for(args.scheduler), naming_source(args.src), options_named():
            levels = chunkflow.pyramid(source, args.dst, scheduler=args.scheduler,
                                       progress=progress_wanted(args), **kwargs)
    seconds = time.perf_counter() - start
    where = f"{args.dst}/labels/{args.labels}" if args.labels else args.dst
    shapes = ", ".join(str(level.shape) for level in levels)
    print(f"{len(levels)} levels of {args.src} written to {where} in {seconds:.2f} s: {shapes}")
    return 0


def register(commands: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``pyramid`` to the command parser."""
    parser = commands.add_parser(
        "pyramid", parents=parents,
        help="write an OME-Zarr multiscale image (every level from the one before)",
        description="Write the array at SRC and its downsampled levels as an OME-Zarr image "
                    "at DST (NGFF 0.4 for Zarr v2, 0.5 for v3), in one job that never holds "
                    "a whole level. With --labels NAME, write a label image under "
                    "DST/labels/NAME instead.",
    )
    parser.add_argument("src", metavar="SRC", help="the full-resolution image (folder, .zip or URL)")
    parser.add_argument("dst", metavar="DST", help="where to write the OME-Zarr image")
    parser.add_argument("--method", choices=METHODS, default=None,
                        help="how a level is made from the one before (default: mean; mode "
                             "for --labels)")
    parser.add_argument("--levels", type=int, default=None,
                        help="how many levels, level 0 included (default: until the image "
                             "fits in one chunk)")
    parser.add_argument("--factors", type=parse_factors, default=2, metavar="F",
                        help="factor between levels: 2 (every space axis), 1,2,2 or z=1")
    parser.add_argument("--axes", default=None, metavar="NAMES",
                        help="axis names such as tczyx (default: the array's dimension names, "
                             "else yx, zyx, czyx or tczyx)")
    parser.add_argument("--units", type=parse_units, default=None, metavar="AXIS=UNIT,...",
                        help="units of the axes, e.g. x=micrometer,y=micrometer")
    parser.add_argument("--chunks", type=parse_shape, default=None,
                        help="chunk shape of every level (default: the source's)")
    parser.add_argument("--zarr-format", type=int, choices=(2, 3), default=None,
                        help="2 (NGFF 0.4) or 3 (NGFF 0.5); default: the source's")
    parser.add_argument("--labels", default=None, metavar="NAME",
                        help="write a label image DST/labels/NAME (method mode or nearest)")
    add_max_memory_option(parser)
    parser.add_argument("--overwrite", action="store_true", help="replace an existing DST")
    add_resume_option(parser)
    add_compute_options(parser)
    parser.set_defaults(run=run_pyramid)
