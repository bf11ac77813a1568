"""``chunkflow verify PATH``: read every chunk of an array (or of every array below a
group), report what is missing, corrupt, unexpected or lost; exit 1 if anything is wrong.

Missing chunks are valid Zarr (they read as the fill value) and do not fail the check;
corrupt chunks (that do not decode), unexpected keys (no chunk of the grid) and lost
chunks (stored by the last finished job, gone now) do. See :func:`chunkflow.verify`.

Examples
--------
>>> import tempfile, numpy as np, chunkflow
>>> from chunkflow.cli import main
>>> with tempfile.TemporaryDirectory() as tmp:
...     _ = chunkflow.array(np.arange(6), chunks=(2,), store=f"{tmp}/a.zarr")
...     main(["verify", f"{tmp}/a.zarr"])
1 array, 3 chunks: 3 stored, 3 decoded; 0 missing, 0 corrupt, 0 unexpected, 0 lost
ok: nothing is wrong
0
"""

from __future__ import annotations

import argparse

import chunkflow
from chunkflow.cli.nodes import open_node_at
from chunkflow.cli.options import (
    add_max_memory_option,
    add_storage_options,
    parse_scheduler,
    progress_wanted,
    storage_options,
)
from chunkflow.jobs import job_status, quiet_open

__all__ = ["register", "run_verify"]


def run_verify(args: argparse.Namespace) -> int:
    """Verify ``args.path``, print the report; 1 when something is wrong, else 0."""
    with quiet_open():  # an unfinished job is said once, below, not as a warning
        node = open_node_at(args.path, storage_options(args, args.path))
    report = chunkflow.verify(node, scheduler=args.scheduler, max_memory=args.max_memory,
                              progress=progress_wanted(args) and args.scheduler is not None)
    print(report.describe(None if args.all else 10))
    if isinstance(node, chunkflow.Array) and job_status(node, count=False) is not None:
        print(f"note: {args.path} is the output of an unfinished job (`chunkflow status "
              f"{args.path}` lists the blocks that remain); its missing chunks may be "
              "blocks not written yet")
    if report.ok:
        print("ok: nothing is wrong")
        return 0
    print(f"FAILED: {report.corrupt} corrupt, {report.unexpected} unexpected, "
          f"{report.lost} lost")
    return 1


def register(commands: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``verify`` to the command parser."""
    parser = commands.add_parser(
        "verify", parents=parents,
        help="read and decode every chunk; report missing, corrupt, unexpected, lost",
        description="Read every chunk key of the array at PATH (or of every array below "
                    "the group at PATH) and decode every stored chunk. Reports missing "
                    "chunks (valid Zarr: read as the fill value), corrupt chunks (do not "
                    "decode), unexpected keys (no chunk of the grid) and lost chunks "
                    "(stored by the last finished job, gone now). Exit status 1 when a "
                    "chunk is corrupt or lost or a key unexpected, 0 otherwise.",
    )
    parser.add_argument("path", metavar="PATH", help="folder, .zip, or URL (s3://, gs://, ...)")
    parser.add_argument(
        "--scheduler", type=parse_scheduler, default=None,
        metavar="threads|processes|ADDRESS",
        help="run one dask task per region of chunks there (default: in this process, "
             "with chunkflow's I/O threads)")
    add_max_memory_option(
        parser, help="memory budget of one task with --scheduler (e.g. '512 MiB')")
    parser.add_argument("--all", action="store_true",
                        help="list every key found wrong or missing (default: the first 10 "
                             "of each kind; at most 1000 are kept)")
    add_storage_options(parser)
    parser.set_defaults(run=run_verify)
