"""``chunkflow filter``: a scipy.ndimage filter over every block, with halos.

The halo is the filter's radius, so blocks read their neighbours' edges and the result
equals the filter applied to the whole image at once.

``--dtype`` is the output's dtype (default: the source's). The filter computes in a
type wide enough for the source (:func:`work_dtype`: float64 for integers and bools,
the source's own float type; a median, which only picks values, in the source's
dtype), and its result is cast once at the end under ``--casting`` (default
``same_value``, see :mod:`chunkflow.graph.casting`): a value the output cannot hold (a
Gaussian of values in the thousands into uint8, a median that is not 0 or 1 into bool)
fails the command and leaves nothing behind, unless ``--casting unsafe``. Into an
integer or bool output a float result is first rounded to the nearest integer
(``numpy.rint``); scipy's own integer output truncates after each pass instead.
A dtype the filters cannot write (strings, dates) is refused before anything is created.

Axes: a filter's size is a length in space. On an image whose axes are named (its
``dimension_names``, xarray's ``_ARRAY_DIMENSIONS``, or the NGFF axes of the OME-Zarr
image it is a level of; ``--axes czyx`` names them otherwise) a single size leaves the
channel (``c``) and time (``t``) axes alone: ``--gaussian 2`` on ``czyx`` is sigma
``0,2,2,2``. A size per axis (``--gaussian 0,1,2,2``, or by name: ``--gaussian z=1,y=2,x=2``,
the axes not named left alone) is taken as given (see :mod:`chunkflow.graph.filters.axes`).

Examples
--------
>>> filter_depth("gaussian", 2.0), filter_depth("median", 5), filter_depth("uniform", 4)
(8, 2, 2)
>>> parse_sizes("2"), parse_sizes("0,1.5,2"), parse_sizes("z=1,x=2")
(2.0, (0.0, 1.5, 2.0), {'z': 1.0, 'x': 2.0})
>>> import numpy as np
>>> work_dtype("gaussian", np.dtype("u2")), work_dtype("median", np.dtype("u2"))
(dtype('float64'), dtype('uint16'))
>>> work_dtype("uniform", np.dtype("f2")), work_dtype("gaussian", np.dtype("c8"))
(dtype('float32'), dtype('complex64'))
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

import chunkflow
from chunkflow.cli.cleanup import waited_for
from chunkflow.cli.nodes import create_at, naming_source, open_array_at
from chunkflow.cli.options import (
    add_casting_option,
    add_compute_options,
    naming_casting,
    progress_wanted,
    refuse_uncastable,
    storage_options,
)
from chunkflow.cli.resume import add_resume_option, kept_for_resume, resumed_or_created
from chunkflow.errors import MemoryPlanError, MissingDependencyError, UsageError
from chunkflow.graph.filters.axes import axis_names, per_axis_sizes
from chunkflow.graph.map.halo import BOUNDARIES, SCIPY_MODES

__all__ = ["apply_filter", "check_filter_dtypes", "filter_depth", "filter_sizes", "parse_sizes",
           "register", "run_filter", "scipy_ndimage", "work_dtype"]

#: The kinds of dtype the filters read and write: numbers (bool, integers, floats, complex).
FILTER_KINDS = "biufc"

GAUSSIAN_TRUNCATE = 4.0


def filter_depth(kind: str, size: float) -> int:
    """Halo (elements per side) the filter needs to give whole-image results."""
    if kind == "gaussian":
        return int(GAUSSIAN_TRUNCATE * float(size) + 0.5)  # scipy's kernel radius
    return int(size) // 2


def scipy_ndimage() -> Any:
    """``scipy.ndimage``, or an error that fits whichever command needs it.

    scipy is one of chunkflow's dependencies, so this fails only in a broken install.
    """
    try:
        from scipy import ndimage
    except ImportError:
        raise MissingDependencyError(
            "the filters need scipy, which is not installed (python -m pip install scipy)"
        ) from None
    return ndimage


def apply_filter(window: np.ndarray, *, kind: str, size: float | tuple[float, ...],
                 boundary: str) -> np.ndarray:
    """Filter one window (block plus halo) with scipy.ndimage (``size``: one for every
    axis, or one per axis)."""
    ndimage = scipy_ndimage()
    mode = SCIPY_MODES[boundary]
    if kind == "gaussian":
        return ndimage.gaussian_filter(window, sigma=size, mode=mode, truncate=GAUSSIAN_TRUNCATE)
    sides = tuple(int(s) for s in size) if isinstance(size, tuple) else int(size)
    if kind == "median":
        return ndimage.median_filter(window, size=sides, mode=mode)
    return ndimage.uniform_filter(window, size=sides, mode=mode)


def parse_sizes(text: str) -> float | tuple[float, ...] | dict[str, float]:
    """``2`` (the space axes), ``0,2,2`` (one per axis) or ``z=1,y=2,x=2`` (by axis)."""
    try:
        if "=" in text:
            pairs = (part.split("=", 1) for part in text.split(","))
            return {name.strip(): float(value) for name, value in pairs}
        values = tuple(float(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a size; expected 2, 0,2,2 or z=1,y=2,x=2") from None
    return values[0] if len(values) == 1 else values


def _shown(value: Any) -> str:
    if isinstance(value, dict):
        return ",".join(f"{k}={v:g}" for k, v in value.items())
    if isinstance(value, tuple):
        return ",".join(f"{v:g}" for v in value)
    return f"{value:g}"


def chosen_filter(args: argparse.Namespace) -> tuple[str, Any]:
    """(kind, size as typed) from ``--gaussian``, ``--median`` or ``--uniform``."""
    for kind in ("gaussian", "median", "uniform"):
        value = getattr(args, kind)
        if value is not None:
            return kind, value
    raise UsageError("choose a filter: --gaussian SIGMA, --median SIZE or --uniform SIZE")


def filter_sizes(kind: str, value: Any, names: tuple[str | None, ...]) -> tuple[float, ...]:
    """The size of ``--KIND value`` on each axis (see :mod:`chunkflow.graph.filters.axes`);
    a bad one is a usage error naming the option."""
    option = f"--{kind} {_shown(value)}"
    neutral = 0.0 if kind == "gaussian" else 1.0
    try:
        sizes = per_axis_sizes(value, names, neutral=neutral)
    except ValueError as err:
        raise UsageError(f"{option}: {err} (name them with --axes)") from err
    scalar = not isinstance(value, (tuple, dict))
    if scalar and not float(value) > 0:
        raise UsageError(f"{option}: must be positive")
    if any(not np.isfinite(s) or s < neutral for s in sizes):
        raise UsageError(f"{option}: every {'sigma' if kind == 'gaussian' else 'size'} must be "
                         f"finite and at least {neutral:g}")
    if kind != "gaussian" and any(s != int(s) for s in sizes):
        raise UsageError(f"{option}: sizes are whole numbers")
    if all(s == neutral for s in sizes):
        raise UsageError(f"{option} leaves every axis of {list(names)} alone"
                         + (" (channels and time are left alone unless named)" if scalar
                            else ""))
    return sizes


def _create_output(args: argparse.Namespace, source: chunkflow.Array) -> chunkflow.Array:
    return resumed_or_created(args, lambda location: _create_at(args, source, location))


def _create_at(args: argparse.Namespace, source: chunkflow.Array,
               location: str | None) -> chunkflow.Array:
    kwargs: dict[str, Any] = {}
    if source.fill_value is not None and not args.dtype:
        kwargs["fill_value"] = source.fill_value
    # The axes stay named: Zarr v3 dimension names, xarray's attribute in v2.
    if source.dimension_names is not None:
        kwargs["dimension_names"] = source.dimension_names
    if "_ARRAY_DIMENSIONS" in source.attrs:
        kwargs["attributes"] = {"_ARRAY_DIMENSIONS": source.attrs["_ARRAY_DIMENSIONS"]}
    if location is None:  # the template --resume compares an unfinished DST with
        return chunkflow.create(source.shape, chunks=source.write_chunks,
                                dtype=args.dtype or source.dtype, zarr_format=source.zarr_format,
                                compressor=source.compressor, **kwargs)
    return create_at(
        location, source.shape, chunks=source.write_chunks, dtype=args.dtype or source.dtype,
        overwrite=args.overwrite, zarr_format=source.zarr_format, compressor=source.compressor,
        storage_options=storage_options(args, args.dst), **kwargs,
    )


def work_dtype(kind: str, source: np.dtype) -> np.dtype:
    """The dtype a filter computes in, wide enough for ``source`` as scipy's own
    arithmetic is: float64 for integers and bools, the source's float (or complex)
    type, float32 for float16 (which scipy does not take). A median only picks values:
    it computes in the source's dtype (float32 for float16), exactly."""
    if source.kind == "f" and source.itemsize < 4:
        return np.dtype("f4")
    if kind == "median" or source.kind in "fc":
        return source.newbyteorder("=")
    return np.dtype("f8")


