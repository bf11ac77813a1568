"""zarr-python 2's ``N5Store``, refused by name.

N5 is a format of its own (``attributes.json``, big-endian chunk headers), not Zarr;
zarr-python 2 read it through a translating store, deprecated there and dropped in
zarr-python 3. chunkflow reads and writes Zarr v2 and v3 only, so ``N5Store`` says so
instead of leaving ``AttributeError`` to the user.

Examples
--------
>>> N5Store("data/example.n5")
Traceback (most recent call last):
...
chunkflow.errors.UnsupportedFormatError: N5Store('data/example.n5'): N5 is not a Zarr format ...
"""

from __future__ import annotations

from typing import Any, NoReturn

from chunkflow.errors import UnsupportedFormatError

__all__ = ["N5Store"]


def N5Store(path: Any, *args: Any, **kwargs: Any) -> NoReturn:  # noqa: N802 (zarr 2's name)
    """Refuse an N5 store (see the module docstring); nothing is opened or created.

    Raises
    ------
    UnsupportedFormatError
        Always, naming the path and what to use instead.
    """
    raise UnsupportedFormatError(
        f"N5Store({str(path)!r}): N5 is not a Zarr format and chunkflow reads and writes "
        "Zarr v2 and v3 only (zarr-python 2's N5Store is deprecated, and gone in "
        "zarr-python 3); convert the data with zarr-python 2 or n5py (e.g. zarr.copy_store "
        "into a DirectoryStore), or use a Zarr store such as chunkflow.LocalStore")
