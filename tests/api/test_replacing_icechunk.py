"""Replacing an array in an Icechunk session: a refused overwrite leaves the old array
whole and readable, with a chunkflow error; an accepted one leaves no old chunk.
Real in-memory Icechunk repositories; values read back with zarr-python."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

zarr = pytest.importorskip("zarr", minversion="3")
icechunk = pytest.importorskip("icechunk")

import chunkflow  # noqa: E402
from chunkflow.errors import ChunkflowError, UnsupportedFormatError  # noqa: E402

OLD = np.arange(10, dtype="i4") * 3


@pytest.fixture
def session() -> Any:
    repo = icechunk.Repository.create(icechunk.in_memory_storage())
    session = repo.writable_session("main")
    chunkflow.create_array(session.store, name="g/out", shape=OLD.shape, chunks=(4,),
                           dtype="i4", attributes={"kept": True})[:] = OLD
    return session


def _listed(store: Any) -> list[str]:
    from zarr.core.sync import sync

    async def collect() -> list[str]:
        return [key async for key in store.list()]

    return sorted(sync(collect()))


def _old_array_is_whole(session: Any) -> None:
    old = zarr.open_array(session.store, path="g/out", mode="r")
    np.testing.assert_array_equal(old[:], OLD)
    assert dict(old.attrs) == {"kept": True}
    np.testing.assert_array_equal(chunkflow.open_array(session.store, path="g/out",
                                                       mode="r")[:], OLD)


@pytest.mark.parametrize("how", ["create_array", "create", "open_array(mode=w)"])
def test_a_v2_array_over_a_v3_one_is_refused_and_the_old_one_stays(session: Any,
                                                                   how: str) -> None:
    # The case: a raw KeyError ('v2 key not found at out/.zattrs'), and `out` gone.
    before = _listed(session.store)
    with pytest.raises(UnsupportedFormatError, match="Icechunk stores Zarr v3 only"):
        if how == "create_array":
            chunkflow.create_array(session.store, name="g/out", shape=(5,), chunks=(5,),
                                   dtype="i1", zarr_format=2, overwrite=True)
        elif how == "create":
            chunkflow.create((5,), chunks=(5,), dtype="i1", zarr_format=2,
                             store=session.store, path="g/out", overwrite=True)
        else:
            chunkflow.open_array(session.store, mode="w", path="g/out", shape=(5,),
                                 dtype="i1", zarr_format=2)
    assert _listed(session.store) == before
    _old_array_is_whole(session)
    session.commit("still there")


@pytest.mark.parametrize("bad", [
    {"dtype": "str", "serializer": {"name": "bytes", "configuration": {"endian": "little"}}},
    {"dtype": "i4", "fill_value": "not a number"},
    {"dtype": "i4", "dimension_names": ["a", "b"]},
    {"dtype": "i4", "compressors": [{"name": "no-such-codec"}]},
    {"dtype": "i4", "attributes": {"bad": {1, 2}}},
])
def test_a_refused_overwrite_leaves_the_old_array(session: Any, bad: dict[str, Any]) -> None:
    before = _listed(session.store)
    with pytest.raises(ChunkflowError):
        chunkflow.create_array(session.store, name="g/out", shape=(5,), chunks=(5,),
                               overwrite=True, **bad)
    assert _listed(session.store) == before
    _old_array_is_whole(session)


def test_v3_over_v3_leaves_no_old_chunk(session: Any) -> None:
    new = chunkflow.create_array(session.store, name="g/out", shape=(3,), chunks=(3,),
                                 dtype="u1", overwrite=True)
    assert _listed(session.store) == ["g/out/zarr.json", "g/zarr.json", "zarr.json"]
    assert new[:].tolist() == [0, 0, 0]
    new[:] = [7, 8, 9]
    session.commit("replaced")
    assert zarr.open_array(session.store, path="g/out", mode="r")[:].tolist() == [7, 8, 9]


def test_a_group_over_an_array_and_an_array_over_a_group(session: Any) -> None:
    chunkflow.open_group(session.store, path="g/out", mode="w").create_array(
        "inner", data=np.ones(4, "u2"), chunks=(2,))
    assert zarr.open_group(session.store, path="g/out", mode="r")["inner"][:].tolist() == [1] * 4
    z = chunkflow.create_array(session.store, name="g", shape=(2,), chunks=(1,), dtype="i2",
                               overwrite=True)
    z[:] = [5, 6]
    assert _listed(session.store) == ["g/c/0", "g/c/1", "g/zarr.json", "zarr.json"]
    session.commit("array over group")
    assert zarr.open_array(session.store, path="g", mode="r")[:].tolist() == [5, 6]
