"""``chunkflow pyramid``: an OME-Zarr multiscale image (or label image) from an array.

Examples
--------
>>> parse_factors("2"), parse_factors("1,2,2"), parse_factors("z=1")
(2, (1, 2, 2), {'z': 1})
>>> parse_units("x=micrometer,t=second")
{'x': 'micrometer', 't': 'second'}
>>> parse_numbers("0.65,0.65"), parse_numbers("z=2,x=0.5")
((0.65, 0.65), {'z': 2.0, 'x': 0.5})
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Callable, Iterator
from functools import partial
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
from chunkflow.graph.pyramid.channels import channel_entries
from chunkflow.graph.pyramid.downsample import METHODS
from chunkflow.graph.pyramid.frame import image_multiscales, per_axis_values, resolve_frame
from chunkflow.metadata.ngff import Multiscales, resolve_axes

__all__ = ["NGFF_UNITS", "check_options", "options_named", "parse_factors", "parse_numbers",
           "parse_units", "register", "run_pyramid"]

#: The units NGFF lists for space and time axes (what viewers understand).
NGFF_UNITS = {
    "space": frozenset(
        "angstrom attometer centimeter decimeter exameter femtometer foot gigameter hectometer "
        "inch kilometer megameter meter micrometer mile millimeter nanometer parsec petameter "
        "picometer terameter yard yoctometer yottameter zeptometer zettameter".split()),
    "time": frozenset(
        "attosecond centisecond day decisecond exasecond femtosecond gigasecond hectosecond "
        "hour kilosecond megasecond microsecond millisecond minute nanosecond petasecond "
        "picosecond second terasecond yoctosecond yottasecond zeptosecond zettasecond".split()),
}


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


def parse_numbers(text: str) -> tuple[float, ...] | dict[str, float]:
    """``0.65,0.65`` (one per axis) or ``z=2,y=0.65,x=0.65`` (by axis name)."""
    try:
        if "=" in text:
            pairs = (part.split("=", 1) for part in text.split(","))
            return {name.strip(): float(value) for name, value in pairs}
        return tuple(float(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a list of numbers; expected 0.65,0.65 or z=2,y=0.65,x=0.65"
        ) from None


def _shown(value: object) -> str:
    """An option's parsed value as it was typed."""
    if isinstance(value, dict):
        return ",".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                        for k, v in value.items())
    if isinstance(value, (tuple, list)):
        return ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)
    return str(value)


def _named(option: str, value: object, check: Callable[[], Any]) -> Any:
    """``check()``, its refusal a usage error naming ``option`` and its value."""
    try:
        return check()
    except PyramidError as err:
        raise UsageError(f"{option} {_shown(value)}: "
                         f"{str(err).removeprefix('pyramid: ').removeprefix('axes: ')}") from err


def check_options(args: argparse.Namespace, source: chunkflow.Array,
                  image: Multiscales | None) -> None:
    """Refuse a bad ``--axes``, ``--units``, ``--scale``, ``--translation`` or
    ``--channels`` by name, before anything is created (``image``: the image a label
    image joins, whose axes it inherits)."""
    if args.axes is not None:
        _named("--axes", args.axes, lambda: resolve_axes(args.axes, source.ndim))
    frame = _named("--units" if args.units else "--axes", args.units or args.axes or "",
                   lambda: resolve_frame(args.axes, args.units, None, None, source.ndim,
                                         source.dimension_names, image))
    names = [a.name for a in frame.axes]
    for axis in frame.axes:
        unit = (args.units or {}).get(axis.name)
        allowed = NGFF_UNITS.get(axis.type or "")
        if unit is not None and (allowed is None or unit not in allowed):
            hint = (f"one of NGFF's {axis.type} units, e.g. "
                    f"{'micrometer' if axis.type == 'space' else 'second'}"
                    if allowed else "no unit (NGFF gives units to space and time axes)")
            raise UsageError(f"--units {axis.name}={unit}: axis {axis.name!r} ({axis.type}) "
                             f"takes {hint}")
    for option, what, default in (("--scale", "scale", 1.0), ("--translation", "translation", 0.0)):
        value = getattr(args, what)
        if value is not None:
            _named(option, value, partial(per_axis_values, what, value, names, {}, default))
    if args.channels is not None:
        kinds = [a.type for a in frame.axes]
        if args.labels is not None or "channel" not in kinds:
            raise UsageError(f"--channels {','.join(args.channels)}: the image (axes "
                             f"{''.join(names)!r}) has no channel axis"
                             + (" (a label image has none)" if args.labels else ""))
        _named("--channels", args.channels,
               lambda: channel_entries(args.channels, source.shape[kinds.index("channel")]))


@contextlib.contextmanager
def options_named() -> Iterator[None]:
    """Arguments that do not fit the image are usage errors (exit code 2), and an
    output that exists asks for ``--overwrite``."""
    try:
        yield
    except (PyramidError, MemoryPlanError) as err:
        raise UsageError(str(err)) from err
    except (ContainsArrayError, ContainsGroupError) as err:
        raise UsageError(str(err)) from err  # in CLI words at run_guarded


def run_pyramid(args: argparse.Namespace) -> int:
    """Write the pyramid of ``args.src`` at ``args.dst``."""
    source = open_array_at(args.src, storage_options(args, args.src), cache=False)
    options = storage_options(args, args.dst)
    check_options(args, source, image_multiscales(args.dst, options) if args.labels else None)
    start = time.perf_counter()
    kwargs: dict[str, Any] = {
        "levels": args.levels, "factors": args.factors, "method": args.method,
        "axes": args.axes, "units": args.units, "scale": args.scale,
        "translation": args.translation, "channels": args.channels, "chunks": args.chunks,
        "zarr_format": args.zarr_format, "labels": args.labels, "overwrite": args.overwrite,
        "max_memory": args.max_memory, "storage_options": options,
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
                        help="units of the axes, e.g. x=micrometer,y=micrometer (NGFF's "
                             "names; a label image inherits the image's)")
    parser.add_argument("--scale", type=parse_numbers, default=None, metavar="S",
                        help="physical size of a level-0 pixel: one per axis (1,0.65,0.65) or "
                             "by axis (y=0.65,x=0.65); default 1, or the image's for --labels")
    parser.add_argument("--translation", type=parse_numbers, default=None, metavar="T",
                        help="physical position of pixel 0, like --scale; default 0, or the "
                             "image's for --labels")
    parser.add_argument("--channels", type=lambda text: text.split(","), default=None,
                        metavar="NAMES", help="channel names, e.g. DAPI,GFP (one per channel; "
                                              "the names napari shows)")
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
