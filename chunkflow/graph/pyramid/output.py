"""Where a pyramid goes: the OME-Zarr group and its level arrays, checked first, then
created, and its multiscales metadata written last.

Everything is checked before anything is created (a refusal leaves nothing behind).
The level arrays are created empty and the group's ``multiscales`` attributes are
written only once every level is: a reader that finds the metadata finds every level
whole, and after a crash it finds no image rather than a partial one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from chunkflow.api.hierarchy import open_group, open_node
from chunkflow.core.array import Array
from chunkflow.core.group import Group
from chunkflow.core.replacing import check_location
from chunkflow.errors import (
    ArgumentTypeError,
    ContainsArrayError,
    ContainsGroupError,
    NodeNotFoundError,
    PyramidError,
)
from chunkflow.jobs import array_location, check_not_source, location_of
from chunkflow.metadata import ArrayMetadataV2
from chunkflow.metadata.ngff import image_label_attributes, labels_attributes
from chunkflow.storage import Store

if TYPE_CHECKING:
    from chunkflow.storage import StoreLike

__all__ = ["PyramidOutput", "codec_kwargs", "plan_output"]


def codec_kwargs(source: Array, zarr_format: int) -> dict[str, Any]:
    """The source's codecs for the levels when the format is the same (without
    sharding: levels are stored in plain chunks); the format's defaults otherwise."""
    if source.zarr_format != zarr_format:
        return {}
    meta = source.metadata
    if isinstance(meta, ArrayMetadataV2):
        return {"compressor": meta.compressor, "filters": meta.filters}
    serializer = source.serializer
    if serializer is None:
        return {}
    return {"codecs": [*(source.filters or ()), serializer, *source.compressors]}


@dataclass(frozen=True)
class PyramidOutput:
    """The output of a pyramid, checked but not created yet."""

    location: StoreLike
    storage_options: Mapping[str, Any] | None
    zarr_format: int
    labels: str | None
    overwrite: bool
    levels: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    reuse: bool = False  # resume=True: continue in the group that exists

    @property
    def image_path(self) -> str:
        """The path of the multiscale image in the output group."""
        return f"labels/{self.labels}" if self.labels else ""

    def create(self) -> tuple[Group, tuple[Array, ...]]:
        """Create the group and the empty level arrays (no multiscales yet); with
        ``reuse``, open them where they exist (a resumed job)."""
        options = dict(self.storage_options or {}) or None
        image: Group
        if self.reuse:
            image = open_group(self.location, mode="r+", path=self.image_path or None,
                               storage_options=options, cache=False)
            return image, tuple(_level(image, str(k), kwargs)
                                for k, kwargs in enumerate(self.levels))
        if self.labels is None:
            image = open_group(self.location, mode="w" if self.overwrite else "w-",
                               zarr_format=self.zarr_format, storage_options=options,
                               cache=False)
        else:
            root = open_group(self.location, mode="a", zarr_format=self.zarr_format,
                              storage_options=options, cache=False)
            image = root.require_group("labels").create_group(self.labels,
                                                               overwrite=self.overwrite)
        arrays = tuple(image.create_array(str(k), overwrite=True, **kwargs)
                       for k, kwargs in enumerate(self.levels))
        return image, arrays

    def finish(self, image: Group, attributes: Mapping[str, Any], version: str) -> None:
        """Write the multiscales metadata (and, for a label image, the ``labels`` list
        of the image's ``labels`` group)."""
        if self.labels is None:
            image.attrs.update(dict(attributes))
            return
        label = dict(attributes)
        extra = image_label_attributes(version)
        if "ome" in label:
            label["ome"] = {**label["ome"], **extra["ome"]}
        else:
            label.update(extra)
        image.attrs.update(label)
        options = dict(self.storage_options or {}) or None
        labels = open_group(self.location, mode="r+", path="labels", storage_options=options,
                            cache=False)
        listed = _listed_labels(dict(labels.attrs))
        names = listed + [self.labels] if self.labels not in listed else listed
        labels.attrs.update(labels_attributes(names, version))


def _level(image: Group, name: str, kwargs: Mapping[str, Any]) -> Array:
    """The level ``name`` of a resumed image: the one there if it is the one planned."""
    if name not in image:
        return image.create_array(name, **kwargs)
    level = image[name]
    expected = (tuple(kwargs["shape"]), tuple(kwargs["chunks"]), kwargs["dtype"])
    if not isinstance(level, Array) or (level.shape, level.chunks, level.dtype) != expected:
        found = (level.shape, level.chunks, level.dtype) if isinstance(level, Array) else "a group"
        raise PyramidError(f"pyramid: resume=True found level {name!r} of {image.name!r} as "
                           f"{found}, where this job writes (shape, chunks, dtype) {expected}; "
                           "pass resume=False with overwrite=True to start over")
    return level


