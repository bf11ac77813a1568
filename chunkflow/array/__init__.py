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
from chunkflow.array.zarr3_api import create_array, from_array

__all__ = [
    "Array",
    "RepairReport",
    "array",
    "create",
    "create_array",
    "empty",
    "empty_like",
    "full",
    "from_array",
    "full_like",
    "ones",
    "ones_like",
    "open_array",
    "open_like",
    "zeros",
    "zeros_like",
]
