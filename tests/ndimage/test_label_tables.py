"""Label tables (chunkflow.graph.label_statistics, label_medians) on label values that
the counting path (no sort) of each block's distinct labels must give back exactly:
the ends of every integer dtype, either byte order; and medians of many labels."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.ndimage as scipy_ndimage

import chunkflow
from chunkflow import ndimage

RNG = np.random.default_rng(36)


def _labels(dtype: str, start: int) -> np.ndarray:
    native = np.dtype(dtype).newbyteorder("=")
    values = np.array([start + int(v) for v in RNG.integers(0, 40, 12 * 13)], dtype=object)
    return values.astype(native).astype(dtype).reshape(12, 13)


@pytest.mark.parametrize(("dtype", "start"), [
    # (int8 labels near 127 make scipy.ndimage.maximum fail: labels.max() + 2 wraps)
    ("u8", 2**64 - 40), (">u8", 2**64 - 40), ("i8", -2**63), ("i1", -128), ("i1", 40),
    (">i2", -20), ("u1", 216), ("<u4", 2**32 - 40)])
def test_statistics_at_the_ends_of_integer_dtypes(dtype: str, start: int) -> None:
    labels = _labels(dtype, start)
    values = RNG.random(labels.shape)
    index = np.unique(labels)[::3]
    z_labels = chunkflow.array(labels, chunks=(5, 4))
    z_values = chunkflow.array(values, chunks=(5, 4))
    for name in ("maximum", "minimum_position", "median"):
        got = getattr(ndimage, name)(z_values, z_labels, index)
        expected = getattr(scipy_ndimage, name)(values, labels, index)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(expected), err_msg=name)
    counts = ndimage.sum_labels(np.ones(labels.shape), z_labels, index)
    np.testing.assert_array_equal(counts, scipy_ndimage.sum_labels(np.ones(labels.shape),
                                                                    labels, index))


def test_find_objects_of_many_labels() -> None:
    labels = RNG.permutation(60 * 70).reshape(60, 70) % 900
    got = ndimage.find_objects(chunkflow.array(labels, chunks=(16, 9)))
    assert got == scipy_ndimage.find_objects(labels)


def test_medians_of_many_labels_bit_for_bit() -> None:
    labels = RNG.integers(0, 500, (50, 60))
    values = RNG.standard_normal(labels.shape)
    values[::7, ::5] = np.nan
    index = np.arange(-3, 505)
    got = ndimage.median(chunkflow.array(values, chunks=(13, 17)),
                         chunkflow.array(labels, chunks=(13, 17)), index)
    expected = scipy_ndimage.median(values, labels, index)
    np.testing.assert_array_equal(np.asarray(got).view("u8"), np.asarray(expected).view("u8"))


@pytest.mark.parametrize("max_label", [0, 10**15])
def test_find_objects_refuses_an_answer_larger_than_memory(max_label: int) -> None:
    """A label value of 2**40 makes scipy's answer a list of 2**40 slots (scipy tries, and
    the kernel kills the process): refused up front, naming it and what to do."""
    z = chunkflow.array(np.array([0, 2**40, 3], "u8"), chunks=(2,))
    with pytest.raises(MemoryError, match="slot per label value up to .*relabel_sequential"):
        ndimage.find_objects(z, max_label)
    assert ndimage.find_objects(z, 3) == scipy_ndimage.find_objects(np.array([0, 2**40, 3]), 3)
