"""The chunkflow exception family.

Every error derives from :class:`ChunkflowError` and from the builtin exception a
user would catch for the same mistake (``ValueError``, ``KeyError``, ``IndexError``,
``PermissionError``...), so ``except ValueError`` keeps working for code written
against numpy or zarr-python.

Messages name what was wrong (the array path, the chunk key, the bad value) and
what was expected.

Examples
--------
>>> from chunkflow.errors import MetadataError
>>> try:
...     raise MetadataError("array 'x': .zarray key 'chunks' must be positive, got [0]")
... except ValueError as err:
...     print(err)
array 'x': .zarray key 'chunks' must be positive, got [0]
"""

from __future__ import annotations

__all__ = [
    "ArgumentTypeError",
    "ArrayNotFoundError",
    "BoundsCheckError",
    "CastingError",
    "ChunkDecodeError",
    "ChunkEncodeError",
    "ChunkTooLargeError",
    "ChunkflowError",
    "ContainsArrayError",
    "ContainsGroupError",
    "DimensionNamesError",
    "DistanceTransformError",
    "DtypeMismatchError",
    "ExternalLinkError",
    "ForeignContentError",
    "GroupNotFoundError",
    "IncompleteJobWarning",
    "IncompleteListingError",
    "InternalError",
    "InvalidArgumentError",
    "InvalidKeyError",
    "InvalidOutError",
    "InvalidSelectionError",
    "JobMismatchError",
    "JobTokenError",
    "KeyIsDirectoryError",
    "KeyNotFoundError",
    "LabelError",
    "LockTimeoutError",
    "MemoryPlanError",
    "MetadataError",
    "MissingDependencyError",
    "NodeNotFoundError",
    "NotRunningError",
    "NotSerializableError",
    "OpenError",
    "OutputIsSourceError",
    "ProcessLocalStoreError",
    "PyramidError",
    "ReadOnlyError",
    "RemovedOutputError",
    "SettingError",
    "ShapeMismatchError",
    "StoreClosedError",
    "StoreRequestError",
    "StoreValueChangedError",
    "TransactionConflictError",
    "TransactionError",
    "UnfinishedSourceError",
    "UnknownSettingError",
    "UnlistableGroupError",
    "UnsafeCodecError",
    "UnsupportedCodecError",
    "UnsupportedDtypeError",
    "UnsupportedFormatError",
    "UnsupportedOperationError",
    "UsageError",
    "ValueOutOfRangeError",
    "ValuesChangedError",
]


class ChunkflowError(Exception):
    """Base class of every error chunkflow raises on purpose."""


class InvalidArgumentError(ChunkflowError, ValueError):
    """An argument has a value the function does not take (a ``mode``, a ``scheduler``,
    a ``chunks`` entry, an option given twice or where it does not apply); the message
    names the argument, the value given and what was expected."""


class ArgumentTypeError(ChunkflowError, TypeError):
    """An argument, or the object an operation was applied to, has a type the function
    does not take (an ``out=`` that is no array, a store that is no store, ``len()`` of
    a 0-d array); the message names what was given and what was expected."""


class KeyNotFoundError(ChunkflowError, KeyError):
    """A key has no value: a store key, a group member, an attribute.

    Raised where the ``Mapping`` protocol asks for a ``KeyError`` (``store[key]``,
    ``group[name]``, ``attrs[name]``), so ``except KeyError`` and ``dict.get``-style
    code keep working.
    """


class KeyIsDirectoryError(ChunkflowError, IsADirectoryError):
    """A store key names a folder (a group's prefix), not a stored value; stores count
    it as a missing key."""


class NotSerializableError(ChunkflowError, TypeError):
    """A value cannot be serialized: an attribute that is not JSON, a store that does
    not pickle (a zip store open for writing)."""


class StoreClosedError(ChunkflowError, ValueError):
    """A store, or a byte-range reader of one, was used after it was closed (a
    ``ValueError``, as Python's files raise)."""


class UnsupportedOperationError(ChunkflowError, NotImplementedError):
    """A store cannot do what was asked (a zip file cannot delete a key)."""


class NotRunningError(ChunkflowError, RuntimeError):
    """Something the call needs is not running: no ``distributed.Client`` for a
    distributed lock, a test proxy used outside its ``with`` block."""


class InternalError(ChunkflowError, AssertionError):
    """An invariant of chunkflow's own code does not hold: a bug in chunkflow; please
    report it with the message."""


class MetadataError(ChunkflowError, ValueError):
    """A metadata document is malformed, truncated or inconsistent."""


class UnsupportedFormatError(MetadataError):
    """The metadata asks for something chunkflow does not understand.

    Raised for v3 extension points that must be understood (unknown keys without
    ``"must_understand": false``, unknown chunk grids, storage transformers) and for
    ``zarr_format`` values other than 2 and 3.
    """


