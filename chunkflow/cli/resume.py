"""``--resume`` for the writing commands, and ``chunkflow status PATH``.

``chunkflow filter SRC DST --resume`` and ``chunkflow copy SRC DST --resume`` record
each finished block in DST; the same command run again after a crash (or Ctrl-C)
continues where the first stopped. Without ``--resume`` a failed command removes the
DST it created; with it, DST stays, marked unfinished, for the next run.
``chunkflow status DST`` says whether a job is unfinished and lists the blocks that
remain.

Examples
--------
>>> import tempfile, chunkflow
>>> from chunkflow.cli import main
>>> with tempfile.TemporaryDirectory() as tmp:
...     _ = chunkflow.zeros((4, 4), chunks=(2, 2), store=f"{tmp}/a.zarr")
...     main(["status", f"{tmp}/a.zarr"])
no unfinished job: ...a.zarr is complete
0
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable
from typing import Any

import chunkflow
from chunkflow.api.unfinished import open_unfinished
from chunkflow.cli.cleanup import removed_on_failure
from chunkflow.cli.nodes import open_node_at
from chunkflow.cli.options import add_storage_options, storage_options
from chunkflow.jobs import (
    check_not_source,
    check_same_output,
    job_status,
    location_of,
    quiet_open,
    remaining_blocks,
)

__all__ = [
    "add_resume_option",
    "kept_for_resume",
    "register",
    "resumed_or_created",
    "run_status",
]

#: ``chunkflow status`` lists at most this many remaining blocks unless ``--all``.
SHOWN_BLOCKS = 20


def add_resume_option(parser: argparse.ArgumentParser) -> None:
    """``--resume`` for a command that writes DST."""
    parser.add_argument(
        "--resume", action="store_true",
        help="record finished blocks in DST and, if DST is the unfinished output of the "
             "same command, continue it (only missing blocks are computed); a failed "
             "run then keeps DST for the next --resume",
    )


def kept_for_resume(args: argparse.Namespace) -> contextlib.AbstractContextManager[Any]:
    """Without ``--resume``: remove a DST this run created if it fails; with it: keep it.

    First (before anything is created) a DST that is, holds or lies in SRC is refused
    (:class:`~chunkflow.errors.OutputIsSourceError`): creating it would delete what
    the command reads, ``--overwrite`` or not.
    """
    src = getattr(args, "src", None)
    read = location_of(src, storage_options(args, src)) if src is not None else None
    if read is not None:
        check_not_source(f"chunkflow {args.command}",
                         location_of(args.dst, storage_options(args, args.dst)),
                         [(f"SRC {src!r}", read)], creates=True)
    if args.resume:
        return contextlib.nullcontext()
    return removed_on_failure(args.dst, storage_options(args, args.dst))


def resumed_or_created(args: argparse.Namespace,
                       make: Callable[[str | None], chunkflow.Array]) -> chunkflow.Array:
    """DST: with ``--resume`` the unfinished output at ``args.dst``, else ``make(args.dst)``.

    An unfinished DST whose metadata differs from what ``make`` would create (another
    ``--dtype``, ``--chunks``...) is refused, naming the difference; nothing is written.
    """
    if args.resume:
        existing = open_unfinished(args.dst, storage_options=storage_options(args, args.dst))
        if existing is not None:
            check_same_output(existing, make(None), repr(args.dst),
                              "Rerun the original command with --resume, or pass --overwrite "
                              "without --resume to start over.")
            return existing
    return make(args.dst)


def run_status(args: argparse.Namespace) -> int:
    """Print whether an unfinished job writes ``args.path`` and the blocks that remain."""
    with quiet_open():  # the status is the answer; no warning on top of it
        node = open_node_at(args.path, storage_options(args, args.path))
    status = job_status(node) if isinstance(node, chunkflow.Array) else None
    if status is None:
        print(f"no unfinished job: {args.path} is complete")
        return 0
    print(f"{args.path}: {status.describe()} (job {status.name or status.token[:8]}, "
          f"block grid {status.grid})")
    print(f"remaining: {len(status.remaining)} blocks")
    for line in remaining_blocks(status, None if args.all else SHOWN_BLOCKS):
        print(f"  {line}")
    print("rerun the job with resume=True (--resume) to finish it")
    return 0


def register(commands: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``status`` to the command parser."""
    status = commands.add_parser(
        "status", parents=parents, help="is an output finished? list the blocks that remain",
        description="Say whether the array at PATH is the output of an unfinished job "
                    "(one started with resume=True / --resume) and list its remaining blocks.",
    )
    status.add_argument("path", metavar="PATH", help="folder, .zip, or URL (s3://, gs://, ...)")
    status.add_argument("--all", action="store_true",
                        help=f"list every remaining block (default: the first {SHOWN_BLOCKS})")
    add_storage_options(status)
    status.set_defaults(run=run_status)

