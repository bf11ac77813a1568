"""Opening the group xarray asked for, with or without consolidated metadata.

As xarray's zarr engine: ``consolidated=True`` requires consolidated metadata,
``False`` never reads it, ``None`` uses it when there is some and otherwise reads the
group's own documents with a ``RuntimeWarning`` (the same text as the zarr engine's:
opening without consolidated metadata costs a request per member on object stores).
A store that says it does not support consolidated metadata (a zarr-python store with
``supports_consolidated_metadata = False``) is read without it, silently. A store that
cannot list (an HTTP server answering 404 for folders), read without consolidated
metadata, raises :class:`~chunkflow.errors.UnlistableGroupError` (with
``consolidated=False`` too) instead of giving a dataset without variables.
``to_zarr(group=...)`` consolidates at the store's root, not in the group: a group is
read through the root's consolidated metadata when the root has some.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import TYPE_CHECKING

from chunkflow.api.hierarchy import open_group
from chunkflow.core.array import Array
from chunkflow.core.group import Group
from chunkflow.core.listing import check_listable
from chunkflow.errors import MetadataError, NodeNotFoundError
from chunkflow.storage import Store

if TYPE_CHECKING:
    from chunkflow.cache import CacheLike

__all__ = ["FALLBACK_WARNING", "caller_level", "open_group_for_xarray"]

FALLBACK_WARNING = (
    "Failed to open Zarr store with consolidated metadata, but successfully read with "
    "non-consolidated metadata. This is typically much slower for opening a dataset. To "
    "silence this warning, consider:\n"
    "1. Consolidating metadata in this existing store with "
    "chunkflow.consolidate_metadata() (or zarr.consolidate_metadata()).\n"
    "2. Explicitly setting consolidated=False, to avoid trying to read consolidate "
    "metadata, or\n"
    "3. Explicitly setting consolidated=True, to raise an error in this case instead of "
    "falling back to try reading non-consolidated metadata."
)


def open_group_for_xarray(store: Store, path: str, consolidated: bool | None,
                          zarr_format: int | None, cache: CacheLike,
                          supports_consolidated: bool = True) -> Group:
    """The group at ``path`` of ``store``, read as ``consolidated`` says (module notes).

    Examples
    --------
    >>> import chunkflow
    >>> from chunkflow.storage import MemoryStore
    >>> store = MemoryStore()
    >>> _ = chunkflow.open_group(store, mode="w").create_group("a")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     group = open_group_for_xarray(store, "a", None, None, None)
    >>> group.path, [str(w.message)[:48] for w in caught]
    ('a', ['Failed to open Zarr store with consolidated meta'])
    """
    if not supports_consolidated:
        consolidated = False
    if consolidated is not False:
        group = _through_consolidated(store, path, zarr_format, cache)
        if group is not None:
            return group
    # consolidated=True: this raises, saying the metadata is missing.
    group = open_group(store, mode="r", path=path or None, zarr_format=zarr_format,
                       use_consolidated=bool(consolidated), cache=cache)
    if consolidated is None:
        # Not "successfully read" from a store that cannot list: that raises, saying
        # how to consolidate (one listing of the group's folder).
        check_listable(group.store, group.path, group.zarr_format)
        warnings.warn(FALLBACK_WARNING, RuntimeWarning, stacklevel=caller_level())
    return group


def _through_consolidated(store: Store, path: str, zarr_format: int | None,
                          cache: CacheLike) -> Group | None:
    """The group read through the root's consolidated metadata or its own; ``None``
    when neither has any. A missing group raises (it does not exist)."""
    if path:
        try:
            root = open_group(store, mode="r", zarr_format=zarr_format,
                              use_consolidated=True, cache=cache)
        except (MetadataError, NodeNotFoundError):
            pass  # no consolidated root (or no root group, in v2): the group's own below
        else:
            node = root.get(path)
            if isinstance(node, Group):
                return node
            if isinstance(node, Array):
                raise MetadataError(f"{path!r} in {store!r} is an array, expected a group")
    try:
        return open_group(store, mode="r", path=path or None, zarr_format=zarr_format,
                          use_consolidated=True, cache=cache)
    except MetadataError:
        return None  # no consolidated metadata (or unreadable): the caller decides


def caller_level() -> int:
    """The ``stacklevel`` of the first frame outside chunkflow and xarray (the user's
    call), as xarray's zarr engine attributes its warning."""
    import xarray

    inside = tuple(os.path.dirname(module.__file__) + os.sep
                   for module in (sys.modules["chunkflow"], xarray)
                   if module.__file__ is not None)
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(inside):
        frame, level = frame.f_back, level + 1
    return level
