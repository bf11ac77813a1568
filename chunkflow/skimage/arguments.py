"""What every function of :mod:`chunkflow.skimage` takes besides scikit-image's own
arguments, and how it reads its image.

Examples
--------
>>> import numpy as np
>>> source = as_source(np.arange(4), "f")
>>> type(source).__name__, source.shape
('Array', (4,))
>>> try:
...     refuse_unsupported("clear_border", {"out": None, "mask": np.ones(2)}, {"mask"})
... except ValueError as error:
...     print(str(error)[:39])
clear_border: mask= is not supported by
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from chunkflow.core.array import Array
from chunkflow.errors import InvalidArgumentError
from chunkflow.graph.labels.labelling import in_memory
from chunkflow.graph.labels.relabel import image_source
from chunkflow.storage import MemoryStore, Store, make_store

__all__ = ["JOB_KEYWORDS", "as_source", "job_keywords", "opened_locations", "refuse_unsupported",
           "work_location"]

#: The keywords of an image-writing job, as :func:`chunkflow.map_chunks` takes them.
JOB_KEYWORDS = ("overwrite", "resume", "scheduler", "progress", "max_memory",
                "storage_options", "job_name", "blocks")


def as_source(source: Any, what: str) -> Any:
    """A location (path, URL, store) or an open array as it is; a dask array refused;
    anything else ``numpy.asarray`` takes, copied into an in-memory array."""
    if isinstance(source, (Array, str, os.PathLike, Store, Mapping)):
        return source
    if type(source).__module__.startswith("dask"):
        raise InvalidArgumentError(f"{what}: a dask array is not taken here; store it first "
                                   "(chunkflow.to_chunkflow) and pass the array")
    return in_memory(source, what)


def _location(place: Any, storage_options: Mapping[str, Any] | None) -> Any:
    """A path or URL as its store, opened with ``storage_options``; anything else as it is."""
    if isinstance(place, str) or hasattr(place, "__fspath__"):
        return make_store(place, storage_options=dict(storage_options or {}) or None)
    return place


def opened_locations(source: Any, out: Any, work: Any,
                     storage_options: Mapping[str, Any] | None,
                     what: str) -> tuple[Array, Any, Any]:
    """The source as an open array and ``out`` and ``work`` as stores, each opened with
    ``storage_options``, so that the jobs after (a label job into an intermediate
    array, a map job reading two arrays) need no ``storage_options``: they apply to the
    caller's locations, never to an intermediate array of this machine.

    Examples
    --------
    >>> import numpy as np
    >>> array, out, work = opened_locations(np.arange(3), "memory://opened-doc", None, None, "f")
    >>> array.shape, type(out).__name__, work
    ((3,), 'FsspecStore', None)
    """
    return (image_source(source, storage_options, what), _location(out, storage_options),
            _location(work, storage_options))


def job_keywords(**given: Any) -> dict[str, Any]:
    """The job keywords given (the others left to chunkflow's defaults)."""
    return {k: v for k, v in given.items() if v is not None and k in JOB_KEYWORDS}


def refuse_unsupported(what: str, given: Mapping[str, Any], names: Iterable[str]) -> None:
    """Refuse, by name, each of scikit-image's keywords in ``names`` given a value other
    than its default ``None``."""
    for name in names:
        if given.get(name) is not None:
            raise InvalidArgumentError(f"{what}: {name}= is not supported by chunkflow.skimage; "
                                       "leave it out (scikit-image's default)")


@contextmanager
def work_location(work: Any, out: Any) -> Iterator[Any]:
    """Where intermediate labels go: ``work`` when given; in memory when the output is;
    else a temporary folder of this machine, removed afterwards (on a cluster of
    several machines, pass a shared ``work``)."""
    if work is not None:
        yield work
    elif out is None or isinstance(out, MemoryStore):
        yield MemoryStore()
    else:
        folder = tempfile.mkdtemp(prefix="chunkflow-skimage-")
        try:
            yield f"{folder}/labels.zarr"
        finally:
            shutil.rmtree(folder, ignore_errors=True)
