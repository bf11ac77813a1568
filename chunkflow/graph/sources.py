"""The chunkflow arrays a dask array reads, found in its graph without computing it.

A writer given a dask array (:func:`chunkflow.store`, :func:`chunkflow.to_chunkflow`)
must know whether it reads the output: writing into an array that later tasks still
read changes their input. :func:`arrays_read_by` finds the arrays of
:func:`chunkflow.to_dask` (the graph's array layers), of a lazy
:func:`chunkflow.map_chunks` (its plan's sources) and of ``dask.array.from_array`` over
a chunkflow array (its original-array layer), looking only at those layers: a graph of
a million tasks costs no more than one of ten.

Examples
--------
>>> import chunkflow
>>> z = chunkflow.zeros((4, 4), chunks=(2, 2))
>>> x = chunkflow.to_dask(z) + 1
>>> [array_location(a) == array_location(z) for a in arrays_read_by(x)]
[True]
>>> source_locations(x)  # doctest: +ELLIPSIS
[("the array '/' read by the dask array", 'memory:...')]
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from chunkflow.core.array import Array
from chunkflow.jobs import array_location

__all__ = ["arrays_read_by", "source_locations", "source_reads"]

# Layers whose values may be chunkflow arrays: to_dask's array, a map job's plan, and
# dask.array.from_array's original array.
_PREFIXES = ("chunkflow-array-", "chunkflow-job-", "array-original-", "original-")


def _values(layer: Any) -> Iterator[Any]:
    mapping = getattr(layer, "mapping", None)
    if isinstance(mapping, dict):
        yield from mapping.values()


def arrays_read_by(x: Any) -> list[Array]:
    """The chunkflow arrays that computing the dask collection ``x`` reads."""
    return [array for array, _ in _arrays_and_halos(x)]


def _arrays_and_halos(x: Any) -> list[tuple[Array, tuple[int, ...]]]:
    graph = x.__dask_graph__() if hasattr(x, "__dask_graph__") else None
    layers = getattr(graph, "layers", None) or {}
    found: list[tuple[Array, tuple[int, ...]]] = []
    for name, layer in layers.items():
        if not str(name).startswith(_PREFIXES):
            continue
        for value in _values(layer):
            value = getattr(value, "value", value)  # a DataNode wraps the array
            if isinstance(value, Array):
                found.append((value, ()))
            else:  # a map job's plan
                depth = tuple(getattr(value, "depth", ()) or ())
                found.extend((s, depth) for s in getattr(value, "sources", ()) or ()
                             if isinstance(s, Array))
    return found


def source_reads(x: Any) -> list[tuple[str, str, tuple[int, ...]]]:
    """``(label, canonical location, halo)`` of every array ``x`` reads; the halo is
    a lazy :func:`chunkflow.map_chunks`' ``depth`` (``()`` where it is not known)."""
    return [(f"the array {a.path or '/'!r} read by the dask array", array_location(a), depth)
            for a, depth in _arrays_and_halos(x)]


def source_locations(x: Any) -> list[tuple[str, str]]:
    """``(label, canonical location)`` of every array ``x`` reads (for
    :func:`~chunkflow.jobs.check_not_source`)."""
    return [(f"the array {a.path or '/'!r} read by the dask array", array_location(a))
            for a in arrays_read_by(x)]
