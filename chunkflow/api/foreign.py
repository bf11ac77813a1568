"""Groups of other libraries (an h5py ``File`` or ``Group``) seen as chunkflow groups.

:func:`~chunkflow.copy`, :func:`~chunkflow.copy_all` and :func:`~chunkflow.tree` walk a
hierarchy through ``name``, ``basename``, ``attrs`` and ``members()``. An h5py group has
the names and the attributes but lists its members as a mapping, so
:func:`as_hierarchy_node` wraps it in :class:`ForeignGroup`; its datasets are array-likes
(``shape``, ``dtype``, slicing) and are copied chunk by chunk as they are.

Examples
--------
>>> import h5py, io, numpy as np
>>> f = h5py.File(io.BytesIO(), "w")
>>> _ = f.create_dataset("g/x", data=np.arange(3))
>>> node = as_hierarchy_node(f)
>>> node.name, [(name, type(m).__name__) for name, m in node.members()]
('/', [('g', 'ForeignGroup')])
>>> print(node.tree())
/
└── g
    └── x (3,) int64
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from chunkflow.core.members import member_tree
from chunkflow.core.tree import Tree

__all__ = ["ForeignGroup", "as_hierarchy_node", "is_foreign_group"]


def is_foreign_group(obj: object) -> bool:
    """Whether ``obj`` is a group of another library: a mapping of named members with
    ``attrs`` and a ``name`` (h5py's ``File`` and ``Group``), not an array."""
    return (hasattr(obj, "visititems") and hasattr(obj, "items") and hasattr(obj, "attrs")
            and not hasattr(obj, "dtype") and not hasattr(obj, "members"))


def as_hierarchy_node(obj: Any) -> Any:
    """``obj`` wrapped in :class:`ForeignGroup` if it is a foreign group, else itself."""
    return ForeignGroup(obj) if is_foreign_group(obj) else obj


class ForeignGroup:
    """A foreign group (h5py) with the reading side of :class:`~chunkflow.Group`:
    ``name``, ``basename``, ``attrs``, ``members()`` and ``tree()``.

    Parameters
    ----------
    group : h5py.Group
        The group to read; it stays owned (and closed) by the caller.
    """

    def __init__(self, group: Any) -> None:
        self._group = group

    @property
    def name(self) -> str:
        """Absolute name, ``"/"`` for the root (as h5py names it)."""
        return str(self._group.name)

    @property
    def basename(self) -> str:
        """Last component of :attr:`name` (``""`` for the root)."""
        return self.name.rstrip("/").rpartition("/")[2]

    @property
    def attrs(self) -> dict[str, Any]:
        """The attributes as JSON values (numpy scalars and arrays made plain)."""
        return {key: _plain(value) for key, value in self._group.attrs.items()}

    def members(self) -> Iterator[tuple[str, Any]]:
        """The direct members, sorted by name: subgroups wrapped, datasets as they are."""
        for name in sorted(self._group.keys()):
            yield name, as_hierarchy_node(self._group[name])

    def tree(self, level: int | None = None) -> Tree:
        """The hierarchy below this group, as :meth:`chunkflow.Group.tree` draws it."""
        return Tree(member_tree(self, level))

    def __repr__(self) -> str:
        return f"<ForeignGroup {self.name!r} of {type(self._group).__module__}>"


def _plain(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, (np.generic, np.ndarray)):
        return value.tolist()
    return value
