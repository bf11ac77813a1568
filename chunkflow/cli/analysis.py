"""The steps between a filtered image and its labels, on the command line.

- ``chunkflow threshold SRC [DST] --method otsu|li|yen|triangle``: scikit-image's
  threshold of the whole image (:mod:`chunkflow.skimage.filters`, from exact global
  histograms), printed with ``--print`` and written as a mask ``SRC > T`` at DST;
- ``chunkflow fill-holes SRC DST``: :func:`chunkflow.ndimage.binary_fill_holes`;
- ``chunkflow remove-small-objects SRC DST --max-size N`` (or ``--min-size N``) and
  ``chunkflow remove-small-holes SRC DST --max-size N``:
  :mod:`chunkflow.skimage.morphology`'s size filters.

Each equals its scipy or scikit-image original on the whole image, in bounded memory.
Arguments that cannot work (a DST that exists without ``--overwrite``, a float image for
a size filter, a connectivity the image has not) are refused, exit code 2, before any
chunk is read or anything is created.

Examples
--------
>>> import tempfile, numpy as np, chunkflow
>>> from chunkflow.cli import main
>>> with tempfile.TemporaryDirectory() as tmp:
...     _ = chunkflow.array(np.array([[1, 2, 2], [9, 10, 10]], "u1"), chunks=(1, 2),
...                         store=f"{tmp}/in.zarr")
...     main(["threshold", f"{tmp}/in.zarr", "--method", "otsu", "--print"])
2
0
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
from scipy import ndimage as scipy_ndimage

import chunkflow
from chunkflow.cli.cleanup import waited_for
from chunkflow.cli.label import labels_refused
from chunkflow.cli.nodes import naming_source, open_array_at
from chunkflow.cli.options import (
    add_compute_options,
    add_max_memory_option,
    progress_wanted,
    storage_options,
)
from chunkflow.cli.resume import add_resume_option, kept_for_resume
from chunkflow.errors import InvalidArgumentError, UsageError
from chunkflow.storage import make_store

__all__ = ["METHODS", "above", "intermediate", "location", "register", "run_fill_holes",
           "run_remove_small_holes", "run_remove_small_objects", "run_threshold"]

#: ``--method`` of ``chunkflow threshold``: the scikit-image thresholds of one value.
METHODS = ("otsu", "li", "yen", "triangle")


def above(block: np.ndarray, *, threshold: Any) -> np.ndarray:
    """``block > threshold``: scikit-image's foreground.

    Examples
    --------
    >>> above(np.array([1, 5, 9]), threshold=np.int64(5)).tolist()
    [False, False, True]
    """
    return np.greater(block, threshold)


def _exists(location: str, options: dict[str, Any] | None) -> bool:
    """Whether anything is at ``location`` (a path or an fsspec URL); ``False`` when a
    URL cannot be asked (no credentials yet...): the command then says what is wrong."""
    if "://" not in location:
        return os.path.lexists(location)
    import fsspec

    try:
        fs, path = fsspec.core.url_to_fs(location, **(options or {}))
        return bool(fs.exists(path))
    except Exception:  # noqa: BLE001 - see above: the writer reports the URL's problem
        return False


def check_destination(args: argparse.Namespace) -> None:
    """Refuse a DST that exists, unless ``--overwrite`` (or ``--resume``) says what to do
    with it: before any work, since the size filters label the whole image first."""
    if args.overwrite or getattr(args, "resume", False):
        return
    if _exists(args.dst, storage_options(args, args.dst)):
        raise UsageError(f"{args.dst!r} already exists; pass --overwrite to replace it")


def check_connectivity(args: argparse.Namespace, ndim: int) -> None:
    if not 1 <= args.connectivity <= ndim:
        raise UsageError(f"--connectivity {args.connectivity}: must lie between 1 (faces) and "
                         f"{ndim} (faces, edges and corners) for a {ndim}-D array")


def check_numbers(source: chunkflow.Array, command: str, kinds: str, what: str) -> None:
    if source.dtype.kind not in kinds:
        raise UsageError(f"SRC holds {source.dtype} values; {command} reads {what}")


def location(args: argparse.Namespace, where: str | None) -> Any:
    """Where an output goes: a path as it is, a URL as a store opened with the
    ``--storage-option`` pairs (the library takes storage options for one location of
    a job only, and SRC is already open)."""
    options = storage_options(args, where) if where is not None else None
    return make_store(where, storage_options=options) if options else where


@contextlib.contextmanager
def intermediate(args: argparse.Namespace, name: str) -> Iterator[str]:
    """A new folder for a command's intermediate labels, removed at the end: under
    ``--work FOLDER`` (made if missing, and then removed too), else in this machine's
    temporary folder. On disk, not in memory: the labels are as large as the image."""
    folder = args.work
    made = folder is not None and not os.path.lexists(folder)
    if made:
        os.makedirs(folder)
    place = tempfile.mkdtemp(prefix=f"chunkflow-{name}-", dir=folder)
    try:
        yield place
    finally:
        shutil.rmtree(place, ignore_errors=True)
        if made:
            with contextlib.suppress(OSError):  # kept if something else appeared in it
                os.rmdir(folder)


def check_work(args: argparse.Namespace) -> None:
    """``--work``: a folder path, or nothing there yet."""
    if args.work is not None and "://" in args.work:
        raise UsageError(f"--work {args.work}: give a folder path (on a cluster, one that "
                         "every machine sees); URLs are not taken for intermediate labels")
    if args.work is not None and os.path.lexists(args.work) and not os.path.isdir(args.work):
        raise UsageError(f"--work {args.work}: not a folder")


def _job(args: argparse.Namespace) -> dict[str, Any]:
    """The job keywords every command passes on."""
    return {"scheduler": args.scheduler, "progress": progress_wanted(args),
            "max_memory": args.max_memory}


@contextlib.contextmanager
def refused_as_usage() -> Iterator[None]:
    """The library's refusals of an argument (a budget, an existing output) are usage
    errors, named by their options."""
    with labels_refused():
        try:
            yield
        except InvalidArgumentError as err:
            raise UsageError(str(err)) from err


def _threshold_of(args: argparse.Namespace, source: chunkflow.Array) -> Any:
    from chunkflow.skimage import filters  # imported when used: the CLI starts faster

    func = getattr(filters, f"threshold_{args.method}")
    kwargs: dict[str, Any] = _job(args)
    if args.nbins is not None:
        kwargs["nbins"] = args.nbins
    if args.tolerance is not None:
        kwargs["tolerance"] = args.tolerance
    with waited_for(args.scheduler), naming_source(args.src), refused_as_usage():
        return func(source, **kwargs)


def _number(value: Any) -> str:
    """A threshold as text that reads back as the same value (``float(text)``)."""
    return str(np.asarray(value).item())


def run_threshold(args: argparse.Namespace) -> int:
    """Print the threshold of ``args.src`` and/or write the mask ``SRC > T``."""
    if args.dst is None and not args.print:
        raise UsageError("give DST (where the mask SRC > T goes) or --print (the value "
                         "alone), or both")
    if args.tolerance is not None and (args.method != "li" or not args.tolerance > 0):
        raise UsageError(f"--tolerance {args.tolerance}: " + (
            "must be a positive number" if args.method == "li"
            else f"only threshold_li iterates to a tolerance, not threshold_{args.method}"))
    if args.nbins is not None and (args.method == "li" or args.nbins < 2):
        raise UsageError(f"--nbins {args.nbins}: " + (
            "threshold_li takes no bins (it iterates on the values)" if args.method == "li"
            else "must be at least 2"))
    source = open_array_at(args.src, storage_options(args, args.src), cache=False)
    check_numbers(source, "threshold", "biuf", "real numbers (bool, integers, floats)")
    if args.dst is None:
        print(_number(_threshold_of(args, source)))
        return 0
    check_destination(args)
    start = time.perf_counter()
    with kept_for_resume(args):
        value = _threshold_of(args, source)
        with waited_for(args.scheduler), naming_source(args.src), refused_as_usage():
            chunkflow.map_chunks(above, source, out=location(args, args.dst), dtype=bool,
                                 threshold=value, overwrite=args.overwrite, resume=args.resume,
                                 **_job(args))
    if args.print:
        print(_number(value))
    else:
        print(f"{args.method} threshold of {args.src}: {_number(value)}; mask SRC > "
              f"{_number(value)} written to {args.dst} in {time.perf_counter() - start:.2f} s")
    return 0


def run_fill_holes(args: argparse.Namespace) -> int:
    """Fill the holes of ``args.src`` into ``args.dst``, as scipy's binary_fill_holes."""
    from chunkflow.ndimage import binary_fill_holes

    source = open_array_at(args.src, storage_options(args, args.src), cache=False)
    check_numbers(source, "fill-holes", "biuf", "a mask (bool, or numbers: nonzero is True)")
    check_connectivity(args, source.ndim)
    check_destination(args)
    structure = scipy_ndimage.generate_binary_structure(source.ndim, args.connectivity)
    start = time.perf_counter()
    # No intermediate: binary_fill_holes keeps no labels (a table of the background's
    # parts, then one write pass).
    with kept_for_resume(args), waited_for(args.scheduler), naming_source(args.src), \
            refused_as_usage():
        binary_fill_holes(source, structure, out=location(args, args.dst),
                          overwrite=args.overwrite, resume=args.resume, **_job(args))
    print(f"holes of {args.src} filled (connectivity {args.connectivity}), written to "
          f"{args.dst} in {time.perf_counter() - start:.2f} s")
    return 0


