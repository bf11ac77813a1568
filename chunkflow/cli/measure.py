"""``chunkflow measure``: a table of the objects of a label array, as CSV or Parquet.

Examples
--------
>>> parse_properties("label,area, bbox")
['label', 'area', 'bbox']
>>> import tempfile, numpy as np, chunkflow
>>> from chunkflow.cli import main
>>> with tempfile.TemporaryDirectory() as tmp:
...     _ = chunkflow.array(np.array([[1, 1, 0], [0, 0, 2]]), chunks=(1, 2),
...                         store=f"{tmp}/labels.zarr")
...     main(["measure", f"{tmp}/labels.zarr", "--properties", "label,area", "--output",
...           f"{tmp}/t.csv", "-q"])
...     print(open(f"{tmp}/t.csv").read())
2 objects measured in ... written to .../t.csv
0
label,area
1,2.0
2,1.0
<BLANKLINE>
"""

from __future__ import annotations

import argparse
import csv
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

import chunkflow
from chunkflow.cli.cleanup import waited_for
from chunkflow.cli.label import labels_refused
from chunkflow.cli.nodes import naming_source, open_array_at
from chunkflow.cli.options import add_compute_options, progress_wanted, storage_options
from chunkflow.errors import MissingDependencyError
from chunkflow.graph.labels.measuring import DEFAULT_PROPERTIES

__all__ = ["parse_properties", "register", "run_measure", "write_table"]


def parse_properties(text: str) -> list[str]:
    """``label,area,bbox``: property names, as ``regionprops_table`` names them."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"{text!r} names no property; e.g. label,area,bbox")
    return names


def write_table(table: Mapping[str, np.ndarray], output: str) -> None:
    """``table`` as CSV, or as Parquet when ``output`` ends in ``.parquet`` (pyarrow)."""
    path = Path(output)
    if path.suffix.lower() in (".parquet", ".pq"):
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError as err:
            raise MissingDependencyError(
                f"writing {output!r} as Parquet needs pyarrow (pip install pyarrow); or "
                "name a .csv file") from err
        pq.write_table(pa.table({name: pa.array(column) for name, column in table.items()}),
                       str(path))
        return
    with path.open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(list(table))
        writer.writerows(zip(*(column.tolist() for column in table.values())))


def run_measure(args: argparse.Namespace) -> int:
    """Measure the objects of ``args.labels`` into ``args.output``."""
    labels = open_array_at(args.labels, storage_options(args, args.labels), cache=False)
    intensity: Any = None
    if args.intensity is not None:
        intensity = open_array_at(args.intensity, storage_options(args, args.intensity),
                                  cache=False)
    start = time.perf_counter()
    with waited_for(args.scheduler), naming_source(args.labels), labels_refused():
        table = chunkflow.measure(labels, intensity, properties=args.properties,
                                  max_memory=args.max_memory, scheduler=args.scheduler,
                                  progress=progress_wanted(args))
    write_table(table, args.output)
    count = len(next(iter(table.values()))) if table else 0
    seconds = time.perf_counter() - start
    print(f"{count} object{'' if count == 1 else 's'} measured in {seconds:.2f} s, written "
          f"to {args.output}")
    return 0


def register(commands: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``measure`` to the command parser."""
    parser = commands.add_parser(
        "measure", parents=parents,
        help="table each object's size, position and intensity (regionprops_table's columns)",
        description="Measure every object of the label array LABELS (as "
                    "skimage.measure.regionprops_table, in one pass over its blocks) and "
                    "write the table to --output: CSV, or Parquet for a .parquet name.",
    )
    parser.add_argument("labels", metavar="LABELS", help="the label array (folder, .zip or URL)")
    parser.add_argument("--intensity", default=None, metavar="IMG",
                        help="an image of the same shape, for the intensity_* properties")
    parser.add_argument("--properties", type=parse_properties,
                        default=list(DEFAULT_PROPERTIES), metavar="NAMES",
                        help="comma-separated regionprops names (default: "
                             f"{','.join(DEFAULT_PROPERTIES)})")
    parser.add_argument("--output", required=True, metavar="FILE",
                        help="where the table goes: FILE.csv or FILE.parquet")
    parser.add_argument("--max-memory", default=None, metavar="SIZE",
                        help="what one task may use, e.g. '512 MiB'")
    add_compute_options(parser)
    parser.set_defaults(run=run_measure)

