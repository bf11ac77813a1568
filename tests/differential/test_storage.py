"""Storage round trips, bit for bit, against the data and against zarr-python 3.

Every dtype (bool, integers, floats, complex, datetimes, strings; either byte order),
every fill value (NaN payloads and -0.0 included), Zarr v2, v3 and sharded v3, with
``write_empty_chunks`` both ways, a whole write followed by partial writes (basic
selections):

- oracle 1, the data: what chunkflow reads back, through the handle that wrote and
  through a new handle that bypasses the cache, has the bits numpy's copy has; the
  number of stored chunks is what the data says (with ``write_empty_chunks=False`` a
  chunk is left out exactly when all its bits are the fill value's);
- oracle 2, zarr-python 3: it opens the folder chunkflow wrote and reads the same bits,
  the same fill value and the same number of stored chunks; and chunkflow reads what
  zarr-python wrote (the same calls, on its own folder) as zarr-python reads it.

Values are compared as bytes in native order (a float's NaN payload and sign, NaT).
"""

from __future__ import annotations

import math
import struct
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import chunkflow
from chunkflow.testing import strategies as cst
from chunkflow.testing.strategies import StoredArraySpec
from tests.differential.conftest import budget

zarr = pytest.importorskip("zarr")

DTYPES = cst.dtypes(kinds="biufcmMUS", byteorder="any")
SHAPES = cst.shapes(max_dims=3, max_side=6)

Writes = list[tuple[tuple[Any, ...], Any]]


@st.composite
def storage_cases(draw: st.DrawFn) -> tuple[StoredArraySpec, Writes]:
    """A stored array and up to three partial writes (a basic selection, a value of the
    array's dtype shaped for it, broadcast or scalar)."""
    spec = draw(cst.stored_arrays(dtypes=DTYPES, shapes=SHAPES))
    writes: Writes = []
    for _ in range(draw(st.integers(0, 3))):
        selection = draw(cst.basic_selections(spec.data.shape, in_bounds=True))
        target = spec.data[selection].shape
        writes.append((selection, draw(cst.selection_values(target, spec.data.dtype))))
    return spec, writes


@st.composite
def near_fill_cases(draw: st.DrawFn) -> tuple[StoredArraySpec, Writes]:
    """An array made of its fill value and of the fill's twins (``-0.0`` for ``0.0``,
    other NaNs for a NaN), written whole and then in parts with more of them."""
    dtype = draw(st.one_of(cst.dtypes(kinds="fc", byteorder="any"), DTYPES))
    native = dtype.newbyteorder("=")
    fills = cst.fill_values(dtype)
    if dtype.kind in "fc":
        nans = [v for v in cst.special_values(native) if np.isnan(v)]
        fills = st.one_of(fills, st.sampled_from([native.type(0), native.type(-0.0), *nans]))
    fill = draw(fills)
    shape = draw(SHAPES)
    data = draw(cst.near_fill_arrays(dtype, shape, fill))
    chunks = draw(cst.chunk_shapes(shape)) if shape else ()
    zarr_format = draw(cst.zarr_formats())
    shards = None
    if zarr_format == 3 and shape and draw(st.booleans()):
        shards = draw(cst.shard_shapes(chunks))
    spec = StoredArraySpec(data, chunks, shards, zarr_format, fill,
                           write_empty_chunks=draw(st.booleans()))
    writes: Writes = []
    for _ in range(draw(st.integers(0, 2))):
        selection = draw(cst.basic_selections(shape, in_bounds=True))
        target = data[selection].shape
        scalar = draw(st.booleans())
        writes.append((selection, draw(cst.near_fill_arrays(dtype, () if scalar else target,
                                                             fill))))
    return spec, writes


def _bytes(values: Any, dtype: np.dtype) -> np.ndarray:
    """``values`` as ``dtype`` in native order, one row of bytes per element."""
    native = np.array(values, dtype=dtype.newbyteorder("="))  # a C-order copy
    return native.reshape(-1).view(np.uint8).reshape(*native.shape, dtype.itemsize)


def assert_same_bits(actual: Any, expected: np.ndarray, what: str) -> None:
    assert np.shape(actual) == expected.shape, what
    np.testing.assert_array_equal(_bytes(actual, expected.dtype), _bytes(expected, expected.dtype),
                                  err_msg=what)


def _expected(spec: StoredArraySpec, writes: Writes) -> np.ndarray:
    data = spec.data.copy()
    for selection, value in writes:
        data[selection] = value
    return data


