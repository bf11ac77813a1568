"""The ``chunkflow`` command line (also ``python -m chunkflow``).

Commands: ``info`` and ``tree`` describe stores; ``convert`` turns TIFF, HDF5, raw and
.npy files into sharded OME-Zarr images with their pyramids; ``copy`` converts Zarr
versions, rechunks, shards and recompresses; ``rechunk`` rechunks within a memory budget; ``filter`` runs a
scipy.ndimage filter with halos; ``pyramid`` writes an OME-Zarr multiscale image;
``label`` labels connected components and ``measure`` tables the objects;
``reduce`` prints statistics; ``demo`` runs the whole job on a synthetic image. Each
lives in its own module; :mod:`chunkflow.cli.errors` turns failures into one line and
an exit code, and :mod:`chunkflow.cli.cleanup` removes what a failed command had
created.

Examples
--------
>>> main(["--version"])
chunkflow ...
0
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from chunkflow.cli.destination import check_output_location
from chunkflow.cli.errors import run_guarded
from chunkflow.cli.parser import build_parser

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``chunkflow`` command with ``argv`` (default: ``sys.argv[1:]``).

    Returns the exit code: 0 done, 1 a runtime error, 2 bad arguments.
    """
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv:  # a first try: show every command rather than one terse line
        parser.print_help(sys.stderr)
        return 2
    try:
        args = parser.parse_args(argv)
    except SystemExit as done:  # --help, --version, or a bad argument (code 2)
        sys.stdout.flush()
        return done.code if isinstance(done.code, int) else 2
    if getattr(args, "storage_options", None) and not _any_url(args):
        print(f"chunkflow {args.command}: error: --storage-option applies to URLs "
              "(s3://, gs://, ...); no location given here is one", file=sys.stderr)
        return 2
    args.argv = argv  # the command as typed, for the advice after a failure
    return run_guarded(args.command, _checked_run, args)


def _checked_run(args: argparse.Namespace) -> int | None:
    """The command, once its output location is known to hold Zarr nodes only."""
    check_output_location(args)
    return args.run(args)


def _any_url(args: argparse.Namespace) -> bool:
    locations = (getattr(args, name, None)
                 for name in ("path", "src", "dst", "labels", "intensity"))
    return any("://" in str(location) for location in locations if location is not None)
