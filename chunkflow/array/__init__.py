"""Arrays: the :class:`Array` class and the functions that create and open arrays."""

from chunkflow.array.core import Array
from chunkflow.array.creation import (
    array,
    create,
    empty,
    empty_like,
    full,
    full_like,
    ones,
    ones_like,
    open_array,
    open_like,
    zeros,
    zeros_like,
)
from chunkflow.array.repair import RepairReport

__all__ = [
    "Array",
    "RepairReport",
    "array",
    "create",
    "empty",
    "empty_like",
    "full",
    "full_like",
    "ones",
    "ones_like",
    "open_array",
    "open_like",
    "zeros",
    "zeros_like",
]
