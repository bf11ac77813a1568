"""``chunkflow demo``: the whole job on a synthetic microscopy image, kept for you to see.

1. make a uint16 image of fluorescent blobs on a noisy background, band by band, into
   a Zarr store larger than the chunk cache's budget (set small for the demo);
2. Gaussian-filter it with halos (:func:`chunkflow.map_chunks`) into a second store;
3. reduce both (mean, std, a histogram) in bounded memory;
4. draw a crop before and after into a PNG (matplotlib, if installed).

Everything lands in one folder (default ``./chunkflow-demo``), which is kept, marked as
the demo's by a small file (:data:`MARKER`). The demo writes only into a new or empty
folder, or one an earlier demo run marked and that holds nothing but its results (which
it replaces); any other folder is refused (exit 2), naming what is there, and nothing is
touched. A run that fails removes what it created there (the folder itself if it made
it).

Examples
--------
>>> band = synthetic_band(0, 64, 128, make_blobs(128, seed=1), seed=1)
>>> band.shape, band.dtype
((64, 128), dtype('uint16'))
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from dask.utils import format_bytes

import chunkflow
from chunkflow.cli.cleanup import new_entries_removed_on_failure, waited_for
from chunkflow.cli.filters import apply_filter, filter_depth, scipy_ndimage
from chunkflow.cli.options import add_scheduler_option, progress_wanted
from chunkflow.cli.stats import text_histogram
from chunkflow.errors import UsageError

__all__ = ["MARKER", "claim_folder", "make_blobs", "register", "run_demo", "synthetic_band"]

DEFAULT_FOLDER = "chunkflow-demo"
#: The file that marks a folder as the demo's: a second run replaces what it holds.
MARKER = ".chunkflow-demo.json"
#: Everything a run writes into its folder.
RESULTS = (MARKER, "raw.zarr", "smooth.zarr", "before-after.png")
BACKGROUND, NOISE = 300.0, 120.0
SIGMA = 2.0
MAX_SIDE = 65536  # an 8 GiB image: beyond that a demo only fills the disk
# Cells about every 32 px; each a Gaussian spot of radius 1.5 to 4 px, dim enough that
# the noise hides the faint ones until the filter averages it away.
SPACING, RADIUS_RANGE, BRIGHTNESS_RANGE = 32, (1.5, 4.0), (150.0, 1500.0)


def make_blobs(size: int, seed: int) -> np.ndarray:
    """Rows ``(y, x, radius, brightness)`` of the image's blobs."""
    rng = np.random.default_rng(seed)
    count = max(1, (size // SPACING) ** 2)
    return np.column_stack([
        rng.uniform(0, size, count), rng.uniform(0, size, count),
        rng.uniform(*RADIUS_RANGE, count), rng.uniform(*BRIGHTNESS_RANGE, count),
    ])


def synthetic_band(top: int, bottom: int, width: int, blobs: np.ndarray, seed: int) -> np.ndarray:
    """Rows ``top:bottom`` of the image: background, blobs near the band, noise."""
    rng = np.random.default_rng([seed, top])  # each band its own noise, reproducibly
    band = rng.normal(BACKGROUND, NOISE, (bottom - top, width)).astype(np.float32)
    reach = 3 * blobs[:, 2]
    near = blobs[(blobs[:, 0] + reach >= top) & (blobs[:, 0] - reach < bottom)]
    for y, x, radius, brightness in near:
        r = int(3 * radius) + 1
        y0, y1 = max(int(y) - r, top), min(int(y) + r + 1, bottom)
        x0, x1 = max(int(x) - r, 0), min(int(x) + r + 1, width)
        yy = np.arange(y0, y1, dtype=np.float32)[:, None] - y
        xx = np.arange(x0, x1, dtype=np.float32)[None, :] - x
        band[y0 - top:y1 - top, x0:x1] += brightness * np.exp(-(yy**2 + xx**2) / (2 * radius**2))
    return np.clip(band, 0, 65535).astype(np.uint16)


@contextmanager
def _step(name: str, timings: list[tuple[str, float]]) -> Iterator[None]:
    print(f"- {name}", flush=True)  # before the step: it labels the step's progress bar
    start = time.perf_counter()
    yield
    timings.append((name, time.perf_counter() - start))


def _write_image(path: Path, size: int, chunk: int, seed: int) -> chunkflow.Array:
    image = chunkflow.create((size, size), chunks=(chunk, chunk), dtype="uint16",
                             store=str(path), overwrite=True,
                             attributes={"description": "chunkflow demo: synthetic blobs"})
    blobs = make_blobs(size, seed)
    for top in range(0, size, chunk):  # one band of chunks at a time: bounded memory
        bottom = min(top + chunk, size)
        image[top:bottom] = synthetic_band(top, bottom, size, blobs, seed)
    return image


def _gaussian(window: np.ndarray, *, sigma: float) -> np.ndarray:
    return apply_filter(window, kind="gaussian", size=sigma, boundary="reflect")


def _save_png(path: Path, before: np.ndarray, after: np.ndarray) -> str:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return ("matplotlib is not installed: no PNG (python -m pip install matplotlib, "
                "or in chunkflow's folder: python -m pip install \".[plot]\")")
    figure = Figure(figsize=(10, 5), layout="constrained")
    FigureCanvasAgg(figure)
    low, high = np.percentile(before, [1, 99.5])
    for axes, image, title in zip(figure.subplots(1, 2), (before, after),
                                  ("before: raw", f"after: Gaussian filter, sigma {SIGMA:g}")):
        axes.imshow(image, cmap="magma", vmin=low, vmax=high)
        axes.set_title(title)
        axes.set_axis_off()
    figure.savefig(path, dpi=100)
    return str(path)


def run_demo(args: argparse.Namespace) -> int:
    """Make, filter, reduce and picture the demo image; print what happened.

    A failed run removes what it created (the folder, or the new entries of a folder
    that was there before); earlier results it replaced are not brought back.
    """
    scipy_ndimage()  # fail before creating anything
    folder = Path(args.folder).resolve()
    claim_folder(folder)
    with new_entries_removed_on_failure(folder):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / MARKER).write_text(json.dumps(
            {"written_by": "chunkflow demo", "version": chunkflow.__version__,
             "results": list(RESULTS[1:])}, indent=2) + "\n")
        with waited_for(args.scheduler):
            return _run_in(folder, args)


def claim_folder(folder: Path) -> None:
    """Refuse ``folder`` unless the demo may write there: it is missing or empty, or an
    earlier run marked it (:data:`MARKER`) and it holds nothing but that run's results.

    Raises
    ------
    UsageError
        Naming what is in the folder (exit code 2); nothing is touched.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> claim_folder(folder)  # empty: the demo's from now on
    >>> _ = (folder / "raw.zarr").mkdir(), (folder / "todo.txt").write_text("mine")
    >>> claim_folder(folder)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    chunkflow.errors.UsageError: --folder '...' holds 'raw.zarr', 'todo.txt', which the demo did not ...
    """
    if not os.path.lexists(folder):
        return
    if not folder.is_dir():
        raise UsageError(f"--folder {str(folder)!r} is a file, not a folder; choose another "
                         "--folder")
    entries = sorted(os.listdir(folder))
    others = [name for name in entries if name not in RESULTS] if MARKER in entries else entries
    if not others:
        return
    shown = ", ".join(repr(name) for name in others[:5]) + (
        f" and {len(others) - 5} more" if len(others) > 5 else "")
    raise UsageError(
        f"--folder {str(folder)!r} holds {shown}, which the demo did not write; it writes "
        "only into a new or empty folder, or replaces the results of an earlier demo run "
        "there. Nothing was touched: choose another --folder (or move those away)")


def _run_in(folder: Path, args: argparse.Namespace) -> int:
    size, chunk = args.size, min(args.chunk, args.size)
    nbytes = size * size * 2
    cache_budget = nbytes // 2  # the image is twice the cache budget
    progress = progress_wanted(args)
    timings: list[tuple[str, float]] = []
    raw_path, smooth_path = folder / "raw.zarr", folder / "smooth.zarr"
    print(f"chunkflow demo: a {size}x{size} uint16 image ({format_bytes(nbytes)}) in "
          f"{chunk}x{chunk} chunks; chunk cache budget {format_bytes(cache_budget)}")
    with chunkflow.config.set({"chunkflow.cache.max-bytes": cache_budget}):
        with _step(f"make the image ({len(make_blobs(size, args.seed))} blobs + noise)", timings):
            raw = _write_image(raw_path, size, chunk, args.seed)
        depth = filter_depth("gaussian", SIGMA)
        with _step(f"Gaussian filter, sigma {SIGMA:g}, halo {depth} (map_chunks)", timings):
            smooth = chunkflow.map_chunks(_gaussian, str(raw_path), out=str(smooth_path),
                                          depth=depth, overwrite=True, scheduler=args.scheduler,
                                          progress=progress, sigma=SIGMA)
        with _step("mean and std of both images (reduce)", timings):
            stats = {name: chunkflow.reduce(str(path), ("mean", "std"),
                                            scheduler=args.scheduler, progress=progress)
                     for name, path in (("raw", raw_path), ("smooth", smooth_path))}
        with _step("histogram of the filtered image", timings):
            counts, edges = chunkflow.histogram(str(smooth_path), bins=12,
                                                scheduler=args.scheduler, progress=progress)
        crop = slice(0, min(size, 384))
        with _step("PNG of a crop, before and after", timings):
            png = _save_png(folder / "before-after.png", raw[crop, crop], smooth[crop, crop])
    _report(timings, stats, counts, edges, raw_path, smooth_path, png)
    return 0


def _report(timings: list[tuple[str, float]], stats: dict[str, dict[str, Any]],
            counts: np.ndarray, edges: np.ndarray, raw_path: Path, smooth_path: Path,
            png: str) -> None:
    print("\ntimes:")
    width = max(len(name) for name, _ in timings)
    for name, seconds in timings:
        print(f"  {name:<{width}}  {seconds:6.2f} s")
    print(f"  {'total':<{width}}  {sum(s for _, s in timings):6.2f} s")
    print()
    for name, values in stats.items():
        print(f"  {name:<6} mean {float(values['mean']):8.1f}   std {float(values['std']):8.1f}")
    print("\nhistogram of the filtered image:")
    print(text_histogram(counts, edges, width=30))
    print("\nresults (kept):")
    print(f"  raw image       {raw_path}")
    print(f"  filtered image  {smooth_path}")
    print(f"  picture         {png}")
    print(f"\nnext: chunkflow info {smooth_path}")


def _side(text: str) -> int:
    """A side in pixels, 16 to ``MAX_SIDE`` (argparse names the option: ``--size``,
    ``--chunk``).

    Examples
    --------
    >>> _side("0")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: must be from 16 to 65536, got 0
    """
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not 16 <= value <= MAX_SIDE:
        raise argparse.ArgumentTypeError(f"must be from 16 to {MAX_SIDE}, got {value}")
    return value


def register(commands: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``demo`` to the command parser."""
    parser = commands.add_parser(
        "demo", parents=parents,
        help="make, filter, reduce and picture a synthetic microscopy image (a few seconds)",
        description="Make a synthetic microscopy-like image larger than the chunk cache, "
                    "filter it with halos, reduce it, and draw it before and after. Prints "
                    "each step's time and where the results are; keeps them.",
    )
    parser.add_argument("--size", type=_side, default=4096,
                        help="image side in pixels (default 4096: 32 MiB)")
    parser.add_argument("--chunk", type=_side, default=512, help="chunk side (default 512)")
    parser.add_argument("--folder", default=DEFAULT_FOLDER,
                        help=f"where to write (default: ./{DEFAULT_FOLDER}): a new or empty "
                             "folder, or one holding earlier demo results, which are "
                             "replaced; a folder with anything else is refused")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    add_scheduler_option(parser)
    parser.set_defaults(run=run_demo)
