"""The argument parser: the top level and one sub-parser per command."""

from __future__ import annotations

import argparse

import chunkflow
from chunkflow.cli import (
    browse,
    convert,
    copy,
    demo,
    filters,
    label,
    measure,
    pyramid,
    rechunk,
    resume,
    stats,
    verify,
)
from chunkflow.cli.options import add_common_options

__all__ = ["DESCRIPTION", "build_parser"]

DESCRIPTION = (
    "chunkflow: chunked, compressed N-dimensional arrays in Zarr v2/v3 format, read, "
    "filtered and reduced chunk by chunk with dask, on a laptop or a cluster."
)
EPILOG = (
    "Paths may be folders, .zip files or fsspec URLs (s3://, gs://, https://...). "
    "Exit codes: 0 done, 1 failed, 2 bad arguments. "
    "Start with `chunkflow demo`; `chunkflow COMMAND --help` tells more."
)


def build_parser() -> argparse.ArgumentParser:
    """The ``chunkflow`` parser with every command registered."""
    parser = argparse.ArgumentParser(prog="chunkflow", description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("--version", action="version",
                        version=f"chunkflow {chunkflow.__version__}",
                        help="print chunkflow's version and exit")
    add_common_options(parser, top=True)
    common = argparse.ArgumentParser(add_help=False)
    add_common_options(common)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                     title="commands")
    for module in (browse, copy, convert, rechunk, filters, pyramid, label, measure, stats, resume,
                   verify, demo):
        module.register(commands, [common])
    return parser
