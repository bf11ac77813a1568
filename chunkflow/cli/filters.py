"""``chunkflow filter``: a scipy.ndimage filter over every block, with halos.

The halo is the filter's radius, so blocks read their neighbours' edges and the result
equals the filter applied to the whole image at once.

Examples
--------
>>> filter_depth("gaussian", 2.0), filter_depth("median", 5), filter_depth("uniform", 4)
(8, 2, 2)
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
from chunkflow.cli.options import add_compute_options, progress_wanted, storage_options
from chunkflow.cli.resume import add_resume_option, kept_for_resume, resumed_or_created
from chunkflow.errors import MemoryPlanError, MissingDependencyError, UsageError
from chunkflow.graph.map.halo import BOUNDARIES, SCIPY_MODES

__all__ = ["apply_filter", "filter_depth", "register", "run_filter",
           "scipy_ndimage"]

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


def apply_filter(window: np.ndarray, *, kind: str, size: float, boundary: str) -> np.ndarray:
    """Filter one window (block plus halo) with scipy.ndimage."""
    ndimage = scipy_ndimage()
    mode = SCIPY_MODES[boundary]
    if kind == "gaussian":
        return ndimage.gaussian_filter(window, sigma=size, mode=mode, truncate=GAUSSIAN_TRUNCATE)
    if kind == "median":
        return ndimage.median_filter(window, size=int(size), mode=mode)
    return ndimage.uniform_filter(window, size=int(size), mode=mode)


def chosen_filter(args: argparse.Namespace) -> tuple[str, float]:
    """(kind, size) from ``--gaussian``, ``--median`` or ``--uniform``."""
    for kind in ("gaussian", "median", "uniform"):
        value = getattr(args, kind)
        if value is not None:
            if value <= 0:
                raise UsageError(f"--{kind} must be positive, got {value}")
            return kind, value
    raise UsageError("choose a filter: --gaussian SIGMA, --median SIZE or --uniform SIZE")


def _create_output(args: argparse.Namespace, source: chunkflow.Array) -> chunkflow.Array:
    return resumed_or_created(args, lambda location: _create_at(args, source, location))


def _create_at(args: argparse.Namespace, source: chunkflow.Array,
               location: str | None) -> chunkflow.Array:
    kwargs: dict[str, Any] = {}
    if source.fill_value is not None and not args.dtype:
        kwargs["fill_value"] = source.fill_value
    if location is None:  # the template --resume compares an unfinished DST with
        return chunkflow.create(source.shape, chunks=source.write_chunks,
                                dtype=args.dtype or source.dtype, zarr_format=source.zarr_format,
                                compressor=source.compressor, **kwargs)
    return create_at(
        location, source.shape, chunks=source.write_chunks, dtype=args.dtype or source.dtype,
        overwrite=args.overwrite, zarr_format=source.zarr_format, compressor=source.compressor,
        storage_options=storage_options(args, args.dst), **kwargs,
    )


def run_filter(args: argparse.Namespace) -> int:
    """Filter ``args.src`` into a new array at ``args.dst``."""
    kind, size = chosen_filter(args)
    scipy_ndimage()  # fail before creating anything
    source = open_array_at(args.src, storage_options(args, args.src), cache=False)
    depth = filter_depth(kind, size)
    start = time.perf_counter()
    with kept_for_resume(args):
        target = _create_output(args, source)
        with waited_for(args.scheduler), naming_source(args.src), \
                naming_filter(kind, size, depth):
            # Windows arrive in the output's dtype so scipy computes in it (floats stay
            # floats).
            chunkflow.map_chunks(
                _as_dtype_then_filter, source, out=target, depth=depth,
                # scipy pads every pass of a separable filter with cval itself at the
                # array's edge (mode="constant"); a padded halo would hold the filtered
                # constant instead (off by one in integers).
                boundary="none" if args.boundary == "constant" else args.boundary,
                scheduler=args.scheduler,
                progress=progress_wanted(args), kind=kind, size=size,
                dtype_name=str(target.dtype), edge=args.boundary, resume=args.resume,
            )
    seconds = time.perf_counter() - start
    print(f"{kind} filter ({size:g}, halo {depth}, boundary {args.boundary}) of {args.src} "
          f"{source.shape} written to {args.dst} in {seconds:.2f} s")
    return 0


@contextlib.contextmanager
def naming_filter(kind: str, size: float, depth: int) -> Iterator[None]:
    """A filter too wide for memory is the option's fault: say which option."""
    try:
        yield
    except MemoryPlanError as err:
        raise UsageError(f"--{kind} {size:g} needs a halo of {depth} per side, too wide to "
                         f"filter in memory ({err}); choose a smaller --{kind}") from err


def _as_dtype_then_filter(window: np.ndarray, *, kind: str, size: float,
                          dtype_name: str, edge: str) -> np.ndarray:
    # ``edge``, not ``boundary``: map_chunks keeps ``boundary=`` for itself.
    return apply_filter(window.astype(dtype_name, copy=False), kind=kind, size=size,
                        boundary=edge)


def _dtype_name(text: str) -> str:
    try:
        return str(np.dtype(text))
    except TypeError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a numpy dtype (e.g. float32)") from None


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
    which.add_argument("--gaussian", type=float, metavar="SIGMA", help="Gaussian blur")
    which.add_argument("--median", type=int, metavar="SIZE", help="median over SIZE^ndim")
    which.add_argument("--uniform", type=int, metavar="SIZE", help="mean over SIZE^ndim")
    parser.add_argument("--boundary", choices=BOUNDARIES, default="reflect",
                        help="what lies beyond the image's edge (default: reflect)")
    parser.add_argument("--dtype", type=_dtype_name, default=None,
                        help="data type of the result (default: the source's)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing DST")
    add_resume_option(parser)
    add_compute_options(parser)
    parser.set_defaults(run=run_filter)
