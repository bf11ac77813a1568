"""Copying raw keys between stores: ``copy_store``.

Bytes are copied unchanged, in batches of keys read with one ``get_many`` and written
with one ``set_many``, so memory stays bounded by a byte budget whatever the size of
the data. Counts are returned as zarr-python 2 does: ``(n_copied, n_skipped,
n_bytes_copied)``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from typing import Any

from chunkflow.api.copy_log import CopyLog, LogTarget
from chunkflow.api.copying import IfExists, check_copy_arguments, url_options
from chunkflow.core.documents import join_path, node_kind, normalize_path
from chunkflow.errors import ContainsArrayError, ContainsGroupError
from chunkflow.storage import Store, StoreLike, make_store

__all__ = ["COPY_STORE_MAX_BYTES", "COPY_STORE_MAX_KEYS", "copy_store"]

#: copy_store reads at most about this many bytes before writing them out.
COPY_STORE_MAX_BYTES = 64 * 2**20
#: ... and at most this many keys per batch (one get_many / set_many round trip).
COPY_STORE_MAX_KEYS = 256


def copy_store(
    source: StoreLike,
    dest: StoreLike,
    source_path: str = "",
    dest_path: str = "",
    excludes: str | Iterable[str] | None = None,
    includes: str | Iterable[str] | None = None,
    if_exists: IfExists = "raise",
    *,
    storage_options: dict[str, Any] | None = None,
    log: LogTarget = None,
) -> tuple[int, int, int]:
    """Copy the raw keys below ``source_path`` of one store to ``dest_path`` of another.

    Bytes are copied unchanged (no decode, no format change), in batches of keys read
    with one ``get_many`` and written with one ``set_many``; a batch holds at most
    :data:`COPY_STORE_MAX_KEYS` keys and, after the first, about
    :data:`COPY_STORE_MAX_BYTES` bytes.

    Parameters
    ----------
    source, dest : Store, MutableMapping, path or URL
        Anything :func:`chunkflow.storage.make_store` accepts.
    source_path, dest_path : str
        Folder-like prefixes (``""`` is the whole store).
    excludes, includes : str or list of str, optional
        Regular expressions searched in each source key (as zarr-python does); a key
        matching an exclude is left out (not counted) unless it also matches an include.
    if_exists : {"raise", "replace", "skip"}
        For keys already in ``dest``. ``"raise"`` checks every key before writing any.
    storage_options : dict, optional
        fsspec options for whichever of ``source`` and ``dest`` is an fsspec URL
        (``s3://...``); local paths, stores and mappings take none.
    log : callable, file path or file-like, optional
        Where to write a line per key copied or skipped and a summary, as zarr-python 2
        does.

    Returns
    -------
    n_copied, n_skipped, n_bytes_copied : int
        Keys copied and skipped, and bytes copied.

    Examples
    --------
    >>> src = {"a/.zgroup": b'{"zarr_format": 2}', "a/x/0": b"0123", "b/y": b"..."}
    >>> dst = {}
    >>> copy_store(src, dst, source_path="a", dest_path="copy", excludes=["^a/x/"])
    (1, 0, 18)
    >>> sorted(dst)
    ['copy/.zgroup']
    """
    check_copy_arguments(if_exists)
    src = make_store(source, mode="r", storage_options=url_options(source, storage_options))
    dst = make_store(dest, mode="a", storage_options=url_options(dest, storage_options))
    src_prefix, dst_prefix = normalize_path(source_path), normalize_path(dest_path)
    exclude, include = _patterns(excludes), _patterns(includes)
    cut = len(src_prefix) + 1 if src_prefix else 0
    present = set(dst.list_prefix(dst_prefix)) if if_exists != "replace" else set()
    todo: list[tuple[str, str]] = []
    skipped_keys: list[str] = []
    for key in sorted(src.list_prefix(src_prefix)):
        relative = key[cut:]
        target = join_path(dst_prefix, relative)
        if any(p.search(key) for p in exclude) and not any(p.search(key) for p in include):
            continue
        if if_exists == "skip" and target in present:
            skipped_keys.append(key)
        elif if_exists == "raise" and target in present:
            _raise_key_exists(dst, target)
        else:
            todo.append((key, target))
    copied, skipped, n_bytes = 0, len(skipped_keys), 0
    with CopyLog(log) as logger:
        for key in skipped_keys:
            logger(f"skip {key}")
        for batch, sources in _batches(src, todo):
            dst.set_many(batch)
            copied += len(batch)
            n_bytes += sum(len(value) for value in batch.values())
            for key in sources:
                logger(f"copy {key}")
        logger.summary(copied, skipped, n_bytes)
    # Stores opened here from a path are closed here (a zip file is only valid then).
    for given, store in ((source, src), (dest, dst)):
        if isinstance(given, (str, os.PathLike)):
            store.close()
    return copied, skipped, n_bytes


def _batches(src: Store, todo: list[tuple[str, str]]
             ) -> Iterator[tuple[dict[str, bytes], list[str]]]:
    """Batches of ``{target: value}`` with the source keys they hold, in order."""
    # Key sizes are unknown before reading, so the batch size adapts: it starts small
    # and grows or shrinks so that the next batch holds about COPY_STORE_MAX_BYTES.
    size, start = 8, 0
    while start < len(todo):
        part = todo[start:start + size]
        found = src.get_many([key for key, _ in part])
        yield ({target: found[key] for key, target in part if key in found},
               [key for key, _ in part if key in found])
        read = sum(len(v) for v in found.values())
        start += len(part)
        per_key = max(1, read // max(1, len(found)))
        size = max(1, min(COPY_STORE_MAX_KEYS, COPY_STORE_MAX_BYTES // per_key))


def _raise_key_exists(store: Store, key: str) -> None:
    # Name the node the key belongs to: the nearest ancestor holding metadata.
    parts = key.split("/")[:-1]
    kind = None
    while kind is None and parts:
        kind = node_kind(store, "/".join(parts))
        parts = parts if kind else parts[:-1]
    error = ContainsArrayError if kind == "array" else ContainsGroupError
    raise error(
        f"key {key!r} already exists in {store!r} (in {kind or 'group'} "
        f"{'/'.join(parts) or '/'!r}); pass if_exists='replace' or 'skip'"
    )


def _patterns(patterns: str | Iterable[str] | None) -> list[re.Pattern[str]]:
    if patterns is None:
        return []
    if isinstance(patterns, str):
        patterns = [patterns]
    return [re.compile(p) for p in patterns]
