"""Open and create the arrays the commands work on, with errors that name the location.

Examples
--------
>>> import tempfile, chunkflow
>>> with tempfile.TemporaryDirectory() as tmp:
...     _ = chunkflow.zeros((4, 4), chunks=(2, 2), store=f"{tmp}/a.zarr")
...     open_array_at(f"{tmp}/a.zarr").shape
(4, 4)
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import chunkflow
from chunkflow.cli.errors import describe
from chunkflow.errors import (
    ChunkDecodeError,
    ChunkflowError,
    ChunkTooLargeError,
    ContainsArrayError,
    ContainsGroupError,
    NodeNotFoundError,
    OpenError,
    UsageError,
)

__all__ = ["OpenError", "create_at", "naming_source", "open_array_at", "open_node_at"]


def open_node_at(location: str, storage_options: dict[str, Any] | None = None,
                 **kwargs: Any) -> chunkflow.Array | chunkflow.Group:
    """The array or group at ``location``, opened read-only."""
    try:
        return chunkflow.open(location, mode="r", storage_options=storage_options, **kwargs)
    except NodeNotFoundError as err:
        better = _no_node_here(location)
        if better is None:
            raise
        raise better from err
    except ChunkflowError:
        raise  # its message already names the store and what was expected
    except Exception as err:  # backend errors (fsspec, botocore, OS) carry no location
        raise OpenError(f"cannot open {location!r}: {describe(err)}") from err


def _no_node_here(location: str) -> OpenError | None:
    """For a local path, an error in the user's terms: that nothing is there, or that
    what is there is no Zarr node (the store's own message names the store object)."""
    path = Path(location)
    if "://" in location:
        return None
    if not path.exists():
        return OpenError(f"{location!r} does not exist (no such file or folder)")
    if path.is_dir():
        what = "a folder without zarr.json, .zarray or .zgroup"
    elif path.suffix.lower() == ".zip":
        what = "a zip file without zarr.json, .zarray or .zgroup at its root"
    else:
        what = ("a file, not a Zarr store (a folder, a .zip file or a URL); "
                "`chunkflow convert` reads TIFF, HDF5 and raw files into one")
    return OpenError(f"{location!r} exists but holds no Zarr array or group: it is {what}")


def open_array_at(location: str, storage_options: dict[str, Any] | None = None,
                  **kwargs: Any) -> chunkflow.Array:
    """The array at ``location``; a group there is a usage error."""
    node = open_node_at(location, storage_options, **kwargs)
    if not isinstance(node, chunkflow.Array):
        raise UsageError(
            f"{location!r} holds a group, not an array; `chunkflow tree {location}` lists "
            "its arrays"
        )
    return node


def create_at(location: str, shape: tuple[int, ...], **kwargs: Any) -> chunkflow.Array:
    """A new array at ``location`` (``overwrite=`` replaces what is there); a node there
    without it is a usage error (exit code 2), as for every output."""
    try:
        return chunkflow.create(shape, store=location, **kwargs)
    except (ContainsArrayError, ContainsGroupError) as err:
        kind = "an array" if isinstance(err, ContainsArrayError) else "a group"
        if _is_unfinished(location, kwargs.get("storage_options")):
            raise UsageError(
                f"{location!r} is the unfinished output of an interrupted job (`chunkflow "
                f"status {location}` lists what remains): add --resume to finish it, or "
                "--overwrite to start over") from err
        raise UsageError(f"{location!r} already holds {kind}; pass --overwrite to replace it") \
            from err
    except ChunkflowError:
        raise
    except Exception as err:  # backend errors carry no location
        raise OpenError(f"cannot create {location!r}: {describe(err)}") from err


def _is_unfinished(location: str, storage_options: dict[str, Any] | None) -> bool:
    from chunkflow.api.unfinished import open_unfinished

    try:
        return open_unfinished(location, storage_options=storage_options) is not None
    except Exception:  # noqa: BLE001 - only a better message hangs on it
        return False


@contextlib.contextmanager
def naming_source(location: str) -> Iterator[None]:
    """Prefix the location the user typed to an unreadable chunk's error.

    The engine's message names the array's path inside its store and the chunk key;
    on the command line the store is what the user typed.

    Examples
    --------
    >>> with naming_source("in.zarr"):
    ...     raise ChunkDecodeError("array '/': chunk '0.1' could not be decoded: ...")
    Traceback (most recent call last):
    chunkflow.errors.ChunkDecodeError: 'in.zarr', array '/': chunk '0.1' could not be decoded: ...
    """
    try:
        yield
    except (ChunkDecodeError, ChunkTooLargeError) as err:
        raise type(err)(f"{location!r}, {err}") from err
