"""chunkflow.skimage's namespaces, arguments, refusals, locations and outputs."""

from __future__ import annotations

import warnings
from pathlib import Path

import dask.array as da
import numpy as np
import pytest
import skimage.filters
import skimage.measure
import skimage.morphology
import skimage.segmentation

import chunkflow
import chunkflow.skimage
from chunkflow.skimage import filters, measure, morphology, segmentation

LABELS = np.array([[0, 0, 3, 3, 0], [5, 0, 3, 0, 0], [5, 0, 0, 0, 9], [0, 0, 8, 8, 0]],
                  dtype="u2")
IMAGE = (np.arange(60, dtype="u1").reshape(6, 10) * 7) % 200


def test_the_namespaces_mirror_scikit_image() -> None:
    assert chunkflow.skimage.filters is filters
    for module, names in [(filters, ["threshold_otsu", "threshold_li", "threshold_yen",
                                     "threshold_triangle", "threshold_multiotsu"]),
                          (segmentation, ["relabel_sequential", "clear_border",
                                          "expand_labels"]),
                          (morphology, ["remove_small_objects", "remove_small_holes"]),
                          (measure, ["label", "regionprops_table"])]:
        for name in names:
            assert name in module.__all__ and callable(getattr(module, name))


def test_thresholds_read_urls_with_storage_options() -> None:
    url = "memory://skimage-api/image.zarr"
    chunkflow.create_array(url, data=IMAGE, chunks=(4, 4), overwrite=True)
    for name in ("threshold_otsu", "threshold_yen", "threshold_triangle", "threshold_li"):
        got = getattr(filters, name)(url, storage_options={})
        assert got == getattr(skimage.filters, name)(IMAGE), name
    assert filters.threshold_otsu(da.from_array(IMAGE, chunks=3)) == \
        skimage.filters.threshold_otsu(IMAGE)


def test_threshold_refusals_name_the_argument() -> None:
    with pytest.raises(TypeError, match="initial_guess"):
        filters.threshold_li(IMAGE, initial_guess=np.mean)
    with pytest.raises(ValueError, match="classes"):
        filters.threshold_multiotsu(IMAGE, classes=1)
    with pytest.raises(ValueError, match="image or hist"):
        filters.threshold_otsu()
    with pytest.raises(ValueError, match="nbins"):
        filters.threshold_otsu(IMAGE.astype("f4"), nbins=0)
    with pytest.raises(TypeError, match="dtype"):
        filters.threshold_otsu(np.array(["a", "b"]))
    with pytest.raises(TypeError):
        filters.threshold_otsu(IMAGE, bins=3)  # type: ignore[call-arg]


def test_li_reports_each_step_as_scikit_image() -> None:
    ours: list[float] = []
    theirs: list[float] = []
    got = filters.threshold_li(IMAGE, iter_callback=ours.append, initial_guess=50)
    expected = skimage.filters.threshold_li(IMAGE, iter_callback=theirs.append, initial_guess=50)
    assert got == expected and ours == theirs


def test_multiotsu_refuses_a_search_too_long() -> None:
    wide = np.arange(5000, dtype="u2")
    with pytest.raises(ValueError, match="search"):
        filters.threshold_multiotsu(wide, classes=4)


def test_image_results_go_to_out_and_respect_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "relabeled.zarr"
    relabeled, forward, _ = segmentation.relabel_sequential(LABELS, out=str(out))
    assert chunkflow.open(str(out))[...].tolist() == relabeled[...].tolist()
    with pytest.raises(FileExistsError):
        segmentation.relabel_sequential(LABELS, out=str(out))
    again, _, _ = segmentation.relabel_sequential(LABELS, offset=10, out=str(out),
                                                  overwrite=True)
    assert again[...].max() == 13 and forward[9] == 4