def check_filter_dtypes(kind: str, source: np.dtype, out: np.dtype, casting: str) -> None:
    """Refuse, before anything is created, a source or ``--dtype`` the filter cannot
    read or write, and a pair of dtypes ``--casting`` rules out."""
    if source.kind not in FILTER_KINDS:
        raise UsageError(f"SRC holds {source} values; the filters read numbers (bool, "
                         "integers, floats, complex)")
    if out.kind not in FILTER_KINDS:
        raise UsageError(f"--dtype {out}: the filters write numbers (bool, integers, floats, "
                         "complex); choose one of those")
    if kind == "median" and source.kind == "c":
        raise UsageError(f"--median: scipy's median_filter does not take complex values "
                         f"(SRC is {source}); filter the real and imaginary parts apart")
    refuse_uncastable(work_dtype(kind, source), out, casting, f"--{kind}")


def run_filter(args: argparse.Namespace) -> int:
    """Filter ``args.src`` into a new array at ``args.dst``."""
    kind, value = chosen_filter(args)
    scipy_ndimage()  # fail before creating anything
    source = open_array_at(args.src, storage_options(args, args.src), cache=False)
    names = _names(args, source)
    sizes = filter_sizes(kind, value, names)
    size = sizes[0] if len(set(sizes)) == 1 else sizes
    out_dtype = np.dtype(args.dtype or source.dtype)
    check_filter_dtypes(kind, source.dtype, out_dtype, args.casting)
    work = work_dtype(kind, source.dtype)
    depth = tuple(filter_depth(kind, s) for s in sizes)
    start = time.perf_counter()
    with kept_for_resume(args):
        target = _create_output(args, source)
        with waited_for(args.scheduler), naming_source(args.src), \
                naming_filter(kind, size, depth), naming_casting(target.dtype, "the filtered values"):
            chunkflow.map_chunks(
                _filter_in, source, out=target, depth=depth,
                # scipy pads every pass of a separable filter with cval itself at the
                # array's edge (mode="constant"); a padded halo would hold the filtered
                # constant instead (off by one in integers).
                boundary="none" if args.boundary == "constant" else args.boundary,
                scheduler=args.scheduler, casting=args.casting,
                progress=progress_wanted(args), kind=kind, size=size,
                work=str(work), rounded=work.kind in "fc" and target.dtype.kind in "biu",
                edge=args.boundary, resume=args.resume,
            )
    seconds = time.perf_counter() - start
    shown = _shown(size) + (f" on axes {''.join(n or '?' for n in names)}"
                            if any(names) else "")
    halo = depth[0] if len(set(depth)) == 1 else depth
    print(f"{kind} filter ({shown}, halo {halo}, boundary {args.boundary}) of {args.src} "
          f"{source.shape} written to {args.dst} in {seconds:.2f} s")
    return 0