def _size_limit(args: argparse.Namespace) -> int:
    """scikit-image 0.26's ``max_size``: ``--max-size N``, or ``--min-size N`` (keep
    objects of N voxels or more) as ``N - 1``."""
    if args.max_size is not None:
        if args.max_size < 0:
            raise UsageError(f"--max-size {args.max_size}: must be 0 or more")
        return int(args.max_size)
    if args.min_size < 1:
        raise UsageError(f"--min-size {args.min_size}: must be 1 or more")
    return int(args.min_size) - 1


def _run_size_filter(args: argparse.Namespace, what: str) -> int:
    from chunkflow.skimage import morphology

    source = open_array_at(args.src, storage_options(args, args.src), cache=False)
    check_numbers(source, f"remove-small-{what}", "biu", "a mask (bool) or labels (integers)")
    check_connectivity(args, source.ndim)
    limit = _size_limit(args)
    check_work(args)
    check_destination(args)
    func = morphology.remove_small_objects if what == "objects" else \
        morphology.remove_small_holes
    start = time.perf_counter()
    with kept_for_resume(args), intermediate(args, f"small-{what}") as work:
        with waited_for(args.scheduler), naming_source(args.src), refused_as_usage():
            func(source, connectivity=args.connectivity, max_size=limit,
                 out=location(args, args.dst), work=f"{work}/labels.zarr",
                 overwrite=args.overwrite, **_job(args))
    done = "removed" if what == "objects" else "filled"
    print(f"{what} of at most {limit} voxels {done} in {args.src} (connectivity "
          f"{args.connectivity}), written to {args.dst} in {time.perf_counter() - start:.2f} s")
    return 0


