"""Listing a group's members when some of them cannot be opened.

A folder named ``C:`` or ``a\\b`` (valid on one file system, not a portable key), or
a member whose metadata is broken or needs a codec that is refused (pickle), must not
make a whole group unlistable. :func:`scan_members` lists what it can and reports the
rest by name, with the reason; the group warns once per listing and offers
``Group.invalid_members()``. :func:`member_tree` reads a hierarchy for
:class:`~chunkflow.core.tree.Tree` to draw.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from chunkflow.core.array import Array
from chunkflow.core.documents import join_path
from chunkflow.core.listing import list_group_folder, refuse_unlistable, refuse_unlisted_members
from chunkflow.core.node_records import NodeRecord, fetch_nodes, parse_node
from chunkflow.core.tree import TreeNode
from chunkflow.errors import ChunkflowError, InvalidArgumentError
from chunkflow.storage import Store, normalize_key

__all__ = ["GroupMembers", "member_tree", "open_members", "scan_members", "warn_invalid"]


class GroupMembers(Protocol):
    """What :func:`member_tree` reads of a group (a :class:`~chunkflow.Group` has it)."""

    @property
    def name(self) -> str: ...

    def members(self) -> Iterable[tuple[str, Any]]: ...


def scan_members(store: Store, path: str, zarr_format: int | None,
                 named: Mapping[str, str] | None = None
                 ) -> tuple[dict[str, NodeRecord], dict[str, str]]:
    """``(records by name, reasons by name)`` of the folders below the group ``path``.

    A listing without subfolders is checked against the members ``named`` by the
    group's documents and against a recursive listing
    (:func:`~chunkflow.core.listing.refuse_unlisted_members`): members it missed raise
    :class:`~chunkflow.errors.IncompleteListingError`; a store that cannot list (its
    listing raises, or finds not even the group's own document) raises
    :class:`~chunkflow.errors.UnlistableGroupError`.
    """
    keys, subs = list_group_folder(store, path)
    if not subs:
        listed = refuse_unlisted_members(store, path, zarr_format, named or {})
        if not keys and not listed:  # not even the group's own document: cannot list
            refuse_unlistable(store, path, zarr_format)
    invalid: dict[str, str] = {}
    usable: list[tuple[str, str]] = []
    for sub in subs:
        member = join_path(path, sub)
        try:
            normalize_key(member)
        except ChunkflowError as err:
            invalid[sub] = f"not a portable name ({err})"
            continue
        usable.append((sub, member))
    found = fetch_nodes(store, [member for _, member in usable])
    records: dict[str, NodeRecord] = {}
    for sub, member in usable:
        try:
            record = parse_node(found, member, zarr_format)
        except ChunkflowError as err:
            invalid[sub] = str(err)
            continue
        if record is not None:
            records[sub] = record
    return dict(sorted(records.items())), invalid


def open_members(records: dict[str, NodeRecord], make: Callable[[NodeRecord], Any],
                 invalid: dict[str, str]) -> list[tuple[str, Any]]:
    """Open every record; those that fail (a refused codec...) go to ``invalid``."""
    opened = []
    for name, record in records.items():
        try:
            opened.append((name, make(record)))
        except ChunkflowError as err:
            invalid[name] = str(err)
    return opened


def warn_invalid(group_name: str, invalid: dict[str, str]) -> None:
    if invalid:
        listed = "; ".join(f"{name!r}: {reason}" for name, reason in sorted(invalid.items()))
        warnings.warn(
            f"group {group_name!r}: skipped {len(invalid)} member(s) that cannot be opened "
            f"({listed}); see Group.invalid_members()",
            UserWarning,
            stacklevel=4,
        )


def member_tree(group: GroupMembers, level: int | None, name: str | None = None) -> TreeNode:
    """The members of ``group`` (a :class:`~chunkflow.Group`), ``level`` levels deep
    (``None``: all), as :class:`TreeNode` data; ``name`` labels the top line (default:
    the group's name).

    Examples
    --------
    >>> import chunkflow
    >>> root = chunkflow.group()
    >>> _ = root.create_group("g").zeros("a", shape=2, dtype="i1")
    >>> from chunkflow.core.tree import Tree
    >>> print(Tree(member_tree(root, None)))
    /
    └── g
        └── a (2,) int8
    >>> member_tree(root, 0).children
    []
    """
    if level is not None and level < 0:
        raise InvalidArgumentError(f"tree level must be None or >= 0, got {level}")
    node = TreeNode(group.name if name is None else name)
    if level == 0:
        return node
    deeper = None if level is None else level - 1
    for child_name, child in group.members():
        # Any array-like (an h5py dataset in a foreign group) is drawn as an array.
        if isinstance(child, Array) or hasattr(child, "dtype"):
            node.children.append(TreeNode(child_name, f"{child.shape} {child.dtype}"))
        else:
            node.children.append(member_tree(child, deeper, child_name))
    return node
