"""``chunkflow.Group``: the core group with the creation functions of this package.

:meth:`chunkflow.Group.create_array` runs :func:`create_member_array`. Core lies below
api in the import chain and cannot import it, so core's group leaves the step empty
(:class:`~chunkflow.core.group_arrays.ArrayCreation`) and this subclass fills it; every
group opened through one is of its class.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from chunkflow.api import creation
from chunkflow.api.zarr3 import create_array
from chunkflow.api.zarr3_checks import ZARR3_ONLY
from chunkflow.core import Array
from chunkflow.core import Group as CoreGroup
from chunkflow.errors import ArgumentTypeError, ShapeMismatchError
from chunkflow.grid import normalize_shape
from chunkflow.storage import Store

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, DTypeLike

    from chunkflow.grid import ChunksLike, ShapeLike

__all__ = ["Group", "create_member_array"]


def create_member_array(store: Store, path: str, *, shape: ShapeLike | None, dtype: DTypeLike | None,
                        data: ArrayLike | None, chunks: ChunksLike, overwrite: bool,
                        defaults: dict[str, Any],
                        create_kwargs: dict[str, Any]) -> Array:
    """Create the array at ``path`` of a group's store: as :func:`chunkflow.create_array`
    when a zarr-python 3 keyword is given (``shards=``, ``compressors=``...), else as
    :func:`chunkflow.create` / :func:`chunkflow.array`.

    Examples
    --------
    >>> from chunkflow.storage import MemoryStore
    >>> z = create_member_array(MemoryStore(), "x", shape=(4,), dtype="u1", data=None,
    ...                         chunks=(2,), overwrite=False, defaults={"zarr_format": 3},
    ...                         create_kwargs={})
    >>> z.path, z.chunks
    ('x', (2,))
    """
    kwargs: dict[str, Any] = {**defaults, **create_kwargs}
    if ZARR3_ONLY & create_kwargs.keys():
        return create_array(store, name=path, shape=shape, dtype=dtype, data=data,
                            chunks="auto" if chunks is True else chunks,
                            overwrite=overwrite, **kwargs)
    if dtype is not None:
        kwargs["dtype"] = dtype
    if chunks is not True:
        kwargs["chunks"] = chunks
    if data is not None:
        if shape is not None and normalize_shape(shape) != np.shape(data):
            raise ShapeMismatchError(f"array {path!r}: shape={shape!r} does not match the "
                                     f"shape {np.shape(data)} of data")
        return creation.array(data, store=store, path=path, overwrite=overwrite, **kwargs)
    if shape is None:
        raise ArgumentTypeError(f"array {path!r}: pass shape= (or data=) to create an array")
    return creation.create(shape, store=store, path=path, overwrite=overwrite, **kwargs)



class Group(CoreGroup):
    __doc__ = CoreGroup.__doc__

    _array_maker = staticmethod(create_member_array)