class UnsupportedCodecError(MetadataError):
    """A codec id or name is unknown, or its configuration is invalid."""


class UnsafeCodecError(UnsupportedCodecError):
    """A codec that could run code on decode (pickle) was refused.

    Pass ``allow_pickle=True`` only for stores you trust.
    """


class UnsupportedDtypeError(MetadataError, TypeError):
    """A dtype cannot be stored in the requested Zarr format."""


class NodeNotFoundError(ChunkflowError, FileNotFoundError):
    """No array or group at the requested path."""


class ArrayNotFoundError(NodeNotFoundError):
    """No array at the requested path."""


class GroupNotFoundError(NodeNotFoundError):
    """No group at the requested path."""


class ContainsArrayError(ChunkflowError, FileExistsError):
    """An array already exists where a new node was to be created."""


class ContainsGroupError(ChunkflowError, FileExistsError):
    """A group already exists where a new node was to be created."""


class ForeignContentError(ChunkflowError, FileExistsError):
    """A node was to be created (or replaced) where the store holds something that is
    not Zarr: a file, a folder or an object outside the metadata documents and chunk
    keys of the Zarr nodes there. Refused with or without ``overwrite`` (which replaces
    Zarr nodes only), before anything is written or deleted; the message names the
    location and some of what is there."""


class ReadOnlyError(ChunkflowError, PermissionError):
    """A write was attempted on a read-only array, group or store."""


class BoundsCheckError(ChunkflowError, IndexError):
    """An index lies outside the array."""


class InvalidSelectionError(ChunkflowError, IndexError):
    """A selection has a form chunkflow cannot apply (wrong type, rank, step...)."""


class InvalidOutError(ChunkflowError, TypeError):
    """An ``out=`` argument is not an array a read can fill."""


class InvalidKeyError(ChunkflowError, ValueError):
    """A store key is unsafe or malformed (``..``, absolute, empty segments)."""


class ChunkDecodeError(ChunkflowError, ValueError):
    """Stored chunk bytes could not be decoded (corrupt, truncated, wrong codec)."""


class ChunkEncodeError(ChunkflowError, ValueError):
    """A chunk could not be encoded with the array's codecs."""


class ShapeMismatchError(ChunkflowError, ValueError):
    """A value's shape does not broadcast to the selection it is written to."""


class PyramidError(ChunkflowError, ValueError):
    """A pyramid's arguments do not fit its source or output (axes, factors, method,
    levels, where it goes)."""


class LabelError(ChunkflowError, ValueError):
    """The arguments of a labelling job do not fit (a structure that is not symmetric
    or not of size 3 per axis, a label dtype that cannot hold the labels, a table's
    unknown property)."""


class DistanceTransformError(ChunkflowError, RuntimeError):
    """The arguments of a distance transform do not fit (as
    ``scipy.ndimage.distance_transform_edt`` raises :class:`RuntimeError`: nothing to
    return, a sampling of the wrong length, an output array of the wrong shape or
    dtype)."""


class DtypeMismatchError(ChunkflowError, TypeError, ValueError):
    """A value cannot be converted to the dtype of the array it is written to."""


class CastingError(DtypeMismatchError):
    """A job's result cannot be cast to its output's dtype under the job's ``casting=``
    rule: by default (``"same_value"``) a cast that would change a value (an integer
    out of range, a fraction or NaN into integers, an overflow to inf); with numpy's
    rules (``"same_kind"``...) a pair of dtypes ``np.can_cast`` refuses. The message
    names the output, the block, the first value that changes and where it lies, the
    output's dtype, and ``casting="unsafe"`` (which casts anyway)."""


class LockTimeoutError(ChunkflowError, TimeoutError):
    """A synchronizer lock could not be acquired within the timeout."""


class MemoryPlanError(ChunkflowError, MemoryError):
    """A job's tasks would need more memory than its budget allows (``max_memory``).

    Raised by the memory plan of :func:`~chunkflow.map_chunks`,
    :func:`~chunkflow.rechunk` and :func:`~chunkflow.pyramid` before anything runs or
    is created; the message says which block size or budget would fit.
    """


class ChunkTooLargeError(ChunkflowError, MemoryError):
    """A chunk's decoded size, as the metadata describes it, cannot be allocated."""


class ProcessLocalStoreError(ChunkflowError, RuntimeError):
    """An in-memory store was used in a process that does not hold its data."""


class ValueOutOfRangeError(ChunkflowError, OverflowError):
    """A Python integer does not fit the array's integer dtype (as numpy 2 refuses)."""


class ExternalLinkError(ChunkflowError, PermissionError):
    """A symbolic link inside a local store leads out of the store's root."""


class SettingError(ChunkflowError, ValueError):
    """A chunkflow setting (``chunkflow.config`` or ``dask.config``) has a bad value."""


