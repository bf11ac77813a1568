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
from typing import Any

import chunkflow
from chunkflow.cli.errors import describe
from chunkflow.errors import (
    ChunkDecodeError,
    ChunkflowError,
    ChunkTooLargeError,
    ContainsArrayError,
    ContainsGroupError,
    OpenError,
    UsageError,
)

__all__ = ["OpenError", "create_at", "naming_source", "open_array_at", "open_node_at"]


def open_node_at(location: str, storage_options: dict[str, Any] | None = None,
                 **kwargs: Any) -> chunkflow.Array | chunkflow.Group:
    """The array or group at ``location``, opened read-only."""
    try:
        return chunkflow.open(location, mode="r", storage_options=storage_options, **kwargs)
    except ChunkflowError:
        raise  # its message already names the store and what was expected
    except Exception as err:  # backend errors (fsspec, botocore, OS) carry no location
        raise OpenError(f"cannot open {location!r}: {describe(err)}") from err


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
    """A new array at ``location`` (``overwrite=`` replaces what is there)."""
    try:
        return chunkflow.create(shape, store=location, **kwargs)
    except (ContainsArrayError, ContainsGroupError) as err:
        kind = "an array" if isinstance(err, ContainsArrayError) else "a group"
        raise OpenError(f"{location!r} already holds {kind}; pass --overwrite to replace it") \
            from err
    except ChunkflowError:
        raise
    except Exception as err:  # backend errors carry no location
        raise OpenError(f"cannot create {location!r}: {describe(err)}") from err


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
