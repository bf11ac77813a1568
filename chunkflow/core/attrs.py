"""User attributes of a node: a mutable mapping persisted as JSON on every change."""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

from chunkflow.core.documents import normalize_attributes
from chunkflow.errors import KeyNotFoundError, ReadOnlyError

__all__ = ["Attributes"]


class Attributes(MutableMapping[str, Any]):
    """The ``.attrs`` of an array or group.

    Every change is validated (JSON only) and persisted before it becomes visible;
    ``update`` persists many keys in one write.

    Parameters
    ----------
    initial : dict
        The attributes as read when the node was opened.
    persist : callable
        Takes a change (a function from the current attributes to new ones), writes
        its result to the store and returns it. The owner applies the change to the
        stored attributes under its lock, so concurrent updates of different keys
        from several processes all land.
    path : str
        The node's path, for error messages.
    read_only : bool
        Refuse every change.

    Examples
    --------
    >>> saved = []
    >>> def persist(change):
    ...     saved.append(change(saved[-1] if saved else {}))
    ...     return saved[-1]
    >>> attrs = Attributes({}, persist, "x", read_only=False)
    >>> attrs["unit"] = "nm"
    >>> attrs.update(scale=[1.5, 2.0], axes="yx")
    >>> dict(attrs), len(saved)
    ({'unit': 'nm', 'scale': [1.5, 2.0], 'axes': 'yx'}, 2)
    """

    def __init__(
        self,
        initial: dict[str, Any],
        persist: Callable[[Callable[[dict[str, Any]], dict[str, Any]]], dict[str, Any]],
        path: str,
        *,
        read_only: bool,
    ) -> None:
        self._data = dict(initial)
        self._persist = persist
        self._path = path
        self._read_only = read_only

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __setitem__(self, key: str, value: Any) -> None:
        self.update({key: value})

    def __delitem__(self, key: str) -> None:
        if key not in self._data:
            raise KeyNotFoundError(f"node {self._path or '/'!r} has no attribute {key!r}")
        self._apply(lambda current: {k: v for k, v in current.items() if k != key})

    def update(self, *args: Any, **kwargs: Any) -> None:
        """Set many attributes with a single write."""
        changes = dict(*args, **kwargs)
        normalize_attributes(changes, self._path)  # refuse non-JSON before any write
        self._apply(lambda current: {**current, **changes})

    def put(self, attributes: dict[str, Any]) -> None:
        """Replace all attributes with ``attributes`` in one write."""
        replacement = normalize_attributes(dict(attributes), self._path)
        self._apply(lambda current: replacement)

    def asdict(self) -> dict[str, Any]:
        """A plain copy of the attributes."""
        return dict(self._data)

    def refresh(self, attributes: dict[str, Any]) -> None:
        """Take ``attributes`` as the current ones (after the owner re-read them)."""
        self._data = dict(attributes)

    def _apply(self, change: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        if self._read_only:
            raise ReadOnlyError(f"node {self._path or '/'!r} is read-only: attributes cannot change")
        self._data = dict(self._persist(change))

    def __repr__(self) -> str:
        return f"Attributes({self._data!r})"
