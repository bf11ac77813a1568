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

A store that cannot list at all (an HTTP server answering 404 for folders, a backend
whose listing raises) lists not even the group's own document. Such a listing proves
nothing: :func:`refuse_unlistable` raises
:class:`~chunkflow.errors.UnlistableGroupError` (saying how to consolidate the group's
metadata) when the group's document is there all the same, instead of answering with
an empty group. Members whose paths are known still open: reading a node needs no
listing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from chunkflow.core.documents import join_path
from chunkflow.core.node_records import fetch_nodes, parse_node
from chunkflow.errors import ChunkflowError, IncompleteListingError, UnlistableGroupError
from chunkflow.metadata.ngff import read_multiscales
from chunkflow.storage import Store

__all__ = ["check_listable", "list_group_folder", "named_by_metadata", "refuse_unlistable",
           "refuse_unlisted_members", "unlistable_error"]

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
                            named: Mapping[str, str]) -> bool:
    """Raise when the group at ``path``, whose folder listed no subfolder, has members
    all the same (see the module notes); ``named`` are the members its documents name
    (:func:`named_by_metadata`). Returns whether the recursive listing found any key
    below the group (its own document counts).

    Examples
    --------
    >>> from chunkflow.storage import MemoryStore
    >>> store = MemoryStore()
    >>> store.set_many({"g/.zgroup": b'{"zarr_format": 2}'})
    >>> refuse_unlisted_members(store, "g", 2, {"t": "consolidated_metadata"})  # t is gone
    True
    """
    candidates = dict(named)
    if zarr_format != 3:
        candidates.update({k: v for k, v in _named_by_zmetadata(store, path).items()
                           if k not in candidates})
    listed = list(store.list_prefix(path))
    for name in _named_by_keys(listed, path):
        candidates.setdefault(name, "a recursive listing (list_prefix)")
    if not candidates:
        return bool(listed)
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
    return bool(listed)


def list_group_folder(store: Store, path: str) -> tuple[list[str], list[str]]:
    """``store.list_dir(path)`` of a group's folder; a listing that raises (unsupported,
    refused, failed) raises :class:`~chunkflow.errors.UnlistableGroupError`.

    Examples
    --------
    >>> from chunkflow.storage import MemoryStore
    >>> store = MemoryStore()
    >>> store.set_many({"g/zarr.json": b"{}", "g/a/zarr.json": b"{}"})
    >>> list_group_folder(store, "g")
    (['zarr.json'], ['a'])
    """
    try:
        return store.list_dir(path)
    except (NotImplementedError, OSError) as err:
        raise unlistable_error(store, path, f"could not list it ({err})") from err


def check_listable(store: Store, path: str, zarr_format: int | None) -> None:
    """Raise :class:`~chunkflow.errors.UnlistableGroupError` unless the group at ``path``
    can be listed (one listing of its folder; one read more when it lists nothing).

    Examples
    --------
    >>> import chunkflow
    >>> root = chunkflow.group()
    >>> check_listable(root.store, "", 3)
    """
    keys, subs = list_group_folder(store, path)
    if keys or subs:
        return
    try:
        listed = next(iter(store.list_prefix(path)), None) is not None
    except (NotImplementedError, OSError):
        listed = False
    if not listed:
        refuse_unlistable(store, path, zarr_format)


def refuse_unlistable(store: Store, path: str, zarr_format: int | None) -> None:
    """Raise :class:`~chunkflow.errors.UnlistableGroupError` when the group at ``path``,
    whose folder listed nothing at all (not even its own document), is there all the
    same (one read); a group deleted since it was opened is empty.

    Examples
    --------
    >>> from chunkflow.storage import MemoryStore
    >>> refuse_unlistable(MemoryStore(), "gone", 3)  # no group there: nothing to list
    """
    found = fetch_nodes(store, [path])
    try:
        record = parse_node(found, path, zarr_format)
    except ChunkflowError:
        record = None  # a broken document: not this check's to report
    if record is not None:
        raise unlistable_error(store, path, "listed nothing under it, not even its own "
                               "metadata document (a server that answers 404 for folders "
                               "cannot list)")


def unlistable_error(store: Store, path: str, reason: str) -> UnlistableGroupError:
    """The error for a group of ``store`` whose members cannot be listed (``reason``).

    Examples
    --------
    >>> from chunkflow.storage import MemoryStore
    >>> "cannot be listed" in str(unlistable_error(MemoryStore(), "g", "refused to list"))
    True
    """
    return UnlistableGroupError(
        f"group {path or '/'!r} in {store!r}: its members cannot be listed: the store "
        f"{reason}, and the group has no consolidated metadata to name them. A member "
        f"whose path is known still opens (group['name'], open_array(..., path='name')). "
        f"To list the group, consolidate its metadata once where the store can list (the "
        f"folder or bucket this server serves): chunkflow.consolidate_metadata(location) "
        f"(or zarr.consolidate_metadata), then open it with consolidated metadata (the "
        f"default; consolidated=False cannot work on this store)"
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
