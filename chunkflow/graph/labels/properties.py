"""The property names of ``skimage.measure.regionprops_table``: the current ones, the
deprecated aliases it still takes (``Centroid``, ``weighted_centroid``,
``BoundingBox``...), which need an intensity image, and a request of them parsed
into what each pass computes.

A column is named as the user named its property (``Centroid-0`` for ``Centroid``,
as skimage names it); its values are those of the current name. scikit-image is not
imported here (it is needed only for the properties computed on crops), so the tables
are kept here, and a test checks them against the installed scikit-image.

Examples
--------
>>> request = parse_properties(["label", "Centroid", "perimeter"], has_intensity=False,
...                            partial_names=["label", "centroid"])
>>> request.partial, request.whole
(['label', 'centroid'], ['perimeter'])
>>> rename({"centroid-0": 1.5, "centroid-1": 0.5}, "centroid", "Centroid")
{'Centroid-0': 1.5, 'Centroid-1': 0.5}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from chunkflow.errors import LabelError

__all__ = ["ALIASES", "INTENSITY_PROPERTIES", "NAMES", "POSITIONAL", "PropertyRequest",
           "column_group", "parse_properties", "rename"]

#: Every current property name ``regionprops_table`` takes (skimage 0.26).
NAMES = frozenset({
    "area", "area_bbox", "area_convex", "area_filled", "axis_major_length",
    "axis_minor_length", "bbox", "centroid", "centroid_local", "centroid_weighted",
    "centroid_weighted_local", "coords", "coords_scaled", "eccentricity",
    "equivalent_diameter_area", "euler_number", "extent", "feret_diameter_max", "image",
    "image_convex", "image_filled", "image_intensity", "inertia_tensor",
    "inertia_tensor_eigvals", "intensity_max", "intensity_mean", "intensity_median",
    "intensity_min", "intensity_std", "label", "moments", "moments_central", "moments_hu",
    "moments_normalized", "moments_weighted", "moments_weighted_central",
    "moments_weighted_hu", "moments_weighted_normalized", "num_pixels", "orientation",
    "perimeter", "perimeter_crofton", "slice", "solidity",
})

#: The deprecated names ``regionprops_table`` still takes, and their current names
#: (``skimage.measure._regionprops.PROPS``).
ALIASES: Mapping[str, str] = {
    "Area": "area", "BoundingBox": "bbox", "BoundingBoxArea": "area_bbox",
    "bbox_area": "area_bbox", "CentralMoments": "moments_central", "Centroid": "centroid",
    "ConvexArea": "area_convex", "convex_area": "area_convex", "ConvexImage": "image_convex",
    "convex_image": "image_convex", "Coordinates": "coords", "Eccentricity": "eccentricity",
    "EquivDiameter": "equivalent_diameter_area",
    "equivalent_diameter": "equivalent_diameter_area", "EulerNumber": "euler_number",
    "Extent": "extent", "FeretDiameter": "feret_diameter_max",
    "FeretDiameterMax": "feret_diameter_max", "FilledArea": "area_filled",
    "filled_area": "area_filled", "FilledImage": "image_filled", "filled_image": "image_filled",
    "HuMoments": "moments_hu", "Image": "image", "InertiaTensor": "inertia_tensor",
    "InertiaTensorEigvals": "inertia_tensor_eigvals", "IntensityImage": "image_intensity",
    "intensity_image": "image_intensity", "Label": "label", "LocalCentroid": "centroid_local",
    "local_centroid": "centroid_local", "MajorAxisLength": "axis_major_length",
    "major_axis_length": "axis_major_length", "MaxIntensity": "intensity_max",
    "max_intensity": "intensity_max", "MeanIntensity": "intensity_mean",
    "mean_intensity": "intensity_mean", "MinIntensity": "intensity_min",
    "min_intensity": "intensity_min", "std_intensity": "intensity_std",
    "MinorAxisLength": "axis_minor_length", "minor_axis_length": "axis_minor_length",
    "Moments": "moments", "NormalizedMoments": "moments_normalized",
    "Orientation": "orientation", "Perimeter": "perimeter",
    "CroftonPerimeter": "perimeter_crofton", "Slice": "slice", "Solidity": "solidity",
    "WeightedCentralMoments": "moments_weighted_central",
    "weighted_moments_central": "moments_weighted_central",
    "WeightedCentroid": "centroid_weighted", "weighted_centroid": "centroid_weighted",
    "WeightedHuMoments": "moments_weighted_hu", "weighted_moments_hu": "moments_weighted_hu",
    "WeightedLocalCentroid": "centroid_weighted_local",
    "weighted_local_centroid": "centroid_weighted_local",
    "WeightedMoments": "moments_weighted", "weighted_moments": "moments_weighted",
    "WeightedNormalizedMoments": "moments_weighted_normalized",
    "weighted_moments_normalized": "moments_weighted_normalized",
}

#: The properties that need an intensity image.
INTENSITY_PROPERTIES = frozenset({
    "image_intensity", "intensity_max", "intensity_mean", "intensity_median", "intensity_min",
    "intensity_std", "moments_weighted", "moments_weighted_central", "centroid_weighted",
    "centroid_weighted_local", "moments_weighted_hu", "moments_weighted_normalized",
})

#: Crop properties whose values are positions in the image: a crop's are moved by the
#: crop's origin.
POSITIONAL = frozenset({"coords", "coords_scaled", "slice"})


@dataclass(frozen=True)
class PropertyRequest:
    """What a ``properties`` list asks: each entry's column name and what computes it
    (a current name, or a callable), and the current names by pass."""

    entries: list[tuple[str, str | Callable[..., Any]]]
    partial: list[str] = field(default_factory=list)
    whole: list[str] = field(default_factory=list)
    functions: list[Callable[..., Any]] = field(default_factory=list)


def _current(name: str) -> str:
    current = ALIASES.get(name, name)
    if current not in NAMES:
        raise LabelError(f"measure: {name!r} is not a property of "
                         "skimage.measure.regionprops_table; the properties are "
                         f"{', '.join(sorted(NAMES))} (and their deprecated aliases)")
    return current


def parse_properties(properties: Sequence[Any], has_intensity: bool,
                     partial_names: Sequence[str] = ()) -> PropertyRequest:
    """Check ``properties`` (names and callables) and sort them by pass: the current
    names in ``partial_names`` come from the one pass over the blocks, the others
    from crops.

    Raises
    ------
    LabelError
        A name skimage does not take, an intensity property without an intensity
        image, or an entry that is neither a name nor a callable.
    """
    entries: list[tuple[str, str | Callable[..., Any]]] = []
    for prop in properties:
        if isinstance(prop, str):
            entries.append((prop, _current(prop)))
        elif callable(prop):
            entries.append((getattr(prop, "__name__", repr(prop)), prop))
        else:
            raise LabelError(f"measure: a property is a name or a callable, got {prop!r}")
    names = list(dict.fromkeys(c for _, c in entries if isinstance(c, str)))
    wanting = [n for n, c in entries if isinstance(c, str) and c in INTENSITY_PROPERTIES]
    if wanting and not has_intensity:
        raise LabelError(f"measure: {', '.join(wanting)} need an intensity image (intensity=)")
    partial = [n for n in names if n in partial_names]
    functions = list(dict.fromkeys(c for _, c in entries if callable(c)))
    return PropertyRequest(entries, partial, [n for n in names if n not in partial_names],
                           functions)


def column_group(columns: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The columns of property ``name``: ``name`` itself, or ``name-0``, ``name-0-1``..."""
    return {key: value for key, value in columns.items()
            if key == name or key.startswith(f"{name}-")}


def rename(columns: Mapping[str, Any], name: str, new: str) -> dict[str, Any]:
    """The columns of ``name`` named after ``new`` (``name-1`` becomes ``new-1``)."""
    return {new + key[len(name):]: value for key, value in column_group(columns, name).items()}
