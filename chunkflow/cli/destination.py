"""The output location of a command, checked before any work.

Every command that writes DST (an array or an OME-Zarr image) replaces Zarr nodes only.
The library refuses a DST that holds anything else, but only when it comes to create
the output: after ``threshold`` computed its value, after ``remove-small-objects``
labelled the whole image. Here the same check (:func:`~chunkflow.core.replacing.
check_location`) runs before the command starts, and its refusal is a usage error
(exit 2) in the command's words, with or without ``--overwrite`` (which could not
help).
"""

from __future__ import annotations

import argparse

from chunkflow.cli.options import storage_options
from chunkflow.core.replacing import check_location
from chunkflow.errors import ForeignContentError, UsageError

__all__ = ["check_output_location"]


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
    try:
        check_location(str(dst), what=name, array=False,
                       storage_options=storage_options(args, str(dst)))
    except ForeignContentError as err:
        raise UsageError(str(err)) from None
    except Exception:  # noqa: BLE001 - not this check's to report (see above)
        return