class UnknownSettingError(ChunkflowError, KeyError):
    """A name given to ``chunkflow.config`` is not one of its settings."""


class StoreRequestError(ChunkflowError, OSError):
    """A store request failed for good: a network or server error that outlasted the
    client's retries, a full disk. The message names the store and the keys (the chunk
    key of a chunk write); ``errno`` is the original error's (``ENOSPC``...), which is
    chained as ``__cause__``. Nothing was written in the failed request's place, so a
    resumable job can be resumed once the cause is gone."""


class IncompleteListingError(ChunkflowError, OSError):
    """A store's listing missed nodes that exist: a group's folder listed no members,
    while members named by its metadata (consolidated metadata, OME-NGFF multiscales)
    or found by another listing are there when read directly. Raised instead of
    answering with an empty group; the message names the group, the store and the
    members, and where each was named."""


class UnlistableGroupError(IncompleteListingError):
    """A group's members cannot be listed: the store does not list folders (an HTTP
    server that answers 404 for them), or its listing failed, and the group has no
    consolidated metadata. Raised instead of answering with an empty group; a member
    whose path is known still opens (``group["a"]``). The message says how to
    consolidate the group's metadata (``chunkflow.consolidate_metadata`` on a store
    that can list, such as the folder the server serves)."""


class StoreValueChangedError(ChunkflowError, RuntimeError):
    """A stored value changed while a byte-range reader was reading it.

    Raised by :meth:`ByteRangeReader.read <chunkflow.storage.ByteRangeReader.read>` on
    backends that cannot hold on to the value they opened (object stores, most fsspec
    file systems) when its version changed since the reader was opened, instead of
    returning bytes of two different values. Nothing is wrong with the data: open a
    new reader and read again. A ``RuntimeError``, not an ``OSError``, so that code
    treating ``OSError`` as "missing" or "I/O failure" does not mistake it for either.

    Attributes
    ----------
    key : str
        The key whose value changed.
    """

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.key, self.args[0]))


class ValuesChangedError(ChunkflowError, RuntimeError):
    """An array's values changed between the passes of a multi-pass reduction (an exact
    percentile counts the values several times); no result is returned."""


class JobMismatchError(ChunkflowError, ValueError):
    """``resume=True`` met an output that an unfinished *different* job is writing.

    The message names what changed (the function, its arguments, the block plan, the
    output's metadata, which source); nothing is written. Rerun the original job to
    finish it, or pass ``resume=False`` to start over (the unfinished job's records
    are dropped).
    """


class OutputIsSourceError(ChunkflowError, ValueError):
    """A job's output is, or overlaps, one of its sources where writing it would change
    what the job still reads: with a halo (``depth > 0``) always, in place without one
    unless ``overwrite=True``, and always for a writer that creates its output anew.
    Nothing is written."""


class UnfinishedSourceError(ChunkflowError, ValueError):
    """A copy's source is the output of an unfinished job (some of its blocks are not
    written). Refused unless the copy is asked to take it as it is
    (``unfinished="copy"``), which marks the copy unfinished too."""


class JobTokenError(ChunkflowError, TypeError):
    """``resume=True`` but what the job computes cannot be tokenized deterministically
    (a function or argument dask cannot tokenize); name the job with ``job_name=``."""


class IncompleteJobWarning(UserWarning):
    """An array opened in chunkflow is the output of a job that has not finished.

    Some blocks hold data of the job, the others whatever was there before (often the
    fill value). Shown once per array and process; ``chunkflow status PATH`` lists
    the blocks that remain, and rerunning the job with ``resume=True`` finishes it.
    """


class DimensionNamesError(MetadataError, KeyError):
    """An array lacks a name for some dimension, which xarray needs.

    A :class:`~chunkflow.errors.MetadataError` and, as xarray's zarr engine raises for
    the same store, a ``KeyError``.
    """

    __str__ = Exception.__str__  # the message as written, not KeyError's repr of it


class UsageError(ChunkflowError, ValueError):
    """A command-line argument that parsed but makes no sense (exit code 2)."""


class MissingDependencyError(ChunkflowError, ImportError):
    """A command needs an optional package that is not installed (exit code 1)."""


class OpenError(ChunkflowError, OSError):
    """A path or URL could not be opened (missing, unreachable, not authorized)."""


class RemovedOutputError(ChunkflowError, RuntimeError):
    """A command failed part-way; the output it had created was removed."""


class TransactionError(ChunkflowError, RuntimeError):
    """A job could not write into a transactional store's session (an Icechunk
    session): it could not be forked for the workers, or the forks not merged back."""


class TransactionConflictError(TransactionError):
    """Committing a job's writes into an Icechunk branch conflicted with a commit made
    since the session started (the same chunks or metadata changed)."""
