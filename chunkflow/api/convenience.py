"""zarr-python's convenience functions: ``save``, ``save_array``, ``save_group``, ``load``.

The copying functions (``copy``, ``copy_all``, ``copy_store``) live in
:mod:`chunkflow.api.copying` and are re-exported here, as zarr-python groups them.

Stores given as a path or URL are opened here and closed before returning (a zip
file is only valid once closed); stores given as objects stay open, owned by the
caller.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np

from chunkflow.api.copying import copy, copy_all
from chunkflow.api.creation import array as create_array_from
from chunkflow.api.foreign import as_hierarchy_node
from chunkflow.api.opening import open_array
from chunkflow.api.raw_copy import copy_store
from chunkflow.core.array import Array
from chunkflow.core.documents import node_kind, normalize_path, not_found_message
from chunkflow.errors import InvalidArgumentError, NodeNotFoundError
from chunkflow.storage import Store, make_store

if TYPE_CHECKING:
    from numpy.typing import ArrayLike
    from typing_extensions import Self  # typing.Self is Python 3.11+

    from chunkflow.core.group import Group
    from chunkflow.core.tree import Tree
    from chunkflow.storage import StoreLike

__all__ = [
    "LazyLoader",
    "copy",
    "copy_all",
    "copy_store",
    "load",
    "save",
    "save_array",
    "save_group",
]


def save_array(
    store: StoreLike,
    arr: ArrayLike,
    *,
    zarr_format: int | None = None,
    path: str | None = None,
    storage_options: dict[str, Any] | None = None,
    **create_kwargs: Any,
) -> None:
    """Save one array to ``store`` at ``path``, replacing what was there.

    Parameters
    ----------
    store : str, os.PathLike, Store, MutableMapping
        Where to save (a ``.zip`` path writes a zip file).
    arr : array-like
        A numpy array, a chunkflow or zarr array (copied chunk by chunk), a list...
    zarr_format : {2, 3}
        Format to write.
    path : str, optional
        Path of the array inside the store.
    storage_options : dict, optional
        fsspec options, for URLs.
    **create_kwargs
        Passed to :func:`chunkflow.array` (``chunks``, ``compressor``...).

    Examples
    --------
    >>> import numpy as np
    >>> from chunkflow.storage import MemoryStore
    >>> store = MemoryStore()
    >>> save_array(store, np.arange(6).reshape(2, 3), zarr_format=2, chunks=(1, 3))
    >>> load(store)
    array([[0, 1, 2],
           [3, 4, 5]])
    """
    with _opened(store, "a", storage_options) as resolved:
        node_path = normalize_path(path)
        create_array_from(arr, store=resolved, path=node_path, zarr_format=zarr_format,
                          overwrite=_holds_keys(resolved, node_path), **create_kwargs)


def save_group(
    store: StoreLike,
    *args: ArrayLike,
    zarr_format: int | None = None,
    path: str | None = None,
    storage_options: dict[str, Any] | None = None,
    **arrays: ArrayLike,
) -> None:
    """Save several arrays as members of a new group, replacing what was there.

    Positional arrays are named ``arr_0``, ``arr_1``... as in zarr-python (and numpy's
    ``savez``); keyword arrays keep their keyword.

    Examples
    --------
    >>> import numpy as np
    >>> from chunkflow.storage import MemoryStore
    >>> store = MemoryStore()
    >>> save_group(store, np.arange(3), np.ones(2), labels=np.array([7, 8]))
    >>> loaded = load(store)
    >>> loaded
    <LazyLoader: arr_0, arr_1, labels>
    >>> loaded["labels"]
    array([7, 8])
    """
    named = {f"arr_{i}": arr for i, arr in enumerate(args)}
    duplicated = sorted(set(named) & set(arrays))
    if duplicated:
        raise InvalidArgumentError(f"save_group: {duplicated} given both by position and by keyword")
    named.update(arrays)
    if not named:
        raise InvalidArgumentError("save_group needs at least one array to save")
    from chunkflow.api.hierarchy import group

    with _opened(store, "a", storage_options) as resolved:
        node_path = normalize_path(path)
        root = group(resolved, overwrite=_holds_keys(resolved, node_path), path=node_path,
                     zarr_format=zarr_format)
        for name, arr in named.items():
            root.array(name, arr)


def save(
    store: StoreLike,
    *args: ArrayLike,
    zarr_format: int | None = None,
    path: str | None = None,
    storage_options: dict[str, Any] | None = None,
    **kwargs: Any,
) -> None:
    """Save one array (``save_array``) or several as a group (``save_group``).

    Examples
    --------
    >>> import numpy as np
    >>> from chunkflow.storage import MemoryStore
    >>> store = MemoryStore()
    >>> save(store, np.zeros(2), path="one")
    >>> save(store, a=np.zeros(2), b=np.ones(1), path="many")
    >>> load(store, path="one"), sorted(load(store, path="many"))
    (array([0., 0.]), ['a', 'b'])
    """
    if not args and not kwargs:
        raise InvalidArgumentError("save needs at least one array to save")
    if len(args) == 1 and not kwargs:
        save_array(store, args[0], zarr_format=zarr_format, path=path,
                   storage_options=storage_options)
    else:
        save_group(store, *args, zarr_format=zarr_format, path=path,
                   storage_options=storage_options, **kwargs)


def load(
    store: StoreLike,
    *,
    path: str | None = None,
    zarr_format: int | None = None,
    storage_options: dict[str, Any] | None = None,
) -> np.ndarray | LazyLoader:
    """Load an array into memory, or a group as a lazy mapping of its members.

    Parameters
    ----------
    store : str, os.PathLike, Store, MutableMapping
        Where to load from.
    path : str, optional
        Path of the node inside the store.
    zarr_format : {2, 3}, optional
        Insist on this format (default: whichever is there).
    storage_options : dict, optional
        fsspec options, for URLs.

    Returns
    -------
    numpy.ndarray or LazyLoader
        For a group, a read-only mapping that reads each array only when it is
        accessed (subgroups give nested ``LazyLoader`` objects).

    Raises
    ------
    NodeNotFoundError
        Nothing (of ``zarr_format``, when given) is stored at ``path``.

    Examples
    --------
    >>> from chunkflow.storage import MemoryStore
    >>> load(MemoryStore(), path="missing")  # doctest: +ELLIPSIS, +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    chunkflow.errors.NodeNotFoundError: path 'missing' in MemoryStore(...) does not exist: nothing is stored
    there (expected an array or a group)
    """
    owned = not isinstance(store, Store)
    resolved = make_store(store, mode="r", storage_options=storage_options)
    try:
        node_path = normalize_path(path)
        kind = node_kind(resolved, node_path)
        if kind is None:
            raise NodeNotFoundError(not_found_message(
                resolved, node_path, f"nothing to load at path {node_path or '/'!r} in "
                                     f"{resolved!r}: expected an array or a group",
                "an array or a group"))
        if kind == "array":
            arr = open_array(resolved, mode="r", path=node_path)
            _check_format(arr, zarr_format)
            return arr[...]
        from chunkflow.api.hierarchy import open_group

        grp = open_group(resolved, mode="r", path=node_path)
        _check_format(grp, zarr_format)
    except BaseException:
        if owned:
            resolved.close()
        raise
    return LazyLoader(grp, store=resolved if owned else None)


class LazyLoader(Mapping[str, Any]):
    """A read-only mapping of a group's members that reads arrays on access.

    Like zarr-python's ``LazyLoader``: ``loader[name]`` reads the whole array
    ``name`` into a numpy array (each access reads again); a subgroup gives another
    ``LazyLoader``. Use it as a context manager (or call :meth:`close`) to release a
    store that :func:`load` opened from a path.

    Examples
    --------
    >>> import numpy as np
    >>> from chunkflow.api import group
    >>> g = group()
    >>> _ = g.array("x", np.arange(3))
    >>> loader = LazyLoader(g)
    >>> list(loader), loader["x"]
    (['x'], array([0, 1, 2]))
    """

    def __init__(self, group: Group, *, store: Store | None = None) -> None:
        self._group = group
        self._owned_store = store

    def __getitem__(self, name: str) -> np.ndarray | LazyLoader:
        member = self._group[name]
        if isinstance(member, Array):
            return member[...]
        return LazyLoader(member)

    def __iter__(self) -> Iterator[str]:
        return iter(self._group)

    def __len__(self) -> int:
        return len(self._group)

    def __contains__(self, name: object) -> bool:
        return name in self._group

    def close(self) -> None:
        """Close the store that :func:`load` opened (nothing when the caller owns it)."""
        if self._owned_store is not None:
            self._owned_store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<LazyLoader: {', '.join(self)}>"


@contextmanager
def _opened(store: StoreLike, mode: str, storage_options: dict[str, Any] | None) -> Iterator[Store]:
    # A store made here from a path or URL is closed here: a zip file is only
    # complete (central directory written) once closed.
    resolved = make_store(store, mode=mode, storage_options=storage_options)
    try:
        yield resolved
    finally:
        if resolved is not store:
            resolved.close()


def _holds_keys(store: Store, path: str) -> bool:
    # Replace only when something is there: overwriting deletes keys, which a zip
    # store cannot do even when there is nothing to delete below a fresh path.
    return next(iter(store.list_prefix(path)), None) is not None


def _check_format(node: Array | Group, zarr_format: int | None) -> None:
    if zarr_format is not None and node.zarr_format != zarr_format:
        kind = "array" if isinstance(node, Array) else "group"
        raise NodeNotFoundError(
            f"no Zarr v{zarr_format} node at path {node.path or '/'!r} in {node.store!r}: "
            f"found a v{node.zarr_format} {kind}"
        )


def create_group(
    store: StoreLike = None,
    *,
    path: str | None = None,
    overwrite: bool = False,
    attributes: dict[str, Any] | None = None,
    zarr_format: int | None = None,
    storage_options: dict[str, Any] | None = None,
) -> Group:
    """A new group, with zarr-python 3's keywords (``overwrite=``, ``attributes=``).

    Examples
    --------
    >>> import chunkflow
    >>> g = chunkflow.create_group(attributes={"site": "A"})
    >>> dict(g.attrs)
    {'site': 'A'}
    """
    from chunkflow.api.hierarchy import group, open_node
    from chunkflow.errors import ContainsArrayError, ContainsGroupError

    if not overwrite and store is not None:
        try:
            existing = open_node(store, mode="r", path=path, storage_options=storage_options)
        except FileNotFoundError:
            existing = None
        if existing is not None:
            kind = ContainsArrayError if hasattr(existing, "shape") else ContainsGroupError
            raise kind(f"a node already exists at {store!r} (path {path or '/'!r}); pass "
                       "overwrite=True to replace it, or chunkflow.open_group to open it")
    return group(store, path=path, overwrite=overwrite, attributes=attributes,
                 zarr_format=zarr_format, storage_options=storage_options)


def tree(node: Group, level: int | None = None) -> Tree:
    """The hierarchy below a group (as zarr-python 3's ``zarr.tree``); an h5py group
    or file is drawn the same way.

    Examples
    --------
    >>> import chunkflow
    >>> g = chunkflow.create_group()
    >>> _ = g.create_array("a", shape=(2,), chunks=(2,), dtype="u1")
    >>> print(chunkflow.tree(g))
    /
    └── a (2,) uint8
    """
    return as_hierarchy_node(node).tree(level=level)
