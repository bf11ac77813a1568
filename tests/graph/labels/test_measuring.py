"""chunkflow.measure against skimage.measure.regionprops_table on the whole array."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import ndimage

import chunkflow
from chunkflow.errors import LabelError, MemoryPlanError
from tests.helpers.labels import blobs, spiral

skimage_measure = pytest.importorskip("skimage.measure")

PARTIAL = ["label", "area", "num_pixels", "bbox", "centroid", "centroid_weighted",
           "intensity_mean", "intensity_min", "intensity_max", "intensity_std"]


def compare(labels: np.ndarray, intensity: np.ndarray | None, chunks: tuple[int, ...],
            properties: list[Any], **kwargs: Any) -> dict[str, np.ndarray]:
    z = chunkflow.array(labels, chunks=chunks)
    image = chunkflow.array(intensity, chunks=chunks) if intensity is not None else None
    kwargs.setdefault("blocks", (1,) * labels.ndim)
    kwargs.setdefault("scheduler", "sync")
    table = chunkflow.measure(z, image, properties=properties, **kwargs)
    expected = skimage_measure.regionprops_table(labels, intensity, properties=properties)
    assert list(table) == list(expected)
    # skimage averages float32 intensities in float32; chunkflow sums in float64.
    rtol = 1e-6 if intensity is not None and intensity.dtype == np.float32 else 1e-10
    for name, column in expected.items():
        assert table[name].dtype == column.dtype, name
        if column.dtype.kind in "iu":
            np.testing.assert_array_equal(table[name], column, err_msg=name)
        else:
            np.testing.assert_allclose(table[name], column, rtol=rtol, atol=1e-12, err_msg=name)
    return table


def test_objects_spanning_many_chunks_2d() -> None:
    labels = ndimage.label(blobs((90, 80), 4, 0.5, seed=1))[0]
    intensity = np.random.default_rng(2).random(labels.shape).astype("f4")
    compare(labels, intensity, (7, 9), PARTIAL)
    labels[spiral(90)[:, :80]] = labels.max() + 1  # one object through every chunk
    compare(labels, intensity * 1000, (10, 10), PARTIAL)


def test_3d_integer_intensity_and_label_output() -> None:
    image = blobs((24, 30, 28), 2.5, 0.5, seed=3)
    labels, _ = chunkflow.label(chunkflow.array(image, chunks=(6, 6, 6)),
                                chunkflow.MemoryStore(), blocks=(1, 1, 1))
    intensity = np.random.default_rng(4).integers(0, 60000, image.shape).astype("u2")
    table = compare(labels[...], intensity, (5, 7, 6), PARTIAL)
    assert table["label"].tolist() == list(range(1, len(table["label"]) + 1))


def test_any_integer_label_image() -> None:
    rng = np.random.default_rng(5)
    # Label values far apart: blocks compact them by a sort, not a bincount over the range.
    labels = rng.choice([0, 7, 3, 3000, 12, 999], size=(40, 33)).astype("i8")
    compare(labels, rng.random(labels.shape), (8, 8), PARTIAL)
    small = rng.integers(0, 4, (30, 30)).astype("u1")
    compare(small, None, (7, 11), ["label", "area", "bbox", "centroid"])


def test_compute_false_defers_the_one_pass_table_and_refuses_the_crops() -> None:
    import dask

    labels = ndimage.label(blobs((60, 64), 3, 0.5, seed=9))[0]
    intensity = np.random.default_rng(9).random(labels.shape)
    z, image = chunkflow.array(labels, chunks=(9, 10)), chunkflow.array(intensity, chunks=(9, 10))
    lazy = chunkflow.measure(z, image, properties=PARTIAL, compute=False)
    assert dask.is_dask_collection(lazy)
    table = lazy.compute(scheduler="threads")
    expected = skimage_measure.regionprops_table(labels, intensity, properties=PARTIAL)
    assert list(table) == list(expected)
    for name, column in expected.items():
        np.testing.assert_allclose(table[name], column, rtol=1e-10, err_msg=name)
    # perimeter, eccentricity... come from the one pass now; solidity from crops.
    with pytest.raises(ValueError, match=r"compute=False with properties \['solidity'\]"):
        chunkflow.measure(z, properties=["label", "perimeter", "solidity"], compute=False)


def test_whole_object_properties_from_crops() -> None:
    labels = ndimage.label(blobs((60, 64), 3, 0.5, seed=6))[0]
    intensity = np.random.default_rng(7).random(labels.shape)

    def intensity_range(mask: np.ndarray, crop: np.ndarray) -> float:
        return float(crop[mask].max() - crop[mask].min())

    def filled(mask: np.ndarray) -> int:
        return int(mask.sum())

    z = chunkflow.array(labels, chunks=(8, 8))
    props = ["label", "area", "perimeter", "eccentricity", "solidity", "centroid",
             intensity_range, filled]
    table = chunkflow.measure(z, intensity, properties=props, blocks=(2, 2))
    expected = skimage_measure.regionprops_table(
        labels, intensity, properties=["label", "area", "perimeter", "eccentricity", "solidity",
                                       "centroid"], extra_properties=[intensity_range, filled])
    assert list(table) == list(expected)
    for name, column in expected.items():
        np.testing.assert_allclose(table[name], column, rtol=1e-10, err_msg=name)


def test_a_crop_too_large_is_named_before_any_crop_is_read() -> None:
    labels = np.zeros((64, 64), "u4")
    labels[2:60, 2:60] = 5
    labels[0, 63] = 9
    z = chunkflow.array(labels, chunks=(16, 16))
    with pytest.raises(MemoryPlanError, match=r"crops of 1 objects.*5 \(bounding box \(58, 58\)"):
        chunkflow.measure(z, properties=["label", "solidity"], max_memory="60 KiB")


def test_empty_and_all_background() -> None:
    z = chunkflow.zeros((20, 20), chunks=(5, 5), dtype="u4")
    table = chunkflow.measure(z, np.ones((20, 20)), properties=PARTIAL)
    expected = skimage_measure.regionprops_table(np.zeros((20, 20), "u4"), np.ones((20, 20)),
                                                 properties=PARTIAL)
    assert list(table) == list(expected) and all(len(c) == 0 for c in table.values())


def test_refusals() -> None:
    z = chunkflow.array(np.ones((4, 4), "u1"), chunks=(2, 2))
    with pytest.raises(LabelError, match="intensity_mean need an intensity image"):
        chunkflow.measure(z, properties=["label", "intensity_mean"])
    with pytest.raises(LabelError, match="'centre' is not a property"):
        chunkflow.measure(z, properties=["centre"])
    with pytest.raises(LabelError, match="a name or a callable"):
        chunkflow.measure(z, properties=[3])
    # skimage raises TypeError for labels that are not integers: so does chunkflow.
    with pytest.raises(TypeError, match="integers"):
        chunkflow.measure(chunkflow.array(np.ones((4, 4), "f4"), chunks=(2, 2)))
    with pytest.raises(TypeError, match="chunkflow.label"):
        chunkflow.measure(np.ones((4, 4), bool))
    with pytest.raises(ValueError, match="channel at a time"):
        chunkflow.measure(z, np.ones((4, 4, 3)), properties=["intensity_mean"])
    with pytest.raises(ValueError, match="spacing must be a number or 2 numbers"):
        chunkflow.measure(z, spacing=(1, 2, 3))
    with pytest.raises(TypeError, match="spacing must be real numbers"):
        chunkflow.measure(z, spacing=(True, False))


def test_negative_labels_are_background_as_in_skimage() -> None:
    labels = np.array([[1, -3, 2], [0, -3, 2], [-128, 5, 5]], "i1")
    compare(labels, None, (2, 2), ["label", "area", "bbox", "perimeter"])


def test_a_pandas_frame_takes_the_table() -> None:
    pd = pytest.importorskip("pandas")
    labels = ndimage.label(blobs((30, 30), 2, 0.5))[0]
    frame = pd.DataFrame(chunkflow.measure(chunkflow.array(labels, chunks=(8, 8))))
    assert list(frame.columns) == ["label", "area", "bbox-0", "bbox-1", "bbox-2", "bbox-3",
                                   "centroid-0", "centroid-1"]
    assert len(frame) == labels.max()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_label_images(data: st.DataObject) -> None:
    ndim = data.draw(st.integers(2, 3))  # skimage measures 2-D and 3-D images
    shape = tuple(data.draw(st.integers(1, {1: 60, 2: 20, 3: 9}[ndim])) for _ in range(ndim))
    chunks = tuple(data.draw(st.integers(1, n)) for n in shape)
    seed = data.draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, data.draw(st.integers(1, 12)), shape).astype("u2")
    properties = ["label", "area", "bbox", "centroid", "intensity_mean", "intensity_std",
                  "intensity_max"]
    compare(labels, rng.normal(size=shape), chunks, properties)


def test_the_property_tables_are_skimages() -> None:
    """chunkflow keeps skimage's names (it does not import skimage for the one-pass
    properties): they must be those of the installed scikit-image."""
    from skimage.measure import _regionprops

    from chunkflow.graph.labels.properties import ALIASES, INTENSITY_PROPERTIES, NAMES

    assert dict(ALIASES) == _regionprops.PROPS
    assert set(NAMES) == set(_regionprops.COL_DTYPES)
    assert set(INTENSITY_PROPERTIES) == set(_regionprops._require_intensity_image)


def test_callables_anywhere_in_the_list_keep_their_place() -> None:
    labels = np.zeros((6, 7), "u2")
    labels[1:4, 2:6] = 3
    labels[5, :] = 8

    def pixels(mask: np.ndarray) -> int:
        return int(mask.sum())

    table = chunkflow.measure(chunkflow.array(labels, chunks=(2, 3)),
                              properties=[pixels, "label", "Area", "coords"], blocks=(1, 1))
    expected = skimage_measure.regionprops_table(labels, properties=["label", "Area", "coords"],
                                                 extra_properties=[pixels])
    assert list(table) == ["pixels", "label", "Area", "coords"]
    for name in ["pixels", "label", "Area"]:
        np.testing.assert_array_equal(table[name], expected[name])
    assert all(np.array_equal(a, b) for a, b in zip(table["coords"], expected["coords"]))
