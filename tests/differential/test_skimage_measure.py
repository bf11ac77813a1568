"""``chunkflow.skimage.measure`` against ``skimage.measure``, on random label images,
chunkings and schedulers: ``label``'s labels (values, numbering, count) for every
connectivity and background, and ``regionprops_table``'s columns."""

from __future__ import annotations

import os
import tempfile
from typing import Any

import dask
import numpy as np
import pytest
import skimage.measure
from hypothesis import example, given
from hypothesis import strategies as st

import chunkflow
from chunkflow.graph.labels.values import value_components
from chunkflow.skimage import measure
from chunkflow.testing import strategies as cst
from tests.differential.conftest import budget
from tests.differential.pools import process_pool
from tests.differential.test_measure import (
    COL_DTYPES,
    PROPS,
    MeasureCase,
    compare,
    measure_cases,
    oracle,
)
from tests.differential.test_skimage_segmentation import (
    SHAPES,
    builtin_classes,
    outcome,
    stored_labels,
)

pq = pytest.importorskip("pyarrow.parquet")


def check_label(data: np.ndarray, chunks: Any, background: Any, connectivity: Any,
                scheduler: str, store: Any = None, out: Any = None) -> None:
    source = chunkflow.create_array(store, data=data, chunks=chunks)
    got = outcome(lambda: measure.label(source, background, True, connectivity, out=out,
                                        scheduler=scheduler, blocks=(1,) * data.ndim))
    expected = outcome(lambda: skimage.measure.label(data, background, True, connectivity))
    what = f"label {data.dtype} {data.shape} background={background} connectivity={connectivity}"
    assert got[0] == expected[0], (what, got, expected)
    if got[0] == "error":
        assert builtin_classes(got[1]) & builtin_classes(expected[1]), (what, got, expected)
        return
    (labels, count), (labels_e, count_e) = got[1], expected[1]
    assert count == count_e, (what, count, count_e)
    assert labels.dtype == labels_e.dtype, (what, labels.dtype, labels_e.dtype)
    np.testing.assert_array_equal(labels[...], labels_e, err_msg=what)


@budget(40)
@given(stored_labels(), st.sampled_from([None, None, 0, 1, 3]),
       st.sampled_from([None, None, 1, 2, 3, 0]), cst.schedulers(processes=False))
@example((np.array([[1, 1, 2, 0], [0, 2, 2, 1], [3, 0, 0, 1]]), (2, 2)), None, None, "sync")
@example((np.array([[5, 0, 5], [0, 5, 5]]), (1, 1)), 5, None, "sync")
@example((np.array([False]), (1,)), None, None, "sync")
# scikit-image numbers a 3-D image with a last axis of 1 in Fortran order.
@example((np.array([[[0], [0], [1]], [[1], [0], [0]]], "i1"), (1, 1, 1)), None, None, "sync")
# ... but a boolean one through scipy.ndimage.label, in C order (found by the long profile)
@example((np.array([[[0], [0], [1]], [[1], [0], [0]]], bool), (1, 1, 1)), None, None, "sync")
def test_label(labels: tuple[np.ndarray, Any], background: Any, connectivity: Any,
               scheduler: str) -> None:
    data, chunks = labels
    if background is not None and data.dtype.kind == "b":
        background = bool(background % 2)
    check_label(data, chunks, background, connectivity, scheduler)


@budget(2)
@given(stored_labels())
def test_label_on_processes(labels: tuple[np.ndarray, Any]) -> None:
    with tempfile.TemporaryDirectory() as folder, dask.config.set(pool=process_pool()):
        check_label(*labels, None, None, "processes", f"{folder}/a.zarr", f"{folder}/b.zarr")


@budget(30)
@given(cst.label_images(shapes=SHAPES, dtypes=cst.dtypes(kinds="iu")), st.sampled_from([1, 2, 3]))
def test_value_components_without_scikit_image(data: np.ndarray, connectivity: int) -> None:
    # The scipy engine's regions are scikit-image's (its numbering is its own).
    connectivity = min(connectivity, data.ndim)
    ours = value_components(data, connectivity, 0, engine="scipy")
    theirs = skimage.measure.label(data, background=0, connectivity=connectivity)
    pairs = np.unique(np.stack([ours.ravel(), theirs.ravel()]), axis=1)
    assert len(np.unique(pairs[0])) == len(np.unique(pairs[1])) == pairs.shape[1]


PROPERTIES = ["label", "area", "bbox", "centroid", "num_pixels", "area_bbox", "extent",
              "equivalent_diameter_area"]
INTENSITY = ["intensity_mean", "intensity_max", "intensity_min"]


@budget(25)
@given(stored_labels(dtypes=cst.dtypes(kinds="iu")), st.booleans(),
       st.sampled_from(["-", "_", ":"]), st.integers(0, 2**32 - 1))
