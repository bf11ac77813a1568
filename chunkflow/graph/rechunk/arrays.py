"""The arrays of a rechunk: the region read, the output described before it is created,
and the intermediate array between two passes.

Everything is checked on in-memory templates first (:func:`output_template`), so that
a refused rechunk creates nothing; the output and the intermediate are created only
once the plan holds.

Examples
--------
>>> import chunkflow
>>> z = chunkflow.zeros((10, 20), chunks=(5, 5), dtype="u1")
>>> target_chunk_shape({1: 20}, z, (10, 20)), target_chunk_shape(-1, z, (10, 20))
((5, 20), (10, 20))
>>> source_region((slice(2, 8),), z)
((slice(2, 8, None), slice(0, 20, None)), (2, 0), (6, 20))
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from chunkflow.api.hierarchy import open_node
from chunkflow.api.zarr3 import create_array
from chunkflow.core.array import Array
from chunkflow.errors import (
    ArgumentTypeError,
    CastingError,
    ContainsArrayError,
    InvalidSelectionError,
)
from chunkflow.graph.casting import DEFAULT_CASTING, cast_block
from chunkflow.graph.write import unit_region
from chunkflow.storage import Store, make_store

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from chunkflow.storage import StoreLike

__all__ = [
    "INTERMEDIATE_COMPRESSORS", "Intermediate", "OutputSpec", "TargetChunks",
    "output_template", "refuse_existing", "source_region", "target_chunk_shape",
]

#: The target chunks a rechunk takes: one size for every axis, one per axis (``-1`` or
#: ``None``: the whole axis), or ``{axis: size}`` for some axes (the others keep the
#: source's chunks).
TargetChunks = int | Sequence[int | None] | Mapping[int, int | None]

# The metadata of a store's root node, in either format.
ROOT_KEYS = ("zarr.json", ".zgroup", ".zattrs", ".zarray")
# The intermediate's attribute saying that its creation made the root group of temp.
MADE_ROOT = "chunkflow_made_root"
# The intermediate's chunk keys: one folder of files ("0.3.1"), not a folder per chunk
# row; making and removing those folders took a sixth of a small rechunk's time.
FLAT_KEYS = {"name": "v2", "configuration": {"separator": "."}}
# The intermediate is written once and read once, by this job only: a fast codec.
INTERMEDIATE_COMPRESSORS = [{"name": "blosc", "configuration": {
    "cname": "lz4", "clevel": 1, "shuffle": "shuffle", "typesize": 1, "blocksize": 0}}]


def source_region(region: Any, source: Array) -> tuple[tuple[slice, ...], tuple[int, ...],
                                                        tuple[int, ...]]:
    """``region`` as unit-step slices of ``source``, their starts and the shape they span.

    Raises
    ------
    InvalidSelectionError
        For integers, steps other than 1, or more entries than dimensions.
    """
    slices = unit_region(region, source, "rechunk")
    starts = tuple(s.start for s in slices)
    return tuple(slices), starts, tuple(s.stop - s.start for s in slices)


def target_chunk_shape(chunks: TargetChunks, source: Array, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The target chunk shape: ``chunks`` per axis, whole axes for ``-1``/``None``, the
    source's chunks for the axes a dict leaves out."""
    name = source.path or "/"
    if isinstance(chunks, Mapping):
        bad = [axis for axis in chunks if not isinstance(axis, int) or not
               -source.ndim <= axis < source.ndim]
        if bad:
            raise InvalidSelectionError(
                f"rechunk: array {name!r} has {source.ndim} axes; chunks names axes {bad}"
            )
        given = {axis % source.ndim: size for axis, size in chunks.items()}
        sizes: list[Any] = [given.get(axis, source.chunks[axis]) for axis in range(source.ndim)]
    elif isinstance(chunks, (int, np.integer)):
        sizes = [chunks] * source.ndim
    else:
        sizes = list(chunks)
    if len(sizes) != source.ndim:
        raise InvalidSelectionError(
            f"rechunk: array {name!r} has {source.ndim} axes; chunks {chunks!r} has "
            f"{len(sizes)}"
        )
    result = []
    for axis, (size, length) in enumerate(zip(sizes, shape)):
        if size is None or size == -1:
            size = max(1, length)
        if not isinstance(size, (int, np.integer)) or isinstance(size, bool) or size < 1:
            raise InvalidSelectionError(
                f"rechunk: chunks[{axis}] must be a whole number >= 1 (or -1 for the "
                f"whole axis), got {size!r}"
            )
        result.append(int(size))
    return tuple(result)


@dataclass(frozen=True)
class OutputSpec:
    """What :func:`create_array` is given for the output (the store aside)."""

    kwargs: Mapping[str, Any]

    def create(self, location: StoreLike, storage_options: Mapping[str, Any] | None,
               overwrite: bool, attributes: Mapping[str, Any] | None = None) -> Array:
        """The output at ``location``, with ``attributes`` added (a job's mark)."""
        kwargs = dict(self.kwargs)
        kwargs["attributes"] = {**kwargs.get("attributes", {}), **(attributes or {})}
        return create_array(location, **kwargs, overwrite=overwrite, cache=False,
                            storage_options=dict(storage_options or {}) or None)


