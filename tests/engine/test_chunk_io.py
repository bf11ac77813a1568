"""ChunkIO's shape-change section: clearing a grown region, trimming, repairing."""

from __future__ import annotations

import numpy as np
import pytest

import chunkflow
from chunkflow.engine.repair import (
    RepairReport,
    clear_grown_region,
    repair_array,
    trim_beyond_shape,
)
from chunkflow.storage import MemoryStore


def _filled(zarr_format: int) -> chunkflow.Array:
    # Two chunks of 4: [0, 4) and [4, 8), both holding 7 (fill value 0).
    z = chunkflow.zeros(6, chunks=4, dtype="u1", store=MemoryStore(), zarr_format=zarr_format)
    z[:] = 7
    return z


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_trim_beyond_shape_deletes_outside_chunks_and_resets_padding(zarr_format: int) -> None:
    z = _filled(zarr_format)
    smaller = z._staged(z.metadata.with_shape((3,)))._io  # the grid of shape (3,)
    assert trim_beyond_shape(smaller) == (1, 1)
    assert sorted(k for k in z.store if not k.endswith(("zarr.json", ".zarray"))) == [
        "c/0" if zarr_format == 3 else "0"]
    np.testing.assert_array_equal(z[:], [7, 7, 7, 0, 0, 0])
    assert trim_beyond_shape(smaller) == (0, 0)  # nothing left to do


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_trim_beyond_shape_resets_padding_only_in_the_given_dims(zarr_format: int) -> None:
    z = chunkflow.zeros((3, 3), chunks=(2, 2), dtype="u1", store=MemoryStore(),
                        zarr_format=zarr_format)
    z[:] = 5
    smaller = z._staged(z.metadata.with_shape((3, 1)))._io
    # dims picks the chunks cut in those dimensions; each is reset beyond the shape
    # in every dimension. Chunks (0, 1) and (1, 1) lie outside; (1, 0) is cut in dim 0.
    assert trim_beyond_shape(smaller, dims=[0]) == (2, 1)
    assert trim_beyond_shape(smaller, dims=[1]) == (0, 1)  # (0, 0), cut in dim 1 only
    np.testing.assert_array_equal(z[:], [[5, 0, 0]] * 3)


def test_clear_grown_region_makes_it_read_as_fill_value() -> None:
    z = _filled(3)
    smaller = z._staged(z.metadata.with_shape((3,)))._io
    clear_grown_region(smaller, (3,), (6,))
    np.testing.assert_array_equal(z[:], [7, 7, 7, 0, 0, 0])


def test_repair_reports_what_it_removed() -> None:
    z = _filled(2)
    report = repair_array(z._staged(z.metadata.with_shape((3,)))._io, 3600.0)
    assert report == RepairReport(deleted_chunks=1, cleared_chunks=1, removed_temporaries=0)


# -- reads into place (Store.get_into, pipeline.stored_view) ---------------------------


@pytest.mark.parametrize(("zarr_format", "order", "dtype"), [
    (3, "C", "<u2"), (3, "C", ">i4"), (2, "C", "<u2"), (2, "F", "<f8"), (2, "C", ">u2")])
@pytest.mark.parametrize("cache", [False, None])
def test_uncompressed_reads_match_numpy(tmp_path, zarr_format, order, dtype, cache) -> None:
    data = np.arange(20 * 13, dtype=dtype).reshape(20, 13)
    z = chunkflow.create_array(str(tmp_path / "u.zarr"), shape=data.shape, chunks=(8, 5),
                               dtype=dtype, compressors=None, zarr_format=zarr_format,
                               cache=cache, **({"order": order} if zarr_format == 2 else {}))
    z[:] = data
    for selection in [(slice(None), slice(None)), (slice(0, 8), slice(5, 10)),
                      (slice(3, 17), slice(2, 12)), (slice(16, 20), slice(10, 13)), (5, 7)]:
        for _ in range(3):  # first and second whole reads, then cache hits
            got = z[selection]
            np.testing.assert_array_equal(got, data[selection])
            if got.ndim:
                got[...] = 0  # the caller's copy: never the cache's


def test_whole_uncompressed_chunks_land_in_place_without_a_fetch_buffer(tmp_path, monkeypatch) -> None:
    from chunkflow.engine import chunk_io

    slots: list[str] = []
    real = chunk_io.scratch_buffer

    def counting(shape, dtype, slot="codec"):  # type: ignore[no-untyped-def]
        slots.append(slot)
        return real(shape, dtype, slot=slot)

    monkeypatch.setattr(chunk_io, "scratch_buffer", counting)
    data = np.arange(16 * 16, dtype="u2").reshape(16, 16)
    z = chunkflow.create_array(str(tmp_path / "d.zarr"), shape=(16, 16), chunks=(8, 8),
                               dtype="u2", compressors=None, cache=False)
    z[:] = data
    np.testing.assert_array_equal(z[0:8, 8:16], data[0:8, 8:16])  # read into its result
    assert "fetch" not in slots
    np.testing.assert_array_equal(z[:], data)  # chunks into strided views: via the buffer
    assert slots.count("fetch") == 4


@pytest.mark.parametrize("compressors", [None, "auto"])
def test_a_truncated_chunk_file_is_a_decode_error_naming_it(tmp_path, compressors) -> None:
    z = chunkflow.create_array(str(tmp_path / "t.zarr"), shape=(8, 8), chunks=(4, 4),
                               dtype="u2", compressors=compressors, cache=False)
    z[:] = 1
    path = tmp_path / "t.zarr" / "c" / "0" / "1"
    path.write_bytes(path.read_bytes()[:10])
    for selection in [(slice(0, 4), slice(4, 8)), (slice(None), slice(None)), (1, 5)]:
        with pytest.raises(chunkflow.errors.ChunkDecodeError, match="c/0/1"):
            z[selection]


def test_large_fetch_buffers_start_on_a_huge_page() -> None:
    from chunkflow.buffers import HUGE_PAGE, scratch_buffer

    large = scratch_buffer((3 * HUGE_PAGE,), np.dtype("u1"), slot="test-huge")
    small = scratch_buffer((100,), np.dtype("u1"), slot="test-small")
    assert large.ctypes.data % HUGE_PAGE == 0 and large.nbytes == 3 * HUGE_PAGE
    assert small.nbytes == 100
