"""Virtual references (kerchunk, VirtualiZarr): what :class:`FsspecStore` does
differently over fsspec's ``ReferenceFileSystem``.

- **Batches merge ranges.** ``ReferenceFileSystem.cat`` of many keys groups the byte
  ranges that lie in one file (less than its ``max_gap`` apart, blocks of at most
  ``max_block`` bytes) into few requests; its ``_cat_file`` sends one request per key.
  The store reads references in batches (see ``FsspecStore.merges_ranges``).
- **Keys the references do not hold are missing.** A lazy Parquet mapper
  (``LazyReferenceMapper``) parses any key with a ``/`` as a chunk key and raises
  ``ValueError`` for ``a/zarr.json``, which chunkflow asks for when it looks for a node
  of either format: :func:`held_keys` answers such keys as absent.
- **Latency is the targets'.** References to local files are read as local files
  are (:func:`target_protocols`); references to HTTP or S3 files are latency-bound.
- **An identity per reference set.** ``reference://`` names no data; the references
  do (:func:`references_token`), so two sets never share cached chunks.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from typing import Any

__all__ = ["held_keys", "references_token", "target_protocols"]


def held_keys(references: Any, keys: Iterable[str]) -> list[str]:
    """The ``keys`` that ``references`` (a dict or fsspec's ``LazyReferenceMapper``)
    hold, in order.

    Examples
    --------
    >>> held_keys({".zgroup": "{}", "a/0": ["f.nc", 0, 8]}, ["a/0", "a/1", "zarr.json"])
    ['a/0']
    """
    held = []
    for key in keys:
        try:
            if key in references:
                held.append(key)
        except (ValueError, TypeError):  # not a key of the lazy mapper's arrays
            continue
    return held


def references_token(fo: Any) -> str:
    """What names a reference set: its path or URL, or a digest of its content.

    Examples
    --------
    >>> references_token("s3://bucket/refs.json")
    's3://bucket/refs.json'
    >>> references_token({"version": 1, "refs": {}})[:7]
    'sha256:'
    """
    if isinstance(fo, (str, os.PathLike)):
        path = os.fspath(fo)
        return path if "://" in path or "::" in path else os.path.abspath(path)
    text = json.dumps(fo, sort_keys=True, default=repr).encode()
    return "sha256:" + hashlib.sha256(text).hexdigest()


def target_protocols(fs: Any) -> set[str]:
    """The protocols of the file systems a ``ReferenceFileSystem`` reads from (its
    ``fss``; synchronous ones come wrapped in fsspec's ``AsyncFileSystemWrapper``).

    Examples
    --------
    >>> import fsspec
    >>> refs = {"version": 1, "refs": {"a/0": ["/tmp/data.nc", 0, 4]}}
    >>> sorted(target_protocols(fsspec.filesystem("reference", fo=refs)))
    ['file', 'local']
    """
    protocols: set[str] = set()
    for target in fs.fss.values():
        target = getattr(target, "sync_fs", target)
        protocol = target.protocol
        protocols.update((protocol,) if isinstance(protocol, str) else protocol)
    return protocols
