"""An in-memory snapshot of a hierarchy's metadata, read from consolidated metadata.

Opening a group with consolidated metadata costs one store read; members, trees and
arrays below it are then built from this snapshot. The snapshot goes stale (and every
group sharing it reads the store again) as soon as the hierarchy is changed through
one of those groups.
"""

from __future__ import annotations

from typing import Any

from chunkflow.core.documents import join_path
from chunkflow.core.node_records import NodeRecord, record_from_documents
from chunkflow.errors import MetadataError

__all__ = ["ConsolidatedIndex"]


class ConsolidatedIndex:
    """Records of every node below a group, by absolute path.

    Examples
    --------
    >>> index = ConsolidatedIndex.from_v2("", {"zarr_consolidated_format": 1, "metadata": {
    ...     ".zgroup": {"zarr_format": 2}, "g/.zgroup": {"zarr_format": 2},
    ...     "g/.zattrs": {"a": 1}}})
    >>> index.get("g").attributes, list(index.children(""))
    ({'a': 1}, ['g'])
    """

    def __init__(self, records: dict[str, NodeRecord]) -> None:
        self.stale = False
        self._records = records
        self._children: dict[str, dict[str, NodeRecord]] = {}
        for path in sorted(records):
            parent, _, name = path.rpartition("/")
            self._children.setdefault(parent, {})[name] = records[path]

    def get(self, path: str) -> NodeRecord | None:
        """The record of the node at ``path``, or ``None``."""
        return self._records.get(path)

    def children(self, path: str) -> dict[str, NodeRecord]:
        """Records of the direct members of the group at ``path``, sorted by name."""
        return dict(self._children.get(path, {}))

    @classmethod
    def from_v2(cls, root: str, doc: dict[str, Any]) -> ConsolidatedIndex:
        """Parse a ``.zmetadata`` document found at the group ``root``."""
        where = f"group {root or '/'!r}: .zmetadata"
        # Absent is accepted, as zarr-python 3 does: kerchunk's Parquet references
        # (fsspec's LazyReferenceMapper) write {"metadata": ..., "record_size": ...}.
        if doc.get("zarr_consolidated_format", 1) != 1:
            raise MetadataError(f"{where} must have zarr_consolidated_format 1, "
                                f"got {doc.get('zarr_consolidated_format')!r}")
        metadata = doc.get("metadata")
        if not isinstance(metadata, dict):
            raise MetadataError(f"{where} key 'metadata' must be an object, got {metadata!r}")
        by_folder: dict[str, dict[str, dict[str, Any]]] = {}
        for key, value in metadata.items():
            folder, _, name = key.rpartition("/")
            if folder and isinstance(value, dict):
                by_folder.setdefault(folder, {})[name] = value
        records = {}
        for folder, docs in by_folder.items():
            path = join_path(root, folder)
            record = record_from_documents(docs, path, 2)
            if record is not None:
                records[path] = record
        return cls(records)

    @classmethod
    def from_v3(cls, root: str, consolidated: dict[str, Any]) -> ConsolidatedIndex:
        """Parse the inline ``consolidated_metadata`` of the v3 group at ``root``."""
        records: dict[str, NodeRecord] = {}
        _collect_v3(root, consolidated, records)
        return cls(records)


def _collect_v3(root: str, consolidated: dict[str, Any], records: dict[str, NodeRecord]) -> None:
    if consolidated.get("kind", "inline") != "inline":
        raise MetadataError(f"group {root or '/'!r}: consolidated_metadata kind "
                            f"{consolidated.get('kind')!r} is not supported, expected 'inline'")
    metadata = consolidated.get("metadata")
    if not isinstance(metadata, dict):
        raise MetadataError(f"group {root or '/'!r}: consolidated_metadata key 'metadata' "
                            f"must be an object, got {metadata!r}")
    for relative, doc in metadata.items():
        path = join_path(root, relative.strip("/"))
        if not isinstance(doc, dict):
            raise MetadataError(
                f"group {root or '/'!r}: consolidated_metadata entry {relative!r} must be a "
                f"zarr.json object, got {type(doc).__name__} {doc!r:.60}"
            )
        record = record_from_documents({"zarr.json": doc}, path, 3)
        if record is None:
            continue
        records[path] = record
        nested = doc.get("consolidated_metadata")
        # Older writers nest the members of subgroups instead of flattening them.
        if isinstance(nested, dict) and nested.get("metadata"):
            _collect_v3(path, nested, records)
