"""``Array.verify`` against zarr-python: which cells of the grid are stored (zarr-python's
own chunk keys, looked up in the folder), which cannot be read (zarr-python fails on
their region), and which keys are no chunk of the grid."""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

import numpy as np
import zarr
from hypothesis import given
from hypothesis import strategies as st

from chunkflow.testing.strategies import dtypes, shapes, stored_arrays
from tests.differential.conftest import budget

GARBAGE = b"\x00not a chunk\xff"


def _cells(array: zarr.Array) -> list[tuple[int, ...]]:
    grid = [range(-(-n // c)) for n, c in zip(array.shape, array.shards or array.chunks)]
    return list(itertools.product(*grid))


def _region(array: zarr.Array, cell: tuple[int, ...]) -> tuple[slice, ...]:
    unit = array.shards or array.chunks
    return tuple(slice(i * u, min(n, (i + 1) * u)) for i, u, n in zip(cell, unit, array.shape))


@budget(40)
@given(spec=stored_arrays(dtypes=dtypes(kinds="iuf"), shapes=shapes(min_dims=1, max_dims=3,
                                                                    max_side=12)),
       picks=st.data(), strays=st.integers(0, 2))
def test_verify_finds_what_zarr_python_cannot_read(spec, picks, strays) -> None:  # type: ignore[no-untyped-def]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "a.zarr"
        ours = spec.create(str(folder))
        peer = zarr.open_array(str(folder), mode="r")
        keys = {cell: peer.metadata.encode_chunk_key(cell) for cell in _cells(peer)}
        stored = [cell for cell, key in keys.items() if (folder / key).is_file()]
        broken = picks.draw(st.lists(st.sampled_from(stored), unique=True, max_size=3)
                            if stored else st.just([]))
        for cell in broken:
            (folder / keys[cell]).write_bytes(GARBAGE)
        for i in range(strays):
            (folder / f"stray-{i}.txt").write_text("x")
        report = ours.verify()
        # The oracle: zarr-python fails on exactly the regions of the broken chunks.
        unreadable = []
        for cell in stored:
            try:
                zarr.open_array(str(folder), mode="r")[_region(peer, cell)]
            except Exception:  # noqa: BLE001 - whatever zarr-python's codecs raise
                unreadable.append(keys[cell])
        assert sorted(key for key, _ in report.corrupt_keys) == sorted(unreadable)
        assert (report.chunks, report.stored) == (len(keys), len(stored))
        assert report.missing == len(keys) - len(stored) and report.lost == 0
        assert sorted(report.unexpected_keys) == [f"stray-{i}.txt" for i in range(strays)]
        assert report.ok == (not unreadable and not strays)
        np.testing.assert_equal(report.checked, len(stored))
