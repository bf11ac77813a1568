"""Opening the node xarray asked for, with or without consolidated metadata.

As xarray's zarr engine: ``consolidated=True`` requires consolidated metadata,
``False`` never reads it, ``None`` uses it when there is some and otherwise reads the
group's own documents with a ``RuntimeWarning`` (the same text as the zarr engine's:
opening without consolidated metadata costs a request per member on object stores).
A store that cannot list (an HTTP server answering 404 for folders), read without
consolidated metadata, raises :class:`~chunkflow.errors.UnlistableGroupError` (with
``consolidated=False`` too) instead of giving a dataset without variables.
``to_zarr(group=...)`` consolidates at the store's root, not in the group: a group is
read through the root's consolidated metadata when the root has some.

Unlike the zarr engine, which refuses anything but a group (zarr-python 3.1.6:
``GroupNotFoundError`` for a v2 array, ``ContainsArrayError`` for a v3 one), the node
may be an array: a store holding one array (what :func:`chunkflow.map_chunks` writes),
or ``group=`` naming an array. It opens whatever ``consolidated`` says: one array's
metadata is one document, there is nothing to consolidate.

The fallback warning is left out where its advice cannot help
(:func:`warns_without_consolidated`, :func:`is_ome_zarr_group`):

- the store cannot hold consolidated metadata the user writes: a zarr-python store
  with ``supports_consolidated_metadata = False`` (read without it, as xarray does), a
  read-only store (a store object opened read-only, a folder the user cannot write),
  a zip file, an HTTP(S) URL, virtual references;
- the group is an OME-Zarr image, label image or ``labels`` group (what
  :func:`chunkflow.pyramid` writes): its metadata names its members, and OME-Zarr
  readers (ome-zarr-py, napari, ngff-zarr) do not use consolidated metadata. On a
  store that cannot list, such a group opens the members its metadata names.

Everywhere else (a writable folder, memory or object store holding a group, such as
``to_zarr(..., consolidated=False)`` writes) it warns as the zarr engine does.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Mapping, MutableMapping
from typing import TYPE_CHECKING, Any

from chunkflow.api.hierarchy import open_group
from chunkflow.api.opening import open_array
from chunkflow.core.array import Array
from chunkflow.core.group import Group
from chunkflow.core.listing import check_listable
from chunkflow.errors import ContainsArrayError, MetadataError, NodeNotFoundError
from chunkflow.storage import Store

if TYPE_CHECKING:
    from chunkflow.cache import CacheLike

__all__ = ["FALLBACK_WARNING", "caller_level", "is_ome_zarr_group", "open_node_for_xarray",
           "warns_without_consolidated"]

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


def open_node_for_xarray(store: Store, path: str, consolidated: bool | None,
                         zarr_format: int | None, cache: CacheLike,
                         supports_consolidated: bool = True,
                         warn: bool = True) -> Group | Array:
    """The group or array at ``path`` of ``store``, read as ``consolidated`` says
    (module notes); ``warn=False``: never the fallback warning (the store cannot hold
    consolidated metadata).

    Examples
    --------
    >>> import chunkflow
    >>> from chunkflow.storage import MemoryStore
    >>> store = MemoryStore()
    >>> _ = chunkflow.open_group(store, mode="w").create_group("a")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     group = open_node_for_xarray(store, "a", None, None, None)
    >>> group.path, [str(w.message)[:48] for w in caught]
    ('a', ['Failed to open Zarr store with consolidated meta'])
    >>> _ = chunkflow.open_group(store).create_array("a/v", shape=(2,), dtype="u1")
    >>> type(open_node_for_xarray(store, "a/v", None, None, None)).__name__
    'Array'
    """
    if not supports_consolidated:
        consolidated = False
    if consolidated is not False:
        node = _through_consolidated(store, path, zarr_format, cache)
        if node is not None:
            return node
    try:
        # consolidated=True: this raises, saying the metadata is missing.
        group = open_group(store, mode="r", path=path or None, zarr_format=zarr_format,
                           use_consolidated=bool(consolidated), cache=cache)
    except ContainsArrayError:
        return open_array(store, mode="r", path=path or None, cache=cache)
    if consolidated is None and not is_ome_zarr_group(group.attrs.asdict()):
        # Not "successfully read" from a store that cannot list: that raises, saying
        # how to consolidate (one listing of the group's folder). An OME-Zarr group's
        # metadata names its members (see chunkflow.xarray.ngff.listed_members).
        check_listable(group.store, group.path, group.zarr_format)
        if warn:
            warnings.warn(FALLBACK_WARNING, RuntimeWarning, stacklevel=caller_level())
    return group


def _through_consolidated(store: Store, path: str, zarr_format: int | None,
                          cache: CacheLike) -> Group | Array | None:
    """The node read through the root's consolidated metadata or the group's own;
    ``None`` when neither has any. A missing node raises (it does not exist)."""
    if path:
        try:
            root = open_group(store, mode="r", zarr_format=zarr_format,
                              use_consolidated=True, cache=cache)
        except (MetadataError, NodeNotFoundError, ContainsArrayError):
            pass  # no consolidated root (or no root group, in v2): the node's own below
        else:
            node = root.get(path)
            if isinstance(node, (Group, Array)):
                return node
    try:
        return open_group(store, mode="r", path=path or None, zarr_format=zarr_format,
                          use_consolidated=True, cache=cache)
    except ContainsArrayError:
        return open_array(store, mode="r", path=path or None, cache=cache)
    except MetadataError:
        return None  # no consolidated metadata (or unreadable): the caller decides


def is_ome_zarr_group(attributes: Mapping[str, Any]) -> bool:
    """Whether a group is an OME-Zarr image, label image or ``labels`` group (NGFF
    0.4 or 0.5).

    Examples
    --------
    >>> is_ome_zarr_group({"ome": {"version": "0.5", "labels": ["cells"]}})
    True
    >>> is_ome_zarr_group({"title": "climate"})
    False
    """
    ome = attributes.get("ome")
    holder = ome if isinstance(ome, Mapping) else attributes
    return any(key in holder for key in ("multiscales", "labels", "image-label"))


def warns_without_consolidated(source: object, store: Store) -> bool:
    """Whether the fallback warning's advice can help: ``store`` (made from
    ``source``, what the user passed) could hold consolidated metadata the user writes.

    Examples
    --------
    >>> from chunkflow.storage import MemoryStore
    >>> warns_without_consolidated(MemoryStore(), MemoryStore())
    True
    >>> warns_without_consolidated(MemoryStore(read_only=True), MemoryStore())
    False
    """
    if not getattr(source, "supports_consolidated_metadata", True):
        return False
    if not isinstance(source, str):
        # A store object the user opened read-only (zarr-python's StorePath: its store).
        inner = getattr(source, "store", None)
        if getattr(source, "read_only", False) is True or getattr(inner, "read_only",
                                                                  False) is True:
            return False
        if isinstance(source, Mapping) and not isinstance(source, MutableMapping):
            return False
    if getattr(store, "merges_ranges", False):  # virtual references: regenerated, not edited
        return False
    scheme, _, rest = store.identity.partition(":")
    if scheme in ("zip", "http", "https"):  # an archive, a web server: nothing is added
        return False
    if scheme == "file":  # a folder the user cannot write
        folder = rest.removeprefix("//")
        return not os.path.isdir(folder) or os.access(folder, os.W_OK)
    return True


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
