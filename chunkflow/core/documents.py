"""Where node documents live in a store, and reading/writing them.

A node at ``path`` is described by ``zarr.json`` (v3) or by ``.zarray``/``.zgroup``
plus an optional ``.zattrs`` (v2). These helpers fetch the candidate documents in one
batch, so opening an array costs one store round trip and one metadata parse.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from chunkflow.errors import (
    ArgumentTypeError,
    ArrayNotFoundError,
    ContainsArrayError,
    MetadataError,
    NotSerializableError,
)
from chunkflow.metadata import (
    ArrayMetadata,
    ArrayMetadataV2,
    ArrayMetadataV3,
    GroupMetadataV2,
    GroupMetadataV3,
    load_json_document,
)
from chunkflow.storage import Store, normalize_key

__all__ = [
    "ZARRAY",
    "ZARR_JSON",
    "ZATTRS",
    "ZGROUP",
    "ArrayMetadata",
    "ancestor_documents",
    "array_documents",
    "classify_node",
    "dump_node_document",
    "ensure_ancestor_groups",
    "group_documents",
    "join_path",
    "load_array_metadata",
    "node_kind",
    "normalize_attributes",
    "normalize_path",
    "not_found_message",
    "store_array_metadata",
]

ZARR_JSON = "zarr.json"
ZARRAY = ".zarray"
ZATTRS = ".zattrs"
ZGROUP = ".zgroup"

NodeKind = Literal["array", "group"]


def join_path(path: str, key: str) -> str:
    """Join a node path and a key below it.

    Examples
    --------
    >>> join_path("", "zarr.json"), join_path("a/b", ".zarray")
    ('zarr.json', 'a/b/.zarray')
    """
    return f"{path}/{key}" if path else key


def normalize_path(path: str | None) -> str:
    """Normalize a node path: no leading/trailing slash, ``""`` for the root.

    Examples
    --------
    >>> normalize_path("/a/b/"), normalize_path(None)
    ('a/b', '')
    """
    if path is None:
        return ""
    if not isinstance(path, str):
        raise ArgumentTypeError(f"node path must be a str, got {path!r}")
    stripped = path.strip("/")
    return normalize_key(stripped) if stripped else ""


def classify_node(
    docs: Mapping[str, Any], zarr_format: int | None = None
) -> tuple[NodeKind, int] | None:
    """``(kind, zarr_format)`` of the node whose documents are ``docs``, or ``None``.

    The one place that tells arrays from groups. ``docs`` maps document names
    (``"zarr.json"``, ``".zarray"``, ``".zgroup"``...) to documents; only the parsed
    ``zarr.json`` is looked into (its ``node_type``), v2 nodes are told apart by which
    document exists. A ``zarr.json`` that is not a group is taken for an array, whose
    parse then names what is wrong with it. ``zarr_format`` restricts the answer to one
    format (a v3 group only has v3 members, as in zarr-python); ``None`` prefers v3,
    then v2.

    Examples
    --------
    >>> classify_node({"zarr.json": {"zarr_format": 3, "node_type": "group"}})
    ('group', 3)
    >>> classify_node({".zarray": {}, ".zattrs": {}})
    ('array', 2)
    >>> classify_node({".zgroup": {}}, zarr_format=3) is None
    True
    """
    if ZARR_JSON in docs and zarr_format in (None, 3):
        document = docs[ZARR_JSON]
        is_group = isinstance(document, Mapping) and document.get("node_type") == "group"
        return ("group" if is_group else "array"), 3
    if zarr_format == 3:
        return None
    if ZARRAY in docs:
        return "array", 2
    if ZGROUP in docs:
        return "group", 2
    return None


def node_kind(store: Store, path: str) -> NodeKind | None:
    """``"array"``, ``"group"`` or ``None`` for what ``store`` holds at ``path``.

    Examples
    --------
    >>> from chunkflow.storage import MemoryStore
    >>> store = MemoryStore()
    >>> store["g/.zgroup"] = b'{"zarr_format": 2}'
    >>> node_kind(store, "g"), node_kind(store, "nothing")
    ('group', None)
    """
    keys = [join_path(path, name) for name in (ZARR_JSON, ZARRAY, ZGROUP)]
    classified = classify_node(_documents(store.get_many(keys), path))
    return None if classified is None else classified[0]


def _documents(found: Mapping[str, Any], path: str) -> dict[str, Any]:
    """The fetched documents of the node at ``path`` by name, ``zarr.json`` parsed
    (:func:`classify_node` reads its ``node_type``), the others as stored."""
    docs: dict[str, Any] = {}
    for name in (ZARR_JSON, ZARRAY, ZGROUP, ZATTRS):
        key = join_path(path, name)
        if key in found:
            data = found[key]
            docs[name] = load_json_document(bytes(data), path, name) if name == ZARR_JSON else data
    return docs


def not_found_message(store: Store, path: str, message: str, expected: str) -> str:
    """Why no node opens at ``path``: that it does not exist when the store holds
    nothing there (a mistyped or missing folder, bucket prefix or group), else
    ``message`` (keys are there, but no node document); ``expected`` names the
    documents looked for.

    Examples
    --------
    >>> from chunkflow.storage import MemoryStore
    >>> store = MemoryStore()
    >>> store["a/x"] = b""
    >>> not_found_message(store, "b", "no group at 'b'", ".zgroup")  # doctest: +ELLIPSIS
    "path 'b' in MemoryStore(...) does not exist: nothing is stored there (expected .zgroup)"
    >>> not_found_message(store, "a", "no group at 'a'", ".zgroup")
    "no group at 'a'"
    """
    try:
        empty = next(iter(store.list_prefix(path)), None) is None
    except OSError:  # a store that cannot list (permissions): say what was looked for
        return message
    if not empty:
        return message
    place = repr(store) if not path else f"path {path!r} in {store!r}"
    return f"{place} does not exist: nothing is stored there (expected {expected})"


def load_array_metadata(store: Store, path: str) -> tuple[ArrayMetadata, dict[str, Any]]:
    """Read the metadata and attributes of the array at ``path`` (one batched read).

    Raises
    ------
    ArrayNotFoundError
        When ``path`` holds a group or nothing.
    MetadataError
        When a document is malformed.
    """
    json_key, zarray_key, zattrs_key, zgroup_key = (
        join_path(path, name) for name in (ZARR_JSON, ZARRAY, ZATTRS, ZGROUP)
    )
    docs = _documents(store.get_many([json_key, zarray_key, zattrs_key, zgroup_key]), path)
    where = f"array {path or '/'!r} in {store!r}"
    classified = classify_node(docs)
    if classified is None:
        raise ArrayNotFoundError(not_found_message(
            store, path, f"{where}: found neither {json_key!r} nor {zarray_key!r}",
            f"{json_key!r} or {zarray_key!r}"))
    kind, zarr_format = classified
    if kind == "group":
        key = json_key if zarr_format == 3 else zgroup_key
        raise ArrayNotFoundError(f"{where}: {key!r} describes a group, not an array")
    if zarr_format == 3:
        metadata = ArrayMetadataV3.from_dict(docs[ZARR_JSON], path)
        return metadata, dict(metadata.attributes)
    metadata_v2 = ArrayMetadataV2.from_bytes(bytes(docs[ZARRAY]), path)
    attributes: dict[str, Any] = {}
    if ZATTRS in docs:
        attributes = load_json_document(bytes(docs[ZATTRS]), path, ZATTRS)
    return metadata_v2, attributes


def array_documents(
    path: str, metadata: ArrayMetadata, attributes: dict[str, Any]
) -> tuple[dict[str, bytes], ArrayMetadata]:
    """The documents of an array by key, and its metadata as they store it; nothing is
    written, so a document that cannot be made (attributes that are not JSON) is
    refused before anything changes.

    For v3 the attributes are part of ``zarr.json``; for v2 they go to ``.zattrs``
    (only when there are some).

    Examples
    --------
    >>> from chunkflow.metadata import ArrayMetadataV2
    >>> meta = ArrayMetadataV2.from_dict({"zarr_format": 2, "shape": [4], "chunks": [2],
    ...     "dtype": "<i2", "compressor": None, "fill_value": 0, "order": "C",
    ...     "filters": None}, "x")
    >>> sorted(array_documents("x", meta, {"a": 1})[0])
    ['x/.zarray', 'x/.zattrs']
    """
    attributes = normalize_attributes(attributes, path)
    if isinstance(metadata, ArrayMetadataV3):
        metadata = metadata.with_attributes(dict(attributes))
        return {join_path(path, ZARR_JSON): dump_node_document(metadata.to_dict())}, metadata
    docs = {join_path(path, ZARRAY): metadata.to_bytes()}
    if attributes:
        docs[join_path(path, ZATTRS)] = dump_node_document(dict(attributes))
    return docs, metadata


def group_documents(
    path: str, zarr_format: int, attributes: dict[str, Any]
) -> tuple[dict[str, bytes], GroupMetadataV2 | GroupMetadataV3]:
    """The documents of a new group by key, and its metadata (nothing is written).

    Examples
    --------
    >>> sorted(group_documents("g", 2, {"a": 1})[0]), sorted(group_documents("g", 3, {})[0])
    (['g/.zattrs', 'g/.zgroup'], ['g/zarr.json'])
    """
    attributes = normalize_attributes(attributes, path)
    if zarr_format == 3:
        meta = GroupMetadataV3(attributes)
        return {join_path(path, ZARR_JSON): dump_node_document(meta.to_dict())}, meta
    docs = {join_path(path, ZGROUP): GroupMetadataV2().to_bytes()}
    if attributes:
        docs[join_path(path, ZATTRS)] = dump_node_document(attributes)
    return docs, GroupMetadataV2()


def store_array_metadata(
    store: Store, path: str, metadata: ArrayMetadata, attributes: dict[str, Any]
) -> ArrayMetadata:
    """Write the documents of an array; returns the metadata as stored.

    For v3 the attributes are part of ``zarr.json``; for v2 they go to ``.zattrs``
    (written only when non-empty, deleted when emptied).
    """
    docs, metadata = array_documents(path, metadata, attributes)
    zattrs = join_path(path, ZATTRS)
    if isinstance(metadata, ArrayMetadataV3):
        store.set_many(docs)
        return metadata
    # Asked only of stores that cannot delete: some stores refuse to look up a v2 key
    # at all (Icechunk raises KeyError: 'v2 key not found').
    if zattrs not in docs and not getattr(store, "supports_deletes", True) and zattrs in store:
        docs[zattrs] = dump_node_document({})
    store.set_many(docs)
    if zattrs not in docs:
        store.delete_many([zattrs])
    return metadata


def normalize_attributes(attributes: dict[str, Any], path: str) -> dict[str, Any]:
    """Plain-JSON copy of ``attributes``; refuses what is not JSON, before any write.

    numpy scalars become Python numbers; tuples become lists.

    Examples
    --------
    >>> normalize_attributes({"a": (1, 2.5, "x", None)}, "p")
    {'a': [1, 2.5, 'x', None]}
    >>> normalize_attributes({"a": {1, 2}}, "p")
    Traceback (most recent call last):
    ...
    chunkflow.errors.MetadataError: node 'p': attributes must be JSON-serializable: ...
    """
    for key in attributes:
        if not isinstance(key, str):
            raise MetadataError(f"node {path or '/'!r}: attribute names must be str, got {key!r}")
    try:
        return json.loads(json.dumps(attributes, allow_nan=True, default=_refuse))
    except (TypeError, ValueError) as err:
        raise MetadataError(
            f"node {path or '/'!r}: attributes must be JSON-serializable: {err}"
        ) from None


def dump_node_document(doc: dict[str, Any]) -> bytes:
    """Serialize a node document whose user attributes may hold NaN or infinities.

    zarr-python 3 writes such attribute values as the bare JSON tokens ``NaN``,
    ``Infinity`` and ``-Infinity`` (in ``.zattrs`` and in ``zarr.json``) and reads
    them back as floats; doing the same keeps both directions round-tripping.
    Metadata fields never hold them: fill values are encoded as strings before.

    Examples
    --------
    >>> dump_node_document({"a": float("nan"), "b": [float("-inf")]})
    b'{\\n    "a": NaN,\\n    "b": [\\n        -Infinity\\n    ]\\n}'
    """
    try:
        text = json.dumps(doc, indent=4, ensure_ascii=False, allow_nan=True, default=_plain)
    except (TypeError, ValueError) as err:
        raise MetadataError(f"cannot serialize metadata document: {err}") from err
    return text.encode("utf-8")


def ensure_ancestor_groups(store: Store, path: str, zarr_format: int) -> None:
    """Write a group document in every ancestor of ``path`` that holds no node.

    Ancestors are the root and every prefix of ``path`` (not ``path`` itself); an
    existing group of either format is kept as it is. All candidate documents are
    read in one batch and the missing ones written in one batch
    (:func:`ancestor_documents`).

    Raises
    ------
    ContainsArrayError
        When an ancestor is an array (an array cannot hold children).

    Examples
    --------
    >>> from chunkflow.storage import MemoryStore
    >>> store = MemoryStore()
    >>> ensure_ancestor_groups(store, "a/b/c", 2)
    >>> sorted(store)
    ['.zgroup', 'a/.zgroup', 'a/b/.zgroup']
    """
    missing = ancestor_documents(store, path, zarr_format)
    if missing:
        store.set_many(missing)


def ancestor_documents(store: Store, path: str, zarr_format: int) -> dict[str, bytes]:
    """The group documents the ancestors of ``path`` that hold no node need (one
    batched read; nothing is written).

    Raises
    ------
    ContainsArrayError
        When an ancestor is an array (an array cannot hold children).
    MetadataError
        When a document of an ancestor is not JSON (a user's file of that name: the
        node would hang below no group).

    Examples
    --------
    >>> from chunkflow.storage import MemoryStore
    >>> sorted(ancestor_documents(MemoryStore(), "a/b", 3))
    ['a/zarr.json', 'zarr.json']
    """
    if not path:
        return {}
    parts = path.split("/")
    ancestors = ["/".join(parts[:i]) for i in range(len(parts))]
    names = (ZARR_JSON, ZARRAY, ZGROUP)
    found = store.get_many([join_path(a, n) for a in ancestors for n in names])
    for key, value in found.items():
        folder, _, name = key.rpartition("/")
        load_json_document(bytes(value), folder, name)
    missing: dict[str, bytes] = {}
    for ancestor in ancestors:
        json_key, zgroup_key = join_path(ancestor, ZARR_JSON), join_path(ancestor, ZGROUP)
        docs = _documents(found, ancestor)
        # An array of either format beside a group document of the other is an array.
        kinds = {classify_node(docs, 3), classify_node(docs, 2)}
        if ("array", 3) in kinds or ("array", 2) in kinds:
            raise ContainsArrayError(
                f"cannot create node {path!r} in {store!r}: its ancestor {ancestor or '/'!r} "
                f"is an array, expected a group or nothing"
            )
        if json_key in found or zgroup_key in found:
            continue
        if zarr_format == 2:
            missing[zgroup_key] = GroupMetadataV2().to_bytes()
        else:
            missing[json_key] = GroupMetadataV3().to_bytes()
    return missing


def _plain(value: Any) -> Any:
    # numcodecs configs and attributes may carry numpy values and tuples.
    if isinstance(value, (tuple, set, frozenset)):
        return list(value)
    tolist = getattr(value, "tolist", None)
    if tolist is not None:
        return tolist()
    raise NotSerializableError(f"{value!r} of type {type(value).__name__} is not JSON-serializable")


def _refuse(value: Any) -> Any:
    # numpy scalars are common in attributes; accept them as their Python values.
    item = getattr(value, "item", None)
    if item is not None and getattr(value, "ndim", None) == 0:
        result = item()
        if isinstance(result, (int, float, str, bool)) or result is None:
            return result
    raise NotSerializableError(f"{value!r} of type {type(value).__name__} is not JSON-serializable")
