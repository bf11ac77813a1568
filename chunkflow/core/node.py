"""What every node (array or group) has: a store, a path, names and attributes, and
the locked read-modify-write of its attributes."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from chunkflow.core.documents import ZARR_JSON, ZARRAY, ZGROUP, join_path, normalize_attributes
from chunkflow.errors import ReadOnlyError
from chunkflow.storage.factory import opened_by_chunkflow

if TYPE_CHECKING:
    from chunkflow.core.attrs import Attributes
    from chunkflow.storage import Store
    from chunkflow.sync import Synchronizer

__all__ = ["NodeProperties"]


class NodeProperties:
    """Mixin of :class:`~chunkflow.Array` and :class:`~chunkflow.Group`.

    Needs ``_store``, ``_path``, ``_attrs``, ``_kind`` (``"array"`` or ``"group"``),
    the properties ``zarr_format`` and ``read_only``, and three methods:
    ``_lock_options()`` (the synchronizer and its lock timeout),
    ``_current_attributes()`` (the attributes to change: re-read from the store when
    other writers may have changed them) and ``_store_attributes(attributes)``.
    """

    _store: Store
    _path: str
    _attrs: Attributes
    _kind: ClassVar[str]

    if TYPE_CHECKING:
        @property
        def zarr_format(self) -> int: ...

        @property
        def read_only(self) -> bool: ...

        def _lock_options(self) -> tuple[Synchronizer | None, float | None]: ...

        def _current_attributes(self) -> dict[str, Any]: ...

        def _store_attributes(self, attributes: dict[str, Any]) -> None: ...

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

    # -- changes ---------------------------------------------------------------------

    def _check_writable(self) -> None:
        """Refuse a change to a read-only node, before anything is written."""
        if self.read_only:
            raise ReadOnlyError(f"{self._kind} {self._path or '/'!r} in {self._store!r} is "
                                f"read-only: changes are refused")

    def _metadata_lock(self) -> contextlib.AbstractContextManager[Any]:
        """The node-level lock of attribute updates (and of an array's resize and append):
        the synchronizer's lock of the node's metadata document, if one is set."""
        synchronizer, timeout = self._lock_options()
        if synchronizer is None:
            return contextlib.nullcontext()
        v2_document = ZARRAY if self._kind == "array" else ZGROUP
        document = ZARR_JSON if self.zarr_format == 3 else v2_document
        return synchronizer.lock(join_path(self._path, document), timeout=timeout)

    def _persist_attributes(
        self, change: Callable[[dict[str, Any]], dict[str, Any]]
    ) -> dict[str, Any]:
        """Apply ``change`` to the stored attributes and write the result (under the
        node's lock, so concurrent updates of different keys from several processes
        all land); returns the new attributes. :class:`~chunkflow.core.attrs.Attributes`
        calls this for every change."""
        with self._metadata_lock():
            new = normalize_attributes(change(self._current_attributes()), self._path)
            self._store_attributes(new)
        return new

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
