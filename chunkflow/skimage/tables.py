"""Tables written as Parquet files (pyarrow), in row groups.

Examples
--------
>>> import numpy as np, tempfile, pyarrow.parquet as pq
>>> table = {"label": np.array([1, 2, 3]), "bbox-0": np.array([0, 4, 1])}
>>> path = tempfile.mkdtemp() + "/objects.parquet"
>>> write_parquet(table, path, row_group_size=2) == path
True
>>> pq.ParquetFile(path).metadata.num_row_groups, pq.read_table(path)["bbox-0"].to_pylist()
(2, [0, 4, 1])
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from chunkflow.errors import InvalidArgumentError, MissingDependencyError

__all__ = ["ROW_GROUP_SIZE", "write_parquet", "write_parquet_groups"]

#: Rows per Parquet row group (a million objects: tens of MiB per group).
ROW_GROUP_SIZE = 1_000_000


def _arrow() -> Any:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as error:
        raise MissingDependencyError("regionprops_table(out=...) writes Parquet with pyarrow: "
                                     "pip install pyarrow") from error
    return pa, pq


def _checked(table: Mapping[str, np.ndarray]) -> None:
    objects = [name for name, column in table.items() if np.asarray(column).dtype.kind == "O"]
    if objects:
        raise InvalidArgumentError(f"regionprops_table: the columns {objects} hold Python "
                                   "objects, which Parquet cannot store; leave them out of "
                                   "properties, or return the table (out=None)")


def write_parquet(table: Mapping[str, np.ndarray], out: Any, *,
                  row_group_size: int = ROW_GROUP_SIZE,
                  storage_options: Mapping[str, Any] | None = None) -> Any:
    """Write ``table`` (columns of one length) to the Parquet file ``out`` (a path or
    URL, opened with fsspec and ``storage_options``), ``row_group_size`` rows per
    group; return ``out``. Columns of Python objects (``coords``, ``image``,
    ``slice``...) have no Parquet type and are refused, by name."""
    return write_parquet_groups([table], out, row_group_size=row_group_size,
                                storage_options=storage_options)


def write_parquet_groups(groups: Iterable[Mapping[str, np.ndarray]], out: Any, *,
                         row_group_size: int = ROW_GROUP_SIZE,
                         storage_options: Mapping[str, Any] | None = None) -> Any:
    """Write the tables of ``groups`` (the same columns in each), one after the other,
    to the Parquet file ``out`` (a path or URL, opened with fsspec and
    ``storage_options``), in row groups of ``row_group_size`` rows (the last one
    shorter); return ``out``. One table of ``groups`` and less than a row group of
    the previous ones are held at a time. The file is opened once the first table is
    known (its columns are the schema; columns of Python objects are refused, by
    name, before anything is written)."""
    if isinstance(row_group_size, bool) or not isinstance(row_group_size, (int, np.integer)) \
            or row_group_size < 1:
        raise InvalidArgumentError(f"row_group_size must be a positive integer, got "
                                   f"{row_group_size!r}")
    pa, pq = _arrow()
    import fsspec

    writer = file = pending = None
    try:
        for group in groups:
            _checked(group)
            arrow = pa.table({name: pa.array(np.asarray(column)) for name, column in group.items()})
            if writer is None:
                file = fsspec.open(str(out), "wb", **dict(storage_options or {})).open()
                writer = pq.ParquetWriter(file, arrow.schema)
            arrow = arrow.cast(writer.schema)
            pending = arrow if pending is None else pa.concat_tables([pending, arrow])
            full = pending.num_rows - pending.num_rows % row_group_size
            for start in range(0, full, row_group_size):
                writer.write_table(pending.slice(start, row_group_size),
                                   row_group_size=row_group_size)
            pending = pending.slice(full)
        if writer is not None and pending is not None and pending.num_rows:
            writer.write_table(pending, row_group_size=row_group_size)
    finally:
        if writer is not None:
            writer.close()
        if file is not None:
            file.close()
    return out
