"""The :class:`Group`: a node holding arrays and groups, with attributes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from chunkflow.core.array import Array
from chunkflow.core.attrs import Attributes
from chunkflow.core.consolidated import ConsolidatedIndex
from chunkflow.core.documents import (
    ensure_ancestor_groups,
    group_documents,
    join_path,
    normalize_attributes,
    normalize_path,
    not_found_message,
)
from chunkflow.core.group_arrays import ArrayCreation
from chunkflow.core.info import InfoReport
from chunkflow.core.listing import named_by_metadata
from chunkflow.core.member_options import MemberOptions
from chunkflow.core.members import member_tree, open_members, scan_members, warn_invalid
from chunkflow.core.navigation import GroupNavigation
from chunkflow.core.node import NodeProperties
from chunkflow.core.node_records import (
    NodeRecord,
    fetch_nodes,
    forget_cached_under,
    parse_node,
    write_group,
)
from chunkflow.core.replacing import Location, inspect_location, write_node
from chunkflow.core.reprs import group_html, group_repr
from chunkflow.core.tree import Tree
from chunkflow.engine.options import ArrayOptions
from chunkflow.errors import (
    ContainsArrayError,
    GroupNotFoundError,
    InvalidArgumentError,
    KeyNotFoundError,
)
from chunkflow.metadata.ngff import multiscales_rows, read_multiscales
from chunkflow.storage import Store, make_store

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self is Python 3.11+

    from chunkflow.cache import CacheLike
    from chunkflow.storage import StoreLike
    from chunkflow.sync import SynchronizerLike

__all__ = ["Group"]


class Group(NodeProperties, ArrayCreation, GroupNavigation):
    """A group of a Zarr hierarchy: a mapping of names to arrays and groups.

    Open one with :func:`chunkflow.open_group` or :func:`chunkflow.group`, or
    directly as ``Group(store, path)``.

    Parameters
    ----------
    store : str, os.PathLike, Store or MutableMapping
        Where the hierarchy lives.
    path : str, optional
        The group's path inside the store (``""``: the root).
    read_only : bool
        Refuse every change to the group and to the nodes opened through it.
    storage_options : dict, optional
        fsspec options, for URLs.
    synchronizer, cache, lock_timeout : optional
        Passed to every array opened or created through the group; the group's own
        attribute updates take the synchronizer's lock, waiting at most
        ``lock_timeout`` seconds.

    Examples
    --------
    >>> from chunkflow import group as cg_group
    >>> root = cg_group()
    >>> sub = root.create_group("images", attributes={"kind": "raw"})
    >>> z = sub.zeros("frame", shape=(4, 4), chunks=(2, 2), dtype="u1")
    >>> sorted(root), root["images/frame"].shape, dict(root["images"].attrs)
    (['images'], (4, 4), {'kind': 'raw'})
    """

    _kind = "group"

    def __init__(
        self,
        store: StoreLike,
        path: str | None = "",
        *,
        read_only: bool = False,
        storage_options: dict[str, Any] | None = None,
        synchronizer: SynchronizerLike = None,
        cache: CacheLike = None,
        lock_timeout: float | None = None,
    ) -> None:
        resolved = make_store(store, mode="r" if read_only else "a",
                              storage_options=storage_options)
        node_path = normalize_path(path)
        record = parse_node(fetch_nodes(resolved, [node_path]), node_path)
        if record is None or record.kind != "group":
            found = "an array" if record is not None else "nothing"
            expected = "a zarr.json group or a .zgroup"
            message = (f"no group at path {node_path or '/'!r} in {resolved!r}: found {found}, "
                       f"expected {expected}")
            raise GroupNotFoundError(message if record is not None else
                                     not_found_message(resolved, node_path, message, expected))
        self._setup(resolved, record, read_only,
                    MemberOptions(synchronizer, cache, lock_timeout), None)

    @classmethod
    def _from_record(
        cls, store: Store, record: NodeRecord, read_only: bool, options: MemberOptions,
        index: ConsolidatedIndex | None = None,
    ) -> Self:
        """A Group over an already-read record (no store read)."""
        group = cls.__new__(cls)
        group._setup(store, record, read_only, options, index)
        return group

    def _setup(
        self, store: Store, record: NodeRecord, read_only: bool, options: MemberOptions,
        index: ConsolidatedIndex | None,
    ) -> None:
        self._store = store
        self._path = record.path
        self._zarr_format = record.zarr_format
        self._metadata = record.metadata
        self._read_only = bool(read_only or store.read_only)
        self._member_options = options
        self._index = index
        self._attrs = Attributes(record.attributes, self._persist_attributes, self._path,
                                 read_only=self._read_only)

    # -- properties --------------------------------------------------------------

    @property
    def zarr_format(self) -> int:
        """2 or 3."""
        return self._zarr_format

    @property
    def read_only(self) -> bool:
        """Whether changes are refused."""
        return self._read_only

    @property
    def info(self) -> InfoReport:
        """A report of name, format, store and members."""
        members = dict(self.members())
        arrays = [name for name, node in members.items() if isinstance(node, Array)]
        groups = [name for name in members if name not in arrays]
        rows = [
            ("Type", "Group"),
            ("Name", self.name),
            ("Zarr format", str(self.zarr_format)),
            ("Read-only", str(self.read_only)),
            ("Store type", type(self._store).__name__),
            ("No. members", str(len(members))),
            ("No. arrays", str(len(arrays))),
            ("No. groups", str(len(groups))),
        ]
        if arrays:
            rows.append(("Arrays", ", ".join(arrays)))
        if groups:
            rows.append(("Groups", ", ".join(groups)))
        multiscales = read_multiscales(dict(self.attrs))
        if multiscales is not None:  # an OME-Zarr image: its levels
            rows += multiscales_rows(multiscales, {n: members[n] for n in arrays})
        return InfoReport(rows)

    # -- reading members ---------------------------------------------------------

    def _child_path(self, name: str) -> str:
        relative = normalize_path(name)
        if not relative:
            raise KeyNotFoundError(f"group {self.name!r}: a member name must not be empty, got {name!r}")
        return join_path(self._path, relative)

    def _live_index(self) -> ConsolidatedIndex | None:
        return self._index if self._index is not None and not self._index.stale else None

    def _node(self, record: NodeRecord) -> Array | Group:
        if record.kind == "group":
            return type(self)._from_record(self._store, record, self._read_only,
                                           self._member_options, self._live_index())
        options = ArrayOptions.from_kwargs(read_only=self._read_only,
                                           **self._member_options.array_kwargs())
        return Array._from_metadata(self._store, record.path, record.metadata,  # type: ignore[arg-type]  # an array record holds array metadata
                                    dict(record.attributes), options)

    def _record(self, path: str) -> NodeRecord | None:
        index = self._live_index()
        if index is not None:
            return index.get(path)
        return parse_node(fetch_nodes(self._store, [path]), path, self._zarr_format)

    def _scan_members(self) -> tuple[dict[str, NodeRecord], dict[str, str]]:
        """List the folder; an empty listing is checked against what the group's own
        documents name (:mod:`chunkflow.core.listing`)."""
        named = named_by_metadata(getattr(self._metadata, "consolidated_metadata", None),
                                  self._attrs.asdict())
        return scan_members(self._store, self._path, self._zarr_format, named)

    def _member_records(self) -> dict[str, NodeRecord]:
        index = self._live_index()
        if index is not None:
            return index.children(self._path)
        records, invalid = self._scan_members()
        warn_invalid(self.name, invalid)
        return records

    def invalid_members(self) -> dict[str, str]:
        """Members that cannot be listed or opened, with the reason for each.

        Listings (``keys()``, ``members()``, ``tree()``, ``info``) skip them with a
        warning instead of failing.

        Examples
        --------
        >>> import chunkflow
        >>> chunkflow.group().invalid_members()
        {}
        """
        index = self._live_index()
        invalid: dict[str, str] = {}
        if index is not None:
            records = index.children(self._path)
        else:
            records, invalid = self._scan_members()
        open_members(records, self._node, invalid)
        return invalid

    def __getitem__(self, name: str) -> Array | Group:
        path = self._child_path(name)
        record = self._record(path)
        if record is None:
            raise KeyNotFoundError(f"group {self.name!r} has no member {name!r} (path {path!r} in "
                                   f"{self._store!r} holds no v{self._zarr_format} array or group)")
        return self._node(record)

    def get(self, name: str, default: Any = None) -> Any:
        """The member ``name``, or ``default`` when there is none."""
        try:
            return self[name]
        except KeyError:
            return default

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str) or not normalize_path(name):
            return False
        return self._record(self._child_path(name)) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self._member_records())

    def __len__(self) -> int:
        return len(self._member_records())

    def keys(self) -> list[str]:
        """Names of the members, sorted."""
        return list(self._member_records())

    def _direct_members(self) -> Iterator[tuple[str, Array | Group]]:
        """``(name, node)`` of every member, sorted by name (one batched read); members
        that cannot be opened are skipped with a warning (see :meth:`invalid_members`)."""
        invalid: dict[str, str] = {}
        opened = open_members(self._member_records(), self._node, invalid)
        warn_invalid(self.name, invalid)
        yield from opened

    def arrays(self) -> Iterator[tuple[str, Array]]:
        """``(name, array)`` of the member arrays."""
        for name, node in self.members():
            if isinstance(node, Array):
                yield name, node

    def groups(self) -> Iterator[tuple[str, Group]]:
        """``(name, group)`` of the member groups."""
        for name, node in self.members():
            if isinstance(node, Group):
                yield name, node

    def array_keys(self) -> list[str]:
        """Names of the member arrays."""
        return [name for name, _ in self.arrays()]

    def group_keys(self) -> list[str]:
        """Names of the member groups."""
        return [name for name, _ in self.groups()]

    def tree(self, level: int | None = None) -> Tree:
        """The hierarchy below this group, printable as text or shown as HTML.

        Examples
        --------
        >>> from chunkflow import group as cg_group
        >>> root = cg_group()
        >>> _ = root.zeros("array_2D", shape=(1000, 1000), dtype="f8")
        >>> _ = root.create_group("group_1").create_group("inner")
        >>> root.tree()
        /
        ├── array_2D (1000, 1000) float64
        └── group_1
            └── inner
        """
        return Tree(member_tree(self, level))

    # -- changing ----------------------------------------------------------------

    def _changed(self) -> None:
        # A consolidated snapshot no longer describes the store: every group that
        # shares it reads the store again.
        if self._index is not None:
            self._index.stale = True

    def _lock_options(self) -> tuple[Any, float | None]:
        return self._member_options.synchronizer, self._member_options.lock_timeout

    def _current_attributes(self) -> dict[str, Any]:
        if self._member_options.synchronizer is None:
            return self._attrs.asdict()
        # Another process may have changed them since this handle read them.
        fresh = parse_node(fetch_nodes(self._store, [self._path]), self._path,
                           self._zarr_format)
        return dict(fresh.attributes) if fresh is not None else self._attrs.asdict()

    def _store_attributes(self, attributes: dict[str, Any]) -> None:
        consolidated = getattr(self._metadata, "consolidated_metadata", None)
        self._metadata = write_group(self._store, self._path, self._zarr_format, attributes,
                                     consolidated, attributes_only=True)

    def _refuse_existing(self, path: str, overwrite: bool, what: str) -> Location:
        """What is at ``path``, when a node may be created there (see
        :meth:`~chunkflow.core.replacing.Location.refuse`)."""
        location = inspect_location(self._store, path)
        location.refuse(overwrite=overwrite, what=f"group {self.name!r}: {what}")
        return location

    def _delete_path(self, path: str) -> None:
        """Delete the Zarr nodes at ``path`` (their documents and chunks); anything
        else there stays."""
        inspect_location(self._store, path).delete(
            what=f"group {self.name!r}: deleting {path!r}", cache=self._member_options.cache)

    def create_group(self, name: str, *, overwrite: bool = False,
                     attributes: dict[str, Any] | None = None) -> Group:
        """Create the group ``name`` (and every missing group above it).

        ``overwrite=True`` replaces a Zarr node there (its documents and chunks, and
        the nodes below it); anything else there is refused either way.

        Raises
        ------
        ContainsArrayError, ContainsGroupError
            When a node exists at the path and ``overwrite`` is false.
        ForeignContentError
            When the path holds something that is not Zarr (files, folders...).
        """
        self._check_writable()
        path = self._child_path(name)
        attributes = normalize_attributes(dict(attributes or {}), path)
        documents, meta = group_documents(path, self._zarr_format, attributes)
        self._changed()
        write_node(self._store, path, documents, zarr_format=self._zarr_format,
                   overwrite=overwrite, what=f"group {self.name!r}: create_group", array=False,
                   cache=self._member_options.cache)
        record = NodeRecord(path, "group", self._zarr_format, meta, attributes, {})
        return type(self)._from_record(self._store, record, self._read_only,
                                       self._member_options)

    def require_group(self, name: str, *, overwrite: bool = False) -> Group:
        """Open the group ``name``, creating it when it does not exist."""
        path = self._child_path(name)
        record = parse_node(fetch_nodes(self._store, [path]), path)
        if record is None or overwrite:
            return self.create_group(name, overwrite=overwrite)
        if record.kind == "array":
            raise ContainsArrayError(f"path {path!r} in {self._store!r} holds an array, "
                                     f"expected a group")
        return self._node(record)  # type: ignore[return-value]  # not an array record: a group

    def __delitem__(self, name: str) -> None:
        self._check_writable()
        path = self._child_path(name)
        if self._record(path) is None:
            raise KeyNotFoundError(f"group {self.name!r} has no member {name!r} to delete")
        self._changed()
        self._delete_path(path)

    def move(self, source: str, dest: str) -> None:
        """Move the node ``source`` (every key below it) to ``dest``.

        Raises
        ------
        KeyError
            When ``source`` holds no node.
        ContainsArrayError, ContainsGroupError
            When ``dest`` holds a node already.
        """
        self._check_writable()
        src, dst = self._child_path(source), self._child_path(dest)
        if parse_node(fetch_nodes(self._store, [src]), src) is None:
            raise KeyNotFoundError(f"group {self.name!r}: nothing to move at {src!r} in {self._store!r}")
        if dst == src or dst.startswith(src + "/"):
            raise InvalidArgumentError(f"cannot move {src!r} into itself ({dst!r})")
        self._refuse_existing(dst, overwrite=False, what="move")
        self._changed()
        keys = list(self._store.list_prefix(src))
        values = self._store.get_many(keys)
        ensure_ancestor_groups(self._store, dst, self._zarr_format)
        self._store.set_many({dst + key[len(src):]: value for key, value in values.items()})
        self._store.delete_many(keys)
        forget_cached_under(self._store, keys, self._member_options.cache)

    def __repr__(self) -> str:
        return group_repr(self)

    def _repr_html_(self) -> str:
        """Notebook display: path, store, format and the member tree."""
        return group_html(self)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Group) and other._store == self._store
                and other._path == self._path)

    def __hash__(self) -> int:
        return hash((self._store, self._path))
