"""The argument parser: the top level and one sub-parser per command."""

from __future__ import annotations

import argparse

import chunkflow
from chunkflow.cli import (
    analysis,
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
from chunkflow.cli.errors import EXIT_CODES
from chunkflow.cli.options import add_common_options

__all__ = ["DESCRIPTION", "EXIT_CODES_TEXT", "build_parser", "command_parsers"]

DESCRIPTION = (
    "chunkflow: chunked, compressed N-dimensional arrays in Zarr v2/v3 format, read, "
    "filtered and reduced chunk by chunk with dask, on a laptop or a cluster."
)
#: Every command's ``--help`` ends with the exit codes (one table: ``EXIT_CODES``).
EXIT_CODES_TEXT = "Exit codes: " + "; ".join(f"{code} {meaning}"
                                            for code, meaning in EXIT_CODES.items()) + "."
EPILOG = (
    "Paths may be folders, .zip files or fsspec URLs (s3://, gs://, https://...). "
    f"{EXIT_CODES_TEXT} "
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
    for module in (browse, copy, convert, rechunk, filters, analysis, pyramid, label, measure,
                   stats, resume, verify, demo):
        module.register(commands, [common])
    for command in command_parsers(parser).values():
        command.epilog = " ".join(filter(None, (command.epilog, EXIT_CODES_TEXT)))
    return parser


def command_parsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Each command's sub-parser by name, in the order ``--help`` lists them."""
    for action in parser._actions:  # argparse keeps its sub-parsers only here
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}
