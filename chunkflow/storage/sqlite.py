"""A store in one SQLite database file: zarr-python 2's ``SQLiteStore``.

Keys and values live in one table. Every write is a transaction of its own
(``set_many`` and ``delete_prefix`` one transaction for the whole batch), so after a
crash a reader sees a batch wholly or not at all. SQLite locks the file, so threads and
processes on one machine share a database; a pickle carries the path, so workers open
it again. The database is in WAL mode: readers do not wait for a writer.

Examples
--------
>>> import tempfile, os
>>> folder = tempfile.mkdtemp()
>>> store = SQLiteStore(os.path.join(folder, "example.sqldb"))
>>> store.set_many({"a/.zarray": b"{}", "a/0": b"xy", "b": b""})
>>> sorted(store.list_prefix("a")), store["a/0"]
(['a/.zarray', 'a/0'], b'xy')
>>> store.close()
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator

from chunkflow.errors import KeyNotFoundError, StoreRequestError
from chunkflow.storage.base import Store

__all__ = ["SQLiteStore"]

_TABLE = "zarr"


class SQLiteStore(Store):
    """Keys and values in the table ``zarr`` of the SQLite database at ``path``.

    Parameters
    ----------
    path : str or os.PathLike
        The database file; created (with its table) on the first write when missing.
    read_only : bool
        Refuse writes (the file is then opened read-only, and must exist).
    timeout : float
        Seconds to wait for another connection's lock before failing (SQLite's
        ``timeout``).
    """

    listing_is_cheap = True

    def __init__(self, path: str | os.PathLike[str], read_only: bool = False, *,
                 timeout: float = 30.0) -> None:
        self.path = os.path.abspath(os.fspath(path))
        self.read_only = read_only
        self.timeout = timeout
        self._identity = "sqlite://" + os.path.realpath(self.path)
        self._lock = threading.RLock()
        self._connection: sqlite3.Connection | None = None

    @property
    def identity(self) -> str:
        return self._identity

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r}, read_only={self.read_only})"

    def __reduce__(self) -> tuple[object, ...]:
        return (SQLiteStore, (self.path, self.read_only), {"timeout": self.timeout})

    def __setstate__(self, state: dict[str, float]) -> None:
        self.timeout = state["timeout"]

    # ------------------------------------------------------------ connection

    def _db(self) -> sqlite3.Connection:
        # One connection per handle, used under the handle's lock (a sqlite3
        # connection must not run two statements at once); opened at first use, so a
        # store that is only built (or unpickled) touches no file.
        if self._connection is None:
            if self.read_only:
                uri = f"file:{self.path}?mode=ro"
                connection = sqlite3.connect(uri, uri=True, timeout=self.timeout,
                                             check_same_thread=False, isolation_level=None)
            else:
                connection = sqlite3.connect(self.path, timeout=self.timeout,
                                             check_same_thread=False, isolation_level=None)
                connection.execute("PRAGMA journal_mode=WAL")
                connection.execute(f"CREATE TABLE IF NOT EXISTS {_TABLE} "
                                   "(k TEXT PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID")
            self._connection = connection
        return self._connection

    def close(self) -> None:
        """Close the connection (a later use opens it again)."""
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    def _translated(self, key: str, err: BaseException, write: bool) -> BaseException | None:
        if not isinstance(err, sqlite3.Error):
            return None
        action = "write" if write else "read"
        return StoreRequestError(f"{self!r}: the {action} of {key!r} failed in SQLite: {err}")

    # ----------------------------------------------------------------- hooks

    def _get(self, key: str) -> bytes:
        with self._translate(key, write=False), self._lock:
            row = self._db().execute(f"SELECT v FROM {_TABLE} WHERE k = ?", (key,)).fetchone()
        if row is None:
            raise KeyNotFoundError(key)
        return bytes(row[0])

    def _get_many(self, keys: list[str]) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        with self._translate(",".join(keys[:3]), write=False), self._lock:
            db = self._db()
            # In groups below SQLite's limit of host parameters per statement.
            for start in range(0, len(keys), 500):
                part = keys[start:start + 500]
                marks = ",".join("?" * len(part))
                for key, value in db.execute(
                        f"SELECT k, v FROM {_TABLE} WHERE k IN ({marks})", part):
                    out[key] = bytes(value)
        return out

    def _contains(self, key: str) -> bool:
        with self._translate(key, write=False), self._lock:
            return self._db().execute(
                f"SELECT 1 FROM {_TABLE} WHERE k = ?", (key,)).fetchone() is not None

    def _set(self, key: str, value: bytes | memoryview) -> None:
        self._set_many({key: value})

    def _set_many(self, items: dict[str, bytes | memoryview]) -> None:
        rows = [(key, bytes(value)) for key, value in items.items()]
        with self._translate(",".join(list(items)[:3]), write=True), self._lock:
            db = self._db()
            with _transaction(db):
                db.executemany(f"INSERT OR REPLACE INTO {_TABLE} (k, v) VALUES (?, ?)", rows)

    def _delete(self, key: str) -> None:
        with self._translate(key, write=True), self._lock:
            db = self._db()
            with _transaction(db):
                deleted = db.execute(f"DELETE FROM {_TABLE} WHERE k = ?", (key,)).rowcount
        if not deleted:
            raise KeyNotFoundError(key)

    def _delete_many(self, keys: list[str]) -> None:
        with self._translate(",".join(keys[:3]), write=True), self._lock:
            db = self._db()
            with _transaction(db):
                db.executemany(f"DELETE FROM {_TABLE} WHERE k = ?", [(k,) for k in keys])

    def _delete_prefix(self, prefix: str) -> None:
        with self._translate(prefix, write=True), self._lock:
            db = self._db()
            with _transaction(db):
                if prefix:
                    db.execute(f"DELETE FROM {_TABLE} WHERE k >= ? AND k < ?",
                               _prefix_range(prefix))
                else:
                    db.execute(f"DELETE FROM {_TABLE}")

    def _list_prefix(self, prefix: str) -> Iterator[str]:
        with self._translate(prefix, write=False), self._lock:
            db = self._db()
            if prefix:
                rows = db.execute(f"SELECT k FROM {_TABLE} WHERE k >= ? AND k < ?",
                                  _prefix_range(prefix)).fetchall()
            else:
                rows = db.execute(f"SELECT k FROM {_TABLE}").fetchall()
        return iter([row[0] for row in rows])

    def _getsize(self, key: str) -> int:
        with self._translate(key, write=False), self._lock:
            row = self._db().execute(
                f"SELECT length(v) FROM {_TABLE} WHERE k = ?", (key,)).fetchone()
        if row is None:
            raise KeyNotFoundError(key)
        return int(row[0])


def _prefix_range(prefix: str) -> tuple[str, str]:
    # The keys below "a/b" are those in ["a/b/", "a/b0"): "0" follows "/" in code
    # points, so an index range replaces a LIKE that would need escaping.
    return prefix + "/", prefix + "0"


class _transaction:  # noqa: N801 (a context manager, used as a statement)
    """BEGIN IMMEDIATE ... COMMIT, rolled back on any error: a batch lands whole."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        self._db.execute("COMMIT" if kind is None else "ROLLBACK")
