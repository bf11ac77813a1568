"""What every node (array or group) has: a store, a path, names and attributes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from chunkflow.storage.factory import opened_by_chunkflow

if TYPE_CHECKING:
    from chunkflow.node.attrs import Attributes
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

    # -- lifecycle ---------------------------------------------------------------

    def close(self) -> None:
        """Close the store if chunkflow opened it for this node (a path or URL given);
        a store object the caller passed in stays open (it is the caller's to close).

        For a zip file this writes its central directory once no other node of the
        process uses it. Closing twice is harmless.

        Examples
        --------
        >>> import os, tempfile, chunkflow
        >>> path = os.path.join(tempfile.mkdtemp(), "a.zip")
        >>> with chunkflow.open(path, mode="w", shape=4, chunks=2, dtype="u1") as z:
        ...     z[:] = 7
        >>> with chunkflow.open(path, mode="r") as z:
        ...     z[:].tolist()
        [7, 7, 7, 7]
        """
        if opened_by_chunkflow(self._store):
            self._store.close()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