def run_remove_small_objects(args: argparse.Namespace) -> int:
    """Remove the small objects of ``args.src`` into ``args.dst``."""
    return _run_size_filter(args, "objects")


def run_remove_small_holes(args: argparse.Namespace) -> int:
    """Fill the small holes of ``args.src`` into ``args.dst``."""
    return _run_size_filter(args, "holes")


def _writer_options(parser: argparse.ArgumentParser, *, resume: bool = True) -> None:
    add_max_memory_option(parser)
    parser.add_argument("--overwrite", action="store_true", help="replace an existing DST")
    if resume:
        add_resume_option(parser)
    add_compute_options(parser)


def _connectivity_option(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument("--connectivity", type=int, default=1, metavar="N",
                        help=f"{default} joined: 1 faces (default) up to NDIM (faces, edges "
                             "and corners)")


def _work_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--work", default=None, metavar="FOLDER",
                        help=f"where the intermediate {what} (as large as the image) go: a "
                             "new folder under FOLDER, removed at the end (default: this "
                             "machine's temporary folder; on a cluster of several machines, "
                             "a folder they all see)")


def _register_threshold(commands: argparse._SubParsersAction,
                        parents: list[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "threshold", parents=parents,
        help="a threshold by name (Otsu, Li, Yen, triangle) and the mask above it",
        description="Compute scikit-image's threshold of the whole image at SRC "
                    "(skimage.filters.threshold_METHOD, from exact histograms of its blocks) "
                    "and write the mask SRC > T (bool) at DST, or print T with --print.",
    )
    parser.add_argument("src", metavar="SRC", help="the image (folder, .zip or URL)")
    parser.add_argument("dst", metavar="DST", nargs="?", default=None,
                        help="where to write the mask (optional with --print)")
    parser.add_argument("--method", choices=METHODS, default="otsu",
                        help="scikit-image's threshold_METHOD (default: otsu)")
    parser.add_argument("--nbins", type=int, default=None, metavar="N",
                        help="bins of a float image's histogram (default 256, as "
                             "scikit-image; integer images have a bin per value)")
    parser.add_argument("--tolerance", type=float, default=None, metavar="T",
                        help="--method li: stop when a step moves the threshold by T or "
                             "less (default: half the smallest gap between the image's "
                             "values, as scikit-image)")
    parser.add_argument("--print", action="store_true",
                        help="print the threshold alone on standard output (for a shell "
                             "variable), instead of the summary line")
    _writer_options(parser)
    parser.set_defaults(run=run_threshold)


def _register_fill_holes(commands: argparse._SubParsersAction,
                         parents: list[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "fill-holes", parents=parents,
        help="fill the holes of a mask (as scipy.ndimage.binary_fill_holes)",
        description="Fill the holes of the mask at SRC (background regions that do not "
                    "reach the border) and write the boolean result at DST, equal to "
                    "scipy.ndimage.binary_fill_holes on the whole image.",
    )
    parser.add_argument("src", metavar="SRC", help="the mask (folder, .zip or URL)")
    parser.add_argument("dst", metavar="DST", help="where to write the filled mask")
    _connectivity_option(parser, "background neighbours")
    _writer_options(parser)
    parser.set_defaults(run=run_fill_holes)


def _register_size_filter(commands: argparse._SubParsersAction,
                          parents: list[argparse.ArgumentParser], what: str) -> None:
    objects = what == "objects"
    parser = commands.add_parser(
        f"remove-small-{what}", parents=parents,
        help=("remove small objects (as skimage.morphology.remove_small_objects)" if objects
              else "fill small holes (as skimage.morphology.remove_small_holes)"),
        description=(
            "Remove the objects of at most --max-size voxels from the mask (or labels) at "
            "SRC and write the result at DST, equal to skimage.morphology."
            "remove_small_objects (scikit-image 0.26's max_size)." if objects else
            "Fill the holes (background regions) of at most --max-size voxels of the mask "
            "at SRC and write the boolean result at DST, equal to skimage.morphology."
            "remove_small_holes (scikit-image 0.26's max_size)."),
    )
    parser.add_argument("src", metavar="SRC", help="the mask or labels (folder, .zip or URL)")
    parser.add_argument("dst", metavar="DST", help="where to write the result")
    size = parser.add_mutually_exclusive_group(required=True)
    size.add_argument("--max-size", type=int, default=None, metavar="N",
                      help=f"{what} of N voxels or fewer are "
                           f"{'removed' if objects else 'filled'}")
    if objects:
        size.add_argument("--min-size", type=int, default=None, metavar="N",
                          help="objects of N voxels or more are kept (--max-size N-1)")
    else:
        parser.set_defaults(min_size=None)
    _connectivity_option(parser, "neighbours" if objects else "background neighbours")
    _work_option(parser, "labels")
    # The size filters run several jobs (label, measure, map): no --resume for them yet.
    _writer_options(parser, resume=False)
    parser.set_defaults(run=run_remove_small_objects if objects else run_remove_small_holes,
                        resume=False)


def register(commands: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``threshold``, ``fill-holes``, ``remove-small-objects`` and
    ``remove-small-holes`` to the command parser."""
    _register_threshold(commands, parents)
    _register_fill_holes(commands, parents)
    _register_size_filter(commands, parents, "objects")
    _register_size_filter(commands, parents, "holes")
