"""The output location of a command, checked before any work.

Every command that writes DST (an array or an OME-Zarr image) creates it anew, and
replaces Zarr nodes only. The library refuses a DST that holds anything else, or that
is (or overlaps) what the command reads, but only when it comes to create the output:
after ``threshold`` computed its value, after ``remove-small-objects`` labelled the
whole image. Here the same checks (:func:`~chunkflow.core.replacing.check_location`,
:func:`~chunkflow.jobs.overlaps`) run before the command starts, and a refusal is a
usage error (exit 2) in the command's words, with or without ``--overwrite`` (which
could not help).
"""

from __future__ import annotations

import argparse
import os

from chunkflow.cli.options import storage_options
from chunkflow.core.replacing import check_location
from chunkflow.errors import ForeignContentError, UsageError
from chunkflow.jobs.overlap import location_of, overlaps

__all__ = ["check_output_location", "check_table_location"]


def check_output_location(args: argparse.Namespace) -> None:
    """Refuse a DST that holds anything but Zarr nodes (a user's files, or a file).

    Only what the check finds is refused: a DST that cannot be asked yet (no
    credentials, a bucket not made) is left to the command, which says what is wrong.

    Examples
    --------
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> _ = open(os.path.join(folder, "thesis.txt"), "w").write("mine")
    >>> check_output_location(argparse.Namespace(dst=folder))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    chunkflow.errors.UsageError: DST: folder '...' holds 1 key that is not part of a Zarr ...
    """
    dst = getattr(args, "dst", None)
    if dst is None:
        return
    name = getattr(args, "dst_metavar", "DST")
    _refuse_a_source(args, str(dst), name)
    try:
        check_location(str(dst), what=name, array=False,
                       storage_options=storage_options(args, str(dst)))
    except ForeignContentError as err:
        raise UsageError(str(err)) from None
    except Exception:  # noqa: BLE001 - not this check's to report (see above)
        return


def check_table_location(args: argparse.Namespace, output: str) -> None:
    """Refuse a table ``output`` in what the command reads, or named as Zarr metadata.

    A table written there would replace a chunk or the metadata of an array being read
    (``--output labels.zarr/zarr.json --overwrite`` made the labels unreadable).

    Examples
    --------
    >>> check_table_location(argparse.Namespace(labels="cells.zarr"), "cells.zarr/t.csv")
    Traceback (most recent call last):
    chunkflow.errors.UsageError: --output 'cells.zarr/t.csv' lies in LABELS 'cells.zarr': \
writing --output there would change what the command reads. Nothing was read or \
written; write to another location
    """
    if os.path.basename(output) == "zarr.json":
        raise UsageError(
            f"--output {output!r}: zarr.json is the name of Zarr metadata, never a table's; "
            "nothing was read or written. Name the table otherwise, e.g. table.json")
    _refuse_a_source(args, output, "--output")


#: The arguments a command reads, by the names its usage line gives them.
_SOURCES = (("src", "SRC"), ("labels", "LABELS"), ("intensity", "--intensity"))


def _refuse_a_source(args: argparse.Namespace, dst: str, name: str) -> None:
    """Refuse a DST that is, holds or lies in what the command reads: creating it would
    delete the source before it is read."""
    out = _location(args, dst)
    for attribute, label in _SOURCES:
        source = getattr(args, attribute, None)
        where = None if source is None or out is None else _location(args, str(source))
        if where is not None and out is not None and overlaps(out, where):
            label = "IN" if name == "OUT" and label == "SRC" else label
            if name == "--output":  # a table: a file, never a Zarr node
                effect = f"writing {name} there would change what the command reads"
                relation = "lies in"
            else:
                effect = (f"creating {name} there would delete what the command reads "
                          "before it is read")
                relation = "is" if out == where else "overlaps"
            raise UsageError(
                f"{name} {dst!r} {relation} {label} {str(source)!r}: {effect}. Nothing was "
                "read or written; write to another location")


def _location(args: argparse.Namespace, where: str) -> str | None:
    try:
        return location_of(where, storage_options(args, where))
    except Exception:  # noqa: BLE001 - cannot be asked yet: the command will say why
        return None
