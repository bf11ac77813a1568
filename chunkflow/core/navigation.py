"""Walking a group: ``members(max_depth=)`` (zarr-python 3), ``items()``/``values()`` and
``visit``/``visititems`` (zarr-python 2, which zarr-python 3 dropped), ``info_complete()``.

Examples
--------
>>> import chunkflow
>>> root = chunkflow.group()
>>> _ = root.create_group("a").zeros("x", shape=(2,), dtype="u1")
>>> _ = root.zeros("b", shape=(2,), dtype="u1")
>>> [name for name, _ in root.members(max_depth=None)]
['a', 'b', 'a/x']
>>> root.visit(lambda path: print(path))
a
a/x
b
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from chunkflow.errors import InvalidArgumentError

__all__ = ["GroupNavigation"]


class GroupNavigation:
    """Mixin of :class:`~chunkflow.Group` over its ``_direct_members()``: the
    ``(name, node)`` pairs of its children, sorted by name."""

    def _direct_members(self) -> Iterator[tuple[str, Any]]:
        raise NotImplementedError  # provided by Group

    def members(self, max_depth: int | None = 0) -> tuple[tuple[str, Any], ...]:
        """``(path, node)`` of the members, paths relative to this group.

        As zarr-python 3: ``max_depth=0`` (default) gives the children, ``1`` their
        children too, ``None`` the whole hierarchy; shallower members come first, each
        level sorted by path. Members that cannot be opened are skipped with a warning
        (see :meth:`invalid_members`).

        Examples
        --------
        >>> import chunkflow
        >>> root = chunkflow.group()
        >>> _ = root.create_group("a").create_group("b").create_group("c")
        >>> [name for name, _ in root.members(max_depth=1)]
        ['a', 'a/b']
        """
        if max_depth is not None and (isinstance(max_depth, bool) or not isinstance(max_depth, int)
                                      or max_depth < 0):
            raise InvalidArgumentError(f"members(max_depth={max_depth!r}): expected None or an integer "
                                       ">= 0 (0: the children only)")
        found: list[tuple[str, Any]] = []
        level: list[tuple[str, Any]] = [("", self)]
        depth = 0
        while level and (max_depth is None or depth <= max_depth):
            below: list[tuple[str, Any]] = []
            for prefix, group in level:
                for name, node in group._direct_members():
                    path = f"{prefix}/{name}" if prefix else name
                    below.append((path, node))
            below.sort(key=lambda pair: pair[0])
            found += below
            level = [(path, node) for path, node in below if isinstance(node, GroupNavigation)]
            depth += 1
        return tuple(found)

    def items(self) -> Iterator[tuple[str, Any]]:
        """``(name, node)`` of the children, as a mapping's ``items()`` (zarr-python 2)."""
        yield from self._direct_members()

    def values(self) -> Iterator[Any]:
        """The child nodes, sorted by name, as a mapping's ``values()`` (zarr-python 2)."""
        for _, node in self._direct_members():
            yield node

    def visititems(self, func: Callable[[str, Any], Any]) -> Any:
        """Call ``func(path, node)`` on every node below this group, depth first in name
        order (paths relative to this group); stop at, and return, the first result that
        is not ``None``. zarr-python 2's ``visititems`` (zarr-python 3 has none).

        Examples
        --------
        >>> import chunkflow
        >>> root = chunkflow.group()
        >>> _ = root.create_group("a").zeros("x", shape=(3,), dtype="u1")
        >>> root.visititems(lambda path, node: path if hasattr(node, "shape") else None)
        'a/x'
        """
        return self._visit(func, "")

    def visit(self, func: Callable[[str], Any]) -> Any:
        """Call ``func(path)`` on every node below this group, as :meth:`visititems`."""
        return self._visit(lambda path, _: func(path), "")

    def _visit(self, func: Callable[[str, Any], Any], prefix: str) -> Any:
        for name, node in self._direct_members():
            path = f"{prefix}/{name}" if prefix else name
            result = func(path, node)
            if result is not None:
                return result
            if isinstance(node, GroupNavigation):
                result = node._visit(func, path)
                if result is not None:
                    return result
        return None

    def info_complete(self) -> Any:
        """The group's ``info`` report: chunkflow's already counts members (arrays and
        groups), which zarr-python 3 keeps for ``info_complete()``."""
        return self.info  # type: ignore[attr-defined]  # provided by Group

