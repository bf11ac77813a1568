"""Empty listings are checked: a group whose listing misses members raises, naming
them and where they were named; a group that is really empty stays empty."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import chunkflow
from chunkflow.errors import IncompleteListingError, UnlistableGroupError
from chunkflow.storage import MemoryStore


class BlindFolders(MemoryStore):
    """A store whose folder listing finds nothing (as fsspec's reference file system
    did under the prefix "/"); its recursive listing still works."""

    def _list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        return [], []


class Blind(BlindFolders):
    """A store that lists nothing at all: only the group's documents name members."""

    def _list_prefix(self, prefix: str) -> Iterator[str]:
        return iter(())


def filled(store: MemoryStore, zarr_format: int) -> MemoryStore:
    root = chunkflow.open_group(store, mode="w", zarr_format=zarr_format)
    root.create_array("t", shape=(4,), chunks=(2,), dtype="u1")[:] = np.arange(4)
    root.create_group("g")
    return store


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_recursive_listing_names_what_the_folder_listing_missed(zarr_format: int) -> None:
    root = chunkflow.open_group(filled(BlindFolders(), zarr_format), mode="r")
    with pytest.raises(IncompleteListingError) as caught:
        list(root)
    message = str(caught.value)
    assert message.startswith("group '/' in ")
    assert "'g'" in message and "'t'" in message and "list_prefix" in message
    with pytest.raises(OSError):  # a chunkflow error, and the builtin a user catches
        root.arrays().__next__()


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_consolidated_metadata_names_what_no_listing_finds(zarr_format: int) -> None:
    listed = filled(MemoryStore(), zarr_format)
    chunkflow.consolidate_metadata(listed)
    store = Blind()
    store.set_many(listed.get_many(list(listed.list_prefix(""))))
    root = chunkflow.open_group(store, mode="r", use_consolidated=False)
    with pytest.raises(IncompleteListingError, match=r"'t' \(named by (\.zmetadata|consolidated_metadata)\)"):
        root.keys()
    # Through the consolidated metadata the members are there.
    consolidated = chunkflow.open_group(store, mode="r", use_consolidated=True)
    assert consolidated.keys() == ["g", "t"]
    assert consolidated["t"][...].tolist() == [0, 1, 2, 3]


def test_multiscales_name_the_levels() -> None:
    store = Blind()
    image = np.arange(64, dtype="u2").reshape(8, 8)
    chunkflow.pyramid(chunkflow.array(image, chunks=(4, 4)), store, levels=2,
                      scheduler="sync")
    with pytest.raises(IncompleteListingError, match="multiscales"):
        chunkflow.open_group(store, mode="r").keys()


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_stale_consolidated_metadata_of_deleted_members_is_no_error(zarr_format: int) -> None:
    """Members named by consolidated metadata but deleted since: the group is empty."""
    store = filled(MemoryStore(), zarr_format)
    chunkflow.consolidate_metadata(store)
    root = chunkflow.open_group(store, mode="r+", use_consolidated=False)
    del root["t"], root["g"]
    assert chunkflow.open_group(store, mode="r", use_consolidated=False).keys() == []


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_really_empty_groups_stay_empty(zarr_format: int) -> None:
    root = chunkflow.open_group(BlindFolders(), mode="w", zarr_format=zarr_format)
    assert root.keys() == [] and list(root.create_group("a").arrays()) == []


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_a_store_that_lists_nothing_is_no_empty_group(zarr_format: int) -> None:
    # Not even the group's own document is listed: the listing proves nothing.
    root = chunkflow.open_group(filled(Blind(), zarr_format), mode="r", use_consolidated=False)
    with pytest.raises(UnlistableGroupError, match="consolidate_metadata"):
        root.keys()
    assert int(root["t"][3]) == 3  # a known path still opens
    empty = chunkflow.open_group(Blind(), mode="w", zarr_format=zarr_format)
    with pytest.raises(UnlistableGroupError):
        list(empty.arrays())
