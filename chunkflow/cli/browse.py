"""``chunkflow info`` and ``chunkflow tree``: describe what a path holds."""

from __future__ import annotations

import argparse

import chunkflow
from chunkflow.cli.nodes import open_node_at
from chunkflow.cli.options import add_storage_options, storage_options

__all__ = ["register", "run_info", "run_tree"]


def run_info(args: argparse.Namespace) -> int:
    """Print the ``.info`` report of the array or group at ``args.path``."""
    node = open_node_at(args.path, storage_options(args, args.path))
    print(node.info)
    return 0


def run_tree(args: argparse.Namespace) -> int:
    """Print the hierarchy below the group at ``args.path`` (an array: one line)."""
    node = open_node_at(args.path, storage_options(args, args.path))
    if isinstance(node, chunkflow.Array):
        print(f"{node.name} {node.shape} {node.dtype} (an array)")
    else:
        print(node.tree(level=args.level))
    return 0


def register(commands: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``info`` and ``tree`` to the command parser."""
    info = commands.add_parser(
        "info", parents=parents, help="describe an array or group (shape, chunks, codecs, sizes)",
        description="Print the .info report of the array or group at PATH.",
    )
    info.add_argument("path", metavar="PATH", help="folder, .zip, or URL (s3://, gs://, ...)")
    add_storage_options(info)
    info.set_defaults(run=run_info)

    tree = commands.add_parser(
        "tree", parents=parents, help="list the groups and arrays below a group",
        description="Print the hierarchy of groups and arrays below PATH.",
    )
    tree.add_argument("path", metavar="PATH", help="folder, .zip, or URL (s3://, gs://, ...)")
    tree.add_argument("--level", type=int, default=None, help="how many levels to show")
    add_storage_options(tree)
    tree.set_defaults(run=run_tree)