def test_morphology_and_measure_write_urls(tmp_path: Path) -> None:
    binary = LABELS > 0
    url = "memory://skimage-api/binary.zarr"
    chunkflow.create_array(url, data=binary, chunks=(2, 2), overwrite=True)
    kept = morphology.remove_small_objects(url, max_size=1, out="memory://skimage-api/kept.zarr",
                                           overwrite=True, storage_options={})
    np.testing.assert_array_equal(kept[...], skimage.morphology.remove_small_objects(
        binary, max_size=1))
    filled = morphology.remove_small_holes(binary, max_size=4, out=str(tmp_path / "f.zarr"))
    np.testing.assert_array_equal(filled[...], skimage.morphology.remove_small_holes(
        binary, max_size=4))
    labels = measure.label(url, storage_options={}, out=str(tmp_path / "l.zarr"))
    np.testing.assert_array_equal(labels[...], skimage.measure.label(binary))


def test_deprecated_sizes_warn_and_conflict_as_scikit_image() -> None:
    binary = LABELS > 0
    with pytest.warns(FutureWarning, match="min_size"):
        morphology.remove_small_objects(binary, min_size=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        with pytest.raises(ValueError, match="Both deprecated"):
            morphology.remove_small_objects(binary, min_size=2, max_size=3)
    with pytest.warns(UserWarning, match="boolean array"):
        morphology.remove_small_holes(LABELS, max_size=2)
    with pytest.raises(TypeError, match="bool or integer"):
        morphology.remove_small_objects(LABELS.astype("f4"))


def test_segmentation_refusals() -> None:
    with pytest.raises(ValueError, match="mask="):
        segmentation.clear_border(LABELS, mask=np.ones(LABELS.shape, bool))
    with pytest.raises(ValueError, match="buffer size"):
        segmentation.clear_border(LABELS, buffer_size=4)
    with pytest.raises(ValueError, match="Offset"):
        segmentation.relabel_sequential(LABELS, offset=0)
    with pytest.raises(ValueError, match="dask array"):
        segmentation.relabel_sequential(da.from_array(LABELS))
    with pytest.raises(ValueError, match="distance"):
        segmentation.expand_labels(LABELS, distance=-1)


def test_label_connectivity_is_checked_as_scikit_image() -> None:
    with pytest.raises(ValueError, match="Connectivity"):
        measure.label(LABELS, connectivity=3)
    labels, count = measure.label(LABELS, return_num=True, connectivity=1)
    expected, n = skimage.measure.label(LABELS, return_num=True, connectivity=1)
    assert count == n
    np.testing.assert_array_equal(labels[...], expected)


def test_regionprops_table_takes_extra_properties() -> None:
    def doubled_area(mask: np.ndarray) -> float:
        return 2.0 * float(mask.sum())

    got = measure.regionprops_table(LABELS, properties=("label",),
                                    extra_properties=[doubled_area])
    expected = skimage.measure.regionprops_table(LABELS, properties=("label",),
                                                 extra_properties=[doubled_area])
    assert list(got) == list(expected)
    np.testing.assert_allclose(got["doubled_area"], expected["doubled_area"])
    with pytest.raises(ValueError, match="extra_properties"):
        measure.regionprops_table(LABELS, extra_properties=["area"])  # type: ignore[list-item]


def test_regionprops_table_writes_parquet_in_row_groups(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    path = str(tmp_path / "objects.parquet")
    properties = ("label", "area", "bbox", "centroid")
    assert measure.regionprops_table(LABELS, properties=properties, out=path,
                                     row_group_size=2) == path
    expected = skimage.measure.regionprops_table(LABELS, properties=properties)
    written = pq.read_table(path)
    assert written.column_names == list(expected)
    assert pq.ParquetFile(path).metadata.num_row_groups == 2  # 4 objects, 2 per group
    for name, column in expected.items():
        np.testing.assert_allclose(written[name].to_numpy(), column)
    url = "memory://skimage-api/objects.parquet"
    measure.regionprops_table(LABELS, out=url, storage_options={})
    with pytest.raises(ValueError, match="Python objects"):
        measure.regionprops_table(LABELS, properties=("label", "coords"),
                                  out=str(tmp_path / "x.parquet"))
