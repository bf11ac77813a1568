"""What a finished job leaves behind: the list of the chunks it stored.

A missing chunk is valid Zarr (it reads as the fill value), so a chunk deleted behind
a job's back (by a cleanup script, a lifecycle rule, a failed sync) cannot be told
from one never written. When a job finishes, :func:`record_written` lists the output
array once and keeps the keys of what is stored under :data:`WRITTEN_KEY` below the
array (zlib-compressed text, sorted, so that the same job gives the same bytes; Zarr
readers never look there). :meth:`chunkflow.Array.verify` reports a chunk that this
list names and that is gone as *lost*.

The list stays true only while chunkflow alone changes the array: every chunk
deletion through chunkflow's engine (a write of fill values, a shrinking resize,
``repair``) removes the list in the same store call, and a new job removes it when it
starts. What other tools delete afterwards is what ``verify`` is for.

Examples
--------
>>> import chunkflow
>>> z = chunkflow.array([1, 2, 3, 4], chunks=(2,))
>>> record_written(z.store, z.path)
>>> sorted(written_keys(z.store, z.path))
['c/0', 'c/1']
>>> drop_written(z.store, z.path)
>>> written_keys(z.store, z.path) is None
True
"""

from __future__ import annotations

import json
import zlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chunkflow.storage import Store

__all__ = ["WRITTEN_KEY", "drop_written", "record_written", "written_key", "written_keys"]

#: The key, below an array, listing the chunks the last finished job stored (every
#: chunk deletion through the engine removes it; ``verify`` reads it).
WRITTEN_KEY = ".chunkflow-written"
_FORMAT = "chunkflow-written"


def written_key(path: str) -> str:
    """The key of the list below the array at ``path``."""
    return f"{path}/{WRITTEN_KEY}" if path else WRITTEN_KEY


def record_written(store: Store, path: str) -> None:
    """Keep the keys stored below the array at ``path`` (one listing), as a finished
    job leaves them: every key but metadata documents and bookkeeping."""
    start = len(path) + 1 if path else 0
    keys = sorted(key[start:] for key in store.list_prefix(path)
                  if not key[start:].startswith(".") and key[start:] != "zarr.json")
    # No token: a resumed job and the same job run whole leave the same bytes.
    header = json.dumps({"format": _FORMAT, "version": 1}, sort_keys=True)
    # A small window and memory level: a few KiB of compressor state, not zlib's
    # default 256 KiB (a job's end stays within its tasks' budget); keys repeat at
    # short range, so they compress as well.
    packer = zlib.compressobj(6, zlib.DEFLATED, 12, 2)
    text = "\n".join([header, *keys]).encode()
    store[written_key(path)] = packer.compress(text) + packer.flush()


def written_keys(store: Store, path: str) -> set[str] | None:
    """The keys (relative to the array) the last finished job stored, or ``None`` when
    there is no list (no job finished since the last deletion) or it is unreadable."""
    try:
        text = zlib.decompress(store[written_key(path)]).decode()
    except KeyError:
        return None
    except (zlib.error, UnicodeDecodeError):
        return None  # not ours or damaged: no claim about what was written
    header, _, body = text.partition("\n")
    try:
        if json.loads(header).get("format") != _FORMAT:
            return None
    except (ValueError, AttributeError):
        return None
    return set(body.split("\n")) if body else set()


def drop_written(store: Store, path: str) -> None:
    """Remove the list (a job starts: it no longer describes the array)."""
    store.delete_many([written_key(path)])
