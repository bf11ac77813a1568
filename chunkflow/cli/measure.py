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
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

import chunkflow
from chunkflow.cli.cleanup import waited_for
from chunkflow.cli.destination import check_table_location
from chunkflow.cli.label import labels_refused
from chunkflow.cli.nodes import naming_source, open_array_at
from chunkflow.cli.options import (
    add_compute_options,
    add_max_memory_option,
    progress_wanted,
    storage_options,
)
from chunkflow.cli.tables import check_table_output
from chunkflow.errors import LabelError, UsageError
from chunkflow.graph.labels.measuring import DEFAULT_PROPERTIES
from chunkflow.graph.labels.properties import parse_properties as parse_properties_of_measure
from chunkflow.skimage.measure import regionprops_table

__all__ = ["check_label_dtype", "check_property_names", "intensity_hint", "parse_properties",
           "register", "run_measure"]

#: Objects smaller than this on average (in pixels) suggest an image given as LABELS.
SMALLEST_MEAN_AREA = 4.0
#: Objects filling less of their bounding box than this (median) suggest one too.
SMALLEST_MEDIAN_EXTENT = 0.05


def parse_properties(text: str) -> list[str]:
    """``label,area,bbox``: property names, as ``regionprops_table`` names them."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"{text!r} names no property; e.g. label,area,bbox")
    return names


def run_measure(args: argparse.Namespace) -> int:
    """Measure the objects of ``args.labels`` into ``args.output``.

    Everything is checked before the first chunk is read: the table's format and
    place (:func:`~chunkflow.cli.tables.check_table_output`), the property names, and
    that LABELS holds integers.
    """
    check_table_location(args, args.output)
    writer = check_table_output(args.output, overwrite=args.overwrite)
    check_property_names(args.properties, args.intensity is not None)
    labels = open_array_at(args.labels, storage_options(args, args.labels), cache=False)
    check_label_dtype(args.labels, labels.dtype)
    intensity: Any = None
    if args.intensity is not None:
        intensity = open_array_at(args.intensity, storage_options(args, args.intensity),
                                  cache=False)
    start = time.perf_counter()
    with waited_for(args.scheduler), naming_source(args.labels), labels_refused():
        if writer.streams:  # Parquet in row groups: the table is never whole in memory
            writer.write_with(lambda path: regionprops_table(
                labels, intensity, args.properties, out=str(path), max_memory=args.max_memory,
                scheduler=args.scheduler, progress=progress_wanted(args)))
            table = parquet_summary(writer.path)
        else:
            table = chunkflow.measure(labels, intensity, properties=args.properties,
                                      max_memory=args.max_memory, scheduler=args.scheduler,
                                      progress=progress_wanted(args))
            writer.write(table)
    count = int(table["rows"][0]) if "rows" in table else \
        len(next(iter(table.values()))) if table else 0
    seconds = time.perf_counter() - start
    print(f"{count} object{'' if count == 1 else 's'} measured in {seconds:.2f} s, written "
          f"to {args.output}")
    hint = intensity_hint(args.labels, table, labels.size)
    if hint:
        print(f"chunkflow measure: warning: {hint}", file=sys.stderr)
    return 0


def summary_columns(names: list[str]) -> list[str]:
    """The columns :func:`intensity_hint` looks at."""
    return [name for name in names if name in ("label", "area") or name.startswith("bbox-")]


def parquet_summary(path: Path) -> dict[str, np.ndarray]:
    """The label, area and box columns of a written Parquet table, a row group at a
    time: the rows of the first group, and the area's total over all of them (what
    :func:`intensity_hint` needs), never the whole table."""
    import pyarrow.parquet as pq

    file = pq.ParquetFile(path)
    columns = summary_columns(file.schema_arrow.names)
    if file.metadata.num_row_groups == 0:
        return {name: np.empty(0) for name in columns}
    first = {name: np.asarray(column)
             for name, column in file.read_row_group(0, columns=columns).to_pydict().items()}
    if "area" in first:  # the whole area's sum, group by group, for "no background"
        total = sum(float(np.sum(file.read_row_group(i, columns=["area"]).column(0)))
                    for i in range(file.metadata.num_row_groups))
        first["area_total"] = np.array([total])
    first["rows"] = np.array([file.metadata.num_rows])
    return first


def check_property_names(names: list[str], has_intensity: bool) -> None:
    """Refuse a name ``regionprops_table`` does not know (listing the ones it does), or
    an intensity property without ``--intensity``."""
    try:
        parse_properties_of_measure(names, has_intensity)
    except LabelError as err:
        message = str(err).removeprefix("measure: ")
        raise UsageError(f"--properties: {message}") from err


def check_label_dtype(location: str, dtype: np.dtype[Any]) -> None:
    """LABELS must hold integers (or booleans): an image is labelled first."""
    if dtype.kind not in "iub":
        raise UsageError(
            f"LABELS {location!r} holds {dtype} values, not integer labels; is it the image? "
            f"Label it first (chunkflow label {location} LABELS.zarr --threshold VALUE) and "
            f"measure the labels, with --intensity {location} for its values")


def intensity_hint(location: str, table: Mapping[str, np.ndarray], pixels: int) -> str | None:
    """A hint when the table looks like an image was passed as LABELS (each grey level
    of an image becomes an 'object'): no background (label 0) anywhere, objects of under
    :data:`SMALLEST_MEAN_AREA` pixels on average, or objects scattered over their boxes
    (a median extent, area over box area, under :data:`SMALLEST_MEDIAN_EXTENT`)."""
    area = table.get("area")
    if area is None or len(area) == 0:
        return None
    # A streamed table (parquet_summary) has the first rows, the total and the count.
    count = int(table["rows"][0]) if "rows" in table else len(area)
    covered = float(table["area_total"][0]) if "area_total" in table else float(np.sum(area))
    extent = _median_extent(table, area)
    if covered >= pixels:
        why = "no pixel is background (label 0)"
    elif covered / count < SMALLEST_MEAN_AREA:
        why = f"its {count} objects cover {covered / count:.1f} pixels each on average"
    elif extent is not None and extent < SMALLEST_MEDIAN_EXTENT:
        why = (f"its {count} objects are scattered: a median object fills "
               f"{extent:.1%} of its bounding box")
    else:
        return None
    return (f"LABELS {location!r} looks like an intensity image, not labels: {why}. If it "
            f"is the image, label it first (chunkflow label {location} LABELS.zarr "
            "--threshold VALUE) and pass it as --intensity")


def _median_extent(table: Mapping[str, np.ndarray], area: np.ndarray) -> float | None:
    """The median of area / bounding-box area, when the table has the box."""
    ndim = sum(1 for name in table if name.startswith("bbox-")) // 2
    if ndim == 0:
        return None
    box = np.ones(len(area))
    for axis in range(ndim):
        box *= table[f"bbox-{axis + ndim}"] - table[f"bbox-{axis}"]
    return float(np.median(area / box))


def register(commands: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``measure`` to the command parser."""
    parser = commands.add_parser(
        "measure", parents=parents,
        help="table each object's size, position and intensity (regionprops_table's columns)",
        description="Measure every object of the label array LABELS (as "
                    "skimage.measure.regionprops_table, in one pass over its blocks) and "
                    "write the table to --output (.csv, .tsv, .parquet or .json); an existing "
                    "file is kept unless --overwrite.",
    )
    parser.add_argument("labels", metavar="LABELS", help="the label array (folder, .zip or URL)")
    parser.add_argument("--intensity", default=None, metavar="IMG",
                        help="an image of the same shape, for the intensity_* properties")
    parser.add_argument("--properties", type=parse_properties,
                        default=list(DEFAULT_PROPERTIES), metavar="NAMES",
                        help="comma-separated regionprops names (default: "
                             f"{','.join(DEFAULT_PROPERTIES)})")
    parser.add_argument("--output", required=True, metavar="FILE",
                        help="where the table goes, by extension: .csv, .tsv, .parquet "
                             "(pyarrow, else fastparquet) or .json (one object per row)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace FILE if it exists (it is replaced only once the new "
                             "table is whole)")
    add_max_memory_option(parser)
    add_compute_options(parser)
    parser.set_defaults(run=run_measure)

