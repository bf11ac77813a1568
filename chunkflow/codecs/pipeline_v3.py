"""Zarr v3 chunk pipeline: array->array*, one array->bytes, bytes->bytes*.

Encoding runs the codecs forward, decoding in reverse. Shapes and dtypes are
resolved once per pipeline (transpose permutes the shape, ``numcodecs.astype``
changes the dtype, ``numcodecs.packbits`` packs to ``uint8``...), so per chunk only
the numcodecs calls and a few attribute reads remain.

Examples
--------
>>> import numpy as np
>>> p = v3_pipeline("uint16", (4, 4), [
...     {"name": "transpose", "configuration": {"order": [1, 0]}},
...     {"name": "bytes", "configuration": {"endian": "big"}},
...     {"name": "zstd", "configuration": {"level": 1, "checksum": False}},
...     {"name": "crc32c"}])
>>> chunk = np.arange(16, dtype="uint16").reshape(4, 4)
>>> bool((p.decode(p.encode(chunk)) == chunk).all())
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from chunkflow.buffers import scratch_buffer
from chunkflow.codecs.array_stages import (
    ArrayFilterStage,
    ObjectBytesStage,
    RawBytesStage,
    Spec,
    TransposeStage,
    has_endianness,
)
from chunkflow.codecs.blosc_blocks import blocks_frame, region_bytes
from chunkflow.codecs.bounded import limit_for
from chunkflow.codecs.registry import V3Codec, codec_from_json
from chunkflow.codecs.sharding import ShardingCodec, ShardingStage
from chunkflow.codecs.stages import (
    BloscStage,
    BufferLike,
    BytesStage,
    as_u8,
    copy_exact,
    detach,
    make_bytes_stage,
)
from chunkflow.codecs.v3_codecs import ARRAY_TO_ARRAY, ARRAY_TO_BYTES, BloscCodec, BytesCodec, TransposeCodec
from chunkflow.errors import ChunkEncodeError, ShapeMismatchError, UnsupportedCodecError

__all__ = ["V3Pipeline", "split_codecs", "v3_pipeline"]

def split_codecs(codecs: Sequence[V3Codec]) -> tuple[list[V3Codec], V3Codec, list[V3Codec]]:
    """Split codecs into (array->array, array->bytes, bytes->bytes), checking the order.

    Examples
    --------
    >>> from chunkflow.codecs.v3_codecs import Crc32cCodec
    >>> split_codecs([Crc32cCodec(), BytesCodec()])  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    chunkflow.errors.UnsupportedCodecError: bytes->bytes codec 'crc32c' comes before the array->bytes codec;
    expected array->array*, one array->bytes, bytes->bytes*
    """
    expected = "expected array->array*, one array->bytes, bytes->bytes*"
    a2a: list[V3Codec] = []
    a2b: V3Codec | None = None
    b2b: list[V3Codec] = []
    for codec in codecs:
        if codec.kind == ARRAY_TO_ARRAY:
            if a2b is not None:
                raise UnsupportedCodecError(
                    f"array->array codec {codec.name!r} comes after the array->bytes codec "
                    f"{a2b.name!r}; {expected}"
                )
            a2a.append(codec)
        elif codec.kind == ARRAY_TO_BYTES:
            if a2b is not None:
                raise UnsupportedCodecError(
                    f"two array->bytes codecs {a2b.name!r} and {codec.name!r}; {expected}"
                )
            a2b = codec
        elif a2b is None:
            raise UnsupportedCodecError(
                f"bytes->bytes codec {codec.name!r} comes before the array->bytes codec; {expected}"
            )
        else:
            b2b.append(codec)
    if a2b is None:
        raise UnsupportedCodecError(f"no array->bytes codec (such as 'bytes') in the codecs; {expected}")
    return a2a, a2b, b2b


def _bytes_stage(codec: V3Codec, a2b_dtype: np.dtype, allow_pickle: bool) -> BytesStage:
    config = codec.numcodecs_config()
    typesize = None
    if isinstance(codec, BloscCodec):
        # A missing typesize (tensorstore omits it for noshuffle) means the item size.
        typesize = codec.typesize or (1 if a2b_dtype.hasobject else a2b_dtype.itemsize)
    return make_bytes_stage(codec.name, config, typesize=typesize, allow_pickle=allow_pickle)


class V3Pipeline:
    """Encode and decode the chunks of one v3 array (see :func:`v3_pipeline`)."""

    def __init__(
        self,
        dtype: np.dtype[Any] | str,
        chunk_shape: Sequence[int],
        codecs: Sequence[dict[str, Any] | str | V3Codec],
        *,
        allow_pickle: bool = False,
        fill_value: Any = None,
    ) -> None:
        self.dtype = np.dtype(dtype)
        self.chunk_shape = tuple(int(n) for n in chunk_shape)
        # Documents, bare names (the spec's short form) or codec objects.
        parsed = [codec_from_json(c) if isinstance(c, (dict, str)) else c for c in codecs]
        a2a, a2b, b2b = split_codecs(parsed)
        self.codecs = tuple(parsed)
        spec: Spec = (self.chunk_shape, self.dtype)
        self._a2a: list[Any] = []
        perm: tuple[int, ...] | None = tuple(range(len(self.chunk_shape)))
        for codec in a2a:
            if isinstance(codec, TransposeCodec):
                step = codec.permutation(len(spec[0]))
                self._a2a.append(TransposeStage(step))
                spec = (tuple(spec[0][i] for i in step), spec[1])
                perm = None if perm is None else tuple(perm[i] for i in step)
            else:
                stage = ArrayFilterStage(codec, spec, allow_pickle)  # type: ignore[arg-type]  # split_codecs: every a2a codec but transpose is a filter
                self._a2a.append(stage)
                spec, perm = stage.out_spec, None
        if isinstance(a2b, BytesCodec):
            self._a2b: Any = RawBytesStage(a2b, spec)
        elif isinstance(a2b, ShardingCodec):
            def make_pipeline(dtype: np.dtype, shape: Sequence[int], codecs: Sequence[Any]) -> V3Pipeline:
                return V3Pipeline(dtype, shape, codecs, allow_pickle=allow_pickle,
                                  fill_value=fill_value)
            self._a2b = ShardingStage(a2b, spec, fill_value, make_pipeline)
        else:
            self._a2b = ObjectBytesStage(a2b, spec, allow_pickle)
        self._b2b = tuple(_bytes_stage(c, spec[1], allow_pickle) for c in b2b)
        self._limit_stages(spec)
        self._b2b_reversed = self._b2b[::-1]
        # The serializer hands over shaped items; flatten to bytes only where a codec
        # would otherwise take the itemsize as a parameter (zarr-python passes bytes).
        self._flatten = bool(self._b2b) and self._b2b[0].itemsize_sensitive
        self._setup_fast_path(perm)

    def _limit_stages(self, spec: Any) -> None:
        """Bound what each bytes->bytes stage may decode to (see codecs.bounded)."""
        shape, dtype = spec
        items = math.prod(shape)
        if isinstance(self._a2b, RawBytesStage):
            encoded = limit_for(items, dtype.itemsize)
        elif isinstance(self._a2b, ShardingStage):
            # Inner chunks stored raw at worst, plus the index of 16 bytes per chunk.
            encoded = limit_for(items, dtype.itemsize) * 2 + 16 * items
        else:  # variable-length items
            encoded = limit_for(items, None)
        for stage in self._b2b:
            # Compressed bytes around compressed bytes: a little headroom for headers.
            stage.limit = encoded + max(4096, encoded // 8)

    def _setup_fast_path(self, perm: tuple[int, ...] | None) -> None:
        # Fast decode: only transposes before raw bytes, and the innermost compressor
        # (if any) announces its decoded size, so it may write straight into `out`.
        self._fast = (
            perm is not None
            and isinstance(self._a2b, RawBytesStage)
            and (not self._b2b or self._b2b[0].sized)
        )
        self._perm = None if perm is None or perm == tuple(sorted(perm)) else perm
        self._inverse = None if self._perm is None else tuple(int(i) for i in np.argsort(self._perm))
        self._outer = self._b2b_reversed[:-1]
        self._inner: BytesStage | None = self._b2b[0] if self._b2b else None
        # Blosc over the chunk's bytes as they are (no transpose, no other codec):
        # a region can be decoded by blocks (decode_region_into).
        self._blosc_blocks = bool(self._fast and self._perm is None and len(self._b2b) == 1
                                  and isinstance(self._inner, BloscStage))
        if self._fast:
            stored = self._a2b.stored_dtype
            self._stored_dtype = stored
            self._swapped = stored.newbyteorder() if has_endianness(stored) else None

    @property
    def shard_stage(self) -> ShardingStage | None:
        """The sharding stage when ``sharding_indexed`` is the only codec: then parts of
        a shard can be read by byte ranges (no codec transforms the shard as a whole)."""
        if isinstance(self._a2b, ShardingStage) and not self._a2a and not self._b2b:
            return self._a2b
        return None

    def __repr__(self) -> str:
        names = [c.name for c in self.codecs]
        return f"V3Pipeline(dtype={self.dtype}, chunk_shape={self.chunk_shape}, codecs={names})"

    def encode(self, chunk: np.ndarray, *, detached: bool = True) -> bytes | memoryview:
        """Encode one chunk of exactly ``chunk_shape``.

        ``detached=False`` lets the result be a view of ``chunk`` when no codec
        changes its bytes (uncompressed, in the stored layout), for a caller that hands
        the bytes to a store before ``chunk`` can change (stores copy what they keep).

        Examples
        --------
        >>> p = v3_pipeline("int16", (2,), [{"name": "bytes", "configuration": {"endian": "big"}}])
        >>> bytes(p.encode(np.array([1, 2], "int16"))).hex()
        '00010002'
        """
        if chunk.shape != self.chunk_shape:
            raise ChunkEncodeError(
                f"chunk has shape {chunk.shape}, expected the chunk shape {self.chunk_shape}"
            )
        arr = self._staged(chunk) if self._fast and self._inner is not None else chunk
        for stage in self._a2a:
            arr = stage.encode(arr)
        buf = self._a2b.encode(arr)
        if self._flatten:
            buf = as_u8(buf)
        for bstage in self._b2b:
            buf = bstage.encode(buf)
        return detach(buf, chunk) if detached else _as_bytes(buf)

    def decode(self, data: BufferLike) -> np.ndarray:
        """Decode stored bytes to a new writable chunk of ``chunk_shape`` and ``dtype``.

        Examples
        --------
        >>> p = v3_pipeline(object, (2,), [{"name": "vlen-utf8", "configuration": {}}])
        >>> p.decode(p.encode(np.array(["x", "yz"], dtype=object))).tolist()
        ['x', 'yz']
        """
        if self._fast:
            if self._perm is None:
                out = np.empty(self.chunk_shape, self.dtype)
            else:  # allocate in the stored layout so decode_into hits the fast path
                stored_shape = tuple(self.chunk_shape[i] for i in self._perm)
                out = np.empty(stored_shape, self.dtype).transpose(self._inverse)
            self.decode_into(data, out)
            return out
        arr = self._decode_array(data)
        if arr.dtype != self.dtype or not arr.flags.writeable or np.may_share_memory(arr, as_u8(data)):
            arr = np.array(arr, dtype=self.dtype)
        return arr

    def decode_into(self, data: BufferLike, out: np.ndarray) -> None:
        """Decode stored bytes into `out`, a ``chunk_shape`` array (maybe a view).

        Decompresses straight into `out` when its memory is contiguous in the stored
        layout and its dtype is the stored one (or its byte-swapped twin, swapped in
        place afterwards); otherwise decodes and copies once.

        Examples
        --------
        >>> p = v3_pipeline("float32", (3,), [{"name": "bytes", "configuration": {"endian": "little"}},
        ...                                   {"name": "blosc", "configuration": {"cname": "lz4",
        ...                                    "clevel": 5, "shuffle": "shuffle", "typesize": 4}}])
        >>> out = np.zeros(3, "float32")
        >>> p.decode_into(p.encode(np.array([1.5, 2.5, 3.5], "float32")), out)
        >>> out.tolist()
        [1.5, 2.5, 3.5]
        """
        if out.shape != self.chunk_shape:
            raise ShapeMismatchError(f"out has shape {out.shape}, expected {self.chunk_shape}")
        if self._fast and out.flags.writeable:
            swap = out.dtype != self._stored_dtype
            if not swap or out.dtype == self._swapped:
                target = out if self._perm is None else out.transpose(self._perm)
                if target.flags.c_contiguous:
                    self._decode_flat(data, target)
                    if swap:
                        target.byteswap(inplace=True)
                    return
        if self._fast:
            stored_shape = self.chunk_shape
            if self._perm is not None:
                stored_shape = tuple(self.chunk_shape[i] for i in self._perm)
            scratch = scratch_buffer(stored_shape, self._stored_dtype)
            self._decode_flat(data, scratch)
            np.copyto(out, scratch if self._perm is None else scratch.transpose(self._inverse))
            return
        np.copyto(out, self._decode_array(data))

    def decode_region_into(self, data: BufferLike, out: np.ndarray,
                           selection: tuple[Any, ...]) -> None:
        """Decode into ``out`` (as :meth:`decode_into`) at least the elements that
        ``selection`` reads: with blosc over the chunk's bytes in C order, only the
        blosc blocks holding them are decoded (see :mod:`chunkflow.codecs.blosc_blocks`),
        and the rest of ``out`` is left as it was. Anything else decodes it whole.

        Examples
        --------
        >>> p = v3_pipeline("<u2", (256, 256), [{"name": "bytes", "configuration": {"endian":
        ...     "little"}}, {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5,
        ...     "shuffle": "shuffle", "typesize": 2, "blocksize": 16384}}])
        >>> data = p.encode(np.arange(256 * 256, dtype="<u2").reshape(256, 256))
        >>> out = np.zeros((256, 256), "<u2")
        >>> p.decode_region_into(data, out, (slice(200, 202), slice(0, 256)))
        >>> int(out[200, 3]), int(out[0, 3])  # the blocks of row 0 were not decoded
        (51203, 0)
        """
        if self._blosc_blocks and out.dtype == self._stored_dtype and out.flags.c_contiguous \
                and out.flags.writeable and out.shape == self.chunk_shape:
            region = region_bytes(selection, self.chunk_shape, out.dtype.itemsize)
            cut = None
            if region is not None and isinstance(data, bytes | bytearray | memoryview):
                cut = blocks_frame(data, *region)
            if cut is not None and self._inner is not None:
                frame, start, stop = cut
                self._inner.decode_into(frame, out.reshape(-1).view(np.uint8)[start:stop])
                return
        self.decode_into(data, out)

    @property
    def stored_as_is(self) -> bool:
        """Whether a stored chunk is its decoded bytes (only the ``bytes`` codec, in
        the array's dtype and byte order, no transpose)."""
        return (self._fast and not self._b2b and self._perm is None
                and self._stored_dtype == self.dtype)

    def stored_view(self, out: np.ndarray) -> memoryview | None:
        """The bytes of `out` (a ``chunk_shape`` array) when stored chunks are exactly
        its bytes: only the ``bytes`` codec in `out`'s byte order, `out` C-contiguous
        and writable. Reading a stored chunk into them decodes it, with no copy.

        Examples
        --------
        >>> p = v3_pipeline("<u2", (2, 2), [{"name": "bytes", "configuration": {"endian": "little"}}])
        >>> out = np.empty((2, 2), "<u2")
        >>> p.stored_view(out)[:] = p.encode(np.array([[1, 2], [3, 4]], "u2"))
        >>> out.tolist(), p.stored_view(out.T), p.stored_view(out.astype(">u2"))
        ([[1, 2], [3, 4]], None, None)
        """
        if not self._fast or self._b2b or self._perm is not None:
            return None
        if (out.shape != self.chunk_shape or out.dtype != self._stored_dtype
                or not out.flags.c_contiguous or not out.flags.writeable):
            return None
        return out.reshape(-1).view(np.uint8).data

    def _staged(self, chunk: np.ndarray) -> np.ndarray:
        """`chunk`, copied into this thread's scratch buffer if not already laid out
        as stored (a view into a larger array, another byte order): compressors need
        contiguous input, and a reused buffer avoids page-faulting a fresh copy."""
        stored = chunk if self._perm is None else chunk.transpose(self._perm)
        if stored.flags.c_contiguous and stored.dtype == self._stored_dtype:
            return chunk
        scratch = scratch_buffer(stored.shape, self._stored_dtype)
        np.copyto(scratch, stored, casting="unsafe")
        return scratch if self._perm is None else scratch.transpose(self._inverse)

    def _decode_flat(self, data: BufferLike, out: np.ndarray) -> None:
        buf = data
        for stage in self._outer:
            buf = stage.decode(buf)
        if self._inner is None:
            copy_exact(buf, out, "bytes")
        else:
            self._inner.decode_into(buf, out)

    def _decode_array(self, data: BufferLike) -> np.ndarray:
        buf = data
        for stage in self._b2b_reversed:
            buf = stage.decode(buf)
        arr = self._a2b.decode(buf)
        for astage in reversed(self._a2a):
            arr = astage.decode(arr)
        return arr


def _as_bytes(buf: BufferLike) -> bytes | memoryview:
    return buf if isinstance(buf, bytes) else as_u8(buf).data


def v3_pipeline(
    dtype: np.dtype[Any] | str | type,
    chunk_shape: Sequence[int],
    codecs: Sequence[dict[str, Any] | str | V3Codec],
    *,
    allow_pickle: bool = False,
    fill_value: Any = None,
) -> V3Pipeline:
    """Build the codec pipeline of a Zarr v3 array from its ``codecs`` documents.

    Parameters
    ----------
    dtype : numpy.dtype or str
        The array's in-memory dtype (object for ``string`` arrays).
    chunk_shape : sequence of int
        The regular grid's chunk shape.
    codecs : sequence of dict or codec objects
        The ``codecs`` of ``zarr.json`` (or :mod:`chunkflow.codecs` codec objects).
    allow_pickle : bool, optional
        Allow ``numcodecs.pickle``, which can run code when decoding.
    fill_value : numpy scalar, optional
        The array's fill value: ``sharding_indexed`` leaves inner chunks equal to it
        out of a shard and reads missing ones as it (default: zero).

    Returns
    -------
    V3Pipeline

    Raises
    ------
    UnsupportedCodecError
        Unknown codec name, invalid configuration or codecs in the wrong order.
    UnsafeCodecError
        ``numcodecs.pickle`` without ``allow_pickle=True``.

    Examples
    --------
    >>> p = v3_pipeline("uint8", (2, 2), [{"name": "bytes"}, {"name": "gzip", "configuration": {"level": 1}}])
    >>> p.decode(p.encode(np.eye(2, dtype="uint8"))).tolist()
    [[1, 0], [0, 1]]
    """
    return V3Pipeline(np.dtype(dtype), chunk_shape, codecs, allow_pickle=allow_pickle,
                      fill_value=fill_value)
