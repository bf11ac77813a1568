"""Creating arrays: ``create``, ``zeros``, ``array``... (opening them:
:mod:`chunkflow.api.opening`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from chunkflow.api.dtype_spec import items_dtype
from chunkflow.api.spec import DEFAULT, build_metadata, resolve_zarr_format
from chunkflow.codecs.v3_codecs import BloscCodec
from chunkflow.core.array import Array
from chunkflow.core.documents import array_documents, normalize_path
from chunkflow.core.replacing import writable_store, write_node
from chunkflow.engine.options import ArrayOptions
from chunkflow.engine.values import ChunkedSource, convert_dtype, is_chunked_source
from chunkflow.errors import InvalidArgumentError
from chunkflow.metadata import ArrayMetadataV2
from chunkflow.storage import Store

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, DTypeLike

    from chunkflow.cache import CacheLike
    from chunkflow.codecs import CodecLike
    from chunkflow.grid import ChunksLike, KeyEncodingLike, ShapeLike
    from chunkflow.metadata import FillValueLike
    from chunkflow.storage import StoreLike
    from chunkflow.sync import SynchronizerLike

__all__ = [
    "array",
    "create",
    "empty",
    "empty_like",
    "full",
    "full_like",
    "like_kwargs",
    "ones",
    "ones_like",
    "zeros",
    "zeros_like",
]



def create(
    shape: ShapeLike,
    *,
    chunks: ChunksLike = True,
    dtype: DTypeLike = "f8",
    compressor: CodecLike | None = DEFAULT,
    fill_value: FillValueLike = DEFAULT,
    order: str = "C",
    store: StoreLike = None,
    overwrite: bool = False,
    path: str | None = None,
    filters: CodecLike | Sequence[CodecLike] | None = None,
    codecs: CodecLike | Sequence[CodecLike] | None = None,
    dimension_separator: str | None = None,
    chunk_key_encoding: KeyEncodingLike = None,
    dimension_names: Sequence[str | None] | None = None,
    zarr_format: int | None = None,
    write_empty_chunks: bool = False,
    read_only: bool = False,
    storage_options: dict[str, Any] | None = None,
    attributes: dict[str, Any] | None = None,
    allow_pickle: bool = False,
    synchronizer: SynchronizerLike = None,
    cache: CacheLike = None,
    lock_timeout: float | None = None,
    recheck_cached_data: bool | str | float | None = None,
    object_codec: Any = None,
) -> Array:
    """Create a new array.

    Parameters
    ----------
    shape : int or tuple of int
        The array's shape.
    chunks : int, tuple, True or None
        Chunk shape; ``True`` (default) picks about 1 MiB and up; ``None`` or ``-1``
        for a dimension means the whole dimension.
    dtype : dtype-like
        numpy dtype; ``str`` stores variable-length UTF-8 strings, ``bytes``
        variable-length bytes, ``"array:i8"`` ragged int64 arrays (v2), and zarr-python 3
        data type objects are understood (see :mod:`chunkflow.api.dtype_spec`).
    compressor : numcodecs codec, dict or None
        Default: blosc lz4 with byte shuffle. ``None`` stores raw bytes.
    fill_value : scalar or None
        Value of missing chunks (default zero). v2 only: ``None`` writes ``null``.
    order : {"C", "F"}
        Memory layout inside each chunk (v3 writes a ``transpose`` codec for ``"F"``).
    store : str, os.PathLike, Store, MutableMapping or None
        Where to create the array (default: a new in-memory store).
    overwrite : bool
        Replace a Zarr node at ``path`` (else raise): its metadata documents and
        chunks are deleted, and those of the nodes below it. A location holding
        anything else (files, folders, objects that no Zarr node there owns) is
        refused either way (:class:`~chunkflow.errors.ForeignContentError`).
    path : str, optional
        The array's path inside the store.
    filters, codecs : list, optional
        v2 filters (numcodecs); v3 codec documents or codec objects.
    dimension_separator, chunk_key_encoding : optional
        How chunk keys are spelled (v2 ``"."``/``"/"``; v3 ``"default"``/``"v2"``).
    dimension_names : sequence of str, optional
        v3 only.
    zarr_format : {2, 3}, optional
        Format to write (default: the ``chunkflow.array.zarr-format`` setting, 3).
    write_empty_chunks : bool
        Store chunks equal to ``fill_value`` everywhere (default: delete them).
    read_only : bool
        Return a read-only handle to the new array.
    storage_options : dict, optional
        Passed to fsspec for URLs.
    attributes : dict, optional
        Initial user attributes.
    allow_pickle : bool
        Allow the pickle codec.
    synchronizer : Synchronizer, "thread" or None
        Locks chunks so that writes from several threads, processes or dask workers
        whose regions overlap never lose data (see :mod:`chunkflow.sync`).
    cache : ChunkCache, bool or None
        Decoded-chunk cache: ``None`` the process-wide one, ``False`` none.
    lock_timeout : float, optional
        Seconds to wait for a lock before raising (nothing is written then).
    recheck_cached_data : "open", bool, float or None
        How stale cached chunks may be when read (see :mod:`chunkflow.config`).
    object_codec : numcodecs codec, optional
        zarr-python 2's codec of ``dtype=object`` items (``numcodecs.VLenUTF8()``,
        ``VLenBytes()``, ``JSON()``, ``MsgPack()``, ``Pickle()``, ``VLenArray(...)``,
        ``Categorize(...)``): the first filter in v2; v3 takes the two ``vlen-*`` ones.

    Examples
    --------
    >>> z = create((100, 100), chunks=(10, 10), dtype="i4", zarr_format=2)
    >>> z.shape, z.chunks, z.zarr_format
    ((100, 100), (10, 10), 2)
    """
    options = ArrayOptions.from_kwargs(
        read_only=read_only, write_empty_chunks=write_empty_chunks, allow_pickle=allow_pickle,
        synchronizer=synchronizer, cache=cache, lock_timeout=lock_timeout,
        recheck_cached_data=recheck_cached_data,
    )
    node_path = normalize_path(path)
    resolved = writable_store(store, node_path, overwrite=overwrite,
                              storage_options=storage_options)
    try:
        return _create_in(resolved, node_path, overwrite, options, attributes, dict(
            shape=shape, chunks=chunks, dtype=dtype, fill_value=fill_value, order=order,
            compressor=compressor, filters=filters, codecs=codecs,
            dimension_separator=dimension_separator, chunk_key_encoding=chunk_key_encoding,
            dimension_names=dimension_names, zarr_format=resolve_zarr_format(zarr_format),
            attributes=attributes, path=node_path, object_codec=object_codec))
    except BaseException:
        if isinstance(store, (str, os.PathLike)):
            resolved.close()  # opened here from a path (a zip file is valid once closed)
        raise


def _create_in(resolved: Store, node_path: str, overwrite: bool, options: ArrayOptions,
               attributes: dict[str, Any] | None, spec: dict[str, Any]) -> Array:
    metadata = build_metadata(**spec)
    # Everything that can be refused is, before anything is deleted or written: the
    # documents, the codec pipeline (building the array), what is there, the ancestors.
    documents, stored = array_documents(node_path, metadata, dict(attributes or {}))
    array = Array._from_metadata(resolved, node_path, stored, dict(attributes or {}), options)
    write_node(resolved, node_path, documents, zarr_format=stored.zarr_format,
               overwrite=overwrite, what="create", array=True)
    if overwrite:
        array.forget_cached()  # chunks of the array this one replaced
    return array


def zeros(shape: ShapeLike, **kwargs: Any) -> Array:
    """Create an array of zeros (nothing is stored until written).

    Examples
    --------
    >>> zeros((2, 2), dtype="i2")[:]
    array([[0, 0],
           [0, 0]], dtype=int16)
    """
    return create(shape, fill_value=0, **kwargs)


def ones(shape: ShapeLike, **kwargs: Any) -> Array:
    """Create an array of ones (``fill_value=1``).

    Examples
    --------
    >>> ones(3, dtype="u1")[:]
    array([1, 1, 1], dtype=uint8)
    """
    return create(shape, fill_value=1, **kwargs)


def empty(shape: ShapeLike, **kwargs: Any) -> Array:
    """Create an array whose content is left to be written (reads as the fill value)."""
    return create(shape, **kwargs)


def full(shape: ShapeLike, fill_value: FillValueLike, **kwargs: Any) -> Array:
    """Create an array filled with ``fill_value``.

    Examples
    --------
    >>> full(2, fill_value=np.nan)[:]
    array([nan, nan])
    """
    return create(shape, fill_value=fill_value, **kwargs)


def array(data: ArrayLike, **kwargs: Any) -> Array:
    """Create an array holding ``data`` (a numpy array, a chunkflow array...).

    Examples
    --------
    >>> z = array(np.arange(10), chunks=4)
    >>> z.nchunks, int(z[9])
    (3, 9)
    """
    source: np.ndarray | ChunkedSource = (
        data if is_chunked_source(data) else _as_numpy(data, kwargs.get("dtype"), kwargs.get("path")))
    kwargs.setdefault("dtype", source.dtype)
    if kwargs.get("object_codec") is None:
        kwargs["dtype"] = items_dtype(source, kwargs["dtype"])
    if getattr(source, "chunks", None) is not None and "chunks" not in kwargs:
        # A chunkflow source lends its stored-object shape (its shards, if sharded).
        chunks = source.write_chunks if isinstance(source, Array) else getattr(source, "chunks", None)
        if isinstance(chunks, tuple) and all(isinstance(c, (int, np.integer)) for c in chunks):
            kwargs["chunks"] = chunks
    z = create(source.shape, **kwargs)
    if z.read_only:
        raise InvalidArgumentError("array(data, read_only=True) cannot write the data")
    z[...] = source
    return z


def _as_numpy(data: ArrayLike, dtype: DTypeLike | None, path: str | None) -> np.ndarray:
    """``data`` as numpy, refusing Python ints that overflow an integer ``dtype``.

    Converted before the array is created, so ``array([300], dtype="u1")`` leaves
    nothing behind, and raises ``OverflowError`` like ``np.array`` does.
    """
    if isinstance(data, np.ndarray) or dtype is None:
        return np.asarray(data)
    try:
        target = np.dtype(dtype)
    except TypeError:
        return np.asarray(data)  # a dtype only create() understands; it will say so
    if target.kind not in "iu":
        return np.asarray(data)
    return convert_dtype(data, target, path or "")


def like_kwargs(a: ChunkedSource, **kwargs: Any) -> dict[str, Any]:
    """Creation arguments copied from ``a`` (a chunkflow Array or any array-like), with
    ``kwargs`` overriding them: what the ``*_like`` functions pass to :func:`create`.

    Examples
    --------
    >>> import numpy as np
    >>> like_kwargs(np.zeros((2, 3), dtype="i2"), fill_value=1)
    {'shape': (2, 3), 'dtype': dtype('int16'), 'fill_value': 1}
    """
    like: dict[str, Any] = {"shape": tuple(a.shape), "dtype": a.dtype}
    if isinstance(a, Array):
        meta = a.metadata
        like.update(chunks=a.write_chunks, zarr_format=a.zarr_format, fill_value=a.fill_value)
        if isinstance(meta, ArrayMetadataV2):
            like.update(compressor=meta.compressor, filters=meta.filters, order=meta.order,
                        dimension_separator=meta.dimension_separator)
        else:
            like.update(codecs=list(meta.codecs), chunk_key_encoding=meta.chunk_key_encoding,
                        dimension_names=meta.dimension_names)
    else:
        chunks = getattr(a, "chunks", None)
        if isinstance(chunks, tuple) and all(isinstance(c, (int, np.integer)) for c in chunks):
            like["chunks"] = chunks
    if "dtype" in kwargs and "fill_value" in like and "fill_value" not in kwargs:
        like["fill_value"] = retyped_fill(like["fill_value"], np.dtype(a.dtype),
                                          np.dtype(kwargs["dtype"]))
        if like["fill_value"] is None:
            del like["fill_value"]  # the new dtype's default
    if "dtype" in kwargs and "codecs" in like and "codecs" not in kwargs:
        like["codecs"] = retyped_codecs(like["codecs"], np.dtype(a.dtype), np.dtype(kwargs["dtype"]))
    if kwargs.get("zarr_format", like.get("zarr_format")) != like.get("zarr_format"):
        # Codec documents of one format do not fit the other: let the defaults apply.
        for key in ("compressor", "filters", "codecs", "chunk_key_encoding",
                    "dimension_separator", "dimension_names"):
            like.pop(key, None)
    like.update(kwargs)
    return like


def retyped_fill(fill: Any, old: np.dtype, new: np.dtype) -> Any:
    """``fill`` (a fill value of ``old`` items) as one of ``new`` items when the cast
    keeps its value (0.0 is False, 7 is 7.0, NaN stays NaN), else ``None``: a float
    source's 0.5 is no fill value for a boolean output.

    Examples
    --------
    >>> retyped_fill(0.0, np.dtype("f8"), np.dtype(bool)), retyped_fill(0.5, np.dtype("f8"), np.dtype("u1"))
    (np.False_, None)
    """
    if fill is None or old == new:
        return fill
    try:
        with np.errstate(all="ignore"):
            value = np.array(fill, dtype=old)
            cast = value.astype(new)
            back = cast.astype(old)
    except (TypeError, ValueError, OverflowError):
        return None
    same = bool(back == value) or (value.dtype.kind in "fc" and bool(np.isnan(value))
                                   and cast.dtype.kind in "fc")
    return cast[()] if same else None


def retyped_codecs(codecs: Sequence[Any], old: np.dtype, new: np.dtype) -> list[Any]:
    """Zarr v3 ``codecs`` of an array of ``old`` items, for one of ``new`` items: a
    blosc codec that shuffled ``old``'s item size shuffles ``new``'s (a float32 output
    with a uint16 source's ``typesize=2`` would read back right but hardly compress).

    Examples
    --------
    >>> blosc = {"name": "blosc", "configuration": {"cname": "lz4", "typesize": 2}}
    >>> retyped_codecs([blosc], np.dtype("u2"), np.dtype("f4"))[0]["configuration"]
    {'cname': 'lz4', 'typesize': 4}
    """
    retyped = []
    for codec in codecs:
        if isinstance(codec, BloscCodec) and codec.typesize == old.itemsize:
            codec = dataclasses.replace(codec, typesize=new.itemsize)
        elif (isinstance(codec, dict) and codec.get("name") == "blosc"
              and (codec.get("configuration") or {}).get("typesize") == old.itemsize):
            codec = {**codec, "configuration": {**codec["configuration"],
                                                "typesize": new.itemsize}}
        retyped.append(codec)
    return retyped


def zeros_like(a: ChunkedSource, **kwargs: Any) -> Array:
    """An array of zeros shaped, chunked and encoded like ``a``."""
    return create(**like_kwargs(a, **kwargs, fill_value=0))


def ones_like(a: ChunkedSource, **kwargs: Any) -> Array:
    """An array of ones shaped, chunked and encoded like ``a``."""
    return create(**like_kwargs(a, **kwargs, fill_value=1))


def empty_like(a: ChunkedSource, **kwargs: Any) -> Array:
    """An empty array shaped, chunked and encoded like ``a``."""
    return create(**like_kwargs(a, **kwargs))


def full_like(a: ChunkedSource, fill_value: FillValueLike, **kwargs: Any) -> Array:
    """An array of ``fill_value`` shaped, chunked and encoded like ``a``.

    Examples
    --------
    >>> full_like(np.zeros((2, 3)), 7.5)[0]
    array([7.5, 7.5, 7.5])
    """
    return create(**like_kwargs(a, **kwargs, fill_value=fill_value))