def _names(args: argparse.Namespace, source: chunkflow.Array) -> tuple[str | None, ...]:
    """The axes' names: ``--axes``, else the array's own (see :func:`axis_names`)."""
    if args.axes is None:
        return axis_names(source, args.src)
    names = tuple(args.axes) if "," not in args.axes else tuple(args.axes.split(","))
    if len(names) != source.ndim or len(set(names)) != len(names):
        raise UsageError(f"--axes {args.axes}: give {source.ndim} distinct names, one per axis "
                         f"of SRC {source.shape} (e.g. {'tczyx'[-source.ndim:]})")
    return names


@contextlib.contextmanager
def naming_filter(kind: str, size: Any, depth: tuple[int, ...]) -> Iterator[None]:
    """A filter too wide for memory is the option's fault: say which option."""
    try:
        yield
    except MemoryPlanError as err:
        halo = depth[0] if len(set(depth)) == 1 else depth
        raise UsageError(f"--{kind} {_shown(size)} needs a halo of {halo} per side, too wide "
                         f"to filter in memory ({err}); choose a smaller --{kind}") from err


def _filter_in(window: np.ndarray, *, kind: str, size: float | tuple[float, ...], work: str,
               rounded: bool, edge: str) -> np.ndarray:
    """The filter of one window, computed in ``work`` (a float type, or the source's
    for a median); ``rounded``: to the nearest integer, for an integer output."""
    # ``edge``, not ``boundary``: map_chunks keeps ``boundary=`` for itself.
    result = apply_filter(window.astype(work, copy=False), kind=kind, size=size, boundary=edge)
    return np.rint(result) if rounded else result