def _float_parts(fill: np.ndarray, convert: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """``fill`` (0-d, float or complex) with ``convert`` applied to each float part."""
    if fill.dtype.kind == "f":
        return convert(fill)
    native = fill.dtype.newbyteorder("=")
    parts = np.asarray(fill, native).reshape(1).view(f"f{native.itemsize // 2}")
    converted = np.array([convert(p.reshape(())) for p in parts], parts.dtype)
    return converted.view(native).reshape(()).astype(fill.dtype)


def _fill(spec: StoredArraySpec) -> np.ndarray:
    """The fill value as a 0-d array of the array's dtype (the format's default when the
    spec has none: zero, empty strings). v2 writes any NaN as ``"NaN"``: the NaN
    numpy's ``float("nan")`` gives (the v3 spec's ``"NaN"`` too)."""
    dtype = spec.data.dtype
    value = spec.fill_value
    if value is None:  # the default: NaT for times (as zarr-python), else zero
        value = "NaT" if dtype.kind in "mM" else np.zeros((), dtype)
    fill = np.full((), value, dtype)
    if spec.zarr_format == 2 and dtype.kind in "fc":
        fill = _float_parts(fill, lambda p: np.full((), np.nan, p.dtype) if np.isnan(p) else p)
    return fill


def _through_python_float(part: np.ndarray) -> np.ndarray:
    """What zarr-python 3.1.6 makes of a v3 ``"0x..."`` fill value: ``struct.unpack``
    to a Python float (which drops float16 NaN payloads and quiets signalling NaNs),
    then the dtype."""
    native = part.dtype.newbyteorder("=")
    code = {2: ">e", 4: ">f", 8: ">d"}[native.itemsize]
    raw = np.asarray(part, native.newbyteorder(">")).tobytes()
    return np.array(struct.unpack(code, raw)[0], part.dtype)


def _zarr_reads_fill_exactly(fill: np.ndarray) -> bool:
    """Whether zarr-python 3.1.6 reads this fill value with its bits."""
    if fill.dtype.kind not in "fc":
        return True
    return _float_parts(fill, _through_python_float).tobytes() == fill.tobytes()


def _stored_objects(spec: StoredArraySpec, data: np.ndarray) -> int:
    """How many chunk objects (shards when sharded) a writer stores for ``data``: all of
    them with ``write_empty_chunks`` (every one was written, whole), else those holding a
    bit pattern other than the fill value's."""
    grid = spec.shards or spec.chunks
    if data.size == 0:
        return 0
    if spec.write_empty_chunks:
        return math.prod(-(-n // c) for n, c in zip(data.shape, grid))
    fill = _bytes(_fill(spec), data.dtype)
    differs = (_bytes(data, data.dtype) != fill).any(axis=-1)
    count = 0
    for corner in np.ndindex(*(-(-n // c) for n, c in zip(data.shape, grid))):
        region = tuple(slice(i * c, (i + 1) * c) for i, c in zip(corner, grid))
        count += bool(differs[region].any())
    return count


def _positive_steps(selection: tuple[Any, ...], shape: tuple[int, ...], value: Any
                    ) -> tuple[tuple[Any, ...], np.ndarray]:
    """The same write with every slice stepping forward (zarr-python refuses negative
    steps): the slice turned around, and the value flipped along its axis."""
    entries = list(selection)
    if Ellipsis in entries:
        at = entries.index(Ellipsis)
        entries[at:at + 1] = [slice(None)] * (len(shape) - len(entries) + 1)
    entries += [slice(None)] * (len(shape) - len(entries))
    target = np.empty(shape, bool)[tuple(entries)].shape
    flipped = np.broadcast_to(np.asarray(value), target)
    forward: list[Any] = []
    axis = 0
    for entry, size in zip(entries, shape):
        if isinstance(entry, slice):
            picked = range(*entry.indices(size))
            if picked.step < 0 and len(picked):
                entry = slice(picked[-1], picked[0] + 1, -picked.step)
                flipped = np.flip(flipped, axis)
            elif picked.step < 0:
                entry = slice(0, 0)
            axis += 1
        forward.append(entry)
    return tuple(forward), flipped


def _zarr_write(folder: Path, spec: StoredArraySpec, writes: Writes) -> Any:
    """The same array made and written by zarr-python."""
    options: dict[str, Any] = {}
    if spec.shards is not None:
        options["shards"] = spec.shards
    if spec.fill_value is not None:
        options["fill_value"] = spec.fill_value
    peer = zarr.create_array(str(folder), shape=spec.data.shape, chunks=spec.chunks or "auto",
                             dtype=spec.data.dtype, zarr_format=spec.zarr_format,
                             config={"write_empty_chunks": spec.write_empty_chunks}, **options)
    peer[...] = spec.data
    for selection, value in writes:
        forward, values = _positive_steps(selection, spec.data.shape, value)
        peer[forward] = values
    return peer


def _check(spec: StoredArraySpec, writes: Writes) -> None:
    expected = _expected(spec, writes)
    dtype = spec.data.dtype
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr-python's "not in the v3 specification yet"
        ours, theirs = Path(tmp, "ours.zarr"), Path(tmp, "theirs.zarr")
        z = spec.create(str(ours))
        for selection, value in writes:
            z[selection] = value
        # Oracle 1: the data (through the handle, and from the store alone).
        # v3 data types have no byte order (the bytes codec has): native dtypes.
        assert z.dtype == (dtype if spec.zarr_format == 2 else dtype.newbyteorder("="))
        assert_same_bits(z[...], expected, "chunkflow, the writing handle")
        fresh = chunkflow.open_array(str(ours), mode="r", cache=False)
        assert_same_bits(fresh[...], expected, "chunkflow, a new handle without cache")
        assert_same_bits(fresh.fill_value, _fill(spec), "chunkflow's fill value")
        stored = fresh.nshards_initialized if spec.shards else fresh.nchunks_initialized
        assert stored == _stored_objects(spec, expected)
        # Oracle 2: zarr-python reads our folder.
        peer = zarr.open_array(str(ours), mode="r")
        if _zarr_reads_fill_exactly(_fill(spec)):
            assert_same_bits(peer[...], expected, "zarr-python reading chunkflow's array")
            assert_same_bits(peer.fill_value, _fill(spec), "zarr-python's reading of our fill")
        assert peer.nchunks_initialized == fresh.nchunks_initialized
        # ... and chunkflow reads zarr-python's folder as zarr-python does.
        _zarr_write(theirs, spec, writes)
        # A new zarr-python handle: the writing one keeps a fill value its document
        # may not say (a v2 NaN payload).
        peer = zarr.open_array(str(theirs), mode="r")
        theirs_read = chunkflow.open_array(str(theirs), mode="r", cache=False)
        assert_same_bits(theirs_read[...], np.asarray(peer[...], dtype), "chunkflow reading zarr's")
        assert_same_bits(theirs_read.fill_value, np.asarray(peer.fill_value, dtype),
                         "chunkflow's reading of zarr-python's fill value")


def _floats(dtype: str, *bits: int) -> np.ndarray:
    width = np.dtype(dtype).itemsize
    return np.array(bits, f"<u{width}").view(f"<f{width}").astype(dtype)


_NEG_ZERO = _floats("<f8", 0x8000000000000000)
_NAN_PAYLOAD = _floats(">f4", 0x7FC00001)


@budget(40)
@given(storage_cases())
# The task's cases: -0.0 written where the fill is 0.0 (whole, scalar and partial
# writes; v2, v3, sharded), and NaN payloads other than the fill's.
@example((StoredArraySpec(np.full((4,), -0.0), (2,), None, 3, 0.0), []))
@example((StoredArraySpec(np.full((4,), -0.0), (2,), None, 2, 0.0), []))
@example((StoredArraySpec(np.full((4, 2), -0.0), (2, 1), (4, 2), 3, 0.0), []))
@example((StoredArraySpec(np.zeros((4, 2)), (2, 1), (4, 2), 3, 0.0),
          [((slice(1, 2), 1), _NEG_ZERO)]))
@example((StoredArraySpec(np.zeros((5,), ">f8"), (2,), None, 2, 0.0),
          [((slice(None),), np.array(-0.0, ">f8"))]))
@example((StoredArraySpec(np.zeros((5,), "c16"), (2,), (4,), 3, 0.0),
          [((slice(0, 2),), np.array(complex(0.0, -0.0)))]))
@example((StoredArraySpec(np.full((3,), np.nan, ">f4"), (1,), None, 3, np.float32(np.nan)),
          [((1,), _NAN_PAYLOAD[0])]))
@example((StoredArraySpec(np.full((3,), np.nan, ">f4"), (3,), (3,), 3, np.float32(np.nan)),
          [((slice(0, 1),), _NAN_PAYLOAD)]))
@example((StoredArraySpec(np.full((3,), np.nan, ">f4"), (1,), None, 2, np.float32(np.nan)),
          [((2,), _NAN_PAYLOAD[0])]))
# A fill value that is itself a NaN with a payload: v3 writes its bits ("0x7fc00001"),
# v2 can only say "NaN" (every handle then holds the plain NaN).
@example((StoredArraySpec(np.zeros((3,), ">f4"), (1,), None, 3, _NAN_PAYLOAD[0]),
          [((slice(None),), _NAN_PAYLOAD[0])]))
@example((StoredArraySpec(np.zeros((3,), "<f4"), (1,), None, 2, _NAN_PAYLOAD[0]),
          [((slice(None),), _NAN_PAYLOAD[0])]))
def test_round_trips_keep_every_bit(case: tuple[StoredArraySpec, Writes]) -> None:
    spec, writes = case
    _check(spec, writes)


@budget(40)
@given(near_fill_cases())
# Found by this test with the fill check back on == (and isnan): a 0-d chunk of -0.0,
# one of a NaN with another payload.
@example((StoredArraySpec(np.array(-0.0, "f2"), (), None, 3, np.float16(0.0)), []))
# Found by the long profile (both in the test's model of the formats): a v2 complex
# fill of (+0, -0) keeps its -0.0; zarr-python drops a float16 fill's NaN payload.
@example((StoredArraySpec(np.zeros((), "c8"), (), None, 2,
                          np.array([0.0, -0.0], "f4").view("c8")[0]), []))
@example((StoredArraySpec(_floats("<f2", 0x7E01).reshape(()), (), None, 3,
                          _floats("<f2", 0x7E01)[0]), []))
@example((StoredArraySpec(_floats("<f2", 0x7E01).reshape(()), (), None, 3, np.float16(np.nan)),
          []))
def test_values_equal_to_the_fill_value_in_other_bits_are_stored(
        case: tuple[StoredArraySpec, Writes]) -> None:
    spec, writes = case
    _check(spec, writes)