def test_regionprops_table(labels: tuple[np.ndarray, Any], intensity: bool, separator: str,
                           seed: int) -> None:
    data, chunks = labels
    data = np.where(data < 0, 0, data)  # scikit-image's negative labels are background
    # scikit-image's tables run up to the largest label (its bincount near 2**63 corrupts
    # the heap): labels above 2**24 are compared through their ranks.
    values = np.unique(data[data != 0])
    huge = data.size > 0 and int(data.max()) > 2**24
    oracle_data = np.where(data != 0, np.searchsorted(values, data) + 1, 0) if huge else data
    image = np.random.default_rng(seed).random(data.shape) if intensity else None
    properties = PROPERTIES + (INTENSITY if intensity else [])
    z = chunkflow.create_array(None, data=data, chunks=chunks)
    got = outcome(lambda: measure.regionprops_table(z, image, properties,
                                                    separator=separator))
    expected = outcome(lambda: skimage.measure.regionprops_table(
        oracle_data, image, properties, separator=separator))
    if huge and expected[0] == "value":
        expected[1]["label"] = values[expected[1]["label"] - 1]
    if got[0] == "value" and expected[0] == "error" and isinstance(expected[1], MemoryError):
        return  # scikit-image's tables reach the largest label value; chunkflow's do not
    assert got[0] == expected[0], (got, expected)
    if got[0] == "error":
        assert builtin_classes(got[1]) & builtin_classes(expected[1]), (got, expected)
        return
    assert list(got[1]) == list(expected[1])
    for name, column in expected[1].items():
        np.testing.assert_allclose(np.asarray(got[1][name], float), np.asarray(column, float),
                                   rtol=1e-12, err_msg=name)


#: The properties whose columns Parquet stores (no Python objects), with moments.
STORABLE = [name for name in sorted(COL_DTYPES) + sorted(PROPS)
            if COL_DTYPES.get(PROPS.get(name, name)) is not object]


@budget(15)
@given(case=measure_cases(names=STORABLE, min_dims=2, max_dims=3, max_side=8),
       row_group_size=st.integers(1, 5), url=st.booleans())
# Sparse labels (3, 5, 8, 9) in row groups of 2, every object across blocks.
@example(case=MeasureCase(np.array([[0, 0, 3, 3, 0], [5, 0, 3, 0, 0], [5, 0, 0, 0, 9],
                                    [0, 0, 8, 8, 0]], "u2"), None,
                          ["label", "area", "bbox", "moments_central", "eccentricity"],
                          chunks=(1, 2), blocks=(1, 1)), row_group_size=2, url=False)
# Labels past 2**63: uint64 in every row group.
@example(case=MeasureCase(np.array([[1, 0, 2**63 + 5], [2**64 - 1, 0, 7]], np.uint64), None,
                          ["label", "area"], chunks=(1, 1)), row_group_size=2, url=True)
# No objects: the columns, no rows.
@example(case=MeasureCase(np.zeros((3, 3), np.int32), np.ones((3, 3)),
                          ["label", "intensity_mean", "solidity"], chunks=(2, 2)),
         row_group_size=1, url=False)
def test_regionprops_table_parquet(case: MeasureCase, row_group_size: int, url: bool) -> None:
    """The Parquet file's rows are skimage's table (to the tolerances of
    test_measure), in row groups of ``row_group_size`` rows, the last one shorter."""
    try:
        expected = oracle(case)
    except Exception as error:  # skimage refuses: so must chunkflow, with its class
        with pytest.raises(type(error)), tempfile.TemporaryDirectory() as folder:
            measure.regionprops_table(case.labels, case.intensity, case.properties,
                                      spacing=case.spacing, out=f"{folder}/t.parquet")
        return
    with tempfile.TemporaryDirectory() as folder:
        path = f"{folder}/deeper/t.parquet"
        options = {"auto_mkdir": True} if url else None
        out = f"file://{path}" if url else path
        if not url:
            os.makedirs(os.path.dirname(path))
        labels: Any = chunkflow.array(case.labels, chunks=case.chunks)
        got = measure.regionprops_table(labels, case.intensity, case.properties,
                                        spacing=case.spacing, out=out,
                                        row_group_size=row_group_size, blocks=case.blocks,
                                        scheduler=case.scheduler, storage_options=options)
        assert got == out
        written = pq.ParquetFile(path)
        table = {name: column.to_numpy() for name, column
                 in zip(written.schema_arrow.names, written.read().columns)}
        sizes = [written.metadata.row_group(i).num_rows for i in range(written.num_row_groups)]
    rows = len(next(iter(expected.values())))
    assert sizes == [row_group_size] * (rows // row_group_size) + \
        ([rows % row_group_size] if rows % row_group_size else []), (sizes, rows)
    compare(case, table, expected)


@budget(2)
@given(stored_labels(dtypes=cst.dtypes(kinds="iu")))
def test_regionprops_table_parquet_on_processes(labels: tuple[np.ndarray, Any]) -> None:
    """The first pass's partial tables written by worker processes, to the default
    scratch folder, read back by the caller."""
    data, chunks = labels
    moments = ["moments"] if data.ndim in (2, 3) else []  # skimage's dimensions
    case = MeasureCase(np.where(data < 0, 0, data), None, ["label", "area", "bbox", *moments],
                       chunks=chunks)
    expected = oracle(case)
    with tempfile.TemporaryDirectory() as folder, dask.config.set(pool=process_pool()):
        source = chunkflow.create_array(f"{folder}/l.zarr", data=case.labels, chunks=chunks)
        measure.regionprops_table(source, properties=case.properties, out=f"{folder}/t.parquet",
                                  row_group_size=3, scheduler="processes")
        written = pq.read_table(f"{folder}/t.parquet")
        table = {name: column.to_numpy() for name, column
                 in zip(written.column_names, written.columns)}
    compare(case, table, expected)
