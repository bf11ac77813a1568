"""One-line text reprs and notebook HTML tables for arrays and groups.

Both show where the node lives (the store URL and the path inside it); arrays
stored in shards show the shard shape and the inner chunk shape, because
``chunks`` alone hides the unit a reader decodes.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from chunkflow.jobs import job_status

__all__ = ["array_html", "array_repr", "describe_codecs", "group_html", "group_repr"]

# Stores whose listing is a local directory walk or a dict scan: the stored byte
# count is cheap there, while on a remote store it means listing every chunk.
_CHEAP_LISTING = ("file://", "memory:", "zip:")

# Levels of a group's hierarchy shown in its HTML repr: every level costs one
# metadata read per member.
HTML_TREE_LEVELS = 2


class _Store(Protocol):
    @property
    def identity(self) -> str: ...
    @property
    def listing_is_cheap(self) -> bool: ...


class _Node(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def store(self) -> _Store: ...
    @property
    def zarr_format(self) -> int: ...


class _ArrayNode(_Node, Protocol):
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def chunks(self) -> tuple[int, ...]: ...
    @property
    def shards(self) -> tuple[int, ...] | None: ...
    @property
    def dtype(self) -> Any: ...
    @property
    def codecs(self) -> tuple[dict[str, Any], ...]: ...
    @property
    def fill_value(self) -> Any: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def nbytes_stored(self) -> int: ...


class _GroupNode(_Node, Protocol):
    def members(self) -> Iterable[tuple[str, Any]]: ...
    def tree(self, level: int | None = None) -> Any: ...


def store_url(node: _Node) -> str:
    """The URL of the store holding ``node`` (its identity, e.g. ``file:///data/a.zarr``).

    Examples
    --------
    >>> import chunkflow
    >>> store_url(chunkflow.create((2,), store="memory://reprs-doc"))
    'memory:///reprs-doc'
    """
    return str(node.store.identity)


def describe_codecs(docs: Sequence[dict[str, Any]]) -> str:
    """Codec documents (v2 ``{"id": ...}`` or v3 ``{"name": ...}``) as one line.

    Examples
    --------
    >>> describe_codecs([{"id": "zstd", "level": 3}])
    'zstd(level=3)'
    >>> describe_codecs([])
    'none'
    """
    parts = []
    for doc in docs:
        if "id" in doc:
            config = {k: v for k, v in doc.items() if k != "id"}
            parts.append(f"{doc['id']}({_kwargs(config)})")
        else:
            parts.append(f"{doc.get('name')}({_kwargs(doc.get('configuration') or {})})")
    return ", ".join(parts) or "none"


def _kwargs(config: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in config.items())


def _chunk_fields(array: _ArrayNode) -> str:
    shards = array.shards
    if shards is None:
        return f"chunks={array.chunks}"
    return f"shards={shards} inner_chunks={array.chunks}"


def array_repr(array: _ArrayNode) -> str:
    """``<chunkflow.Array /path shape=... chunks=... dtype=... zarr_format=N store='URL'>``.

    Sharded arrays show ``shards=... inner_chunks=...`` instead of ``chunks=...``.

    Examples
    --------
    >>> import chunkflow
    >>> chunkflow.create((4, 4), chunks=(2, 2), dtype="u1", store="memory://reprs-a")
    <chunkflow.Array / shape=(4, 4) chunks=(2, 2) dtype=uint8 zarr_format=3 store='memory:///reprs-a'>
    """
    return (
        f"<chunkflow.Array {array.name} shape={array.shape} {_chunk_fields(array)} "
        f"dtype={array.dtype} zarr_format={array.zarr_format} store={store_url(array)!r}"
        f"{_job_field(array)}>"
    )


def _job_field(array: _ArrayNode) -> str:
    """`` (job incomplete: 37 of 100 blocks done)`` for an unfinished job's output; the
    count needs a listing, made only where listing is cheap (``?`` elsewhere)."""
    status = job_status(array, count=array.store.listing_is_cheap)  # type: ignore[arg-type]  # an Array, seen through _ArrayNode
    return "" if status is None else f" ({status.describe()})"


def group_repr(group: _Node) -> str:
    """``<chunkflow.Group /path zarr_format=N store='URL'>``.

    Examples
    --------
    >>> import chunkflow
    >>> chunkflow.group(store="memory://reprs-g")
    <chunkflow.Group / zarr_format=3 store='memory:///reprs-g'>
    """
    return f"<chunkflow.Group {group.name} zarr_format={group.zarr_format} store={store_url(group)!r}>"


def _table(title: str, rows: Sequence[tuple[str, str]]) -> str:
    cells = "".join(
        f"<tr><th style='text-align:left'>{html.escape(label)}</th>"
        f"<td style='text-align:left'>{html.escape(value)}</td></tr>"
        for label, value in rows
    )
    caption = f"<caption style='text-align:left'><b>{html.escape(title)}</b></caption>"
    return f"<table class='chunkflow-repr'>{caption}{cells}</table>"


def array_rows(array: _ArrayNode) -> list[tuple[str, str]]:
    """The rows of an array's HTML table: location, layout, codecs, sizes."""
    rows = [("Path", array.name), ("Store", store_url(array)), ("Shape", str(array.shape)),
            ("Data type", str(array.dtype))]
    if array.shards is None:
        rows.append(("Chunks", str(array.chunks)))
    else:
        rows += [("Shards", str(array.shards)), ("Inner chunks", str(array.chunks))]
    rows += [("Codecs", describe_codecs(array.codecs)), ("Fill value", _fill(array.fill_value)),
             ("Zarr format", str(array.zarr_format)), ("Bytes", _size(array.nbytes))]
    if store_url(array).startswith(_CHEAP_LISTING):
        rows.append(("Bytes stored", _size(array.nbytes_stored)))
    return rows


def array_html(array: _ArrayNode) -> str:
    """An HTML table for notebooks (``Array._repr_html_``).

    Examples
    --------
    >>> import chunkflow
    >>> a = chunkflow.create((4,), chunks=(2,), dtype="u1", store="memory://reprs-h")
    >>> "<th style='text-align:left'>Chunks</th>" in array_html(a)
    True
    """
    return _table("chunkflow.Array", array_rows(array))


def group_html(group: _GroupNode) -> str:
    """An HTML table (path, store, format) and the member tree for notebooks.

    Shows at most :data:`HTML_TREE_LEVELS` levels of members.

    Examples
    --------
    >>> import chunkflow
    >>> g = chunkflow.group(store="memory://reprs-gh")
    >>> _ = g.create_group("raw")
    >>> "raw" in group_html(g)
    True
    """
    rows = [("Path", group.name), ("Store", store_url(group)),
            ("Zarr format", str(group.zarr_format)),
            ("Members", str(sum(1 for _ in group.members())))]
    tree = group.tree(level=HTML_TREE_LEVELS)._repr_html_()
    return f"<div class='chunkflow-group'>{_table('chunkflow.Group', rows)}{tree}</div>"


def _fill(value: Any) -> str:
    """A fill value as Python shows it (``7``, not ``np.int32(7)``)."""
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "ndim", None) == 0:
        value = item()
    return repr(value)


def _size(nbytes: int) -> str:
    """Bytes, with a binary unit above 1 KiB (``"2048 (2.0 KiB)"``)."""
    if nbytes < 1024:
        return f"{nbytes} B"
    units = ("KiB", "MiB", "GiB", "TiB", "PiB")
    size, step = nbytes / 1024, 0
    while size >= 1024 and step < len(units) - 1:  # stop at the first unit below 1024
        size, step = size / 1024, step + 1
    unit = units[step]
    return f"{nbytes} ({size:.1f} {unit})"
