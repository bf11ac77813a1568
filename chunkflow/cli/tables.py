"""Table outputs of the command line: the format from the extension, checked before work.

``chunkflow measure LABELS --output FILE`` writes CSV (``.csv``), tab-separated text
(``.tsv``), Parquet (``.parquet``/``.pq``: pyarrow, else fastparquet) or JSON
(``.json``: a list of one object per row). Everything that can be known before the
work is checked first (:func:`check_table_output`): the extension, a file already there
(replaced only with ``--overwrite``, as arrays), the folder it goes in, and the Parquet
writer. The file is written beside its final name and renamed into place, so a failure
never leaves half a table, nor removes the old one.

Examples
--------
>>> import os, tempfile, numpy as np
>>> with tempfile.TemporaryDirectory() as tmp:
...     path = os.path.join(tmp, "t.tsv")
...     writer = check_table_output(path, overwrite=False)
...     writer.write({"label": np.array([1, 2]), "area": np.array([3.0, 4.5])})
...     print(open(path).read().replace("\\t", " <tab> "), end="")
label <tab> area
1 <tab> 3.0
2 <tab> 4.5
>>> check_table_output("t.xlsx", overwrite=False)  # doctest: +ELLIPSIS
Traceback (most recent call last):
chunkflow.errors.UsageError: --output 't.xlsx': a table is written as one of .csv, ...; not .xlsx
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

import numpy as np

from chunkflow.errors import MissingDependencyError, UsageError

__all__ = ["TABLE_FORMATS", "TableWriter", "check_table_output"]

Table = Mapping[str, np.ndarray]

#: Extension -> format name.
TABLE_FORMATS = {".csv": "csv", ".tsv": "tsv", ".parquet": "parquet", ".pq": "parquet",
                 ".json": "json"}


@dataclass(frozen=True)
class TableWriter:
    """Writes a table to ``path`` in ``format`` (made by :func:`check_table_output`)."""

    path: Path
    format: str
    parquet_engine: str | None = None

    def write(self, table: Table) -> None:
        """Write ``table`` (columns of equal length), replacing ``path`` at the end."""
        write: Callable[[Table, Path], None] = {
            "csv": _write_delimited(","), "tsv": _write_delimited("\t"),
            "json": _write_json, "parquet": self._write_parquet,
        }[self.format]
        with _written_then_renamed(self.path) as partial:
            write(table, partial)

    @property
    def streams(self) -> bool:
        """Whether the table can be written group by group as it is measured (Parquet
        through pyarrow: :func:`chunkflow.skimage.measure.regionprops_table`'s ``out=``)."""
        return self.format == "parquet" and self.parquet_engine == "pyarrow"

    def write_with(self, fill: Callable[[Path], None]) -> None:
        """Let ``fill`` write the file at the path it is given; renamed onto ``path`` when
        it returns, as :meth:`write` does."""
        with _written_then_renamed(self.path) as partial:
            fill(partial)

    def _write_parquet(self, table: Table, path: Path) -> None:
        if self.parquet_engine == "pyarrow":
            import pyarrow as pa
            import pyarrow.parquet as pq

            pq.write_table(pa.table({name: pa.array(col) for name, col in table.items()}),
                           str(path))
        else:  # fastparquet writes pandas frames
            import fastparquet
            import pandas as pd

            fastparquet.write(str(path), pd.DataFrame({n: c for n, c in table.items()}))


def check_table_output(output: str, *, overwrite: bool) -> TableWriter:
    """The writer for ``--output``, or a refusal naming what is wrong (before any work).

    Raises
    ------
    UsageError
        An extension that is no table format, a file already there without
        ``overwrite``, a folder in its place, or a folder to write in that is missing.
    MissingDependencyError
        A Parquet name with neither pyarrow nor fastparquet installed.
    """
    path = Path(output)
    suffix = path.suffix.lower()
    if suffix not in TABLE_FORMATS:
        raise UsageError(f"--output {output!r}: a table is written as one of "
                         f"{', '.join(TABLE_FORMATS)}; not {suffix or 'a name without one'}")
    if path.is_dir():
        raise UsageError(f"--output {output!r} is a folder; name a file such as table{suffix}")
    if path.exists() and not overwrite:
        raise UsageError(f"--output {output!r} already exists; pass --overwrite to replace it")
    if not path.parent.is_dir():
        raise UsageError(f"--output {output!r}: the folder {str(path.parent)!r} does not exist")
    format_name = TABLE_FORMATS[suffix]
    engine = _parquet_engine(output) if format_name == "parquet" else None
    return TableWriter(path, format_name, engine)


def _parquet_engine(output: str) -> str:
    for engine in ("pyarrow", "fastparquet"):
        if find_spec(engine) is not None and (engine == "pyarrow" or find_spec("pandas")):
            return engine
    raise MissingDependencyError(
        f"--output {output!r}: writing Parquet needs pyarrow or fastparquet, and neither is "
        "installed (python -m pip install pyarrow); or name a .csv, .tsv or .json file")


def _write_delimited(delimiter: str) -> Callable[[Table, Path], None]:
    def write(table: Table, path: Path) -> None:
        with path.open("w", newline="") as file:
            writer = csv.writer(file, delimiter=delimiter, lineterminator="\n")
            writer.writerow(list(table))
            writer.writerows(zip(*(column.tolist() for column in table.values())))
    return write


def _write_json(table: Table, path: Path) -> None:
    names = list(table)
    rows = [dict(zip(names, values))
            for values in zip(*(column.tolist() for column in table.values()))]
    path.write_text(json.dumps(rows, allow_nan=True) + "\n")


@contextlib.contextmanager
def _written_then_renamed(path: Path) -> Iterator[Path]:
    """A scratch name beside ``path``; renamed onto ``path`` only when writing ends."""
    handle, scratch = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial",
                                       dir=path.parent)
    os.close(handle)
    try:
        yield Path(scratch)
        os.replace(scratch, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(scratch)
