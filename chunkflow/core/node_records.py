"""The documents of nodes in a hierarchy: fetch them in batches, parse, write groups.

A node is described by ``zarr.json`` (v3) or ``.zarray``/``.zgroup`` plus ``.zattrs``
(v2). :func:`fetch_nodes` reads the candidate documents of many nodes with one
``get_many``, so listing a group's members costs one listing and one batched read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from chunkflow.core.documents import (
    ZARR_JSON,
    ZARRAY,
    ZATTRS,
    ZGROUP,
    classify_node,
    dump_node_document,
    join_path,
    normalize_attributes,
)
from chunkflow.errors import ChunkflowError, MetadataError
from chunkflow.metadata import (
    ArrayMetadataV2,
    ArrayMetadataV3,
    GroupMetadataV2,
    GroupMetadataV3,
    load_json_document,
)
from chunkflow.storage import Store

if TYPE_CHECKING:
    from chunkflow.cache import CacheLike

__all__ = [
    "ZMETADATA",
    "NodeRecord",
    "fetch_nodes",
    "forget_cached_under",
    "node_keys",
    "parse_node",
    "record_from_documents",
    "write_group",
]

ZMETADATA = ".zmetadata"
_NAMES = (ZARR_JSON, ZARRAY, ZGROUP, ZATTRS)

GroupMetadata = GroupMetadataV2 | GroupMetadataV3


@dataclass(frozen=True)
class NodeRecord:
    """What one node's documents say: its kind, format, metadata and attributes.

    ``documents`` keeps the stored JSON objects by document name (``"zarr.json"``,
    ``".zarray"``...), so consolidation copies them verbatim.
    """

    path: str
    kind: Literal["array", "group"]
    zarr_format: int
    metadata: ArrayMetadataV2 | ArrayMetadataV3 | GroupMetadata
    attributes: dict[str, Any]
    documents: dict[str, dict[str, Any]]


def node_keys(path: str, extra: Iterable[str] = ()) -> list[str]:
    """The keys of every candidate document of the node at ``path``.

    Examples
    --------
    >>> node_keys("a")
    ['a/zarr.json', 'a/.zarray', 'a/.zgroup', 'a/.zattrs']
    """
    return [join_path(path, name) for name in (*_NAMES, *extra)]


def fetch_nodes(store: Store, paths: Iterable[str], extra: Iterable[str] = ()) -> dict[str, bytes]:
    """Read the candidate documents of all ``paths`` with a single ``get_many``."""
    extra = tuple(extra)
    return store.get_many([key for path in paths for key in node_keys(path, extra)])


def parse_node(
    found: Mapping[str, bytes], path: str, zarr_format: int | None = None
) -> NodeRecord | None:
    """The node at ``path`` from fetched documents, or ``None`` when there is none.

    ``zarr_format`` restricts the search to one format (a v3 group only has v3
    members, as in zarr-python); ``None`` prefers v3, then v2.
    """
    docs: dict[str, dict[str, Any]] = {}
    for name in _NAMES:
        key = join_path(path, name)
        if key in found:
            docs[name] = load_json_document(bytes(found[key]), path, name)
    return record_from_documents(docs, path, zarr_format)


def record_from_documents(
    docs: Mapping[str, dict[str, Any]], path: str, zarr_format: int | None = None
) -> NodeRecord | None:
    """Build a :class:`NodeRecord` from parsed documents keyed by document name.

    Whatever is wrong in a hostile or broken document surfaces as a
    :class:`~chunkflow.errors.MetadataError` naming the node, never as a raw
    ``TypeError`` or ``AttributeError`` from deep inside the parser.

    Examples
    --------
    >>> record = record_from_documents({".zgroup": {"zarr_format": 2},
    ...                                 ".zattrs": {"a": 1}}, "g")
    >>> record.kind, record.zarr_format, record.attributes
    ('group', 2, {'a': 1})
    """
    try:
        return _record_from_documents(docs, path, zarr_format)
    except ChunkflowError:
        raise
    except (TypeError, ValueError, AttributeError, KeyError, IndexError, OverflowError,
            RecursionError) as err:
        raise MetadataError(
            f"node {path or '/'!r}: malformed metadata ({type(err).__name__}: {err}); "
            "expected a Zarr v2 or v3 document"
        ) from err


def _record_from_documents(
    docs: Mapping[str, dict[str, Any]], path: str, zarr_format: int | None
) -> NodeRecord | None:
    classified = classify_node(docs, zarr_format)
    if classified is None:
        return None
    kind, found_format = classified
    if found_format == 3:
        doc = docs[ZARR_JSON]
        meta = (GroupMetadataV3 if kind == "group" else ArrayMetadataV3).from_dict(doc, path)
        return NodeRecord(path, kind, 3, meta, dict(meta.attributes), {ZARR_JSON: doc})
    attributes = dict(docs.get(ZATTRS, {}))
    kept = {name: docs[name] for name in (ZARRAY, ZGROUP, ZATTRS) if name in docs}
    if kind == "array":
        return NodeRecord(path, kind, 2, ArrayMetadataV2.from_dict(docs[ZARRAY], path),
                          attributes, kept)
    return NodeRecord(path, kind, 2, GroupMetadataV2.from_dict(docs[ZGROUP], path),
                      attributes, kept)


def write_group(
    store: Store,
    path: str,
    zarr_format: int,
    attributes: dict[str, Any],
    consolidated: dict[str, Any] | None = None,
    *,
    attributes_only: bool = False,
) -> GroupMetadata:
    """Write a group's documents (attributes refused before any write if not JSON).

    v2 writes ``.zgroup`` and, when there are attributes (or one exists already),
    ``.zattrs``; v3 writes one ``zarr.json``, keeping ``consolidated`` inline.
    """
    attributes = normalize_attributes(attributes, path)
    if zarr_format == 3:
        meta = GroupMetadataV3(attributes, consolidated)
        store[join_path(path, ZARR_JSON)] = dump_node_document(meta.to_dict())
        return meta
    # An attribute update leaves .zgroup alone (zip stores can only append).
    docs = {} if attributes_only else {join_path(path, ZGROUP): GroupMetadataV2().to_bytes()}
    zattrs = join_path(path, ZATTRS)
    if attributes or attributes_only or zattrs in store:
        docs[zattrs] = dump_node_document(attributes)
    store.set_many(docs)
    return GroupMetadataV2()


def forget_cached_under(store: Store, keys: Iterable[str], cache: CacheLike) -> None:
    """Drop cached chunks of every array whose documents are among ``keys``.

    Deleting or moving a subtree must not let a later array at the same path read
    the old decoded chunks from the process-wide cache.
    """
    from chunkflow.engine.options import ArrayOptions

    resolved = ArrayOptions.from_kwargs(cache=cache).resolve_cache(store)
    if resolved is None:
        return
    for key in keys:
        folder, _, name = key.rpartition("/")
        if name in (ZARRAY, ZARR_JSON):
            resolved.discard_array(store.identity, folder)
