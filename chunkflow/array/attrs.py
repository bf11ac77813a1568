"""User attributes of a node: a mutable mapping persisted as JSON on every change."""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import Any, Callable

from chunkflow.errors import ReadOnlyError

from chunkflow.array.nodes import normalize_attributes

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
        Writes a complete attribute dictionary to the store.
    path : str
        The node's path, for error messages.
    read_only : bool
        Refuse every change.

    Examples
    --------
    >>> saved = []
    >>> attrs = Attributes({}, saved.append, "x", read_only=False)
    >>> attrs["unit"] = "nm"
    >>> attrs.update(scale=[1.5, 2.0], axes="yx")
    >>> dict(attrs), len(saved)
    ({'unit': 'nm', 'scale': [1.5, 2.0], 'axes': 'yx'}, 2)
    """

    def __init__(
        self,
        initial: dict[str, Any],
        persist: Callable[[dict[str, Any]], None],
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
            raise KeyError(f"node {self._path or '/'!r} has no attribute {key!r}")
        new = dict(self._data)
        del new[key]
        self._replace(new)

    def update(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        """Set many attributes with a single write."""
        new = dict(self._data)
        new.update(*args, **kwargs)
        self._replace(new)

    def put(self, attributes: dict[str, Any]) -> None:
        """Replace all attributes with ``attributes`` in one write."""
        self._replace(dict(attributes))

    def asdict(self) -> dict[str, Any]:
        """A plain copy of the attributes."""
        return dict(self._data)

    def _replace(self, new: dict[str, Any]) -> None:
        if self._read_only:
            raise ReadOnlyError(f"node {self._path or '/'!r} is read-only: attributes cannot change")
        normalized = normalize_attributes(new, self._path)
        self._persist(normalized)
        self._data = normalized

    def __repr__(self) -> str:
        return f"Attributes({self._data!r})"
