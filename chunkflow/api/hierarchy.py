"""Opening and creating groups, opening any node, and consolidated metadata."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chunkflow.api.group_members import Group
from chunkflow.api.opening import MODES, open_array
from chunkflow.api.spec import resolve_zarr_format
from chunkflow.core.array import Array
from chunkflow.core.consolidated import ConsolidatedIndex
from chunkflow.core.documents import (
    ZARR_JSON,
    ZARRAY,
    ZGROUP,
    group_documents,
    join_path,
    normalize_attributes,
    normalize_path,
    not_found_message,
)
from chunkflow.core.member_options import MemberOptions
from chunkflow.core.node_records import (
    ZMETADATA,
    NodeRecord,
    fetch_nodes,
    parse_node,
    write_group,
)
from chunkflow.core.replacing import writable_store, write_node
from chunkflow.errors import (
    ArgumentTypeError,
    ContainsArrayError,
    ContainsGroupError,
    GroupNotFoundError,
    InvalidArgumentError,
    MetadataError,
    NodeNotFoundError,
)
from chunkflow.metadata import load_json_document
from chunkflow.storage import Store, make_store

if TYPE_CHECKING:
    from chunkflow.cache import CacheLike
    from chunkflow.storage import StoreLike
    from chunkflow.sync import SynchronizerLike

__all__ = ["consolidate_metadata", "group", "open_consolidated", "open_group", "open_node"]

_GROUP_KWARGS = ("zarr_format", "attributes", "synchronizer", "cache", "lock_timeout",
                 "use_consolidated")


def group(store: StoreLike = None, *, overwrite: bool = False, path: str | None = None,
          zarr_format: int | None = None, attributes: dict[str, Any] | None = None,
          storage_options: dict[str, Any] | None = None, synchronizer: SynchronizerLike = None,
          cache: CacheLike = None, lock_timeout: float | None = None) -> Group:
    """Open the group at ``path``, creating it (in ``zarr_format``) when missing.

    Examples
    --------
    >>> root = group(attributes={"title": "demo"})
    >>> root.name, root.zarr_format, dict(root.attrs)
    ('/', 3, {'title': 'demo'})
    """
    return _open_group(store, "w" if overwrite else "a", path, None,
                       resolve_zarr_format(zarr_format), attributes,
                       storage_options, MemberOptions(synchronizer, cache, lock_timeout), None)


def open_group(store: StoreLike = None, mode: str = "a", *, path: str | None = None,
               zarr_format: int | None = None, attributes: dict[str, Any] | None = None,
               storage_options: dict[str, Any] | None = None, synchronizer: SynchronizerLike = None,
               cache: CacheLike = None, lock_timeout: float | None = None,
               use_consolidated: bool | None = None) -> Group:
    """Open (or, as ``mode`` allows, create) a group.

    Parameters
    ----------
    mode : {"r", "r+", "a", "w", "w-"}
        As in zarr-python (``"a"``: create when missing).
    zarr_format : {2, 3}, optional
        Format to look for first and to create (default: what exists, else the
        ``chunkflow.array.zarr-format`` setting, 3).
    use_consolidated : bool, optional
        ``None`` uses consolidated metadata when present; ``True`` requires it;
        ``False`` ignores it. With it, the whole hierarchy's metadata is one read.

    Examples
    --------
    >>> from chunkflow.storage import MemoryStore
    >>> store = MemoryStore()
    >>> _ = open_group(store, mode="w", zarr_format=2).create_group("a/b")
    >>> open_group(store, mode="r")["a"].tree()
    /a
    └── b
    """
    return _open_group(store, mode, path, zarr_format, resolve_zarr_format(zarr_format), attributes,
                       storage_options, MemberOptions(synchronizer, cache, lock_timeout),
                       use_consolidated)


def _open_group(store: StoreLike, mode: str, path: str | None, lookup_format: int | None,
                create_format: int, attributes: dict[str, Any] | None,
                storage_options: dict[str, Any] | None, options: MemberOptions,
                use_consolidated: bool | None) -> Group:
    if mode not in MODES:
        raise InvalidArgumentError(f"mode must be one of {MODES}, got {mode!r}")
    node_path = normalize_path(path)
    # Mode "w" replaces only a Zarr node (see chunkflow.core.replacing).
    resolved = (writable_store(store, node_path, overwrite=True, storage_options=storage_options)
                if mode == "w" else make_store(store, mode=mode, storage_options=storage_options))
    extra = () if use_consolidated is False else (ZMETADATA,)
    found = fetch_nodes(resolved, [node_path], extra)  # the one read of a consolidated open
    record = parse_node(found, node_path, lookup_format) or parse_node(found, node_path)
    if mode in ("r", "r+", "a") and record is not None:
        if record.kind == "array":
            raise ContainsArrayError(f"path {node_path or '/'!r} in {resolved!r} holds an "
                                     f"array, expected a group")
        index = _consolidated_index(found, record, use_consolidated, resolved)
        return Group._from_record(resolved, record, mode == "r", options, index)
    if mode in ("r", "r+"):
        expected = "a zarr.json group or a .zgroup"
        raise GroupNotFoundError(not_found_message(
            resolved, node_path, f"no group at path {node_path or '/'!r} in {resolved!r}: "
                                 f"expected {expected}", expected))
    if mode == "w-" and record is not None:
        error = ContainsArrayError if record.kind == "array" else ContainsGroupError
        raise error(f"{record.kind} already exists at path {node_path or '/'!r} in "
                    f"{resolved!r}; mode 'w-' never replaces")
    attrs = normalize_attributes(dict(attributes or {}), node_path)
    documents, meta = group_documents(node_path, create_format, attrs)
    write_node(resolved, node_path, documents, zarr_format=create_format, overwrite=mode == "w",
               what=f"open_group(mode={mode!r})", array=False, cache=options.cache)
    record = NodeRecord(node_path, "group", create_format, meta, attrs, {})
    return Group._from_record(resolved, record, False, options)


def _consolidated_index(found: dict[str, bytes], record: NodeRecord,
                        use_consolidated: bool | None, store: Store) -> ConsolidatedIndex | None:
    if use_consolidated is False:
        return None
    if record.zarr_format == 3:
        consolidated = getattr(record.metadata, "consolidated_metadata", None)
        if consolidated is not None:
            return ConsolidatedIndex.from_v3(record.path, consolidated)
    else:
        key = join_path(record.path, ZMETADATA)
        if key in found:
            doc = load_json_document(bytes(found[key]), record.path, ZMETADATA, "group")
            return ConsolidatedIndex.from_v2(record.path, doc)
    if use_consolidated:
        raise MetadataError(f"group {record.path or '/'!r} in {store!r} has no consolidated "
                            f"metadata; call chunkflow.consolidate_metadata first")
    return None


def open_node(store: StoreLike = None, mode: str = "a", *, path: str | None = None,
              **kwargs: Any) -> Array | Group:
    """Open the array or group at ``path``, whichever the store holds.

    When nothing is there and ``mode`` creates, ``shape=`` creates an array, its
    absence a group (as zarr-python). With ``"r"``/``"r+"``, a local folder path
    such as ``"data.zarr/a/b"`` that is not a store root itself is resolved against
    the ancestor folder (or ``.zip`` file) that is.

    Raises
    ------
    NodeNotFoundError
        With ``"r"``/``"r+"`` when ``path`` holds neither an array nor a group.

    Examples
    --------
    >>> from chunkflow.storage import MemoryStore
    >>> store = MemoryStore()
    >>> open_node(store, mode="w", path="g")  # doctest: +ELLIPSIS
    <chunkflow.Group /g zarr_format=3 store='memory:...'>
    >>> open_node(store, mode="a", path="g/x", shape=(2,)).shape
    (2,)
    >>> type(open_node(store, mode="r", path="g/x")).__name__
    'Array'
    """
    if mode not in MODES:
        raise InvalidArgumentError(f"mode must be one of {MODES}, got {mode!r}")
    storage_options = kwargs.pop("storage_options", None)
    node_path = normalize_path(path)
    if mode in ("r", "r+"):
        store, node_path = _locate(store, node_path)
    resolved = make_store(store, mode=mode, storage_options=storage_options)
    record = parse_node(fetch_nodes(resolved, [node_path]), node_path)
    if record is None and mode in ("r", "r+"):
        expected = "zarr.json, .zarray or .zgroup"
        raise NodeNotFoundError(not_found_message(
            resolved, node_path, f"no array or group at path {node_path or '/'!r} in "
                                 f"{resolved!r}: expected {expected}", expected))
    is_array = record.kind == "array" if record is not None and mode != "w" else "shape" in kwargs
    if is_array:
        return open_array(resolved, mode, path=node_path, **kwargs)
    unknown = sorted(set(kwargs) - set(_GROUP_KWARGS))
    if unknown:
        raise ArgumentTypeError(f"opening the group {node_path or '/'!r}: unexpected arguments "
                                f"{unknown} (pass shape= to create an array)")
    return open_group(resolved, mode, path=node_path, **kwargs)


def _locate(store: StoreLike, path: str) -> tuple[Any, str]:
    """Resolve a local ``folder/sub/path`` to (store root, node path) when needed."""
    if isinstance(store, os.PathLike):
        store = os.fspath(store)
    if not isinstance(store, str) or "://" in store or "::" in store:
        return store, path
    target = Path(store) / path if path else Path(store)
    if _holds_node(target):
        return store, path
    for parent in target.parents:
        relative = target.relative_to(parent).as_posix()
        if parent.is_file() and parent.suffix == ".zip":
            zipped = make_store(str(parent), mode="r")
            try:
                if parse_node(fetch_nodes(zipped, [relative]), relative) is not None:
                    return str(parent), relative
            finally:
                zipped.close()
            return store, path
        if _holds_node(parent) and _holds_node(target):
            return str(parent), relative
    return store, path


def _holds_node(folder: Path) -> bool:
    return any((folder / name).is_file() for name in (ZARR_JSON, ZARRAY, ZGROUP))


def consolidate_metadata(store: StoreLike, path: str | None = None,
                         zarr_format: int | None = None, *,
                         storage_options: dict[str, Any] | None = None) -> Group:
    """Write the metadata of every node below the group at ``path`` into one document.

    v2 writes ``.zmetadata``; v3 writes ``consolidated_metadata`` inline in the
    group's ``zarr.json`` (the layouts zarr-python 3 reads and writes). Returns the
    group opened through the consolidated metadata. ``storage_options`` are fsspec's
    options when ``store`` is a URL.

    Examples
    --------
    >>> from chunkflow.storage import MemoryStore
    >>> store = MemoryStore()
    >>> _ = group(store).create_group("a").zeros("x", shape=(3,))
    >>> sorted(consolidate_metadata(store).store.get_many(["zarr.json"]))
    ['zarr.json']
    >>> open_consolidated(store)["a/x"].shape
    (3,)
    """
    resolved = make_store(store, mode="a", storage_options=storage_options)
    root_path = normalize_path(path)
    root = open_group(resolved, mode="r+", path=root_path, zarr_format=zarr_format,
                      use_consolidated=False)
    records: list[NodeRecord] = []
    pending = [root]
    while pending:
        current = pending.pop()
        for record in current._member_records().values():
            records.append(record)
            if record.kind == "group":
                pending.append(current._node(record))  # type: ignore[arg-type]  # a group record opens a Group
    records.sort(key=lambda r: r.path)
    start = len(root_path) + 1 if root_path else 0
    if root.zarr_format == 2:
        metadata: dict[str, Any] = {ZGROUP: {"zarr_format": 2}}
        if root.attrs:
            metadata[".zattrs"] = root.attrs.asdict()
        for record in records:
            for name, doc in record.documents.items():
                metadata[f"{record.path[start:]}/{name}"] = doc
        doc = {"zarr_consolidated_format": 1, "metadata": metadata}
        from chunkflow.core.documents import dump_node_document

        resolved[join_path(root_path, ZMETADATA)] = dump_node_document(doc)
    else:
        inline: dict[str, Any] = {}
        for record in records:
            doc = dict(record.documents[ZARR_JSON])
            if record.kind == "group":
                doc["consolidated_metadata"] = _inline({})
            inline[record.path[start:]] = doc
        write_group(resolved, root_path, 3, root.attrs.asdict(), _inline(inline))
    return open_group(resolved, mode="r+", path=root_path, use_consolidated=True)


def _inline(metadata: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "inline", "must_understand": False, "metadata": metadata}


def open_consolidated(store: StoreLike = None, *, path: str | None = None, mode: str = "r",
                      zarr_format: int | None = None,
                      storage_options: dict[str, Any] | None = None, synchronizer: SynchronizerLike = None,
                      cache: CacheLike = None) -> Group:
    """Open a group through its consolidated metadata (one store read for all nodes).

    Raises
    ------
    MetadataError
        When the group has no consolidated metadata.
    """
    if mode not in ("r", "r+", "a"):
        raise InvalidArgumentError(f"open_consolidated mode must be 'r', 'r+' or 'a', got {mode!r}")
    return open_group(store, mode, path=path, zarr_format=zarr_format,
                      storage_options=storage_options, synchronizer=synchronizer, cache=cache,
                      use_consolidated=True)
