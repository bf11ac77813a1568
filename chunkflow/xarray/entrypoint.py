"""``engine="chunkflow"``: the entry point xarray calls (datasets, groups, trees).

Examples
--------
>>> import numpy as np, xarray as xr, chunkflow
>>> root = chunkflow.group()
>>> v = root.create_array("v", shape=(3,), chunks=(2,), dtype="i2", dimension_names=("x",))
>>> v[:] = [1, 2, 3]
>>> ds = xr.open_dataset(root, engine=ChunkflowBackendEntrypoint)
>>> ds.v.values.tolist()
[1, 2, 3]
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from xarray import Dataset
from xarray.backends import BackendEntrypoint, StoreBackendEntrypoint

from chunkflow.core.group import Group
from chunkflow.errors import InvalidArgumentError
from chunkflow.xarray.datastore import ChunkflowDataStore
from chunkflow.xarray.ngff import listed_members

if TYPE_CHECKING:
    from chunkflow.cache import CacheLike
    from chunkflow.storage import StoreLike

__all__ = ["ChunkflowBackendEntrypoint"]


class ChunkflowBackendEntrypoint(BackendEntrypoint):
    """``engine="chunkflow"``: Zarr v2/v3 groups read through chunkflow.

    Takes the decoding options of every xarray engine and, like the zarr engine,
    ``group=``, ``consolidated=`` (``None``: use consolidated metadata when present),
    ``storage_options=``, ``zarr_format=`` and ``use_zarr_fill_value_as_mask=``; and
    ``chunk_cache=`` (chunkflow's decoded-chunk cache: ``None`` the process-wide one,
    ``False`` none, or a :class:`chunkflow.ChunkCache`; xarray's own ``cache=`` is
    another thing, its in-memory copy of loaded variables).
    Besides paths, URLs and stores it opens a :class:`chunkflow.Group` directly.
    ``xr.open_datatree`` and ``xr.open_groups`` open the group and all its subgroups.

    ``guess_can_open`` is always false: the engine is chosen explicitly, so installing
    chunkflow never changes which engine opens a ``.zarr`` path by default.
    """

    description = "Open Zarr v2/v3 stores (.zarr) through chunkflow"
    url = "https://github.com/chunkflow/chunkflow"
    supports_groups = True
    open_dataset_parameters = (
        "filename_or_obj", "mask_and_scale", "decode_times", "concat_characters",
        "decode_coords", "drop_variables", "use_cftime", "decode_timedelta", "group",
        "consolidated", "storage_options", "zarr_format", "use_zarr_fill_value_as_mask",
        "chunk_cache", "mode",
    )

    def guess_can_open(self, filename_or_obj: object) -> bool:
        return False

    def open_dataset(  # type: ignore[override]  # takes chunkflow's sources, not xarray's
        self,
        filename_or_obj: Group | StoreLike,
        *,
        mask_and_scale: bool = True,
        decode_times: bool = True,
        concat_characters: bool = True,
        decode_coords: bool = True,
        drop_variables: str | Iterable[str] | None = None,
        use_cftime: bool | None = None,
        decode_timedelta: bool | None = None,
        group: str | None = None,
        consolidated: bool | None = None,
        storage_options: dict[str, Any] | None = None,
        zarr_format: int | None = None,
        use_zarr_fill_value_as_mask: bool | None = None,
        chunk_cache: CacheLike = None,
        mode: str = "r",
    ) -> Dataset:
        _check_read_mode(mode)
        store = ChunkflowDataStore.open(
            filename_or_obj, group=group, consolidated=consolidated,
            storage_options=storage_options, zarr_format=zarr_format,
            use_zarr_fill_value_as_mask=use_zarr_fill_value_as_mask, chunk_cache=chunk_cache,
            exclude=[drop_variables] if isinstance(drop_variables, str) else drop_variables or (),
        )
        decoders: dict[str, Any] = dict(mask_and_scale=mask_and_scale, decode_times=decode_times,
                        concat_characters=concat_characters, decode_coords=decode_coords,
                        drop_variables=drop_variables, use_cftime=use_cftime,
                        decode_timedelta=decode_timedelta)
        try:
            return StoreBackendEntrypoint().open_dataset(store, **decoders)
        except BaseException:
            store.close()
            raise

    def open_groups_as_dict(  # type: ignore[override]  # takes chunkflow's sources, not xarray's
        self, filename_or_obj: Group | StoreLike, *, group: str | None = None,
        consolidated: bool | None = None, storage_options: dict[str, Any] | None = None,
        zarr_format: int | None = None, use_zarr_fill_value_as_mask: bool | None = None,
        chunk_cache: CacheLike = None, mode: str = "r", **decoders: Any,
    ) -> dict[str, Dataset]:
        """Every group from ``group`` down, by path (``"/"``, ``"/a"``, ``"/a/b"``).

        The levels of an OME-NGFF pyramid (arrays named by the group's ``multiscales``)
        are one node each, below the image's group (``"/0"``, ``"/1"``...), each with
        the level's array as its one variable: a level halves some dimensions, so the
        levels cannot share one dataset. The image's attributes stay with its group;
        each level's node has the level's coordinates from its NGFF ``scale`` and
        ``translation`` (see :mod:`chunkflow.xarray.ngff`). A single array is the root
        node's one variable.
        """
        _check_read_mode(mode)
        root = ChunkflowDataStore.open(
            filename_or_obj, group=group, consolidated=consolidated,
            storage_options=storage_options, zarr_format=zarr_format,
            use_zarr_fill_value_as_mask=use_zarr_fill_value_as_mask, chunk_cache=chunk_cache,
        )
        try:
            if root.group is None:  # a single array: the root node's one variable
                return {"/": StoreBackendEntrypoint().open_dataset(root, **decoders)}
            datasets = {}
            for path, node in _walk_groups(root.group, "/"):
                store = root if node is root.group else ChunkflowDataStore(
                    node, use_zarr_fill_value_as_mask)
                levels = store.pyramid_levels()
                opened = StoreBackendEntrypoint().open_dataset(store.without(levels), **decoders)
                datasets[path] = opened
                for level in levels:
                    datasets[f"{path.rstrip('/')}/{level}"] = StoreBackendEntrypoint(
                        ).open_dataset(store.level(level), **decoders)
            return datasets
        except BaseException:
            root.close()
            raise

    def open_datatree(self, filename_or_obj: Group | StoreLike, **kwargs: Any) -> Any:  # type: ignore[override]  # takes chunkflow's sources, not xarray's
        """The group and its subgroups as a :class:`xarray.DataTree` (xarray >= 2024.10)."""
        from xarray import DataTree

        datasets = self.open_groups_as_dict(filename_or_obj, **kwargs)
        try:
            tree = DataTree.from_dict(datasets)
        except BaseException:
            datasets["/"].close()
            raise
        tree.set_close(datasets["/"].close)  # the root's store serves every group
        return tree


def _check_read_mode(mode: str) -> None:
    # mode= is accepted so that calls written for engine="zarr" keep working.
    if mode != "r":
        raise InvalidArgumentError(f"engine='chunkflow' only reads: mode must be 'r', got {mode!r} "
                                   f"(write with Dataset.to_zarr; chunkflow reads what it writes)")


def _walk_groups(group: Group, path: str) -> Iterable[tuple[str, Group]]:
    yield path, group
    for name, child in listed_members(group):
        if isinstance(child, Group):
            yield from _walk_groups(child, f"{path.rstrip('/')}/{name}")
