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

from collections.abc import Mapping
from typing import Any

import numpy as np

from chunkflow.errors import InvalidArgumentError, MissingDependencyError

__all__ = ["ROW_GROUP_SIZE", "write_parquet"]

#: Rows per Parquet row group (a million objects: tens of MiB per group).
ROW_GROUP_SIZE = 1_000_000


def write_parquet(table: Mapping[str, np.ndarray], out: Any, *,
                  row_group_size: int = ROW_GROUP_SIZE,
                  storage_options: Mapping[str, Any] | None = None) -> Any:
    """Write ``table`` (columns of one length) to the Parquet file ``out`` (a path or
    URL, opened with fsspec and ``storage_options``), ``row_group_size`` rows per
    group; return ``out``. Columns of Python objects (``coords``, ``image``,
    ``slice``...) have no Parquet type and are refused, by name."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as error:
        raise MissingDependencyError("regionprops_table(out=...) writes Parquet with pyarrow: "
                                     "pip install pyarrow") from error
    import fsspec

    objects = [name for name, column in table.items() if np.asarray(column).dtype.kind == "O"]
    if objects:
        raise InvalidArgumentError(f"regionprops_table: the columns {objects} hold Python "
                                   "objects, which Parquet cannot store; leave them out of "
                                   "properties, or return the table (out=None)")
    if row_group_size < 1:
        raise InvalidArgumentError(f"row_group_size must be positive, got {row_group_size}")
    arrow = pa.table({name: pa.array(np.asarray(column)) for name, column in table.items()})
    with fsspec.open(str(out), "wb", **dict(storage_options or {})) as file, \
            pq.ParquetWriter(file, arrow.schema) as writer:
        for start in range(0, max(arrow.num_rows, 1), row_group_size):
            writer.write_table(arrow.slice(start, row_group_size))
    return out
