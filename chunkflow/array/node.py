"""What every node (array or group) has: a store, a path, names and attributes."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chunkflow.array.attrs import Attributes
    from chunkflow.storage import Store

__all__ = ["NodeProperties"]


class NodeProperties:
    """Mixin of :class:`~chunkflow.Array` and :class:`~chunkflow.Group`.

    Needs ``_store``, ``_path`` and ``_attrs``.
    """

    _store: Store
    _path: str
    _attrs: Attributes

    @property
    def store(self) -> Store:
        """The store holding the node."""
        return self._store

    @property
    def path(self) -> str:
        """Path of the node inside the store (``""`` for the root)."""
        return self._path

    @property
    def name(self) -> str:
        """Absolute name, ``"/"`` for the root, ``"/a/b"`` below."""
        return "/" + self._path

    @property
    def basename(self) -> str:
        """Last component of :attr:`name` (``""`` for the root)."""
        return self._path.rpartition("/")[2]

    @property
    def attrs(self) -> Attributes:
        """User attributes, persisted as JSON on every change."""
        return self._attrs