def _dtype_name(text: str) -> str:
    try:
        dtype = np.dtype(text)
    except TypeError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a numpy dtype (e.g. float32)") from None
    if dtype.kind not in FILTER_KINDS:
        raise argparse.ArgumentTypeError(f"{text!r}: the filters write numbers (bool, "
                                         "integers, floats, complex), not this dtype")
    return str(dtype)


def register(commands: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``filter`` to the command parser."""
    parser = commands.add_parser(
        "filter", parents=parents,
        help="filter an image block by block with halos (gaussian, median, uniform)",
        description="Apply a scipy.ndimage filter to the array at SRC, block by block with "
                    "halos as wide as the filter's radius, and write a new array at DST "
                    "(same shape, chunks and format). The result equals the filter applied "
                    "to the whole image at once.",
    )
    parser.add_argument("src", metavar="SRC", help="the image (folder, .zip or URL)")
    parser.add_argument("dst", metavar="DST", help="where to write the filtered image")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--gaussian", type=parse_sizes, metavar="SIGMA",
                       help="Gaussian blur: SIGMA on the space axes (not c or t), or one per "
                            "axis (0,1,2,2), or by axis (z=1,y=2,x=2)")
    which.add_argument("--median", type=parse_sizes, metavar="SIZE",
                       help="median over a box of SIZE per space axis (1 on c and t), or "
                            "sizes per axis as --gaussian")
    which.add_argument("--uniform", type=parse_sizes, metavar="SIZE",
                       help="mean over a box, sizes as --median")
    parser.add_argument("--axes", default=None, metavar="NAMES",
                        help="names of SRC's axes, e.g. czyx (default: its dimension names, or "
                             "the NGFF axes of the image it is a level of); c and t are not "
                             "filtered unless a size is given for them")
    parser.add_argument("--boundary", choices=BOUNDARIES, default="reflect",
                        help="what lies beyond the image's edge (default: reflect)")
    parser.add_argument("--dtype", type=_dtype_name, default=None,
                        help="data type of the output (default: the source's); the filter "
                             "computes in floats (float64 for integers) and the result is "
                             "cast once at the end, rounded to the nearest integer for an "
                             "integer dtype; a value it cannot hold fails (see --casting)")
    add_casting_option(parser)
    parser.add_argument("--overwrite", action="store_true", help="replace an existing DST")
    add_resume_option(parser)
    add_compute_options(parser)
    parser.set_defaults(run=run_filter)
