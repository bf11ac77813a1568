"""Merging the workers' forks of an Icechunk session (chunkflow.graph.merges), in one
process: forks copied as a cluster copies them (pickled), each written as a worker's
tasks write, merged in every order. Icechunk itself takes a document held by two forks
from the fork merged last; merge_forks keeps the one a worker wrote."""

from __future__ import annotations

import itertools
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest

zarr = pytest.importorskip("zarr", minversion="3")
icechunk = pytest.importorskip("icechunk")

from zarr.core.sync import sync  # noqa: E402

from chunkflow.errors import TransactionError  # noqa: E402
from chunkflow.graph.merges import merge_forks  # noqa: E402


@pytest.fixture
def session(tmp_path: Path) -> Any:
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(tmp_path)))
    first = repo.writable_session("main")
    zarr.create_array(first.store, name="old", shape=(4,), chunks=(2,), dtype="i2")[:] = 7
    first.commit("old")
    return repo.writable_session("main")


def _base(session: Any) -> Any:
    """The fork the workers start from, holding nodes created before the job (as the
    job carries them over): a group "img" and its array "img/a"."""
    base = session.fork()
    zarr.open_group(base.store, path="img", mode="w", attributes={"before": 1})
    zarr.create_array(base.store, name="img/a", shape=(6,), chunks=(2,), dtype="u1")
    return base


def _copy(fork: Any) -> Any:
    return pickle.loads(pickle.dumps(fork))


def _attrs(session: Any, path: str) -> dict[str, Any]:
    return dict(zarr.open_group(session.store, path=path, mode="r").attrs)


def test_icechunk_takes_a_document_from_the_fork_merged_last(session: Any) -> None:
    # Why merge_forks exists: the plain merge drops the attributes a worker wrote.
    base = _base(session)
    wrote, other = _copy(base), _copy(base)
    zarr.open_group(wrote.store, path="img", mode="r+").attrs["multiscales"] = [1]
    zarr.open_array(other.store, path="img/a", mode="r+")[:2] = 5
    session.merge(base, wrote, other)
    assert _attrs(session, "img") == {"before": 1}


@pytest.mark.parametrize("order", [0, 1])
def test_documents_a_worker_wrote_survive_every_order(session: Any, order: int) -> None:
    base = _base(session)
    wrote, chunks = _copy(base), _copy(base)
    zarr.open_group(wrote.store, path="img", mode="r+").attrs["multiscales"] = [1]
    zarr.open_array(wrote.store, path="img/a", mode="r+")[4:] = 9
    zarr.open_array(chunks.store, path="img/a", mode="r+")[:2] = 5
    forks = [wrote, chunks] if order == 0 else [chunks, wrote]
    merge_forks(session, base, forks, what="test", names=["img/a"])
    assert _attrs(session, "img") == {"before": 1, "multiscales": [1]}
    np.testing.assert_array_equal(zarr.open_array(session.store, path="img/a")[:],
                                  [5, 5, 0, 0, 9, 9])
    np.testing.assert_array_equal(zarr.open_array(session.store, path="old")[:], 7)


def test_documents_written_by_several_workers_all_survive(session: Any) -> None:
    base = _base(session)
    zarr.open_group(base.store, path="labels", mode="w")
    forks = [_copy(base) for _ in range(3)]
    zarr.open_group(forks[0].store, path="img", mode="r+").attrs["x"] = 0
    zarr.open_group(forks[1].store, path="labels", mode="r+").attrs["y"] = 1
    zarr.open_array(forks[2].store, path="img/a", mode="r+")[:] = 3
    for order in itertools.permutations(forks):
        target = session.fork()  # a fresh target per order: the same base, merged anew
        merge_forks(target, base, list(order), what="test", names=["img/a"])
        assert _attrs(target, "img") == {"before": 1, "x": 0}
        assert _attrs(target, "labels") == {"y": 1}
        np.testing.assert_array_equal(zarr.open_array(target.store, path="img/a")[:], 3)


def test_a_node_a_worker_created_keeps_its_chunks(session: Any) -> None:
    base = _base(session)
    created, other = _copy(base), _copy(base)
    zarr.create_array(created.store, name="img/labels", shape=(4,), chunks=(2,),
                      dtype="u4", attributes={"count": 2})[:] = [1, 1, 0, 2]
    zarr.open_array(other.store, path="img/a", mode="r+")[:] = 4
    merge_forks(session, base, [created, other], what="test", names=["img/labels"])
    labels = zarr.open_array(session.store, path="img/labels")
    assert dict(labels.attrs) == {"count": 2}
    np.testing.assert_array_equal(labels[:], [1, 1, 0, 2])


def test_a_node_a_worker_replaced_keeps_its_new_chunks(session: Any) -> None:
    # The other fork holds the node replaced (another node id, same path): merged
    # after it, its copy would win, and the chunks written under the new node be lost.
    base = _base(session)
    replaced, other = _copy(base), _copy(base)
    zarr.create_array(replaced.store, name="img/a", shape=(6,), chunks=(3,), dtype="u2",
                      overwrite=True)[:] = [1, 2, 3, 4, 5, 6]
    zarr.open_group(other.store, path="img", mode="r+")
    merge_forks(session, base, [replaced, other], what="test", names=["img/a"])
    array = zarr.open_array(session.store, path="img/a", mode="r")
    assert (array.dtype, array.chunks) == (np.dtype("u2"), (3,))
    np.testing.assert_array_equal(array[:], [1, 2, 3, 4, 5, 6])


def test_a_node_a_worker_deleted_stays_deleted(session: Any) -> None:
    base = _base(session)
    deleted, other = _copy(base), _copy(base)
    sync(deleted.store.delete_dir("img/a"))  # as chunkflow deletes a node there
    zarr.open_group(other.store, path="img", mode="r+")  # holds the stale "img/a"
    merge_forks(session, base, [deleted, other], what="test", names=["img/a"])
    assert "a" not in zarr.open_group(session.store, path="img", mode="r")


def test_two_workers_writing_one_document_differently_are_refused(session: Any) -> None:
    base = _base(session)
    one, two = _copy(base), _copy(base)
    zarr.open_group(one.store, path="img", mode="r+").attrs["by"] = "one"
    zarr.open_group(two.store, path="img", mode="r+").attrs["by"] = "two"
    zarr.open_array(two.store, path="img/a", mode="r+")[:] = 1
    with pytest.raises(TransactionError, match=r"two workers wrote different documents "
                                               r"for node\(s\) 'img'.*Nothing was merged"):
        merge_forks(session, base, [one, two], what="test", names=["img/a"])
    # The session holds what the job started from: the nodes, no chunk, no attribute.
    assert _attrs(session, "img") == {"before": 1}
    assert not session.status().updated_chunks
