"""``chunkflow label``: the connected components of an array, into a new label array.

Examples
--------
>>> import tempfile, numpy as np, chunkflow
>>> from chunkflow.cli import main
>>> with tempfile.TemporaryDirectory() as tmp:
...     _ = chunkflow.array(np.eye(6) * 900, chunks=(3, 3), store=f"{tmp}/in.zarr")
...     main(["label", f"{tmp}/in.zarr", f"{tmp}/out.zarr", "--threshold", "500",
...           "--connectivity", "2", "-q"])
...     int(chunkflow.open_array(f"{tmp}/out.zarr")[5, 5])
1 object in ... written to ... (uint32) in ... s
0
1
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Iterator
from typing import Any

from scipy import ndimage

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
from chunkflow.errors import ContainsArrayError, ContainsGroupError, LabelError, MemoryPlanError, UsageError

__all__ = ["labels_refused", "register", "run_label"]


@contextlib.contextmanager
def labels_refused() -> Iterator[None]:
    """Arguments that do not fit are usage errors (exit code 2); an output that exists
    asks for ``--overwrite``."""
    try:
        yield
    except MemoryPlanError as err:
        raise UsageError(str(err)) from err  # in CLI words at run_guarded
    except LabelError as err:
        raise UsageError(str(err)) from err
    except (ContainsArrayError, ContainsGroupError) as err:
        raise UsageError(str(err)) from err  # in CLI words at run_guarded


def run_label(args: argparse.Namespace) -> int:
    """Label the components of ``args.src`` (above ``--threshold``) into ``args.dst``."""
    source = open_array_at(args.src, storage_options(args, args.src), cache=False)
    if not 1 <= args.connectivity <= source.ndim:
        raise UsageError(f"--connectivity {args.connectivity}: must lie between 1 (faces) and "
                         f"{source.ndim} (faces, edges and corners) for a {source.ndim}-D array")
    image: Any = source
    if args.threshold is not None:
        image = chunkflow.to_dask(source) > args.threshold
    start = time.perf_counter()
    with kept_for_resume(args):
        with waited_for(args.scheduler), naming_source(args.src), labels_refused():
            out, count = chunkflow.label(
                image, args.dst, structure=ndimage.generate_binary_structure(source.ndim,
                                                                             args.connectivity),
                dtype=args.dtype, chunks=args.chunks, max_memory=args.max_memory,
                overwrite=args.overwrite, resume=args.resume, scheduler=args.scheduler,
                progress=progress_wanted(args), storage_options=storage_options(args, args.dst))
    seconds = time.perf_counter() - start
    what = "object" if count == 1 else "objects"
    print(f"{count} {what} in {args.src} written to {args.dst} ({out.dtype}) in "
          f"{seconds:.2f} s")
    return 0


def register(commands: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``label`` to the command parser."""
    parser = commands.add_parser(
        "label", parents=parents,
        help="label connected components (as scipy.ndimage.label, in bounded memory)",
        description="Label the connected components of the nonzero values of SRC (or of the "
                    "values above --threshold) into a new array at DST, numbered by their "
                    "first voxel as scipy.ndimage.label numbers them, block by block.",
    )
    parser.add_argument("src", metavar="SRC", help="the image (folder, .zip or URL)")
    parser.add_argument("dst", metavar="DST", help="where to write the labels")
    parser.add_argument("--threshold", type=float, default=None, metavar="T",
                        help="foreground is SRC > T (default: SRC != 0)")
    parser.add_argument("--connectivity", type=int, default=1, metavar="N",
                        help="neighbours joined: 1 faces (default) up to NDIM (faces, edges "
                             "and corners)")
    parser.add_argument("--dtype", default=None,
                        help="the labels' integer dtype (default uint32, uint64 if needed)")
    parser.add_argument("--chunks", type=parse_shape, default=None,
                        help="chunk shape of DST (default: the source's)")
    add_max_memory_option(parser)
    parser.add_argument("--overwrite", action="store_true", help="replace an existing DST")
    add_resume_option(parser)
    add_compute_options(parser)
    parser.set_defaults(run=run_label)
