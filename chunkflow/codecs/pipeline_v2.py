"""Zarr v2 chunk pipeline: filters in order, then the compressor; decode in reverse.

``order`` is the byte layout of the items inside the stored chunk (``"C"`` or
``"F"``); the item bytes are those of the array ``dtype`` exactly as written in
``.zarray`` (``">i4"`` chunks hold big-endian integers).

Examples
--------
>>> import numpy as np
>>> p = v2_pipeline("<u2", (4, 4), "C", None,
...                 {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0})
>>> chunk = np.arange(16, dtype="<u2").reshape(4, 4)
>>> bool((p.decode(p.encode(chunk)) == chunk).all())
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from chunkflow.buffers import scratch_buffer
from chunkflow.codecs.bounded import limit_for
from chunkflow.codecs.stages import (
    BufferLike,
    BytesStage,
    as_u8,
    build_numcodec,
    copy_exact,
    detach,
    make_bytes_stage,
)
from chunkflow.errors import ChunkDecodeError, ChunkEncodeError, ShapeMismatchError, UnsupportedCodecError

__all__ = ["OBJECT_CODEC_IDS", "V2Pipeline", "v2_pipeline"]

#: Filters that turn an object array into something numcodecs can compress.
OBJECT_CODEC_IDS = frozenset(
    {"vlen-utf8", "vlen-bytes", "vlen-array", "json2", "msgpack2", "pickle", "categorize"}
)


class V2Pipeline:
    """Encode and decode the chunks of one v2 array (see :func:`v2_pipeline`)."""

    __slots__ = (
        "_compressor",
        "_fast",
        "_filter_ids",
        "_filters",
        "_is_object",
        "_nbytes",
        "_size",
        "chunk_shape",
        "dtype",
        "order",
    )

    def __init__(
        self,
        dtype: np.dtype[Any] | str,
        chunk_shape: Sequence[int],
        order: str,
        filters: Sequence[dict[str, Any]] | None,
        compressor: dict[str, Any] | None,
        *,
        allow_pickle: bool = False,
    ) -> None:
        self.dtype = np.dtype(dtype)
        self.chunk_shape = tuple(int(n) for n in chunk_shape)
        if order not in ("C", "F"):
            raise UnsupportedCodecError(f"v2 order must be 'C' or 'F', got {order!r}")
        self.order: Literal["C", "F"] = "F" if order == "F" else "C"  # checked by the metadata
        self._filters = tuple(build_numcodec(f, allow_pickle=allow_pickle) for f in filters or ())
        self._filter_ids = tuple(str(f["id"]) for f in filters or ())
        self._compressor: BytesStage | None = None
        if compressor is not None:
            self._compressor = make_bytes_stage(
                str(compressor.get("id")), compressor, allow_pickle=allow_pickle
            )
        self._is_object = self.dtype.hasobject
        if self._is_object and not OBJECT_CODEC_IDS.intersection(self._filter_ids):
            raise UnsupportedCodecError(
                f"an object array needs an object codec among its filters (one of "
                f"{sorted(OBJECT_CODEC_IDS)}), got filters {list(self._filter_ids)} and "
                f"compressor {compressor!r}"
            )
        self._size = math.prod(self.chunk_shape)
        self._nbytes = self._size * self.dtype.itemsize
        if self._compressor is not None:
            # Filters may widen items (astype, fixedscaleoffset to float64): up to 8x.
            widest = None if self._is_object else self.dtype.itemsize * (8 if self._filters else 1)
            self._compressor.limit = limit_for(self._size, widest)
        # Decompress straight into the caller's buffer when nothing sits between the
        # compressor and the items and the compressor announces its decoded size.
        self._fast = (
            not self._filters
            and not self._is_object
            and (self._compressor is None or self._compressor.sized)
        )

    def __repr__(self) -> str:
        return (
            f"V2Pipeline(dtype={self.dtype.str!r}, chunk_shape={self.chunk_shape}, "
            f"order={self.order!r}, filters={list(self._filter_ids)}, "
            f"compressor={self._compressor!r})"
        )

    # -- encode ---------------------------------------------------------------
    def encode(self, chunk: np.ndarray, *, detached: bool = True) -> bytes | memoryview:
        """Encode one chunk of exactly ``chunk_shape`` (any layout, castable dtype).

        ``detached=False`` lets the result be a view of ``chunk`` when no codec
        changes its bytes, for a caller that hands the bytes to a store before
        ``chunk`` can change (stores copy what they keep).

        Examples
        --------
        >>> p = v2_pipeline("<i4", (2, 2), "F", None, None)
        >>> bytes(p.encode(np.array([[1, 2], [3, 4]])))[:8].hex()
        '0100000003000000'
        """
        if chunk.shape != self.chunk_shape:
            raise ChunkEncodeError(
                f"chunk has shape {chunk.shape}, expected the chunk shape {self.chunk_shape}"
            )
        # One conversion at most: cast and lay out in the stored order together.
        if self._fast and self._compressor is not None and not _is_stored_layout(
            chunk, self.dtype, self.order
        ):
            # Compressors need contiguous input; a reused per-thread buffer avoids
            # page-faulting a fresh copy of every chunk view (the result is new bytes).
            stored_shape = self.chunk_shape if self.order == "C" else self.chunk_shape[::-1]
            scratch = scratch_buffer(stored_shape, self.dtype)
            np.copyto(scratch if self.order == "C" else scratch.T, chunk, casting="unsafe")
            chunk = scratch if self.order == "C" else scratch.T
        arr = np.asarray(chunk, dtype=self.dtype, order=self.order)
        # numcodecs compressors flatten contiguous arrays in memory order themselves;
        # filters and the raw-bytes case need the explicit stored-order flattening.
        buf: Any = arr if self._fast and self._compressor else arr.reshape(-1, order=self.order)
        for codec_id, codec in zip(self._filter_ids, self._filters):
            try:
                buf = codec.encode(buf)
            except Exception as err:
                raise ChunkEncodeError(f"filter {codec_id!r}: cannot encode chunk: {err}") from err
        if isinstance(buf, np.ndarray) and buf.dtype.hasobject:
            raise ChunkEncodeError("cannot store an object array: no filter encoded its items")
        if self._compressor is not None:
            buf = self._compressor.encode(buf)
        if not detached and not isinstance(buf, bytes):
            return as_u8(buf).data
        return detach(buf, chunk)

    # -- decode ---------------------------------------------------------------
    def decode(self, data: BufferLike) -> np.ndarray:
        """Decode stored bytes to a new writable chunk of ``chunk_shape`` and ``dtype``.

        Examples
        --------
        >>> p = v2_pipeline("<u1", (3,), "C", None, {"id": "zlib", "level": 1})
        >>> p.decode(p.encode(np.array([7, 8, 9], "u1"))).tolist()
        [7, 8, 9]
        """
        if self._fast:
            out = np.empty(self.chunk_shape, self.dtype, order=self.order)
            self._decode_flat(data, out if self.order == "C" else out.T)
            return out
        arr = self._decode_array(data)
        if not arr.flags.writeable or (
            not self._filters and np.may_share_memory(arr, as_u8(data))
        ):
            arr = arr.copy(order="K")
        return arr

    def decode_into(self, data: BufferLike, out: np.ndarray) -> None:
        """Decode stored bytes into `out`, a ``chunk_shape`` array (maybe a view).

        Decompresses straight into `out` when it is contiguous in the stored order,
        has the array's dtype and the pipeline has no filters; otherwise decodes and
        copies once.

        Examples
        --------
        >>> p = v2_pipeline("<f8", (2, 3), "C", None, {"id": "zstd", "level": 1})
        >>> big = np.zeros((4, 3))
        >>> p.decode_into(p.encode(np.ones((2, 3))), big[1:3])
        >>> big.sum()
        np.float64(6.0)
        """
        if out.shape != self.chunk_shape:
            raise ShapeMismatchError(f"out has shape {out.shape}, expected {self.chunk_shape}")
        if (
            self._fast
            and out.dtype == self.dtype
            and out.flags.writeable
            and (out.flags.c_contiguous if self.order == "C" else out.flags.f_contiguous)
        ):
            self._decode_flat(data, out if self.order == "C" else out.T)
            return
        if self._fast and out.dtype == self.dtype:
            stored_shape = self.chunk_shape if self.order == "C" else self.chunk_shape[::-1]
            scratch = scratch_buffer(stored_shape, self.dtype)
            self._decode_flat(data, scratch)
            np.copyto(out, scratch if self.order == "C" else scratch.T)
            return
        np.copyto(out, self._decode_array(data))

    @property
    def stored_as_is(self) -> bool:
        """Whether a stored chunk is its decoded bytes (no compressor nor filters)."""
        return self._compressor is None and not self._filters and not self._is_object

    def stored_view(self, out: np.ndarray) -> memoryview | None:
        """The bytes of `out` (a ``chunk_shape`` array) when stored chunks are exactly
        its bytes: no compressor nor filters, the array's dtype, `out` contiguous in
        the stored order and writable. Reading a stored chunk into them decodes it.

        Examples
        --------
        >>> p = v2_pipeline("<i4", (2, 2), "F", None, None)
        >>> out = np.empty((2, 2), "<i4", order="F")
        >>> p.stored_view(out)[:] = p.encode(np.array([[1, 2], [3, 4]]))
        >>> out.tolist(), p.stored_view(np.empty((2, 2), "<i4"))
        ([[1, 2], [3, 4]], None)
        """
        if self._compressor is not None or self._filters or self._is_object:
            return None
        contiguous = out.flags.c_contiguous if self.order == "C" else out.flags.f_contiguous
        if (out.shape != self.chunk_shape or out.dtype != self.dtype or not contiguous
                or not out.flags.writeable):
            return None
        stored = out if self.order == "C" else out.T
        return stored.reshape(-1).view(np.uint8).data

    def _decode_flat(self, data: BufferLike, out: np.ndarray) -> None:
        if self._compressor is None:
            copy_exact(data, out, "none (uncompressed)")
        else:
            self._compressor.decode_into(data, out)

    def _decode_array(self, data: BufferLike) -> np.ndarray:
        """Decode to a ``chunk_shape`` array laid out in the stored order (maybe a view)."""
        buf: Any = data if self._compressor is None else self._compressor.decode(data)
        for codec_id, codec in zip(reversed(self._filter_ids), reversed(self._filters)):
            try:
                buf = codec.decode(buf)
            except Exception as err:
                raise ChunkDecodeError(f"filter {codec_id!r}: cannot decode chunk: {err}") from err
        if self._is_object:
            arr = buf if isinstance(buf, np.ndarray) else None
            if arr is None or not arr.dtype.hasobject:
                raise ChunkDecodeError(
                    f"filters {list(self._filter_ids)} did not decode an object array"
                )
            arr = arr.reshape(-1)
            if arr.size != self._size:
                raise ChunkDecodeError(
                    f"filter {self._filter_ids[0]!r}: decoded {arr.size} items, "
                    f"expected {self._size} (chunk shape {self.chunk_shape})"
                )
        else:
            u8 = as_u8(buf)
            if u8.size != self._nbytes:
                last = self._filter_ids[0] if self._filters else getattr(self._compressor, "name", "none")
                raise ChunkDecodeError(
                    f"codec {last!r}: decoded {u8.size} bytes, expected {self._nbytes} "
                    f"(chunk shape {self.chunk_shape}, dtype {self.dtype.str})"
                )
            arr = u8.view(self.dtype)
        return arr.reshape(self.chunk_shape, order=self.order)


def v2_pipeline(
    dtype: np.dtype[Any] | str,
    chunk_shape: Sequence[int],
    order: str,
    filters: Sequence[dict[str, Any]] | None,
    compressor: dict[str, Any] | None,
    *,
    allow_pickle: bool = False,
) -> V2Pipeline:
    """Build the codec pipeline of a Zarr v2 array from its ``.zarray`` fields.

    Parameters
    ----------
    dtype : numpy.dtype or str
        The array dtype, byte order included (``">u2"`` stores big-endian items).
    chunk_shape : sequence of int
        The chunk shape.
    order : {"C", "F"}
        Layout of the items inside each stored chunk.
    filters : sequence of dict or None
        numcodecs configs, applied in order when encoding.
    compressor : dict or None
        numcodecs config of the compressor.
    allow_pickle : bool, optional
        Allow the ``pickle`` codec, which can run code when decoding.

    Returns
    -------
    V2Pipeline

    Raises
    ------
    UnsupportedCodecError
        Unknown codec id, invalid config, or an object dtype without object codec.
    UnsafeCodecError
        ``pickle`` without ``allow_pickle=True``.

    Examples
    --------
    >>> p = v2_pipeline("|O", (2,), "C", [{"id": "vlen-utf8"}], None)
    >>> p.decode(p.encode(np.array(["a", "bc"], dtype=object))).tolist()
    ['a', 'bc']
    """
    return V2Pipeline(dtype, chunk_shape, order, filters, compressor, allow_pickle=allow_pickle)


def _is_stored_layout(chunk: np.ndarray, dtype: np.dtype, order: str) -> bool:
    contiguous = chunk.flags.c_contiguous if order == "C" else chunk.flags.f_contiguous
    return contiguous and chunk.dtype == dtype
