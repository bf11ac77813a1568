"""Unfinished outputs read through the engine: a warning, and attributes that say so.

An array that an unfinished job is writing (its ``chunkflow_job`` mark, see
:mod:`chunkflow.jobs`) holds the fill value where blocks are not written yet. The
engine says so in three places, as ``chunkflow.open`` does with its warning:

- an :class:`~chunkflow.errors.IncompleteJobWarning` at every ``open_dataset`` (and
  each group of ``open_datatree``) naming the unfinished variables;
- the attribute ``chunkflow_unfinished`` on each such variable: a line saying whose
  output it is and how many blocks are done (counted where listing is cheap);
- the attribute ``chunkflow_unfinished`` on the dataset: the names of those
  variables (a list of str), absent when every variable is finished.

The job's own mark (a dict of tokens) is no user attribute and is left out of the
variable's attributes: ``to_netcdf`` could not write it, and ``to_zarr`` would make
the copy look like the job's output. The line above is written instead, so a copy
made through xarray still says where it came from.

Examples
--------
>>> import chunkflow
>>> unfinished_description(chunkflow.zeros((2,))) is None
True
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

from chunkflow.core.array import Array
from chunkflow.errors import IncompleteJobWarning
from chunkflow.jobs import job_status

__all__ = ["UNFINISHED_ATTRIBUTE", "unfinished_description", "warn_unfinished"]

#: The attribute that marks unfinished variables (a str) and lists them on the dataset.
UNFINISHED_ATTRIBUTE = "chunkflow_unfinished"


def unfinished_description(array: Array) -> str | None:
    """A line saying that ``array`` is an unfinished job's output, or ``None``.

    Reads nothing to know (the mark comes with the metadata); counts the blocks done
    with one listing where listing is cheap (folders, memory, zip).
    """
    status = job_status(array, count=array.store.listing_is_cheap)
    if status is None:
        return None
    return (f"output of an unfinished chunkflow job ({status.name or status.token[:8]}): "
            f"{status.describe()}; blocks not written read as the fill value. Rerun the "
            f"job with resume=True to finish it (`chunkflow status` lists what remains)")


def warn_unfinished(unfinished: Mapping[str, str], where: str, stacklevel: int) -> None:
    """Warn that the variables ``unfinished`` (name: description) of the group
    ``where`` are unfinished jobs' outputs."""
    if not unfinished:
        return
    listed = "; ".join(f"{name!r}: {line}" for name, line in sorted(unfinished.items()))
    warnings.warn(
        f"{where}: {len(unfinished)} variable(s) are outputs of unfinished chunkflow jobs, "
        f"marked with the attribute {UNFINISHED_ATTRIBUTE!r} ({listed})",
        IncompleteJobWarning, stacklevel=stacklevel)