def output_template(source: Array, shape: tuple[int, ...], chunks: tuple[int, ...],
                    shards: Sequence[int] | None, dtype: DTypeLike | None, zarr_format: int | None,
                    compressors: Any, casting: str = DEFAULT_CASTING) -> tuple[OutputSpec, Array]:
    """The output's creation arguments and an in-memory array made with them (which
    checks them all, creating nothing where the output goes)."""
    out_dtype = np.dtype(dtype) if dtype is not None else source.dtype
    fmt = zarr_format or (3 if shards is not None else source.zarr_format)
    if compressors is Ellipsis:
        compressors = source.compressor  # the source's, in either format's spelling
    kwargs: dict[str, Any] = {
        "shape": shape, "dtype": out_dtype, "chunks": chunks, "zarr_format": fmt,
        "compressors": compressors, "attributes": dict(source.attrs),
    }
    if shards is not None:
        kwargs["shards"] = tuple(int(s) for s in shards)
    fill = output_fill(source, out_dtype, casting)
    if fill is not None:
        kwargs["fill_value"] = fill
    if fmt == 3 and source.zarr_format == 3 and source.dimension_names is not None:
        kwargs["dimension_names"] = source.dimension_names
    spec = OutputSpec(kwargs)
    return spec, spec.create(None, None, overwrite=False)


def output_fill(source: Array, dtype: np.dtype, casting: str = DEFAULT_CASTING) -> Any:
    """The source's fill value converted as its values are (``casting``), or ``None``
    (the output dtype's default) where it cannot be.

    A missing source chunk reads as the source's fill value and is written as the
    output's: with the converted value, it stays missing and reads back equal. Every
    block is written, so any fill value the dtype holds gives the same values; where
    the conversion would change the value (``same_value``) or fails, the values
    themselves meet the casting rule in the tasks that write them.

    Examples
    --------
    >>> import chunkflow
    >>> z = chunkflow.full(4, fill_value=300, chunks=2, dtype="u2")
    >>> int(output_fill(z, np.dtype("u4"))), output_fill(z, np.dtype("u1"))
    (300, None)
    >>> int(output_fill(z, np.dtype("u1"), "unsafe"))  # as numpy's astype: 300 wraps
    44
    """
    if source.fill_value is None:
        return None
    rule = "same_value" if casting == "same_value" else "unsafe"  # numpy's rules: astype
    value = np.asarray(source.fill_value, source.dtype).reshape(1)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # numpy's cast warnings: the rule decides
            return cast_block(value, dtype, rule, "the source's fill value")[0]
    except (CastingError, ValueError, TypeError, OverflowError, RuntimeError):
        return None  # numpy's own refusals (NaT into a 1-character string: RuntimeError)


def refuse_existing(location: StoreLike, storage_options: Mapping[str, Any] | None) -> None:
    """Raise when something is at ``location`` already (without ``overwrite``)."""
    if isinstance(location, Array):
        raise ArgumentTypeError("rechunk: out must be a path, a URL or a store for a new array, "
                                "not an open Array")
    try:
        open_node(location, mode="r", storage_options=dict(storage_options or {}) or None)
    except (FileNotFoundError, KeyError):
        return
    raise ContainsArrayError(
        f"rechunk: out {location!r} holds an array or group already; pass overwrite=True "
        "to replace it"
    )


@dataclass(frozen=True)
class Intermediate:
    """The intermediate array ``name`` under ``store`` (Zarr v3, a fast codec).

    Creating an array below a store's root makes a root group where there was none;
    the array's attribute :data:`MADE_ROOT` remembers that (for a resumed job too), so
    that :meth:`remove` leaves ``temp`` as it found it.
    """

    store: Store
    name: str

    @classmethod
    def under(cls, temp: StoreLike, name: str,
              storage_options: Mapping[str, Any] | None) -> Intermediate:
        return cls(make_store(temp, storage_options=dict(storage_options or {}) or None), name)

    def create(self, shape: tuple[int, ...], chunks: tuple[int, ...], dtype: np.dtype,
               fill_value: Any, attributes: Mapping[str, Any]) -> Array:
        """The array, replacing what an earlier run of the same job left."""
        made_root = not any(key in self.store for key in ROOT_KEYS)
        return create_array(self.store, name=self.name, shape=shape, chunks=chunks,
                            dtype=dtype, fill_value=fill_value,
                            attributes={**attributes, MADE_ROOT: made_root},
                            compressors=INTERMEDIATE_COMPRESSORS, zarr_format=3,
                            chunk_key_encoding=FLAT_KEYS, overwrite=True, cache=False)

    def remove(self, array: Array) -> None:
        """Delete ``array`` (this intermediate), and the root node its creation made."""
        made_root = bool(array.attrs.get(MADE_ROOT, False))
        self.store.delete_prefix(self.name)
        if made_root:
            self.store.delete_many([k for k in ROOT_KEYS if k in self.store])
