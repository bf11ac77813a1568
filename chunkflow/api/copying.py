"""Copying arrays and groups: ``copy`` and ``copy_all`` (raw keys: :mod:`chunkflow.api.raw_copy`).

Every copy moves data a few chunks at a time, so its memory stays bounded by a few
chunks (or, for :func:`copy_store`, by a byte budget) whatever the size of the data.
Arrays are re-created through chunkflow's creation functions, which lets a copy
change the Zarr format (v2 <-> v3) and the store (folder -> zip, memory -> folder) at
once. Counts are returned as zarr-python 2 does: ``(n_copied, n_skipped,
n_bytes_copied)``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Literal, cast

from chunkflow.api.block_copy import DEFERRED_CARRIES, copy_array_resumable, resumable_here
from chunkflow.api.copy_log import CopyLog, LogTarget
from chunkflow.api.foreign import as_hierarchy_node
from chunkflow.api.unfinished import (
    Unfinished,
    carry_unfinished,
    check_copy_source,
    check_unfinished_argument,
    source_mark,
)
from chunkflow.config.renames import renamed_parameters
from chunkflow.core.array import Array
from chunkflow.core.documents import join_path, node_kind
from chunkflow.core.replacing import inspect_location, refuse_foreign
from chunkflow.errors import (
    ArgumentTypeError,
    ContainsArrayError,
    ContainsGroupError,
    InvalidArgumentError,
    UnsupportedCodecError,
)
from chunkflow.jobs import array_location, canonical, check_not_source, without_mark
from chunkflow.metadata import ArrayMetadataV2, ArrayMetadataV3
from chunkflow.storage import Store

if TYPE_CHECKING:
    from chunkflow.core.group import Group
    from chunkflow.engine.values import ChunkedSource
    from chunkflow.storage import StoreLike

__all__ = ["IfExists", "check_copy_arguments", "copy", "copy_all", "url_options"]

IfExists = Literal["raise", "replace", "skip"]
_IF_EXISTS = ("raise", "replace", "skip")
_MISSING = object()



@renamed_parameters(dest="out")
def copy(
    source: Array | Group | ChunkedSource,
    out: Group | StoreLike,
    name: str | None = None,
    *,
    shallow: bool = False,
    without_attrs: bool = False,
    if_exists: IfExists = "raise",
    zarr_format: int | None = None,
    storage_options: dict[str, Any] | None = None,
    resume: bool = False,
    job_name: str | None = None,
    log: LogTarget = None,
    unfinished: Unfinished = "raise",
    **create_kwargs: Any,
) -> tuple[int, int, int]:
    """Copy an array or a group (recursively) into the group ``out``.

    Parameters
    ----------
    source : Array or Group
        What to copy. Any array-like with ``shape``, ``dtype`` and slicing (an h5py
        dataset, a zarr-python array) is copied as an array too, and an h5py group or
        file as a group.
    out : Group, or a store / path / URL
        The destination group; anything else is opened as a group (created when
        missing) in ``zarr_format``, or in the source's format. (zarr-python calls it
        ``dest``; ``dest=`` still works in 0.2, with a ``FutureWarning``.)
    name : str, optional
        Name of the copy inside ``out`` (default: the source's basename).
    shallow : bool
        Copy a group's arrays but not its subgroups.
    without_attrs : bool
        Do not copy user attributes.
    if_exists : {"raise", "replace", "skip"}
        What to do when ``out`` already holds ``name``. ``"skip"`` on an existing
        group merges: the copy descends into it and skips the members that exist, so
        an interrupted copy can be resumed. ``"replace"`` needs a store that deletes
        (not a zip file).
    zarr_format : {2, 3}, optional
        Format of the copy. A hierarchy holds one format, so with a ``Group`` as
        ``out`` it must be that group's format (the default).
    storage_options : dict, optional
        fsspec options (credentials, ``endpoint_url``...) when ``out`` is a URL.
    resume : bool
        Copy arrays block by block, recording each finished block in the
        destination (see :mod:`chunkflow.api.block_copy`); an array an interrupted
        copy left unfinished is continued (only its missing blocks are copied)
        whatever ``if_exists`` says, and one another job is writing is refused
        (:class:`~chunkflow.errors.JobMismatchError`). Finished arrays follow
        ``if_exists``: pass ``if_exists="skip"`` to resume a whole tree.
    job_name : str, optional
        A name for the copy job (kept in the unfinished destination's mark).
    log : callable, file path or file-like, optional
        Where to write a line per node copied or skipped (``copy /foo/bar (100,)
        int64``) and a summary, as zarr-python 2 does.
    unfinished : {"raise", "copy"}
        What to do with a source array that is the output of an unfinished job (some
        of its blocks not written, reading as the fill value): ``"raise"`` (default)
        refuses it (:class:`~chunkflow.errors.UnfinishedSourceError`), before anything
        is created; ``"copy"`` copies it as it is and marks the copy unfinished too
        (the source's job mark and its records of the blocks done), so that
        ``chunkflow.open`` warns on the copy and ``chunkflow status`` counts the same
        blocks done.
    **create_kwargs
        Creation arguments overriding those taken from each source array
        (``chunks``, ``compressor``, ``codecs``, ``fill_value``...).

    Returns
    -------
    n_copied, n_skipped, n_bytes_copied : int
        Nodes copied and skipped, and bytes of (uncompressed) array data copied.

    Raises
    ------
    ContainsArrayError, ContainsGroupError
        ``if_exists="raise"`` and ``out`` already holds ``name``.
    UnfinishedSourceError
        ``unfinished="raise"`` and a source array is an unfinished job's output.

    Examples
    --------
    >>> import numpy as np
    >>> import chunkflow
    >>> from chunkflow.api import group
    >>> src = chunkflow.array(np.arange(10), chunks=4, zarr_format=2, attributes={"u": "m"})
    >>> dst = group(zarr_format=3)
    >>> copy(src, dst, "x")
    (1, 0, 80)
    >>> dst["x"].zarr_format, dst["x"].attrs["u"], int(dst["x"][9])
    (3, 'm', 9)
    """
    check_copy_arguments(if_exists, zarr_format)
    check_unfinished_argument(unfinished)
    source = as_hierarchy_node(source)
    _check_sources(source, unfinished, shallow, root=True)
    with CopyLog(log) as logger:
        opened = _as_group(out, zarr_format, source, storage_options=storage_options)
        with _closing_if_opened(out, opened) as group:
            counts = _copy_into(source, group, name, shallow=shallow,
                                without_attrs=without_attrs, if_exists=if_exists,
                                zarr_format=zarr_format, job=(resume, job_name),
                                log=logger, **create_kwargs)
        logger.summary(*counts)
    return counts


def _copy_into(source: Array | Group | ChunkedSource, dest: Group, name: str | None, *, shallow: bool,
               without_attrs: bool, if_exists: IfExists, zarr_format: int | None,
               job: tuple[bool, str | None], log: CopyLog,
               **create_kwargs: Any) -> tuple[int, int, int]:
    if zarr_format is not None and zarr_format != dest.zarr_format:
        raise InvalidArgumentError(
            f"zarr_format={zarr_format} differs from the destination group {dest.name!r}, which "
            f"is v{dest.zarr_format}: a hierarchy holds one format; pass a store (or a "
            f"group of format {zarr_format}) as out"
        )
    if name is None:
        # An array-like of another library (an h5py dataset) has only its full name.
        name = getattr(source, "basename", None) or \
            str(getattr(source, "name", "") or "").rstrip("/").rpartition("/")[2]
        if not name:
            raise InvalidArgumentError(
                f"copy of the root node {getattr(source, 'name', source)!r} needs name=; or "
                f"use copy_all to copy its members into {dest.name!r}"
            )
    # Whatever if_exists says, a copy replaces Zarr nodes only, never other files.
    _refuse_foreign(dest, name, "copy")
    return _copy_node(source, dest, name, shallow=shallow, without_attrs=without_attrs,
                      if_exists=if_exists, kwargs=create_kwargs, job=job, log=log)


@renamed_parameters(dest="out")
def copy_all(
    source: Group,
    out: Group | StoreLike,
    *,
    shallow: bool = False,
    without_attrs: bool = False,
    if_exists: IfExists = "raise",
    zarr_format: int | None = None,
    storage_options: dict[str, Any] | None = None,
    resume: bool = False,
    job_name: str | None = None,
    log: LogTarget = None,
    unfinished: Unfinished = "raise",
    **create_kwargs: Any,
) -> tuple[int, int, int]:
    """Copy every member of the group ``source`` into ``out`` (and its attributes).

    Parameters are those of :func:`copy`; ``out`` keeps its name.

    Examples
    --------
    >>> from chunkflow.api import group
    >>> src = group(attributes={"title": "demo"})
    >>> _ = src.zeros("a", shape=(4,), chunks=(2,))
    >>> _ = src.create_group("sub").ones("b", shape=(2, 2))
    >>> dst = group(zarr_format=2)
    >>> copy_all(src, dst)
    (3, 0, 64)
    >>> sorted(dst), dst.attrs["title"], dst["sub/b"][0, 0]
    (['a', 'sub'], 'demo', np.float64(1.0))
    """
    check_copy_arguments(if_exists, zarr_format)
    check_unfinished_argument(unfinished)
    source = as_hierarchy_node(source)
    if isinstance(source, Array) or not hasattr(source, "members"):
        raise ArgumentTypeError(f"copy_all copies the members of a group; got {type(source).__name__} "
                                f"{getattr(source, 'name', source)!r} (use chunkflow.copy for one array)")
    _check_sources(source, unfinished, shallow, root=True)
    attrs = {} if without_attrs else dict(source.attrs)
    # A group opened here is created with the attributes at once: a zip store cannot
    # rewrite its metadata document without growing.
    with CopyLog(log) as logger:
        opened = _as_group(out, zarr_format, source, attributes=attrs,
                           storage_options=storage_options)
        with _closing_if_opened(out, opened) as group:
            totals = [0, 0, 0]
            members = [(n, m) for n, m in source.members()
                       if not (shallow and not hasattr(m, "dtype"))]
            for member_name, _ in members:  # every refusal before anything is copied
                _refuse_foreign(group, member_name, "copy_all")
            for member_name, member in members:
                counts = _copy_into(member, group, member_name, shallow=shallow,
                                    without_attrs=without_attrs, if_exists=if_exists,
                                    zarr_format=zarr_format, job=(resume, job_name),
                                    log=logger, **create_kwargs)
                totals = [t + c for t, c in zip(totals, counts)]
            if any(group.attrs.get(key, _MISSING) != value for key, value in attrs.items()):
                group.attrs.update(attrs)
        logger.summary(*totals)
    return totals[0], totals[1], totals[2]


def _copy_node(source: Array | Group | ChunkedSource, dest: Group, name: str, *, shallow: bool,
               without_attrs: bool, if_exists: IfExists, kwargs: dict[str, Any],
               job: tuple[bool, str | None] = (False, None),
               log: CopyLog | None = None) -> tuple[int, int, int]:
    log = log or CopyLog()
    is_group = hasattr(source, "members") and not hasattr(source, "dtype")
    # Not a group: an array-like (a shape, a dtype, slicing).
    array_source = None if is_group else cast("ChunkedSource", source)
    described = str(getattr(source, "name", "") or "/" + name)
    if array_source is not None:
        described += f" {tuple(array_source.shape)} {array_source.dtype}"
    path = join_path(dest.path, name)
    if isinstance(getattr(source, "store", None), Store):
        # Replacing (or writing into) what is being copied would lose it before it is read.
        check_not_source("copy", canonical(dest.store.identity, path),
                         [(f"its source {getattr(source, 'path', '') or '/'!r}",
                           array_location(source))],
                         creates=True)
    existing = node_kind(dest.store, path)
    resume, job_name = job
    unfinished = resume and not is_group and existing == "array" and resumable_here(dest, name)
    if existing is not None and not unfinished:
        if if_exists == "raise":
            error = ContainsArrayError if existing == "array" else ContainsGroupError
            raise error(
                f"cannot copy {getattr(source, 'name', 'the source')!r} to {path or '/'!r} in "
                f"{dest.store!r}: a {existing} exists there; pass if_exists='replace' or 'skip'"
            )
        if if_exists == "skip" and not (is_group and existing == "group"):
            log(f"skip {described}")
            return 0, 1, 0
        if if_exists == "replace":
            # The node's keys only (whichever format: a v2 group may hold a v3 node).
            inspect_location(dest.store, path).delete(what="copy", cache=None)
            existing = None
    # A source's unfinished-job mark is not the copy's.
    attrs = {} if without_attrs else without_mark(dict(getattr(source, "attrs", None) or {}))
    if not (is_group and existing == "group"):
        log(f"copy {described}")
    if array_source is not None:  # every copy is a recorded job (see chunkflow.jobs)
        target = copy_array_resumable(array_source, dest, name,
                                      _array_kwargs(array_source, dest.zarr_format, kwargs),
                                      resume=resume, job_name=job_name, attributes=attrs,
                                      existing=unfinished)
        if source_mark(array_source) is not None:  # unfinished="copy": so is the copy
            deferred = DEFERRED_CARRIES.get()
            if deferred is None:
                carry_unfinished(array_source, target)
            else:  # compute=False: after the values are written (and their job finished)
                deferred.append((array_source, target))
        return 1, 0, int(target.nbytes)
    if existing == "group":  # if_exists="skip": merge into the group that is there
        target_group, copied = cast("Group", dest[name]), 0  # node_kind found a group
    else:
        target_group, copied = dest.create_group(name, attributes=attrs), 1
    skipped = n_bytes = 0
    for member_name, member in cast("Group", source).members():
        if shallow and not hasattr(member, "dtype"):
            continue
        counts = _copy_node(member, target_group, member_name, shallow=shallow,
                            without_attrs=without_attrs, if_exists=if_exists, kwargs=kwargs,
                            job=job, log=log)
        copied, skipped, n_bytes = copied + counts[0], skipped + counts[1], n_bytes + counts[2]
    return copied, skipped, n_bytes


def _check_sources(source: Any, unfinished: Unfinished, shallow: bool, *, root: bool) -> None:
    """Refuse (before anything is created) to copy an unfinished job's output, the
    source or any array below it, unless ``unfinished="copy"`` (no walk then)."""
    if unfinished == "copy":
        return
    if hasattr(source, "dtype"):
        check_copy_source(source, unfinished, repr(str(getattr(source, "name", "") or "/")))
        return
    if not hasattr(source, "members") or (shallow and not root):
        return
    for _, member in source.members():
        _check_sources(member, unfinished, shallow, root=False)


def _array_kwargs(source: ChunkedSource, zarr_format: int, overrides: dict[str, Any]) -> dict[str, Any]:
    """Creation arguments that reproduce ``source`` in ``zarr_format``.

    In the same format the codec documents are copied as they are. Across formats the
    pipeline is rebuilt by the creation functions from the source's numcodecs
    compressor, which every numcodecs codec can express in both formats; a codec with
    no counterpart falls back to the default compressor. Codec arguments in
    ``overrides`` replace the source's codecs as a whole (mixing both would be
    ambiguous).
    """
    kwargs: dict[str, Any] = {"shape": tuple(source.shape), "dtype": source.dtype}
    chunks = getattr(source, "chunks", None)
    if isinstance(chunks, tuple) and all(isinstance(c, int) for c in chunks):
        kwargs["chunks"] = chunks
    if isinstance(source, Array):
        meta = source.metadata
        kwargs.update(fill_value=source.fill_value, order=source.order)
        if isinstance(meta, ArrayMetadataV2) and zarr_format == 2:
            kwargs["dimension_separator"] = meta.dimension_separator
            codecs: dict[str, Any] = {"compressor": meta.compressor, "filters": meta.filters}
        elif isinstance(meta, ArrayMetadataV3) and zarr_format == 3:
            kwargs.update(chunk_key_encoding=meta.chunk_key_encoding,
                          dimension_names=meta.dimension_names)
            # The codec list already holds the order (as a transpose codec).
            codecs = {"codecs": list(meta.codecs), "order": "C"}
        else:
            codecs = {"compressor": _portable_compressor(source, zarr_format)}
        if not {"compressor", "filters", "codecs"} & overrides.keys():
            kwargs.update(codecs)
    kwargs.update(overrides)
    return kwargs


def _portable_compressor(source: Array, zarr_format: int) -> Any:
    from chunkflow.api.spec import DEFAULT
    from chunkflow.codecs.normalize import normalize_v2_compressor, to_v3_codec

    try:
        compressor = source.compressor
    except UnsupportedCodecError:
        return DEFAULT
    if compressor is None:
        return None
    try:  # probe the conversion now, so an unconvertible codec falls back to the default
        if zarr_format == 2:
            normalize_v2_compressor(compressor)
        else:
            to_v3_codec(compressor, source.dtype.itemsize)
    except (UnsupportedCodecError, ValueError):
        return DEFAULT
    return compressor


def check_copy_arguments(if_exists: str, zarr_format: object = None) -> None:
    # Checked before anything is opened or created: a refusal creates nothing.
    if if_exists not in _IF_EXISTS:
        raise InvalidArgumentError(f"if_exists must be one of {_IF_EXISTS}, got {if_exists!r}")
    if zarr_format not in (None, 2, 3):
        raise InvalidArgumentError(f"zarr_format must be 2, 3 or None (the source's), got {zarr_format!r}")


def url_options(
    location: Group | StoreLike, storage_options: dict[str, Any] | None
) -> dict[str, Any] | None:
    """``storage_options`` if ``location`` is a remote fsspec URL, else None (a local
    path, a store or a mapping takes no options; the other side of a copy may)."""
    remote = isinstance(location, str) and ("://" in location or "::" in location) \
        and not location.startswith(("file://", "zip::"))
    return storage_options if remote else None


def _refuse_foreign(dest: Group, name: str, what: str) -> None:
    """Refuse to copy to ``name`` in ``dest`` where it holds anything that is not Zarr
    or Zarr nodes no group there holds, where the arrays copied would go
    (:func:`~chunkflow.core.replacing.refuse_foreign`)."""
    if isinstance(dest.store, Store):
        refuse_foreign(dest.store, join_path(dest.path, name), what=what, array=True)


def _as_group(dest: Group | StoreLike, zarr_format: int | None, source: object,
              attributes: dict[str, Any] | None = None,
              storage_options: dict[str, Any] | None = None) -> Group:
    if hasattr(dest, "create_group") and hasattr(dest, "members"):
        return cast("Group", dest)  # an open group (chunkflow's or zarr-python's)
    from chunkflow.api.hierarchy import open_group

    fmt = zarr_format or getattr(source, "zarr_format", None) or 3
    return open_group(dest, mode="a", zarr_format=fmt, attributes=attributes or None,
                      storage_options=storage_options)


@contextlib.contextmanager
def _closing_if_opened(given: Group | StoreLike, group: Group) -> Iterator[Group]:
    """Yield ``group``; close its store afterwards if it was opened here from a path
    (a zip file is only valid once closed); stores and groups passed in stay open."""
    try:
        yield group
    finally:
        if isinstance(given, (str, os.PathLike)):
            group.store.close()
