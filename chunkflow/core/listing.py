"""Empty listings are checked, never taken as the answer.

A store whose listing is broken (an fsspec file system that names its entries in
another form than the store expects, a backend that lists nothing under a prefix it
holds) makes a group look empty. Returning no members then is a silent wrong answer:
an xarray dataset without variables, a copy that copies nothing. So when listing a
group's folder finds no subfolder at all, :func:`refuse_unlisted_members` looks for
members the listing missed, where they can be named without the listing:

- the group's consolidated metadata (v3: inline in its ``zarr.json``, already read;
  v2: its ``.zmetadata``, read now);
- the group's OME-NGFF ``multiscales`` datasets;
- a recursive listing of the group (:meth:`~chunkflow.storage.Store.list_prefix`),
  which some backends answer where their folder listing fails.

Each name found is then read directly (one batched read of the candidates'
documents). Members that exist raise :class:`~chunkflow.errors.IncompleteListingError`;
names whose documents are gone (consolidated metadata left stale by a deletion) are
not members, and the group is empty. The check costs nothing for groups with members,
and a listing and at most one read for groups without.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from chunkflow.core.documents import join_path
from chunkflow.core.node_records import fetch_nodes, parse_node
from chunkflow.errors import ChunkflowError, IncompleteListingError
from chunkflow.metadata.ngff import read_multiscales
from chunkflow.storage import Store

__all__ = ["named_by_metadata", "refuse_unlisted_members"]

ZMETADATA = ".zmetadata"


def named_by_metadata(consolidated: Mapping[str, Any] | None,
                      attributes: Mapping[str, Any]) -> dict[str, str]:
    """Direct members named by a group's own documents, with where each was named.

    Examples
    --------
    >>> named_by_metadata({"metadata": {"a": {}, "a/b": {}}},
    ...                   {"multiscales": [{"datasets": [{"path": "0"}]}]})
    {'a': 'consolidated_metadata', '0': 'the multiscales datasets'}
    """
    named: dict[str, str] = {}
    if isinstance(consolidated, Mapping) and isinstance(consolidated.get("metadata"), Mapping):
        for relative in consolidated["metadata"]:
            named.setdefault(str(relative).strip("/").split("/")[0], "consolidated_metadata")
    multiscales = read_multiscales(attributes)
    if multiscales is not None:
        for path in multiscales.paths:
            named.setdefault(path.strip("/").split("/")[0], "the multiscales datasets")
    named.pop("", None)
    return named


def refuse_unlisted_members(store: Store, path: str, zarr_format: int | None,
                            named: Mapping[str, str]) -> None:
    """Raise when the group at ``path``, whose folder listed no subfolder, has members
    all the same (see the module notes); ``named`` are the members its documents name
    (:func:`named_by_metadata`).

    Examples
    --------
    >>> from chunkflow.storage import MemoryStore
    >>> store = MemoryStore()
    >>> store.set_many({"g/.zgroup": b'{"zarr_format": 2}'})
    >>> refuse_unlisted_members(store, "g", 2, {"t": "consolidated_metadata"})  # t is gone
    """
    candidates = dict(named)
    if zarr_format != 3:
        candidates.update({k: v for k, v in _named_by_zmetadata(store, path).items()
                           if k not in candidates})
    for name in _named_by_keys(store.list_prefix(path), path):
        candidates.setdefault(name, "a recursive listing (list_prefix)")
    if not candidates:
        return
    paths = {name: join_path(path, name) for name in candidates}
    found = fetch_nodes(store, paths.values())
    present = [name for name, member in paths.items() if _is_node(found, member, zarr_format)]
    if present:
        where = "; ".join(f"{name!r} (named by {candidates[name]})" for name in sorted(present))
        raise IncompleteListingError(
            f"group {path or '/'!r} in {store!r}: listing its folder (list_dir) found no "
            f"members, but reading them directly finds {where}. The store's "
            f"listing is incomplete, so the group's members cannot be trusted to it; open "
            f"the group with consolidated metadata, or fix the store's listing"
        )


def _named_by_zmetadata(store: Store, path: str) -> dict[str, str]:
    key = join_path(path, ZMETADATA)
    try:
        doc = json.loads(store[key])
    except KeyError:
        return {}
    except ValueError:  # unreadable: it names nothing, the other sources still may
        return {}
    metadata = doc.get("metadata") if isinstance(doc, dict) else None
    if not isinstance(metadata, dict):
        return {}
    return {str(k).split("/")[0]: ZMETADATA for k in metadata if "/" in str(k)}


def _named_by_keys(keys: Iterable[str], path: str) -> list[str]:
    """First path segments of the keys below subfolders of ``path``."""
    start = path + "/" if path else ""
    names: dict[str, None] = {}
    for key in keys:
        rest = key[len(start):] if key.startswith(start) else None
        if rest and "/" in rest:
            names.setdefault(rest.split("/")[0])
    return list(names)


def _is_node(found: Mapping[str, bytes], member: str, zarr_format: int | None) -> bool:
    try:
        return parse_node(found, member, zarr_format) is not None
    except ChunkflowError:
        return True  # documents are there, if broken: the listing still missed them
