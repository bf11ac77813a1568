"""The rows of an array's ``.info`` and ``info_complete()``, as zarr-python 3's
``ArrayInfo`` lays them out (plus the array's name and store URL).

``info_complete()`` adds what needs a listing of the store (bytes stored, storage ratio,
initialized shards or chunks). ``.info`` adds them too where listing is cheap (memory,
folder and zip stores, :attr:`~chunkflow.storage.Store.listing_is_cheap`), as
zarr-python 2's ``.info`` did; on object storage it reads nothing from the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from chunkflow.core.info import InfoReport, format_bytes
from chunkflow.core.reprs import describe_codecs
from chunkflow.jobs import job_status
from chunkflow.storage import Store

__all__ = ["InfoSource", "array_info", "describe_stage"]


class InfoSource(Protocol):
    """What ``.info`` reads of an array (a :class:`~chunkflow.Array` has it all)."""

    @property
    def name(self) -> str: ...

    @property
    def path(self) -> str: ...

    @property
    def attrs(self) -> Any: ...

    @property
    def store(self) -> Store: ...

    @property
    def zarr_format(self) -> int: ...

    @property
    def dtype(self) -> np.dtype: ...

    @property
    def fill_value(self) -> Any: ...

    @property
    def shape(self) -> tuple[int, ...]: ...

    @property
    def shards(self) -> tuple[int, ...] | None: ...

    @property
    def chunks(self) -> tuple[int, ...]: ...

    @property
    def order(self) -> str: ...

    @property
    def read_only(self) -> bool: ...

    @property
    def filters(self) -> Sequence[Any] | None: ...

    @property
    def serializer(self) -> Any: ...

    @property
    def compressors(self) -> Sequence[Any]: ...

    @property
    def nbytes(self) -> int: ...

    @property
    def nbytes_stored(self) -> int: ...

    @property
    def nshards_initialized(self) -> int: ...

    @property
    def nshards(self) -> int: ...


def describe_stage(codecs: Sequence[Any]) -> str:
    """One codec stage (v3 documents or numcodecs codecs) as a tuple-like line.

    Examples
    --------
    >>> import numcodecs
    >>> describe_stage([{"name": "zstd", "configuration": {"level": 0}}])
    '(zstd(level=0),)'
    >>> describe_stage([numcodecs.Zstd(level=1)]), describe_stage([])
    ('(Zstd(level=1),)', '()')
    """
    parts = [describe_codecs([c]) if isinstance(c, dict) else repr(c) for c in codecs]
    if len(parts) == 1:
        return f"({parts[0]},)"
    return f"({', '.join(parts)})"


def array_info(array: InfoSource, complete: bool = False) -> InfoReport:
    """The ``.info`` report of ``array``, with the stored sizes and counts where listing
    the store is cheap or ``complete=True``.

    Examples
    --------
    >>> import chunkflow
    >>> z = chunkflow.create_array(None, shape=(20,), chunks=(2,), shards=(10,), dtype="i4")
    >>> z[:5] = 1
    >>> report = array_info(z, complete=True)
    >>> report["Shard shape"], report["Chunk shape"], report["Shards Initialized"]
    ('(10,)', '(2,)', '1/2')
    >>> report["Serializer"], report["Compressors"]
    ("bytes(endian='little')", '(zstd(level=0, checksum=False),)')
    """
    rows = [
        ("Type", type(array).__name__),
        ("Name", array.name),
        ("Zarr format", str(array.zarr_format)),
        ("Data type", str(array.dtype)),
        ("Fill value", str(array.fill_value)),
        ("Shape", str(array.shape)),
    ]
    if array.shards is not None:
        rows.append(("Shard shape", str(array.shards)))
    rows += [
        ("Chunk shape", str(array.chunks)),
        ("Order", array.order),
        ("Read-only", str(array.read_only)),
        ("Store type", type(array.store).__name__),
        ("Store URL", str(array.store.identity)),
        ("Filters", describe_stage(tuple(array.filters or ()))),
    ]
    if array.serializer is not None:
        rows.append(("Serializer", describe_codecs([array.serializer])))
    rows += [("Compressors", describe_stage(array.compressors)),
             ("No. bytes", format_bytes(array.nbytes))]
    if complete or array.store.listing_is_cheap:
        stored = array.nbytes_stored
        initialized = f"{array.nshards_initialized}/{array.nshards}"
        rows += [
            ("No. bytes stored", format_bytes(stored)),
            ("Storage ratio", f"{array.nbytes / stored:.1f}" if stored else "-"),
            ("Shards Initialized" if array.shards is not None else "Chunks Initialized",
             initialized),
        ]
    status = job_status(array, count=complete or array.store.listing_is_cheap)
    if status is not None:  # an unfinished resumable job writes this array
        rows.append(("Job", f"{status.describe()} (`chunkflow status` lists the rest)"))
    return InfoReport(rows)
