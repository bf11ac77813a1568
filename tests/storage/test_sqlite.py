"""SQLiteStore: the conformance tests, zarr-python 2's database layout, atomic batches,
and use from other processes."""

from __future__ import annotations

import pickle
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import chunkflow
from chunkflow.errors import ReadOnlyError, StoreRequestError
from chunkflow.storage import SQLiteStore
from chunkflow.testing import StoreConformance


class TestSQLiteStore(StoreConformance):
    @pytest.fixture
    def store(self, tmp_path: Path) -> SQLiteStore:
        return SQLiteStore(tmp_path / "data.sqldb")

    def twin(self, store: SQLiteStore) -> SQLiteStore:
        return SQLiteStore(store.path)

    def raw_get(self, store: SQLiteStore, key: str) -> bytes | None:
        with sqlite3.connect(store.path) as db:
            row = db.execute("SELECT v FROM zarr WHERE k = ?", (key,)).fetchone()
        return None if row is None else bytes(row[0])

    def raw_set(self, store: SQLiteStore, key: str, value: bytes) -> None:
        store.list_prefix("")  # the table exists once the store has been used
        with sqlite3.connect(store.path) as db:
            db.execute("INSERT OR REPLACE INTO zarr (k, v) VALUES (?, ?)", (key, value))


def test_reads_a_database_laid_out_as_zarr_python_2_writes_it(tmp_path: Path) -> None:
    # zarr-python 2's SQLiteStore: one table "zarr(k TEXT PRIMARY KEY, v BLOB)".
    path = tmp_path / "example.sqldb"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE zarr(k TEXT PRIMARY KEY, v BLOB)")
        db.executemany("INSERT INTO zarr VALUES (?, ?)", [
            (".zgroup", b'{"zarr_format": 2}'),
            ("x/.zarray", b'{"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "<i4", '
                          b'"compressor": null, "fill_value": 0, "filters": null, '
                          b'"order": "C"}'),
            ("x/0", np.array([1, 2], "<i4").tobytes()),
        ])
    root = chunkflow.open_group(SQLiteStore(path, read_only=True), mode="r")
    assert root["x"][:].tolist() == [1, 2, 0, 0]


def test_tutorial_example_and_reopen(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "example.sqldb")
    root = chunkflow.group(store=store, overwrite=True)
    z = root.zeros("foo/bar", shape=(100, 100), chunks=(10, 10), dtype="i4")
    z[:] = 42
    store.close()
    again = chunkflow.open_group(SQLiteStore(tmp_path / "example.sqldb", read_only=True),
                                 mode="r")
    np.testing.assert_array_equal(again["foo/bar"][:], np.full((100, 100), 42, "i4"))
    with pytest.raises(ReadOnlyError):
        again["foo/bar"][0, 0] = 1


def test_a_failed_batch_writes_nothing(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "data.sqldb")
    store["keep"] = b"old"
    # The database itself refuses the batch's last row, after the first rows went in.
    with sqlite3.connect(store.path) as db:
        db.execute("CREATE TRIGGER refuse BEFORE INSERT ON zarr WHEN NEW.k = 'b' "
                   "BEGIN SELECT RAISE(ABORT, 'refused'); END")
    with pytest.raises(StoreRequestError, match="refused") as caught:
        store.set_many({"keep": b"new", "a": b"1", "b": b"2"})
    assert isinstance(caught.value.__cause__, sqlite3.IntegrityError)
    assert store["keep"] == b"old" and "a" not in store


def test_pickles_by_path_and_serves_another_process(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "data.sqldb")
    z = chunkflow.zeros((6,), chunks=(2,), dtype="u1", store=store)
    clone = pickle.loads(pickle.dumps(store))
    assert clone == store and clone is not store and clone.path == store.path
    code = ("import pickle, sys; z = pickle.loads(sys.stdin.buffer.read()); "
            "z[2:4] = 7; print(z[:].tolist())")
    done = subprocess.run([sys.executable, "-c", code], input=pickle.dumps(z),
                          capture_output=True, check=True)
    assert done.stdout.decode().strip() == "[0, 0, 7, 7, 0, 0]"
    assert z[:].tolist() == [0, 0, 7, 7, 0, 0]