def _listed_labels(attributes: Mapping[str, Any]) -> list[str]:
    ome = attributes.get("ome")
    names = ome.get("labels") if isinstance(ome, Mapping) else attributes.get("labels")
    return [str(n) for n in names] if isinstance(names, list) else []


def _same_format(existing: Group, zarr_format: int, location: Any) -> int:
    if existing.zarr_format != zarr_format:
        raise PyramidError(f"pyramid: the image at {str(location)!r} is Zarr "
                           f"v{existing.zarr_format}; what joins it must be too (got "
                           f"zarr_format={zarr_format})")
    return zarr_format


def _existing(location: StoreLike, options: dict[str, Any] | None,
              path: str | None = None) -> Array | Group | None:
    try:
        return open_node(location, mode="r", path=path, storage_options=options)
    except (NodeNotFoundError, FileNotFoundError):
        return None


def plan_output(source: Array, source_location: Any, location: StoreLike,
                storage_options: Mapping[str, Any] | None, zarr_format: int | None,
                labels: str | None, overwrite: bool, resume: bool,
                levels: Sequence[dict[str, Any]]) -> PyramidOutput:
    """Check ``location`` can take the pyramid (nothing is created here).

    Raises
    ------
    ContainsGroupError, ContainsArrayError
        Something is there already (without ``overwrite``), or a label image's parent
        is not a group.
    OutputIsSourceError
        The output would hold (or be) the source.
    PyramidError
        Its format differs from the image the labels join.
    """
    if not isinstance(location, (str, os.PathLike, Store)):
        raise ArgumentTypeError(f"pyramid: out must be a path, a URL or a store, got "
                                f"{type(location).__name__}")
    # The same rule as every writer's: creating the output must not delete the source
    # (a path, URL or store, compared by the store's identity and the node's path).
    check_not_source("pyramid", location_of(location, storage_options,
                                            f"labels/{labels}" if labels else None),
                     [(f"its source {str(source_location)!r}", array_location(source))],
                     creates=True)
    if resume and overwrite:
        raise PyramidError("pyramid: resume=True continues the output that exists and "
                           "overwrite=True replaces it; pass one of them")
    options = dict(storage_options or {}) or None
    existing = _existing(location, options)
    # array=True: the image group holds its level arrays only.
    check_location(location, what="pyramid", array=True, storage_options=options,
                   path=f"labels/{labels}" if labels and existing is not None else None)
    if labels is None:
        fmt = source.zarr_format if zarr_format is None else zarr_format
        if isinstance(existing, Group) and resume:
            return PyramidOutput(location, storage_options, _same_format(existing, fmt, location),
                                 None, False, tuple(levels), reuse=True)
        if existing is not None and not overwrite:
            kind = "an array" if isinstance(existing, Array) else "a group"
            error = ContainsArrayError if isinstance(existing, Array) else ContainsGroupError
            raise error(f"pyramid: {str(location)!r} holds {kind} already; pass overwrite=True "
                        "to replace it")
        return PyramidOutput(location, storage_options, fmt, None, False if existing is None
                             else overwrite, tuple(levels))
    if not labels or "/" in labels or labels in (".", ".."):
        raise PyramidError(f"pyramid: labels={labels!r} must be a plain name (a folder under "
                           "labels/)")
    if isinstance(existing, Array):
        raise ContainsArrayError(f"pyramid: {str(location)!r} holds an array; label images go "
                                 "below an image group")
    fmt = zarr_format or (existing.zarr_format if existing is not None else source.zarr_format)
    if existing is not None:
        _same_format(existing, fmt, location)
    taken = existing is not None and _existing(location, options, f"labels/{labels}") is not None
    if taken and resume:
        return PyramidOutput(location, storage_options, fmt, labels, False, tuple(levels),
                             reuse=True)
    if taken and not overwrite:
        raise ContainsGroupError(f"pyramid: {str(location)!r} has a label image {labels!r} "
                                 "already; pass overwrite=True to replace it")
    return PyramidOutput(location, storage_options, fmt, labels, overwrite, tuple(levels))
